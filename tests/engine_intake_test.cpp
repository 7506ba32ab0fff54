// SPEC §3.2 intake outcomes and the §2 Trigger invariants.
#include "engine_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

TEST_F(EngineTest, IntakeStoresAndQueuesForEvalWhenNoTicketHoldsIt) {
  IntakeResult r = Receive(Comment("c1", "alice", true, "@agent fix the typo"));
  EXPECT_EQ(r.outcome, IntakeOutcome::kStored);
  EXPECT_TRUE(r.queued_for_eval);
  EXPECT_TRUE(r.delivered_to.empty());
  EXPECT_EQ(Ok(views_->Counts()).eval_queue, 1);
}

TEST_F(EngineTest, IntakeDuplicateChangesNothing) {
  Receive(Comment("c1", "alice", true, "@agent fix the typo"));
  auto before = Ok(views_->Counts());
  Trigger again = Comment("c1", "mallory", true, "different text, same id");
  IntakeResult r = Receive(again);
  EXPECT_EQ(r.outcome, IntakeOutcome::kDuplicate);
  EXPECT_FALSE(r.queued_for_eval);
  EXPECT_TRUE(Ok(views_->Counts()) == before);
  EXPECT_EQ(views_->GetTrigger("c1")->trigger.actor, "alice");  // the first one stands
}

TEST_F(EngineTest, IntakeFilteredIsStoredWithReasonAndGoesNoFurther) {
  auto r = engine_->Receive(Comment("c1", "agent-bot", false, "my own reply", 1, false), "poll", "own_message");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outcome, IntakeOutcome::kFiltered);
  EXPECT_EQ(r->filter_reason, "own_message");
  EXPECT_FALSE(r->queued_for_eval);
  EXPECT_EQ(Ok(views_->Counts()).eval_queue, 0);
  auto rec = views_->GetTrigger("c1");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->outcome, IntakeOutcome::kFiltered);
  EXPECT_EQ(rec->filter_reason, "own_message");
  EXPECT_EQ(rec->via, "poll");
  // The same id later is a duplicate, even though it was filtered.
  EXPECT_EQ(Receive(Comment("c1", "alice", true, "x")).outcome, IntakeOutcome::kDuplicate);
}

// The daemon's Eval loop sleeps until told (issue 10: webhook → acknowledgement in milliseconds,
// not at the loop's next poll): exactly the commits that make an Eval due say so.
TEST_F(EngineTest, EvalLoopIsToldOnlyWhenATriggerIsQueuedForEval) {
  int told = 0;
  options_.on_eval_queued = [&told] { ++told; };
  Open(MakePolicy("observe"));

  TicketId ticket = AcceptedTicket("r1", 1);
  EXPECT_EQ(told, 1);
  EXPECT_TRUE(Receive(Comment("c1", "alice", true, "@agent fix the typo", 7)).queued_for_eval);
  EXPECT_EQ(told, 2);
  EXPECT_EQ(Receive(Comment("c1", "alice", true, "@agent fix the typo", 7)).outcome, IntakeOutcome::kDuplicate);
  ASSERT_TRUE(engine_->Receive(Comment("c2", "agent-bot", false, "mine", 7, false), "poll", "own_message").ok());
  EXPECT_EQ(told, 2) << "a duplicate or a filtered Trigger queues nothing";

  IntakeResult held = Receive(Comment("f1", "alice", false, "also the other heading", 1));
  EXPECT_FALSE(held.queued_for_eval);
  EXPECT_EQ(told, 2) << "a message its Ticket holds needs no Eval";
  ASSERT_TRUE(engine_->Handback(ticket, "f1", HandbackKind::kOutOfScope, "not this Ticket's work").ok());
  EXPECT_EQ(told, 3) << "a handed-back message goes to Eval at once";
}

TEST_F(EngineTest, IntakeRejectsTriggerWithoutThreadAndWritesNothing) {
  Trigger t = Comment("c1", "alice", true, "x");
  t.threads.clear();
  auto r = engine_->Receive(t, "test");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(views_->GetTrigger("c1").ok());
}

// Found by fuzzing (feishu_normalize_fuzz): a chat message without a sender became a Trigger
// that was stored but could not be read back, so every later Eval of its Thread failed on it.
// Intake refuses what would not read back, and names the field.
TEST_F(EngineTest, IntakeRefusesATriggerThatWouldNotReadBackFoundByFuzzing) {
  Trigger no_sender = Comment("c1", "alice", true, "谁发的？");
  no_sender.actor.reset();  // only CI has no sender
  auto r = engine_->Receive(no_sender, "test");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("actor"), std::string::npos) << r.status().ToString();
  EXPECT_FALSE(views_->GetTrigger("c1").ok());
  Trigger bad_scope = Comment("c2", "alice", true, "x");
  bad_scope.scope = "";
  EXPECT_EQ(engine_->Receive(bad_scope, "test").status().code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(views_->GetTrigger("c2").ok());
  EXPECT_TRUE(engine_->Receive(Comment("c3", "alice", true, "x"), "test").ok()) << "the next message is taken";
}

TEST_F(EngineTest, TriggerKeepsEveryFieldThroughTheStore) {
  Trigger t = Comment("c1", "alice", true, "line one\nline two with \"quotes\" and ünïcode");
  t.threads.push_back("feishu:chat:oc_1:thread:omt_1");
  t.meta["path"] = "src/a.cc";
  Receive(t);
  auto rec = views_->GetTrigger("c1");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(TriggerToJson(rec->trigger), TriggerToJson(t));
}

TEST_F(EngineTest, EditedCommentWithNewVersionIdIsANewTrigger) {
  // SPEC §3.1: GitHub comment ids carry their updated_at version.
  EXPECT_EQ(Receive(Comment("github:comment:7@2026-01-01T00:00:00Z", "alice", true, "v1")).outcome,
            IntakeOutcome::kStored);
  EXPECT_EQ(Receive(Comment("github:comment:7@2026-01-01T00:05:00Z", "alice", true, "v2")).outcome,
            IntakeOutcome::kStored);
  EXPECT_EQ(Ok(views_->Counts()).triggers["stored"], 2);
}

TEST_F(EngineTest, StateSurvivesReopenWithoutANewPolicyVersion) {
  TicketId t = AcceptedTicket("c1");
  std::int64_t version = engine_->PolicyVersion();
  Open(MakePolicy("observe"));
  EXPECT_EQ(engine_->PolicyVersion(), version);
  auto ticket = views_->GetTicket(t);
  ASSERT_TRUE(ticket.ok());
  EXPECT_EQ(ticket->stage, Stage::kIdle);
  EXPECT_EQ(Receive(Comment("c1", "alice", true, "again")).outcome, IntakeOutcome::kDuplicate);
}

}  // namespace
}  // namespace superagent::testing
