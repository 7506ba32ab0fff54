// Process: the seam for running commands (SPEC §6 containment). Every process starts as the
// leader of its own process group, so stopping it kills the whole tree it spawned — no orphan
// left listening on a port. Output goes to files, never pipes, so a grandchild that keeps the
// descriptors open can never block anyone, and output can be read while the process runs.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "superagent/clock.h"
#include "superagent/sandbox.h"
#include "superagent/status.h"

namespace superagent::exec {

// Waits `ms` milliseconds of the caller's time. Production sleeps; tests advance a FakeClock,
// so limits of seconds or minutes are exercised in microseconds.
using Sleeper = std::function<void(TimeMs ms)>;

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::string cwd;                // "" = the daemon's working directory
  std::string stdin_text;         // given on standard input (then end of file)
  // Added to the environment the runner builds; the daemon's own environment is never copied
  // whole (sandbox.h: DaemonCommandEnv, WorkerEnv).
  std::vector<std::pair<std::string, std::string>> env;
  std::string output_dir;         // where stdout/stderr files go; "" = the system temp directory
  // Set for a command a worker chose (its shells, the command executor, the prepare command):
  // it gets a worker's built environment and, where the runner sandboxes, runs in the sandbox.
  // Unset: the daemon's own command (its git), with the daemon's allow-listed environment.
  std::optional<WorkerScope> worker;
  // RunToCompletion keeps stdout byte for byte (a git bundle) instead of repairing it as text.
  bool binary_stdout = false;
};

class Process {
 public:
  virtual ~Process() = default;
  // The leader's pid, which is also the process group id.
  virtual int pid() const = 0;
  // The exit code once the leader has exited (128 + signal when killed by one); nullopt while
  // it runs. Never blocks.
  virtual std::optional<int> Poll() = 0;
  // Waits at most `ms` of real time for the leader to exit and returns as soon as it does: its
  // exit code, or nullopt while it still runs. For commands that mostly end within milliseconds
  // (git), so the caller does not pay a whole poll interval for each. The default only polls.
  virtual std::optional<int> WaitFor(TimeMs ms) {
    (void)ms;
    return Poll();
  }
  // Sends SIGKILL to the whole process group and reaps the leader. Safe to call repeatedly.
  virtual void KillGroup() = 0;
  // Everything written to stdout / stderr so far.
  virtual std::string Stdout() const = 0;
  virtual std::string Stderr() const = 0;
};

// How process trees are contained. Process groups always; a cgroup v2 per process tree when the
// host lets the daemon create cgroups below its own (root, or systemd's Delegate=yes), which also
// catches a process that left its group with setsid().
struct Containment {
  bool cgroups = false;
  std::string detail;  // where the cgroups are made, or why there are none
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // What this runner contains trees with (for the start-up log line and `doctor`).
  virtual Containment containment() const { return {}; }
  // SIGKILLs every tree this runner started that may still run. The last resort of a daemon
  // that exits at once (a second stop signal), so no worker's command outlives it. Any thread.
  virtual void KillAll() {}
  // Starts the process in its own group. IoError when it cannot be started (no such program,
  // unreadable directory). Destroying the returned Process kills its group if still running.
  virtual Result<std::unique_ptr<Process>> Spawn(const ProcessSpec& spec) = 0;
};

struct PosixRunnerOptions {
  // Where per-process cgroups go: "" = under the daemon's own cgroup v2 (found from
  // /proc/self/cgroup and the cgroup2 mount), "off" = process groups only, else a cgroup v2
  // directory (tests). When that directory cannot be used, the runner falls back to process
  // groups and says why in containment().
  std::string cgroup_parent;
  // Niceness (0..19) every command starts with, through coreutils' nice, so it holds for all the
  // command forks: a worker's build or test run never slows the daemon's intake and answers.
  int nice = 0;
  // How worker commands (ProcessSpec::worker) are run: their environment and sandbox.
  SandboxPolicy sandbox;
};

// The POSIX implementation (posix_spawn with its own process group, and a cgroup when allowed).
std::unique_ptr<ProcessRunner> MakePosixProcessRunner(PosixRunnerOptions options = {});

// A Sleeper that really sleeps.
Sleeper RealSleeper();

struct RunResult {
  int exit_code = -1;
  bool timed_out = false;
  bool cancelled = false;
  std::string out, err;
};

// Runs to completion (waited on for 250 ms, then polled every `poll_ms` through `sleeper`); past
// `limit_ms` on `clock`, or once *cancel is true, the whole group is killed (timed_out /
// cancelled set). Non-ok only when the process could not start.
Result<RunResult> RunToCompletion(ProcessRunner& runner, const ProcessSpec& spec, Clock* clock, const Sleeper& sleeper,
                                  TimeMs limit_ms, TimeMs poll_ms = 20, const std::atomic<bool>* cancel = nullptr);

// The last `max_lines` lines of `text`, at most `max_chars` code points, repaired (for error
// reports); text::TailLines (superagent/text.h) under its older name.
std::string Tail(const std::string& text, std::size_t max_lines = 20, std::size_t max_chars = 2000);

// Quotes `s` for /bin/sh as one word.
std::string ShellQuote(const std::string& s);

}  // namespace superagent::exec
