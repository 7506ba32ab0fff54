// Issue 34 item 8: a topic opened *later* on an open Ticket's own messages. In a normal group the
// chat listing returns only topic roots, and a root older than the chat's cursor is not listed
// again, so a reply in a topic opened on the request (or on the acknowledgement) while the daemon
// was down was never read. Each round now looks the open Tickets' messages up (GET
// /open-apis/im/v1/messages/<id>, whose thread_id names a topic grown on it) and reads a topic
// found in the same round. The real HTTP client, SQLite, Engine, Effects loop and FeishuChannel against the
// loopback fake; time is a FakeClock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "fake_feishu_server.h"
#include "result_ok.h"
#include "superagent/effects.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"

namespace superagent::feishu {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;
using superagent::testing::FakeFeishu;

constexpr const char* kChats =
    R"("chat:oc_support": { receive_all: false, others_addressed: explicit }=>"chat:oc_a": { receive_all: true }
      "chat:oc_b": { receive_all: true }
      "chat:oc_c": { receive_all: true }
      "chat:oc_d": { receive_all: true })";

class FeishuLateThreadTest : public superagent::testing::EngineTest {
 protected:
  struct Asked {
    TicketId ticket = 0;
    std::string request, ack;  // Feishu message ids
  };

  void SetUp() override {
    EngineTest::SetUp();
    Open(superagent::testing::MakePolicy("observe", kChats));
    fake_ = std::make_unique<FakeFeishu>(&clock_);
    http_ = MakeHttpClient("superagent-test");
    ClientOptions co;
    co.api_url = fake_->url();
    co.app_id = fake_->app_id;
    co.app_secret = fake_->app_secret;
    client_ = std::make_unique<Client>(http_.get(), &clock_, co);
    channel_ = std::make_unique<FeishuChannel>(client_.get(), &clock_);
    source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, options_);
  }
  void TearDown() override {
    source_.reset();
    channel_.reset();
    client_.reset();
    fake_.reset();
    EngineTest::TearDown();
  }

  // The daemon stops and starts again: nothing the Source held in memory survives.
  void Restart() {
    source_.reset();
    Open(superagent::testing::MakePolicy("observe", kChats));
    source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, options_);
  }

  json Cursor(const std::string& name) {
    auto c = Ok(views_->SourceCursors("feishu"));
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
  int ThreadReads(const std::string& tid) {
    int n = 0;
    for (const auto& l : fake_->log())
      n += l.params.count("container_id_type") && l.params.at("container_id_type") == "thread" &&
           l.params.at("container_id") == tid;
    return n;
  }

  // alice asks the agent in `chat` (by realtime, as it happens); the Ticket is accepted and its
  // acknowledgement delivered through the real channel as a reply to the request.
  Asked Ask(const std::string& request, const std::string& chat, const std::string& thread_id = "") {
    json item = FakeFeishu::Item(request, chat, "ou_alice", "@_user_1 请修一下 README 的错别字", clock_.NowMs(), thread_id,
                                 "", BotMention());
    Add(item);
    EXPECT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(item, "group", "ev_" + request), "realtime:ws"), "stored");
    assessor_.answers.push_back(superagent::testing::ScriptedAssessor::Accept());
    EXPECT_EQ(Drain(), 1);
    Asked a;
    auto story = Ok(ExplainNow("feishu:" + request));
    if (!story.contains("ticket_created")) {
      ADD_FAILURE() << "no Ticket for " << request << ": " << story.dump();
      return a;
    }
    a.ticket = story["ticket_created"]["id"].get<TicketId>();
    a.request = request;
    EffectsLoop loop(engine_.get(), {channel_.get()}, &clock_, {}, 1);
    EXPECT_EQ(Ok(loop.RunOnce()), 1) << "the acknowledgement is sent";
    auto lock = fake_->Lock();
    a.ack = fake_->sent.back()["message_id"].get<std::string>();
    EXPECT_EQ(fake_->sent.back()["parent_id"], request);
    return a;
  }

  // The Tickets a stored Trigger reached (explain's tickets_reached).
  std::vector<TicketId> Reached(const std::string& trigger_id) {
    std::vector<TicketId> out;
    const json story = Ok(ExplainNow(trigger_id));
    for (const auto& r : story["tickets_reached"]) out.push_back(r["ticket"].get<TicketId>());
    return out;
  }

  SourceOptions options_;
  std::unique_ptr<FakeFeishu> fake_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<FeishuChannel> channel_;
  std::unique_ptr<Source> source_;
};

