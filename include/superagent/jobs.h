// Jobs: a worker session's shell commands (SPEC §6). A command runs in the foreground for at most
// a few seconds (5 by default); if it is still running then, it becomes a background job the
// session can list, read and kill, and the session takes its next step meanwhile.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "superagent/process.h"

namespace superagent::exec {

struct JobInfo {
  int id = 0;
  std::string command;
  bool running = false;
  std::optional<int> exit_code;
  TimeMs started_at = 0;
};

struct ShellResult {
  bool background = false;  // still running: it is job `job` now
  int job = 0;
  int exit_code = -1;
  std::string out, err;
};

class Jobs {
 public:
  // `runner`, `clock` must outlive this. Every job is killed when it is destroyed. Every command
  // is a worker's (ProcessSpec::worker): it runs in `scope` (the Ticket's, from
  // Workspaces::ScopeFor); with no scope given, in one that shows its `cwd` alone.
  Jobs(ProcessRunner* runner, Clock* clock, Sleeper sleeper, std::string output_dir,
       std::optional<WorkerScope> scope = std::nullopt);
  ~Jobs();

  // Runs `command` with /bin/sh -c in `cwd`. Returns when it exits or after `foreground_ms`
  // (then it continues as a background job), or when *cancel becomes true (then it is killed).
  Result<ShellResult> Run(const std::string& command, const std::string& cwd, const std::string& stdin_text,
                          TimeMs foreground_ms, const std::atomic<bool>* cancel = nullptr);
  // Starts `spec` as a worker's process in this session's scope (its environment and sandbox),
  // its output under the jobs directory, with `readable` also shown read-only (a coding CLI's
  // installation). Not a job: the caller owns and polls it (a coding CLI's turn).
  Result<std::unique_ptr<Process>> Spawn(ProcessSpec spec, const std::vector<std::string>& readable);
  // Every background job, oldest first, with its current state.
  std::vector<JobInfo> List();
  // Output so far (stdout then stderr). NotFound for an unknown job.
  Result<std::string> Output(int job);
  // Kills the job's whole process group. NotFound for an unknown job.
  Status Kill(int job);
  // Kills every job still running; returns what was killed.
  std::vector<JobInfo> KillAll();
  // How many background jobs are still running.
  int RunningCount();
  // Shows `dirs` read-only to the commands started from now on, beside the scope's own: a mirror
  // made after this session began (a Ticket's other repository, issue 37). Ignored without a scope.
  void ShowAlso(const std::vector<std::string>& dirs);

 private:
  struct Job {
    JobInfo info;
    std::unique_ptr<Process> process;
  };
  void Refresh(Job& job);

  ProcessRunner* runner_;
  Clock* clock_;
  Sleeper sleeper_;
  std::string output_dir_;
  // The scope the commands started next run in.
  WorkerScope ScopeFor(const std::string& cwd);

  std::optional<WorkerScope> scope_;  // guarded by mu_ (ShowAlso widens it)
  std::mutex mu_;
  std::map<int, Job> jobs_;
  int next_id_ = 0;
};

}  // namespace superagent::exec
