// Ticket lifecycle (SPEC §2, §4.1, §4.5): fan-out, handback, follow-up ownership, Stop, resume.
#include "engine_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using nlohmann::json;

TEST_F(EngineTest, SubscriptionDeliversEverythingOnTheThreadWithoutTheGate) {
  TicketId id = AcceptedTicket("c1");
  // A stranger, a bot and an allow-listed person: all reach the live Ticket, none go to Eval.
  for (auto [tid, actor, human] : {std::tuple{"c2", "mallory", true}, std::tuple{"c3", "renovate[bot]", false},
                                   std::tuple{"c4", "bob", true}}) {
    IntakeResult r = Receive(Comment(tid, actor, false, "a remark", 1, human));
    EXPECT_EQ(r.delivered_to, std::vector<TicketId>{id}) << tid;
    EXPECT_FALSE(r.queued_for_eval) << tid;
  }
  auto inputs = Ok(views_->TicketInputs(id));
  EXPECT_EQ(inputs.size(), 4u);  // the request plus three deliveries
  EXPECT_EQ(views_->GetMandate(id)->scope, "Fix the typo in README") << "delivery grants nothing new";
}

TEST_F(EngineTest, ManyTicketsMayLiveOnOneThread) {
  TicketId first = AcceptedTicket("c1");
  Receive(Comment("c2", "alice", true, "@agent separately, update the changelog"));
  ASSERT_TRUE(engine_->Handback(first, "c2", HandbackKind::kOutOfScope, "not the typo").ok());
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  auto story = ExplainNow("c2");
  ASSERT_TRUE(story->contains("ticket_created"));
  TicketId second = (*story)["ticket_created"]["id"];
  EXPECT_NE(first, second);
  EXPECT_TRUE(views_->GetTicket(first)->open());
  EXPECT_TRUE(views_->GetTicket(second)->open());
  // The Eval saw the handback reasons and the existing Ticket.
  ASSERT_EQ(assessor_.last_candidates.size(), 1u);
  EXPECT_EQ(assessor_.last_candidates[0].handback[0]["reason"], "not the typo");
  ASSERT_EQ(assessor_.last_job.tickets.size(), 1u);
  EXPECT_EQ(assessor_.last_job.tickets[0].id, first);

  // An Eval sees ended Tickets on its Thread too (SPEC §2: every Ticket, ended ones too).
  ASSERT_TRUE(engine_->StopTicket(first, "panel:alice").ok());
  Receive(Comment("c3", "alice", true, "@agent one more thing"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 0) << "c3 is held by the live second Ticket";
  ASSERT_TRUE(engine_->Handback(second, "c3", HandbackKind::kOutOfScope, "new work").ok());
  ASSERT_EQ(Drain(), 1);
  ASSERT_EQ(assessor_.last_job.tickets.size(), 2u);
  EXPECT_EQ(assessor_.last_job.tickets[0].stage, Stage::kEnded);
  EXPECT_FALSE(assessor_.last_job.tickets[0].mandate_active);
}

TEST_F(EngineTest, HandbackAtMostOnceAndToEvalOnlyWhenNoTicketHoldsIt) {
  TicketId a = AcceptedTicket("c1");
  // A second Ticket on the same Thread, so both hold the next message.
  Receive(Comment("c2", "alice", true, "@agent also bump the version"));
  ASSERT_TRUE(engine_->Handback(a, "c2", HandbackKind::kOutOfScope, "versioning").ok());
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  TicketId b = (*ExplainNow("c2"))["ticket_created"]["id"];

  IntakeResult r = Receive(Comment("c3", "alice", false, "what about the footer?"));
  ASSERT_EQ(r.delivered_to.size(), 2u);
  ASSERT_TRUE(engine_->Handback(a, "c3", HandbackKind::kOtherTicket, "footer is not mine").ok());
  EXPECT_EQ(Ok(views_->Counts()).eval_queue, 0) << "Ticket b still holds it";
  Status again = engine_->Handback(a, "c3", HandbackKind::kOtherTicket, "twice");
  EXPECT_EQ(again.code(), Status::Code::kConflict);
  ASSERT_TRUE(engine_->Handback(b, "c3", HandbackKind::kUnrelatedThread, "not mine either").ok());
  EXPECT_EQ(Ok(views_->Counts()).eval_queue, 1);
  auto story = ExplainNow("c3");
  ASSERT_EQ((*story)["eval_queue"]["handback"].size(), 2u);
  EXPECT_EQ((*story)["eval_queue"]["handback"][1]["kind"], "unrelated_thread");

  EXPECT_EQ(engine_->Handback(a, "nope", HandbackKind::kOutOfScope, "x").code(), Status::Code::kNotFound);
  Receive(Comment("z1", "alice", true, "@agent unrelated", 9));
  EXPECT_EQ(engine_->Handback(a, "z1", HandbackKind::kOutOfScope, "x").code(), Status::Code::kNotFound)
      << "a Ticket cannot hand back what never reached it";
}

TEST_F(EngineTest, AskedPersonsNextMessageGoesOnlyToTheWaitingTicket) {
  TicketId a = AcceptedTicket("c1");
  Receive(Comment("c2", "alice", true, "@agent and the docs too"));
  ASSERT_TRUE(engine_->Handback(a, "c2", HandbackKind::kOutOfScope, "docs").ok());
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  TicketId b = (*ExplainNow("c2"))["ticket_created"]["id"];

  HumanAction q{"github:acme/widgets:issue:1", "bob", "Which README: root or docs/?", {{"choices", {"root", "docs"}}}};
  ASSERT_TRUE(EngineTestPeer(*engine_).AskPerson(b, q, "ask:1").ok());
  EXPECT_EQ(views_->GetTicket(b)->stage, Stage::kWaitingForPerson);
  auto receipts = Ok(views_->Receipts(b));
  ASSERT_EQ(receipts.back().kind, MessageKind::kAttention);

  // Someone else speaking reaches both Tickets; the asked person's answer reaches only b.
  EXPECT_EQ(Receive(Comment("c3", "alice", false, "hmm")).delivered_to.size(), 2u);
  EXPECT_EQ(views_->GetTicket(b)->stage, Stage::kWaitingForPerson);
  IntakeResult answer = Receive(Comment("c4", "bob", false, "root"));
  EXPECT_EQ(answer.delivered_to, std::vector<TicketId>{b});
  auto ticket = views_->GetTicket(b);
  EXPECT_EQ(ticket->stage, Stage::kIdle);
  EXPECT_FALSE(ticket->waiting.has_value());
  EXPECT_EQ(Ok(views_->TicketInputs(b)).back().kind, "answer");
  EXPECT_EQ(Ok(views_->Assignments(b)).size(), 2u) << "the answer resumes it with a new Assignment";
}

TEST_F(EngineTest, AskPersonValidatesItsQuestion) {
  TicketId a = AcceptedTicket("c1");
  EXPECT_EQ(EngineTestPeer(*engine_).AskPerson(a, {"github:acme/widgets:issue:1", "", "q?", {}}, "ask:x").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(EngineTestPeer(*engine_).AskPerson(a, {"github:acme/widgets:issue:404", "bob", "q?", {}}, "ask:x").code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(views_->GetTicket(a)->stage, Stage::kIdle);
  EXPECT_EQ(Ok(views_->Receipts(a)).size(), 1u);
}

TEST_F(EngineTest, AQuestionWithOptionsIsOneMessageWithNumberedOptions) {
  TicketId a = AcceptedTicket("c1");
  HumanAction q{"github:acme/widgets:issue:1", "bob", "Which README?", {{"options", {"root", "docs/ 文档"}}, {"free_text", false}}};
  ASSERT_TRUE(EngineTestPeer(*engine_).AskPerson(a, q, "ask:1").ok());
  Receipt asked = Ok(views_->Receipts(a)).back();
  EXPECT_EQ(asked.kind, MessageKind::kAttention);
  EXPECT_EQ(asked.body, "Which README?\n\n1. root\n2. docs/ 文档\n\nReply with the number of your choice.");
  EXPECT_EQ(views_->GetTicket(a)->waiting->form, (json{{"options", {"root", "docs/ 文档"}}, {"free_text", false}}))
      << "the form is stored with the Ticket, as the panel renders it";

  // The asked person's reply "2" is the structured answer; the Ticket resumes.
  Receive(Comment("c2", "bob", false, "２"));
  TicketInput in = Ok(views_->TicketInputs(a)).back();
  EXPECT_EQ(in.kind, "answer");
  EXPECT_EQ(in.body["answer"], (json{{"option", 2}, {"text", "docs/ 文档"}}));
  EXPECT_EQ(in.body["from"], "bob");
  EXPECT_EQ(in.body["trigger_id"], "c2");
  EXPECT_EQ(views_->GetTicket(a)->stage, Stage::kIdle);
}

TEST_F(EngineTest, ABadFormIsRefusedAndNothingIsAsked) {
  TicketId a = AcceptedTicket("c1");
  Status s = EngineTestPeer(*engine_).AskPerson(a, {"github:acme/widgets:issue:1", "bob", "Which?", {{"options", {"a", 3}}}}, "ask:1");
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "form.options[1]: must be a string");
  EXPECT_EQ(views_->GetTicket(a)->stage, Stage::kIdle);
  EXPECT_EQ(Ok(views_->Receipts(a)).size(), 1u) << "only the acknowledgement";
}

TEST_F(EngineTest, APanelAnswerIsShownInTheDiscussionWithWhoGaveIt) {
  TicketId a = AcceptedTicket("c1");
  ASSERT_TRUE(EngineTestPeer(*engine_).AskPerson(a, {"github:acme/widgets:issue:1", "bob", "Which?", {{"options", {"root", "docs"}}}}, "ask:1").ok());
  Status bad = engine_->AnswerQuestion(a, "Alice (panel)", json{{"option", 3}});
  EXPECT_EQ(bad.message(), "answer.option: must be a number from 1 to 2");
  EXPECT_EQ(views_->GetTicket(a)->stage, Stage::kWaitingForPerson) << "a refused answer changes nothing";
  const std::size_t before = Ok(views_->Receipts(a)).size();

  ASSERT_TRUE(engine_->AnswerQuestion(a, "Alice (panel)", json{{"option", 1}}).ok());
  EXPECT_EQ(Ok(views_->TicketInputs(a)).back().body["answer"], (json{{"option", 1}, {"text", "root"}}));
  auto receipts = Ok(views_->Receipts(a));
  ASSERT_EQ(receipts.size(), before + 1);
  EXPECT_EQ(receipts.back().thread, "github:acme/widgets:issue:1");
  EXPECT_EQ(receipts.back().body, "Alice answered in the panel: root");
}

TEST_F(EngineTest, PanelStopWithdrawsTheMandateAndTheTicketReceivesNothingMore) {
  TicketId id = AcceptedTicket("c1");
  ASSERT_TRUE(engine_->StopTicket(id, "panel:alice").ok());
  auto t = views_->GetTicket(id);
  EXPECT_EQ(t->stage, Stage::kEnded);
  EXPECT_EQ(views_->GetMandate(id)->ended_as, "withdrawn");
  EXPECT_EQ(Ok(views_->Assignments(id)).back().state, "ended");
  IntakeResult r = Receive(Comment("c2", "alice", false, "please continue"));
  EXPECT_TRUE(r.delivered_to.empty());
  EXPECT_TRUE(r.resumed.empty()) << "a withdrawn Ticket is never resumed";
  EXPECT_TRUE(r.queued_for_eval);
  EXPECT_EQ(engine_->StopTicket(id, "").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(engine_->StopTicket(4242, "panel:alice").code(), Status::Code::kNotFound);
}

TEST_F(EngineTest, PersonsMessageResumesAnEndedTicketInPlaceWithoutAnEval) {
  TicketId id = AcceptedTicket("c1");
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(id, "result delivered").ok());
  std::size_t decisions = Ok(views_->Decisions("github:acme/widgets:issue:1")).size();
  IntakeResult r = Receive(Comment("c2", "alice", false, "one more typo on line 3"));
  EXPECT_EQ(r.resumed, std::vector<TicketId>{id});
  EXPECT_FALSE(r.queued_for_eval);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kIdle);
  EXPECT_EQ(Ok(views_->Decisions("github:acme/widgets:issue:1")).size(), decisions) << "no new Decision";
  EXPECT_EQ(Ok(views_->TicketInputs(id)).back().kind, "resume");
}

TEST_F(EngineTest, BotsAndCiCannotWakeAnEndedTicket) {
  TicketId id = AcceptedTicket("c1");
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(id, "done").ok());
  IntakeResult bot = Receive(Comment("c2", "dependabot[bot]", true, "@agent rebase", 1, false));
  EXPECT_TRUE(bot.resumed.empty());
  EXPECT_TRUE(bot.queued_for_eval);
  Trigger ci = Comment("ci1", "x", false, "CI failed on main");
  ci.scope = "ci";
  ci.actor.reset();
  ci.human = false;
  IntakeResult c = Receive(ci);
  EXPECT_TRUE(c.resumed.empty());
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kEnded);
}

