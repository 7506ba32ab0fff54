// The circuit breaker (issue 22 item 5, docs/002): past policy.circuit_breaker's limit of new
// Tickets per sender or per Source in its window, a new Ticket waits in Needs-you — asked of the
// panel only, silent in the discussion — until a person starts or drops it.
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using nlohmann::json;

class CircuitBreakerTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    Open(BreakerPolicy(2, 0, 60));
  }

  static Policy BreakerPolicy(int per_sender, int per_source, int window_minutes) {
    return MakePolicy("observe", "rules:=>circuit_breaker: { per_sender: " + std::to_string(per_sender) +
                                     ", per_source: " + std::to_string(per_source) +
                                     ", window_minutes: " + std::to_string(window_minutes) + " }\nrules:");
  }

  // `actor`'s addressed request on issue `issue`, accepted by the model; its Ticket.
  TicketId Request(const std::string& id, const std::string& actor, int issue, const std::string& text = "@agent please fix the typo in README") {
    Receive(Comment(id, actor, true, text, issue));
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    EXPECT_EQ(Drain(), 1);
    auto story = Ok(ExplainNow(id));
    if (!story.contains("ticket_created")) {
      ADD_FAILURE() << "no ticket for " << id << ": " << story.dump();
      return 0;
    }
    return story["ticket_created"]["id"].get<TicketId>();
  }

  std::vector<Receipt> SentOn(const std::string& thread) {
    std::vector<Receipt> out;
    for (const Receipt& r : Ok(views_->Receipts(std::nullopt)))
      if (r.thread == thread) out.push_back(r);
    return out;
  }

  int AssignmentsOf(TicketId ticket) {
    int n = 0;
    for (const char* state : {"pending", "running", "ended"})
      for (const Assignment& a : Ok(views_->AssignmentsInState(state)))
        if (a.ticket == ticket) ++n;
    return n;
  }
};

TEST_F(CircuitBreakerTest, PastThePerSenderLimitANewTicketWaitsForThePanelAndNothingIsSaid) {
  const TicketId first = Request("c1", "alice", 1), second = Request("c2", "alice", 2);
  for (TicketId t : {first, second}) {
    EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle);
    EXPECT_EQ(AssignmentsOf(t), 1);
  }
  ASSERT_EQ(SentOn("github:acme/widgets:issue:2").size(), 1u) << "the second still gets its acknowledgement";

  const TicketId third = Request("c3", "alice", 3, "@agent 请修复 README 的错别字 🙏");
  auto held = views_->GetTicket(third);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->stage, Stage::kWaitingForPerson);
  ASSERT_TRUE(held->waiting.has_value());
  EXPECT_EQ(held->waiting->actor, "a person in the panel");
  EXPECT_EQ(held->waiting->question,
            "Held by the circuit breaker: github sender alice has opened 2 Tickets in the last 60 minutes "
            "(circuit_breaker.per_sender: 2). Start this Ticket, or drop it?");
  EXPECT_EQ(held->waiting->form["options"], json({"Start the work", "Drop it"}));
  EXPECT_EQ(held->waiting->form["free_text"], false);
  EXPECT_EQ(held->waiting->form["purpose"], "circuit_breaker");
  EXPECT_TRUE(SentOn("github:acme/widgets:issue:3").empty()) << "a hold posts nothing: a message per Ticket would feed a loop";
  EXPECT_EQ(AssignmentsOf(third), 0) << "no turn before a person starts it";
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 0) << "its pending request starts nothing while it is held";

  // Another sender is not limited by alice's count.
  const TicketId bobs = Request("c4", "bob", 4);
  EXPECT_EQ(views_->GetTicket(bobs)->stage, Stage::kIdle);
}

