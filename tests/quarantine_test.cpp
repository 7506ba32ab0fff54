// Poison items (issue 18, item 3): an Effect, a Thread's Evals or a Ticket's turns that fail the
// same way again and again — or were in flight each time the daemon died — are set aside with
// their reason, no longer picked by their loop, while everything else goes on; a Retry requeues.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include <httplib.h>

#include "engine_fixture.h"
#include "superagent/effects.h"
#include "superagent/http.h"
#include "superagent/views.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// A chat-like peer on loopback that refuses every message containing "POISON" the same way
// (as a platform refuses a body it cannot parse) and takes all others. `down` refuses all.
class PickyPeer {
 public:
  PickyPeer() {
    server_.Post("/messages", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      json m = json::parse(req.body);
      const std::string body = m["body"].get<std::string>();
      if (body.find("POISON") != std::string::npos) ++poison_posts_;
      if (down_ || body.find("POISON") != std::string::npos) {
        res.status = 500;
        res.set_content("Problems parsing JSON (request 7f3a" + std::to_string(++request_) + ")", "text/plain");
        return;
      }
      messages_.push_back(body);
      res.set_content(json{{"id", std::to_string(messages_.size())}}.dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~PickyPeer() {
    server_.stop();
    thread_.join();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> Messages() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }
  int poison_posts() {
    std::lock_guard<std::mutex> lock(mu_);
    return poison_posts_;
  }
  void SetDown(bool down) {
    std::lock_guard<std::mutex> lock(mu_);
    down_ = down;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> messages_;
  int poison_posts_ = 0, request_ = 0;
  bool down_ = false;
};

class QuarantinePeer : public Channel {
 public:
  explicit QuarantinePeer(std::string base) : base_(std::move(base)), http_(MakeHttpClient()) {}
  bool Handles(const std::string& channel) const override { return channel.rfind("github:", 0) == 0; }
  Delivery Perform(const Effect& e, bool) override {
    json body = {{"body", e.receipt ? e.receipt->body : e.payload.dump()}};
    HttpResponse r = http_->Send({"POST", base_ + "/messages", {{"Content-Type", "application/json"}}, body.dump(), 5000, 5000});
    if (r.ok()) return Delivery::Done(json::parse(r.body)["id"]);
    return Delivery::Retry("HTTP " + std::to_string(r.status) + ": " + r.body);
  }
  std::string base_;
  std::unique_ptr<HttpClient> http_;
};

class QuarantineTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    channel_ = std::make_unique<QuarantinePeer>(peer_.Url());
    MakeLoop();
  }
  void MakeLoop() {
    EffectsOptions o;
    o.jitter = 0;
    loop_ = std::make_unique<EffectsLoop>(engine_.get(), std::vector<Channel*>{channel_.get()}, &clock_, o, 42);
  }
  // Runs the Effects loop until nothing more is due now.
  void DrainEffects() {
    for (int i = 0; i < 20; ++i) {
      auto n = loop_->RunOnce();
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      if (*n == 0) return;
    }
  }
  // The daemon died: the Engine goes away without RecordCleanStop, and a new one starts.
  void DieAndRestart() {
    loop_.reset();
    Open(MakePolicy("observe"));
    MakeLoop();
  }
  std::string ReceiptStatus(const std::string& id) {
    for (const Receipt& r : Ok(views_->Receipts(std::nullopt)))
      if (r.id == id) return r.status;
    return "missing";
  }
  std::vector<std::string> TicketCauses(TicketId id) {
    auto views = Views::Open((dir_ / "superagent.db").string());
    std::vector<std::string> out;
    if (!views.ok()) return out;
    auto d = (*views)->Detail(id);
    if (d.ok())
      for (const TicketEvent& e : d->events) out.push_back(e.cause);
    return out;
  }

  PickyPeer peer_;
  std::unique_ptr<QuarantinePeer> channel_;
  std::unique_ptr<EffectsLoop> loop_;
};

TEST(FailureSignature, DigitsDoNotMakeTwoFailuresDifferent) {
  EXPECT_EQ(FailureSignature("HTTP 500 after 1234 ms (request 7f3a9)"), FailureSignature("HTTP 500 after 87 ms (request 7f3a10)"));
  EXPECT_NE(FailureSignature("HTTP 500: Problems parsing JSON"), FailureSignature("HTTP 502: Bad gateway"));
  EXPECT_EQ(FailureSignature(""), "");
  EXPECT_LE(FailureSignature(std::string(100'000, 'x')).size(), 200u);
  // Bytes are compared as bytes: Chinese, emoji and invalid UTF-8 are fine.
  EXPECT_EQ(FailureSignature("无法解析 1 😀 \xff"), FailureSignature("无法解析 22 😀 \xff"));
}

// ---------------------------------------------------------------------------------------------
// Effects

TEST_F(QuarantineTest, AnEffectRefusedTheSameWayIsSetAsideWhileOtherThreadsMessagesGoOut) {
  const TicketId a = AcceptedTicket("c1", 1);
  const TicketId b = AcceptedTicket("c2", 2);
  DrainEffects();
  ASSERT_EQ(peer_.Messages().size(), 2u);  // both acknowledgements
  ASSERT_TRUE(engine_->Send({"result:a", a, "github:acme/widgets:issue:1", MessageKind::kResult, "POISON 无法解析 😀"}).ok());
  // Five rounds: the poison is refused each time while a message of the other Thread goes out.
  for (int round = 1; round <= 5; ++round) {
    ASSERT_TRUE(engine_->Send({"progress:b:" + std::to_string(round), b, "github:acme/widgets:issue:2", MessageKind::kResult,
                               "Step " + std::to_string(round) + " done."})
                    .ok());
    DrainEffects();
    clock_.Advance(600'000);  // past any backoff
  }
  EXPECT_EQ(peer_.poison_posts(), 5);
  auto set_aside = Ok(views_->SetAside(1000));
  ASSERT_EQ(set_aside.size(), 1u);
  EXPECT_EQ(set_aside[0].kind, "effect");
  EXPECT_EQ(set_aside[0].label, "message result:a to github:acme/widgets:issue:1");
  EXPECT_THAT(set_aside[0].reason, HasSubstr("failed the same way 5 times in a row"));
  EXPECT_THAT(set_aside[0].reason, HasSubstr("Problems parsing JSON"));
  EXPECT_EQ(ReceiptStatus("result:a"), "pending") << "set aside, not dropped";

  // No longer picked, whatever time passes; other Threads go on.
  ASSERT_TRUE(engine_->Send({"result:b", b, "github:acme/widgets:issue:2", MessageKind::kResult, "All done."}).ok());
  for (int i = 0; i < 3; ++i) {
    DrainEffects();
    clock_.Advance(600'000);
  }
  EXPECT_EQ(peer_.poison_posts(), 5);
  EXPECT_EQ(ReceiptStatus("result:b"), "sent");
  EXPECT_EQ(peer_.Messages().back(), "All done.");

  // Its story says so.
  auto story = ExplainNow("c1");
  ASSERT_TRUE(story.ok());
  ASSERT_EQ((*story)["set_aside"].size(), 1u);
  EXPECT_EQ((*story)["set_aside"][0]["kind"], "effect");
  EXPECT_THAT((*story)["summary"].get<std::string>(), HasSubstr("Set aside: message result:a"));

  // Bad retries change nothing.
  EXPECT_EQ(engine_->RetryQuarantined("effect", "999", "alice").code(), Status::Code::kNotFound);
  EXPECT_EQ(engine_->RetryQuarantined("turn", set_aside[0].item, "alice").code(), Status::Code::kNotFound);
  EXPECT_EQ(engine_->RetryQuarantined("effect", "😀\xff", "alice").code(), Status::Code::kNotFound);
  EXPECT_EQ(Ok(views_->SetAside(1000)).size(), 1u);

  // A Retry requeues it at once with a fresh count: one more refusal is not enough to set it aside.
  ASSERT_TRUE(engine_->RetryQuarantined("effect", set_aside[0].item, "alice").ok());
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty());
  DrainEffects();
  EXPECT_EQ(peer_.poison_posts(), 6);
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty());
}

TEST_F(QuarantineTest, WhenThePeerRefusesEverythingItIsAnOutageAndNothingIsSetAside) {
  AcceptedTicket("c1", 1);
  peer_.SetDown(true);
  for (int round = 0; round < 8; ++round) {
    DrainEffects();
    clock_.Advance(600'000);
  }
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty()) << "an outage is a system problem, not a poison item";
  ASSERT_FALSE(Ok(views_->Problems(options_.problem_threshold)).empty());
  peer_.SetDown(false);
  DrainEffects();
  EXPECT_EQ(peer_.Messages().size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Evals

// Judging throws for one Thread (as a model answer or a history that code cannot read would).
class PoisonAssessor : public Assessor {
 public:
  Result<Assessment> Assess(const EvalJob& job, const std::vector<const Candidate*>&, const Policy&) override {
    ++calls[job.thread];
    if (job.thread == poison) throw std::runtime_error("[json.exception.type_error.316] invalid UTF-8 byte at index 3: 0xFF");
    return ScriptedAssessor::Accept();
  }
  std::string poison = "github:acme/widgets:issue:1";
  std::map<std::string, int> calls;
};

TEST_F(QuarantineTest, AThreadWhoseEvalsThrowIsSetAsideAndOtherThreadsAreStillJudged) {
  PoisonAssessor assessor;
  auto run = [&] {
    for (int i = 0; i < 10; ++i) {
      auto r = RunOneEval(*engine_, assessor);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (!*r) return;
    }
  };
  Receive(Comment("p1", "alice", true, "@agent fix the typo 错别字 😀", 1));
  // eval.max_attempts (3) ends the first Trigger unavailable; a second one on the same Thread
  // fails the same way, and the fifth failure in a row sets the Thread aside.
  for (int i = 0; i < 3; ++i) {
    run();
    clock_.Advance(700'000);
  }
  EXPECT_EQ(assessor.calls["github:acme/widgets:issue:1"], 3);
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty());
  auto first = ExplainNow("p1");
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(first->dump(), HasSubstr("eval failed 3 times"));
  Receive(Comment("p2", "alice", true, "@agent please, the typo", 1));
  for (int i = 0; i < 3; ++i) {
    run();
    clock_.Advance(700'000);
  }
  EXPECT_EQ(assessor.calls["github:acme/widgets:issue:1"], 5);
  auto set_aside = Ok(views_->SetAside(1000));
  ASSERT_EQ(set_aside.size(), 1u);
  EXPECT_EQ(set_aside[0].kind, "eval");
  EXPECT_EQ(set_aside[0].item, "github:acme/widgets:issue:1");
  EXPECT_THAT(set_aside[0].reason, HasSubstr("failed the same way 5 times in a row"));
  EXPECT_THAT(set_aside[0].reason, HasSubstr("type_error.316"));

  // Other Threads are judged; the set-aside Thread is not, however much time passes.
  Receive(Comment("q1", "alice", true, "@agent fix the typo in README", 2));
  Receive(Comment("p3", "alice", true, "@agent hello again", 1));
  run();
  clock_.Advance(3'600'000);
  run();
  EXPECT_EQ(assessor.calls["github:acme/widgets:issue:2"], 1);
  EXPECT_EQ(assessor.calls["github:acme/widgets:issue:1"], 5);
  auto other = ExplainNow("q1");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->contains("ticket_created"));
  auto story = ExplainNow("p3");
  ASSERT_TRUE(story.ok());
  ASSERT_EQ((*story)["set_aside"].size(), 1u);
  EXPECT_THAT((*story)["summary"].get<std::string>(), HasSubstr("Set aside: Evals of Thread github:acme/widgets:issue:1"));

  // Retry: the Thread's queued Triggers are judged now.
  assessor.poison.clear();
  ASSERT_TRUE(engine_->RetryQuarantined("eval", "github:acme/widgets:issue:1", "alice (panel)").ok());
  run();
  EXPECT_EQ(assessor.calls["github:acme/widgets:issue:1"], 6);
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty());
  auto retried = ExplainNow("p3");
  ASSERT_TRUE(retried.ok());
  EXPECT_TRUE((*retried)["set_aside"].empty());
  EXPECT_EQ((*retried)["evals"].size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Turns

TEST_F(QuarantineTest, ATicketsTurnsFailingTheSameWayAreSetAsideAndTheTicketSaysWhy) {
  const TicketId id = AcceptedTicket("t1");
  for (int turn = 1; turn <= 5; ++turn) {
    auto pending = Ok(views_->AssignmentsInState("pending"));
    ASSERT_EQ(pending.size(), 1u) << "turn " << turn;
    ASSERT_TRUE(EngineTestPeer(*engine_).StartAssignment(pending[0].id, "worker").ok());
    ASSERT_TRUE(engine_->FinishTurn({.assignment = pending[0].id, .error = "model call failed: type_error.316 at byte " + std::to_string(turn)}).ok());
    Receive(Comment("t1-" + std::to_string(turn), "alice", false, "还是不行，请再试一次", 1));
    if (turn < 5) {
      ASSERT_EQ(*engine_->AssignFollowUps(), 1);
    }
  }
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  auto causes = TicketCauses(id);
  ASSERT_FALSE(causes.empty());
  EXPECT_THAT(causes.back(), HasSubstr("set aside: failed the same way 5 times in a row: model call failed"));
  // Pending input, but no new turn.
  EXPECT_EQ(*engine_->AssignFollowUps(), 0);
  EXPECT_TRUE(Ok(views_->AssignmentsInState("pending")).empty());
  ASSERT_EQ(Ok(views_->SetAside(1000)).size(), 1u);
  EXPECT_EQ(Ok(views_->SetAside(1000))[0].label, "worker turns of Ticket " + std::to_string(id) + " (Fix the typo in README)");

  ASSERT_TRUE(engine_->RetryQuarantined("turn", std::to_string(id), "alice (panel)").ok());
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kIdle);
  auto pending = Ok(views_->AssignmentsInState("pending"));
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].cause, "retry");
  ASSERT_TRUE(EngineTestPeer(*engine_).StartAssignment(pending[0].id, "worker").ok());
}

TEST_F(QuarantineTest, DifferentFailuresOrASuccessInBetweenAreNotTheSameWayInARow) {
  const TicketId id = AcceptedTicket("t1");
  for (int turn = 1; turn <= 8; ++turn) {
    auto pending = Ok(views_->AssignmentsInState("pending"));
    ASSERT_EQ(pending.size(), 1u);
    ASSERT_TRUE(EngineTestPeer(*engine_).StartAssignment(pending[0].id, "worker").ok());
    const std::string error = turn == 4 ? "" : turn % 2 ? "the model timed out" : "HTTP 502 from the model";
    ASSERT_TRUE(engine_->FinishTurn({.assignment = pending[0].id, .error = error}).ok());
    Receive(Comment("t1-" + std::to_string(turn), "alice", false, "again", 1));
    ASSERT_EQ(*engine_->AssignFollowUps(), 1);
  }
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty());
  // Blocked by its last failed turn (issue 34: said, not idle) — but not set aside.
  auto causes = TicketCauses(id);
  ASSERT_FALSE(causes.empty());
  EXPECT_EQ(causes.back().rfind("set aside", 0), std::string::npos) << causes.back();
}

// ---------------------------------------------------------------------------------------------
// Crash-loop guard

TEST_F(QuarantineTest, AnEffectInFlightDuringFiveAbnormalExitsIsSetAsideAtTheNextStart) {
  AcceptedTicket("c1", 1);
  ASSERT_TRUE(engine_->RecordStart(1).ok());
  for (int death = 1; death <= 5; ++death) {
    auto claimed = engine_->ClaimDueEffects(10);  // the send that aborts the process
    ASSERT_TRUE(claimed.ok());
    ASSERT_EQ(claimed->size(), 1u) << "death " << death;
    DieAndRestart();
    auto set_aside = engine_->RecordStart(100 + death);
    ASSERT_TRUE(set_aside.ok()) << set_aside.status().ToString();
    EXPECT_EQ(set_aside->size(), death == 5 ? 1u : 0u) << "death " << death;
  }
  auto q = Ok(views_->SetAside(1000));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].kind, "effect");
  EXPECT_EQ(q[0].crashes, 5);
  EXPECT_THAT(q[0].reason, HasSubstr("in flight during 5 abnormal exits of the daemon in a row"));
  // This run serves: the item is not claimed again, and other Threads' messages go out.
  AcceptedTicket("c2", 2);
  auto claimed = engine_->ClaimDueEffects(10);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ(claimed->front().effect.receipt->thread, "github:acme/widgets:issue:2");
}

TEST_F(QuarantineTest, ACleanStopChargesNothingAndASuccessEndsTheRow) {
  AcceptedTicket("c1", 1);
  for (int stop = 0; stop < 7; ++stop) {
    ASSERT_TRUE(engine_->RecordStart(1).ok());
    ASSERT_EQ(engine_->ClaimDueEffects(10)->size(), 1u);
    ASSERT_TRUE(engine_->RecordCleanStop().ok());
    DieAndRestart();  // reopened after a clean stop
  }
  ASSERT_TRUE(engine_->RecordStart(1).ok());
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty());
  // Four deaths, a delivery, four more: never five in a row.
  for (int death = 0; death < 4; ++death) {
    ASSERT_EQ(engine_->ClaimDueEffects(10)->size(), 1u);
    DieAndRestart();
    ASSERT_TRUE(engine_->RecordStart(1).ok());
  }
  DrainEffects();
  ASSERT_EQ(peer_.Messages().size(), 1u);
  ASSERT_TRUE(engine_->Send({"result:1", std::nullopt, "github:acme/widgets:issue:1", MessageKind::kResult, "Done."}).ok());
  for (int death = 0; death < 4; ++death) {
    ASSERT_EQ(engine_->ClaimDueEffects(10)->size(), 1u);
    DieAndRestart();
    ASSERT_TRUE(engine_->RecordStart(1).ok());
  }
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty());
}

