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

// Whether any person may ask `source` ("github", "feishu") for work under `policy`: someone is on
// its allow-list (`people`), or one of its rows takes others' addressed messages as explicit
// (others_addressed: explicit; not GitHub's ci row, which has no sender). When neither holds,
// every @-mention there ends "ignored:others_addressed" (or "source_not_in_policy" without a
// section) and the daemon is deaf on that Source (issue 34). Bots never count: they cannot ask.
bool AnyoneMayAsk(const Policy& policy, const std::string& source);

// {"strength":"explicit","candidate":true,"reason":"allow_listed_addressed"}
nlohmann::json GateResultToJson(const GateResult& r);

}  // namespace superagent
