// The long connection: protobuf frames byte-compatible with the official SDK, fragment
// reassembly, acknowledgements, pongs retuning the config, — seed 000 — a message said while
// the connection was down arriving by backfill after the reconnect, the silence watchdog, and
// the `realtime` health path the connection's failures feed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

#include "engine_fixture.h"
#include "fake_feishu_server.h"
#include "fake_feishu_ws.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"
#include "result_ok.h"

namespace superagent::feishu {
namespace {

using nlohmann::json;
using superagent::testing::FakeFeishu;
using superagent::testing::FakeFeishuWs;

// The long connection reads time on its own session thread while the test moves it.
class SharedClock : public Clock {
 public:
  TimeMs NowMs() const override { return now_.load(); }
  void Advance(TimeMs ms) { now_ += ms; }

 private:
  std::atomic<TimeMs> now_{1'767'225'600'000};
};

// Waits (bounded) for a condition another thread makes true; false when it never did.
template <typename P>
bool Soon(P pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::yield();
  }
  return pred();
}

LongConnectionOptions Seeded() {
  LongConnectionOptions o;
  o.seed = 1;
  return o;
}

std::string Hex(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

TEST(FeishuFrames, APingIsByteForByteTheSdksPing) {
  WsFrame ping;
  ping.service = 12345;
  ping.method = 0;
  ping.headers = {{"type", "ping"}};
  // The node SDK's encoding of exactly this frame (research/integration-facts.md B3.2).
  EXPECT_EQ(Hex(EncodeFrame(ping)), "08 00 10 00 18 b9 60 20 00 2a 0c 0a 04 74 79 70 65 12 04 70 69 6e 67");
  auto back = DecodeFrame(EncodeFrame(ping));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->service, 12345);
  EXPECT_EQ(back->Header("type"), "ping");
  EXPECT_FALSE(back->payload);
}

TEST(FeishuFrames, FramesMissingRequiredFieldsAreRefused) {
  // Only SeqID and LogID: service and method are missing.
  EXPECT_FALSE(DecodeFrame(std::string("\x08\x00\x10\x00", 4)).ok());
  EXPECT_FALSE(DecodeFrame("garbage").ok());
}

// The codec is the project's own (no libprotobuf): it reads what libprotobuf reads, as the peer
// may write it — fields in any order, unknown ones, the last of a repeated one, long varints.
TEST(FeishuFrames, TheCodecReadsTheWireFormatAsProtobufDoes) {
  auto bytes = [](std::initializer_list<int> b) {
    std::string s;
    for (int c : b) s.push_back(static_cast<char>(c));
    return s;
  };
  // method first, then an unknown varint (field 15), an unknown fixed32 (16) and fixed64 (17),
  // payload_type (7, kept by nobody), SeqID twice (the last wins), LogID, service -1 as ten bytes.
  auto f = DecodeFrame(bytes({0x20, 0x01, 0x78, 0x05, 0x85, 0x01, 1, 2, 3, 4, 0x89, 0x01, 1, 2, 3, 4, 5, 6, 7, 8,
                              0x3a, 0x02, 'j', 's', 0x08, 0x07, 0x08, 0x09, 0x10, 0x00, 0x18, 0xff, 0xff, 0xff, 0xff,
                              0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x42, 0x04, 0xe4, 0xbd, 0xa0, 0x21}));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->seq_id, 9u);
  EXPECT_EQ(f->method, 1);
  EXPECT_EQ(f->service, -1);
  ASSERT_TRUE(f->payload);
  EXPECT_EQ(*f->payload, "\xe4\xbd\xa0\x21");  // "你!", bytes as they came
  // A negative service goes out as protobuf writes it and comes back the same.
  WsFrame negative;
  negative.service = -7;
  negative.payload = std::string("\xff\x00 not UTF-8", 13);
  negative.headers = {{"message_id", "消息 🚀"}, {"", ""}};
  auto back = DecodeFrame(EncodeFrame(negative));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->service, -7);
  EXPECT_EQ(back->payload, negative.payload);
  EXPECT_EQ(back->headers, negative.headers);
  // A required field sent with another wire type is skipped, so it is missing: refused.
  EXPECT_FALSE(DecodeFrame(bytes({0x08, 0x00, 0x10, 0x00, 0x18, 0x00, 0x22, 0x01, 0x00})).ok());
  const std::string head = bytes({0x08, 0x00, 0x10, 0x00, 0x18, 0x00, 0x20, 0x00});
  // An empty group (deprecated, but protobuf skips it), and one holding a field.
  EXPECT_TRUE(DecodeFrame(head + bytes({0x43, 0x44})).ok());
  EXPECT_TRUE(DecodeFrame(head + bytes({0x43, 0x08, 0x01, 0x44})).ok());
  // Lengths past the end, a header without its value, an end without its group, a group never
  // ended, field 0, a tag of six bytes, a varint of eleven.
  for (const std::string& bad : {head + bytes({0x42, 0x05, 'a'}), head + bytes({0x2a, 0x03, 0x0a, 0x01, 'k'}),
                                 head + bytes({0x2a, 0x10}), head + bytes({0x44}), head + bytes({0x43, 0x08, 0x01}),
                                 head + bytes({0x43, 0x4c}), head + bytes({0x00, 0x00}),
                                 head + bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00}),
                                 head + bytes({0x48, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})})
    EXPECT_FALSE(DecodeFrame(bad).ok()) << Hex(bad);
  EXPECT_TRUE(DecodeFrame(head).ok());
  EXPECT_FALSE(DecodeFrame("").ok());
}

