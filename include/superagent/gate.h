// Gate: the deterministic first half of an Eval (SPEC §4.2–4.4, §5). No model, no I/O.
#pragma once

#include <string>

#include "superagent/policy.h"
#include "superagent/trigger.h"

namespace superagent {

struct GateResult {
  Strength strength = Strength::kNone;  // what the admission table gives this Trigger
  bool candidate = false;               // goes on to the assessment
  // Why, as a stable token. Admitted: "panel_operator", "allow_listed_addressed",
  // "allow_listed_follow_up", "follow_up", "listed_bot", "cell:allowed_unaddressed",
  // "cell:others_addressed", "cell:others_unaddressed". Not admitted: "source_not_in_policy",
  // "own_message", "bot_not_listed", "bot_not_addressed", "not_addressed",
  // "ignored:<cell name>", "mode_off" (strength stays inferred, candidate false).
  std::string reason;
};

// Evaluates one Trigger against `policy`. `thread_has_ticket`: the Trigger's Thread already has
// a Ticket (any stage, ended included) — which turns a message into a follow-up.
GateResult EvaluateGate(const Policy& policy, const Trigger& trigger, bool thread_has_ticket);

// {"strength":"explicit","candidate":true,"reason":"allow_listed_addressed"}
nlohmann::json GateResultToJson(const GateResult& r);

}  // namespace superagent
