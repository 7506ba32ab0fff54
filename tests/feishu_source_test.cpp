// The Feishu Source end to end against the loopback fake: the real HTTP client, real SQLite, real
// Engine, a FakeClock. Scenarios of seed 000 / issue 8: per-chat cursors, duplicates across
// paths, chat_not_allowed, topic replies via the thread container, subscribed-thread polling.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "fake_feishu_server.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"
#include "superagent/metrics.h"
#include "result_ok.h"

namespace superagent::feishu {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using superagent::testing::FakeFeishu;

constexpr const char* kThreeChats =
    R"("chat:oc_support": { receive_all: false, others_addressed: explicit }=>"chat:oc_a": { receive_all: true }
      "chat:oc_b": { receive_all: true }
      "chat:oc_c": { receive_all: true })";

class FeishuSourceTest : public superagent::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    Open(superagent::testing::MakePolicy("observe", kThreeChats));
    t0_ = clock_.NowMs();
    fake_ = std::make_unique<FakeFeishu>(&clock_);
    http_ = MakeHttpClient("superagent-test");
    ClientOptions co;
    co.api_url = fake_->url();
    co.app_id = fake_->app_id;
    co.app_secret = fake_->app_secret;
    client_ = std::make_unique<Client>(http_.get(), &clock_, co);
    source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, options_);
  }
  void TearDown() override {
    source_.reset();
    client_.reset();
    fake_.reset();
    EngineTest::TearDown();
  }

  json Cursor(const std::string& name) {
    auto c = views_->SourceCursors("feishu").value();
    return c.count(name) ? json::parse(c[name]) : json();
  }
  std::optional<SourceHealth> Health(const std::string& path) {
    for (const auto& h : Ok(views_->SourcesHealth()))
      if (h.source == "feishu" && h.path == path) return h;
    return std::nullopt;
  }
  void Add(const json& item) {
    auto lock = fake_->Lock();
    fake_->messages.push_back(item);
  }
  json BotMention() { return json::array({FakeFeishu::HistoryMention("@_user_1", fake_->bot_open_id, "Agent")}); }

  TimeMs t0_ = 0;
  SourceOptions options_;
  std::unique_ptr<FakeFeishu> fake_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<Source> source_;
};

