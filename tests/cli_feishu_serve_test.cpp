// `superagent serve` with feishu.enabled, as a team runs it: the real daemon process against the
// loopback Feishu (REST and the WebSocket long connection). A person @-mentions the bot in a
// configured group and gets exactly one acknowledgement in the thread of that message; what is
// said while the daemon is down arrives by backfill after the restart; nothing is answered twice
// however often the same message comes back (re-pushed event, overlapping backfill); and no
// secret reaches the log. Execution stays off (no git remote, no repository): Tickets wait.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "daemon_process.h"
#include "fake_feishu_server.h"
#include "fake_feishu_ws.h"
#include "run_binary.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

const char kFeishuPolicy[] = R"(mode: observe
sources:
  feishu:
    people: [ou_alice]
    scopes:
      "chat:oc_team": { receive_all: false }
      "chat:oc_ops": { receive_all: false }
rules:
  - name: wording
    when: Fix wording and typos.
    instructions: Keep the change small.
)";

class FeishuServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("superagent-feishu-serve-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    port_ = FreeLoopbackPort();
    // Distinctive secrets, so the log can be searched for them.
    fake_.app_secret = "feishu-APP-SECRET-7f3a9e";
    fake_.token = "t-TENANT-TOKEN-9c1e55";
    fake_.topic_mode_chats.insert("oc_team");
    fake_.ws_endpoint_fn = [this] { return ws_.EndpointAnswer(); };
    Write("policy.yaml", kFeishuPolicy);
    // debug: the Source's "feishu round" lines say when a round is over.
    Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                                 std::to_string(port_) + "\nlog:\n  level: debug\nfeishu:\n  enabled: true\n  api_url: " +
                                 fake_.url() + "\n  app_id_env: SA_TEST_FEISHU_APP_ID\n  app_secret_env: "
                                 "SA_TEST_FEISHU_APP_SECRET\n  realtime: long_connection\n  poll_interval_seconds: 3600\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string Config() const { return (dir_ / "superagent.yaml").string(); }
  std::vector<std::pair<std::string, std::string>> Env() const {
    return {{"SA_TEST_FEISHU_APP_ID", fake_.app_id}, {"SA_TEST_FEISHU_APP_SECRET", fake_.app_secret}};
  }
  json Mention() const { return json::array({FakeFeishu::HistoryMention("@_user_1", fake_.bot_open_id, "superagent")}); }
  json Explain(const std::string& id) {
    RunResult r = RunProgram(SUPERAGENT_BINARY, {"explain", id, "--config", Config(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }
  std::vector<json> Sent() {
    auto lock = fake_.Lock();
    return fake_.sent;
  }
  void ExpectNoSecret(const std::string& log) {
    EXPECT_THAT(log, Not(HasSubstr(fake_.app_secret))) << "the app secret reached the log";
    EXPECT_THAT(log, Not(HasSubstr(fake_.token))) << "the tenant token reached the log";
    EXPECT_THAT(log, Not(HasSubstr("&ticket="))) << "the long connection's ticketed URL reached the log";
  }

  fs::path dir_;
  int port_ = 0;
  // Declared first so it is destroyed last: the REST fake's handler asks it for the endpoint.
  FakeFeishuWs ws_;
  FakeFeishu fake_{SystemClock()};
};

TEST_F(FeishuServeTest, AMentionIsAcknowledgedOnceInItsThreadAndWhatWasSaidWhileDownArrivesByBackfill) {
  const json m1 = FakeFeishu::Item("om_m1", "oc_team", "ou_alice", "@_user_1 please fix the typo in the README",
                                   SystemClock()->NowMs(), "omt_t1", "", Mention());
  const json event1 = FakeFeishu::EventFor(m1, "group", "ev-m1");
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, Env());
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    ASSERT_TRUE(ws_.WaitFor([&] { return ws_.connections == 1 && ws_.pings >= 1; })) << d.log();
    // The round at start (cursors start now) and the one the connection asked for are over, so
    // the mention reaches the daemon by the long connection alone.
    ASSERT_TRUE(d.WaitForCount("feishu round ", 2)) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("feishu identity open_id=" + fake_.bot_open_id));
    {
      auto lock = fake_.Lock();
      fake_.messages.push_back(m1);  // in the chat's history too, as on Feishu
    }
    ws_.SendEvent(event1, 2);
    ASSERT_TRUE(ws_.WaitFor([&] { return ws_.acks.size() == 1; })) << d.log();
    {
      auto lock = ws_.Lock();
      EXPECT_EQ(json::parse(*ws_.acks[0].payload), (json{{"code", 200}}));
    }
    // The Eval may log its Decision before the Source logs its own line: count, don't scan.
    ASSERT_TRUE(d.WaitForCount("feishu event via=realtime:ws event_id=ev-m1 trigger=feishu:om_m1 outcome=stored", 1))
        << d.log();
    ASSERT_TRUE(d.WaitForCount("outcome=accept", 1)) << d.log();
    ASSERT_TRUE(d.WaitForCount("feishu message sent", 1)) << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    ExpectNoSecret(d.log());
  }
  auto sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(fake_.Count("POST", "/open-apis/im/v1/messages/om_m1/reply"), 1);
  EXPECT_EQ(sent[0]["parent_id"], "om_m1");
  EXPECT_EQ(sent[0]["reply_in_thread"], true) << "a topic's answer stays in the topic";
  EXPECT_EQ(sent[0]["thread_id"], "omt_t1");
  EXPECT_FALSE(sent[0]["uuid"].get<std::string>().empty()) << "the receipt id makes a retried send idempotent";
  json story1 = Explain("feishu:om_m1");
  EXPECT_EQ(story1["arrival"]["via"], "realtime:ws");
  EXPECT_THAT(story1["summary"].get<std::string>(), HasSubstr("The agent wrote back: the acknowledgement (sent)."));

  // Said while the daemon is down, in the other configured chat (in oc_team it would go to the
  // live Ticket of m1, whose Thread the whole chat is): only the chat's history has it.
  const json m2 = FakeFeishu::Item("om_m2", "oc_ops", "ou_alice", "@_user_1 and the typo in docs/setup.md too",
                                   SystemClock()->NowMs(), "", "", Mention());
  {
    auto lock = fake_.Lock();
    fake_.messages.push_back(m2);
  }
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, Env());
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    ASSERT_TRUE(d.WaitForCount("feishu message sent", 1)) << d.log();
    // Feishu pushes the first mention again on the new connection (as after a missed ack).
    ASSERT_TRUE(ws_.WaitFor([&] { return ws_.connections == 2 && ws_.open_count() == 1 && ws_.pings >= 2; }))
        << d.log();
    ws_.SendEvent(event1, 1);
    ASSERT_TRUE(ws_.WaitFor([&] { return ws_.acks.size() == 2; })) << d.log();
    ASSERT_TRUE(d.WaitForCount("trigger=feishu:om_m1 outcome=duplicate", 1)) << d.log();
    // Both rounds (start, reconnect) read the overlap again: m1 once more, and the bot's own reply.
    ASSERT_TRUE(d.WaitForCount("feishu round ", 2)) << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    ExpectNoSecret(d.log());
    EXPECT_THAT(d.log(), HasSubstr("feishu long connection open"));
  }
  sent = Sent();
  ASSERT_EQ(sent.size(), 2u) << "one acknowledgement per mention, none twice";
  EXPECT_EQ(fake_.Count("POST", "/open-apis/im/v1/messages/om_m1/reply"), 1);
  EXPECT_EQ(fake_.Count("POST", "/open-apis/im/v1/messages/om_m2/reply"), 1);
  EXPECT_EQ(fake_.Count("POST", "/open-apis/im/v1/messages"), 0) << "answers are replies, not new chat messages";
  EXPECT_EQ(sent[1]["parent_id"], "om_m2");
  EXPECT_FALSE(sent[1].contains("thread_id")) << "a plain group message is answered by a reply to it";
  EXPECT_NE(sent[0]["uuid"], sent[1]["uuid"]);
  json story2 = Explain("feishu:om_m2");
  EXPECT_EQ(story2["arrival"]["via"], "backfill") << story2.dump(2);
  EXPECT_THAT(story2["summary"].get<std::string>(), HasSubstr("The agent wrote back: the acknowledgement (sent)."));
  story1 = Explain("feishu:om_m1");
  int acks = 0;
  for (const json& r : story1["receipts"]) acks += r["kind"] == "acknowledgement";
  EXPECT_EQ(acks, 1) << story1.dump(2);
  // The bot's own reply came back through history and went no further.
  json own = Explain("feishu:" + sent[0]["message_id"].get<std::string>());
  EXPECT_EQ(own["intake"]["outcome"], "filtered") << own.dump(2);
  EXPECT_EQ(own["intake"]["filter_reason"], "own_message");
}

