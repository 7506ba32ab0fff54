// Execution as the daemon runs it (SPEC §6): the process runner, workspaces, the configured
// executor and the slots scheduler, built from the config in one place.
#pragma once

#include <memory>

#include "superagent/config.h"
#include "superagent/engine.h"
#include "superagent/http.h"
#include "superagent/scheduler.h"
#include "superagent/workspace.h"

namespace superagent::exec {

// Where Tickets' code comes from and their branches go: execution.git_remote, else the GitHub
// repository's https clone URL, else "" (execution disabled).
std::string EffectiveGitRemote(const Config& config);
// The workspace options the daemon uses for `config`, rooted at `root` (the daemon passes
// <data_dir>/work; doctor a scratch directory), with git authenticated by the GitHub token.
WorkspaceOptions WorkspaceOptionsFor(const Config& config, const std::string& root);

// The sandbox rules for `config` (execution.network, execution.env), hiding data_dir, the
// config's and the policy's directories and files, and /etc/superagent (the secrets file), with
// the workers' HOMEs under <data_dir>/work/sandbox (Workspaces::Remove removes a Ticket's with its
// directory). `enabled` is left false: DecideSandbox (sandbox.h) sets it from execution.sandbox
// and ProbeSandbox.
SandboxPolicy SandboxPolicyFor(const Config& config);

class Execution {
 public:
  // Builds everything from `config` (execution.*, llm.*, github.repo, data_dir). With no git
  // remote (neither execution.git_remote nor github.repo) execution is disabled: scheduler() is
  // null and Tickets wait. `engine` and `llm_http` must outlive it.
  static Result<std::unique_ptr<Execution>> Create(const Config& config, Engine* engine, HttpClient* llm_http);
  ~Execution();
  // Resumes interrupted work and starts the scheduler's loop.
  Status Start();
  // Stops the loop, waits at most 10 s per worker, kills every shell.
  void Stop();
  // SIGKILLs every command a worker started (a daemon exiting at once). Any thread.
  void KillAllProcesses();
  // Asks the scheduler for a pass now (an Assignment was queued) instead of at its next tick.
  void Wake();
  // Offers the intercom to every later turn (see Scheduler::AttachIntercom); no-op when
  // execution is disabled.
  void AttachIntercom(Intercom* intercom);
  Scheduler* scheduler() { return scheduler_.get(); }

 private:
  Execution() = default;
  std::unique_ptr<ProcessRunner> runner_;
  std::unique_ptr<Workspaces> workspaces_;
  std::unique_ptr<WorkerServices> services_;
  std::unique_ptr<llm::ChatClient> chat_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace superagent::exec