TEST_F(FeishuSourceTest, FirstSightRecordsNowThenEachChatAdvancesOnItsOwn) {
  Add(FakeFeishu::Item("om_old", "oc_a", "ou_alice", "said before the agent came", t0_ - 60'000));
  RoundReport first = source_->RunOnce();
  EXPECT_EQ(first.stored, 0) << "a chat seen first is not backfilled before now";
  EXPECT_EQ(Cursor("chat:oc_a")["since"], t0_);
  EXPECT_EQ(fake_->Count("GET", "/open-apis/im/v1/messages"), 0);

  Add(FakeFeishu::Item("om_a1", "oc_a", "ou_alice", "in A", t0_ + 10'000));
  Add(FakeFeishu::Item("om_b1", "oc_b", "ou_alice", "in B", t0_ + 10'000));
  Add(FakeFeishu::Item("om_c1", "oc_c", "ou_alice", "in C", t0_ + 10'000));
  Add(FakeFeishu::Item("om_c2", "oc_c", "ou_alice", "more C", t0_ + 11'000));
  Add(FakeFeishu::Item("om_c3", "oc_c", "ou_alice", "paged C", t0_ + 12'000));
  {
    auto lock = fake_->Lock();
    fake_->fail_container["oc_b"] = 500;
  }
  clock_.Advance(20'000);
  RoundReport second = source_->RunOnce();
  EXPECT_EQ(second.stored, 4) << "A and C are read although B fails";
  EXPECT_EQ(second.chats_failed, 1);
  EXPECT_EQ(Cursor("chat:oc_a")["since"], t0_ + 20'000 - 5'000) << "next cursor = read start - 5 s";
  EXPECT_EQ(Cursor("chat:oc_c")["since"], t0_ + 20'000 - 5'000);
  EXPECT_EQ(Cursor("chat:oc_b")["since"], t0_) << "B keeps its cursor";
  EXPECT_THAT(Cursor("chat:oc_b")["error"].get<std::string>(), HasSubstr("500"));
  auto health = Health("backfill");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->consecutive_failures, 1);
  EXPECT_THAT(health->last_error, HasSubstr("oc_b"));
  EXPECT_TRUE(views_->GetTrigger("feishu:om_c3").ok()) << "the second page of C was read";
  EXPECT_FALSE(views_->GetTrigger("feishu:om_b1").ok());

  {
    auto lock = fake_->Lock();
    fake_->fail_container.clear();
  }
  clock_.Advance(60'000);
  RoundReport third = source_->RunOnce();
  EXPECT_EQ(third.stored, 1);
  EXPECT_EQ(third.chats_failed, 0);
  EXPECT_TRUE(views_->GetTrigger("feishu:om_b1").ok()) << "B caught up from its own cursor";
  EXPECT_EQ(Health("backfill")->consecutive_failures, 0);
  EXPECT_FALSE(Cursor("chat:oc_b").contains("error"));
  // Start times are seconds on the wire.
  bool seconds = false;
  for (const auto& l : fake_->log())
    if (l.params.count("start_time")) seconds |= l.params.at("start_time") == std::to_string((t0_ - 5'000 + 20'000) / 1000);
  EXPECT_TRUE(seconds);
}

// Issue 23: the chat listing starts at a whole second, so a chat seen first at 12.700 s would
// have its messages from 12.000 s read too: those came before the Source knew the chat.
TEST_F(FeishuSourceTest, AChatSeenFirstReadsNothingFromBeforeItsCursorsMillisecond) {
  clock_.Advance(700);
  const TimeMs first_sight = clock_.NowMs();
  ASSERT_NE(first_sight % 1000, 0);
  source_->RunOnce();
  ASSERT_EQ(Cursor("chat:oc_a")["since"], first_sight);
  Add(FakeFeishu::Item("om_before", "oc_a", "ou_alice", "早了 300 毫秒", first_sight - 300));
  Add(FakeFeishu::Item("om_after", "oc_a", "ou_alice", "just after", first_sight + 1));
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.stored, 1);
  EXPECT_FALSE(views_->GetTrigger("feishu:om_before").ok()) << "it came before the chat was known";
  EXPECT_TRUE(views_->GetTrigger("feishu:om_after").ok());
}

// docs/007: every Source's polling rounds are in /metrics (superagent_source_poll_*), Feishu's too.
TEST_F(FeishuSourceTest, EveryRoundIsInThePollMetricsAndOneWithAFailedChatCountsAsFailed) {
  const metrics::SourceRounds before = metrics::ProcessRuntime().Rounds()["feishu"];
  source_->RunOnce();  // every chat seen first: a clean round
  {
    auto lock = fake_->Lock();
    fake_->fail_container["oc_b"] = 500;
  }
  clock_.Advance(20'000);
  RoundReport failed = source_->RunOnce();
  ASSERT_EQ(failed.chats_failed, 1);
  const metrics::SourceRounds after = metrics::ProcessRuntime().Rounds()["feishu"];
  EXPECT_EQ(after.rounds - before.rounds, 2);
  EXPECT_EQ(after.failed - before.failed, 1);
  // As the panel's /metrics renders them.
  metrics::Snapshot snapshot;
  snapshot.rounds = metrics::ProcessRuntime().Rounds();
  const std::string text = metrics::RenderPrometheus(snapshot);
  EXPECT_THAT(text, HasSubstr("superagent_source_poll_seconds_count{source=\"feishu\"} " + std::to_string(after.rounds) + "\n"));
  EXPECT_THAT(text, HasSubstr("superagent_source_poll_failures_total{source=\"feishu\"} " + std::to_string(after.failed) + "\n"));
  EXPECT_THAT(text, HasSubstr("superagent_source_poll_last_seconds{source=\"feishu\"} "));
}

TEST_F(FeishuSourceTest, AMessageSeenByRealtimeAndByBackfillIsADuplicate) {
  source_->RunOnce();  // cursors start at t0
  json item = FakeFeishu::Item("om_rt", "oc_a", "ou_alice", "@_user_1 please fix the typo", t0_ + 1'000, "", "",
                               BotMention());
  auto outcome = source_->HandleEvent(FakeFeishu::EventFor(item, "group", "ev-1"), "realtime:ws");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(*outcome, "stored");
  Add(item);
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.stored, 0);
  EXPECT_EQ(r.duplicate, 1);
  auto rec = views_->GetTrigger("feishu:om_rt");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->via, "realtime:ws");
  EXPECT_TRUE(rec->trigger.addressed);
  EXPECT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(item, "group", "ev-1"), "realtime:ws"), "duplicate")
      << "a re-pushed event changes nothing";
  EXPECT_EQ(Health("realtime")->consecutive_failures, 0);
}

TEST_F(FeishuSourceTest, AChatNotConfiguredIsFilteredWithTheReasonVisibleInExplain) {
  json item = FakeFeishu::Item("om_x", "oc_elsewhere", "ou_alice", "talking among ourselves", t0_);
  auto outcome = source_->HandleEvent(FakeFeishu::EventFor(item, "group", "ev-x"), "realtime:ws");
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(*outcome, "filtered");
  auto rec = views_->GetTrigger("feishu:om_x");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->outcome, IntakeOutcome::kFiltered);
  EXPECT_EQ(rec->filter_reason, "chat_not_allowed");
  auto story = ExplainNow("feishu:om_x");
  ASSERT_TRUE(story.ok());
  EXPECT_THAT(story->dump(), HasSubstr("chat_not_allowed"));
  // The same chat @-mentioning the agent is not filtered by the Source (other_mentions decides).
  json mention = FakeFeishu::Item("om_y", "oc_elsewhere", "ou_alice", "@_user_1 help", t0_, "", "", BotMention());
  EXPECT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(mention, "group", "ev-y"), "realtime:ws"), "stored");
}

TEST_F(FeishuSourceTest, ATopicReplyOnlyTheThreadContainerReturnsIsFound) {
  source_->RunOnce();
  Add(FakeFeishu::Item("om_root", "oc_a", "ou_alice", "topic: flaky test", t0_ + 1'000, "omt_1"));
  Add(FakeFeishu::Item("om_reply", "oc_a", "ou_bob", "@_user_1 can you look?", t0_ + 2'000, "omt_1", "om_root",
                       BotMention()));
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.stored, 2);
  auto rec = views_->GetTrigger("feishu:om_reply");
  ASSERT_TRUE(rec.ok()) << "the reply is only reachable through the thread container";
  EXPECT_EQ(rec->trigger.threads.front(), "feishu:thread:omt_1");
  EXPECT_EQ(rec->trigger.channel, "feishu:chat:oc_a:reply:om_reply:thread");
  bool thread_read = false;
  for (const auto& l : fake_->log())
    thread_read |= l.params.count("container_id_type") && l.params.at("container_id_type") == "thread" &&
                   l.params.at("container_id") == "omt_1" && !l.params.count("start_time");
  EXPECT_TRUE(thread_read);
  EXPECT_FALSE(Cursor("thread:omt_1").is_null()) << "an addressed topic is followed from now on";
}

TEST_F(FeishuSourceTest, FollowedThreadsArePolledEachWithItsOwnPollError) {
  source_->RunOnce();
  // Two topics whose roots predate the chat cursor: backfill never sees their replies.
  Add(FakeFeishu::Item("om_r2", "oc_a", "ou_alice", "old topic", t0_ - 3'600'000, "omt_2"));
  Add(FakeFeishu::Item("om_r3", "oc_a", "ou_alice", "another", t0_ - 3'600'000, "omt_3"));
  for (const auto& [mid, tid] : {std::pair{"om_m2", "omt_2"}, std::pair{"om_m3", "omt_3"}}) {
    json mention = FakeFeishu::Item(mid, "oc_a", "ou_alice", "@_user_1 please check", t0_ + 1'000, tid,
                                    tid == std::string("omt_2") ? "om_r2" : "om_r3", BotMention());
    ASSERT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(mention, "group", mid), "realtime:ws"), "stored");
    Add(mention);
  }
  Add(FakeFeishu::Item("om_late", "oc_a", "ou_alice", "missed while offline", t0_ + 5'000, "omt_2", "om_r2"));
  {
    auto lock = fake_->Lock();
    fake_->fail_container["omt_3"] = 503;
  }
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.threads_read, 1);
  EXPECT_EQ(r.threads_failed, 1);
  auto late = views_->GetTrigger("feishu:om_late");
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->via, "poll:thread");
  EXPECT_FALSE(Cursor("thread:omt_2").contains("pollError"));
  ASSERT_TRUE(Cursor("thread:omt_3").contains("pollError"));
  EXPECT_THAT(Cursor("thread:omt_3")["pollError"]["message"].get<std::string>(), HasSubstr("503"));
  EXPECT_EQ(Health("threads")->consecutive_failures, 1);

  // Polling alone does not keep a thread followed: after daily polls for fifteen quiet days
  // neither is polled any more (no live Ticket holds them).
  {
    auto lock = fake_->Lock();
    fake_->fail_container.clear();
  }
  for (int day = 0; day < 14; ++day) {
    clock_.Advance(24LL * 3600 * 1000);
    source_->RunOnce();
  }
  clock_.Advance(24LL * 3600 * 1000);
  const int before = fake_->Count("GET", "/open-apis/im/v1/messages");
  RoundReport quiet = source_->RunOnce();
  EXPECT_EQ(quiet.threads_read, 0);
  EXPECT_EQ(fake_->Count("GET", "/open-apis/im/v1/messages") - before, 3) << "only the three chats";
}

// Issue 23: a reply inside an older topic, posted while the daemon was down, shows in no chat
// listing (only the topic's root does) and its realtime event is gone. Every topic the Source has
// seen in a chat it reads is followed, so the thread read after the restart finds the reply.
TEST_F(FeishuSourceTest, ATopicReplyPostedWhileTheDaemonWasDownIsReadAfterItStarts) {
  source_->RunOnce();
  json root = FakeFeishu::Item("om_root9", "oc_a", "ou_alice", "部署坏了，谁看一下？", t0_ + 1'000, "omt_9");
  Add(root);
  ASSERT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(root, "group", "ev_root9"), "realtime:ws"), "stored");
  clock_.Advance(60'000);
  source_->RunOnce();
  ASSERT_FALSE(Cursor("thread:omt_9").is_null()) << "an unaddressed topic in a chat the Source reads is followed";

  // The daemon stops; an hour later, the reply is posted; then it starts again.
  source_.reset();
  Open(superagent::testing::MakePolicy("observe", kThreeChats));
  clock_.Advance(3'600'000);
  Add(FakeFeishu::Item("om_reply9", "oc_a", "ou_bob", "@_user_1 能修一下吗 🙏", clock_.NowMs(), "omt_9", "om_root9",
                       BotMention()));
  clock_.Advance(120'000);
  source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, options_);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.threads_read, 1);
  auto reply = views_->GetTrigger("feishu:om_reply9");
  ASSERT_TRUE(reply.ok()) << "the reply was never received";
  EXPECT_EQ(reply->via, "poll:thread");
  EXPECT_TRUE(reply->trigger.addressed);
  auto story = Ok(ExplainNow("feishu:om_reply9"));
  EXPECT_EQ(story["intake"]["outcome"], "stored") << story.dump();
  EXPECT_EQ(Cursor("thread:omt_9")["last_activity"], reply->trigger.at);
  EXPECT_THAT(Health("threads")->note, HasSubstr("following 1 topic thread(s); read 1 this round"));
}

// Issue 23: following every topic is bounded. At most thread_reads_per_round threads are read a
// round — an open Ticket's first, then those waiting longest — and the rest are deferred, said in
// the threads path's health; a topic quiet for a day is read hourly, not every round.
TEST_F(FeishuSourceTest, TopicReadsAreCappedPerRoundOpenTicketsFirstAndQuietTopicsReadLessOften) {
  options_.thread_reads_per_round = 2;
  source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, options_);
  source_->RunOnce();
  // Five topics seen by realtime only; the last one asks the agent for work and gets a Ticket.
  for (const char* tid : {"omt_a", "omt_b", "omt_c", "omt_d"}) {
    // From someone not on the people list: stored and followed, ignored by the Gate without a model.
    json root = FakeFeishu::Item(std::string("om_") + tid, "oc_a", "ou_visitor", "topic", t0_ + 1'000, tid);
    ASSERT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(root, "group", std::string("ev_") + tid), "realtime:ws"), "stored");
  }
  json ask = FakeFeishu::Item("om_omt_e", "oc_a", "ou_alice", "@_user_1 please fix the typo", t0_ + 1'000, "omt_e", "",
                              BotMention());
  ASSERT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(ask, "group", "ev_omt_e"), "realtime:ws"), "stored");
  assessor_.answers.push_back(superagent::testing::ScriptedAssessor::Accept());
  Drain();
  ASSERT_EQ(assessor_.calls, 1) << "only the request needed the model";
  ASSERT_THAT(Ok(views_->OpenTicketThreads("feishu:thread:")), ::testing::Contains("feishu:thread:omt_e"));

  auto reads_of = [&](const std::string& tid) {
    int n = 0;
    for (const auto& l : fake_->log())
      n += l.params.count("container_id_type") && l.params.at("container_id_type") == "thread" &&
           l.params.at("container_id") == tid;
    return n;
  };
  clock_.Advance(60'000);
  RoundReport first = source_->RunOnce();
  EXPECT_EQ(first.threads_read, 2);
  EXPECT_EQ(first.threads_deferred, 3);
  EXPECT_EQ(reads_of("omt_e"), 1) << "the open Ticket's topic comes first";
  EXPECT_THAT(Health("threads")->note,
              HasSubstr("following 5 topic thread(s); read 2 this round, 3 due ones deferred to the next "
                        "(thread_reads_per_round 2)"));
  for (int round = 0; round < 3; ++round) {
    clock_.Advance(60'000);
    source_->RunOnce();
  }
  EXPECT_EQ(reads_of("omt_e"), 4) << "every round";
  for (const char* tid : {"omt_a", "omt_b", "omt_c", "omt_d"}) EXPECT_GE(reads_of(tid), 1) << tid << " waited too long";

  // A day later the quiet topics are due hourly: one read each, then none for the next rounds.
  options_.thread_reads_per_round = 20;
  source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, options_);
  clock_.Advance(24 * 3'600'000LL);
  source_->RunOnce();
  const int after_day = reads_of("omt_a");
  for (int round = 0; round < 5; ++round) {
    clock_.Advance(60'000);
    source_->RunOnce();
  }
  EXPECT_EQ(reads_of("omt_a"), after_day) << "a topic quiet for a day is not read every minute";
  EXPECT_EQ(reads_of("omt_e"), 4 + 6) << "the open Ticket's topic still is";
  clock_.Advance(3'600'000);
  source_->RunOnce();
  EXPECT_EQ(reads_of("omt_a"), after_day + 1);

  // Fourteen quiet days later the topics are forgotten — their cursors erased, so the store holds
  // as many as are followed — except the open Ticket's.
  clock_.Advance(14 * 24 * 3'600'000LL);
  source_->RunOnce();
  auto cursors = Ok(views_->SourceCursors("feishu"));
  for (const char* tid : {"omt_a", "omt_b", "omt_c", "omt_d"})
    EXPECT_EQ(cursors.count(std::string("thread:") + tid), 0u) << tid << " is still remembered";
  EXPECT_EQ(cursors.count("thread:omt_e"), 1u);
  const int quiet_reads = reads_of("omt_a");
  clock_.Advance(3'600'000);
  source_->RunOnce();
  EXPECT_EQ(reads_of("omt_a"), quiet_reads) << "a forgotten topic is not read";
  // A new reply seen by realtime follows it again, from that reply on.
  json reply = FakeFeishu::Item("om_a_late", "oc_a", "ou_visitor", "还在吗？", clock_.NowMs(), "omt_a", "om_omt_a");
  ASSERT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(reply, "group", "ev_a_late"), "realtime:ws"), "stored");
  EXPECT_EQ(Ok(views_->SourceCursors("feishu")).count("thread:omt_a"), 1u);
}