// Issue 34, through `serve`: a request said in a plain group chat is acknowledged; while the
// daemon is down someone opens a topic on the request and replies there. No listing shows that
// reply (the chat container lists only roots, and the root is older than the cursor), so before
// it was never read. The first round after the start looks at the open Ticket's messages, finds
// the topic, reads it, and the reply reaches the Ticket.
TEST_F(FeishuServeTest, AReplyInATopicOpenedOnTheRequestWhileTheDaemonWasDownReachesItsTicketAtTheNextStart) {
  const json m1 = FakeFeishu::Item("om_m1", "oc_ops", "ou_alice", "@_user_1 please fix the typo in the README",
                                   SystemClock()->NowMs(), "", "", Mention());
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, Env());
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    ASSERT_TRUE(ws_.WaitFor([&] { return ws_.connections == 1 && ws_.pings >= 1; })) << d.log();
    ASSERT_TRUE(d.WaitForCount("feishu round ", 2)) << d.log();
    {
      auto lock = fake_.Lock();
      fake_.messages.push_back(m1);
    }
    ws_.SendEvent(FakeFeishu::EventFor(m1, "group", "ev-m1"), 2);
    ASSERT_TRUE(d.WaitForCount("outcome=accept", 1)) << d.log();
    ASSERT_TRUE(d.WaitForCount("feishu message sent", 1)) << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
  }
  fake_.OpenTopicOn("om_m1", "omt_late");
  const json reply = FakeFeishu::Item("om_r1", "oc_ops", "ou_alice", "CONTRIBUTING.md 里也有 teh → the 🙏",
                                      SystemClock()->NowMs(), "omt_late", "om_m1");
  {
    auto lock = fake_.Lock();
    fake_.messages.push_back(reply);
  }
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, Env());
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    ASSERT_TRUE(d.WaitForCount("trigger stored id=feishu:om_r1", 1)) << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    ExpectNoSecret(d.log());
  }
  const json story = Explain("feishu:om_r1");
  EXPECT_EQ(story["arrival"]["via"], "poll:thread") << story.dump(2);
  ASSERT_EQ(story["tickets_reached"].size(), 1u) << story.dump(2);
  EXPECT_EQ(story["tickets_reached"][0]["ticket"], 1) << "the reply is the Ticket's discussion";
}

// A Feishu that hangs does not hold `systemctl stop`: the backfill's request in flight is
// abandoned and the daemon stops at once (before, it waited for the request's own timeout).
TEST_F(FeishuServeTest, AStopAbandonsABackfillRequestFeishuHolds) {
  fake_.Hold("GET", "/open-apis/im/v1/messages");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, Env());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(fake_.WaitUntilHolding()) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_THAT(d.log(), HasSubstr(" info stopped"));
  EXPECT_TRUE(fake_.Holding()) << "the daemon stopped only because Feishu answered";
  // The stop's doing is not Feishu's failure: nothing is recorded against the path.
  EXPECT_THAT(d.log(), HasSubstr("info feishu read abandoned at shutdown path="));
  EXPECT_THAT(d.log(), Not(HasSubstr("source read failed")));
  fake_.Release();
}

}  // namespace
}  // namespace superagent::testing
