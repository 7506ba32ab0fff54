// Benchmark 3 (issue 10): the idle cost of the real daemon serving one repository.
//
// `superagent serve` polls a loopback fake GitHub (tests/fake_github_server.h, which answers
// conditional requests with 304 like GitHub: free of rate limit) in real time with the shortest
// allowed interval (github.poll_interval_seconds: 60). Nothing happens in the repository. After
// the start-up round, a window of `--seconds` (default 130: two idle rounds) is measured:
// resident memory (VmRSS, and the peak VmHWM), CPU time used / wall time, and GitHub requests
// that count against the rate limit (any answer but 304), scaled to one minute.
// Targets: RSS ≤ 20 MB, CPU ≈ 0, ≤ 1 rate-counted request per minute.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
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
  const double settle_s = 20;  // the start-up round (identity, first full reads) happens here
  ScratchDir dir("idle");
  sat::FakeGitHub github(SystemClock());
  github.issues[1] = sat::WebhookExample("issue_comment", "created")["issue"];
  github.comments.push_back(github.MakeComment(1, 1, "Codertocat", "an old comment", SystemClock()->NowMs() - 86'400'000));

  std::mutex mu;
  struct Seen {
    double at;
    int status;
    std::string target;
  };
  std::vector<Seen> seen;
  github.on_request = [&](const sat::FakeGitHub::Logged& l) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back({NowSeconds(), l.status, l.method + " " + l.target});
  };

  DaemonSetup setup;
  setup.extra_config = "github:\n  api_url: " + github.url() + "\n  repo: " + github.repo +
                       "\n  poll_interval_seconds: 60\n";
  setup.extra_config += LocalExecutionConfig(dir);
  setup.env = {{"GITHUB_TOKEN", "ghp_BENCHTOKEN0123456789"}, {"GITHUB_WEBHOOK_SECRET", "bench-secret"}};
  BenchDaemon daemon(dir, setup);
  if (daemon.Start() < 0) {
    std::fprintf(stderr, "daemon did not start; log: %s\n", daemon.log_path().c_str());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(settle_s));  // a benchmark of idling: it waits
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
  int counted = 0, free_304 = 0, startup_counted = 0;
  std::map<std::string, int> by_target;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const Seen& s : seen) {
      if (s.at < t0) {
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
  std::printf("idle daemon, one repository, poll interval 60 s, %.0f s window after a %.0f s settle\n", wall, settle_s);
  std::printf("  RSS %.1f MB now, %.1f MB max sampled, %.1f MB peak (VmHWM) (target <= 20 MB)\n", rss / 1024.0,
              rss_max / 1024.0, hwm / 1024.0);
  std::printf("  of which the daemon's own (anonymous) memory %.1f MB; PSS %.1f MB; the rest is shared library pages\n",
              anon / 1024.0, pss / 1024.0);
  std::printf("  CPU %.3f s in %.0f s = %.3f %% of one core\n", cpu, wall, cpu_pct);
  std::printf("  GitHub requests in window: %d answered 304 (free), %d rate-counted = %.2f/min (target <= 1); start-up round: %d counted\n",
              free_304, counted, per_min, startup_counted);
  for (const auto& [t, c] : by_target) std::printf("    counted: %d x %s\n", c, t.c_str());
  std::printf("  scaled to 10 minutes: %.1f CPU s, %.0f rate-counted requests\n", cpu * 600 / wall, per_min * 10);
  Summary("idle")
      .Add("window_s", wall)
      .Add("rss_mb", rss / 1024.0)
      .Add("rss_peak_mb", hwm / 1024.0)
      .Add("pss_mb", pss / 1024.0)
      .Add("anon_mb", anon / 1024.0)
      .Add("cpu_pct", cpu_pct)
      .Add("counted_per_min", per_min)
      .Add("free_304_per_min", free_304 / (wall / 60))
      .Add("pass", (rss_max <= 20 * 1024 && cpu_pct < 0.5 && per_min <= 1) ? 1 : 0)
      .Print();
  return 0;
}
