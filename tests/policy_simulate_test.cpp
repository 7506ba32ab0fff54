// policy simulate: recorded Decisions replayed through the real Gate and decision code under a
// candidate policy, read through the read-only Views connection, never calling a model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/simulate.h"
#include "engine_fixture.h"
#include "superagent/views.h"

namespace superagent::testing {
namespace {

using app::SimulatePolicy;
using app::SimulationReport;
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
  EXPECT_EQ(d.simulated_reason, "proactive work under rules");
  EXPECT_EQ(d.url, "https://github.com/o/r/issues/3#gh:3");
}

TEST_F(PolicySimulateTest, DroppingAPersonFromTheAllowListIgnoresTheirRequest) {
  SimulationReport r = Simulate(MakePolicy("observe", "people: [alice, bob]=>people: [bob]"));
  ASSERT_EQ(r.changed, 1);
  EXPECT_EQ(r.differences[0].trigger_id, "gh:1");
  EXPECT_EQ(r.differences[0].recorded, "accept");
  EXPECT_EQ(r.differences[0].simulated, "ignore");
  EXPECT_THAT(r.differences[0].simulated_reason, HasSubstr("not admitted"));
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

}  // namespace
}  // namespace superagent::testing
