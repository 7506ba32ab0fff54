// Benchmark 3 (issues 10 and 37): the idle cost of the real daemon serving `--repos` repositories
// (default 1; the full run also measures 200).
//
// `superagent serve` polls a loopback fake GitHub (tests/fake_github_server.h, which answers
// conditional requests with 304 like GitHub: free of rate limit) holding every repository, in
// real time with the shortest allowed interval (github.poll_interval_seconds: 60), webhooks on
// (a secret is set). Nothing happens in any repository. Once every repository had its first
// round (the start-up reads: the pollers' pace, 300 requests a minute, spreads them), a window of
// `--seconds` (default 130) is measured: resident memory (VmRSS, and the peak VmHWM), CPU time
// used / wall time, and GitHub requests that count against the rate limit (any answer but 304),
// scaled to one minute, with all requests a minute (the pace GitHub's secondary limit sees).
// Targets: one repository RSS ≤ 20 MB, ≤ 1 counted request a minute; 200 repositories RSS ≤ 30 MB,
// ≤ 20 counted requests a minute; CPU ≈ 0.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "bench_common.h"
#include "daemon_env.h"
#include "fake_github_server.h"

using namespace superagent;
using namespace superagent::bench;
namespace sat = superagent::testing;

namespace {

long StatusKb(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::atol(line.c_str() + key.size() + 1);
  return -1;
}

// A field of /proc/<pid>/smaps_rollup in kB ("Pss", "Anonymous"), -1 when unknown.
long RollupKb(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::atol(line.c_str() + key.size() + 1);
  return -1;
}

// utime + stime in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(all.substr(all.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(field.c_str());
    if (i == 15) break;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv) {
  const double window_s = static_cast<double>(Arg(argc, argv, "seconds", 130));
  const int repos = static_cast<int>(std::max(1L, Arg(argc, argv, "repos", 1)));
  ScratchDir dir("idle");
  sat::FakeGitHub github(SystemClock());
  github.issues[1] = sat::WebhookExample("issue_comment", "created")["issue"];
  github.comments.push_back(github.MakeComment(1, 1, "Codertocat", "an old comment", SystemClock()->NowMs() - 86'400'000));
  // The other repositories are answered through the first one's server.
  std::vector<std::unique_ptr<sat::FakeGitHub>> others;
  std::string repo_list = "    - " + github.repo + "\n";
  for (int i = 1; i < repos; ++i) {
    auto& g = others.emplace_back(std::make_unique<sat::FakeGitHub>(SystemClock(), /*listen=*/false));
    char name[64];
    std::snprintf(name, sizeof name, "bench-org/service-%03d", i);
    g->repo = name;
    g->repo_info = {{"full_name", g->repo}, {"default_branch", "main"}};
    github.other_repositories[g->repo] = g.get();
    repo_list += "    - " + g->repo + "\n";
  }

  std::mutex mu;
  struct Seen {
    double at;
    int status;
    std::string target;
  };
  std::vector<Seen> seen;
  std::set<std::string> first_round;  // repositories whose issue listing was read
  auto log = [&](const sat::FakeGitHub::Logged& l) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back({NowSeconds(), l.status, l.method + " " + l.target});
    const auto listing = l.target.find("/issues?state=all");
    if (listing != std::string::npos) first_round.insert(l.target.substr(0, listing));
  };
  github.on_request = log;
  for (auto& g : others) g->on_request = log;

  DaemonSetup setup;
  setup.extra_config = "github:\n  api_url: " + github.url() + "\n  repos:\n" + repo_list +
                       "  poll_interval_seconds: 60\n";
  setup.extra_config += LocalExecutionConfig(dir);
  setup.env = {{"GITHUB_TOKEN", "ghp_BENCHTOKEN0123456789"}, {"GITHUB_WEBHOOK_SECRET", "bench-secret"}};
  BenchDaemon daemon(dir, setup);
  if (daemon.Start() < 0) {
    std::fprintf(stderr, "daemon did not start; log: %s\n", daemon.log_path().c_str());
    return 1;
  }
  // A benchmark of idling: it waits, for every repository's first round and a little more.
  const double started = NowSeconds();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::lock_guard<std::mutex> lock(mu);
    if (static_cast<int>(first_round.size()) >= repos || NowSeconds() - started > 900) break;
  }
  const double catch_up_s = NowSeconds() - started;
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const double settle_s = NowSeconds() - started;
  const double t0 = NowSeconds(), cpu0 = CpuSeconds(daemon.pid());
  long rss_max = 0;
  while (NowSeconds() - t0 < window_s) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rss_max = std::max(rss_max, StatusKb(daemon.pid(), "VmRSS"));
  }
  const double wall = NowSeconds() - t0, cpu = CpuSeconds(daemon.pid()) - cpu0;
  const long rss = StatusKb(daemon.pid(), "VmRSS"), hwm = StatusKb(daemon.pid(), "VmHWM");
  // RSS counts every shared-library page the process touched, though other processes share them;
  // PSS divides shared pages among their users, and Anonymous is the daemon's own memory.
  const long pss = RollupKb(daemon.pid(), "Pss"), anon = RollupKb(daemon.pid(), "Anonymous");
  int counted = 0, free_304 = 0, startup_counted = 0, startup_all = 0, busiest_minute = 0;
  std::map<std::string, int> by_target;
  int first_rounds = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    first_rounds = static_cast<int>(first_round.size());
    for (std::size_t i = 0, j = 0; i < seen.size(); ++i) {  // the most requests in any 60 s
      while (seen[i].at - seen[j].at >= 60) ++j;
      busiest_minute = std::max(busiest_minute, static_cast<int>(i - j + 1));
    }
    for (const Seen& s : seen) {
      if (s.at < t0) {
        ++startup_all;
        if (s.status != 304) ++startup_counted;
        continue;
      }
      if (s.status == 304) ++free_304;
      else {
        ++counted;
        ++by_target[s.target];
      }
    }
  }
  daemon.Stop();
  const double per_min = counted / (wall / 60), cpu_pct = 100 * cpu / wall;
  const double all_per_min = (counted + free_304) / (wall / 60);
  const double rss_target_mb = repos > 1 ? 30 : 20, counted_target = repos > 1 ? 20 : 1;
  std::printf("idle daemon, %d repositor%s, poll interval 60 s, webhooks on, %.0f s window after a %.0f s settle\n", repos,
              repos == 1 ? "y" : "ies", wall, settle_s);
  std::printf("  start-up: every repository's first round took %.0f s (%d of %d read), %d requests, %d counted\n",
              catch_up_s, first_rounds, repos, startup_all, startup_counted);
  std::printf("  RSS %.1f MB now, %.1f MB max sampled, %.1f MB peak (VmHWM) (target <= %.0f MB)\n", rss / 1024.0,
              rss_max / 1024.0, hwm / 1024.0, rss_target_mb);
  std::printf("  of which the daemon's own (anonymous) memory %.1f MB; PSS %.1f MB; the rest is shared library pages\n",
              anon / 1024.0, pss / 1024.0);
  std::printf("  CPU %.3f s in %.0f s = %.3f %% of one core\n", cpu, wall, cpu_pct);
  std::printf("  GitHub requests in window: %d answered 304 (free), %d rate-counted = %.2f/min (target <= %.0f); all: %.1f/min\n",
              free_304, counted, per_min, counted_target, all_per_min);
  std::printf("  the busiest 60 s of the whole run: %d requests (the pollers' pace: <= 300)\n", busiest_minute);
  for (const auto& [t, c] : by_target) std::printf("    counted: %d x %s\n", c, t.c_str());
  std::printf("  scaled to 10 minutes: %.1f CPU s, %.0f rate-counted requests\n", cpu * 600 / wall, per_min * 10);
  Summary("idle")
      .Add("repos", repos)
      .Add("window_s", wall)
      .Add("catch_up_s", catch_up_s)
      .Add("rss_mb", rss / 1024.0)
      .Add("rss_peak_mb", hwm / 1024.0)
      .Add("pss_mb", pss / 1024.0)
      .Add("anon_mb", anon / 1024.0)
      .Add("cpu_pct", cpu_pct)
      .Add("counted_per_min", per_min)
      .Add("free_304_per_min", free_304 / (wall / 60))
      .Add("busiest_minute", busiest_minute)
      .Add("pass", (rss_max <= rss_target_mb * 1024 && cpu_pct < 0.5 && per_min <= counted_target &&
                    busiest_minute <= 300 && first_rounds == repos)
                       ? 1
                       : 0)
      .Print();
  return 0;
}
