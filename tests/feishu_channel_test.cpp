// FeishuChannel against the loopback fake: replies in the triggering message's thread, plain
// chat messages for direct chats, the receipt id as uuid (a retried send is not doubled), the
// 100-word limit, 429 resets and the per-chat send rate; and once end to end through the outbox.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "fake_feishu_server.h"
#include "superagent/effects.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"
#include "result_ok.h"

namespace superagent::feishu {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using superagent::testing::FakeFeishu;

class FeishuChannelTest : public superagent::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    fake_ = std::make_unique<FakeFeishu>(&clock_);
    fake_->messages.push_back(FakeFeishu::Item("om_1", "oc_a", "ou_alice", "@bot fix it", clock_.NowMs(), "omt_1"));
    fake_->messages.push_back(FakeFeishu::Item("om_2", "oc_a", "ou_alice", "plain", clock_.NowMs()));
    http_ = MakeHttpClient("superagent-test");
    ClientOptions co;
    co.api_url = fake_->url();
    co.app_id = fake_->app_id;
    co.app_secret = fake_->app_secret;
    client_ = std::make_unique<Client>(http_.get(), &clock_, co);
    channel_ = std::make_unique<FeishuChannel>(client_.get(), &clock_);
  }
  void TearDown() override {
    channel_.reset();
    client_.reset();
    fake_.reset();
    EngineTest::TearDown();
  }
  static Effect Message(const std::string& id, const std::string& channel, const std::string& body = "On it.") {
    Effect e;
    e.id = 1;
    e.kind = "post_message";
    Receipt r;
    r.id = id;
    r.channel = channel;
    r.thread = "feishu:thread:omt_1";
    r.body = body;
    e.receipt = r;
    return e;
  }
  std::vector<json> Sent() {
    auto lock = fake_->Lock();
    return fake_->sent;
  }

  std::unique_ptr<FakeFeishu> fake_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<FeishuChannel> channel_;
};

TEST_F(FeishuChannelTest, RepliesInTheTopicWithTheReceiptIdAsUuid) {
  EXPECT_TRUE(channel_->Handles("feishu:chat:oc_a:reply:om_1:thread"));
  EXPECT_FALSE(channel_->Handles("github:acme/widgets:issue:1"));
  Delivery d = channel_->Perform(Message("ack-1", "feishu:chat:oc_a:reply:om_1:thread"), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  auto sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0]["uuid"], "ack-1");
  EXPECT_EQ(sent[0]["parent_id"], "om_1");
  EXPECT_EQ(sent[0]["thread_id"], "omt_1");
  EXPECT_TRUE(sent[0]["reply_in_thread"].get<bool>());
  EXPECT_EQ(json::parse(sent[0]["body"]["content"].get<std::string>())["text"], "On it.");
  EXPECT_EQ(d.external_id, sent[0]["message_id"]);
  // A plain group message gets a quoted reply, not a new topic.
  ASSERT_EQ(channel_->Perform(Message("ack-2", "feishu:chat:oc_a:reply:om_2"), false).outcome, Delivery::Outcome::kDone);
  EXPECT_FALSE(Sent()[1]["reply_in_thread"].get<bool>());
}

