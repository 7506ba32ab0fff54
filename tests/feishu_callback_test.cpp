// The HTTP callback (POST /hooks/feishu): challenge, AES-256-CBC bodies, the signature over the
// raw body, timestamp freshness — and our crypto checked against the official Node SDK.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <unistd.h>

#include <filesystem>

#include <httplib.h>

#include "engine_fixture.h"
#include "fake_feishu_server.h"
#include "run_binary.h"
#include "superagent/effects.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"
#include "superagent/metrics.h"
#include "result_ok.h"

namespace superagent::feishu {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using superagent::testing::FakeFeishu;

constexpr const char* kKey = "encrypt-k3y";
constexpr const char* kIv = "0123456789abcdef";

class FeishuCallbackTest : public superagent::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    fake_ = std::make_unique<FakeFeishu>(&clock_);
    http_ = MakeHttpClient("superagent-test");
    ClientOptions co;
    co.api_url = fake_->url();
    co.app_id = fake_->app_id;
    co.app_secret = fake_->app_secret;
    client_ = std::make_unique<Client>(http_.get(), &clock_, co);
    options_.encrypt_key = kKey;
    options_.verification_token = "v-token";
    source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, options_);
  }
  void TearDown() override {
    source_.reset();
    client_.reset();
    fake_.reset();
    EngineTest::TearDown();
  }
  // A callback as Feishu sends it: encrypted body, signed with timestamp and nonce.
  CallbackRequest Signed(const json& plaintext, TimeMs at) {
    CallbackRequest r;
    r.body = json{{"encrypt", Encrypt(kKey, plaintext.dump(), kIv)}}.dump();
    r.timestamp = std::to_string(at / 1000);
    r.nonce = "n0nce";
    r.signature = CallbackSignature(r.timestamp, r.nonce, kKey, r.body);
    return r;
  }
  // What an earlier run learned and stored: the bot's identity.
  void KnowIdentity() {
    SourceUpdate u;
    u.source = "feishu";
    u.path = "identity";
    u.set_cursors["identity"] = json{{"open_id", fake_->bot_open_id}}.dump();
    ASSERT_TRUE(engine_->UpdateSource(u).ok());
  }
  std::optional<SourceHealth> Health(const std::string& path) {
    for (const SourceHealth& h : Ok(views_->SourcesHealth()))
      if (h.source == "feishu" && h.path == path) return h;
    return std::nullopt;
  }
  json Event(const std::string& mid) {
    json item = FakeFeishu::Item(mid, "oc_support", "ou_alice", "@_user_1 fix the typo", clock_.NowMs(), "", "",
                                 json::array({FakeFeishu::HistoryMention("@_user_1", fake_->bot_open_id, "Agent")}));
    return FakeFeishu::EventFor(item, "group", "ev-" + mid);
  }

  SourceOptions options_;
  std::unique_ptr<FakeFeishu> fake_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<Source> source_;
};

TEST(FeishuCrypto, DecryptInvertsEncryptAndRefusesGarbage) {
  const std::string enc = Encrypt(kKey, "{\"a\":1}", kIv);
  auto plain = Decrypt(kKey, enc);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, "{\"a\":1}");
  EXPECT_FALSE(Decrypt("other-key", enc).ok());
  EXPECT_FALSE(Decrypt(kKey, "not base64!").ok());
  EXPECT_FALSE(Decrypt(kKey, "AAAA").ok());
}

TEST_F(FeishuCallbackTest, TheUrlVerificationChallengeIsAnswered) {
  CallbackRequest r = Signed(json{{"challenge", "ajls384kdjx98XX"}, {"token", "v-token"}, {"type", "url_verification"}},
                             clock_.NowMs());
  r.signature.clear();  // Feishu does not sign the challenge
  CallbackReply reply = source_->HandleCallback(r);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(json::parse(reply.body), (json{{"challenge", "ajls384kdjx98XX"}}));
  CallbackRequest wrong = Signed(json{{"challenge", "x"}, {"token", "forged"}, {"type", "url_verification"}}, clock_.NowMs());
  EXPECT_EQ(source_->HandleCallback(wrong).status, 401);
}

TEST_F(FeishuCallbackTest, ASignedEncryptedEventIsStored) {
  KnowIdentity();
  CallbackReply reply = source_->HandleCallback(Signed(Event("om_cb1"), clock_.NowMs()));
  EXPECT_EQ(reply.status, 200) << reply.body;
  auto rec = views_->GetTrigger("feishu:om_cb1");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->via, "realtime:callback");
  EXPECT_TRUE(rec->trigger.addressed);
}

