// Benchmark (issue 33): what the model gateway adds to one model call on loopback.
//
// A loopback Anthropic Messages API answers every call with the same streamed message (about
// 2 KB of server-sent events, usage included). The same call is made `--calls` times (default
// 400) two ways, alternating so both see the same machine: straight to the API, and through the
// gateway with a pass — which checks the pass and the Ticket's budget, forwards with the real key,
// relays the stream, reads the usage and records it in SQLite before the answer ends. Target: the
// gateway adds ≤ 5 ms at the 95th percentile.
#include <cstdio>

#include <httplib.h>

#include "bench_common.h"
#include "engine_fixture.h"
#include "superagent/http.h"
#include "superagent/model_gateway.h"

using namespace superagent;
using namespace superagent::bench;

namespace {

std::string Stream() {
  auto ev = [](const std::string& name, const std::string& data) { return "event: " + name + "\ndata: " + data + "\n\n"; };
  std::string s = ev("message_start",
                     R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":1200,"output_tokens":1}}})");
  for (int i = 0; i < 12; ++i)
    s += ev("content_block_delta",
            R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Some words of the answer, a line at a time, "}})");
  s += ev("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":160}})");
  s += ev("message_stop", R"({"type":"message_stop"})");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = static_cast<int>(Arg(argc, argv, "calls", 400));
  ScratchDir dir("gateway");
  LogToFile(dir / "log");

  httplib::Server api;
  const std::string body = Stream();
  api.Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(body, "text/event-stream");
  });
  const int api_port = api.bind_to_any_port("127.0.0.1");
  std::thread api_thread([&] { api.listen_after_bind(); });
  while (!api.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  // A Ticket with a session and a budget, as a turn has.
  auto policy = superagent::testing::MakePolicy("observe", "rules:=>budgets:\n  explicit: {tokens: 100000000}\nrules:");
  auto engine = Engine::Open(dir / "superagent.db", SystemClock(), policy, "bench");
  if (!engine.ok()) {
    std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
    return 1;
  }
  auto views = Views::Open(dir / "superagent.db");
  if (!views.ok()) {
    std::fprintf(stderr, "views: %s\n", views.status().ToString().c_str());
    return 1;
  }

  Trigger t;
  t.id = "b1";
  t.source = "github";
  t.scope = "comments";
  t.actor = "alice";
  t.human = true;
  t.addressed = true;
  t.text = "@agent please fix the typo in README";
  t.at = SystemClock()->NowMs();
  t.threads = {"github:issue:1"};
  t.channel = "github:issue:1";
  (void)(*engine)->Receive(t, "bench");
  superagent::testing::ScriptedAssessor assessor;
  assessor.answers.push_back(superagent::testing::ScriptedAssessor::Accept());
  (void)RunOneEval(**engine, assessor);
  auto story = (*views)->Explain("b1", (*engine)->CurrentPolicy(), SystemClock()->NowMs());
  if (!story.ok() || !story->contains("ticket_created")) {
    std::fprintf(stderr, "no Ticket was created\n");
    return 1;
  }
  const TicketId ticket = (*story)["ticket_created"]["id"].get<TicketId>();
  auto session = EngineTestPeer(**engine).OpenSession(ticket, "bench", "claude-code");

  auto http = MakeHttpClient("bench");
  exec::ModelGatewayOptions o;
  o.wire = exec::ModelWire::kAnthropicMessages;
  o.upstream = "http://127.0.0.1:" + std::to_string(api_port);
  o.api_key = "sk-bench-real-key-0123456789";
  auto gateway = exec::ModelGateway::Start(o, http.get(), engine->get(), views->get(), SystemClock());
  if (!gateway.ok()) {
    std::fprintf(stderr, "gateway: %s\n", gateway.status().ToString().c_str());
    return 1;
  }
  const exec::GatewayPass pass = (*gateway)->Open(ticket, session->id, 3'600'000);

  auto call = [&](const std::string& base, const std::string& key) {
    HttpRequest r;
    r.method = "POST";
    r.url = base + "/v1/messages";
    r.headers = {{"content-type", "application/json"}, {"anthropic-version", "2023-06-01"}, {"x-api-key", key}};
    r.body = R"({"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"fix the typo"}]})";
    const double start = NowSeconds();
    HttpResponse got = http->Send(r);
    const double ms = (NowSeconds() - start) * 1000;
    return got.status == 200 && got.body == body ? ms : -1.0;
  };
  std::vector<double> direct, via;
  for (int i = 0; i < 20; ++i) {  // warm both paths (connections, caches)
    call(o.upstream, o.api_key);
    call(pass.base_url, pass.token);
  }
  for (int i = 0; i < calls; ++i) {
    const double d = call(o.upstream, o.api_key), g = call(pass.base_url, pass.token);
    if (d < 0 || g < 0) {
      std::printf("call %d failed\n", i);
      Summary("gateway").Add("pass", 0).Print();
      return 1;
    }
    direct.push_back(d);
    via.push_back(g);
  }
  const double added_p50 = Percentile(via, 0.5) - Percentile(direct, 0.5);
  const double added_p95 = Percentile(via, 0.95) - Percentile(direct, 0.95);
  auto usage = (*views)->TokenUsage(ticket);
  std::printf("%d calls each way, %zu-byte streamed answer: direct p50 %.2f ms p95 %.2f ms; through the gateway "
              "p50 %.2f ms p95 %.2f ms: %.2f ms added at p50, %.2f ms at p95 (%lld calls recorded)\n",
              calls, body.size(), Percentile(direct, 0.5), Percentile(direct, 0.95), Percentile(via, 0.5),
              Percentile(via, 0.95), added_p50, added_p95,
              usage.ok() ? static_cast<long long>((*usage)["calls"].get<std::int64_t>()) : -1LL);
  Summary("gateway")
      .Add("calls", calls)
      .Add("direct_p95_ms", Percentile(direct, 0.95))
      .Add("gateway_p95_ms", Percentile(via, 0.95))
      .Add("added_p50_ms", added_p50)
      .Add("added_p95_ms", added_p95)
      .Add("target_ms", 5)
      .Add("pass", added_p95 <= 5 ? 1 : 0)
      .Print();
  gateway->reset();
  api.stop();
  api_thread.join();
  return 0;
}
