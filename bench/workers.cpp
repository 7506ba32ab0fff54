// Workers on other machines (issue 36; docs/008 §11): three figures, each from real processes —
// `superagent serve`, `superagent worker`, the real Claude Code against the loopback model API.
//   overhead  one mention worked to its pull request with execution.placement: local, then with
//             remote (one worker on this host): the same scripted task, alternately, `--runs` each.
//             Target: remote ≤ 1.2× local at the median.
//   drain     `--turns` mentions on as many issues at once, each turn's shell step a 4 s wait, worked
//             by 1 worker, then by 3 (one slot each). Target: 3 workers drain the queue ≥ 2.5× as
//             fast. The wait stands for what a real turn mostly is, the model's time: the three
//             "machines" here share this host's 2 cores, which real ones would not, so the CLIs'
//             own start-up CPU (about 0.8 s a turn) is the part that does not parallelize here.
//   held      `--held` workers connected at once (joined, each with a claim waiting for work, as
//             idle workers keep one), the daemon's resident memory over 10 s. Target: 200 workers
//             at ≤ 50 MB.
//
//   bench_workers [--runs N] [--turns Q] [--held M]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "bench_common.h"
#include "daemon_process.h"
#include "fake_coding_model.h"
#include "fake_github_server.h"
#include "superagent/github.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using bench::NowSeconds;
using bench::Percentile;
using nlohmann::json;

constexpr char kBenchJoin[] = "bench-join-token-0123456789abcdef01234";
constexpr char kBenchKey[] = "sk-bench-workers-0123456789";

long BenchRssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

// One daemon with its repository, fake GitHub and fake model; workers started on demand.
class Install {
 public:
  Install(const std::string& name, const std::string& placement, const std::string& command, int issues)
      : scratch_("workers-" + name), dir_(scratch_.path()), github_(SystemClock()) {
    model_ = std::make_unique<FakeCodingModel>(
        FakeCodingModel::Wire::kAnthropic, kBenchKey, "claude-sonnet-4-5",
        CodingScript{.old_text = "teh typo", .new_text = "the typo", .command = command});
    for (int i = 1; i <= issues; ++i) {
      json issue = WebhookExample("issue_comment", "created")["issue"];
      issue["number"] = i;
      github_.issues[i] = issue;
    }
    const std::string seed = (dir_ / "seed").string();
    fs::create_directories(seed);
    std::system(("cd " + seed + " && git init -q -b master . && printf 'There is teh typo.\\n' > README.md"
                 " && git add -A && git -c user.name=t -c user.email=t@t commit -q -m init && git clone -q --bare . " +
                 (dir_ / "origin.git").string())
                    .c_str());
    port_ = FreeLoopbackPort();
    workers_port_ = FreeLoopbackPort();
    std::ofstream(dir_ / "policy.yaml") << "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n";
    std::ofstream(dir_ / "superagent.yaml")
        << "data_dir: " << (dir_ / "data").string() << "\npolicy_file: " << (dir_ / "policy.yaml").string()
        << "\npanel:\n  listen: 127.0.0.1:" << port_ << "\ngithub:\n  api_url: " << github_.api_url()
        << "\n  repo: " << github_.repo << "\nexecution:\n  slots: 3\n  executor: claude-code\n  placement: " << placement
        << "\n  git_remote: " << (dir_ / "origin.git").string() << "\n  claude_code:\n    binary: " << Claude()
        << "\n    model: claude-sonnet-4-5\n    api_key_env: SA_BENCH_KEY\n    base_url: " << model_->base_url()
        << "\nworkers:\n  listen: 127.0.0.1:" << workers_port_ << "\n  join_token_env: SA_JOIN\n"
        << "log:\n  level: info\n";
    daemon_ = std::make_unique<DaemonProcess>(
        SUPERAGENT_BINARY, std::vector<std::string>{"serve", "--config", (dir_ / "superagent.yaml").string()},
        std::vector<std::pair<std::string, std::string>>{{"GITHUB_TOKEN", "ghp_BENCHTOKEN0123456789"},
                                                         {"GITHUB_WEBHOOK_SECRET", "hook-secret"},
                                                         {"SA_BENCH_KEY", kBenchKey},
                                                         {"SA_JOIN", kBenchJoin}});
    ok_ = daemon_->WaitForLine("ready") && daemon_->WaitForCount("github identity", 1);
  }
  ~Install() {
    if (std::getenv("BENCH_KEEP")) {  // the logs beside the kept scratch directory, for a look afterwards
      std::ofstream(dir_ / "daemon.log") << daemon_->log();
      for (std::size_t i = 0; i < workers_.size(); ++i)
        std::ofstream(dir_ / ("worker-" + std::to_string(i + 1) + ".log")) << workers_[i]->log();
    }
    for (auto& w : workers_) w.reset();
    daemon_.reset();
  }
  static std::string Claude() { return NodeModulesDir() + "/.bin/claude"; }
  bool ok() const { return ok_; }
  DaemonProcess& daemon() { return *daemon_; }
  int workers_port() const { return workers_port_; }