// (a) The request was said in the chat, not in a topic; the agent acknowledged it. While the
// daemon was down someone opened a topic on the request and replied there. The first round after
// the start finds the topic on the request and reads it: the reply reaches the Ticket.
TEST_F(FeishuLateThreadTest, ATopicOpenedOnTheRequestWhileTheDaemonWasDownIsReadInTheFirstRound) {
  source_->RunOnce();  // the chats' cursors start now
  clock_.Advance(1'000);
  const Asked asked = Ask("om_req", "oc_a");
  clock_.Advance(60'000);
  RoundReport before = source_->RunOnce();
  EXPECT_EQ(before.messages_checked, 2) << "the request and the acknowledgement";
  EXPECT_EQ(before.late_threads_found, 0);
  EXPECT_EQ(fake_->Lookups("om_req"), 1);
  EXPECT_EQ(fake_->Lookups(asked.ack), 1);

  // Down for an hour: the topic is opened on the request and bob replies in it.
  Restart();
  clock_.Advance(600'000);
  fake_->OpenTopicOn("om_req", "omt_late");
  Add(FakeFeishu::Item("om_r1", "oc_a", "ou_bob", "CONTRIBUTING.md 里也有 teh → the 🙏", clock_.NowMs(), "omt_late",
                       "om_req"));
  clock_.Advance(3'000'000);
  ASSERT_LT(Ok(views_->GetTrigger("feishu:om_req")).trigger.at, Cursor("chat:oc_a")["since"].get<TimeMs>())
      << "the topic's root is older than the chat's cursor: no listing shows the topic";

  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.late_threads_found, 1);
  EXPECT_EQ(ThreadReads("omt_late"), 1) << "the topic is read in the round that found it";
  auto reply = views_->GetTrigger("feishu:om_r1");
  ASSERT_TRUE(reply.ok()) << "the reply in the later topic was never read";
  EXPECT_EQ(reply->via, "poll:thread");
  EXPECT_EQ(reply->trigger.text, "CONTRIBUTING.md 里也有 teh → the 🙏");
  EXPECT_EQ(reply->trigger.threads.front(), "feishu:thread:omt_late");
  EXPECT_THAT(Reached("feishu:om_r1"), Contains(asked.ticket)) << "it is the Ticket's discussion";
  EXPECT_EQ(Ok(ExplainNow("feishu:om_r1"))["intake"]["outcome"], "stored");
  EXPECT_EQ(Cursor("thread:omt_late")["root"], "om_req");
  EXPECT_THAT(Health("threads")->note, HasSubstr("looked up 2 open Ticket message(s) for a topic opened since, found 1"));

  // The topic is known now, in the store: the request is not looked up again, also after another
  // restart, while the topic is read every round the Ticket is open.
  clock_.Advance(60'000);
  source_->RunOnce();
  Restart();
  clock_.Advance(60'000);
  RoundReport later = source_->RunOnce();
  EXPECT_EQ(fake_->Lookups("om_req"), 2);
  EXPECT_EQ(later.messages_checked, 1) << "only the acknowledgement, which has no topic yet";
  EXPECT_EQ(ThreadReads("omt_late"), 3);
  EXPECT_EQ(later.stored, 0);
}

// (b) A mention in a topic opened later on the agent's acknowledgement (an older message of an
// open Ticket): read within one round, addressed, reaching the Ticket.
TEST_F(FeishuLateThreadTest, AMentionInATopicOpenedLaterOnTheAcknowledgementIsReadWithinOneRound) {
  source_->RunOnce();
  clock_.Advance(1'000);
  const Asked asked = Ask("om_req_b", "oc_b");
  clock_.Advance(60'000);
  source_->RunOnce();

  Restart();
  clock_.Advance(120'000);
  fake_->OpenTopicOn(asked.ack, "omt_on_ack");
  Add(FakeFeishu::Item("om_m1", "oc_b", "ou_alice", "@_user_1 顺便把 docs/zh 的标点也改一下 ✍️", clock_.NowMs(), "omt_on_ack",
                       asked.ack, BotMention()));
  clock_.Advance(600'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.late_threads_found, 1);
  auto mention = views_->GetTrigger("feishu:om_m1");
  ASSERT_TRUE(mention.ok()) << "the mention in the later topic was never read";
  EXPECT_TRUE(mention->trigger.addressed);
  EXPECT_EQ(mention->trigger.channel, "feishu:chat:oc_b:reply:om_m1:thread") << "an answer goes into that topic";
  EXPECT_THAT(Reached("feishu:om_m1"), Contains(asked.ticket));
  EXPECT_EQ(Cursor("thread:omt_on_ack")["root"], asked.ack);
  EXPECT_EQ(fake_->Lookups(asked.ack), 2);
}

// Messages whose topic is known are never looked up: a request said in a topic (its topic is the
// Ticket's Thread), the acknowledgement posted into that topic, and a message whose topic some
// path already saw (here the realtime event of a reply in a topic opened on the acknowledgement).
TEST_F(FeishuLateThreadTest, AMessageWhoseTopicIsKnownIsNotLookedUp) {
  source_->RunOnce();
  clock_.Advance(1'000);
  const Asked in_topic = Ask("om_topic_req", "oc_a", "omt_req");
  const Asked plain = Ask("om_plain_req", "oc_b");
  json reply = FakeFeishu::Item("om_on_ack", "oc_b", "ou_bob", "收到 👍", clock_.NowMs(), "omt_seen", plain.ack);
  Add(reply);
  fake_->OpenTopicOn(plain.ack, "omt_seen");
  ASSERT_EQ(*source_->HandleEvent(FakeFeishu::EventFor(reply, "group", "ev_on_ack"), "realtime:ws"), "stored");
  ASSERT_EQ(Cursor("thread:omt_seen")["root"], plain.ack) << "the topic's root is remembered from the reply";

  for (int round = 0; round < 3; ++round) {
    clock_.Advance(60'000);
    RoundReport r = source_->RunOnce();
    EXPECT_EQ(r.messages_checked, 1) << "only the plain request";
  }
  EXPECT_EQ(fake_->Lookups("om_topic_req"), 0);
  EXPECT_EQ(fake_->Lookups(in_topic.ack), 0) << "posted into the request's topic";
  EXPECT_EQ(fake_->Lookups(plain.ack), 0) << "its topic was seen";
  EXPECT_EQ(fake_->Lookups("om_plain_req"), 3);
  EXPECT_EQ(ThreadReads("omt_seen"), 3) << "a topic on an open Ticket's message is read every round";
}

// Every byte from Feishu is hostile: a lookup that fails, or answers what is not a message with a
// topic id, fails that message alone — reported in the round, the threads path's health and the
// log, asked again next round — while the others are looked up and a topic found among them is
// read in the same round. No bytes of a bad thread_id reach a report.
TEST_F(FeishuLateThreadTest, ALookupThatFailsOrAnswersGarbageFailsThatMessageAloneAndIsReported) {
  source_->RunOnce();
  clock_.Advance(1'000);
  const Asked a = Ask("om_qa", "oc_a");
  const Asked b = Ask("om_qb", "oc_b");
  const Asked c = Ask("om_qc", "oc_c");
  const Asked d = Ask("om_qd", "oc_d");
  const std::string huge = "omt_" + std::string(300'000, 'x');
  // One message in the answer, in the listing's shape or not.
  auto answer = [](const json& item) {
    return json{{"code", 0}, {"msg", "success"}, {"data", {{"items", json::array({item})}}}}.dump();
  };
  {
    auto lock = fake_->Lock();
    fake_->fail_message["om_qa"] = 500;
    fake_->message_answer[a.ack] = R"({"code":0,"msg":"success","data":{"items":[{"message_id":)";  // cut off
    fake_->message_answer["om_qb"] = R"({"code":0,"msg":"success","data":{"items":{"message_id":"om_qb"}}})";
    fake_->message_answer[b.ack] = answer({{"message_id", b.ack}, {"thread_id", 7}});
    fake_->message_answer["om_qc"] = answer({{"message_id", "om_qc"}, {"thread_id", huge}});
    fake_->message_answer[c.ack] = answer({{"message_id", c.ack}, {"thread_id", "omt_话题🧵"}});
    fake_->message_answer["om_qd"] = answer({{"message_id", "om_other"}, {"thread_id", "omt_elsewhere"}});
  }
  // The one honest answer: a topic on d's acknowledgement, in Chinese and emoji.
  fake_->OpenTopicOn(d.ack, "omt_ok");
  Add(FakeFeishu::Item("om_ok1", "oc_d", "ou_alice", "@_user_1 还有一处：「欢迎」写成了「欢迎欢迎」😅", clock_.NowMs(),
                       "omt_ok", d.ack, BotMention()));
  clock_.Advance(60'000);

  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.messages_checked, 8);
  EXPECT_EQ(r.messages_failed, 7);
  EXPECT_EQ(r.late_threads_found, 1);
  EXPECT_TRUE(views_->GetTrigger("feishu:om_ok1").ok()) << "the failures before it did not stop the round";
  EXPECT_EQ(r.chats_failed, 0);
  const std::string errors = [&] {
    std::string all;
    for (const auto& e : r.errors) all += e + "\n";
    return all;
  }();
  for (const std::string& id : {std::string("om_qa"), a.ack, std::string("om_qb"), b.ack, std::string("om_qc"), c.ack,
                                std::string("om_qd")})
    EXPECT_THAT(errors, HasSubstr(id + ": ")) << "each failed lookup is reported by its message";
  EXPECT_THAT(errors, AllOf(HasSubstr("500"), HasSubstr("not JSON"), HasSubstr("no data.items list"),
                            HasSubstr("thread_id is number, not text"), HasSubstr("thread_id is not an id (300004 bytes)"),
                            HasSubstr("thread_id is not an id (14 bytes)"), HasSubstr("no item for this message")));
  EXPECT_THAT(errors, AllOf(Not(HasSubstr("xxxxxxxx")), Not(HasSubstr("话题")), Not(HasSubstr("omt_elsewhere"))));
  EXPECT_LT(errors.size(), 2'000u);
  auto health = Health("threads");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->consecutive_failures, 1);
  EXPECT_THAT(health->last_error, HasSubstr("7 message lookup(s) failed, first om_qa: "));
  EXPECT_THAT(health->note, HasSubstr("looked up 8 open Ticket message(s) for a topic opened since, found 1, 7 failed"));
  EXPECT_TRUE(Cursor("thread:omt_elsewhere").is_null()) << "a topic of another message is not followed";

  // Next round the failed ones are asked again; the one with a topic is not.
  clock_.Advance(60'000);
  RoundReport again = source_->RunOnce();
  EXPECT_EQ(again.messages_checked, 7);
  EXPECT_EQ(fake_->Lookups("om_qa"), 2);
  EXPECT_EQ(fake_->Lookups(d.ack), 1);
  EXPECT_EQ(Health("threads")->consecutive_failures, 2);
  // Feishu mends: the path is healthy again.
  {
    auto lock = fake_->Lock();
    fake_->fail_message.clear();
    fake_->message_answer.clear();
  }
  clock_.Advance(60'000);
  RoundReport mended = source_->RunOnce();
  EXPECT_EQ(mended.messages_failed, 0);
  EXPECT_EQ(Health("threads")->consecutive_failures, 0);
}

// A message Feishu says is gone (recalled or deleted) is not asked again, and is no failure.
TEST_F(FeishuLateThreadTest, AMessageFeishuSaysIsGoneIsNotAskedAgain) {
  source_->RunOnce();
  clock_.Advance(1'000);
  const Asked asked = Ask("om_gone", "oc_a");
  {
    auto lock = fake_->Lock();
    for (auto it = fake_->messages.begin(); it != fake_->messages.end();)
      it = (*it)["message_id"] == "om_gone" ? fake_->messages.erase(it) : it + 1;
  }
  for (int round = 0; round < 3; ++round) {
    clock_.Advance(60'000);
    RoundReport r = source_->RunOnce();
    EXPECT_EQ(r.messages_failed, 0);
  }
  EXPECT_EQ(fake_->Lookups("om_gone"), 1);
  EXPECT_EQ(fake_->Lookups(asked.ack), 3);
  EXPECT_EQ(Health("threads")->consecutive_failures, 0);
}

// At most message_checks_per_round lookups a round; the least lately asked go first, so every
// message is asked within a few rounds, and a topic found is still read in the round that found it.
TEST_F(FeishuLateThreadTest, LookupsAreCappedPerRoundAndTakeTurns) {
  options_.message_checks_per_round = 4;
  source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, options_);
  source_->RunOnce();
  clock_.Advance(1'000);
  std::vector<Asked> asked;
  for (const char* chat : {"oc_a", "oc_b", "oc_c"}) asked.push_back(Ask(std::string("om_cap_") + chat, chat));
  std::vector<std::string> ids;
  for (const Asked& a : asked) ids.insert(ids.end(), {a.request, a.ack});
  auto lookups = [&] {
    std::vector<int> n;
    for (const std::string& id : ids) n.push_back(fake_->Lookups(id));
    return n;
  };

  clock_.Advance(60'000);
  RoundReport first = source_->RunOnce();
  EXPECT_EQ(first.messages_checked, 4);
  EXPECT_EQ(first.messages_deferred, 2);
  EXPECT_EQ(fake_->Lookups(), 4);
  EXPECT_THAT(Health("threads")->note, HasSubstr("looked up 4 open Ticket message(s) for a topic opened since, 2 deferred "
                                                 "to the next (4 a round)"));
  // The two left over are asked first next round; a topic opened on one of them meanwhile is read then.
  std::vector<std::string> waiting;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (lookups()[i] == 0) waiting.push_back(ids[i]);
  ASSERT_EQ(waiting.size(), 2u);
  fake_->OpenTopicOn(waiting[1], "omt_cap");
  Add(FakeFeishu::Item("om_cap_reply", "oc_c", "ou_bob", "这个也顺手改了吧", clock_.NowMs(), "omt_cap", waiting[1]));
  clock_.Advance(60'000);
  RoundReport second = source_->RunOnce();
  EXPECT_EQ(second.messages_checked, 4);
  EXPECT_EQ(fake_->Lookups(), 8);
  for (const std::string& id : waiting) EXPECT_EQ(fake_->Lookups(id), 1) << id << " waited more than one round";
  EXPECT_EQ(second.late_threads_found, 1);
  EXPECT_TRUE(views_->GetTrigger("feishu:om_cap_reply").ok());
  // Five messages without a topic are left, four asked a round in strict rotation: over four
  // rounds each is asked three or four times (16 lookups), never two rounds in a row skipped.
  const std::vector<int> after_two = lookups();
  for (int round = 0; round < 4; ++round) {
    clock_.Advance(60'000);
    RoundReport r = source_->RunOnce();
    EXPECT_EQ(r.messages_checked, 4);
  }
  const std::vector<int> after_six = lookups();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == waiting[1]) continue;
    EXPECT_GE(after_six[i] - after_two[i], 3) << ids[i];
    EXPECT_LE(after_six[i] - after_two[i], 4) << ids[i];
  }
  EXPECT_EQ(fake_->Lookups(waiting[1]), 1) << "its topic is known";
}

// A Ticket that ended is not looked at: its messages are no longer asked about.
TEST_F(FeishuLateThreadTest, AnEndedTicketsMessagesAreNotLookedUp) {
  source_->RunOnce();
  clock_.Advance(1'000);
  const Asked asked = Ask("om_done", "oc_a");
  clock_.Advance(60'000);
  source_->RunOnce();
  ASSERT_EQ(fake_->Lookups("om_done"), 1);
  ASSERT_TRUE(engine_->StopTicket(asked.ticket, "panel:operator").ok());
  clock_.Advance(60'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.messages_checked, 0);
  EXPECT_EQ(fake_->Lookups(), 2);
}

}  // namespace
}  // namespace superagent::feishu