TEST_F(EngineTest, FailedRevalidationRevokesAndTheMessageGoesToEval) {
  TicketId id = AcceptedTicket("c1");  // alice, allow-listed and addressed
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(id, "done").ok());
  ASSERT_TRUE(engine_->ApplyPolicy(MakePolicy("observe", "people: [alice, bob]=>people: [bob]"), "edit").ok());
  IntakeResult r = Receive(Comment("c2", "bob", false, "can you redo it?"));
  EXPECT_TRUE(r.resumed.empty());
  EXPECT_EQ(r.revoked, std::vector<TicketId>{id});
  EXPECT_TRUE(r.queued_for_eval);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kEnded);
  EXPECT_EQ(views_->GetMandate(id)->ended_as, "revoked");
}

TEST_F(EngineTest, StagesFollowTheExecutorNotTheSession) {
  TicketId id = AcceptedTicket("c1");
  for (Stage s : {Stage::kWorking, Stage::kBlocked, Stage::kWorking, Stage::kReady}) {
    ASSERT_TRUE(EngineTestPeer(*engine_).SetStage(id, s, "test").ok());
    EXPECT_EQ(views_->GetTicket(id)->stage, s);
  }
  EXPECT_EQ(EngineTestPeer(*engine_).SetStage(id, Stage::kEnded, "x").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(EngineTestPeer(*engine_).SetStage(id, Stage::kWaitingForPerson, "x").code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(id, "done").ok());
  EXPECT_EQ(EngineTestPeer(*engine_).SetStage(id, Stage::kWorking, "late").code(), Status::Code::kConflict);
}

TEST_F(EngineTest, SendEnforcesLengthLimitsAndIsIdempotent) {
  TicketId id = AcceptedTicket("c1");
  Trigger chat = Comment("f1", "ou_alice", true, "hi");
  chat.source = "feishu";
  chat.scope = "chat:oc_support";
  chat.threads = {"feishu:chat:oc_support"};
  chat.channel = "feishu:chat:oc_support";
  Receive(chat);
  std::string long_text;
  for (int i = 0; i < 101; ++i) long_text += "word ";
  Status s = engine_->Send({"m1", id, "feishu:chat:oc_support", MessageKind::kResult, long_text});
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("100 words"), std::string::npos) << s.message();
  std::size_t before = Ok(views_->Receipts(std::nullopt)).size();
  EXPECT_EQ(Ok(views_->Receipts(std::nullopt)).size(), before);
  ASSERT_TRUE(engine_->Send({"m2", id, "github:acme/widgets:issue:1", MessageKind::kResult, long_text}).ok());
  ASSERT_TRUE(engine_->Send({"m2", id, "github:acme/widgets:issue:1", MessageKind::kResult, "other"}).ok());
  auto receipts = Ok(views_->Receipts(id));
  ASSERT_EQ(receipts.size(), 2u);  // ack + m2 once
  EXPECT_EQ(receipts[1].body, long_text);
}

}  // namespace
}  // namespace superagent::testing