TEST(FeishuFrames, FragmentsReassembleInAnyOrder) {
  FragmentBuffer buf(10'000);
  auto part = [](const std::string& id, int sum, int seq, const std::string& payload) {
    WsFrame f;
    f.method = 1;
    f.headers = {{"type", "event"}, {"message_id", id}, {"sum", std::to_string(sum)}, {"seq", std::to_string(seq)}};
    f.payload = payload;
    return f;
  };
  EXPECT_FALSE(buf.Add(part("a", 3, 2, "C"), 0));
  EXPECT_FALSE(buf.Add(part("a", 3, 0, "A"), 1));
  EXPECT_FALSE(buf.Add(part("b", 2, 0, "x"), 1));
  EXPECT_EQ(buf.Add(part("a", 3, 1, "B"), 2), "ABC");
  EXPECT_EQ(buf.Add(part("c", 1, 0, "whole"), 2), "whole");
  bool invalid = false;
  EXPECT_FALSE(buf.Add(part("d", 2, 2, "?"), 2, &invalid));
  EXPECT_TRUE(invalid) << "seq must be below sum";
  // An incomplete group expires: its late half alone completes nothing.
  EXPECT_FALSE(buf.Add(part("b", 2, 1, "y"), 20'000));
}

class FeishuWsTest : public superagent::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    Open(superagent::testing::MakePolicy(
        "observe", R"("chat:oc_support": { receive_all: false, others_addressed: explicit }=>"chat:oc_a": { receive_all: true })"));
    t0_ = clock_.NowMs();
    fake_ = std::make_unique<FakeFeishu>(&clock_);
    ws_ = std::make_unique<FakeFeishuWs>();
    fake_->ws_endpoint_fn = [this] { return ws_->EndpointAnswer(); };
    http_ = MakeHttpClient("superagent-test");
    ClientOptions co;
    co.api_url = fake_->url();
    co.app_id = fake_->app_id;
    co.app_secret = fake_->app_secret;
    client_ = std::make_unique<Client>(http_.get(), &clock_, co);
    SourceOptions so;
    so.poll_interval_ms = 3'600'000;  // rounds come only when asked (RequestRound)
    source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, so);
    source_->RunOnce();  // cursors start now
  }
  void TearDown() override {
    if (lc_) lc_->Stop();
    source_->Stop();
    lc_.reset();
    source_.reset();
    ws_.reset();
    client_.reset();
    fake_.reset();
    EngineTest::TearDown();
  }
  // Waits (bounded) for a Trigger another thread stores.
  bool StoredSoon(const std::string& id) {
    return Soon([&] { return views_->GetTrigger(id).ok(); });
  }
  std::optional<SourceHealth> Realtime() {
    for (const auto& h : Ok(views_->SourcesHealth()))
      if (h.source == "feishu" && h.path == "realtime") return h;
    return std::nullopt;
  }
  bool RealtimeProblemRaised() {
    for (const auto& p : Ok(views_->Problems(superagent::testing::EngineTest::options_.problem_threshold)))
      if (p.kind == "source:feishu:realtime") return true;
    return false;
  }
  int WsPings() {
    auto lock = ws_->Lock();
    return ws_->pings;
  }

  TimeMs t0_ = 0;
  std::unique_ptr<FakeFeishu> fake_;
  std::unique_ptr<FakeFeishuWs> ws_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<LongConnection> lc_;
};