TEST_F(CircuitBreakerTest, TheRequesterCannotReleaseItsOwnHoldOnlyThePanelCan) {
  Request("c1", "alice", 1);
  Request("c2", "alice", 2);
  const TicketId held = Request("c3", "alice", 3);
  // alice answers "1" where the question would be: it is her message, not an answer to the hold.
  IntakeResult r = Receive(Comment("c4", "alice", false, "1", 3));
  EXPECT_EQ(r.delivered_to, std::vector<TicketId>{held});
  EXPECT_EQ(views_->GetTicket(held)->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(AssignmentsOf(held), 0);

  // A free-text or out-of-range panel answer is refused precisely and changes nothing.
  Status words = engine_->AnswerQuestion(held, "carol (panel)", json("go ahead"));
  EXPECT_EQ(words.code(), Status::Code::kInvalidArgument) << words.ToString();
  Status three = engine_->AnswerQuestion(held, "carol (panel)", json{{"option", 3}});
  EXPECT_EQ(three.code(), Status::Code::kInvalidArgument) << three.ToString();
  EXPECT_EQ(views_->GetTicket(held)->stage, Stage::kWaitingForPerson);

  ASSERT_TRUE(engine_->AnswerQuestion(held, "carol (panel)", json{{"option", 1}}).ok());
  auto started = views_->GetTicket(held);
  EXPECT_EQ(started->stage, Stage::kIdle);
  EXPECT_EQ(AssignmentsOf(held), 1);
  // The requester now reads the acknowledgement it would have read at accept — and only that.
  auto said = SentOn("github:acme/widgets:issue:3");
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].kind, MessageKind::kAcknowledgement);
  EXPECT_EQ(said[0].body, "I'll fix the typo in README.");
  EXPECT_EQ(said[0].ticket, held);
  // The turn gets the request and alice's later message; the panel's answer is not for the worker.
  auto inputs = Ok(engine_->TakeInputs(held));
  ASSERT_EQ(inputs.size(), 2u);
  for (const TakenInput& in : inputs) EXPECT_EQ(in.input.kind, "trigger");
  // Answering again: it is not waiting any more.
  EXPECT_EQ(engine_->AnswerQuestion(held, "carol (panel)", json{{"option", 2}}).code(), Status::Code::kConflict);
}

TEST_F(CircuitBreakerTest, DroppingAHeldTicketEndsItQuietlyAndWithdrawsItsMandate) {
  Request("c1", "alice", 1);
  Request("c2", "alice", 2);
  const TicketId held = Request("c3", "alice", 3);
  ASSERT_TRUE(engine_->AnswerQuestion(held, "carol (panel)", json("2")).ok()) << "a typed option number is an option";
  auto tk = views_->GetTicket(held);
  EXPECT_EQ(tk->stage, Stage::kEnded);
  EXPECT_EQ(tk->end_reason, "dropped by carol (panel) after the circuit breaker held it");
  EXPECT_TRUE(SentOn("github:acme/widgets:issue:3").empty());
  EXPECT_EQ(AssignmentsOf(held), 0);
  auto story = Ok(ExplainNow("c3"));
  EXPECT_EQ(story["ticket_created"]["mandate"]["status"], "withdrawn") << story.dump();
  EXPECT_EQ(story["ticket_created"]["mandate"]["ended"]["reason"], "dropped in the panel (circuit breaker)");
  // Withdrawn: alice's next message there resumes nothing.
  EXPECT_TRUE(Receive(Comment("c4", "alice", false, "please?", 3)).resumed.empty());
}

