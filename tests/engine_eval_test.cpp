// SPEC §5 Eval: one per Thread, batch draining, Decisions, and code (not the model) deciding.
#include "engine_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

TEST_F(EngineTest, ExplicitAcceptCreatesTicketMandateSubscriptionsAndAckInOneGo) {
  Trigger t = Comment("c1", "alice", true, "@agent please fix the typo in README");
  t.threads.push_back("feishu:chat:oc_1:thread:omt_1");
  Receive(t);
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);

  auto story = ExplainNow("c1");
  ASSERT_TRUE(story.ok());
  ASSERT_TRUE(story->contains("ticket_created")) << story->dump(2);
  TicketId id = (*story)["ticket_created"]["id"];
  auto mandate = views_->GetMandate(id);
  ASSERT_TRUE(mandate.ok());
  EXPECT_EQ(mandate->strength, Strength::kExplicit);
  EXPECT_EQ(mandate->admission, "allow_listed_addressed");
  EXPECT_EQ(mandate->sender, "alice");
  EXPECT_EQ(mandate->source, "github");
  EXPECT_EQ(mandate->policy_version, engine_->PolicyVersion());
  EXPECT_TRUE(mandate->matched_rules.empty());  // explicit work needs no rule

  auto receipts = Ok(views_->Receipts(id));
  ASSERT_EQ(receipts.size(), 1u);
  EXPECT_EQ(receipts[0].kind, MessageKind::kAcknowledgement);
  EXPECT_EQ(receipts[0].status, "pending");
  EXPECT_EQ(receipts[0].body, "I'll fix the typo in README.");
  // The acknowledgement's delivery is an Effect enqueued in the same transaction.
  EXPECT_EQ(Ok(views_->OutboxCounts())["pending"], 1);
  EXPECT_EQ(Ok(views_->Assignments(id)).size(), 1u);
  EXPECT_EQ(Ok(views_->Assignments(id))[0].state, "pending");

  // Both Threads are subscribed: a later message on the Feishu thread reaches the Ticket.
  Trigger chat = Comment("f1", "ou_bob", false, "looks related");
  chat.source = "feishu";
  chat.scope = "chat:oc_1";
  chat.threads = {"feishu:chat:oc_1:thread:omt_1"};
  chat.channel = "feishu:chat:oc_1";
  IntakeResult r = Receive(chat);
  EXPECT_EQ(r.delivered_to, std::vector<TicketId>{id});
  EXPECT_FALSE(r.queued_for_eval);
}

TEST_F(EngineTest, AtMostOneEvalPerThreadAndArrivalsFormTheNextBatch) {
  Receive(Comment("c1", "alice", true, "@agent first"));
  auto first = engine_->BeginEval();
  ASSERT_TRUE(first.ok() && first->has_value());
  Receive(Comment("c2", "alice", true, "@agent second"));
  Receive(Comment("c3", "alice", true, "@agent third"));
  auto blocked = engine_->BeginEval();
  ASSERT_TRUE(blocked.ok());
  EXPECT_FALSE(blocked->has_value()) << "a second Eval started on a Thread with one running";

  // Another Thread is independent.
  Receive(Comment("d1", "alice", true, "@agent other issue", 2));
  auto other = engine_->BeginEval();
  ASSERT_TRUE(other.ok() && other->has_value());
  EXPECT_EQ((*other)->thread, "github:acme/widgets:issue:2");

  EvalOutcome ignore;
  ignore.outcome = DecisionOutcome::kIgnore;
  ignore.reason = "test";
  ignore.gated = (*first)->batch;
  ASSERT_TRUE(engine_->FinishEval((*first)->id, ignore).ok());
  auto next = engine_->BeginEval();
  ASSERT_TRUE(next.ok() && next->has_value());
  ASSERT_EQ((*next)->batch.size(), 2u);
  EXPECT_EQ((*next)->batch[0].trigger.id, "c2");
  EXPECT_EQ((*next)->batch[1].trigger.id, "c3");
  EXPECT_EQ((*next)->history.size(), 3u);  // Thread snapshot includes the earlier message
}

TEST_F(EngineTest, ObserveRecordsWouldAcceptAndCreatesNothing) {
  Receive(Comment("c1", "alice", false, "there's a typo in the README heading"));  // inferred cell
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  auto d = Ok(views_->Decisions("github:acme/widgets:issue:1"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].outcome, DecisionOutcome::kIgnore);
  EXPECT_TRUE(d[0].would_accept);
  EXPECT_EQ(d[0].strength, Strength::kInferred);
  EXPECT_FALSE(ExplainNow("c1")->contains("ticket_created"));
  EXPECT_TRUE(Ok(views_->Receipts(std::nullopt)).empty());
}

