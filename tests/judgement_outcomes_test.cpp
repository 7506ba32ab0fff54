// Issue 38 through the Engine and the real store: a rule's own mode, outcomes that label what a
// rule in auto did (a stop in the first turn, a PR closed or merged, an answer, thanks), a
// person's verdict outranking an outcome, "missed" requests, a demoted rule holding its next
// Ticket, and an Eval that keeps what judged it — which explain then tells.
#include <sqlite3.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_pulls_fixture.h"
#include "panel/metrics_gather.h"
#include "result_ok.h"
#include "superagent/judgement.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// wording in auto by its own mode; the policy (and visual) stay in observe.
const char* kWordingAuto =
    "    when: Fix wording, typos, punctuation and existing translations.\n=>"
    "    when: Fix wording, typos, punctuation and existing translations.\n    mode: auto\n";

class JudgementOutcomesTest : public EnginePullsTest {
 protected:
  void SetUp() override {
    EnginePullsTest::SetUp();
    Open(MakePolicy("observe", kWordingAuto));
  }
  // alice's unaddressed comment on its own issue, which the assessment accepts under `wording`
  // (or under visual alone when `wording` is false); returns the Ticket it made, 0 for none.
  TicketId Inferred(const std::string& id, int issue, bool wording = true) {
    clock_.Advance(60'000);
    Receive(Comment(id, "alice", false, "the README says teh instead of the", issue));
    Assessment a = ScriptedAssessor::Accept(wording);
    if (!wording) a.rules = {{"wording", false, "-"}, {"visual", true, "spacing"}};
    assessor_.answers.push_back(a);
    EXPECT_EQ(Drain(), 1);
    auto story = ExplainNow(id);
    if (!story.ok() || !story->contains("ticket_created")) return 0;
    return (*story)["ticket_created"]["id"].get<TicketId>();
  }
  // The judged record of `ticket`'s Decision.
  WouldAcceptRecord RecordOf(TicketId ticket) {
    for (const WouldAcceptRecord& w : Ok(views_->Judged(0)))
      if (w.ticket == ticket) return w;
    ADD_FAILURE() << "no judged record for Ticket " << ticket;
    return {};
  }
  // A turn begins and ends ready with a result (a question answered, no PR), delivered.
  void AnsweredTurn(TicketId t) {
    ReadyTurn(t, false, "README already says \"the\" on main; nothing to change.");
    DeliverDue(Sent);  // the acknowledgement
    DeliverDue(Sent);  // the result, after it on the same discussion
  }
  RulePrecision WordingFigures() {
    for (const RulePrecision& r : PrecisionByRule(Ok(views_->Judged(0))))
      if (r.rule == "wording") return r;
    return {};
  }
};

TEST_F(JudgementOutcomesTest, ARuleInAutoByItsOwnModeIsWorkedWhileTheOthersOnlyRecord) {
  const TicketId worked = Inferred("c-auto", 1);
  EXPECT_NE(worked, 0) << "wording is in auto by its own mode";
  EXPECT_EQ(Inferred("c-visual", 2, /*wording=*/false), 0) << "visual keeps the policy's observe";
  const auto judged = Ok(views_->Judged(0));
  ASSERT_EQ(judged.size(), 2u);
  EXPECT_TRUE(judged[0].accepted);
  EXPECT_EQ(judged[0].rules, std::vector<std::string>{"wording"});
  EXPECT_FALSE(judged[1].accepted) << "a would_accept";
  EXPECT_EQ(judged[1].rules, std::vector<std::string>{"visual"});
  // Each check the code ran on the inferred assessment is kept with its Decision, in order.
  const auto story = Ok(ExplainNow("c-auto"));
  const json checks = story["evals"][0]["decision"]["assessment"]["checks"];
  ASSERT_EQ(checks.size(), 6u) << checks.dump();
  EXPECT_EQ(checks[0], (json{{"check", "rule_coverage"}, {"passed", true}}));
  EXPECT_EQ(checks[5], (json{{"check", "rule_in_auto"}, {"passed", true}}));
  EXPECT_EQ(Ok(ExplainNow("c-visual"))["evals"][0]["decision"]["assessment"]["checks"][5],
            (json{{"check", "rule_in_auto"}, {"passed", false}}));

  // Back to observe for every rule: the live Ticket is told proactive work is no longer accepted.
  Open(MakePolicy("observe"));
  bool told = false;
  for (const TicketInput& in : Ok(views_->TicketInputs(worked)))
    if (in.kind == "policy_changed" && in.body.dump().find("proactive work no longer accepted") != std::string::npos)
      told = true;
  EXPECT_TRUE(told);
}

TEST_F(JudgementOutcomesTest, EachOutcomeLabelsTheDecisionThatMadeTheTicket) {
  // Stopped from the panel before its first turn ended: against.
  const TicketId stopped = Inferred("c-stop", 1);
  ASSERT_TRUE(engine_->StopTicket(stopped, "carol (panel)").ok());
  // Its pull request merged: for. (Ticket ids follow the PR fixture's #42 only for the first PR.)
  const TicketId merged = Inferred("c-merge", 2);
  ReadyTurn(merged, true);
  DeliverDue(Sent);
  DeliverDue(Sent);
  Receive(Closed("pr42:merged", true, "bob"));
  // A question answered (a result, no PR): for; then thanked in Chinese.
  const TicketId answered = Inferred("c-answer", 3);
  AnsweredTurn(answered);
  const TicketId thanked = Inferred("c-thanks", 4);
  AnsweredTurn(thanked);
  Receive(Comment("c-thanks-2", "alice", true, "@agent 谢谢！", 4));
  // Thanks asks for nothing: context for the Ticket, no turn, no question owed an answer.
  const auto inputs = Ok(views_->TicketInputs(thanked));
  EXPECT_EQ(inputs.back().state, "context");
  for (const Assignment& a : Ok(views_->Assignments(thanked))) EXPECT_NE(a.state, "pending");
  EXPECT_EQ(Ok(ExplainNow("c-thanks-2"))["answer"]["kind"], "not_asked");
  // Still at work: no outcome yet.
  const TicketId working = Inferred("c-open", 5);

  EXPECT_EQ(RecordOf(stopped).verdict, Verdict::kNo);
  EXPECT_EQ(RecordOf(stopped).by, "stopped_in_first_turn");
  EXPECT_EQ(RecordOf(stopped).via, "outcome");
  EXPECT_EQ(RecordOf(merged).verdict, Verdict::kYes);
  EXPECT_EQ(RecordOf(merged).by, "pull_request_merged");
  EXPECT_EQ(RecordOf(answered).by, "answered");
  EXPECT_EQ(RecordOf(thanked).by, "thanked");
  EXPECT_FALSE(RecordOf(working).verdict.has_value());
  const RulePrecision w = WordingFigures();
  EXPECT_EQ(w.accepted, 5);
  EXPECT_EQ(w.yes, 3);
  EXPECT_EQ(w.no, 1);
  EXPECT_EQ(w.unanswered, 1);

  // The same numbers reach /metrics's outcomes: settled ones by name, the one at work as live.
  std::map<TicketId, std::string> outcome;
  for (const TicketOutcome& o : Ok(views_->TicketOutcomes(0))) outcome[o.ticket] = o.outcome;
  EXPECT_EQ(outcome[stopped], "stopped");
  EXPECT_EQ(outcome[merged], "merged");
  EXPECT_EQ(outcome[answered], "answered");
  EXPECT_EQ(outcome[working], "live");
}

TEST_F(JudgementOutcomesTest, APullRequestClosedUnmergedCountsAgainstAndAStopAfterTheFirstTurnCountsNeitherWay) {
  const TicketId closed = Inferred("c-closed", 1);
  ReadyTurn(closed, true);
  DeliverDue(Sent);
  DeliverDue(Sent);
  Receive(Closed("pr42:closed", false, "碧波"));
  EXPECT_EQ(RecordOf(closed).verdict, Verdict::kNo);
  EXPECT_EQ(RecordOf(closed).by, "pull_request_closed");

  // Two turns in, a stop is about the work's course, not whether it was wanted: it labels nothing,
  // and its answer before the stop does not count for it either.
  const TicketId later = Inferred("c-later", 2);
  AnsweredTurn(later);
  Receive(Comment("c-later-2", "alice", true, "@agent also the footer", 2));
  ReadyTurn(later, false, "Footer fixed too.");
  ASSERT_TRUE(engine_->StopTicket(later, "carol (panel)").ok());
  EXPECT_FALSE(RecordOf(later).verdict.has_value()) << "neither for nor against: " << RecordOf(later).by;
}

TEST_F(JudgementOutcomesTest, APersonsVerdictInTheThreadOutranksTheTicketsOutcome) {
  const TicketId t = Inferred("c-1", 1);
  Receive(Comment("c-verdict", "alice", true, "@agent not a request", 1));
  EXPECT_EQ(Drain(), 1);
  ReadyTurn(t, true);
  DeliverDue(Sent);
  DeliverDue(Sent);
  Receive(Closed("pr42:merged", true, "bob"));
  const WouldAcceptRecord r = RecordOf(t);
  EXPECT_EQ(r.verdict, Verdict::kNo);
  EXPECT_EQ(r.via, "thread");
  EXPECT_EQ(r.by, "alice");
  // The answer said what the verdict is about: the rule took it.
  bool said = false;
  for (const Receipt& rc : Ok(views_->Receipts(std::nullopt)))
    if (rc.body.find("counts against the rule that took it") != std::string::npos) said = true;
  EXPECT_TRUE(said);
}

TEST_F(JudgementOutcomesTest, AnExplicitRequestRightAfterADeclineIsMissedUnderTheRuleItNamed) {
  Open(MakePolicy("observe"));
  clock_.Advance(60'000);
  Receive(Comment("c-declined", "alice", false, "teh README is wrong", 1));
  Assessment declined = ScriptedAssessor::Accept(true);
  declined.decision = DecisionOutcome::kIgnore;  // the model said no, naming wording
  assessor_.answers.push_back(declined);
  EXPECT_EQ(Drain(), 1);
  clock_.Advance(10 * 60'000);
  TicketId t = AcceptedTicket("c-asked", 1);
  ASSERT_NE(t, 0);
  // The same a day and a minute later on another thread is not "right after".
  clock_.Advance(60'000);
  Receive(Comment("c-declined-2", "alice", false, "teh footer is wrong", 2));
  assessor_.answers.push_back(declined);
  EXPECT_EQ(Drain(), 1);
  clock_.Advance(kMissedWithinMs + 60'000);
  ASSERT_NE(AcceptedTicket("c-asked-2", 2), 0);

  const auto missed = Ok(views_->Missed(0));
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0].thread, "github:acme/widgets:issue:1");
  EXPECT_EQ(missed[0].rules, std::vector<std::string>{"wording"});
  const auto rules = PrecisionByRule(Ok(views_->Judged(0)), missed);
  bool found = false;
  for (const RulePrecision& r : rules)
    if (r.rule == "wording") {
      found = true;
      EXPECT_EQ(r.missed, 1);
    }
  EXPECT_TRUE(found);
}

TEST_F(JudgementOutcomesTest, ARuleInAutoUnderDemoteAtHoldsItsNextTicketForAPerson) {
  Policy p = MakePolicy("observe", kWordingAuto);
  p.judgement.demote_at = 0.5;
  p.judgement.demote_after = 2;
  Open(p);
  ASSERT_EQ(engine_->CurrentPolicy().judgement.demote_after, 2);
  // One "no" is not enough answers to judge the rule by.
  ASSERT_TRUE(engine_->StopTicket(Inferred("c-1", 1), "carol (panel)").ok());
  const TicketId second = Inferred("c-2", 2);
  EXPECT_NE(Ok(views_->GetTicket(second)).stage, Stage::kWaitingForPerson);
  ASSERT_TRUE(engine_->StopTicket(second, "carol (panel)").ok());
  // Two answers, both no: the lower bound is 0, under 0.5. The next Ticket waits for a person.
  const TicketId held = Inferred("c-3", 3);
  ASSERT_NE(held, 0);
  const Ticket tk = Ok(views_->GetTicket(held));
  ASSERT_EQ(tk.stage, Stage::kWaitingForPerson);
  EXPECT_THAT(tk.waiting->question, HasSubstr("Held by judgement: rule wording is under judgement.demote_at (0 of 2 answers"));
  EXPECT_EQ(tk.waiting->form["held_by"], "judgement");
  // A person's explicit request is never held by a rule's record.
  const TicketId asked = AcceptedTicket("c-explicit", 4);
  EXPECT_NE(Ok(views_->GetTicket(asked)).stage, Stage::kWaitingForPerson);
  // Started from the panel, it works as any Ticket.
  ASSERT_TRUE(engine_->AnswerQuestion(held, "carol (panel)", json{{"option", 1}}).ok());
  EXPECT_EQ(Ok(views_->GetTicket(held)).stage, Stage::kIdle);
  // Dropped instead, the drop names what held it.
  const TicketId dropped = Inferred("c-4", 5);
  ASSERT_TRUE(engine_->AnswerQuestion(dropped, "carol (panel)", json{{"option", 2}}).ok());
  EXPECT_EQ(Ok(views_->GetTicket(dropped)).end_reason, "dropped by carol (panel) after judgement held it");
}

TEST_F(JudgementOutcomesTest, ExplainTellsWhatJudgedTheDecisionAndTheRulesPrecisionBesideIt) {
  Open(MakePolicy("observe"));
  clock_.Advance(60'000);
  Receive(Comment("c-1", "alice", false, "teh README", 1));
  Assessment a = ScriptedAssessor::Accept();
  a.usage = {{"model", "deepseek-chat"}, {"prompt_version", "0123456789abcdef"}};
  assessor_.answers.push_back(a);
  EXPECT_EQ(Drain(), 1);
  const std::int64_t decision = Ok(views_->Judged(0)).at(0).decision;
  ASSERT_TRUE(engine_->RecordVerdict(decision, Verdict::kYes, "Tess", "panel").ok());
  const json story = Ok(ExplainNow("c-1"));
  const std::string summary = story["summary"];
  EXPECT_THAT(summary, HasSubstr("It was judged by model deepseek-chat (prompt version 0123456789abcdef); code checks "
                                 "passed: rule_coverage, model_accepts, direction_allowed, rule_matched, evidence; "
                                 "failed: rule_in_auto."));
  EXPECT_THAT(summary, HasSubstr("Rule wording: 1 of 1 answers in the last 30 days said such work was a request "
                                 "(100.0 %; at least 20.7 % with 95 % confidence)."));
  EXPECT_EQ(story["evals"][0]["decision"]["precision"][0]["yes"], 1);
}


// /metrics keeps settled outcomes between scrapes and reads again only what is still at work and
// what is new: each scrape still has every Ticket, each with its outcome as of now.
TEST_F(JudgementOutcomesTest, TheMetricsCacheRereadsOnlyTicketsStillAtWorkAndNewOnes) {
  panel::TicketOutcomeCache cache;
  const TicketId stopped = Inferred("c-1", 1);
  const TicketId working = Inferred("c-2", 2);
  ASSERT_TRUE(engine_->StopTicket(stopped, "carol (panel)").ok());
  auto outcomes = [&] {
    std::map<TicketId, std::string> by_ticket;
    for (const TicketOutcome& o : Ok(cache.Read(*views_))) by_ticket[o.ticket] = o.outcome;
    return by_ticket;
  };
  EXPECT_EQ(outcomes(), (std::map<TicketId, std::string>{{stopped, "stopped"}, {working, "live"}}));
  // The live one settles; a new one arrives.
  AnsweredTurn(working);
  const TicketId later = Inferred("c-3", 3);
  EXPECT_EQ(outcomes(), (std::map<TicketId, std::string>{{stopped, "stopped"}, {working, "answered"}, {later, "live"}}));
  EXPECT_EQ(outcomes().size(), 3u) << "read again, nothing counted twice";
}


// A stored assessment that is not what the Engine writes (a hand-edited or damaged row) still
// reads: its record counts under "(no rule)", and the read does not fail.
TEST_F(JudgementOutcomesTest, ADamagedAssessmentReadsAsNoRule) {
  Open(MakePolicy("observe"));
  Inferred("c-1", 1);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "superagent.db").c_str(), &db), SQLITE_OK);
  const char* rows[] = {"'not json {'", "'{\"rules\": \"wording\"}'", "'{\"rules\": [1, {\"name\": 7, \"matched\": true}]}'",
                        "'{\"rules\": [{\"name\": \"错别字\", \"matched\": true}]}'"};
  int eval = 1000;
  for (const char* assessment : rows) {
    const std::string sql = "INSERT INTO decisions (eval_id, thread_key, outcome, would_accept, strength, reason, assessment, "
                            "policy_version, created_at) VALUES (" + std::to_string(++eval) + ", 'github:acme/widgets:issue:9', 'ignore', 1, "
                            "'inferred', 'hand-made', " + assessment + ", 1, " + std::to_string(clock_.NowMs()) + ")";
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
  }
  sqlite3_close(db);
  const auto judged = Ok(views_->Judged(0));
  ASSERT_EQ(judged.size(), 5u);
  EXPECT_EQ(judged[0].rules, std::vector<std::string>{"wording"});
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(judged[i].rules.empty()) << i;
  EXPECT_EQ(judged[4].rules, std::vector<std::string>{"错别字"});
  const auto rules = PrecisionByRule(judged);
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].rule, "(no rule)");
  EXPECT_EQ(rules[0].would_accept, 3);
}

}  // namespace
}  // namespace superagent::testing
