// The model gateway (issue 33, item 2) between a client and a recording loopback upstream, for
// each of the four wire formats: what reaches the API (the real key, never the pass; only model
// endpoints; Gemini's query key dropped; Chat streams asked for their usage), what comes back
// (the API's bytes, streamed as they come; its errors with the key masked), what is counted (the
// usage the API reported, with the configured prices, against the Ticket), and what is refused
// (no pass, a forged, closed or expired one, a spent budget, a body too large) — each refusal in
// the wire's own error shape, and without calling the API. The real CLIs through the gateway
// are model_gateway_cli_test.cpp's.
#include "superagent/model_gateway.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include <httplib.h>

#include "exec_fixture.h"
#include "result_ok.h"
#include "superagent/http.h"
#include "superagent/metrics.h"

namespace superagent::testing {
namespace {

using exec::ModelWire;
using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

const char* kRealKey = "sk-real-model-key-7e1d9c0b55aa";

// A loopback model API that records every request and answers what the test says.
class RecordingUpstream {
 public:
  struct Seen {
    std::string path, query, body;
    httplib::Headers headers;
  };
  struct Answer {
    int status = 200;
    std::string type = "text/event-stream";
    std::vector<std::string> chunks;
    std::shared_future<void> hold;  // valid: wait for it before the second chunk
  };

  RecordingUpstream() {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      Answer a;
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::string q;
        for (const auto& [k, v] : req.params) q += (q.empty() ? "" : "&") + k + "=" + v;
        seen_.push_back({req.path, q, req.body, req.headers});
        a = answer_;
      }
      res.status = a.status;
      auto chunks = std::make_shared<std::vector<std::string>>(a.chunks);
      res.set_chunked_content_provider(a.type, [chunks, hold = a.hold](std::size_t, httplib::DataSink& sink) {
        for (std::size_t i = 0; i < chunks->size(); ++i) {
          if (i == 1 && hold.valid() && hold.wait_for(std::chrono::seconds(20)) != std::future_status::ready) return false;
          if (!sink.write((*chunks)[i].data(), (*chunks)[i].size())) return false;
        }
        sink.done();
        return true;
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 5'000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ~RecordingUpstream() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& suffix = "") const { return "http://127.0.0.1:" + std::to_string(port_) + suffix; }
  void Set(Answer a) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = std::move(a);
  }
  std::vector<Seen> seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<Seen> seen_;
  Answer answer_;
};

// One wire's call as its CLI makes it, and the streamed answer its API gives (with usage).
struct WireCase {
  ModelWire wire;
  std::string upstream_suffix;  // the real API's base path, as configured
  std::string path;             // what the CLI calls, below the gateway's base URL
  std::string key_header;       // where the CLI puts its key ("authorization" gets "Bearer ")
  std::string body;
  std::vector<std::string> events;
  std::int64_t prompt_tokens, completion_tokens, cached;
  std::string model;
  std::string upstream_key_header, upstream_key_value;
};

std::string Sse(const json& j) { return "data: " + j.dump() + "\n\n"; }

std::vector<WireCase> Cases() {
  return {
      {ModelWire::kAnthropicMessages, "", "/v1/messages", "x-api-key",
       R"({"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"修一下 typo 🙏"}]})",
       {"event: message_start\n" + Sse({{"type", "message_start"},
                                        {"message", {{"model", "claude-sonnet-4-5"},
                                                     {"usage", {{"input_tokens", 30}, {"cache_read_input_tokens", 70},
                                                                {"cache_creation_input_tokens", 5}, {"output_tokens", 1}}}}}}),
        "event: content_block_delta\n" + Sse({{"type", "content_block_delta"}, {"delta", {{"type", "text_delta"}, {"text", "好的"}}}}),
        "event: message_delta\n" + Sse({{"type", "message_delta"}, {"usage", {{"output_tokens", 21}}}}),
        "event: message_stop\n" + Sse({{"type", "message_stop"}})},
       105, 21, 70, "claude-sonnet-4-5", "x-api-key", kRealKey},
      {ModelWire::kOpenAiChat, "/compatible-mode/v1", "/v1/chat/completions", "authorization",
       R"({"model":"qwen3-coder-plus","stream":true,"messages":[{"role":"user","content":"hi"}]})",
       {Sse({{"model", "qwen3-coder-plus"}, {"choices", {{{"index", 0}, {"delta", {{"content", "hello"}}}}}}}),
        Sse({{"model", "qwen3-coder-plus"}, {"choices", json::array()},
             {"usage", {{"prompt_tokens", 200}, {"completion_tokens", 12}, {"prompt_tokens_details", {{"cached_tokens", 50}}}}}}),
        "data: [DONE]\n\n"},
       200, 12, 50, "qwen3-coder-plus", "authorization", std::string("Bearer ") + kRealKey},
      {ModelWire::kOpenAiResponses, "/v1", "/v1/responses", "authorization",
       R"({"model":"gpt-5.5","stream":true,"input":[{"role":"user","content":"hi"}]})",
       {"event: response.created\n" + Sse({{"type", "response.created"}, {"response", {{"model", "gpt-5.5"}}}}),
        "event: response.completed\n" +
            Sse({{"type", "response.completed"},
                 {"response", {{"model", "gpt-5.5"},
                               {"usage", {{"input_tokens", 1000}, {"input_tokens_details", {{"cached_tokens", 200}}},
                                          {"output_tokens", 50}}}}}})},
       1000, 50, 200, "gpt-5.5", "authorization", std::string("Bearer ") + kRealKey},
      {ModelWire::kGemini, "", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "x-goog-api-key",
       R"({"contents":[{"role":"user","parts":[{"text":"hi"}]}]})",
       {Sse({{"candidates", {{{"content", {{"parts", {{{"text", "hi"}}}}}}}}},
             {"usageMetadata", {{"promptTokenCount", 900}, {"candidatesTokenCount", 3}}},
             {"modelVersion", "gemini-2.5-pro"}}),
        Sse({{"candidates", json::array()},
             {"usageMetadata", {{"promptTokenCount", 900}, {"candidatesTokenCount", 40}, {"thoughtsTokenCount", 8},
                                {"cachedContentTokenCount", 100}}},
             {"modelVersion", "gemini-2.5-pro"}})},
       900, 48, 100, "gemini-2.5-pro", "x-goog-api-key", kRealKey},
  };
}