// SPEC §3.5: a topic is followed for 14 days after its last activity or its Ticket's end,
// whichever is later; a Ticket that worked three quiet weeks keeps its topic read after it ends.
TEST_F(FeishuSourceTest, ATopicIsFollowedForFourteenDaysAfterItsTicketEnds) {
  source_->RunOnce();
  json ask = FakeFeishu::Item("om_omt_e", "oc_a", "ou_alice", "@_user_1 请修一下错字", t0_ + 1'000, "omt_e", "",
                              BotMention());
  ASSERT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(ask, "group", "ev_omt_e"), "realtime:ws"), "stored");
  assessor_.answers.push_back(superagent::testing::ScriptedAssessor::Accept());
  Drain();
  ASSERT_EQ(Ok(views_->OpenTicketThreads("feishu:thread:")), std::vector<std::string>{"feishu:thread:omt_e"});
  auto reads = [&] {
    int n = 0;
    for (const auto& l : fake_->log())
      n += l.params.count("container_id_type") && l.params.at("container_id_type") == "thread" &&
           l.params.at("container_id") == "omt_e";
    return n;
  };
  clock_.Advance(21LL * 24 * 3'600'000);  // three quiet weeks of work
  source_->RunOnce();
  ASSERT_TRUE(engine_->StopTicket(1, "alice").ok());
  const int before = reads();
  clock_.Advance(60'000);
  source_->RunOnce();
  EXPECT_EQ(reads(), before + 1) << "ended a minute ago: still followed";
  EXPECT_EQ(Ok(views_->SourceCursors("feishu")).count("thread:omt_e"), 1u);
  clock_.Advance(15LL * 24 * 3'600'000);
  source_->RunOnce();
  EXPECT_EQ(Ok(views_->SourceCursors("feishu")).count("thread:omt_e"), 0u) << "15 days after the end: forgotten";
}

