// Benchmark 2 (issue 10): webhook → acknowledgement overhead of the real daemon.
//
// `superagent serve` runs against a loopback fake GitHub (tests/fake_github_server.h) and a
// zero-latency fake model (tests/fake_chat_server.h, answering `decide` with accept at once).
// Each mention is a signed `issue_comment.created` webhook; the time is taken from just before
// the webhook request is sent to the moment the fake GitHub receives the acknowledgement POST.
// Mentions are sent one at a time (each waits for its acknowledgement), so the figure is the
// daemon's own overhead, not queueing. Target: p50 ≤ 10 ms, p95 ≤ 50 ms.
//
// Why each mention is on its own discussion: a mention on a Thread that already has a Ticket is
// delivered to that Ticket (SPEC §4.1) and acknowledged by no one, so 1 000 acknowledgements need
// 1 000 new requests, one per issue 1..1000.
#include <sqlite3.h>

#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>

#include <httplib.h>

#include "bench_common.h"
#include "daemon_env.h"
#include "fake_chat_server.h"
#include "fake_github_server.h"
#include "superagent/github.h"

using namespace superagent;
using namespace superagent::bench;
namespace sat = superagent::testing;
using nlohmann::json;

// The floor: one commit with the store's pragmas (WAL, synchronous=FULL) on this disk. The path
// to an acknowledgement commits at least four times before the POST leaves (Receive, BeginEval,
// FinishEval, the outbox claim), each waiting for its fsync.
double CommitFloorMs(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (x TEXT)", nullptr, nullptr, nullptr);
  std::vector<double> ms;
  for (int i = 0; i < 200; ++i) {
    const double t0 = NowSeconds();
    sqlite3_exec(db, "BEGIN IMMEDIATE; INSERT INTO t VALUES ('a comment of ordinary length'); COMMIT", nullptr, nullptr,
                 nullptr);
    ms.push_back(1000 * (NowSeconds() - t0));
  }
  sqlite3_close(db);
  return Percentile(ms, 0.5);
}

