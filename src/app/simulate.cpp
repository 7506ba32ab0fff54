#include "app/simulate.h"

#include "superagent/eval.h"

namespace superagent::app {

using nlohmann::json;

namespace {

std::string Label(DecisionOutcome outcome, bool would_accept) {
  if (outcome == DecisionOutcome::kIgnore && would_accept) return "would_accept";
  return DecisionOutcomeName(outcome);
}

// Answers with the recorded assessment, or Unavailable when there is none: the simulation never
// calls the model.
class ReplayAssessor : public Assessor {
 public:
  explicit ReplayAssessor(std::optional<Assessment> recorded) : recorded_(std::move(recorded)) {}
  Result<Assessment> Assess(const EvalJob&, const std::vector<const Candidate*>&, const Policy&) override {
    asked_ = true;
    if (recorded_) return *recorded_;
    return Status::Unavailable("no recorded assessment");
  }
  bool asked() const { return asked_; }

 private:
  std::optional<Assessment> recorded_;
  bool asked_ = false;
};

}  // namespace

std::optional<Assessment> AssessmentFromJson(const json& j) {
  if (!j.is_object()) return std::nullopt;
  Assessment a;
  if (!ParseDecisionOutcome(j.value("decision", std::string()), &a.decision)) return std::nullopt;
  a.implementation_requested = j.value("implementation_requested", false);
  a.target_basis = j.value("target_basis", std::string("undetermined"));
  a.open_design_decision = j.value("open_design_decision", false);
  a.evidence = j.value("evidence", std::string());
  a.scope = j.value("scope", std::string());
  a.acknowledgement = j.value("acknowledgement", std::string());
  if (j.contains("related_ticket") && j["related_ticket"].is_number_integer()) a.related_ticket = j["related_ticket"].get<TicketId>();
  if (j.contains("rules") && j["rules"].is_array())
    for (const json& r : j["rules"])
      if (r.is_object()) a.rules.push_back({r.value("name", std::string()), r.value("matched", false), r.value("reason", std::string())});
  return a;
}

SimulationReport SimulatePolicy(const std::vector<RecordedDecision>& recorded, const Policy& candidate,
                                bool use_assessments) {
  SimulationReport report;
  for (const RecordedDecision& r : recorded) {
    const Decision& d = r.view.decision;
    if (r.view.batch.empty()) continue;  // nothing to replay (should not happen)
    // A model failure is not an answer: its Triggers were requeued and judged again later.
    if (d.outcome == DecisionOutcome::kUnavailable) {
      ++report.unavailable_skipped;
      continue;
    }
    ++report.decisions;
    EvalJob job;
    job.id = d.eval;
    job.thread = d.thread;
    job.tickets = r.tickets;
    job.policy = candidate;
    for (const JudgedTrigger& t : r.view.batch) {
      Candidate c;
      c.seq = t.record.seq;
      c.trigger = t.record.trigger;
      job.batch.push_back(std::move(c));
    }
    // Whether the Thread had a Ticket is what JudgeEval reads from job.tickets.
    if (!r.thread_had_ticket) job.tickets.clear();

    std::optional<Assessment> assessment;
    if (use_assessments) assessment = AssessmentFromJson(d.assessment);
    ReplayAssessor replay(assessment);
    EvalOutcome out = JudgeEval(job, candidate, replay);

    SimulatedDecision s;
    s.decision_id = d.id;
    s.thread = d.thread;
    s.trigger_id = r.view.batch.back().record.trigger.id;
    s.url = TriggerUrl(r.view.batch.back().record.trigger);
    s.at = d.created_at;
    s.recorded = Label(d.outcome, d.would_accept);
    s.recorded_reason = d.reason;
    s.simulated = Label(out.outcome, out.would_accept);
    s.simulated_reason = out.reason;
    const bool no_answer = replay.asked() && out.outcome == DecisionOutcome::kUnavailable;
    if (no_answer || (out.outcome == DecisionOutcome::kUnavailable && out.reason.rfind("invalid assessment", 0) == 0)) {
      if (out.strength == Strength::kExplicit && !assessment) {
        // The Gate alone grants explicit requests; the model only shapes them (or judges a stop).
        s.simulated = "accept";
        s.simulated_reason = "explicit request (" + out.admission + "); assumed: the model could still judge a stop";
        s.assumed = true;
      } else {
        s.simulated = "needs_assessment";
        s.simulated_reason = out.reason;
      }
    }
    if (s.simulated == "needs_assessment") {
      ++report.needs_assessment;
      report.differences.push_back(std::move(s));
    } else if (s.simulated == s.recorded) {
      ++report.same;
    } else {
      ++report.changed;
      report.differences.push_back(std::move(s));
    }
  }
  return report;
}

}  // namespace superagent::app
