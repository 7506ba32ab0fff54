// AnswerOf: which outcome of the answer invariant holds for one message (answer.h). The order of
// the checks is the order a person would want to be told: what was said to them first, then who
// holds the message, then what card names it, and only then that nothing has happened yet.
#include "superagent/answer.h"

#include "superagent/judgement.h"
#include "superagent/text.h"

namespace superagent {

const char* AnswerKindName(AnswerKind k) {
  switch (k) {
    case AnswerKind::kNotAsked: return "not_asked";
    case AnswerKind::kSilent: return "silent";
    case AnswerKind::kAcknowledged: return "acknowledged";
    case AnswerKind::kAnswered: return "answered";
    case AnswerKind::kTaken: return "taken";
    case AnswerKind::kCard: return "card";
    case AnswerKind::kPending: return "pending";
    case AnswerKind::kUnanswered: return "unanswered";
  }
  return "?";
}

namespace {

bool Own(const Trigger& t) {
  auto own = t.meta.find("own");
  return own != t.meta.end() && own->is_boolean() && own->get<bool>();
}

std::string TicketName(TicketId id) { return "Ticket " + std::to_string(id); }

}  // namespace

Answer AnswerOf(const AnswerFacts& f, bool may_ask_now, TimeMs now) {
  const Trigger& t = f.record.trigger;
  if (!t.human || !t.addressed || Own(t) || f.record.filter_reason == "own_message")
    return {AnswerKind::kNotAsked, "It did not ask the agent for anything (not a person's message addressed to it), so no answer is owed."};
  if (IsThanks(t.text))
    return {AnswerKind::kNotAsked, "It only thanked the agent, so no answer is owed (it counts for the rule that did the work)."};
  // The Gate's verdict when an Eval gave one; else the policy in force now.
  const bool may_ask = f.gate_strength ? *f.gate_strength == "explicit" : may_ask_now;
  if (!may_ask)
    return {AnswerKind::kSilent, "Its sender is not one the policy lets ask here, so the agent stayed silent; the "
                                 "panel counts such mentions so a maintainer can widen the policy."};
  if (f.created && f.acknowledged)
    return {AnswerKind::kAcknowledged, "It was acknowledged: it created " + TicketName(*f.created) + "."};
  if (f.replied) return {AnswerKind::kAnswered, "The agent replied to it (a command's answer, or why it could not take it)."};
  if (f.answered_by) return {AnswerKind::kAnswered, TicketName(*f.answered_by) + ", which it reached, wrote back after it."};
  if (f.created && f.created_stage &&
      (*f.created_stage == Stage::kWaitingForPerson || *f.created_stage == Stage::kBlocked))
    return {AnswerKind::kCard, "It created " + TicketName(*f.created) + ", which a Needs-you card shows (" +
                                   StageName(*f.created_stage) + ")."};
  if (f.taken_by) return {AnswerKind::kTaken, TicketName(*f.taken_by) + " holds it; its next report answers it."};
  if (f.waiting_on)
    return {AnswerKind::kCard, "It reached " + TicketName(*f.waiting_on) + ", which a Needs-you card shows (waiting or blocked)."};
  if (f.set_aside) return {AnswerKind::kCard, "Its discussion's Evals are set aside; a Needs-you card names it, with a Retry."};
  if (f.in_running_eval) return {AnswerKind::kPending, "An Eval is judging it now."};
  if (now - f.record.received_at < kAnswerWithinMs)
    return {AnswerKind::kPending, "It arrived less than a minute ago; nothing has been said yet."};
  std::string why = f.queued_attempts ? (f.last_failure.empty() ? "it is waiting for an Eval"
                                                                : "its Eval failed " + std::to_string(*f.queued_attempts) +
                                                                      (*f.queued_attempts == 1 ? " time" : " times") + " (" +
                                                                      text::Cut(f.last_failure, 160) + ") and will be tried again")
                                      : !f.last_failure.empty() ? "its Eval failed (" + text::Cut(f.last_failure, 160) + ")"
                                                                : "nothing answered it";
  return {AnswerKind::kUnanswered, "Nobody has answered it yet: " + why + ". The panel's Needs-you names it."};
}

}  // namespace superagent
