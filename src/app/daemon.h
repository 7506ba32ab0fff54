// Daemon: what `superagent serve` runs. Owns the Engine, the Eval loop, the HTTP server and the
// policy watcher; readable top to bottom: Start(), then Run() until a signal, then Shutdown().
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "app/config.h"
#include "app/data_dir.h"
#include "app/run_mode.h"
#include "superagent/effects.h"
#include "superagent/http.h"
#include "superagent/engine.h"
#include "superagent/feishu.h"
#include "superagent/exec.h"
#include "superagent/github.h"
#include "superagent/github_app.h"
#include "superagent/intercom.h"
#include "superagent/panel.h"
#include "superagent/periodic.h"
#include "superagent/secret_filter.h"
#include "superagent/views.h"
#include "superagent/worker_sessions.h"

namespace httplib { class Server; }

namespace superagent::app {

class Daemon {
 public:
  // `mode`: how it was started (CurrentRunMode), for the hints it gives a person.
  explicit Daemon(Config config, RunMode mode = RunMode{});
  ~Daemon();

  // Opens the store, loads the policy, binds the panel and starts the loops. On error nothing
  // is left running and the Status says what to fix.
  Status Start();
  // Blocks, handling SIGHUP (reload policy) and SIGINT/SIGTERM (return), and re-reading the
  // policy file when it changes on disk. The three signals must be blocked in every thread.
  // Under systemd it sends WATCHDOG=1 while the Engine answers. After SIGINT/SIGTERM a second
  // one, or a shutdown longer than kShutdownBudget, ends the process at once (exit 1).
  void Run();
  // Stops the loops and the HTTP server and closes the store.
  void Shutdown();
  // What Run() does with one signal: SIGHUP reloads and returns true (keep running);
  // SIGINT/SIGTERM return false (stop). Anything else is ignored (true).
  bool HandleSignal(int sig);
  // Upper bound on Shutdown() once a stop signal came: workers get 10 s (SPEC §6), the rest
  // is closing the store and the server.
  static constexpr std::chrono::seconds kShutdownBudget{25};
  // Re-reads the policy file: a valid edit becomes a new version; an invalid one is logged with
  // every problem and the running version stays. Returns what happened (the panel shows it).
  // Thread-safe: called by Run() and by the panel's "reload policy" command.
  panel::PolicyReloadResult ReloadPolicy(const std::string& why);

 private:
  // One step of eval_loop_: expired Evals are released, then due ones run until none is left.
  void RunDueEvals();
  void WatchSecondSignal();
  // Exiting at once must not leave a worker's commands running (there may be no systemd to
  // kill the rest of the cgroup).
  void KillWorkerProcesses();
  void WakeEvalLoop();  // called by the Engine when a Trigger is queued for an Eval
  Status InstallRoutes();
  bool PolicyFileChanged();
  // One warning line per Source that is on and that nobody may ask under the policy in force
  // (issue 34): at start, and after a reload that made a new version.
  void WarnIfNobodyMayAsk();

  Config config_;
  RunMode run_mode_;
  std::string panel_token_;  // data_dir/panel.token or panel.token_env's value; never logged
  // The outbound filter (issue 33) the outbox, the panel and the log pass; shared with the log.
  std::shared_ptr<SecretFilter> secrets_;
  std::unique_ptr<DataDirLock> data_dir_lock_;  // first: released after everything else closed
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpClient> llm_http_;  // declared before assessor_, which uses it
  std::unique_ptr<Assessor> assessor_;
  std::vector<std::unique_ptr<Channel>> channels_;  // one per configured platform
  // github.auth: app: the installation tokens the Integration and git push share (issue 25).
  std::shared_ptr<github::InstallationTokens> github_app_;
  std::unique_ptr<github::Integration> github_;  // null when github.repo is empty
  // github_ for the Engine's question "is this repository served?" (issue 37), asked from its
  // threads: set once github_ is made, cleared before it goes.
  std::atomic<github::Integration*> serving_{nullptr};
  std::unique_ptr<feishu::Integration> feishu_;  // null unless feishu.enabled
  std::unique_ptr<EffectsLoop> effects_;
  std::unique_ptr<exec::WorkerSessionHost> session_host_;  // the worker sessions as intercom parties
  std::unique_ptr<Intercom> intercom_;                     // SPEC §10; outlives execution_'s turns
  std::unique_ptr<exec::Execution> execution_;  // worker slots (SPEC §6)
  std::mutex execution_mu_;  // guards execution_'s reset against KillWorkerProcesses
  std::unique_ptr<Views> views_;  // the read face: one read-only connection every reader shares
  std::unique_ptr<httplib::Server> http_;
  std::unique_ptr<panel::Panel> panel_;
  std::unique_ptr<Periodic> eval_loop_;  // made right after engine_, which wakes it (on_eval_queued)
  std::thread http_thread_;
  std::thread stop_watch_;  // started by the first stop signal; see Run()
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> stopping_{false};
  bool marked_running_ = false;  // RecordStart succeeded: a clean Shutdown records its stop
  std::mutex reload_mu_;  // guards policy_mtime_, policy_on_disk_, and serializes reloads
  std::filesystem::file_time_type policy_mtime_{};
  // The last reload's result when it left the file on disk out of force (panel's Needs-you).
  std::optional<panel::PolicyReloadResult> policy_on_disk_;
};

}  // namespace superagent::app
