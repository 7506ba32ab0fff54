// The Eval runner (SPEC §5): Gate, then Assessment, then code decides what the answer means.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "superagent/assessment.h"
#include "superagent/engine.h"

namespace superagent {

// Runs the Gate over the batch and, when some Trigger is a candidate, asks `assessor`.
// Everything that grants or refuses is decided here in code, never by the model:
//  - explicit: accept (the model shapes scope and acknowledgement) unless it judges a stop;
//  - inferred: every enabled rule answered exactly once, direction allowed, a matched rule and
//    evidence; in observe an accept is recorded as ignore + would_accept; only auto accepts;
//  - a stop needs an explicit (hence human) sender: bots never stop a Ticket;
//  - a verb (ParseVerb) from an explicit sender is decided here, with no model call: "stop" stops
//    the Thread's Tickets, "status" answers with their state, a verdict is recorded on the Thread's
//    newest unjudged would_accept (Engine::RecordVerdict's rules, via "thread").
EvalOutcome JudgeEval(const EvalJob& job, const Policy& policy, Assessor& assessor);

// Issue 22: what a person addressing the agent may say without any model deciding it (docs/002).
enum class Verb { kStop, kStatus, kWasARequest, kNotARequest };
// The verb `text` is once mentions ("@name" words) are set aside: exactly "stop", "/stop", "停止",
// "status", "/status" or "状态"; or, a verdict on what observe mode would have done here (issue
// 38), "was a request", "a request" or "是请求", and "not a request" or "不是请求" (any case,
// trailing "!", ".", "。", "！" ignored); nullopt for anything else — a sentence that contains
// "stop" is for the Eval's model, never a verb.
// `mentions`: how the Source shows mentions in the text ("@Super Agent"), removed first, so a name
// with a space is not taken for words.
std::optional<Verb> ParseVerb(const std::string& text, const std::vector<std::string>& mentions = {});
// ParseVerb over a Trigger's text with the mentions its Source listed (meta.mentions, strings).
std::optional<Verb> VerbOf(const Trigger& t);

// "" when `a` answers every enabled rule of `policy` exactly once and names no other rule;
// otherwise what is wrong. A model-backed Assessor may use it to retry a malformed answer.
std::string CheckRuleCoverage(const Assessment& a, const Policy& policy);

// Runs at most one due Eval end to end (BeginEval → JudgeEval → FinishEval).
// Returns true when an Eval ran (its outcome may have been dropped as stale), false when idle.
Result<bool> RunOneEval(Engine& engine, Assessor& assessor);

}  // namespace superagent
