// Feishu normalization: the realtime event and the history item of one message give the same
// Trigger; text and post render to plain text with names; odd items are skipped with a reason.
#include <gtest/gtest.h>

#include "fake_feishu_server.h"
#include "superagent/clock.h"
#include "superagent/feishu.h"
#include "sources/feishu/normalize.h"
#include "superagent/trigger.h"

namespace superagent::feishu {
namespace {

using nlohmann::json;
using superagent::testing::FakeFeishu;

const NormalizeContext kCtx{"ou_bot", "cli_a1b2c3d4e5f60718"};

json MentionOfBot() { return json::array({FakeFeishu::HistoryMention("@_user_1", "ou_bot", "Agent")}); }

TEST(FeishuNormalize, RealtimeAndHistoryShapesGiveTheIdenticalTrigger) {
  json item = FakeFeishu::Item("om_1", "oc_a", "ou_alice", "@_user_1 please fix the typo", 1'700'000'000'123, "omt_9",
                               "", MentionOfBot());
  json event = FakeFeishu::EventFor(item, "group", "ev1");
  Normalized h = NormalizeHistoryItem(item, kCtx, false);
  Normalized r = NormalizeEvent(event["event"], kCtx);
  ASSERT_EQ(h.kind, Normalized::Kind::kTrigger) << h.why;
  ASSERT_EQ(r.kind, Normalized::Kind::kTrigger) << r.why;
  EXPECT_EQ(TriggerToJson(h.trigger), TriggerToJson(r.trigger));
  const Trigger& t = r.trigger;
  EXPECT_EQ(t.id, "feishu:om_1");
  EXPECT_EQ(t.scope, "chat:oc_a");
  EXPECT_EQ(t.actor, "ou_alice");
  EXPECT_TRUE(t.human);
  EXPECT_TRUE(t.addressed);
  EXPECT_EQ(t.text, "@Agent please fix the typo");
  EXPECT_EQ(t.at, 1'700'000'000'123);
  EXPECT_EQ(t.threads, (std::vector<std::string>{"feishu:thread:omt_9", "feishu:chat:oc_a"}));
  EXPECT_EQ(t.channel, "feishu:chat:oc_a:reply:om_1:thread");
  EXPECT_TRUE(TriggerFromJson(TriggerToJson(t)).ok());
}

TEST(FeishuNormalize, SecondTimestampsAreScaledToMilliseconds) {
  json item = FakeFeishu::Item("om_1", "oc_a", "ou_alice", "hi", 1'700'000'000'000);
  json seconds = item;
  seconds["create_time"] = "1700000000";
  seconds["update_time"] = "1700000000";
  EXPECT_EQ(NormalizeHistoryItem(seconds, kCtx, false).trigger.at, NormalizeHistoryItem(item, kCtx, false).trigger.at);
}

TEST(FeishuNormalize, AddressedOnlyByTheBotsOpenIdOrADirectChat) {
  json other = FakeFeishu::Item("om_2", "oc_a", "ou_alice", "@_user_1 hi", 1000'000'000'000, "", "",
                                json::array({FakeFeishu::HistoryMention("@_user_1", "ou_bob", "Agent")}));
  Normalized n = NormalizeHistoryItem(other, kCtx, false);
  EXPECT_FALSE(n.trigger.addressed) << "a person whose display name is the bot's is not the bot";
  EXPECT_EQ(n.trigger.text, "@Agent hi");
  json plain = FakeFeishu::Item("om_3", "oc_d", "ou_alice", "fix it", 1000'000'000'000);
  Normalized d = NormalizeEvent(FakeFeishu::EventFor(plain, "p2p", "e")["event"], kCtx);
  EXPECT_TRUE(d.trigger.addressed);
  EXPECT_EQ(d.trigger.scope, "direct");
  EXPECT_EQ(d.trigger.channel, "feishu:chat:oc_d");
}

TEST(FeishuNormalize, OwnMessagesAreMarkedByOpenIdOrAppId) {
  json item = FakeFeishu::Item("om_4", "oc_a", "cli_a1b2c3d4e5f60718", "done", 1000'000'000'000);
  item["sender"] = {{"id", "cli_a1b2c3d4e5f60718"}, {"id_type", "app_id"}, {"sender_type", "app"}};
  Normalized n = NormalizeHistoryItem(item, kCtx, false);
  EXPECT_TRUE(n.trigger.meta["own"].get<bool>());
  EXPECT_FALSE(n.trigger.human);
  json ev = FakeFeishu::EventFor(FakeFeishu::Item("om_5", "oc_a", "ou_bot", "done", 1000'000'000'000), "group", "e");
  EXPECT_TRUE(NormalizeEvent(ev["event"], kCtx).trigger.meta["own"].get<bool>());
}

TEST(FeishuNormalize, EditedMessagesGetANewIdentity) {
  json item = FakeFeishu::Item("om_6", "oc_a", "ou_alice", "v2", 1000'000'000'000);
  item["updated"] = true;
  item["update_time"] = "1000000060000";
  EXPECT_EQ(NormalizeHistoryItem(item, kCtx, false).trigger.id, "feishu:om_6@1000000060000");
  json ev = FakeFeishu::EventFor(item, "group", "e");
  EXPECT_EQ(NormalizeEvent(ev["event"], kCtx).trigger.id, "feishu:om_6@1000000060000");
}

TEST(FeishuNormalize, PostRendersAsPlainTextWithNames) {
  json content = {{"title", "Bug"},
                  {"content", json::array({json::array({{{"tag", "at"}, {"user_id", "@_user_1"}, {"user_name", "Agent"}},
                                                        {{"tag", "text"}, {"text", " see "}},
                                                        {{"tag", "a"}, {"text", "log"}, {"href", "https://x/log"}}}),
                                           json::array({{{"tag", "text"}, {"text", "second line"}}, {{"tag", "img"}}})})}};
  auto text = RenderContent("post", content, {{"@_user_1", "@Agent"}});
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "Bug\n@Agent see log (https://x/log)\nsecond line[image]");
  json localized = {{"zh_cn", content}};
  EXPECT_EQ(RenderContent("post", localized, {}), text);
  EXPECT_EQ(*RenderContent("text", json{{"text", "@_user_10 and @_user_1 and @_all"}},
                           {{"@_user_1", "@A"}, {"@_user_10", "@B"}}),
            "@B and @A and @all");
}

TEST(FeishuNormalize, UnknownTypesAndMalformedItemsAreSkippedWithAReason) {
  json image = FakeFeishu::Item("om_7", "oc_a", "ou_alice", "", 1000'000'000'000);
  image["msg_type"] = "image";
  image["body"]["content"] = R"({"image_key":"img_1"})";
  Normalized n = NormalizeHistoryItem(image, kCtx, false);
  EXPECT_EQ(n.kind, Normalized::Kind::kUnsupported);
  EXPECT_NE(n.why.find("image"), std::string::npos);
  json broken = FakeFeishu::Item("om_8", "oc_a", "ou_alice", "x", 1000'000'000'000);
  broken["body"]["content"] = "{not json";
  EXPECT_EQ(NormalizeHistoryItem(broken, kCtx, false).kind, Normalized::Kind::kMalformed);
  json no_time = FakeFeishu::Item("om_9", "oc_a", "ou_alice", "x", 1000'000'000'000);
  no_time.erase("create_time");
  EXPECT_EQ(NormalizeHistoryItem(no_time, kCtx, false).kind, Normalized::Kind::kMalformed);
  json recalled = FakeFeishu::Item("om_10", "oc_a", "ou_alice", "x", 1000'000'000'000);
  recalled["deleted"] = true;
  EXPECT_EQ(NormalizeHistoryItem(recalled, kCtx, false).kind, Normalized::Kind::kSkip);
}

// Found by fuzzing (fuzz/corpus/feishu_normalize_fuzz/realtime_event_without_sender.json): an
// event whose sender has no open_id became a Trigger with no sender, which intake cannot admit
// nor read back. It is a malformed item: skipped and counted.
TEST(FeishuNormalize, AMessageWithoutASenderIsMalformedFoundByFuzzing) {
  json item = FakeFeishu::Item("om_11", "oc_a", "ou_alice", "@_user_1 看一下", 1'700'000'000'000, "", "", MentionOfBot());
  item.erase("sender");
  Normalized n = NormalizeHistoryItem(item, kCtx, false);
  EXPECT_EQ(n.kind, Normalized::Kind::kMalformed);
  EXPECT_NE(n.why.find("sender"), std::string::npos) << n.why;
  json event = {{"sender", {{"sender_id%", {{"open_id", "ou_alice"}}}, {"sender_type", "user"}}},
                {"message",
                 {{"message_id", "om_12"},
                  {"create_time", "1780000000000"},
                  {"chat_id", "oc_support"},
                  {"chat_type", "p2p"},
                  {"message_type", "text"},
                  {"content", R"({"text":"帮我看看 🙏"})"}}}};
  n = NormalizeEvent(event, kCtx);
  EXPECT_EQ(n.kind, Normalized::Kind::kMalformed);
  EXPECT_NE(n.why.find("om_12"), std::string::npos) << n.why;
  event["sender"]["sender_id"] = {{"open_id", "ou_alice"}};
  EXPECT_EQ(NormalizeEvent(event, kCtx).kind, Normalized::Kind::kTrigger) << "with a sender it is taken";
}

// Found by fuzzing (fuzz/corpus/feishu_normalize_fuzz/create_time_after_year_9999.json): a
// create_time of eighteen digits is a time after year 9999, which a Trigger cannot carry (its
// stored time would not read back, so intake would refuse it after the Source counted it read).
// Such a stamp, and a negative or zero one, is no time: the item is malformed, like a missing one.
TEST(FeishuNormalize, ATimeAfterYear9999OrBefore1970IsMalformedFoundByFuzzing) {
  for (const json& stamp : {json("999999999999999999"), json(std::int64_t{9'000'000'000'000'000'000}),
                            json(-5), json(std::int64_t{-9'000'000'000'000'000'000}), json("0")}) {
    json item = FakeFeishu::Item("om_13", "oc_a", "ou_alice", "看一下 🙂", 1'700'000'000'000);
    item["create_time"] = stamp;
    Normalized n = NormalizeHistoryItem(item, kCtx, false);
    EXPECT_EQ(n.kind, Normalized::Kind::kMalformed) << stamp.dump();
    EXPECT_NE(n.why.find("create_time"), std::string::npos) << n.why;
  }
  // The latest time that does read back is still a time.
  json last = FakeFeishu::Item("om_14", "oc_a", "ou_alice", "x", kLatestTimeMs);
  Normalized n = NormalizeHistoryItem(last, kCtx, false);
  ASSERT_EQ(n.kind, Normalized::Kind::kTrigger) << n.why;
  EXPECT_EQ(n.trigger.at, kLatestTimeMs);
  EXPECT_TRUE(ValidateTrigger(n.trigger).ok());
}

// A press on a question card's button: a Trigger from the operator on the Thread the question was
// asked on (a topic here), whose text is the option's number; the event id makes it one Trigger.
TEST(FeishuNormalize, ACardPressIsTheOperatorTypingTheOptionsNumberOnTheQuestionsThread) {
  const json value = {{"ticket", 7}, {"option", 2}, {"receipt", "ask:7"}, {"thread", "feishu:thread:omt_9"}};
  json press = FakeFeishu::CardActionFor("om_card", "oc_a", "ou_alice", value, "ev-press", 1'700'000'000'123);
  Normalized n = NormalizeCardAction(press, kCtx, false);
  ASSERT_EQ(n.kind, Normalized::Kind::kTrigger) << n.why;
  const Trigger& t = n.trigger;
  EXPECT_EQ(t.id, "feishu:card:ev-press");
  EXPECT_EQ(t.scope, "chat:oc_a");
  EXPECT_EQ(t.actor, "ou_alice");
  EXPECT_TRUE(t.human);
  EXPECT_TRUE(t.addressed);
  EXPECT_EQ(t.text, "2");
  EXPECT_EQ(t.at, 1'700'000'000'123);
  EXPECT_EQ(t.threads, (std::vector<std::string>{"feishu:thread:omt_9", "feishu:chat:oc_a"}));
  EXPECT_EQ(t.channel, "feishu:chat:oc_a:reply:om_card:thread");
  EXPECT_EQ(t.meta["ticket"], 7);
  EXPECT_EQ(t.meta["receipt"], "ask:7");
  EXPECT_TRUE(TriggerFromJson(TriggerToJson(t)).ok());
  // In a direct chat the reply is a plain message; the bot's own press is marked as its own.
  json direct = FakeFeishu::CardActionFor("om_card", "oc_dm", "ou_bot",
                                          {{"ticket", 7}, {"option", 1}, {"receipt", "ask:7"}, {"thread", "feishu:chat:oc_dm"}},
                                          "ev-own", 1'700'000'000'123);
  Normalized d = NormalizeCardAction(direct, kCtx, true);
  ASSERT_EQ(d.kind, Normalized::Kind::kTrigger) << d.why;
  EXPECT_EQ(d.trigger.scope, "direct");
  EXPECT_EQ(d.trigger.channel, "feishu:chat:oc_dm");
  EXPECT_EQ(d.trigger.threads, (std::vector<std::string>{"feishu:chat:oc_dm"}));
  EXPECT_FALSE(d.trigger.human);
  EXPECT_TRUE(d.trigger.meta["own"].get<bool>());
  // Not a card action, or no event id: malformed with the field named.
  json message = FakeFeishu::EventFor(FakeFeishu::Item("om_1", "oc_a", "ou_alice", "hi", 1'700'000'000'123), "group", "ev1");
  EXPECT_EQ(NormalizeCardAction(message, kCtx, false).why, "header.event_type: must be card.action.trigger");
  press["header"]["event_id"] = 5;
  EXPECT_EQ(NormalizeCardAction(press, kCtx, false).why, "header.event_id: must be the event's id");
  EXPECT_EQ(NormalizeCardAction(json("garbage \xff"), kCtx, false).kind, Normalized::Kind::kMalformed);
}

}  // namespace
}  // namespace superagent::feishu
