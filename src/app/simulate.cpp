#include "app/simulate.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "core/explain_words.h"
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
    {
      const Trigger& last = r.view.batch.back().record.trigger;
      const std::string repo = Policy::RepositoryOf(last);
      const bool inferred_acted = (s.simulated == "accept" && out.strength == Strength::kInferred) ||
                                  s.simulated == "would_accept";
      if (inferred_acted)
        s.row = DottedKey(candidate.ModePath(out.matched_rules.empty() ? "" : out.matched_rules.front(), repo));
      else if (out.strength == Strength::kExplicit || out.reason.rfind("not admitted", 0) == 0)
        s.row = DottedKey(candidate.SourcePath(last.source, repo));
    }
    report.replayed.push_back({s.decision_id, s.recorded, s.simulated});
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

namespace {

// Where a verdict on a Decision labelled `label` (SimulatedDecision's labels) counts.
int* VerdictCell(VerdictScore& s, const std::string& label, Verdict v) {
  const bool acted = label == "accept" || label == "would_accept";
  // Not knowing what the candidate would do is neither acting nor declining.
  const bool undecided = label == "needs_assessment" || label == "unavailable";
  switch (v) {
    case Verdict::kYes: return acted ? &s.acted_yes : undecided ? &s.undecided_yes : &s.declined_yes;
    case Verdict::kNo: return acted ? &s.acted_no : undecided ? &s.undecided_no : &s.declined_no;
    case Verdict::kUnknown: break;
  }
  return acted ? &s.acted_unknown : undecided ? &s.undecided_unknown : &s.declined_unknown;
}

void FinishVerdictScore(VerdictScore& s) {
  s.precision = s.answers() > 0 ? static_cast<double>(s.acted_yes) / s.answers() : 0;
  s.lower_bound = WilsonLowerBound(s.acted_yes, s.answers());
}

json VerdictCountsJson(int yes, int no, int unknown) { return {{"yes", yes}, {"no", no}, {"unknown", unknown}}; }

json VerdictScoreJson(const VerdictScore& s) {
  const bool measured = s.answers() > 0;
  return {{"acted", VerdictCountsJson(s.acted_yes, s.acted_no, s.acted_unknown)},
          {"declined", VerdictCountsJson(s.declined_yes, s.declined_no, s.declined_unknown)},
          {"needs_assessment", VerdictCountsJson(s.undecided_yes, s.undecided_no, s.undecided_unknown)},
          {"precision", measured ? json(s.precision) : json(nullptr)},
          {"lower_bound", measured ? json(s.lower_bound) : json(nullptr)}};
}

__attribute__((format(printf, 1, 2))) std::string VerdictPrintf(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out;
  if (n > 0) {
    out.resize(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(out.data(), out.size(), format, again);
    out.resize(static_cast<std::size_t>(n));
  }
  va_end(again);
  return out;
}

std::string VerdictCountsText(int yes, int no, int unknown) {
  return VerdictPrintf("yes %d, no %d, don't know %d", yes, no, unknown);
}

// "precision 75.0 %, at least 46.8 %[ with 95 % confidence]", or why there is none.
std::string PrecisionText(const VerdictScore& s, bool with_confidence) {
  if (s.answers() == 0) return "no yes or no answer to measure precision by";
  return VerdictPrintf("precision %.1f %%, at least %.1f %%%s", 100 * s.precision, 100 * s.lower_bound,
                       with_confidence ? " with 95 % confidence" : "");
}

// "acted on 12 (yes 9, no 3, don't know 0): precision 75.0 %, at least 46.8 %[ with 95 %
// confidence]", or "acted on none of them".
std::string ActedText(const VerdictScore& s, const char* verb, bool with_confidence) {
  if (s.acted() == 0) return std::string(verb) + " none of them";
  const std::string counts = VerdictCountsText(s.acted_yes, s.acted_no, s.acted_unknown);
  return VerdictPrintf("%s %d (%s): ", verb, s.acted(), counts.c_str()) + PrecisionText(s, with_confidence);
}

std::string DeclinedText(const VerdictScore& s, const char* verb) {
  return VerdictPrintf("%s %d (%s)", verb, s.declined(),
                       VerdictCountsText(s.declined_yes, s.declined_no, s.declined_unknown).c_str());
}

std::string UndecidedCounts(const VerdictScore& s) {
  return VerdictCountsText(s.undecided_yes, s.undecided_no, s.undecided_unknown);
}

}  // namespace

VerdictComparison ScoreVerdicts(const SimulationReport& report, const std::map<std::int64_t, Verdict>& verdicts,
                                const std::map<std::int64_t, std::vector<std::string>>& groups) {
  VerdictComparison c;
  std::map<std::string, RuleVerdictScore> by_rule;
  for (const ReplayedDecision& d : report.replayed) {
    const auto v = verdicts.find(d.decision_id);
    if (v == verdicts.end()) continue;
    ++c.verdicts;
    ++*VerdictCell(c.recorded, d.recorded, v->second);
    ++*VerdictCell(c.candidate, d.simulated, v->second);
    std::vector<std::string> names;
    if (const auto g = groups.find(d.decision_id); g != groups.end()) names = g->second;
    if (names.empty()) names.push_back("(no rule)");
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());  // a rule counts a Decision once
    for (const std::string& name : names) {
      RuleVerdictScore& r = by_rule[name];
      r.rule = name;
      ++r.verdicts;
      ++*VerdictCell(r.recorded, d.recorded, v->second);
      ++*VerdictCell(r.candidate, d.simulated, v->second);
    }
  }
  c.not_replayed = static_cast<int>(verdicts.size()) - c.verdicts;
  FinishVerdictScore(c.recorded);
  FinishVerdictScore(c.candidate);
  for (auto& [name, r] : by_rule) {
    FinishVerdictScore(r.recorded);
    FinishVerdictScore(r.candidate);
    c.by_rule.push_back(std::move(r));
  }
  return c;
}

