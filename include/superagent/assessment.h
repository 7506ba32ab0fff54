// The second stage of an Eval (SPEC §5): a structured judgement, usually by a language model.
// The Assessor only *answers*; code in eval.cpp decides what the answer means.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/domain.h"
#include "superagent/gate.h"
#include "superagent/status.h"

namespace superagent {

// One Trigger of the batch with the Gate's verdict on it.
struct Candidate {
  std::int64_t seq = 0;
  Trigger trigger;
  GateResult gate;
  nlohmann::json handback;  // executors' reasons when the message was handed back, else null
};

// A Ticket on the Thread, as the Eval sees it (ended ones too).
struct TicketView {
  TicketId id = 0;
  Stage stage = Stage::kIdle;
  std::string scope;
  bool mandate_active = true;
};

// Everything an Eval may look at (SPEC §2: batch + Thread snapshot + Tickets + Policy).
struct EvalJob {
  EvalId id = 0;
  std::string thread;
  std::int64_t policy_version = 0;
  std::vector<Candidate> batch;        // in arrival order; gate filled in by the runner
  std::vector<Trigger> history;        // recent stored Triggers of the Thread, oldest first
  std::vector<TicketView> tickets;     // every Ticket subscribed to the Thread
  Policy policy;                       // the version the Eval started under
};

struct RuleVerdict {
  std::string name;
  bool matched = false;
  std::string reason;
};

// The structured answer of the function `decide` (issue 4 / SPEC §5).
struct Assessment {
  DecisionOutcome decision = DecisionOutcome::kIgnore;  // accept | ignore | stop
  bool implementation_requested = false;
  std::string target_basis = "undetermined";  // stated | existing_standard | undetermined
  bool open_design_decision = false;
  std::string evidence;  // quoted words the answer rests on
  std::vector<RuleVerdict> rules;
  std::string scope;  // one line: what the work is
  std::optional<TicketId> related_ticket;
  std::string acknowledgement;
  nlohmann::json usage;  // token accounting as the API reported it, or null
};

nlohmann::json AssessmentToJson(const Assessment& a);

class Assessor {
 public:
  virtual ~Assessor() = default;
  // Judges `candidates` (only those the Gate admitted) in the context of `job` under `policy`.
  // A non-ok Status means the model failed or timed out: the Eval ends `unavailable`.
  virtual Result<Assessment> Assess(const EvalJob& job, const std::vector<const Candidate*>& candidates,
                                    const Policy& policy) = 0;
};

// Used when no model is configured: shapes explicit requests deterministically (scope = first
// line of the request) and answers Unavailable for inferred candidates, so nothing proactive
// happens without a model.
class NoModelAssessor : public Assessor {
 public:
  Result<Assessment> Assess(const EvalJob& job, const std::vector<const Candidate*>& candidates,
                            const Policy& policy) override;
};

}  // namespace superagent
