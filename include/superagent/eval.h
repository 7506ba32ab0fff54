// The Eval runner (SPEC §5): Gate, then Assessment, then code decides what the answer means.
#pragma once

#include "superagent/assessment.h"
#include "superagent/engine.h"

namespace superagent {

// Runs the Gate over the batch and, when some Trigger is a candidate, asks `assessor`.
// Everything that grants or refuses is decided here in code, never by the model:
//  - explicit: accept (the model shapes scope and acknowledgement) unless it judges a stop;
//  - inferred: every enabled rule answered exactly once, direction allowed, a matched rule and
//    evidence; in observe an accept is recorded as ignore + would_accept; only auto accepts;
//  - a stop needs an explicit (hence human) sender: bots never stop a Ticket.
EvalOutcome JudgeEval(const EvalJob& job, const Policy& policy, Assessor& assessor);

// "" when `a` answers every enabled rule of `policy` exactly once and names no other rule;
// otherwise what is wrong. A model-backed Assessor may use it to retry a malformed answer.
std::string CheckRuleCoverage(const Assessment& a, const Policy& policy);

// Runs at most one due Eval end to end (BeginEval → JudgeEval → FinishEval).
// Returns true when an Eval ran (its outcome may have been dropped as stale), false when idle.
Result<bool> RunOneEval(Engine& engine, Assessor& assessor);

}  // namespace superagent
