// policy simulate (SPEC §12): replays recorded Decisions through the same Gate and decision code
// (JudgeEval) under a candidate policy, so a team sees what an edit would change before making
// it. Reads only; the model is never called: the recorded assessment is replayed when there is
// one, and where the candidate would need a fresh one the result says so.
#pragma once

#include <string>
#include <vector>

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
};

struct SimulationReport {
  int decisions = 0, same = 0, changed = 0, needs_assessment = 0;
  int unavailable_skipped = 0;  // recorded `unavailable` (model failed, retried later): not replayed
  std::vector<SimulatedDecision> differences;  // changed and needs_assessment, oldest first
};

// Replays every Decision since `since`. `use_assessments` false judges by the Gate alone: any
// admitted batch is "needs_assessment" unless its request is explicit.
SimulationReport SimulatePolicy(const std::vector<RecordedDecision>& recorded, const Policy& candidate,
                                bool use_assessments);

// Parses the JSON AssessmentToJson writes (as decisions.assessment stores it).
std::optional<Assessment> AssessmentFromJson(const nlohmann::json& j);

}  // namespace superagent::app