void PrintTo(const WireCase& c, std::ostream* os) { *os << exec::ModelWireName(c.wire); }

class ModelGatewayTest : public ExecTest, public ::testing::WithParamInterface<WireCase> {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    http_ = MakeHttpClient("superagent-test");
  }
  void TearDown() override {
    gateway_.reset();
    ExecTest::TearDown();
  }

  void StartGateway(double in_price = 0, double out_price = 0, std::size_t max_request = 32u << 20) {
    exec::ModelGatewayOptions o;
    o.wire = GetParam().wire;
    o.upstream = upstream_.url(GetParam().upstream_suffix);
    o.api_key = kRealKey;
    o.usd_per_million_input = in_price;
    o.usd_per_million_output = out_price;
    o.max_request_bytes = max_request;
    auto g = exec::ModelGateway::Start(o, http_.get(), engine_.get(), views_.get(), &gateway_clock_);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    gateway_ = std::move(*g);
    upstream_.Set({200, "text/event-stream", GetParam().events, {}});
  }

  // A Ticket with a session, and a pass for its turn.
  exec::GatewayPass PassFor(TicketId* ticket_out = nullptr, const std::string& trigger = "g1") {
    const TicketId ticket = AcceptedTicket(trigger);
    auto session = Ok(EngineTestPeer(*engine_).OpenSession(ticket, "t", "claude-code"));
    if (ticket_out != nullptr) *ticket_out = ticket;
    return gateway_->Open(ticket, session.id, 60'000);
  }

  // The CLI's call: its path below the pass's base URL, its key where its SDK puts it.
  HttpResponse Call(const exec::GatewayPass& pass, const std::string& token, std::string path = "",
                    std::string body = "", std::function<bool(const char*, std::size_t)> on_body = nullptr) {
    const WireCase& c = GetParam();
    HttpRequest r;
    r.method = "POST";
    std::string base = pass.base_url;
    if (!base.empty() && base.size() >= 3 && base.substr(base.size() - 3) == "/v1") base.resize(base.size() - 3);
    r.url = base + (path.empty() ? c.path : path);
    r.body = body.empty() ? c.body : body;
    r.headers = {{"content-type", "application/json"}, {"anthropic-version", "2023-06-01"}, {"x-stainless-os", "Linux"}};
    if (!token.empty())
      r.headers.emplace_back(c.key_header, c.key_header == "authorization" ? "Bearer " + token : token);
    r.on_body = on_body;
    return http_->Send(r);
  }

  json Totals(TicketId ticket) { return Ok(views_->TokenUsage(ticket)); }

  // A streamed call whose API sends its first event and then holds the rest until `release` is
  // set: returns once the client has the first event, with the call still in flight.
  std::future<HttpResponse> CallInFlight(const exec::GatewayPass& pass, std::promise<void>* release) {
    upstream_.Set({200, "text/event-stream", GetParam().events, release->get_future().share()});
    auto first_event = std::make_shared<std::promise<void>>();
    auto told = std::make_shared<bool>(false);
    auto arrived = first_event->get_future();
    auto call = std::async(std::launch::async, [this, pass, first_event, told] {
      return Call(pass, pass.token, "", "", [first_event, told](const char*, std::size_t) {
        if (!*told) {
          *told = true;
          first_event->set_value();
        }
        return true;
      });
    });
    EXPECT_EQ(arrived.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "no first event";
    return call;
  }

  RecordingUpstream upstream_;
  std::unique_ptr<HttpClient> http_;
  FakeClock gateway_clock_;
  std::unique_ptr<exec::ModelGateway> gateway_;
};

TEST_P(ModelGatewayTest, AForwardedCallCarriesTheRealKeyAndItsUsageIsCountedAgainstTheTicket) {
  const WireCase& c = GetParam();
  StartGateway(/*in_price=*/3, /*out_price=*/15);
  TicketId ticket = 0;
  const exec::GatewayPass pass = PassFor(&ticket);
  EXPECT_THAT(pass.token, ::testing::StartsWith("sa-pass-"));
  EXPECT_EQ(pass.token.size(), 8u + 43u);
  EXPECT_THAT(pass.base_url, ::testing::StartsWith("http://127.0.0.1:" + std::to_string(gateway_->port())));

  HttpResponse r = Call(pass, pass.token);
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  // The API's answer, byte for byte.
  std::string expected;
  for (const std::string& e : c.events) expected += e;
  EXPECT_EQ(r.body, expected);
  EXPECT_THAT(r.Header("content-type"), HasSubstr("text/event-stream"));

  auto seen = upstream_.seen();
  ASSERT_EQ(seen.size(), 1u);
  const std::string rest = c.path.substr(0, c.path.find('?'));
  const std::string prefix = c.wire == ModelWire::kOpenAiChat || c.wire == ModelWire::kOpenAiResponses ? "/v1" : "";
  EXPECT_EQ(seen[0].path, c.upstream_suffix + rest.substr(prefix.size()));
  // The real key, where this API wants it; the pass nowhere; no header the gateway does not know.
  std::string headers;
  for (const auto& [k, v] : seen[0].headers) headers += k + ": " + v + "\n";
  EXPECT_THAT(headers, HasSubstr(c.upstream_key_header == "authorization" ? "Authorization: " + c.upstream_key_value
                                                                          : c.upstream_key_header + ": " + c.upstream_key_value));
  EXPECT_THAT(headers + seen[0].body + seen[0].query, Not(HasSubstr(pass.token)));
  EXPECT_THAT(headers, Not(HasSubstr("x-stainless")));
  if (c.wire == ModelWire::kGemini) {
    EXPECT_EQ(seen[0].query, "alt=sse");
  }
  if (c.wire == ModelWire::kOpenAiChat) {
    // Asked for its usage, the rest of the request as sent.
    json body = json::parse(seen[0].body);
    EXPECT_EQ(body["stream_options"]["include_usage"], true);
    EXPECT_EQ(body["messages"], json::parse(c.body)["messages"]);
  } else {
    EXPECT_EQ(seen[0].body, c.body);
  }

  // Counted once, from the API's own figures, with the configured prices.
  json totals = Totals(ticket);
  EXPECT_EQ(totals["calls"], 1);
  EXPECT_EQ(totals["prompt_tokens"], c.prompt_tokens);
  EXPECT_EQ(totals["completion_tokens"], c.completion_tokens);
  EXPECT_EQ(totals["cache_hit_tokens"], c.cached);
  auto budget = Ok(views_->BudgetOf(ticket, clock_.NowMs()));
  ASSERT_TRUE(budget.has_value());
  EXPECT_DOUBLE_EQ(budget->spent.cost_usd, (c.prompt_tokens * 3.0 + c.completion_tokens * 15.0) / 1e6);
  EXPECT_EQ(gateway_->counts().forwarded, 1);
}

TEST_P(ModelGatewayTest, NoPassAForgedOneAClosedOneAndAnExpiredOneAreRefusedWithoutCallingTheApi) {
  StartGateway();
  const std::int64_t refused_before = metrics::ProcessRuntime().GatewayRefusals()["pass"];
  TicketId ticket = 0;
  const exec::GatewayPass pass = PassFor(&ticket);
  std::string forged = pass.token;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  for (const std::string& token : {std::string(), forged, std::string(kRealKey), std::string("sa-pass-密钥🔑"),
                                   std::string(5000, 'x')}) {
    SCOPED_TRACE(token.substr(0, 20));
    HttpResponse r = Call(pass, token);
    EXPECT_EQ(r.status, 401) << r.body;
    json body = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << r.body;
    // The wire's own error shape, so the CLI shows the reason.
    if (GetParam().wire == ModelWire::kAnthropicMessages) EXPECT_EQ(body["error"]["type"], "authentication_error");
    else if (GetParam().wire == ModelWire::kGemini) EXPECT_EQ(body["error"]["status"], "UNAUTHENTICATED");
    else EXPECT_EQ(body["error"]["code"], "invalid_api_key");
    EXPECT_THAT(r.body, HasSubstr("no valid pass"));
  }
  EXPECT_EQ(Call(pass, pass.token).status, 200);  // the control: the real pass works

  // Closed: refused at once. Expired: refused once its lifetime has passed, even if never closed.
  EXPECT_EQ(gateway_->Close(pass.token), 0);
  EXPECT_EQ(Call(pass, pass.token).status, 401);
  const exec::GatewayPass other = gateway_->Open(ticket, 1, 1'000);
  EXPECT_NE(other.token, pass.token);
  EXPECT_EQ(Call(other, other.token).status, 200);
  gateway_clock_.Advance(1'000);
  EXPECT_EQ(Call(other, other.token).status, 401);
  EXPECT_EQ(upstream_.seen().size(), 2u);
  EXPECT_EQ(gateway_->counts().refused_pass, 7);
  // /metrics counts them too (superagent_model_gateway_refused_total{reason="pass"}).
  EXPECT_EQ(metrics::ProcessRuntime().GatewayRefusals()["pass"] - refused_before, 7);
  EXPECT_EQ(Totals(ticket)["calls"], 2);
}

TEST_P(ModelGatewayTest, OnlyTheWiresModelEndpointsAreForwarded) {
  StartGateway();
  const exec::GatewayPass pass = PassFor();
  for (const std::string& path : {std::string("/v1/files"), std::string("/v1/models"), std::string("/v1/messages/../files"),
                                  std::string("/v1/messages/batches"), std::string("/v1beta/models/x:embedContent"),
                                  std::string("/v1/organizations/usage_report"), std::string("/v1/%E6%A8%A1%E5%9E%8B"),
                                  std::string("/")}) {
    SCOPED_TRACE(path);
    HttpResponse r = Call(pass, pass.token, path);
    EXPECT_EQ(r.status, 404) << r.body;
    EXPECT_TRUE(json::parse(r.body, nullptr, false).is_object()) << r.body;
  }
  // Nor any other method: the key is for model calls only.
  HttpRequest get;
  get.url = "http://127.0.0.1:" + std::to_string(gateway_->port()) + "/v1/models";
  get.headers = {{"authorization", "Bearer " + pass.token}, {"x-api-key", pass.token}};
  EXPECT_EQ(http_->Send(get).status, 404);
  EXPECT_TRUE(upstream_.seen().empty());
}

TEST_P(ModelGatewayTest, ASpentBudgetRefusesTheNextCallAndTheTurnLearnsIt) {
  const WireCase& c = GetParam();
  // A budget a little over one call's tokens: the second call is still forwarded (the spend is
  // under the limit when it starts), the third is refused.
  const std::int64_t one_call = c.prompt_tokens + c.completion_tokens;
  Open(MakePolicy("observe", "rules:=>budgets:\n  explicit: {tokens: " + std::to_string(one_call + 1) + "}\nrules:"));
  services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
  StartGateway();
  TicketId ticket = 0;
  const exec::GatewayPass pass = PassFor(&ticket);
  EXPECT_EQ(Call(pass, pass.token).status, 200);
  EXPECT_EQ(Call(pass, pass.token).status, 200);
  HttpResponse refused = Call(pass, pass.token);
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_THAT(refused.body, HasSubstr("tokens budget is spent"));
  EXPECT_EQ(upstream_.seen().size(), 2u);
  EXPECT_EQ(Totals(ticket)["total_tokens"], 2 * one_call);
  EXPECT_EQ(gateway_->counts().refused_budget, 1);
  EXPECT_EQ(gateway_->Close(pass.token), 1) << "the turn learns its calls were refused at the budget";
}

TEST_P(ModelGatewayTest, AStreamedAnswerReachesTheClientBeforeTheApiHasFinished) {
  StartGateway();
  TicketId ticket = 0;
  const exec::GatewayPass pass = PassFor(&ticket);
  std::promise<void> release;
  upstream_.Set({200, "text/event-stream", GetParam().events, release.get_future().share()});
  // The client holds the first event while the API still holds back the rest: the gateway
  // relayed it, it did not wait for the whole answer.
  std::string got;
  bool released = false;
  HttpResponse r = Call(pass, pass.token, "", "", [&](const char* p, std::size_t n) {
    got.append(p, n);
    if (!released && got.size() >= GetParam().events[0].size()) {
      released = true;
      release.set_value();
    }
    return true;
  });
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_TRUE(released);
  std::string expected;
  for (const std::string& e : GetParam().events) expected += e;
  EXPECT_EQ(got, expected);
  EXPECT_EQ(Totals(ticket)["prompt_tokens"], GetParam().prompt_tokens);
}

TEST_P(ModelGatewayTest, ClosingThePassAbandonsACallInFlight) {
  StartGateway();
  const exec::GatewayPass pass = PassFor();
  std::promise<void> never;
  auto call = CallInFlight(pass, &never);
  gateway_->Close(pass.token);  // the turn ended
  ASSERT_EQ(call.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the call outlived its turn";
  HttpResponse r = call.get();
  EXPECT_THAT(r.body + r.error, Not(HasSubstr(GetParam().events.back())));
  never.set_value();
}

TEST_P(ModelGatewayTest, TheApisErrorsComeBackWithTheKeyMaskedAndAnUnreachableApiIsA502) {
  StartGateway();
  const exec::GatewayPass pass = PassFor();
  upstream_.Set({401, "application/json",
                    {std::string(R"({"error":{"message":"Incorrect API key provided: )") + kRealKey + R"(."}})"}, {}});
  HttpResponse r = Call(pass, pass.token);
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.body, Not(HasSubstr(kRealKey)));
  EXPECT_THAT(r.body, HasSubstr("Incorrect API key provided: [superagent model key]"));

  // Not JSON, not UTF-8: relayed as it is (the CLI judges it), no usage recorded.
  upstream_.Set({500, "text/plain", {"\xff\xfe oops \xe6\xa8"}, {}});
  r = Call(pass, pass.token);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "\xff\xfe oops \xe6\xa8");

  // An API that is not there: a 502 in the wire's shape, said at once.
  exec::ModelGatewayOptions o;
  o.wire = GetParam().wire;
  o.upstream = "http://127.0.0.1:" + std::to_string(FreePort());
  o.api_key = kRealKey;
  auto dead = Ok(exec::ModelGateway::Start(o, http_.get(), engine_.get(), views_.get(), &gateway_clock_));
  const exec::GatewayPass p2 = dead->Open(1, 1, 60'000);
  r = Call(p2, p2.token);
  EXPECT_EQ(r.status, 502);
  EXPECT_THAT(r.body, HasSubstr("could not be reached"));
  EXPECT_EQ(dead->counts().upstream_failed, 1);
}

TEST_P(ModelGatewayTest, AHugeOrMalformedRequestIsHandledAndChangesNothing) {
  StartGateway(0, 0, /*max_request=*/64 * 1024);
  TicketId ticket = 0;
  const exec::GatewayPass pass = PassFor(&ticket);
  HttpResponse r = Call(pass, pass.token, "", std::string(65 * 1024, 'x'));
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(upstream_.seen().empty());
  // Wrong JSON types, invalid UTF-8, an empty body: forwarded as they are (the API judges them),
  // and the Chat rewrite leaves what it does not understand alone.
  for (const std::string& body : {std::string(R"({"stream":"yes","messages":7})"), std::string("[1,2]"),
                                  std::string("{\"stream\":true,\"messages\":\"\xff\"}"), std::string(" ")}) {
    r = Call(pass, pass.token, "", body);
    EXPECT_EQ(r.status, 200) << body;
  }
  auto seen = upstream_.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].body, R"({"stream":"yes","messages":7})");
  EXPECT_EQ(seen[1].body, "[1,2]");
  EXPECT_EQ(seen[2].body, "{\"stream\":true,\"messages\":\"\xff\"}");
}

TEST_P(ModelGatewayTest, TheGatewayStopsCleanlyWithACallInFlight) {
  StartGateway();
  const exec::GatewayPass pass = PassFor();
  std::promise<void> never;
  auto call = CallInFlight(pass, &never);
  gateway_.reset();  // the daemon stops: no hang, no crash
  ASSERT_EQ(call.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  never.set_value();
}

INSTANTIATE_TEST_SUITE_P(Wires, ModelGatewayTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<WireCase>& i) {
                           std::string n = exec::ModelWireName(i.param.wire);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(ModelWireTest, EachCodingCliHasItsWire) {
  EXPECT_EQ(Ok(exec::ModelWireOf("claude-code")), ModelWire::kAnthropicMessages);
  EXPECT_EQ(Ok(exec::ModelWireOf("qwen-code")), ModelWire::kOpenAiChat);
  EXPECT_EQ(Ok(exec::ModelWireOf("codex")), ModelWire::kOpenAiResponses);
  EXPECT_EQ(Ok(exec::ModelWireOf("gemini-cli")), ModelWire::kGemini);
  EXPECT_FALSE(exec::ModelWireOf("builtin").ok());
  EXPECT_FALSE(exec::ModelWireOf("克劳德").ok());
}

}  // namespace
}  // namespace superagent::testing