  bool StartWorker(const std::string& name) {
    const fs::path yaml = dir_ / (name + ".yaml");
    std::ofstream(yaml) << "daemon_url: http://127.0.0.1:" << workers_port_ << "\njoin_token_env: SA_JOIN\nname: " << name
                        << "\nslots: 1\nwork_dir: " << (dir_ / name).string()
                        << "\nexecutors:\n  claude-code:\n    binary: " << Claude() << "\n";
    workers_.push_back(std::make_unique<DaemonProcess>(
        SUPERAGENT_BINARY, std::vector<std::string>{"worker", "--config", yaml.string()},
        std::vector<std::pair<std::string, std::string>>{{"SA_JOIN", kBenchJoin}}));
    return workers_.back()->WaitForLine("worker joined the daemon");
  }

  // Codertocat's signed mention on issue `issue`; the HTTP status.
  int Mention(int issue, std::int64_t comment) {
    json payload = WebhookExample("issue_comment", "created");
    payload["issue"] = github_.issues[issue];
    payload["comment"] = github_.MakeComment(comment, issue, "Codertocat", "@superagent-bot please fix the typo in README",
                                             SystemClock()->NowMs());
    const std::string body = payload.dump();
    httplib::Client http("127.0.0.1", port_);
    auto res = http.Post("/hooks/github",
                         {{"X-GitHub-Event", "issue_comment"},
                          {"X-GitHub-Delivery", "bench-" + std::to_string(comment)},
                          {"X-Hub-Signature-256", github::WebhookSignature("hook-secret", body)}},
                         body, "application/json");
    return res ? res->status : 0;
  }

 private:
  bench::ScratchDir scratch_;
  fs::path dir_;
  FakeGitHub github_;
  std::unique_ptr<FakeCodingModel> model_;
  int port_ = 0, workers_port_ = 0;
  std::unique_ptr<DaemonProcess> daemon_;
  std::vector<std::unique_ptr<DaemonProcess>> workers_;
  bool ok_ = false;
};

// Seconds from the mentions' delivery to their `turns` pull requests; -1 when they did not all open.
double WorkTurns(const std::string& name, const std::string& placement, int workers, int turns,
                 const std::string& command) {
  Install install(name, placement, command, turns);
  if (!install.ok()) {
    std::fprintf(stderr, "%s: the daemon did not start:\n%s\n", name.c_str(), install.daemon().log().c_str());
    return -1;
  }
  for (int i = 0; i < workers; ++i)
    if (!install.StartWorker("worker-" + std::to_string(i + 1))) return -1;
  const double t0 = NowSeconds();
  for (int i = 1; i <= turns; ++i)
    if (install.Mention(i, 700000000 + i) != 200) return -1;
  if (!install.daemon().WaitForCount("pull request opened", turns, 600'000)) {
    std::fprintf(stderr, "%s: %d pull requests did not open:\n%s\n", name.c_str(), turns,
                 install.daemon().log().c_str());
    return -1;
  }
  return NowSeconds() - t0;
}

}  // namespace
}  // namespace superagent::testing

