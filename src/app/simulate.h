// policy simulate (SPEC §12): replays recorded Decisions through the same Gate and decision code
// (JudgeEval) under a candidate policy, so a team sees what an edit would change before making
// it. Reads only; the model is never called: the recorded assessment is replayed when there is
// one, and where the candidate would need a fresh one the result says so.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "superagent/judgement.h"
#include "superagent/policy.h"
#include "superagent/views.h"

namespace superagent::app {

struct SimulatedDecision {
  std::int64_t decision_id = 0;
  std::string thread;
  std::string trigger_id;  // the newest Trigger of the batch (the one a person would name)
  std::string url;
  TimeMs at = 0;
  // "accept" | "ignore" | "would_accept" | "stop" (and "unavailable" when the replay itself
  // fails), and for `simulated` also
  // "needs_assessment" (admitted now, but no recorded assessment answers the candidate's rules).
  std::string recorded, simulated;
  std::string recorded_reason, simulated_reason;
  bool assumed = false;  // explicit request without a recorded assessment: accept assumed
  // The candidate's row that decided the simulated outcome, as a key: the admission table
  // (sources.github, or repos."acme/web".sources.github when that repository has its own) for
  // what the Gate decided, the mode's row (rules.<name>.mode, repos."acme/web".mode, mode) for
  // an inferred accept or "would accept"; "" when the model's judgement decided.
  std::string row;
};

// One replayed Decision's two outcomes, kept for every Decision (not only the differences) so
// the verdicts people gave can score both policies (ScoreVerdicts).
struct ReplayedDecision {
  std::int64_t decision_id = 0;
  std::string recorded, simulated;  // labels as in SimulatedDecision
};

struct SimulationReport {
  int decisions = 0, same = 0, changed = 0, needs_assessment = 0;
  int unavailable_skipped = 0;  // recorded `unavailable` (model failed, retried later): not replayed
  std::vector<SimulatedDecision> differences;  // changed and needs_assessment, oldest first
  std::vector<ReplayedDecision> replayed;      // every replayed Decision, oldest first
};

// Replays every Decision since `since`. `use_assessments` false judges by the Gate alone: any
// admitted batch is "needs_assessment" unless its request is explicit.
SimulationReport SimulatePolicy(const std::vector<RecordedDecision>& recorded, const Policy& candidate,
                                bool use_assessments);

// How one policy's Decisions fare against the verdicts people gave on them (issue 38 §2).
// "Acted": accept or would_accept. "Undecided": the candidate's needs_assessment (or a replay
// that came out unavailable): without a model call there is no telling, so it counts neither as
// acted nor as declined. "Declined": anything else (ignore, stop).
struct VerdictScore {
  int acted_yes = 0, acted_no = 0, acted_unknown = 0;
  int declined_yes = 0, declined_no = 0, declined_unknown = 0;
  int undecided_yes = 0, undecided_no = 0, undecided_unknown = 0;
  // acted_yes / (acted_yes + acted_no), 0 with neither ("don't know" counts neither way), and
  // its 95 % Wilson lower bound (WilsonLowerBound): few answers never look certain.
  double precision = 0;
  double lower_bound = 0;

  int acted() const { return acted_yes + acted_no + acted_unknown; }
  int declined() const { return declined_yes + declined_no + declined_unknown; }
  int undecided() const { return undecided_yes + undecided_no + undecided_unknown; }
  int answers() const { return acted_yes + acted_no; }  // what precision is measured over
};

struct RuleVerdictScore {
  std::string rule;  // a rule's name, "(no rule)", or whatever group the caller named
  int verdicts = 0;
  VerdictScore recorded, candidate;
};

struct VerdictComparison {
  int verdicts = 0;      // verdicts on replayed Decisions: what both scores count
  int not_replayed = 0;  // verdicts on Decisions this replay did not see (counted in neither score)
  VerdictScore recorded, candidate;
  std::vector<RuleVerdictScore> by_rule;  // by name; a Decision under two rules counts for both
};

// Scores the recorded policy and the candidate on `verdicts` (Decision id -> verdict) over
// `report.replayed`. `groups` names what each Decision counts under per rule (the rules its
// record matched); a Decision missing there, or with no names, counts under "(no rule)".
VerdictComparison ScoreVerdicts(const SimulationReport& report, const std::map<std::int64_t, Verdict>& verdicts,
                                const std::map<std::int64_t, std::vector<std::string>>& groups = {});

// {"count", "not_replayed", "recorded": SCORE, "candidate": SCORE, "by_rule": [{"rule", "count",
// "recorded", "candidate"}]}, SCORE being {"acted": {"yes", "no", "unknown"}, "declined": {...},
// "needs_assessment": {...}, "precision", "lower_bound"} (precision and lower_bound null when
// nothing it acted on has a yes or no answer).
nlohmann::json VerdictComparisonJson(const VerdictComparison& c);

// The comparison as `policy simulate` prints it after the differences: lines ending in '\n'.
std::string VerdictComparisonText(const VerdictComparison& c);

// Parses the JSON AssessmentToJson writes (as decisions.assessment stores it).
std::optional<Assessment> AssessmentFromJson(const nlohmann::json& j);

}  // namespace superagent::app