TEST_F(FeishuWsTest, FragmentedEventsAreTakenAndAcknowledgedAndPongsRetuneTheConfig) {
  {
    auto lock = ws_->Lock();
    ws_->pong_config["PingInterval"] = 7;
  }
  lc_ = std::make_unique<LongConnection>(client_.get(), source_.get(), Seeded());
  lc_->Start();
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->connections == 1 && ws_->pings >= 1; }));
  {
    auto lock = ws_->Lock();
    EXPECT_THAT(ws_->resources[0], ::testing::HasSubstr("service_id=12345"));
  }
  json item = FakeFeishu::Item("om_ws1", "oc_a", "ou_alice", "@_user_1 fix the typo", t0_ + 1'000, "", "",
                               json::array({FakeFeishu::HistoryMention("@_user_1", fake_->bot_open_id, "Agent")}));
  ws_->SendEvent(FakeFeishu::EventFor(item, "group", "ev-ws1"), 3, /*reverse=*/true);
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->acks.size() == 1; }));
  WsFrame ack;
  {
    auto lock = ws_->Lock();
    ack = ws_->acks[0];
  }
  EXPECT_EQ(ack.seq_id, 7u);
  EXPECT_EQ(ack.log_id, 99u);
  EXPECT_EQ(ack.service, FakeFeishuWs::kService);
  EXPECT_EQ(ack.method, 1);
  EXPECT_FALSE(ack.Header("biz_rt").empty());
  EXPECT_EQ(ack.Header("message_id"), "m1");
  EXPECT_EQ(json::parse(*ack.payload), (json{{"code", 200}}));
  auto rec = views_->GetTrigger("feishu:om_ws1");
  ASSERT_TRUE(rec.ok()) << "acknowledged only after the Trigger was stored";
  EXPECT_EQ(rec->via, "realtime:ws");
  EXPECT_TRUE(rec->trigger.addressed);
  EXPECT_EQ(lc_->Config().ping_interval_s, 7) << "the pong's ClientConfig replaces the current one";
  EXPECT_EQ(lc_->Stats().events, 1);
}

// A button press on a question card arrives as a `card` frame: acknowledged at once with the toast
// (base64 JSON in `data`, the callback's answer), and the press is taken into the Engine after.
TEST_F(FeishuWsTest, ACardPressIsAnsweredWithAToastInTheAckAndTakenAfter) {
  lc_ = std::make_unique<LongConnection>(client_.get(), source_.get(), Seeded());
  lc_->Start();
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->connections == 1; }));
  const json value = {{"ticket", 3}, {"option", 1}, {"receipt", "ask:3"}, {"thread", "feishu:chat:oc_a"}};
  ws_->SendEvent(FakeFeishu::CardActionFor("om_card", "oc_a", "ou_alice", value, "ev-card", t0_ + 1'000), 2, false, "m2",
                 "card");
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->acks.size() == 1; }));
  WsFrame ack;
  {
    auto lock = ws_->Lock();
    ack = ws_->acks[0];
  }
  EXPECT_EQ(ack.Header("type"), "card");
  const json payload = json::parse(*ack.payload);
  EXPECT_EQ(payload["code"], 200);
  std::string data = payload["data"].get<std::string>();
  // Decoded by hand, so the check does not share the encoder it checks.
  std::string decoded;
  {
    static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned int buf = 0;
    int bits = 0;
    for (char c : data) {
      if (c == '=') break;
      buf = (buf << 6) | static_cast<unsigned int>(kAlphabet.find(c));
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        decoded.push_back(static_cast<char>((buf >> bits) & 0xFF));
      }
    }
  }
  EXPECT_EQ(json::parse(decoded), (json{{"toast", {{"type", "success"}, {"content", "Answer recorded"}}}}));
  EXPECT_EQ(source_->DrainCardActions(), 1);
  auto rec = views_->GetTrigger("feishu:card:ev-card");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->via, "realtime:ws");
  EXPECT_EQ(rec->trigger.text, "1");
}

TEST_F(FeishuWsTest, AMessageSaidWhileDisconnectedArrivesByBackfillAfterReconnect) {
  source_->Start();
  lc_ = std::make_unique<LongConnection>(client_.get(), source_.get(), Seeded());
  lc_->Start();
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->connections == 1 && ws_->open_count() == 1; }));
  json during = FakeFeishu::Item("om_gap", "oc_a", "ou_alice", "said while the agent was away", t0_ + 2'000);
  ws_->Disconnect();
  {
    auto lock = fake_->Lock();
    fake_->messages.push_back(during);  // no event for it: the connection is down
  }
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->connections == 2; })) << "the client reconnects";
  ASSERT_TRUE(StoredSoon("feishu:om_gap"));
  EXPECT_EQ(views_->GetTrigger("feishu:om_gap")->via, "backfill");
  EXPECT_GE(fake_->Count("POST", "/callback/ws/endpoint"), 2) << "a fresh endpoint for every connect";
  auto lock = ws_->Lock();
  ASSERT_GE(ws_->resources.size(), 2u);
  EXPECT_NE(ws_->resources[0], ws_->resources[1]) << "each connect uses its own ticket";
}

