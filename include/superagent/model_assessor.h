// ModelAssessor: the Eval's assessment by a language model (SPEC §5). One chat completion that
// must answer by calling the function `decide`; the answer is parsed and validated strictly, a
// malformed one is sent back once with what is wrong, and a second failure is a non-ok Status
// (JudgeEval then records `unavailable` and the Engine requeues the batch with backoff).
//
// Nothing here decides what the answer means: JudgeEval does, in code.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "superagent/assessment.h"
#include "superagent/http.h"
#include "superagent/llm.h"
#include "superagent/prompts.h"

namespace superagent {

struct ModelAssessorOptions {
  std::string model = "deepseek-chat";
  std::string agent_name = "superagent";
  std::string repo;      // shown to the model as the team's repository
  std::string team_dir;  // prompts.team_dir; re-read on every call
  PromptLimits limits;
  // The whole assessment, a retried answer and HTTP retries included, stays inside this so the
  // outcome arrives before the Engine times the Eval out (eval.timeout_seconds).
  TimeMs budget_ms = 118'000;
  int max_answers = 2;  // a malformed answer is retried once
  int max_tokens = 2'048;
};

class ModelAssessor : public Assessor {
 public:
  // `clock` is not owned.
  ModelAssessor(std::unique_ptr<llm::ChatClient> client, ModelAssessorOptions options, Clock* clock);

  Result<Assessment> Assess(const EvalJob& job, const std::vector<const Candidate*>& candidates,
                            const Policy& policy) override;

  const ModelAssessorOptions& options() const { return options_; }

 private:
  std::unique_ptr<llm::ChatClient> client_;
  ModelAssessorOptions options_;
  Clock* clock_;
  std::mutex mu_;
  std::string last_team_problems_;  // logged once per change, not on every call
};

// The function the model must call. Rule names are an enum of the enabled rules.
llm::ToolSpec DecideTool(const Policy& policy);

// Parses `decide`'s arguments (raw JSON text) and validates them: exactly the nine arguments,
// their types and enums, every enabled rule answered once for an inferred request, a
// related_ticket that is on this Thread, one-line scope, acknowledgement within its word limit.
// InvalidArgument lists every problem found, worded for the model to correct. With
// `cut_long_acknowledgement` an acknowledgement over its limit is no problem: it is cut at a word
// (CJK aware) with an ellipsis — the model is asked for a shorter one once at most, never into
// silence (issue 34).
Result<Assessment> ParseDecideArguments(const std::string& arguments, const EvalJob& job,
                                        const std::vector<const Candidate*>& candidates, const Policy& policy,
                                        bool cut_long_acknowledgement = false);

}  // namespace superagent
