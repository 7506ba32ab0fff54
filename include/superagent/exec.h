// Execution as the daemon runs it (SPEC §6): the process runner, workspaces, the configured
// executor and the slots scheduler, built in one place from options app/ resolves from the config
// (app/wiring.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "superagent/engine.h"
#include "superagent/http.h"
#include "superagent/llm.h"
#include "superagent/process.h"
#include "superagent/scheduler.h"
#include "superagent/model_gateway.h"
#include "superagent/worker.h"
#include "superagent/worker_pool.h"
#include "superagent/workspace.h"

namespace superagent {
class Views;
}  // namespace superagent

namespace superagent::exec {

// Everything Execution::Create needs, as values: no config file and no environment is read here.
struct ExecutionOptions {
  // Where code comes from and branches go; an empty `workspace.remote` disables execution. The
  // jobs' output goes to <workspace.root>/jobs.
  WorkspaceOptions workspace;
  // Niceness, containment and the sandbox rules of every command a worker runs.
  // `runner.sandbox.enabled` is ignored: Create decides it from `sandbox` and ProbeSandbox.
  PosixRunnerOptions runner;
  std::string sandbox = "on";        // "on": refuse to start where the host cannot sandbox; "off"
  std::string executor = "builtin";  // "builtin" (the agent loop) | "command" (`command`)
  std::string command;               // the team's coding CLI, run with /bin/sh -c; for "command"
  // | "claude-code" | "codex" | "gemini-cli" | "qwen-code": the CLI's adapter and its options
  CliExecutorOptions cli;
  // For a coding CLI: the real model API the gateway forwards to (its key never reaches the CLI).
  ModelGatewayOptions gateway;
  llm::ChatOptions chat;             // the worker model's endpoint, for "builtin"
  std::string model;                 // the worker model, for "builtin"
  int slots = 3;                     // concurrent worker sessions (one more is reserved for people)
  WorkerServicesOptions worker;      // team skills and the screenshot rule, for every executor
  // Where a coding CLI's turns run (execution.placement, issue 36): "local" (this host's slots),
  // "remote" (workers that joined at the worker listener), "any" (this host's slots first, then
  // the workers). Not local: `workers.listen` must be set, and the executor a coding CLI.
  std::string placement = "local";
  WorkerServerOptions workers;       // the worker listener (workers.*); its gateway_port is set here
  WorkerPool::Options pool;          // lease_ms
  int remote_slots = 16;             // turns offered to workers at once (workers.max_turns)
  // Called once a turn has ended (SchedulerOptions::on_turn_end); may be unset.
  std::function<void()> on_turn_end;
  // Logged as warnings once the sandbox is decided, when execution is enabled (e.g. a secret
  // passed to workers, a missing model key).
  std::vector<std::string> warnings;
};

class Execution {
 public:
  // Builds everything from `options`. With no git remote (options.workspace.remote empty)
  // execution is disabled: scheduler() is null and Tickets wait. InvalidArgument when the
  // sandbox is "on" and the host cannot run it. `engine`, `views` and `llm_http` must outlive it.
  static Result<std::unique_ptr<Execution>> Create(ExecutionOptions options, Engine* engine, Views* views,
                                                   HttpClient* llm_http);
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
  // The remote workers' pool and listener (execution.placement remote or any); null otherwise.
  WorkerPool* pool() { return pool_.get(); }
  WorkerServer* worker_server() { return worker_server_.get(); }

 private:
  Execution() = default;
  std::unique_ptr<ProcessRunner> runner_;
  std::unique_ptr<Workspaces> workspaces_;
  std::unique_ptr<WorkerServices> services_;
  std::unique_ptr<llm::ChatClient> chat_;
  std::unique_ptr<ModelGateway> gateway_;  // a coding CLI's way to its model; outlives the executor
  std::unique_ptr<WorkerPool> pool_;           // remote turns and their leases
  std::unique_ptr<WorkerServer> worker_server_;  // the pool over HTTP
  std::unique_ptr<Executor> local_executor_, remote_executor_;  // placement any: both, behind executor_
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Scheduler> scheduler_;
};

}  // namespace superagent::exec
