// The Effects loop (SPEC §8, issue 5) against a loopback channel server: ordering, backoff,
// system problems, cancellation, crash recovery without double posting, and volume.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include <httplib.h>
#include <sqlite3.h>

#include "engine_fixture.h"
#include "superagent/catch_all.h"
#include "superagent/effects.h"
#include "superagent/http.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// A chat-like peer on loopback: POST /messages stores a message, GET /messages lists them.
// Scripted failures: the next N POSTs answer with the given statuses.
class FakePeer {
 public:
  FakePeer() {
    server_.Post("/messages", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      ++posts_;
      if (!script_.empty()) {
        int status = script_.front();
        script_.erase(script_.begin());
        if (status == 429) res.set_header("Retry-After", "120");
        res.status = status;
        return;
      }
      json m = json::parse(req.body);
      m["id"] = std::to_string(messages_.size() + 1);
      messages_.push_back(m);
      res.set_content(json{{"id", m["id"]}}.dump(), "application/json");
    });
    server_.Get("/messages", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      ++lookups_;
      res.set_content(json(messages_).dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakePeer() {
    server_.stop();
    thread_.join();
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void FailNext(std::vector<int> statuses) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.insert(script_.end(), statuses.begin(), statuses.end());
  }
  std::vector<json> Messages() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }
  int posts() {
    std::lock_guard<std::mutex> lock(mu_);
    return posts_;
  }
  int lookups() {
    std::lock_guard<std::mutex> lock(mu_);
    return lookups_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<json> messages_;
  std::vector<int> script_;
  int posts_ = 0, lookups_ = 0;
};

// A Channel speaking to FakePeer over real HTTP, making retries safe with a receipt marker the
// way the GitHub channel does.
class PeerChannel : public Channel {
 public:
  explicit PeerChannel(std::string base) : base_(std::move(base)), http_(MakeHttpClient()) {}
  bool Handles(const std::string& channel) const override { return channel.rfind("github:", 0) == 0; }
  Delivery Perform(const Effect& e, bool outcome_unknown) override {
    std::string marker = "<!-- receipt: " + (e.receipt ? e.receipt->id : std::to_string(e.id)) + " -->";
    if (outcome_unknown) {
      HttpResponse list = http_->Send({"GET", base_ + "/messages", {}, "", 5000, 5000});
      if (!list.ok()) return Delivery::Retry("lookup failed: " + std::to_string(list.status));
      for (const auto& m : json::parse(list.body))
        if (m["body"].get<std::string>().find(marker) != std::string::npos) return Delivery::Done(m["id"]);
    }
    json body = {{"kind", e.kind},
                 {"channel", e.receipt ? e.receipt->channel : e.payload.value("channel", "")},
                 {"body", (e.receipt ? e.receipt->body : e.payload.dump()) + "\n" + marker}};
    HttpResponse r = http_->Send({"POST", base_ + "/messages", {{"Content-Type", "application/json"}}, body.dump(), 5000, 5000});
    if (!r.error.empty()) return Delivery::Retry(r.error);
    if (r.ok()) return Delivery::Done(json::parse(r.body)["id"]);
    if (r.status == 404 || r.status == 410) return Delivery::Gone("HTTP " + std::to_string(r.status));
    if (r.status == 429 || r.status >= 500) {
      TimeMs after = r.Header("retry-after").empty() ? 0 : std::stoll(r.Header("retry-after")) * 1000;
      return Delivery::Retry("HTTP " + std::to_string(r.status), after);
    }
    return Delivery::Failed("HTTP " + std::to_string(r.status));
  }
  // Performs, then "crashes": the outcome never reaches the store.
  std::string base_;
  std::unique_ptr<HttpClient> http_;
};

class EffectsTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    channel_ = std::make_unique<PeerChannel>(peer_.Url());
    MakeLoop();
  }
  void MakeLoop(double jitter = 0, SecretFilter* secrets = nullptr) {
    EffectsOptions o;
    o.jitter = jitter;
    o.secrets = secrets;
    loop_ = std::make_unique<EffectsLoop>(engine_.get(), std::vector<Channel*>{channel_.get()}, &clock_, o, 42);
  }
  int Run() {
    auto n = loop_->RunOnce();
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    return n.ok() ? *n : -1;
  }
  // Runs rounds until nothing more is performed at the current time.
  void Drain() {
    while (Run() > 0) {
    }
  }
  std::string ReceiptStatus(const std::string& id) {
    for (const Receipt& r : Ok(views_->Receipts(std::nullopt)))
      if (r.id == id) return r.status;
    return "missing";
  }