TEST_F(FeishuChannelTest, ARetriedSendWithTheSameUuidIsNotDoubled) {
  Delivery first = channel_->Perform(Message("ack-3", "feishu:chat:oc_a:reply:om_1:thread"), false);
  ASSERT_EQ(first.outcome, Delivery::Outcome::kDone);
  // The process died before recording: the Effects loop retries with outcome_unknown.
  clock_.Advance(2'000);
  Delivery again = channel_->Perform(Message("ack-3", "feishu:chat:oc_a:reply:om_1:thread"), true);
  ASSERT_EQ(again.outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(again.external_id, first.external_id);
  EXPECT_EQ(Sent().size(), 1u);
  EXPECT_EQ(fake_->Count("POST", "/open-apis/im/v1/messages/om_1/reply"), 2) << "both attempts reached Feishu";
}

TEST_F(FeishuChannelTest, DirectChatsGetAPlainMessage) {
  Delivery d = channel_->Perform(Message("ans-1", "feishu:chat:oc_dm"), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  auto log = fake_->log();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().path, "/open-apis/im/v1/messages");
  EXPECT_EQ(log.back().params["receive_id_type"], "chat_id");
  EXPECT_EQ(Sent()[0]["chat_id"], "oc_dm");
}

TEST_F(FeishuChannelTest, MoreThanAHundredWordsIsRefusedAndNothingSent) {
  std::string body;
  for (int i = 0; i < 101; ++i) body += "word ";
  Delivery d = channel_->Perform(Message("long", "feishu:chat:oc_dm", body), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("100 words"));
  EXPECT_TRUE(Sent().empty());
}

// Words are counted as people count them: 101 Chinese characters are 101 words, not one.
TEST_F(FeishuChannelTest, AHundredAndOneChineseCharactersAreRefusedAsOverAHundredWords) {
  std::string body;
  for (int i = 0; i < 101; ++i) body += "字";
  Delivery d = channel_->Perform(Message("zh", "feishu:chat:oc_dm", body), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("100 words"));
  EXPECT_TRUE(Sent().empty());
}

TEST_F(FeishuChannelTest, RateLimitsAreHonoured) {
  {
    auto lock = fake_->Lock();
    fake_->rate_limit_next = 1;
  }
  Delivery d = channel_->Perform(Message("rl-1", "feishu:chat:oc_dm"), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kRetry);
  EXPECT_EQ(d.retry_after_ms, 3'000) << "x-ogw-ratelimit-reset is obeyed";
  // Our own per-chat budget: five per second, the sixth waits without a request.
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(channel_->Perform(Message("q" + std::to_string(i), "feishu:chat:oc_b"), false).outcome,
              Delivery::Outcome::kDone);
  ASSERT_EQ(channel_->Perform(Message("q4", "feishu:chat:oc_b"), false).outcome, Delivery::Outcome::kDone);
  const auto before = fake_->log().size();
  Delivery sixth = channel_->Perform(Message("q5", "feishu:chat:oc_b"), false);
  EXPECT_EQ(sixth.outcome, Delivery::Outcome::kRetry);
  EXPECT_GT(sixth.retry_after_ms, 0);
  EXPECT_LE(sixth.retry_after_ms, 1'000);
  EXPECT_EQ(fake_->log().size(), before);
  EXPECT_EQ(channel_->Perform(Message("q5", "feishu:chat:oc_c"), false).outcome, Delivery::Outcome::kDone)
      << "another chat has its own budget";
  clock_.Advance(1'000);
  EXPECT_EQ(channel_->Perform(Message("q6", "feishu:chat:oc_b"), false).outcome, Delivery::Outcome::kDone);
}

TEST_F(FeishuChannelTest, LongReceiptIdsBecomeAStableShortUuid) {
  const std::string id(80, 'r');
  EXPECT_EQ(RequestUuid("", "short"), "short");
  EXPECT_LE(RequestUuid("", id).size(), 50u);
  EXPECT_EQ(RequestUuid("", id), RequestUuid("", id));
  EXPECT_NE(RequestUuid("", id), RequestUuid("", id + "x"));
}

// Issue 23: with an install id every uuid is a digest of the install and the receipt, so two
// installs of the same app (or one after a data_dir reset) never share "ack:ticket:1".
TEST_F(FeishuChannelTest, TheInstallIdMakesEveryUuidItsOwn) {
  const std::string a(32, 'a'), b(32, 'b');
  EXPECT_EQ(RequestUuid(a, "ack:ticket:1"), RequestUuid(a, "ack:ticket:1"));
  EXPECT_NE(RequestUuid(a, "ack:ticket:1"), RequestUuid(b, "ack:ticket:1"));
  EXPECT_NE(RequestUuid(a, "ack:ticket:1"), RequestUuid(a, "ack:ticket:2"));
  EXPECT_EQ(RequestUuid(a, "ack:ticket:1").size(), 43u) << "Feishu takes at most 50 characters";
  EXPECT_EQ(RequestUuid(a, std::string(500, 'x')).size(), 43u);

  // Two installs answer the same request number in the same chat: both messages are posted.
  FeishuChannel first(client_.get(), &clock_, kChatWordLimit, 5, a), second(client_.get(), &clock_, kChatWordLimit, 5, b);
  Delivery one = first.Perform(Message("ack:ticket:1", "feishu:chat:oc_a:reply:om_2", "第一个 install"), false);
  clock_.Advance(1'000);
  Delivery two = second.Perform(Message("ack:ticket:1", "feishu:chat:oc_a:reply:om_2", "第二个 install"), false);
  ASSERT_EQ(one.outcome, Delivery::Outcome::kDone) << one.error;
  ASSERT_EQ(two.outcome, Delivery::Outcome::kDone) << two.error;
  EXPECT_NE(one.external_id, two.external_id);
  EXPECT_EQ(Sent().size(), 2u);
  // The same install retrying after an unknown outcome still gets its first message back.
  clock_.Advance(1'000);
  Delivery again = first.Perform(Message("ack:ticket:1", "feishu:chat:oc_a:reply:om_2", "第一个 install"), true);
  ASSERT_EQ(again.outcome, Delivery::Outcome::kDone) << again.error;
  EXPECT_EQ(again.external_id, one.external_id);
  EXPECT_EQ(Sent().size(), 2u);
}

// Issue 23: Feishu answers a uuid it saw within the hour with that earlier message and posts
// nothing. When that message is in another chat, this one was never posted: a failed delivery
// that says so, never a success.
TEST_F(FeishuChannelTest, AnEarlierMessageInAnotherChatReturnedForTheUuidIsAFailedDelivery) {
  {
    auto lock = fake_->Lock();
    json other = FakeFeishu::Item("om_elsewhere", "oc_other", "cli_app", "an older install's reply", clock_.NowMs());
    fake_->sent.push_back(other);
    fake_->uuids["ack:ticket:1"] = "om_elsewhere";
  }
  Delivery d = channel_->Perform(Message("ack:ticket:1", "feishu:chat:oc_a:reply:om_2"), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("om_elsewhere in chat oc_other, not in oc_a"));
  EXPECT_THAT(d.error, HasSubstr("was not posted"));
  // A peer that answers success without saying where is not believed either.
  {
    auto lock = fake_->Lock();
    fake_->sent.push_back(json{{"message_id", "om_nowhere"}});
    fake_->uuids["ack:ticket:2"] = "om_nowhere";
  }
  Delivery nowhere = channel_->Perform(Message("ack:ticket:2", "feishu:chat:oc_a"), false);
  EXPECT_EQ(nowhere.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(nowhere.error, HasSubstr("in chat (none)"));
}

// A question with options (AskPerson's Effect carries the question and its form) is sent as an
// interactive card: the question as markdown, one button per option whose value says which Ticket,
// option, message and Thread it answers, and a note that typing still answers.
TEST_F(FeishuChannelTest, AQuestionWithOptionsIsACardWithOneButtonPerOption) {
  Effect e = Message("ask:7", "feishu:chat:oc_a:reply:om_1:thread",
                     "Which link?\n\n1. docs/setup.md\n2. 维基页面 📚\n\nReply with the number of your choice, or in your own words.");
  e.receipt->ticket = 7;
  e.payload = {{"receipt", "ask:7"}, {"question", "Which link should **CONTRIBUTING.md** point to?"},
               {"form", {{"options", {"docs/setup.md", "维基页面 📚"}}, {"free_text", true}}}};
  Delivery d = channel_->Perform(e, false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  auto sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0]["msg_type"], "interactive");
  EXPECT_EQ(sent[0]["uuid"], "ask:7") << "the receipt id is still the idempotency uuid";
  EXPECT_TRUE(sent[0]["reply_in_thread"].get<bool>());
  const json card = json::parse(sent[0]["body"]["content"].get<std::string>());
  const json expected = {
      {"config", {{"wide_screen_mode", true}}},
      {"elements",
       {{{"tag", "markdown"}, {"content", "Which link should **CONTRIBUTING.md** point to?"}},
        {{"tag", "action"},
         {"actions",
          {{{"tag", "button"}, {"text", {{"tag", "plain_text"}, {"content", "1. docs/setup.md"}}}, {"type", "default"},
            {"value", {{"ticket", 7}, {"option", 1}, {"receipt", "ask:7"}, {"thread", "feishu:thread:omt_1"}}}},
           {{"tag", "button"}, {"text", {{"tag", "plain_text"}, {"content", "2. 维基页面 📚"}}}, {"type", "default"},
            {"value", {{"ticket", 7}, {"option", 2}, {"receipt", "ask:7"}, {"thread", "feishu:thread:omt_1"}}}}}}},
        {{"tag", "note"},
         {"elements", {{{"tag", "plain_text"}, {"content", "You can also reply with the number of your choice, or in your own words."}}}}}}}};
  EXPECT_EQ(card, expected) << card.dump(2);
  // A question taking only its options says so.
  Effect only = e;
  only.receipt->id = "ask:8";
  only.payload["form"]["free_text"] = false;
  ASSERT_EQ(channel_->Perform(only, false).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(json::parse(Sent()[1]["body"]["content"].get<std::string>())["elements"][2]["elements"][0]["content"],
            "You can also reply with the number of your choice.");
}

// A free-text question has nothing to press, and any other message is unchanged: plain text.
TEST_F(FeishuChannelTest, AFreeTextQuestionAndOrdinaryMessagesStayText) {
  Effect e = Message("ask:9", "feishu:chat:oc_dm", "Should the notes mention Python 3.8?");
  e.receipt->ticket = 9;
  e.payload = {{"receipt", "ask:9"}, {"question", "Should the notes mention Python 3.8?"}, {"form", {{"options", json::array()}, {"free_text", true}}}};
  ASSERT_EQ(channel_->Perform(e, false).outcome, Delivery::Outcome::kDone);
  Effect hostile = Message("ask:10", "feishu:chat:oc_dm", "Pick one");
  hostile.receipt->ticket = 10;
  hostile.payload = {{"receipt", "ask:10"}, {"question", 42}, {"form", {{"options", "not a list"}}}};
  ASSERT_EQ(channel_->Perform(hostile, false).outcome, Delivery::Outcome::kDone);
  auto sent = Sent();
  ASSERT_EQ(sent.size(), 2u);
  for (const json& m : sent) EXPECT_EQ(m["msg_type"], "text") << m.dump();
  EXPECT_EQ(json::parse(sent[0]["body"]["content"].get<std::string>())["text"], "Should the notes mention Python 3.8?");
}

TEST_F(FeishuChannelTest, TheOutboxDeliversAnAcknowledgementOnceThroughTheChannel) {
  Trigger t;
  t.id = "feishu:om_1";
  t.source = "feishu";
  t.scope = "chat:oc_support";
  t.actor = "ou_alice";
  t.human = true;
  t.addressed = true;
  t.text = "@Agent fix the typo";
  t.at = clock_.NowMs();
  t.threads = {"feishu:thread:omt_1", "feishu:chat:oc_a"};
  t.channel = "feishu:chat:oc_a:reply:om_1:thread";
  ASSERT_TRUE(engine_->Receive(t, "test").ok());
  MessageSpec m;
  m.id = "ack:feishu:om_1";
  m.thread = "feishu:thread:omt_1";
  m.kind = MessageKind::kAcknowledgement;
  m.body = "I'll fix the typo.";
  ASSERT_TRUE(engine_->Send(m).ok());
  ASSERT_TRUE(engine_->Send(m).ok()) << "a repeated message id is ignored";
  EffectsLoop loop(engine_.get(), {channel_.get()}, &clock_, {}, 1);
  auto n = loop.RunOnce();
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  auto sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0]["uuid"], "ack:feishu:om_1");
  auto receipts = Ok(views_->Receipts(std::nullopt));
  ASSERT_EQ(receipts.size(), 1u);
  EXPECT_EQ(receipts[0].status, "sent");
}

}  // namespace
}  // namespace superagent::feishu