int main(int argc, char** argv) {
  using namespace superagent;
  using namespace superagent::testing;
  const int runs = static_cast<int>(bench::Arg(argc, argv, "runs", 5));
  const int turns = static_cast<int>(bench::Arg(argc, argv, "turns", 6));
  const int held = static_cast<int>(bench::Arg(argc, argv, "held", 200));
  if (!fs::exists(Install::Claude())) {
    std::fprintf(stderr, "%s is missing: run `cmake/dev.sh test` (npm ci in tests/)\n", Install::Claude().c_str());
    return 1;
  }

  // 1. A remote turn's overhead over a local one.
  std::vector<double> local, remote;
  for (int i = 0; i < runs; ++i) {
    const double l = WorkTurns("local", "local", 0, 1, "git diff --stat");
    const double r = WorkTurns("remote", "remote", 1, 1, "git diff --stat");
    if (l < 0 || r < 0) return 1;
    local.push_back(l);
    remote.push_back(r);
    std::printf("overhead run %d: local %.3f s, remote %.3f s\n", i + 1, l, r);
  }
  const double local_p50 = Percentile(local, 0.5), remote_p50 = Percentile(remote, 0.5);
  const double ratio = remote_p50 / local_p50;
  std::printf("overhead: a mention to its PR, median local %.3f s, remote %.3f s: %.2fx (target <= 1.2x)\n", local_p50,
              remote_p50, ratio);

  // 2. Draining a queue with 1 worker, then 3.
  const double one = WorkTurns("drain1", "remote", 1, turns, "sleep 4");
  const double three = WorkTurns("drain3", "remote", 3, turns, "sleep 4");
  if (one < 0 || three < 0) return 1;
  const double speedup = one / three;
  std::printf("drain: %d turns, 1 worker %.2f s, 3 workers %.2f s: %.2fx as fast (target >= 2.5x)\n", turns, one, three,
              speedup);

  // 3. Many connected workers: joined, each with a claim waiting.
  Install install("held", "remote", "true", 1);
  if (!install.ok()) return 1;
  const pid_t daemon = install.daemon().pid();
  const long rss_before = BenchRssKb(daemon);
  std::atomic<bool> stop{false};
  std::atomic<int> joined{0}, claims{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < held; ++i) {
    threads.emplace_back([&, i] {
      const std::string name = "held-" + std::to_string(i);
      httplib::Client c("127.0.0.1", install.workers_port());
      c.set_read_timeout(30, 0);
      auto j = c.Post("/workers/v1/join", json{{"worker", name}, {"join_token", kBenchJoin}}.dump(), "application/json");
      if (!j || j->status != 200) {
        std::fprintf(stderr, "%s: join answered %d %s\n", name.c_str(), j ? j->status : 0,
                     j ? j->body.c_str() : httplib::to_string(j.error()).c_str());
        return;
      }
      const std::string credential = json::parse(j->body)["credential"];
      ++joined;
      const std::string claim = json{{"worker", name}, {"executors", {"codex"}}, {"slots", 1}}.dump();
      while (!stop) {
        auto r = c.Post("/workers/v1/claim", {{"Authorization", "Bearer " + credential}}, claim, "application/json");
        if (r && r->status == 200) ++claims;
      }
    });
  }
  for (int i = 0; i < 300 && joined < held; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  long rss_max = 0;
  for (int i = 0; i < 10; ++i) {  // a benchmark of holding: it waits and samples
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rss_max = std::max(rss_max, BenchRssKb(daemon));
  }
  stop = true;
  for (auto& t : threads) t.join();
  std::printf("held: %d workers joined and waiting, daemon RSS %.1f MB before, at most %.1f MB with them (target <= 50 MB)\n",
              joined.load(), rss_before / 1024.0, rss_max / 1024.0);
  if (joined < held) {
    std::fprintf(stderr, "only %d of %d workers joined\n", joined.load(), held);
    return 1;
  }
  bench::Summary("workers")
      .Add("local_s", local_p50)
      .Add("remote_s", remote_p50)
      .Add("overhead_x", ratio)
      .Add("drain_1_s", one)
      .Add("drain_3_s", three)
      .Add("drain_speedup_x", speedup)
      .Add("held", joined.load())
      .Add("held_rss_mb", rss_max / 1024.0)
      .Add("pass", ratio <= 1.2 && speedup >= 2.5 && rss_max <= 50 * 1024 ? 1 : 0)
      .Print();
  return 0;
}