  FakePeer peer_;
  std::unique_ptr<PeerChannel> channel_;
  std::unique_ptr<EffectsLoop> loop_;
};

TEST(Backoff, ScheduleIsExact) {
  EffectsOptions o;
  std::vector<TimeMs> messages, actions;
  for (int a = 1; a <= 8; ++a) messages.push_back(BackoffDelay(true, a, o));
  for (int a = 1; a <= 7; ++a) actions.push_back(BackoffDelay(false, a, o));
  EXPECT_EQ(messages, (std::vector<TimeMs>{5'000, 10'000, 20'000, 40'000, 80'000, 160'000, 300'000, 300'000}));
  EXPECT_EQ(actions, (std::vector<TimeMs>{2'000, 4'000, 8'000, 16'000, 32'000, 60'000, 60'000}));
}

TEST_F(EffectsTest, AcknowledgementGoesOutBeforeTheResultEvenWhenItFailsFirst) {
  TicketId id = AcceptedTicket("c1");
  ASSERT_TRUE(engine_->Send({"result:1", id, "github:acme/widgets:issue:1", MessageKind::kResult, "Done: fixed the typo."}).ok());
  peer_.FailNext({500});
  EXPECT_EQ(Run(), 1);  // the ack fails; the result is held back behind it
  EXPECT_TRUE(peer_.Messages().empty());
  EXPECT_EQ(ReceiptStatus("result:1"), "pending");
  clock_.Advance(5'000);
  Drain();
  auto msgs = peer_.Messages();
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_NE(msgs[0]["body"].get<std::string>().find("ack:ticket:"), std::string::npos);
  EXPECT_NE(msgs[1]["body"].get<std::string>().find("result:1"), std::string::npos);
  EXPECT_EQ(ReceiptStatus("result:1"), "sent");
}

// Issue 33: the filter runs right before a Channel sees an Effect — a message's body and every
// string of an action's payload — on every attempt, and says where it replaced something.
TEST_F(EffectsTest, ASecretInAMessageOrAnActionReachesThePeerOnlyAsTheMarker) {
  SecretFilter secrets(&clock_);
  secrets.Learn("llm.api_key_env", "model-key-0123456789");
  MakeLoop(0, &secrets);
  TicketId id = AcceptedTicket("c1");
  ASSERT_TRUE(engine_->Send({"result:1", id, "github:acme/widgets:issue:1", MessageKind::kResult,
                             "Done. env: KEY=model-key-0123456789 中文🙂"}).ok());
  const std::string token = "gh" + std::string("p_") + "aB3dE5gH7jK9mN1pQ2sT4vW6yZ8aB3dE5gH7j";
  ASSERT_TRUE(engine_->EnqueueAction("note", {{"channel", "github:acme/widgets:issue:1"},
                                              {"idempotency_key", "note:1"},
                                              {"ticket", id},
                                              {"summary", {{"text", "found " + token}}}})
                  .ok());
  EXPECT_EQ(Run(), 2);  // the acknowledgement and the note; the result waits behind the first
  peer_.FailNext({500});
  EXPECT_EQ(Run(), 1);  // the result's first attempt fails: its retry is filtered again
  clock_.Advance(5'000);
  Drain();
  const auto msgs = peer_.Messages();
  ASSERT_EQ(msgs.size(), 3u);
  std::string all;
  for (const json& m : msgs) all += m.dump();
  EXPECT_EQ(all.find("model-key-0123456789"), std::string::npos) << all;
  EXPECT_EQ(all.find(token), std::string::npos) << all;
  EXPECT_NE(all.find("Done. env: KEY=[REDACTED] 中文🙂"), std::string::npos) << all;
  EXPECT_NE(all.find("found [REDACTED]"), std::string::npos) << all;
  EXPECT_GE(secrets.Counts()["outbox"], 2);
  ASSERT_TRUE(secrets.Last().has_value());
  const std::string where = secrets.Last()->where;
  EXPECT_NE(where.find("ticket=" + std::to_string(id)), std::string::npos) << where;
  EXPECT_TRUE(where.rfind("post_message effect=", 0) == 0 || where.rfind("note effect=", 0) == 0) << where;
}

TEST_F(EffectsTest, RetriesFollowTheScheduleExactly) {
  AcceptedTicket("c1");
  peer_.FailNext({500, 500, 500, 500});
  EXPECT_EQ(Run(), 1);
  for (TimeMs delay : {5'000, 10'000, 20'000, 40'000}) {
    clock_.Advance(delay - 1);
    EXPECT_EQ(Run(), 0) << "retried before " << delay << " ms";
    clock_.Advance(1);
    EXPECT_EQ(Run(), 1) << "not retried at " << delay << " ms";
  }
  EXPECT_EQ(peer_.Messages().size(), 1u);
  EXPECT_EQ(peer_.posts(), 5);
}

TEST_F(EffectsTest, PeersRetryAfterIsHonoured) {
  AcceptedTicket("c1");
  peer_.FailNext({429});
  EXPECT_EQ(Run(), 1);
  clock_.Advance(119'999);
  EXPECT_EQ(Run(), 0);
  clock_.Advance(1);
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(peer_.Messages().size(), 1u);
}

TEST_F(EffectsTest, JitterStaysWithinItsBounds) {
  MakeLoop(0.2);
  for (int i = 0; i < 20; ++i) {
    Receive(Comment("t" + std::to_string(i), "alice", true, "hi", 100 + i));
    ASSERT_TRUE(engine_->Send({"m" + std::to_string(i), std::nullopt, "github:acme/widgets:issue:" + std::to_string(100 + i),
                               MessageKind::kAnswer, "hello"}).ok());
  }
  peer_.FailNext(std::vector<int>(20, 503));
  Drain();
  EXPECT_EQ(peer_.posts(), 20);
  clock_.Advance(4'000 - 1);  // 0.8 × 5 s
  EXPECT_EQ(Run(), 0);
  clock_.Advance(2'000 + 1);  // 1.2 × 5 s
  Drain();
  EXPECT_EQ(peer_.Messages().size(), 20u);
}

TEST_F(EffectsTest, ThreeFailuresInARowBecomeOneSystemProblemAndSuccessClearsIt) {
  AcceptedTicket("c1");
  peer_.FailNext({500, 500});
  Run();
  clock_.Advance(5'000);
  Run();
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty());
  peer_.FailNext({500, 500});
  clock_.Advance(10'000);
  Run();
  auto problems = Ok(views_->Problems(options_.problem_threshold));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, "effect:post_message:github");
  clock_.Advance(20'000);
  Run();
  EXPECT_EQ(Ok(views_->Problems(options_.problem_threshold)).size(), 1u) << "still one problem, not one per failure";
  clock_.Advance(40'000);
  EXPECT_EQ(Run(), 1);
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty());
  EXPECT_EQ(peer_.Messages().size(), 1u);
}

TEST_F(EffectsTest, StoppedTicketsPendingMessagesAreCancelledWithAReason) {
  TicketId id = AcceptedTicket("c1");
  ASSERT_TRUE(engine_->Send({"result:1", id, "github:acme/widgets:issue:1", MessageKind::kResult, "Done."}).ok());
  ASSERT_TRUE(engine_->StopTicket(id, "Tess (panel)").ok());
  // Only the Stop's own line goes out (issue 22): the discussion learns why no result comes.
  EXPECT_EQ(Run(), 1);
  ASSERT_EQ(peer_.Messages().size(), 1u);
  EXPECT_THAT(peer_.Messages()[0]["body"].get<std::string>(), HasSubstr("Stopped by Tess from the panel"));
  EXPECT_EQ(ReceiptStatus("ack:ticket:" + std::to_string(id)), "abandoned");
  EXPECT_EQ(ReceiptStatus("result:1"), "abandoned");
  EXPECT_EQ(Ok(views_->OutboxCounts())["abandoned"], 2);
  // A second Stop of the ended Ticket says nothing again.
  ASSERT_TRUE(engine_->StopTicket(id, "Tess (panel)").ok());
  EXPECT_EQ(Run(), 0);
}

TEST_F(EffectsTest, CrashBetweenSendAndRecordNeverPostsTwice) {
  AcceptedTicket("c1");
  // Fault injection: claim and perform, then die before recording the outcome.
  auto claimed = engine_->ClaimDueEffects(10);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_FALSE((*claimed)[0].outcome_unknown);
  Delivery sent = channel_->Perform((*claimed)[0].effect, false);
  ASSERT_EQ(sent.outcome, Delivery::Outcome::kDone);
  loop_.reset();
  Open(MakePolicy("observe"));  // the restarted daemon
  MakeLoop();
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(peer_.posts(), 1) << "posted twice after a crash";
  EXPECT_EQ(peer_.lookups(), 1) << "the channel was not told the outcome was unknown";
  EXPECT_EQ(peer_.Messages().size(), 1u);
  auto receipts = Ok(views_->Receipts(std::nullopt));
  ASSERT_EQ(receipts.size(), 1u);
  EXPECT_EQ(receipts[0].status, "sent");
}

TEST_F(EffectsTest, GoneTargetAbandonsAndMarksTheDiscussionDeleted) {
  TicketId id = AcceptedTicket("c1");
  ASSERT_TRUE(engine_->Send({"result:1", id, "github:acme/widgets:issue:1", MessageKind::kResult, "Done."}).ok());
  peer_.FailNext({410});
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(Run(), 0) << "the later message to a deleted discussion is cancelled, not sent";
  EXPECT_EQ(ReceiptStatus("result:1"), "abandoned");
  EXPECT_EQ(peer_.posts(), 1);
}

TEST_F(EffectsTest, PermanentFailureIsNotRetried) {
  AcceptedTicket("c1");
  peer_.FailNext({403});
  EXPECT_EQ(Run(), 1);
  clock_.Advance(3'600'000);
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(Ok(views_->OutboxCounts())["failed"], 1);
}

TEST_F(EffectsTest, DisabledSourceWaitsAndNothingIsLost) {
  AcceptedTicket("c1");
  ASSERT_TRUE(EngineTestPeer(*engine_).SetSourceEnabled("github", false).ok());
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(Ok(views_->OutboxCounts())["pending"], 1);
  ASSERT_TRUE(EngineTestPeer(*engine_).SetSourceEnabled("github", true).ok());
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(peer_.Messages().size(), 1u);
}

TEST_F(EffectsTest, MessagesWithoutAChannelRaiseAProblemInsteadOfVanishing) {
  Trigger t = Comment("f1", "ou_alice", true, "hi");
  t.source = "feishu";
  t.scope = "chat:oc_support";
  t.threads = {"feishu:chat:oc_support"};
  t.channel = "feishu:chat:oc_support";
  Receive(t);
  ASSERT_TRUE(engine_->Send({"m1", std::nullopt, "feishu:chat:oc_support", MessageKind::kAnswer, "hello"}).ok());
  for (TimeMs delay : {0, 5'000, 10'000}) {
    clock_.Advance(delay);
    Run();
  }
  auto problems = Ok(views_->Problems(options_.problem_threshold));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, "effect:post_message:feishu");
  EXPECT_NE(problems[0].message.find("no channel"), std::string::npos);
  EXPECT_EQ(Ok(views_->OutboxCounts())["pending"], 1);
}

TEST_F(EffectsTest, GitHubMessagesOverTheCharacterCapAreRefusedAndNothingIsQueued) {
  Config config;
  config.github.message_max_chars = 1000;
  options_.message_limit = app::MessageLimitsFor(config);
  Open(MakePolicy("observe"));
  Receive(Comment("c1", "alice", true, "hi"));
  const std::int64_t before = Ok(views_->OutboxCounts())["pending"];
  // 1000 characters of three UTF-8 bytes each fit: the cap counts characters, not bytes.
  std::string fits;
  for (int i = 0; i < 1000; ++i) fits += "\u5b57";
  ASSERT_TRUE(engine_->Send({"fits", std::nullopt, "github:acme/widgets:issue:1", MessageKind::kAnswer, fits}).ok());
  Status refused = engine_->Send({"long", std::nullopt, "github:acme/widgets:issue:1", MessageKind::kAnswer, fits + "x"});
  EXPECT_EQ(refused.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.message().find("at most 1000 characters; this one has 1001"), std::string::npos) << refused.ToString();
  EXPECT_EQ(Ok(views_->OutboxCounts())["pending"], before + 1);
}

TEST_F(EffectsTest, ActionsAreIdempotentAndUseTheActionSchedule) {
  json action = {{"channel", "github:acme/widgets:pull:3"}, {"idempotency_key", "pr:ticket:1"}, {"title", "Fix typo"}};
  ASSERT_TRUE(engine_->EnqueueAction("open_pull_request", action).ok());
  ASSERT_TRUE(engine_->EnqueueAction("open_pull_request", action).ok());
  EXPECT_EQ(engine_->EnqueueAction("open_pull_request", {{"channel", "github:acme/widgets:pull:3"}}).code(),
            Status::Code::kInvalidArgument);
  peer_.FailNext({502});
  EXPECT_EQ(Run(), 1);
  clock_.Advance(1'999);
  EXPECT_EQ(Run(), 0);
  clock_.Advance(1);
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(peer_.Messages().size(), 1u);
  EXPECT_EQ(peer_.Messages()[0]["kind"], "open_pull_request");
}

TEST_F(EffectsTest, AThousandReceiptsDrainWithNoLossAndNoDuplicate) {
  for (int th = 0; th < 100; ++th) Receive(Comment("t" + std::to_string(th), "alice", false, "x", 1000 + th));
  for (int i = 0; i < 1000; ++i)
    ASSERT_TRUE(engine_->Send({"r" + std::to_string(i), std::nullopt, "github:acme/widgets:issue:" + std::to_string(1000 + i % 100),
                               MessageKind::kAnswer, "message " + std::to_string(i)}).ok());
  peer_.FailNext({500, 502, 503});
  for (int round = 0; round < 200 && Ok(views_->OutboxCounts())["pending"] > 0; ++round) {
    Drain();
    clock_.Advance(5'000);
  }
  auto msgs = peer_.Messages();
  ASSERT_EQ(msgs.size(), 1000u);
  std::set<std::string> seen;
  std::map<std::string, int> last_per_thread;
  for (const auto& m : msgs) {
    std::string body = m["body"];
    std::string id = body.substr(body.find("receipt: ") + 9);
    id = id.substr(0, id.find(' '));
    EXPECT_TRUE(seen.insert(id).second) << "duplicate " << id;
    // Per Thread, messages leave in the order they were enqueued.
    int n = std::stoi(id.substr(1));
    std::string thread = m["channel"];
    EXPECT_LT(last_per_thread.count(thread) ? last_per_thread[thread] : -1, n);
    last_per_thread[thread] = n;
  }
  EXPECT_EQ(Ok(views_->OutboxCounts())["done"], 1000);
}


// A channel whose calls throw while `throws` is above zero, the way a type error deep in a
// platform's JSON would; then it delivers through the real peer channel.
class ThrowingChannel : public Channel {
 public:
  explicit ThrowingChannel(Channel* real) : real_(real) {}
  bool Handles(const std::string& channel) const override {
    if (handles_throws > 0) {
      --handles_throws;
      throw std::runtime_error("Handles blew up");
    }
    return real_->Handles(channel);
  }
  Delivery Perform(const Effect& e, bool outcome_unknown) override {
    if (perform_throws > 0) {
      --perform_throws;
      (void)nlohmann::json(5).get<std::string>();  // type_error 302, as value("k", "") on a number
    }
    return real_->Perform(e, outcome_unknown);
  }
  mutable std::atomic<int> handles_throws{0};
  std::atomic<int> perform_throws{0};

 private:
  Channel* real_;
};

// The newest reason recorded on an Effect, read as a person would with sqlite3.
std::string LastEffectError(const std::filesystem::path& db_path) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT last_error FROM effects WHERE last_error IS NOT NULL ORDER BY id DESC LIMIT 1", -1, &s, nullptr) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0) != nullptr)
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return out;
}

TEST_F(EffectsTest, AChannelThatThrowsIsARetryWithTheReasonAndTheOutboxGoesOn) {
  AcceptedTicket("c1");
  ThrowingChannel throwing(channel_.get());
  throwing.perform_throws = 1;
  EffectsOptions no_jitter;
  no_jitter.jitter = 0;
  loop_ = std::make_unique<EffectsLoop>(engine_.get(), std::vector<Channel*>{&throwing}, &clock_, no_jitter, 42);
  EXPECT_EQ(Run(), 1);  // performed (it threw) and recorded as a retry, not an escaped exception
  EXPECT_TRUE(peer_.Messages().empty());
  const std::string error = LastEffectError(dir_ / "superagent.db");
  EXPECT_THAT(error, HasSubstr("unexpected error in delivering effect"));
  EXPECT_THAT(error, HasSubstr("type must be string, but is number"));
  clock_.Advance(5'000);  // the usual message backoff
  Drain();
  EXPECT_EQ(peer_.Messages().size(), 1u);
}

TEST_F(EffectsTest, AnIterationThatThrowsIsRecordedAsAProblemAndTheLoopThreadGoesOn) {
  AcceptedTicket("c1");
  ThrowingChannel throwing(channel_.get());
  throwing.handles_throws = 3;  // outside Perform: escapes RunOnce itself
  EffectsOptions o;
  o.idle_wait_ms = 5;
  EffectsLoop loop(engine_.get(), std::vector<Channel*>{&throwing}, &clock_, o, 42);
  loop.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (peer_.Messages().empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  loop.Stop();
  // Three throws, each caught and counted under one kind, then the loop delivered.
  EXPECT_EQ(peer_.Messages().size(), 1u);
  EXPECT_EQ(throwing.handles_throws, 0);
  // The clean iteration after the throws cleared the problem again; its count was recorded.
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty());
}

TEST_F(EffectsTest, ALoopGuardRaisesAProblemAfterThreeThrowsInARowAndClearsItOnSuccess) {
  LoopGuard guard("the test loop", engine_.get());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(guard.Run([] { throw std::runtime_error("boom 爆"); }));
  auto problems = Ok(views_->Problems(options_.problem_threshold));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, "unexpected:the test loop");
  EXPECT_EQ(problems[0].message, "unexpected error in the test loop: boom 爆");
  EXPECT_EQ(problems[0].failures, 3);
  EXPECT_TRUE(guard.Run([] {}));
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty());
}

}  // namespace
}  // namespace superagent::testing
