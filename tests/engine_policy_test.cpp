// SPEC §4.6 policy versions: new version only on change, Evals discarded and requeued,
// policy_changed inputs only for affected live Tickets.
#include "engine_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

std::vector<TicketInput> PolicyNotices(Views& v, TicketId id) {
  std::vector<TicketInput> out;
  for (auto& in : Ok(v.TicketInputs(id)))
    if (in.kind == "policy_changed") out.push_back(in);
  return out;
}

TEST_F(EngineTest, UnchangedPolicyMakesNoNewVersion) {
  std::int64_t v = engine_->PolicyVersion();
  auto change = engine_->ApplyPolicy(MakePolicy("observe"), "reload");
  ASSERT_TRUE(change.ok());
  EXPECT_FALSE(change->changed);
  EXPECT_EQ(engine_->PolicyVersion(), v);
  change = engine_->ApplyPolicy(MakePolicy("auto"), "reload");
  EXPECT_TRUE(change->changed);
  EXPECT_EQ(engine_->PolicyVersion(), v + 1);
  EXPECT_EQ(engine_->CurrentPolicy().mode, Mode::kAuto);
}

TEST_F(EngineTest, PolicyChangeDiscardsRunningEvalsAndRequeuesTheirTriggers) {
  Receive(Comment("c1", "alice", true, "@agent fix it"));
  auto job = engine_->BeginEval();
  ASSERT_TRUE(job.ok() && job->has_value());
  auto change = engine_->ApplyPolicy(MakePolicy("auto"), "reload");
  ASSERT_TRUE(change.ok());
  EXPECT_EQ(change->discarded_evals, 1);
  EvalOutcome stale = JudgeEval(**job, (*job)->policy, assessor_);
  EXPECT_EQ(engine_->FinishEval((*job)->id, stale).status().code(), Status::Code::kConflict);
  EXPECT_TRUE(Ok(views_->Decisions("github:acme/widgets:issue:1")).empty());
  // Requeued at once and without using up an attempt; the new Eval runs under the new version.
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  auto d = Ok(views_->Decisions("github:acme/widgets:issue:1"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].policy_version, engine_->PolicyVersion());
  EXPECT_EQ(d[0].outcome, DecisionOutcome::kAccept);
}

TEST_F(EngineTest, PolicyChangeNotifiesOnlyAffectedLiveTickets) {
  Open(MakePolicy("auto"));
  TicketId explicit_ticket = AcceptedTicket("c1", 1);
  Receive(Comment("p1", "alice", false, "typo in heading", 2));  // inferred, auto
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  TicketId proactive = (*ExplainNow("p1"))["ticket_created"]["id"];
  TicketId ended = AcceptedTicket("e1", 3);
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(ended, "done").ok());

  // auto -> observe: proactive work no longer accepted.
  auto change = engine_->ApplyPolicy(MakePolicy("observe"), "reload");
  ASSERT_TRUE(change.ok());
  EXPECT_EQ(change->notified, std::vector<TicketId>{proactive});
  auto notices = PolicyNotices(*views_, proactive);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].body["reasons"][0].get<std::string>().find("proactive work no longer accepted"),
            std::string::npos);
  EXPECT_TRUE(PolicyNotices(*views_, explicit_ticket).empty());
  EXPECT_TRUE(PolicyNotices(*views_, ended).empty()) << "ended Tickets get nothing";
  EXPECT_TRUE(views_->GetMandate(proactive)->ended_as.empty()) << "Mandates are not revoked on change";
  EXPECT_TRUE(views_->GetTicket(proactive)->open()) << "running work is not cancelled";

  // Rule text changed → the proactive Ticket hears "changed"; removing alice → explicit Ticket hears.
  change = engine_->ApplyPolicy(
      MakePolicy("observe", "Keep the change to the text in question.=>Keep changes minimal."), "reload");
  ASSERT_EQ(change->notified, std::vector<TicketId>{proactive});
  EXPECT_EQ(PolicyNotices(*views_, proactive).back().body["reasons"][0], "matched rule wording changed");
  change = engine_->ApplyPolicy(MakePolicy("observe", "people: [alice, bob]=>people: [bob]"), "reload");
  EXPECT_EQ(change->notified, (std::vector<TicketId>{explicit_ticket, proactive}));
  EXPECT_EQ(PolicyNotices(*views_, explicit_ticket).back().body["reasons"][0], "requester no longer eligible");
}

}  // namespace
}  // namespace superagent::testing