namespace superagent::testing {
namespace {

// Issue 23: explain of a follow-up lists only what was sent after it arrived, not the Ticket's
// acknowledgement of the request before it.
TEST_F(EngineTest, ExplainOfAFollowUpListsOnlyWhatWasSentAfterIt) {
  TicketId id = AcceptedTicket("c1");
  ASSERT_EQ(Ok(ExplainNow("c1"))["receipts"].size(), 1u) << "the request's story has its acknowledgement";
  clock_.Advance(1'000);
  Receive(Comment("c2", "alice", false, "也请看一下 CHANGELOG 🙏"));
  json story = Ok(ExplainNow("c2"));
  ASSERT_EQ(story["tickets_reached"].size(), 1u) << story.dump();
  EXPECT_TRUE(story["receipts"].empty()) << story.dump();
  EXPECT_EQ(story["summary"].get<std::string>().find("Acknowledgement"), std::string::npos) << story["summary"];
  clock_.Advance(1'000);
  ASSERT_TRUE(engine_->Send({"result:1", id, "github:acme/widgets:issue:1", MessageKind::kResult, "Done: fixed both."}).ok());
  story = Ok(ExplainNow("c2"));
  ASSERT_EQ(story["receipts"].size(), 1u) << story.dump();
  EXPECT_EQ(story["receipts"][0]["id"], "result:1");
}

}  // namespace
}  // namespace superagent::testing
