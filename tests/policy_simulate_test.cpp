// policy simulate: recorded Decisions replayed through the real Gate and decision code under a
// candidate policy, read through the read-only Views connection, never calling a model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "app/simulate.h"
#include "engine_fixture.h"
#include "run_binary.h"
#include "superagent/clock.h"
#include "superagent/judgement.h"
#include "superagent/views.h"

namespace superagent::testing {
namespace {

using app::SimulatePolicy;
using app::SimulationReport;
using app::VerdictComparison;
using app::VerdictScore;
using ::testing::HasSubstr;

class PolicySimulateTest : public EngineTest {
 protected:
  // Three recorded Decisions under the observe base policy:
  //  issue 1: alice asks explicitly          -> accept
  //  issue 2: carol (not listed) asks         -> ignore (others_addressed: ignore), no assessment
  //  issue 3: bob points at a typo, unasked   -> ignore + would_accept (rule wording matched)
  void SetUp() override {
    EngineTest::SetUp();
    Receive(Comment("gh:1", "alice", true, "@agent please fix the typo in README", 1));
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    ASSERT_EQ(Drain(), 1);
    clock_.Advance(1000);
    Receive(Comment("gh:2", "carol", true, "@agent please rewrite the build in Bazel", 2));
    ASSERT_EQ(Drain(), 1);
    clock_.Advance(1000);
    Receive(Comment("gh:3", "bob", false, "the README heading says 'Instalation'", 3));
    assessor_.answers.push_back(ScriptedAssessor::Accept(true, "says 'Instalation'"));
    ASSERT_EQ(Drain(), 1);
    ASSERT_EQ(assessor_.calls, 2);
  }