TEST_F(EngineTest, AutoAcceptsInferredOnlyWithMatchedRuleEvidenceAndDirection) {
  Open(MakePolicy("auto"));
  struct Case {
    const char* name;
    Assessment answer;
    bool accepted;
  };
  Assessment no_rule = ScriptedAssessor::Accept(/*wording_matched=*/false);
  Assessment no_evidence = ScriptedAssessor::Accept(true, "");
  Assessment undetermined = ScriptedAssessor::Accept();
  undetermined.target_basis = "undetermined";
  Assessment design = ScriptedAssessor::Accept();
  design.open_design_decision = true;
  Assessment not_requested = ScriptedAssessor::Accept();
  not_requested.implementation_requested = false;
  Assessment model_ignores = ScriptedAssessor::Accept();
  model_ignores.decision = DecisionOutcome::kIgnore;
  std::vector<Case> cases = {{"matched", ScriptedAssessor::Accept(), true},
                             {"no_rule", no_rule, false},
                             {"no_evidence", no_evidence, false},
                             {"undetermined", undetermined, false},
                             {"design", design, false},
                             {"not_requested", not_requested, false},
                             {"model_ignores", model_ignores, false}};
  int issue = 10;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string id = std::string("inf-") + c.name;
    Receive(Comment(id, "alice", false, "the heading has a typo", ++issue));
    assessor_.answers.push_back(c.answer);
    ASSERT_EQ(Drain(), 1);
    auto story = ExplainNow(id);
    ASSERT_TRUE(story.ok());
    EXPECT_EQ(story->contains("ticket_created"), c.accepted) << story->dump(2);
    auto d = Ok(views_->Decisions("github:acme/widgets:issue:" + std::to_string(issue)));
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].outcome, c.accepted ? DecisionOutcome::kAccept : DecisionOutcome::kIgnore);
    EXPECT_FALSE(d[0].would_accept);
    if (c.accepted) {
      auto m = views_->GetMandate((*story)["ticket_created"]["id"].get<TicketId>());
      EXPECT_EQ(m->matched_rules, std::vector<std::string>{"wording"});
      EXPECT_EQ(m->strength, Strength::kInferred);
    }
  }
}

TEST_F(EngineTest, ExplicitRequestIsAcceptedEvenWhenTheModelWouldIgnoreIt) {
  Receive(Comment("c1", "alice", true, "@agent rename the flag"));
  Assessment a = ScriptedAssessor::Accept(false, "");
  a.decision = DecisionOutcome::kIgnore;
  a.rules.clear();  // explicit requests need no rule coverage
  assessor_.answers.push_back(a);
  ASSERT_EQ(Drain(), 1);
  auto d = Ok(views_->Decisions("github:acme/widgets:issue:1"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].outcome, DecisionOutcome::kAccept);
}