json VerdictComparisonJson(const VerdictComparison& c) {
  json rules = json::array();
  for (const RuleVerdictScore& r : c.by_rule)
    rules.push_back({{"rule", r.rule},
                     {"count", r.verdicts},
                     {"recorded", VerdictScoreJson(r.recorded)},
                     {"candidate", VerdictScoreJson(r.candidate)}});
  return {{"count", c.verdicts},
          {"not_replayed", c.not_replayed},
          {"recorded", VerdictScoreJson(c.recorded)},
          {"candidate", VerdictScoreJson(c.candidate)},
          {"by_rule", rules}};
}

std::string VerdictComparisonText(const VerdictComparison& c) {
  std::string out;
  if (c.verdicts == 0) {
    out = "No verdicts on the replayed Decisions: nothing to score the candidate against.\n";
    if (c.not_replayed > 0)
      out += VerdictPrintf("  (%d verdict(s) on Decisions not replayed here are not counted)\n", c.not_replayed);
    return out;
  }
  const VerdictScore& was = c.recorded;
  const VerdictScore& now = c.candidate;
  // Every verdict is in each score once (acted, declined or undecided): the recorded one's add up.
  const std::string all = VerdictCountsText(was.acted_yes + was.declined_yes + was.undecided_yes,
                                            was.acted_no + was.declined_no + was.undecided_no,
                                            was.acted_unknown + was.declined_unknown + was.undecided_unknown);
  out += VerdictPrintf("On %d recorded verdict(s) (%s):\n", c.verdicts, all.c_str());
  out += "  the recorded policy " + ActedText(was, "acted on", true) + "\n";
  if (was.declined() > 0)
    out += "  the recorded policy " + DeclinedText(was, "declined") +
           VerdictPrintf(": %d of them a person said was a request\n", was.declined_yes);
  out += "  the candidate " + ActedText(now, "would act on", true) + "\n";
  if (now.declined() > 0)
    out += "  the candidate " + DeclinedText(now, "would decline") +
           VerdictPrintf(": %d of them a person said was a request\n", now.declined_yes);
  if (now.undecided() > 0)
    out += VerdictPrintf("  the candidate cannot tell %d (%s) without a model call\n", now.undecided(),
                         UndecidedCounts(now).c_str());
  if (c.not_replayed > 0)
    out += VerdictPrintf("  (%d verdict(s) on Decisions not replayed here are not counted)\n", c.not_replayed);
  if (!c.by_rule.empty()) out += "  by rule:\n";
  for (const RuleVerdictScore& r : c.by_rule) {
    out += VerdictPrintf("    %s, %d verdict(s):\n", r.rule.c_str(), r.verdicts);
    out += "      the recorded policy " + ActedText(r.recorded, "acted on", false);
    if (r.recorded.declined() > 0) out += "; " + DeclinedText(r.recorded, "declined");
    out += "\n      the candidate " + ActedText(r.candidate, "would act on", false);
    if (r.candidate.declined() > 0) out += "; " + DeclinedText(r.candidate, "would decline");
    if (r.candidate.undecided() > 0)
      out += VerdictPrintf("; cannot tell %d (%s) without a model call", r.candidate.undecided(),
                           UndecidedCounts(r.candidate).c_str());
    out += "\n";
  }
  return out;
}

}  // namespace superagent::app