// A half-open connection (the server or a NAT went away without a close) is found by silence:
// nothing for 3 × PingInterval drops it and a fresh endpoint is dialled. Time is the test's.
TEST_F(FeishuWsTest, ASilentConnectionIsDroppedAfterThreePingIntervalsAndRedialled) {
  SharedClock clock;
  LongConnectionOptions o = Seeded();
  o.clock = &clock;
  o.tick_ms = 5;
  lc_ = std::make_unique<LongConnection>(client_.get(), source_.get(), o);
  lc_->Start();
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->pings == 1; })) << "the first ping goes out on connect";
  ASSERT_TRUE(Soon([&] { return lc_->Stats().pongs == 1; }));
  // Pongs keep it alive however long it runs: 4 intervals, more than the silence bound.
  for (int i = 2; i <= 5; ++i) {
    clock.Advance(120'000);
    ASSERT_TRUE(ws_->WaitFor([&] { return ws_->pings == i; })) << "a ping every PingInterval (120 s)";
    ASSERT_TRUE(Soon([&] { return lc_->Stats().pongs == i; }));
  }
  {
    auto lock = ws_->Lock();
    EXPECT_EQ(ws_->connections, 1);
    ws_->answer_pings = false;  // the server goes silent
  }
  // 120 s and 240 s of silence: still the same connection (each ping follows the tick's check).
  for (int i = 6; i <= 7; ++i) {
    clock.Advance(120'000);
    ASSERT_TRUE(ws_->WaitFor([&] { return ws_->pings == i; }));
    auto lock = ws_->Lock();
    EXPECT_EQ(ws_->connections, 1) << "dropped before 3 x PingInterval of silence";
  }
  clock.Advance(120'000);  // 360 s = 3 x PingInterval without a frame
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->connections == 2 && ws_->pings == 8; }))
      << "dropped and redialled; the new connection pings at once";
  EXPECT_EQ(lc_->Stats().silent_drops, 1);
  EXPECT_EQ(fake_->Count("POST", "/callback/ws/endpoint"), 2) << "a fresh endpoint for the new connection";
  {
    auto lock = ws_->Lock();
    EXPECT_NE(ws_->resources[0], ws_->resources[1]);
  }
  auto health = Realtime();
  ASSERT_TRUE(health);
  EXPECT_THAT(health->last_error, ::testing::HasSubstr("long connection silent for 360 s"));
  EXPECT_EQ(health->consecutive_failures, 0) << "the new connection is a success";
}

// Endpoint refusals and refused handshakes are failures of the realtime path: three in a row are
// a system problem; the first connection that opens clears it.
TEST_F(FeishuWsTest, ConnectionFailuresAreRealtimeHealthAndAConnectionClearsThem) {
  {
    auto lock = ws_->Lock();
    ws_->refuse_status = 403;  // the endpoint answers, the WebSocket handshake is refused
  }
  LongConnectionOptions o = Seeded();
  o.initial.reconnect_interval_s = 0;  // no real waiting between attempts in a test
  o.initial.reconnect_nonce_s = 0;
  lc_ = std::make_unique<LongConnection>(client_.get(), source_.get(), o);
  lc_->Start();
  // The 4th handshake comes after the 3rd failure was recorded.
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->refused >= 4; }));
  auto health = Realtime();
  ASSERT_TRUE(health);
  EXPECT_GE(health->consecutive_failures, 3);
  EXPECT_THAT(health->last_error, ::testing::HasSubstr("long connection: "));
  EXPECT_THAT(health->last_error, ::testing::HasSubstr("403"));
  EXPECT_TRUE(RealtimeProblemRaised());
  EXPECT_FALSE(lc_->Connected());

  {
    auto lock = fake_->Lock();
    fake_->ws_endpoint_fn = nullptr;  // now the endpoint itself refuses (code 1000040343)
  }
  ASSERT_TRUE(Soon([&] {
    auto h = Realtime();
    return h && h->last_error.find("long connection endpoint: ") != std::string::npos;
  }));
  EXPECT_THAT(Realtime()->last_error, ::testing::HasSubstr("1000040343"));
  EXPECT_TRUE(RealtimeProblemRaised());

  {
    auto lock = ws_->Lock();
    ws_->refuse_status = 0;
  }
  {
    auto lock = fake_->Lock();
    fake_->ws_endpoint_fn = [this] { return ws_->EndpointAnswer(); };
  }
  // The first ping follows the health record of the open connection.
  ASSERT_TRUE(ws_->WaitFor([&] { return ws_->connections == 1 && ws_->pings >= 1; }));
  health = Realtime();
  EXPECT_EQ(health->consecutive_failures, 0);
  EXPECT_TRUE(health->last_success_at.has_value());
  EXPECT_FALSE(RealtimeProblemRaised()) << "an opened connection clears the problem";
  EXPECT_GE(lc_->Stats().failures, 4);
  EXPECT_TRUE(lc_->Connected());
}

}  // namespace
}  // namespace superagent::feishu