TEST_F(FeishuCallbackTest, BadSignatureStaleTimeOrMissingKeyIs401AndNothingStored) {
  CallbackRequest bad = Signed(Event("om_cb2"), clock_.NowMs());
  bad.signature[0] = bad.signature[0] == 'a' ? 'b' : 'a';
  EXPECT_EQ(source_->HandleCallback(bad).status, 401);
  CallbackRequest tampered = Signed(Event("om_cb2"), clock_.NowMs());
  tampered.body.insert(1, " ");  // same JSON, different bytes: the signature covers the raw body
  EXPECT_EQ(source_->HandleCallback(tampered).status, 401);
  CallbackRequest stale = Signed(Event("om_cb2"), clock_.NowMs() - 3'600'000);
  EXPECT_EQ(source_->HandleCallback(stale).status, 401);
  CallbackRequest unsigned_event = Signed(Event("om_cb2"), clock_.NowMs());
  unsigned_event.signature.clear();
  EXPECT_EQ(source_->HandleCallback(unsigned_event).status, 401);
  EXPECT_FALSE(views_->GetTrigger("feishu:om_cb2").ok());

  SourceOptions no_key;
  Source keyless(engine_.get(), views_.get(), client_.get(), &clock_, no_key);
  EXPECT_EQ(keyless.HandleCallback(Signed(Event("om_cb2"), clock_.NowMs())).status, 401);
  EXPECT_FALSE(views_->GetTrigger("feishu:om_cb2").ok());
}

TEST_F(FeishuCallbackTest, TheRouteAnswersOverHttp) {
  KnowIdentity();
  httplib::Server server;
  InstallCallbackRoute(server, source_.get());
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  CallbackRequest ok = Signed(Event("om_cb3"), clock_.NowMs());
  HttpRequest req;
  req.method = "POST";
  req.url = "http://127.0.0.1:" + std::to_string(port) + "/hooks/feishu";
  req.headers = {{"Content-Type", "application/json"},
                 {"X-Lark-Request-Timestamp", ok.timestamp},
                 {"X-Lark-Request-Nonce", ok.nonce},
                 {"X-Lark-Signature", ok.signature}};
  req.body = ok.body;
  HttpResponse good = http_->Send(req);
  req.headers.back().second = std::string(64, '0');
  req.body = Signed(Event("om_cb4"), clock_.NowMs()).body;
  HttpResponse bad = http_->Send(req);
  while (!server.is_running()) std::this_thread::yield();
  server.stop();
  t.join();
  EXPECT_EQ(good.status, 200) << good.body;
  EXPECT_EQ(bad.status, 401);
  EXPECT_TRUE(views_->GetTrigger("feishu:om_cb3").ok());
  EXPECT_FALSE(views_->GetTrigger("feishu:om_cb4").ok());
}