TEST_F(FeishuSourceTest, AnAllowedDirectChatBecomesKnownAndIsBackfilled) {
  source_->RunOnce();
  json hello = FakeFeishu::Item("om_d1", "oc_dm", "ou_alice", "hi", t0_ + 1'000);
  EXPECT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(hello, "p2p", "ev-d1"), "realtime:ws"), "stored");
  ASSERT_FALSE(Cursor("chat:oc_dm").is_null());
  EXPECT_TRUE(Cursor("chat:oc_dm")["direct"].get<bool>());
  // A stranger's direct chat is not remembered for backfill.
  json stranger = FakeFeishu::Item("om_s1", "oc_dm2", "ou_stranger", "hi", t0_ + 1'000);
  source_->HandleEvent(FakeFeishu::EventFor(stranger, "p2p", "ev-s1"), "realtime:ws");
  EXPECT_TRUE(Cursor("chat:oc_dm2").is_null());

  Add(FakeFeishu::Item("om_d2", "oc_dm", "ou_alice", "please fix the README typo", t0_ + 3'000));
  clock_.Advance(10'000);
  source_->RunOnce();
  auto rec = views_->GetTrigger("feishu:om_d2");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->trigger.scope, "direct");
  EXPECT_TRUE(rec->trigger.addressed);
  EXPECT_EQ(rec->trigger.channel, "feishu:chat:oc_dm");
}

TEST_F(FeishuSourceTest, OwnMessagesAreFilteredAndMalformedItemsCounted) {
  source_->RunOnce();
  json own = FakeFeishu::Item("om_own", "oc_a", fake_->app_id, "I'll fix it.", t0_ + 1'000);
  own["sender"] = {{"id", fake_->app_id}, {"id_type", "app_id"}, {"sender_type", "app"}};
  Add(own);
  json broken = FakeFeishu::Item("om_bad", "oc_a", "ou_alice", "x", t0_ + 2'000);
  broken["body"]["content"] = "not json";
  Add(broken);
  json sticker = FakeFeishu::Item("om_stk", "oc_a", "ou_alice", "x", t0_ + 3'000);
  sticker["msg_type"] = "sticker";
  sticker["body"]["content"] = R"({"file_key":"f"})";
  Add(sticker);
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.filtered, 1);
  EXPECT_EQ(r.skipped, 2);
  EXPECT_EQ(views_->GetTrigger("feishu:om_own")->filter_reason, "own_message");
  EXPECT_EQ(Health("backfill")->skipped_items, 2);
  EXPECT_EQ(Health("backfill")->consecutive_failures, 0) << "skipping items is not a failed read";
}

TEST_F(FeishuSourceTest, ARejectedTokenIsMintedAgainOnce) {
  source_->RunOnce();
  EXPECT_EQ(fake_->token_mints, 1);
  {
    auto lock = fake_->Lock();
    fake_->token = "t-fake-2";  // the platform revoked the old one
  }
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.chats_failed, 0);
  EXPECT_EQ(fake_->token_mints, 2);
  // Near expiry it is renewed before use.
  clock_.Advance(7200'000 - 120'000);
  source_->RunOnce();
  EXPECT_EQ(fake_->token_mints, 3);
}

}  // namespace
}  // namespace superagent::feishu
