// Benchmark (issue 33): what taking a turn's commits as data costs over committing in place.
//
// A repository of `--base` files (default 2 000); each run prepares a Ticket's repository, changes
// `--files` files in it (default 1 000: half edited, half new), and hands the change to the remote
// two ways, on identical copies of the change:
//   in place   — what the daemon did before issue 33: `git add -A`, `git commit`, `git push` in the
//                worktree, outside any sandbox (which let a worker's filter run as the daemon);
//   as data    — Workspaces::TakeCommits with a commit message, as WorkerServices::CommitAndPush
//                calls it (commit and bundle in one sandboxed run, the bundle fetched into
//                verified.git and checked there), then Push from verified.git.
// Both push to a local bare remote, so the network is not measured. Target: the median added cost
// ≤ 150 ms.
#include <cstdio>
#include <fstream>

#include <unistd.h>

#include "bench_common.h"
#include "superagent/process.h"
#include "superagent/sandbox.h"
#include "superagent/workspace.h"

using namespace superagent;
using namespace superagent::bench;

namespace {

int Sh(const std::string& cmd) { return std::system(("(" + cmd + ") >/dev/null 2>&1").c_str()); }

// Writes the change; `owner` >= 0: as that uid would have (a root daemon's worker is `nobody`, and
// the files it writes are its own, which the per-spawn ACL grant skips).
void Change(const std::string& dir, int files, int run, int owner = -1) {
  for (int i = 0; i < files; ++i) {
    const std::string name = dir + "/src/f" + std::to_string(i < files / 2 ? i : 100'000 + i) + ".txt";
    std::ofstream(name) << "run " << run << " line of change " << i << "\n";
    if (owner >= 0 && ::chown(name.c_str(), static_cast<uid_t>(owner), static_cast<gid_t>(owner)) != 0) std::perror("chown");
  }
}

class RealClock : public Clock {
 public:
  TimeMs NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int runs = static_cast<int>(Arg(argc, argv, "runs", 10));
  const int files = static_cast<int>(Arg(argc, argv, "files", 1000));
  const int base = static_cast<int>(Arg(argc, argv, "base", 2000));
  ScratchDir dir("commits");
  LogToFile(dir / "log");
  const std::string seed = dir / "seed", origin = dir / "origin.git";
  if (Sh("git init -q -b main " + seed + " && mkdir " + seed + "/src && cd " + seed + " && for i in $(seq 0 " +
         std::to_string(base - 1) + "); do echo base $i > src/f$i.txt; done && git add -A && "
         "git -c user.name=b -c user.email=b@b commit -q -m base && git clone -q --bare . " + origin) != 0) {
    std::printf("cannot make the repository\n");
    Summary("commits").Add("pass", 0).Print();
    return 1;
  }

  exec::PosixRunnerOptions ro;
  ro.cgroup_parent = "off";
  ro.sandbox.state_dir = dir / "state";
  ro.sandbox.enabled = exec::ProbeSandbox(ro.sandbox).supported;
  auto runner = exec::MakePosixProcessRunner(ro);
  RealClock clock;
  exec::WorkspaceOptions wo;
  wo.root = dir / "work";
  wo.remote = origin;
  exec::Workspaces ws(wo, runner.get(), &clock, exec::RealSleeper());

  std::vector<double> in_place_ms, as_data_ms, take_ms, push_ms;
  for (int run = 0; run < runs; ++run) {
    // In place: a plain clone, changed, committed and pushed by git outside any sandbox.
    const std::string plain = dir / ("plain-" + std::to_string(run));
    Sh("git clone -q " + origin + " " + plain);
    Change(plain, files, run);
    double start = NowSeconds();
    const int rc = Sh("cd " + plain + " && git add -A && git -c user.name=s -c user.email=s@s commit -q -m work && "
                      "git push -q --force origin HEAD:refs/heads/plain-" + std::to_string(run));
    in_place_ms.push_back((NowSeconds() - start) * 1000);

    // As data: the Ticket's repository, the same change, taken out and verified.
    auto w = ws.Prepare(run + 1);
    if (rc != 0 || !w.ok()) {
      std::printf("run %d failed: %s\n", run, w.ok() ? "git in place" : w.status().ToString().c_str());
      Summary("commits").Add("pass", 0).Print();
      return 1;
    }
    const auto worker = exec::WorkerIds(ro.sandbox);
    Change(w->dir, files, run, worker ? worker->first : -1);
    start = NowSeconds();
    const double t1 = start;
    auto taken = ws.TakeCommits(*w, {}, std::string("work"));  // as WorkerServices::CommitAndPush does
    const double t2 = NowSeconds();
    Status pushed = taken.ok() ? ws.Push(*w) : taken.status();
    as_data_ms.push_back((NowSeconds() - start) * 1000);
    take_ms.push_back((t2 - t1) * 1000);
    push_ms.push_back((NowSeconds() - t2) * 1000);
    if (!pushed.ok() || taken->files.size() != static_cast<std::size_t>(files)) {
      std::printf("run %d failed: %s\n", run, pushed.ok() ? "wrong file count" : pushed.ToString().c_str());
      Summary("commits").Add("pass", 0).Print();
      return 1;
    }
  }
  const double in_place = Percentile(in_place_ms, 0.5), as_data = Percentile(as_data_ms, 0.5);
  const double added = as_data - in_place;
  std::printf("%d files changed of %d, %d runs, sandbox %s: in place median %.1f ms (p95 %.1f), as data median "
              "%.1f ms (p95 %.1f): %.1f ms added\n",
              files, base + files / 2, runs, ro.sandbox.enabled ? "on" : "off (host cannot)", in_place,
              Percentile(in_place_ms, 0.95), as_data, Percentile(as_data_ms, 0.95), added);
  std::printf("as data, by step (median): commit, bundle, fetch and check %.1f ms; push %.1f ms\n",
              Percentile(take_ms, 0.5), Percentile(push_ms, 0.5));
  Summary("commits")
      .Add("files", files)
      .Add("in_place_p50_ms", in_place)
      .Add("as_data_p50_ms", as_data)
      .Add("added_ms", added)
      .Add("target_ms", 150)
      .Add("pass", added <= 150 ? 1 : 0)
      .Print();
  return 0;
}