// The body used to be decrypted before its signature was checked, and a body that did not decrypt
// got another answer than a bad signature: a padding oracle. Now the signature comes first and
// every failed proof gets the same answer; refusals are counted and summarized by the next round.
TEST_F(FeishuCallbackTest, EveryRefusalGetsOneAnswerAndTheSignatureComesFirst) {
  KnowIdentity();
  const auto refused_before = superagent::metrics::ProcessRuntime().RefusedDeliveries()["feishu"];
  auto forged = [&](std::string body) {  // a wrong signature over `body`
    CallbackRequest r = Signed(Event("om_cb5"), clock_.NowMs());
    r.body = std::move(body);
    r.signature = std::string(64, 'a');
    return r;
  };
  std::vector<CallbackRequest> refusals = {
      forged(Signed(Event("om_cb5"), clock_.NowMs()).body),                       // valid body, wrong signature
      forged(json{{"encrypt", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}.dump()),  // undecryptable
      forged("{\"encrypt\": 5}"),                                                  // wrong JSON type
      forged("\xff\xfe 寄件人 🙂"),                                                // not JSON, invalid UTF-8
      forged(""),
  };
  CallbackRequest unsigned_garbage;
  unsigned_garbage.body = json{{"encrypt", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}.dump();
  refusals.push_back(unsigned_garbage);  // no headers at all, undecryptable
  CallbackRequest unsigned_event = Signed(Event("om_cb5"), clock_.NowMs());
  unsigned_event.signature.clear();
  refusals.push_back(unsigned_event);
  refusals.push_back(Signed(Event("om_cb5"), clock_.NowMs() - 3'600'000));  // stale
  const CallbackReply first = source_->HandleCallback(refusals.front());
  EXPECT_EQ(first.status, 401);
  for (const CallbackRequest& r : refusals) {
    CallbackReply reply = source_->HandleCallback(r);
    EXPECT_EQ(reply.status, first.status) << r.body;
    EXPECT_EQ(reply.body, first.body) << r.body;
  }
  EXPECT_FALSE(views_->GetTrigger("feishu:om_cb5").ok());
  EXPECT_EQ(superagent::metrics::ProcessRuntime().RefusedDeliveries()["feishu"] - refused_before,
            static_cast<std::int64_t>(refusals.size()) + 1);
  EXPECT_FALSE(Health("callback").has_value()) << "a refusal wrote to the store";
  source_->RunOnce();
  ASSERT_TRUE(Health("callback").has_value());
  EXPECT_THAT(Health("callback")->last_error, HasSubstr("9 refused deliveries since the last round"));
  EXPECT_THAT(Health("callback")->last_error, ::testing::Not(HasSubstr("寄件人")));
  // A signed body that does not decrypt is Feishu's mistake, not a forgery: a plain 400.
  CallbackRequest signed_garbage;
  signed_garbage.body = json{{"encrypt", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}.dump();
  signed_garbage.timestamp = std::to_string(clock_.NowMs() / 1000);
  signed_garbage.nonce = "n";
  signed_garbage.signature = CallbackSignature(signed_garbage.timestamp, signed_garbage.nonce, kKey, signed_garbage.body);
  EXPECT_EQ(source_->HandleCallback(signed_garbage).status, 400);
}

// Before the bot's identity is known (nothing stored yet), an event must not make the request
// wait on Feishu: it is answered 503 at once (Feishu delivers it again) and nothing is stored.
TEST_F(FeishuCallbackTest, AnEventBeforeTheIdentityIsKnownIsAnsweredAtOnce) {
  fake_->Hold("GET", "/open-apis/bot/v3/info");
  // Answered without a request reaching the held Feishu: proof that it did not wait, no stopwatch.
  CallbackReply reply = source_->HandleCallback(Signed(Event("om_cb6"), clock_.NowMs()));
  EXPECT_EQ(reply.status, 503) << reply.body;
  EXPECT_FALSE(fake_->Holding()) << "the request thread asked Feishu";
  EXPECT_FALSE(views_->GetTrigger("feishu:om_cb6").ok());
  fake_->Release();
  KnowIdentity();  // a round learned it
  EXPECT_EQ(source_->HandleCallback(Signed(Event("om_cb6"), clock_.NowMs())).status, 200);
  EXPECT_TRUE(views_->GetTrigger("feishu:om_cb6").ok());
}

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::filesystem::path candidate = std::filesystem::path(dirs.substr(start, end - start)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

TEST_F(FeishuCallbackTest, CryptoAgreesWithTheOfficialNodeSdk) {
  const std::string node = FindOnPath("node");
  ASSERT_FALSE(node.empty()) << "node is not installed: `cmake/dev.sh test` installs nodejs and npm";
  const std::filesystem::path tests_dir = std::filesystem::path(SUPERAGENT_SOURCE_DIR) / "tests";
  ASSERT_TRUE(std::filesystem::exists(tests_dir / "node_modules" / "@larksuiteoapi" / "node-sdk"))
      << "run `npm ci` in tests/ (cmake/dev.sh test does)";
  const json event = Event("om_sdk1");
  CallbackRequest ours = Signed(event, clock_.NowMs());
  const json second = Event("om_sdk2");
  json input = {{"key", kKey},          {"encrypt", json::parse(ours.body)["encrypt"]},
                {"body", ours.body},    {"timestamp", ours.timestamp},
                {"nonce", ours.nonce},  {"signature", ours.signature},
                {"plaintext2", second.dump()}};
  superagent::testing::RunOptions opts;
  opts.stdin_text = input.dump();
  opts.cwd = tests_dir.string();
  opts.timeout_ms = 30'000;
  auto r = superagent::testing::RunProgram(node, {"feishu/crypto_check.mjs"}, opts);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << r.out;
  EXPECT_EQ(out["decrypted"], event.dump()) << "the SDK reads what we encrypt";
  EXPECT_TRUE(out["valid"].get<bool>()) << "the SDK accepts our signature";
  auto plain = Decrypt(kKey, out["encrypt2"].get<std::string>());
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(*plain, second.dump()) << "we read what the SDK-style encryption produced";
  EXPECT_EQ(CallbackSignature(ours.timestamp, ours.nonce, kKey, out["body2"].get<std::string>()), out["signature2"]);
  // And the whole callback path takes the SDK-made body.
  CallbackRequest theirs{ours.timestamp, ours.nonce, out["signature2"].get<std::string>(), out["body2"].get<std::string>()};
  KnowIdentity();  // a callback never asks Feishu who the bot is; an earlier round learned it
  EXPECT_EQ(source_->HandleCallback(theirs).status, 200);
  EXPECT_TRUE(views_->GetTrigger("feishu:om_sdk2").ok());
}

// Found by fuzz/feishu_callback_fuzz (docs/009-fuzzing.md): a field of the wrong JSON type in the
// body ({"type": 5}, even unsigned and unencrypted) or in a signed event's envelope threw out of
// the handler (500, the exception's text in a header). Each is refused or skipped instead.
TEST_F(FeishuCallbackTest, FieldsOfTheWrongTypeAreRefusedOrSkippedFoundByFuzzing) {
  CallbackRequest plain;
  plain.body = R"({"type":5,"token":["v-token"],"challenge":{}})";
  plain.timestamp = std::to_string(clock_.NowMs() / 1000);
  CallbackReply reply;
  ASSERT_NO_THROW(reply = source_->HandleCallback(plain));
  EXPECT_TRUE(reply.status == 400 || reply.status == 401) << reply.status << " " << reply.body;

  const json envelopes[] = {
      {{"type", 5}},
      {{"schema", 2}, {"header", {{"event_type", "im.message.receive_v1"}, {"token", "v-token"}}}},
      {{"schema", "2.0"}, {"header", {{"event_type", 5}, {"token", "v-token"}}}},
      {{"schema", "2.0"}, {"header", {{"event_type", "im.message.receive_v1"}, {"token", 7}}}},
  };
  for (const json& e : envelopes) {
    ASSERT_NO_THROW(reply = source_->HandleCallback(Signed(e, clock_.NowMs()))) << e.dump();
    EXPECT_TRUE(reply.status == 200 || reply.status == 400 || reply.status == 401) << e.dump() << ": " << reply.body;
  }
}

// Issue 22: a question asked in a Feishu chat is a card; pressing a button answers it. The whole
// way: alice's request in oc_support becomes a Ticket, the Ticket asks alice, the outbox sends the
// card, and presses come back through the signed callback.
class FeishuCardActionTest : public FeishuCallbackTest {
 protected:
  void SetUp() override {
    FeishuCallbackTest::SetUp();
    KnowIdentity();
    json item = FakeFeishu::Item("om_req", "oc_support", "ou_alice", "@_user_1 fix the broken link", clock_.NowMs(), "", "",
                                 json::array({FakeFeishu::HistoryMention("@_user_1", fake_->bot_open_id, "Agent")}));
    fake_->messages.push_back(item);
    ASSERT_EQ(source_->HandleCallback(Signed(FakeFeishu::EventFor(item, "group", "ev-req"), clock_.NowMs())).status, 200);
    assessor_.answers.push_back(superagent::testing::ScriptedAssessor::Accept());
    ASSERT_EQ(Drain(), 1);
    ticket_ = Ok(ExplainNow("feishu:om_req"))["ticket_created"]["id"].get<TicketId>();
    HumanAction ask;
    ask.thread = "feishu:chat:oc_support";
    ask.actor = "ou_alice";
    ask.question = "Which link should CONTRIBUTING.md point to?";
    ask.form = {{"options", {"docs/setup.md", "维基页面 📚"}}};
    ASSERT_TRUE(EngineTestPeer(*engine_).AskPerson(ticket_, ask, "ask:card").ok());
    channel_ = std::make_unique<FeishuChannel>(client_.get(), &clock_);
    EffectsLoop loop(engine_.get(), {channel_.get()}, &clock_, {}, 1);
    ASSERT_TRUE(loop.RunOnce().ok());  // the acknowledgement and the question, in that order
    ASSERT_TRUE(loop.RunOnce().ok());
    auto lock = fake_->Lock();
    for (const json& m : fake_->sent)
      if (m["msg_type"] == "interactive") card_ = m;
  }
  void TearDown() override {
    channel_.reset();
    FeishuCallbackTest::TearDown();
  }
  // The value of button `n` of the card Feishu received.
  json ButtonValue(int n) {
    const json card = json::parse(card_["body"]["content"].get<std::string>());
    return card["elements"][1]["actions"][n - 1]["value"];
  }
  CallbackReply Press(const std::string& who, const json& value, const std::string& event_id) {
    return source_->HandleCallback(Signed(
        FakeFeishu::CardActionFor(card_.value("message_id", ""), "oc_support", who, value, event_id, clock_.NowMs()),
        clock_.NowMs()));
  }
  Stage StageNow() { return Ok(views_->GetTicket(ticket_)).stage; }

  TicketId ticket_ = 0;
  json card_;
  std::unique_ptr<FeishuChannel> channel_;
};

TEST_F(FeishuCardActionTest, ThePressOfTheAskedPersonAnswersWithTheOptionAndOthersAreOrdinaryMessages) {
  ASSERT_TRUE(card_.is_object()) << "no card was sent";
  EXPECT_EQ(card_["parent_id"], "om_req") << "the card replies to the request";
  EXPECT_EQ(ButtonValue(2), (json{{"ticket", ticket_}, {"option", 2}, {"receipt", "ask:card"}, {"thread", "feishu:chat:oc_support"}}));

  // bob presses first: answered with the toast, recorded as his message, and the question stays open.
  CallbackReply bob = Press("ou_bob", ButtonValue(1), "ev-bob");
  EXPECT_EQ(bob.status, 200);
  EXPECT_EQ(json::parse(bob.body), (json{{"toast", {{"type", "success"}, {"content", "Answer recorded"}}}}));
  EXPECT_FALSE(views_->GetTrigger("feishu:card:ev-bob").ok()) << "the Engine took it on the request's thread";
  EXPECT_EQ(source_->DrainCardActions(), 1);
  TriggerRecord bobs = Ok(views_->GetTrigger("feishu:card:ev-bob"));
  EXPECT_EQ(bobs.trigger.actor, "ou_bob");
  EXPECT_EQ(bobs.trigger.text, "1");
  EXPECT_EQ(bobs.via, "realtime:callback");
  EXPECT_EQ(StageNow(), Stage::kWaitingForPerson) << "only the asked person's press answers";

  // alice presses 2: the Ticket resumes with the structured answer.
  EXPECT_EQ(Press("ou_alice", ButtonValue(2), "ev-alice").status, 200);
  // Feishu did not hear back in time and delivers the same press again: still one Trigger.
  EXPECT_EQ(Press("ou_alice", ButtonValue(2), "ev-alice").status, 200);
  EXPECT_EQ(source_->DrainCardActions(), 2);
  EXPECT_EQ(StageNow(), Stage::kIdle);
  TriggerRecord alices = Ok(views_->GetTrigger("feishu:card:ev-alice"));
  EXPECT_EQ(alices.trigger.threads, (std::vector<std::string>{"feishu:chat:oc_support"}));
  EXPECT_EQ(alices.trigger.channel, "feishu:chat:oc_support:reply:" + card_.value("message_id", ""));
  int answers = 0;
  for (const TicketInput& in : Ok(views_->TicketInputs(ticket_))) {
    if (in.kind != "answer") continue;
    ++answers;
    EXPECT_EQ(in.body["answer"], (json{{"option", 2}, {"text", "维基页面 📚"}})) << in.body.dump();
    EXPECT_EQ(in.body["from"], "ou_alice");
  }
  EXPECT_EQ(answers, 1) << "the replayed press answered again";
}

// "A failed read is never none": while the cursors (which say which chats are direct) cannot be
// read, a press is kept, not taken as a group chat's; the next pass takes it.
TEST_F(FeishuCardActionTest, APressIsKeptWhileTheCursorsCannotBeReadAndTakenOnceTheyCan) {
  ASSERT_TRUE(card_.is_object());
  EXPECT_EQ(Press("ou_alice", ButtonValue(2), "ev-kept").status, 200);
  sqlite3* outside = nullptr;  // another process breaks the table under the daemon, then mends it
  ASSERT_EQ(sqlite3_open((dir_ / "superagent.db").string().c_str(), &outside), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(outside, "ALTER TABLE source_cursors RENAME TO hidden_cursors", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(source_->DrainCardActions(), 0);
  EXPECT_FALSE(views_->GetTrigger("feishu:card:ev-kept").ok());
  ASSERT_EQ(sqlite3_exec(outside, "ALTER TABLE hidden_cursors RENAME TO source_cursors", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(outside);
  EXPECT_EQ(source_->DrainCardActions(), 1);
  EXPECT_EQ(Ok(views_->GetTrigger("feishu:card:ev-kept")).trigger.actor, "ou_alice");
  EXPECT_EQ(StageNow(), Stage::kIdle) << "the asked person's answer, taken late, still answers";
}

TEST_F(FeishuCardActionTest, AForgedPressIsRefusedAndChangesNothing) {
  ASSERT_TRUE(card_.is_object());
  CallbackRequest forged = Signed(FakeFeishu::CardActionFor(card_.value("message_id", ""), "oc_support", "ou_alice",
                                                            ButtonValue(1), "ev-forged", clock_.NowMs()),
                                  clock_.NowMs());
  forged.signature = CallbackSignature(forged.timestamp, forged.nonce, "not-our-key", forged.body);
  EXPECT_EQ(source_->HandleCallback(forged).status, 401);
  CallbackRequest unsigned_press = forged;
  unsigned_press.signature.clear();
  EXPECT_EQ(source_->HandleCallback(unsigned_press).status, 401);
  EXPECT_EQ(source_->DrainCardActions(), 0);
  EXPECT_FALSE(views_->GetTrigger("feishu:card:ev-forged").ok());
  EXPECT_EQ(StageNow(), Stage::kWaitingForPerson);
}

TEST_F(FeishuCardActionTest, HostileValuesAreRefusedPreciselyAndChangeNothing) {
  ASSERT_TRUE(card_.is_object());
  json v = ButtonValue(1);
  auto with = [&](const char* key, json value) {
    json out = v;
    if (value.is_discarded()) out.erase(key); else out[key] = std::move(value);
    return out;
  };
  const std::pair<json, std::string> cases[] = {
      {with("option", "2"), "event.action.value.option: must be a number from 1 to 9"},
      {with("option", 99999999999LL), "event.action.value.option: must be a number from 1 to 9"},
      {with("option", -1), "event.action.value.option: must be a number from 1 to 9"},
      {with("option", 0), "event.action.value.option: must be a number from 1 to 9"},
      {with("option", "二"), "event.action.value.option: must be a number from 1 to 9"},
      {with("option", 1.5), "event.action.value.option: must be a number from 1 to 9"},
      {with("ticket", json(json::value_t::discarded)), "event.action.value.ticket: must be a Ticket number"},
      {with("ticket", "第七"), "event.action.value.ticket: must be a Ticket number"},
      {with("receipt", std::string(5000, 'x')), "event.action.value.receipt: must be the question's message id"},
      {with("thread", "feishu:chat:oc_elsewhere"), "event.action.value.thread: must be this chat or a topic in it"},
      {with("thread", "github:acme/widgets:issue:1"), "event.action.value.thread: must be this chat or a topic in it"},
      {json("2"), "event.action.value: must be an object"},
      {json(nullptr), "event.action.value: must be an object"},
  };
  int i = 0;
  for (const auto& [value, why] : cases) {
    CallbackReply reply = Press("ou_alice", value, "ev-hostile-" + std::to_string(i++));
    EXPECT_EQ(reply.status, 200) << value.dump();
    EXPECT_EQ(json::parse(reply.body), (json{{"toast", {{"type", "error"}, {"content", "Not taken: " + why}}}})) << value.dump();
  }
  // A press with no operator, or in no chat, is refused the same way.
  json no_operator = FakeFeishu::CardActionFor(card_.value("message_id", ""), "oc_support", "", v, "ev-anon", clock_.NowMs());
  EXPECT_THAT(source_->HandleCallback(Signed(no_operator, clock_.NowMs())).body, HasSubstr("event.operator.open_id: missing"));
  json no_chat = FakeFeishu::CardActionFor(card_.value("message_id", ""), "", "ou_alice", v, "ev-nochat", clock_.NowMs());
  EXPECT_THAT(source_->HandleCallback(Signed(no_chat, clock_.NowMs())).body, HasSubstr("event.context.open_chat_id: missing"));
  EXPECT_EQ(source_->DrainCardActions(), 0) << "nothing refused was queued";
  EXPECT_EQ(StageNow(), Stage::kWaitingForPerson);
  for (int k = 0; k < i; ++k) EXPECT_FALSE(views_->GetTrigger("feishu:card:ev-hostile-" + std::to_string(k)).ok());
}

}  // namespace
}  // namespace superagent::feishu