TEST_F(EngineTest, SilentRuleSuppressesTheAcknowledgement) {
  Open(MakePolicy("auto", "    instructions: Keep the change to the text in question.=>"
                          "    instructions: Keep the change to the text in question.\n    silent: true"));
  Receive(Comment("c1", "alice", false, "typo in the heading"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  auto story = ExplainNow("c1");
  ASSERT_TRUE(story->contains("ticket_created"));
  EXPECT_TRUE(Ok(views_->Receipts(std::nullopt)).empty());
}

TEST_F(EngineTest, OffModeNeverAssessesInferredCandidates) {
  Open(MakePolicy("off"));
  Receive(Comment("c1", "alice", false, "typo in the heading"));
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(assessor_.calls, 0);
  auto d = Ok(views_->Decisions("github:acme/widgets:issue:1"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].outcome, DecisionOutcome::kIgnore);
  EXPECT_NE(d[0].reason.find("mode_off"), std::string::npos) << d[0].reason;
  // Explicit still works in off mode.
  Receive(Comment("c2", "alice", true, "@agent fix it", 2));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  EXPECT_TRUE(ExplainNow("c2")->contains("ticket_created"));
}

TEST_F(EngineTest, NotAdmittedMessagesAreIgnoredWithoutAskingTheModel) {
  Receive(Comment("c1", "mallory", false, "random chatter"));
  Receive(Comment("c2", "renovate[bot]", true, "@agent bump", 2, /*human=*/false));
  ASSERT_EQ(Drain(), 2);
  EXPECT_EQ(assessor_.calls, 0);
  auto story = ExplainNow("c2");
  ASSERT_TRUE(story.ok());
  EXPECT_EQ((*story)["evals"][0]["gate"]["reason"], "bot_not_listed");
  EXPECT_EQ((*story)["evals"][0]["decision"]["outcome"], "ignore");
}

// The one retry schedule (Evals, model calls, GitHub requests): doubled per step, capped, and a
// huge or negative count neither overflows nor shrinks it.
TEST(DoublingDelayTest, DoublesUpToTheCap) {
  EXPECT_EQ(DoublingDelay(30'000, 0, 600'000), 30'000);
  EXPECT_EQ(DoublingDelay(30'000, 2, 600'000), 120'000);
  EXPECT_EQ(DoublingDelay(30'000, 10, 600'000), 600'000);
  EXPECT_EQ(DoublingDelay(30'000, 1'000, 600'000), 600'000);
  EXPECT_EQ(DoublingDelay(30'000, -1, 600'000), 30'000);
}

TEST_F(EngineTest, ModelFailureIsUnavailableAndRequeuedWithBackoffUntilAttemptsRunOut) {
  options_.eval_max_attempts = 2;
  options_.eval_backoff_ms = 30'000;
  Open(MakePolicy("observe"));
  Receive(Comment("c1", "alice", true, "@agent fix it"));
  assessor_.answers.push_back(Status::Unavailable("HTTP 503"));
  ASSERT_EQ(Drain(), 1);
  auto d = Ok(views_->Decisions("github:acme/widgets:issue:1"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].outcome, DecisionOutcome::kUnavailable);
  EXPECT_EQ(Ok(views_->Counts()).eval_queue, 1);
  EXPECT_EQ(Drain(), 0) << "retried before its backoff";
  clock_.Advance(30'000);
  assessor_.answers.push_back(Status::Unavailable("HTTP 503"));
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(Ok(views_->Counts()).eval_queue, 0) << "attempts exhausted: ends unavailable";
  EXPECT_EQ(Ok(views_->Decisions("github:acme/widgets:issue:1")).size(), 2u);
}

// An assessor that throws (a type error while reading a model's answer) used to take the eval
// runner's thread, and the daemon, with it. It is an unavailable assessment with the reason,
// requeued like any model failure.
class ThrowingAssessor : public Assessor {
 public:
  Result<Assessment> Assess(const EvalJob&, const std::vector<const Candidate*>&, const Policy&) override {
    (void)nlohmann::json::parse(R"({"decision": 5})").value("decision", "");  // type_error 302
    return Status::Internal("unreachable");
  }
};

TEST_F(EngineTest, AnAssessorThatThrowsIsUnavailableWithTheReasonAndRequeued) {
  Receive(Comment("c1", "alice", true, "@agent fix it"));
  ThrowingAssessor throwing;
  auto ran = RunOneEval(*engine_, throwing);
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  EXPECT_TRUE(*ran);
  // Not judged yet: requeued with backoff and counted against the Thread (a poison Thread is set
  // aside after quarantine.after in a row; QuarantineTest); the story says why.
  EXPECT_TRUE(Ok(views_->Decisions("github:acme/widgets:issue:1")).empty());
  EXPECT_EQ(Ok(views_->Counts()).eval_queue, 1);
  const std::string story = ExplainNow("c1")->dump();
  EXPECT_NE(story.find("not judged: internal error: judging threw: [json.exception.type_error.302]"), std::string::npos)
      << story;
}

TEST_F(EngineTest, InvalidRuleCoverageIsTreatedAsAModelFailure) {
  Open(MakePolicy("auto"));
  Receive(Comment("c1", "alice", false, "typo in heading"));
  Assessment missing = ScriptedAssessor::Accept();
  missing.rules.pop_back();  // "visual" not answered
  Assessment twice = ScriptedAssessor::Accept();
  twice.rules.push_back({"wording", true, "again"});
  Assessment unknown = ScriptedAssessor::Accept();
  unknown.rules.push_back({"refactor", true, "invented"});
  for (const Assessment& bad : {missing, twice, unknown}) {
    assessor_.answers.push_back(bad);
    clock_.Advance(3'600'000);
    ASSERT_EQ(Drain(), 1);
  }
  auto d = Ok(views_->Decisions("github:acme/widgets:issue:1"));
  ASSERT_EQ(d.size(), 3u);
  for (const Decision& x : d) {
    EXPECT_EQ(x.outcome, DecisionOutcome::kUnavailable);
    EXPECT_NE(x.reason.find("invalid assessment"), std::string::npos) << x.reason;
  }
  EXPECT_FALSE(ExplainNow("c1")->contains("ticket_created"));
}

TEST_F(EngineTest, TimedOutEvalIsRequeuedAndItsLateOutcomeDropped) {
  options_.eval_timeout_ms = 60'000;
  Open(MakePolicy("observe"));
  Receive(Comment("c1", "alice", true, "@agent fix it"));
  auto job = engine_->BeginEval();
  ASSERT_TRUE(job.ok() && job->has_value());
  clock_.Advance(60'000);
  auto expired = engine_->ExpireEvals();
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(*expired, 1);
  EvalOutcome late = JudgeEval(**job, (*job)->policy, assessor_);  // no answer → unavailable
  late.outcome = DecisionOutcome::kAccept;
  late.request_seq = (*job)->batch[0].seq;
  auto finished = engine_->FinishEval((*job)->id, late);
  EXPECT_EQ(finished.status().code(), Status::Code::kConflict);
  EXPECT_TRUE(Ok(views_->Decisions("github:acme/widgets:issue:1")).empty());
  EXPECT_EQ(Ok(views_->Counts()).eval_queue, 1);
  clock_.Advance(3'600'000);
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  EXPECT_TRUE(ExplainNow("c1")->contains("ticket_created"));
}

TEST_F(EngineTest, SameTriggerAcceptedTwiceYieldsOneTicket) {
  TicketId id = AcceptedTicket("c1");
  auto rec = views_->GetTrigger("c1");
  // The Ticket hands its own request back; the second Eval accepts the same Trigger again.
  ASSERT_TRUE(engine_->Handback(id, "c1", HandbackKind::kOutOfScope, "test").ok());
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  auto d = Ok(views_->Decisions("github:acme/widgets:issue:1"));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].outcome, DecisionOutcome::kAccept);
  EXPECT_EQ(d[1].ticket, id);
  EXPECT_EQ(Ok(views_->Counts()).tickets["idle"], 1);
  EXPECT_EQ(Ok(views_->Receipts(std::nullopt)).size(), 1u) << "acknowledged once";
}

TEST_F(EngineTest, FailedFinishWritesNothing) {
  Receive(Comment("c1", "alice", true, "@agent fix it"));
  auto job = engine_->BeginEval();
  ASSERT_TRUE(job.ok() && job->has_value());
  EvalOutcome bogus;
  bogus.outcome = DecisionOutcome::kAccept;
  bogus.request_seq = 9999;  // no such Trigger
  auto r = engine_->FinishEval((*job)->id, bogus);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(Ok(views_->Decisions("github:acme/widgets:issue:1")).empty());
  EXPECT_TRUE(Ok(views_->Counts()).tickets.empty());
  // The Eval is still running and can finish properly.
  EvalOutcome ok = JudgeEval(**job, (*job)->policy, assessor_);
  EXPECT_TRUE(engine_->FinishEval((*job)->id, ok).ok());
}

TEST_F(EngineTest, ExplicitStopEndsLiveTicketsButBotsCannotStop) {
  TicketId id = AcceptedTicket("c1");
  // The worker hands back "stop" (a worker may not declare a person told it to stop).
  Receive(Comment("c2", "alice", true, "@agent stop, we changed our mind"));
  ASSERT_TRUE(engine_->Handback(id, "c2", HandbackKind::kOutOfScope, "a stop request").ok());
  assessor_.answers.push_back(ScriptedAssessor::Stop());
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kEnded);
  EXPECT_TRUE(views_->GetMandate(id)->ended_as.empty()) << "a conversation stop does not withdraw the Mandate";

  // A listed bot's stop on another Ticket is not honoured.
  TicketId other = AcceptedTicket("d1", 2);
  Receive(Comment("d2", "dependabot[bot]", true, "@agent stop", 2, /*human=*/false));
  ASSERT_TRUE(engine_->Handback(other, "d2", HandbackKind::kOutOfScope, "stop?").ok());
  assessor_.answers.push_back(ScriptedAssessor::Stop());
  ASSERT_EQ(Drain(), 1);
  EXPECT_NE(views_->GetTicket(other)->stage, Stage::kEnded);
  auto d = Ok(views_->Decisions("github:acme/widgets:issue:2"));
  EXPECT_EQ(d.back().outcome, DecisionOutcome::kIgnore);
}

TEST_F(EngineTest, RelatedTicketAttachesOnlyWhenItIsOnTheThread) {
  TicketId id = AcceptedTicket("c1");
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(id, "delivered").ok());
  ASSERT_TRUE(engine_->StopTicket(id, "panel:alice").ok());  // withdrawn: messages now go to Eval
  Receive(Comment("c2", "alice", true, "@agent also fix the other typo, see #1"));
  Assessment a = ScriptedAssessor::Accept();
  a.related_ticket = id;  // points at a withdrawn Ticket: cannot attach
  assessor_.answers.push_back(a);
  ASSERT_EQ(Drain(), 1);
  auto story = ExplainNow("c2");
  ASSERT_TRUE(story->contains("ticket_created"));
  EXPECT_NE((*story)["ticket_created"]["id"].get<TicketId>(), id);
}

}  // namespace
}  // namespace superagent::testing