TEST_F(CircuitBreakerTest, TheWindowSlidesHeldTicketsCountAndAHoldSurvivesARestart) {
  Request("c1", "alice", 1);
  clock_.Advance(30 * 60'000);
  Request("c2", "alice", 2);
  // 61 minutes after the first request it has left the 60-minute window: one more fits.
  clock_.Advance(31 * 60'000);
  EXPECT_EQ(views_->GetTicket(Request("c3", "alice", 3))->stage, Stage::kIdle);
  const TicketId held = Request("c4", "alice", 4);
  EXPECT_EQ(views_->GetTicket(held)->stage, Stage::kWaitingForPerson);
  // The held one counts as a new Ticket too: a loop cannot wait out its own holds.
  const TicketId next = Request("c5", "alice", 5);
  EXPECT_NE(views_->GetTicket(next)->waiting->question.find("alice has opened 3 Tickets"), std::string::npos)
      << views_->GetTicket(next)->waiting->question;

  // The daemon restarts: the hold is stored, and the panel's answer still starts it.
  Open(BreakerPolicy(2, 0, 60));
  EXPECT_TRUE(Ok(engine_->RecoverInterruptedWork()).empty());
  EXPECT_EQ(views_->GetTicket(held)->stage, Stage::kWaitingForPerson);
  ASSERT_TRUE(engine_->AnswerQuestion(held, "carol (panel)", json{{"option", 1}}).ok());
  EXPECT_EQ(views_->GetTicket(held)->stage, Stage::kIdle);
  EXPECT_EQ(SentOn("github:acme/widgets:issue:4").size(), 1u);
}

TEST_F(CircuitBreakerTest, PerSourceCountsEverySenderAndZeroTurnsALimitOff) {
  Open(BreakerPolicy(0, 2, 10));
  EXPECT_EQ(views_->GetTicket(Request("c1", "alice", 1))->stage, Stage::kIdle);
  EXPECT_EQ(views_->GetTicket(Request("c2", "bob", 2))->stage, Stage::kIdle);
  const TicketId held = Request("c3", "alice", 3);
  EXPECT_EQ(views_->GetTicket(held)->waiting->question,
            "Held by the circuit breaker: github has opened 2 Tickets in the last 10 minutes "
            "(circuit_breaker.per_source: 2). Start this Ticket, or drop it?");

  // Both limits off: nothing is ever held.
  Open(BreakerPolicy(0, 0, 10));
  for (int i = 4; i < 9; ++i)
    EXPECT_EQ(views_->GetTicket(Request("c" + std::to_string(i), "alice", i))->stage, Stage::kIdle) << i;
}

TEST(CircuitBreakerPolicy, ReadFromYamlWithPreciseErrorsAndKeptOutOfTheFingerprintWhenDefault) {
  std::vector<Problem> problems;
  auto p = ParsePolicy("mode: auto\ncircuit_breaker: { per_sender: 3, window_minutes: 15 }\n", "p.yaml", &problems);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->circuit_breaker, (CircuitBreaker{3, 30, 15})) << "an absent member keeps its default";
  auto back = Ok(PolicyFromJson(p->ToJson()));
  EXPECT_EQ(back.circuit_breaker, p->circuit_breaker);

  Policy plain = DefaultPolicy();
  EXPECT_FALSE(plain.ToJson().contains("circuit_breaker")) << "an upgrade must not make a new policy version";
  EXPECT_EQ(Ok(PolicyFromJson(plain.ToJson())).circuit_breaker, CircuitBreaker{});

  for (const auto& [yaml, want] : std::vector<std::pair<std::string, std::string>>{
           {"circuit_breaker: { window_minutes: 0 }", "p.yaml:1:36: circuit_breaker.window_minutes: must be from 1 to 10080 minutes (got \"0\")"},
           {"circuit_breaker: { window_minutes: 20000 }", "circuit_breaker.window_minutes: must be from 1 to 10080 minutes"},
           {"circuit_breaker: { per_sender: -1 }", "circuit_breaker.per_sender: must be a whole number, 0 or more"},
           {"circuit_breaker: { per_source: \"5\" }", "circuit_breaker.per_source: must be a whole number, 0 or more"},
           {"circuit_breaker: { per_person: 5 }", "circuit_breaker.per_person"},
           {"circuit_breaker: 5", "circuit_breaker"},
           {"circuit_breaker: { per_sender: 每小时 }", "circuit_breaker.per_sender: must be a whole number"}}) {
    problems.clear();
    EXPECT_FALSE(ParsePolicy(yaml + "\n", "p.yaml", &problems).has_value()) << yaml;
    ASSERT_FALSE(problems.empty()) << yaml;
    EXPECT_NE(problems[0].ToString().find(want), std::string::npos) << problems[0].ToString();
  }

  for (const json& bad : {json{{"circuit_breaker", 5}}, json{{"circuit_breaker", {{"per_sender", "5"}}}},
                          json{{"circuit_breaker", {{"per_sender", -1}}}}, json{{"circuit_breaker", {{"window_minutes", 0}}}},
                          json{{"circuit_breaker", {{"extra", 1}}}},
                          json{{"circuit_breaker", {{"per_source", 18446744073709551615ULL}}}}}) {
    auto r = PolicyFromJson(bad);
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << bad.dump();
    EXPECT_NE(r.status().message().find("circuit_breaker"), std::string::npos) << r.status().ToString();
  }
}

}  // namespace
}  // namespace superagent::testing