  SimulationReport Simulate(const Policy& candidate, bool use_assessments = true) {
    auto views = Views::Open((dir_ / "superagent.db").string());
    EXPECT_TRUE(views.ok());
    if (!views.ok()) return {};
    const int calls_before = assessor_.calls;
    auto recorded = (*views)->DecisionsSince(0);
    EXPECT_TRUE(recorded.ok()) << recorded.status().ToString();
    if (!recorded.ok()) return {};
    SimulationReport r = SimulatePolicy(*recorded, candidate, use_assessments);
    EXPECT_EQ(assessor_.calls, calls_before) << "a simulation must never ask the model";
    return r;
  }
};

TEST_F(PolicySimulateTest, TheSamePolicyChangesNothing) {
  SimulationReport r = Simulate(MakePolicy("observe"));
  EXPECT_EQ(r.decisions, 3);
  EXPECT_EQ(r.same, 3);
  EXPECT_EQ(r.changed, 0);
  EXPECT_EQ(r.needs_assessment, 0);
  EXPECT_TRUE(r.differences.empty());
}

TEST_F(PolicySimulateTest, AutoModeTurnsTheRecordedWouldAcceptIntoAnAccept) {
  SimulationReport r = Simulate(MakePolicy("auto"));
  EXPECT_EQ(r.same, 2);
  ASSERT_EQ(r.changed, 1);
  const auto& d = r.differences.at(0);
  EXPECT_EQ(d.trigger_id, "gh:3");
  EXPECT_EQ(d.recorded, "would_accept");
  EXPECT_EQ(d.simulated, "accept");
  EXPECT_EQ(d.simulated_reason, "proactive work under rules (auto: wording)");
  EXPECT_EQ(d.url, "https://github.com/o/r/issues/3#gh:3");
  EXPECT_EQ(d.row, "mode") << "the row whose auto decided";
}

// Issue 37: the candidate's rows of one repository decide there, and the report names them.
TEST_F(PolicySimulateTest, ARepositorysOwnRowsDecideThereAndAreNamed) {
  Policy candidate = MakePolicy("observe");
  ASSERT_EQ(Policy::RepositoryOf(Comment("x", "alice", true, "x", 1)), "acme/widgets");
  SourcePolicy own = candidate.sources.at("github");
  own.people = {"bob"};
  candidate.repos["acme/widgets"].github = own;
  candidate.repos["acme/widgets"].mode = Mode::kAuto;
  SimulationReport r = Simulate(candidate);
  ASSERT_EQ(r.changed, 2);
  EXPECT_EQ(r.differences[0].trigger_id, "gh:1");
  EXPECT_EQ(r.differences[0].simulated, "ignore");
  EXPECT_EQ(r.differences[0].row, "repos.\"acme/widgets\".sources.github");
  EXPECT_EQ(r.differences[1].trigger_id, "gh:3");
  EXPECT_EQ(r.differences[1].simulated, "accept");
  EXPECT_EQ(r.differences[1].row, "repos.\"acme/widgets\".mode");
}

TEST_F(PolicySimulateTest, DroppingAPersonFromTheAllowListIgnoresTheirRequest) {
  SimulationReport r = Simulate(MakePolicy("observe", "people: [alice, bob]=>people: [bob]"));
  ASSERT_EQ(r.changed, 1);
  EXPECT_EQ(r.differences[0].trigger_id, "gh:1");
  EXPECT_EQ(r.differences[0].recorded, "accept");
  EXPECT_EQ(r.differences[0].simulated, "ignore");
  EXPECT_THAT(r.differences[0].simulated_reason, HasSubstr("not admitted"));
  EXPECT_EQ(r.differences[0].row, "sources.github");
}

TEST_F(PolicySimulateTest, AdmittingOthersAcceptsTheirExplicitRequestWithoutAModel) {
  SimulationReport r = Simulate(MakePolicy("observe", "others_addressed: ignore=>others_addressed: explicit"));
  ASSERT_EQ(r.changed, 1);
  const auto& d = r.differences[0];
  EXPECT_EQ(d.trigger_id, "gh:2");
  EXPECT_EQ(d.recorded, "ignore");
  EXPECT_EQ(d.simulated, "accept");
  EXPECT_TRUE(d.assumed);
  EXPECT_THAT(d.simulated_reason, HasSubstr("could still judge a stop"));
}

TEST_F(PolicySimulateTest, ANewRuleNeedsAFreshAssessmentAndSaysSo) {
  Policy candidate = MakePolicy("auto", "rules:=>rules:\n  - name: docs\n    when: Update docs.\n    instructions: Small.");
  SimulationReport r = Simulate(candidate);
  ASSERT_EQ(r.needs_assessment, 1);
  EXPECT_EQ(r.differences[0].trigger_id, "gh:3");
  EXPECT_EQ(r.differences[0].simulated, "needs_assessment");
  EXPECT_THAT(r.differences[0].simulated_reason, HasSubstr("does not answer rule \"docs\""));
}

TEST_F(PolicySimulateTest, GateOnlyReportsInferredWorkAsNeedingAnAssessment) {
  SimulationReport r = Simulate(MakePolicy("observe"), /*use_assessments=*/false);
  EXPECT_EQ(r.same, 2);  // the explicit accept and the not-admitted ignore are the Gate's alone
  ASSERT_EQ(r.needs_assessment, 1);
  EXPECT_EQ(r.differences[0].trigger_id, "gh:3");
}

TEST_F(PolicySimulateTest, AModelFailureIsNotReplayed) {
  clock_.Advance(1000);
  Receive(Comment("gh:4", "bob", false, "the CONTRIBUTING link is broken", 4));
  ASSERT_EQ(Drain(), 1);  // no scripted answer: the model "fails", the Trigger is requeued
  SimulationReport r = Simulate(MakePolicy("observe"));
  EXPECT_EQ(r.unavailable_skipped, 1);
  EXPECT_EQ(r.decisions, 3);
  EXPECT_EQ(r.same, 3);
}

TEST(AssessmentJson, RoundTripsWhatDecisionsStore) {
  Assessment a = ScriptedAssessor::Accept(true, "says 'Instalation'");
  a.related_ticket = 7;
  auto back = app::AssessmentFromJson(AssessmentToJson(a));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->decision, DecisionOutcome::kAccept);
  EXPECT_EQ(back->evidence, "says 'Instalation'");
  ASSERT_EQ(back->rules.size(), 2u);
  EXPECT_EQ(back->rules[0].name, "wording");
  EXPECT_TRUE(back->rules[0].matched);
  EXPECT_EQ(back->related_ticket, 7);
  EXPECT_FALSE(app::AssessmentFromJson(nlohmann::json(nullptr)));
  EXPECT_FALSE(app::AssessmentFromJson(nlohmann::json{{"decision", "maybe"}}));
}

// --- Scoring a candidate on the verdicts people gave (issue 38 §2) ---

// The base policy with its second rule named in Chinese (排版: typesetting), `mode`, and textual
// edits ("old" -> "new") applied in order.
std::string SimulatedVerdictsPolicyText(const std::string& mode,
                                        const std::vector<std::pair<std::string, std::string>>& edits = {}) {
  std::string yaml = kBasePolicy;
  yaml.replace(yaml.find("MODE"), 4, mode);
  yaml.replace(yaml.find("name: visual"), 12, "name: 排版");
  for (const auto& [from, to] : edits) {
    const auto at = yaml.find(from);
    if (at == std::string::npos) ADD_FAILURE() << "edit target not found: " << from;
    else yaml.replace(at, from.size(), to);
  }
  return yaml;
}

Policy SimulatedVerdictsPolicy(const std::string& mode,
                               const std::vector<std::pair<std::string, std::string>>& edits = {}) {
  std::vector<Problem> problems;
  auto p = ParsePolicy(SimulatedVerdictsPolicyText(mode, edits), "candidate.yaml", &problems);
  if (p) return *p;
  for (const Problem& pr : problems) ADD_FAILURE() << pr.ToString();
  return DefaultPolicy();
}

// Asserts every count of `s`, and its precision (its lower bound is WilsonLowerBound's).
void ExpectVerdictScore(const VerdictScore& s, std::vector<int> acted, std::vector<int> declined,
                        std::vector<int> undecided, double precision, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ((std::vector<int>{s.acted_yes, s.acted_no, s.acted_unknown}), acted) << "acted yes/no/unknown";
  EXPECT_EQ((std::vector<int>{s.declined_yes, s.declined_no, s.declined_unknown}), declined) << "declined";
  EXPECT_EQ((std::vector<int>{s.undecided_yes, s.undecided_no, s.undecided_unknown}), undecided) << "undecided";
  EXPECT_DOUBLE_EQ(s.precision, precision);
  EXPECT_DOUBLE_EQ(s.lower_bound, WilsonLowerBound(s.acted_yes, s.acted_yes + s.acted_no));
}

class PolicySimulateVerdictsTest : public EngineTest {
 protected:
  // Under observe, with rules `wording` and `排版`:
  //  issue 1:  alice asks explicitly                 -> accept (no verdict: only would_accepts get one)
  //  issue 11: alice, unasked, wording               -> would_accept, verdict yes
  //  issue 12: bob,   unasked, wording               -> would_accept, verdict no
  //  issue 13: alice, unasked, 排版                  -> would_accept, verdict yes
  //  issue 14: bob,   unasked, 排版                  -> would_accept, verdict "don't know"
  //  issue 15: bob,   unasked, wording and 排版      -> would_accept, verdict yes
  //  issue 16: alice, unasked, wording               -> would_accept, no verdict yet
  void SetUp() override {
    EngineTest::SetUp();
    Open(SimulatedVerdictsPolicy("observe"));
    Receive(Comment("gh:1", "alice", true, "@agent please fix the typo in README", 1));
    assessor_.answers.push_back(Answer(true, false));
    ASSERT_EQ(Drain(), 1);
    Unasked(11, "alice", true, false, Verdict::kYes);
    Unasked(12, "bob", true, false, Verdict::kNo);
    Unasked(13, "alice", false, true, Verdict::kYes);
    Unasked(14, "bob", false, true, Verdict::kUnknown);
    Unasked(15, "bob", true, true, Verdict::kYes);
    Unasked(16, "alice", true, false, std::nullopt);
  }

