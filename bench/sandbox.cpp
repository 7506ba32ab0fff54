// Benchmark (issue 19): what the worker sandbox adds to a command's start.
//
// `true` is started `--runs` times (default 200) through the real PosixRunner as a worker's
// command (ProcessSpec::worker: built environment, private HOME and TMPDIR), once without the
// sandbox and once in it (bubblewrap: new pid, ipc, uts and — with --network 0 — network
// namespaces, the system bound read-only, a worktree bound read-write), alternating so both
// see the same machine load. Measured: the wall time from Spawn to the exit being seen, polling
// every 0.2 ms. cgroups are off and nice is 0 so only the sandbox differs.
// Target: the median added start cost ≤ 20 ms.
#include <cstdio>
#include <thread>

#include "bench_common.h"
#include "superagent/process.h"
#include "superagent/sandbox.h"

using namespace superagent;
using namespace superagent::bench;

namespace {

// Seconds from Spawn to the exit of `true`, or a negative number when it failed.
double TimeOne(exec::ProcessRunner& runner, const exec::ProcessSpec& spec) {
  const double start = NowSeconds();
  auto p = runner.Spawn(spec);
  if (!p.ok()) {
    std::fprintf(stderr, "cannot start: %s\n", p.status().ToString().c_str());
    return -1;
  }
  std::optional<int> code;
  while (!(code = (*p)->Poll())) std::this_thread::sleep_for(std::chrono::microseconds(200));
  const double took = NowSeconds() - start;
  return *code == 0 ? took : -1;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = static_cast<int>(Arg(argc, argv, "runs", 200));
  const bool network = Arg(argc, argv, "network", 1) != 0;
  ScratchDir dir("sandbox");
  std::filesystem::create_directories(dir / "worktree");

  exec::PosixRunnerOptions plain_options;
  plain_options.cgroup_parent = "off";
  plain_options.sandbox.state_dir = dir / "state";
  plain_options.sandbox.network = network;
  exec::PosixRunnerOptions boxed_options = plain_options;
  boxed_options.sandbox.enabled = true;
  const exec::SandboxSupport support = exec::ProbeSandbox(boxed_options.sandbox);
  if (!support.supported) {
    std::printf("this host cannot sandbox: %s\n", support.detail.c_str());
    Summary("sandbox").Add("supported", 0).Add("pass", 0).Print();
    return 0;
  }
  auto plain = exec::MakePosixProcessRunner(plain_options);
  auto boxed = exec::MakePosixProcessRunner(boxed_options);

  exec::ProcessSpec spec;
  spec.argv = {"true"};
  spec.cwd = dir / "worktree";
  spec.output_dir = dir / "out";
  spec.worker = exec::WorkerScope{"ticket-1", {dir / "worktree"}, {}};

  std::vector<double> plain_ms, boxed_ms;
  for (int i = 0; i < runs; ++i) {
    const double a = TimeOne(*plain, spec), b = TimeOne(*boxed, spec);
    if (a < 0 || b < 0) {
      Summary("sandbox").Add("supported", 1).Add("failed_run", i).Add("pass", 0).Print();
      return 1;
    }
    plain_ms.push_back(a * 1000);
    boxed_ms.push_back(b * 1000);
  }
  const double plain_p50 = Percentile(plain_ms, 0.5), boxed_p50 = Percentile(boxed_ms, 0.5);
  const double plain_p95 = Percentile(plain_ms, 0.95), boxed_p95 = Percentile(boxed_ms, 0.95);
  const double added = boxed_p50 - plain_p50;
  std::printf("true x %d (network %s): without sandbox median %.2f ms (p95 %.2f), in bubblewrap median %.2f ms "
              "(p95 %.2f): %.2f ms added\n",
              runs, network ? "shared" : "own namespace", plain_p50, plain_p95, boxed_p50, boxed_p95, added);
  Summary("sandbox")
      .Add("runs", runs)
      .Add("network", network ? 1 : 0)
      .Add("plain_median_ms", plain_p50)
      .Add("sandboxed_median_ms", boxed_p50)
      .Add("sandboxed_p95_ms", boxed_p95)
      .Add("added_median_ms", added)
      .Add("added_p95_ms", boxed_p95 - plain_p95)
      .Add("pass", added <= 20 ? 1 : 0)
      .Print();
  return 0;
}
