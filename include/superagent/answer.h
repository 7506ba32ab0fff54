// The answer invariant (issue 34, SPEC §12): every message that addresses the agent from a person
// the policy lets ask hears something true — it is acknowledged, it is answered (with the result,
// or with why not), or a person is shown a card naming it — within a minute of the daemon knowing
// the cause. This file is the one place that says which of these holds for one message: `explain`
// tells it, and the panel's "Not answered" card lists what holds none of them (the backstop that
// no exit of Intake, the Gate, the Eval or the Effects loop can slip past).
#pragma once

#include <optional>
#include <string>

#include "superagent/domain.h"

namespace superagent {

// How long a message may wait with nothing said before the panel names it (issue 34: "within 60
// seconds of the daemon knowing the cause").
inline constexpr TimeMs kAnswerWithinMs = 60'000;

// What the store knows about one Trigger's answer, read in one snapshot (store/answers.cpp).
struct AnswerFacts {
  TriggerRecord record;
  // The Gate's verdict when an Eval judged it (the latest judged row; "not judged: …" rows of
  // failed attempts are not verdicts).
  std::optional<std::string> gate_strength, gate_reason;
  bool in_running_eval = false;
  std::optional<int> queued_attempts;  // still queued for an Eval: its failed attempts so far
  std::string last_failure;            // why its last Eval attempt failed, when one did
  std::optional<TicketId> created;     // the Ticket it created
  std::optional<Stage> created_stage;
  bool acknowledged = false;            // the created Ticket has said something (pending or sent)
  bool replied = false;                 // a reply written for it: a verb's answer, a "could not" line
  std::optional<TicketId> answered_by;  // a Ticket it reached said something after it arrived
  std::optional<TicketId> taken_by;     // a live Ticket holds it and owes it its next report
  std::optional<TicketId> waiting_on;   // a Ticket it reached waits for a person or is blocked: its card
  bool set_aside = false;               // its Thread's Evals are set aside: that card names it
};

enum class AnswerKind {
  kNotAsked,      // not a person addressing the agent (or the agent's own message): owed nothing
  kSilent,        // from someone the policy does not let ask: silent, counted on the panel
  kAcknowledged,  // the Ticket it created acknowledged it
  kAnswered,      // a reply was written for it, or a Ticket it reached answered after it
  kTaken,         // a live Ticket holds it; its next report answers it
  kCard,          // a person has a Needs-you card naming it (a question, a blocked Ticket, a set-aside Thread)
  kPending,       // being judged, or received less than kAnswerWithinMs ago
  kUnanswered,    // none of the above: the panel's "Not answered" card names it
};

const char* AnswerKindName(AnswerKind k);

struct Answer {
  AnswerKind kind = AnswerKind::kNotAsked;
  std::string words;  // one sentence for a person: which of them, and with what
};

// Which of the invariant's outcomes holds for `facts` at `now`. `may_ask_now`: whether the policy
// in force lets its sender ask (the Gate's explicit strength for an addressed message); used when
// no Eval has judged it yet. Pure.
Answer AnswerOf(const AnswerFacts& facts, bool may_ask_now, TimeMs now);

}  // namespace superagent