  static Assessment Answer(bool wording, bool typesetting) {
    Assessment a = ScriptedAssessor::Accept(wording || typesetting, "points at the mistake");
    a.rules = {{"wording", wording, "wording"}, {"排版", typesetting, "spacing"}};
    return a;
  }

  // An unaddressed message by `actor` on issue `issue` that observe records as would_accept under
  // the rules named, then the verdict a person gives on it in the panel.
  void Unasked(int issue, const std::string& actor, bool wording, bool typesetting, std::optional<Verdict> verdict) {
    clock_.Advance(1000);
    const std::string id = "gh:" + std::to_string(issue);
    Receive(Comment(id, actor, false, "the README has a mistake in section " + std::to_string(issue), issue));
    assessor_.answers.push_back(Answer(wording, typesetting));
    ASSERT_EQ(Drain(), 1);
    if (!verdict) return;
    auto records = views_->WouldAccepts(0);
    ASSERT_TRUE(records.ok()) << records.status().ToString();
    ASSERT_FALSE(records->empty());
    const WouldAcceptRecord& newest = records->back();
    ASSERT_EQ(newest.thread, "github:acme/widgets:issue:" + std::to_string(issue));
    ASSERT_TRUE(engine_->RecordVerdict(newest.decision, *verdict, "carol", "panel").ok());
  }