TEST_F(QuarantineTest, ATurnRunningDuringFiveAbnormalExitsIsNotResumedAndItsTicketIsBlocked) {
  const TicketId id = AcceptedTicket("t1");
  const TicketId other = AcceptedTicket("t2", 2);
  ASSERT_TRUE(engine_->RecordStart(1).ok());
  for (int death = 1; death <= 5; ++death) {
    // The poison turn is running at every death; the other Ticket's only at the last one.
    for (const Assignment& a : Ok(views_->AssignmentsInState("pending")))
      if (a.ticket == id || death == 5) {
        ASSERT_TRUE(EngineTestPeer(*engine_).StartAssignment(a.id, "worker").ok());
      }
    DieAndRestart();
    ASSERT_TRUE(engine_->RecordStart(1).ok());
    auto resumed = engine_->RecoverInterruptedWork();
    ASSERT_TRUE(resumed.ok());
    if (death < 5) {
      EXPECT_EQ(*resumed, std::vector<TicketId>{id});
    } else {
      ASSERT_EQ(resumed->size(), 1u) << "the crash loop's turn was resumed again";
      EXPECT_EQ(resumed->front(), other);
    }
  }
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  EXPECT_THAT(TicketCauses(id).back(), HasSubstr("set aside: in flight during 5 abnormal exits"));
  // The other Ticket's turn finishing is a success: its own count ends.
  for (const Assignment& a : Ok(views_->AssignmentsInState("pending"))) {
    EXPECT_EQ(a.ticket, other);
    ASSERT_TRUE(EngineTestPeer(*engine_).StartAssignment(a.id, "worker").ok());
    ASSERT_TRUE(engine_->FinishTurn({.assignment = a.id, .error = ""}).ok());
  }
  ASSERT_EQ(Ok(views_->SetAside(1000)).size(), 1u);
}

TEST_F(QuarantineTest, AnEvalRunningDuringFiveAbnormalExitsSetsItsThreadAside) {
  options_.eval_timeout_ms = 1'000;
  options_.eval_max_attempts = 20;
  DieAndRestart();
  ASSERT_TRUE(engine_->RecordStart(1).ok());
  Receive(Comment("e1", "alice", true, "@agent fix it", 1));
  for (int death = 1; death <= 5; ++death) {
    auto job = engine_->BeginEval();
    ASSERT_TRUE(job.ok());
    ASSERT_TRUE(job->has_value()) << "death " << death;
    DieAndRestart();
    ASSERT_TRUE(engine_->RecordStart(1).ok());
    clock_.Advance(3'600'000);
    ASSERT_TRUE(engine_->ExpireEvals().ok());
    clock_.Advance(3'600'000);
  }
  auto q = Ok(views_->SetAside(1000));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].kind, "eval");
  auto job = engine_->BeginEval();
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(job->has_value()) << "the set-aside Thread was judged again";
  ASSERT_TRUE(engine_->RetryQuarantined("eval", "github:acme/widgets:issue:1", "alice").ok());
  job = engine_->BeginEval();
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(job->has_value());
}

}  // namespace
}  // namespace superagent::testing