int main(int argc, char** argv) {
  const int mentions = static_cast<int>(Arg(argc, argv, "mentions", 1000));
  ScratchDir dir("webhook");
  const double commit_ms = CommitFloorMs(dir / "floor.db");
  sat::FakeGitHub github(SystemClock());
  sat::FakeChatServer model;
  const json issue_template = sat::WebhookExample("issue_comment", "created")["issue"];
  for (int n = 1; n <= mentions; ++n) {
    json issue = issue_template;
    issue["number"] = n;
    issue["url"] = "https://api.github.com" + github.repo_path() + "/issues/" + std::to_string(n);
    issue["html_url"] = "https://github.com/" + github.repo + "/issues/" + std::to_string(n);
    github.issues[n] = issue;
  }
  const std::string text = "@superagent-bot please fix the typo in README";
  for (int i = 0; i < mentions; ++i)
    model.Push(model.Decide(sat::FakeChatServer::DecideArgs("accept", {}, "please fix the typo",
                                                                "I'll fix the typo in the README heading.")));

  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, double> posted_at;  // POST target → time it arrived
  github.on_request = [&](const sat::FakeGitHub::Logged& l) {
    if (l.method != "POST") return;
    std::lock_guard<std::mutex> lock(mu);
    posted_at.emplace(l.target, NowSeconds());
    cv.notify_all();
  };

  DaemonSetup setup;
  // The policy this benchmark measures, written here so a default elsewhere cannot change what it
  // measures: one sender opening a thousand Tickets in a minute is exactly what the circuit breaker
  // holds (after the 10th, each later mention waited out its timeout), so it is off.
  setup.policy = "mode: observe\ncircuit_breaker: { per_sender: 0, per_source: 0 }\nsources:\n  github:\n"
                 "    people: [Codertocat]\n";
  setup.extra_config = "github:\n  api_url: " + github.url() + "\n  repo: " + github.repo +
                       "\nllm:\n  base_url: " + model.base_url() + "\n  api_key_env: BENCH_MODEL_KEY\n";
  setup.extra_config += LocalExecutionConfig(dir);
  setup.env = {{"GITHUB_TOKEN", "ghp_BENCHTOKEN0123456789"},
               {"GITHUB_WEBHOOK_SECRET", "bench-secret"},
               {"BENCH_MODEL_KEY", model.api_key()}};
  BenchDaemon daemon(dir, setup);
  if (daemon.Start() < 0) {
    std::fprintf(stderr, "daemon did not start; log: %s\n", daemon.log_path().c_str());
    return 1;
  }

  std::vector<double> latency_ms;
  int missing = 0;
  for (int i = 0; i < mentions; ++i) {
    const int n = i + 1;
    json payload = sat::WebhookExample("issue_comment", "created");
    payload["issue"] = github.issues[n];
    payload["comment"] = github.MakeComment(700'000'000 + i, n, "Codertocat", text, SystemClock()->NowMs());
    const std::string body = payload.dump();
    const std::string target = github.repo_path() + "/issues/" + std::to_string(n) + "/comments";
    httplib::Headers headers = {{"X-GitHub-Event", "issue_comment"},
                                {"X-GitHub-Delivery", "bench-" + std::to_string(i)},
                                {"X-Hub-Signature-256", github::WebhookSignature("bench-secret", body)}};
    httplib::Client http("127.0.0.1", daemon.port());
    const double t0 = NowSeconds();
    auto res = http.Post("/hooks/github", headers, body, "application/json");
    // 202: accepted before the daemon's first round learned its login, taken by that round.
    if (!res || (res->status != 200 && res->status != 202)) {
      std::fprintf(stderr, "webhook %d answered %d\n", i, res ? res->status : 0);
      ++missing;
      continue;
    }
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return posted_at.count(target) > 0; })) {
      ++missing;
      continue;
    }
    latency_ms.push_back(1000 * (posted_at[target] - t0));
  }
  const int code = daemon.Stop();
  const double p50 = Percentile(latency_ms, 0.5), p95 = Percentile(latency_ms, 0.95),
               p99 = Percentile(latency_ms, 0.99), max = Percentile(latency_ms, 1.0), min = Percentile(latency_ms, 0);
  std::printf("webhook -> acknowledgement POST, %zu of %d mentions acknowledged (daemon exit %d)\n", latency_ms.size(),
              mentions, code);
  std::printf("  min %.1f ms, p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms (target p50 <= 10, p95 <= 50)\n", min,
              p50, p95, p99, max);
  std::printf("  floor on this disk: one commit (fsync) %.1f ms p50; 4 serial commits = %.1f ms\n", commit_ms,
              4 * commit_ms);
  // By tenth of the run: whether the latency grows with the store and the Tickets behind it.
  std::printf("  p50 by tenth of the run:");
  for (int part = 0; part < 10; ++part) {
    const std::size_t from = latency_ms.size() * part / 10, to = latency_ms.size() * (part + 1) / 10;
    std::vector<double> slice(latency_ms.begin() + static_cast<long>(from), latency_ms.begin() + static_cast<long>(to));
    if (!slice.empty()) std::printf(" %.1f", Percentile(slice, 0.5));
  }
  std::printf(" ms\n");
  if (!model.problems().empty()) std::printf("  fake model saw problems, first: %s\n", model.problems()[0].c_str());
  Summary("webhook_ack")
      .Add("mentions", mentions)
      .Add("acknowledged", latency_ms.size())
      .Add("p50_ms", p50)
      .Add("p95_ms", p95)
      .Add("p99_ms", p99)
      .Add("max_ms", max)
      .Add("commit_floor_ms", commit_ms)
      .Add("pass", (p50 <= 10 && p95 <= 50 && missing == 0) ? 1 : 0)
      .Print();
  // A run that did not measure what it says is a failure (bench-smoke fails on it); a missed target is a figure.
  if (missing > 0 || code != 0 || !model.problems().empty()) {
    std::fprintf(stderr, "invalid run: %d of %d mentions not acknowledged, daemon exit %d, %zu model problem(s); log: %s\n",
                 missing, mentions, code, model.problems().size(), daemon.log_path().c_str());
    return 1;
  }
  return 0;
}