  // The replay and its score, the verdict map built as `policy simulate` builds it.
  VerdictComparison Score(const Policy& candidate, SimulationReport* report = nullptr) {
    auto recorded = views_->DecisionsSince(0);
    EXPECT_TRUE(recorded.ok()) << recorded.status().ToString();
    auto records = views_->WouldAccepts(0);
    EXPECT_TRUE(records.ok()) << records.status().ToString();
    if (!recorded.ok() || !records.ok()) return {};
    const int calls_before = assessor_.calls;
    SimulationReport r = SimulatePolicy(*recorded, candidate, /*use_assessments=*/true);
    EXPECT_EQ(assessor_.calls, calls_before) << "a simulation must never ask the model";
    std::map<std::int64_t, Verdict> verdicts;
    std::map<std::int64_t, std::vector<std::string>> groups;
    for (const WouldAcceptRecord& w : *records) {
      if (!w.verdict) continue;
      verdicts[w.decision] = *w.verdict;
      groups[w.decision] = w.rules;
    }
    VerdictComparison c = app::ScoreVerdicts(r, verdicts, groups);
    if (report) *report = std::move(r);
    return c;
  }
};

TEST_F(PolicySimulateVerdictsTest, TheSamePolicyScoresAsTheRecordedOne) {
  SimulationReport r;
  const VerdictComparison c = Score(SimulatedVerdictsPolicy("observe"), &r);
  EXPECT_EQ(r.same, 7);
  ASSERT_EQ(r.replayed.size(), 7u) << "every replayed Decision is kept, not only the differences";
  EXPECT_EQ(r.replayed[0].recorded, "accept");
  EXPECT_EQ(r.replayed[1].recorded, "would_accept");
  EXPECT_EQ(c.verdicts, 5);
  EXPECT_EQ(c.not_replayed, 0);
  ExpectVerdictScore(c.recorded, {3, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0.75, "recorded");
  ExpectVerdictScore(c.candidate, {3, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0.75, "candidate");
  EXPECT_NEAR(c.candidate.lower_bound, 0.3006, 1e-4);

  ASSERT_EQ(c.by_rule.size(), 2u);
  EXPECT_EQ(c.by_rule[0].rule, "wording");  // issues 11 (yes), 12 (no), 15 (yes)
  EXPECT_EQ(c.by_rule[0].verdicts, 3);
  ExpectVerdictScore(c.by_rule[0].candidate, {2, 1, 0}, {0, 0, 0}, {0, 0, 0}, 2.0 / 3, "wording");
  EXPECT_EQ(c.by_rule[1].rule, "排版");  // issues 13 (yes), 14 (don't know), 15 (yes)
  EXPECT_EQ(c.by_rule[1].verdicts, 3);
  ExpectVerdictScore(c.by_rule[1].candidate, {2, 0, 1}, {0, 0, 0}, {0, 0, 0}, 1.0, "排版");

  // Auto turns every would_accept into an accept: it acts on the same Decisions, equally well.
  const VerdictComparison in_auto = Score(SimulatedVerdictsPolicy("auto"));
  ExpectVerdictScore(in_auto.candidate, {3, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0.75, "auto");
}

TEST_F(PolicySimulateVerdictsTest, ModeOffDeclinesEverythingPeopleJudged) {
  SimulationReport r;
  const VerdictComparison c = Score(SimulatedVerdictsPolicy("off"), &r);
  EXPECT_EQ(r.changed, 6);  // the explicit accept stands: modes govern inferred work only
  EXPECT_EQ(c.verdicts, 5);
  ExpectVerdictScore(c.recorded, {3, 1, 1}, {0, 0, 0}, {0, 0, 0}, 0.75, "recorded");
  ExpectVerdictScore(c.candidate, {0, 0, 0}, {3, 1, 1}, {0, 0, 0}, 0, "candidate");
  EXPECT_EQ(c.candidate.lower_bound, 0);
  ASSERT_EQ(c.by_rule.size(), 2u);
  ExpectVerdictScore(c.by_rule[0].candidate, {0, 0, 0}, {2, 1, 0}, {0, 0, 0}, 0, "wording");
  ExpectVerdictScore(c.by_rule[1].candidate, {0, 0, 0}, {2, 0, 1}, {0, 0, 0}, 0, "排版");

  const std::string text = app::VerdictComparisonText(c);
  EXPECT_THAT(text, HasSubstr("  the candidate would act on none of them\n"));
  EXPECT_THAT(text, HasSubstr("  the candidate would decline 5 (yes 3, no 1, don't know 1): 3 of them a person said "
                              "was a request\n"));
  const nlohmann::json j = app::VerdictComparisonJson(c);
  EXPECT_EQ(j["candidate"]["declined"], (nlohmann::json{{"yes", 3}, {"no", 1}, {"unknown", 1}}));
  EXPECT_TRUE(j["candidate"]["precision"].is_null()) << "no precision without a yes or no it acted on";
  EXPECT_DOUBLE_EQ(j["recorded"]["precision"].get<double>(), 0.75);
}

TEST_F(PolicySimulateVerdictsTest, DisablingARuleLeavesItsDecisionsToAModelCall) {
  // Every recorded assessment answers 排版, which the candidate no longer has: without asking the
  // model again nobody can say what it would do, so none counts as acted or declined.
  const VerdictComparison c =
      Score(SimulatedVerdictsPolicy("observe", {{"name: 排版\n    enabled: true", "name: 排版\n    enabled: false"}}));
  ExpectVerdictScore(c.candidate, {0, 0, 0}, {0, 0, 0}, {3, 1, 1}, 0, "candidate");
  EXPECT_THAT(app::VerdictComparisonText(c),
              HasSubstr("  the candidate cannot tell 5 (yes 3, no 1, don't know 1) without a model call\n"));
}

TEST_F(PolicySimulateVerdictsTest, DroppingAPersonDeclinesTheirsAndSaysSoByRule) {
  const VerdictComparison c = Score(SimulatedVerdictsPolicy("observe", {{"people: [alice, bob]", "people: [alice]"}}));
  // Alice's 11 (yes) and 13 (yes) stay; bob's 12 (no), 14 (don't know) and 15 (yes) go.
  ExpectVerdictScore(c.candidate, {2, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1.0, "candidate");
  EXPECT_NEAR(c.candidate.lower_bound, 0.3424, 1e-4);
  EXPECT_EQ(app::VerdictComparisonText(c),
            "On 5 recorded verdict(s) (yes 3, no 1, don't know 1):\n"
            "  the recorded policy acted on 5 (yes 3, no 1, don't know 1): precision 75.0 %, at least 30.1 % with 95 % "
            "confidence\n"
            "  the candidate would act on 2 (yes 2, no 0, don't know 0): precision 100.0 %, at least 34.2 % with 95 % "
            "confidence\n"
            "  the candidate would decline 3 (yes 1, no 1, don't know 1): 1 of them a person said was a request\n"
            "  by rule:\n"
            "    wording, 3 verdict(s):\n"
            "      the recorded policy acted on 3 (yes 2, no 1, don't know 0): precision 66.7 %, at least 20.8 %\n"
            "      the candidate would act on 1 (yes 1, no 0, don't know 0): precision 100.0 %, at least 20.7 %; "
            "would decline 2 (yes 1, no 1, don't know 0)\n"
            "    排版, 3 verdict(s):\n"
            "      the recorded policy acted on 3 (yes 2, no 0, don't know 1): precision 100.0 %, at least 34.2 %\n"
            "      the candidate would act on 1 (yes 1, no 0, don't know 0): precision 100.0 %, at least 20.7 %; "
            "would decline 2 (yes 1, no 0, don't know 1)\n");
}

// The command a person runs: the score follows the differences, and --json carries it.
TEST_F(PolicySimulateVerdictsTest, TheCommandPrintsTheScoreAfterTheDifferences) {
  std::ofstream(dir_ / "simulate.yaml") << "data_dir: \"" << dir_.string() << "\"\n";
  std::ofstream(dir_ / "candidate.yaml")
      << SimulatedVerdictsPolicyText("observe", {{"people: [alice, bob]", "people: [alice]"}});
  // The Decisions were made at the fake clock's time: a window reaching back past it.
  const std::string since = std::to_string((SystemClock()->NowMs() - clock_.NowMs()) / 86'400'000 + 2) + "d";
  const std::vector<std::string> args = {"policy", "simulate", "--config", (dir_ / "simulate.yaml").string(),
                                         "--policy", (dir_ / "candidate.yaml").string(), "--since", since};
  RunResult text = RunProgram(SUPERAGENT_BINARY, args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("same: 4  changed: 3  needs a model assessment: 0"));
  EXPECT_THAT(text.out, HasSubstr("\n\nOn 5 recorded verdict(s) (yes 3, no 1, don't know 1):\n"));
  EXPECT_THAT(text.out, HasSubstr("  the candidate would decline 3 (yes 1, no 1, don't know 1): 1 of them a person "
                                  "said was a request\n"));
  EXPECT_THAT(text.out, HasSubstr("    排版, 3 verdict(s):\n"));
  EXPECT_LT(text.out.find("gh:15 would_accept -> ignore"), text.out.find("On 5 recorded verdict(s)"));

  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  RunResult as_json = RunProgram(SUPERAGENT_BINARY, json_args);
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const nlohmann::json j = nlohmann::json::parse(as_json.out);
  EXPECT_EQ(j["verdicts"]["count"], 5);
  EXPECT_EQ(j["verdicts"]["recorded"]["acted"], (nlohmann::json{{"yes", 3}, {"no", 1}, {"unknown", 1}}));
  EXPECT_EQ(j["verdicts"]["candidate"]["acted"], (nlohmann::json{{"yes", 2}, {"no", 0}, {"unknown", 0}}));
  EXPECT_EQ(j["verdicts"]["candidate"]["declined"], (nlohmann::json{{"yes", 1}, {"no", 1}, {"unknown", 1}}));
  EXPECT_DOUBLE_EQ(j["verdicts"]["candidate"]["precision"].get<double>(), 1.0);
  ASSERT_EQ(j["verdicts"]["by_rule"].size(), 2u);
  EXPECT_EQ(j["verdicts"]["by_rule"][1]["rule"], "排版");
  EXPECT_EQ(j["verdicts"]["by_rule"][1]["count"], 3);
}

TEST_F(PolicySimulateTest, WithNoVerdictsTheScoreSaysSoInOneLine) {
  const VerdictComparison c = app::ScoreVerdicts(Simulate(MakePolicy("auto")), {}, {});
  EXPECT_EQ(c.verdicts, 0);
  EXPECT_EQ(app::VerdictComparisonText(c),
            "No verdicts on the replayed Decisions: nothing to score the candidate against.\n");
  EXPECT_EQ(app::VerdictComparisonJson(c)["count"], 0);
}

TEST(VerdictScoreTest, CountsEachVerdictWhereEachPolicyLeftItsDecision) {
  SimulationReport r;
  r.replayed = {{1, "would_accept", "accept"},
                {2, "accept", "needs_assessment"},
                {3, "ignore", "would_accept"},
                {4, "would_accept", "stop"}};
  const std::map<std::int64_t, Verdict> verdicts = {
      {1, Verdict::kYes}, {2, Verdict::kNo}, {3, Verdict::kYes}, {4, Verdict::kUnknown}, {99, Verdict::kYes}};
  // 1 names its rule twice (counted once); 3 names none, 2 and 4 are not listed: "(no rule)".
  const std::map<std::int64_t, std::vector<std::string>> groups = {{1, {"wording", "wording"}}, {3, {}}};
  const VerdictComparison c = app::ScoreVerdicts(r, verdicts, groups);
  EXPECT_EQ(c.verdicts, 4);
  EXPECT_EQ(c.not_replayed, 1);
  ExpectVerdictScore(c.recorded, {1, 1, 1}, {1, 0, 0}, {0, 0, 0}, 0.5, "recorded");
  ExpectVerdictScore(c.candidate, {2, 0, 0}, {0, 0, 1}, {0, 1, 0}, 1.0, "candidate");
  ASSERT_EQ(c.by_rule.size(), 2u);
  EXPECT_EQ(c.by_rule[0].rule, "(no rule)");
  EXPECT_EQ(c.by_rule[0].verdicts, 3);
  ExpectVerdictScore(c.by_rule[0].recorded, {0, 1, 1}, {1, 0, 0}, {0, 0, 0}, 0, "(no rule) recorded");
  ExpectVerdictScore(c.by_rule[0].candidate, {1, 0, 0}, {0, 0, 1}, {0, 1, 0}, 1.0, "(no rule) candidate");
  EXPECT_EQ(c.by_rule[1].rule, "wording");
  EXPECT_EQ(c.by_rule[1].verdicts, 1);
  ExpectVerdictScore(c.by_rule[1].candidate, {1, 0, 0}, {0, 0, 0}, {0, 0, 0}, 1.0, "wording candidate");
  const std::string text = app::VerdictComparisonText(c);
  EXPECT_THAT(text, HasSubstr("  the recorded policy declined 1 (yes 1, no 0, don't know 0): 1 of them a person "
                              "said was a request\n"));
  EXPECT_THAT(text, HasSubstr("  (1 verdict(s) on Decisions not replayed here are not counted)\n"));
  EXPECT_THAT(text, HasSubstr("      the recorded policy acted on 2 (yes 0, no 1, don't know 1): precision 0.0 %, "
                              "at least 0.0 %; declined 1 (yes 1, no 0, don't know 0)\n"));
}

}  // namespace
}  // namespace superagent::testing
