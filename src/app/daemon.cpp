#include "app/daemon.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "app/data_dir.h"
#include "app/logging.h"
#include "app/panel_token.h"
#include "app/systemd.h"
#include "app/wiring.h"
#include "superagent/catch_all.h"
#include "superagent/eval.h"
#include "superagent/host_port.h"
#include "superagent/panel_source.h"

namespace superagent::app {

using nlohmann::json;

namespace {

std::filesystem::file_time_type MTime(const std::string& path) {
  std::error_code ec;
  auto t = std::filesystem::last_write_time(path, ec);
  return ec ? std::filesystem::file_time_type{} : t;
}

// A damaged page is noticed before anything acts on the store: start refuses, because a store
// that misreads rows can resend a message or act on a Mandate that was ended. Bounded so a large
// store still starts within the start-up target; `superagent doctor` checks all of it.
Status CheckStoreAtStart(const std::string& db_path) {
  if (!std::filesystem::exists(db_path)) return Status::Ok();
  auto views = Views::Open(db_path);
  if (!views.ok()) return views.status();
  auto sound = (*views)->QuickCheck(std::chrono::milliseconds(100));
  if (!sound.ok())
    return Status::IoError(db_path + ": " + sound.status().message() +
                           "; refusing to start on it. Stop here, keep a copy of the file, then restore a backup "
                           "or recover it (sqlite3 " + db_path + " .recover > dump.sql)");
  if (!*sound)
    spdlog::info("store check stopped at its start-up budget with nothing wrong so far {} {}", Kv("db", db_path),
                 Kv("full_check", "superagent doctor"));
  return Status::Ok();
}

}  // namespace

Daemon::Daemon(Config config, RunMode mode) : config_(std::move(config)), run_mode_(std::move(mode)) {}

Daemon::~Daemon() { Shutdown(); }

Status Daemon::Start() {
  Policy policy = DefaultPolicy();
  std::string origin = "embedded default";
  if (!config_.policy_file.empty()) {
    std::vector<Problem> problems;
    auto loaded = LoadPolicyFile(config_.policy_file, &problems);
    if (!loaded) {
      std::string all;
      for (const Problem& p : problems) all += "\n  " + p.ToString();
      return Status::InvalidArgument("policy has problems:" + all);
    }
    policy = *loaded;
    origin = config_.policy_file;
    policy_mtime_ = MTime(config_.policy_file);
  }

  // Only once the policy is known good is anything created on disk.
  if (Status s = SecureDataDir(config_.data_dir); !s.ok()) return s;
  auto lock = DataDirLock::Acquire(config_.data_dir);
  if (!lock.ok()) return lock.status();
  data_dir_lock_ = std::move(*lock);
  // The panel's credential (issue 19): made at the first start, kept in the data_dir that no
  // worker sees; `serve` prints its login link on a terminal, `panel-url` at any time.
  auto panel_token = PanelCredential(config_, /*create=*/true);
  if (!panel_token.ok()) return panel_token.status();
  panel_token_ = std::move(*panel_token);
  // The outbound filter (issue 33): every secret is known now, before anything is published or
  // logged by the loops below; the log passes it from here on.
  secrets_ = MakeSecretFilter(config_, panel_token_);
  FilterLogLines(secrets_);

  EngineOptions options = EngineOptionsFor(config_);
  options.follow_up_settle_ms = 3'000;
  // A Trigger that arrives (webhook, poll, panel) is judged now, not at the loop's next poll.
  options.on_eval_queued = [this] { WakeEvalLoop(); };
  options.serves_repository = [this](const std::string& repo) {
    github::Integration* g = serving_.load();
    return g != nullptr && g->Serves(repo);
  };
  const std::string db_path = (std::filesystem::path(config_.data_dir) / "superagent.db").string();
  if (Status s = CheckStoreAtStart(db_path); !s.ok()) return s;
  auto engine = Engine::Open(db_path, SystemClock(), policy, origin, options);
  if (!engine.ok()) return engine.status();
  engine_ = std::move(*engine);
  // New Triggers wake the Eval runner (WakeEvalLoop); requeued ones become due on their own
  // schedule (backoff), and a short interval bounds that delay. Made before anything can queue a
  // Trigger from another thread; started once the loops it wakes run.
  eval_loop_ = std::make_unique<Periodic>(PeriodicOptions{"the eval runner", 500, engine_.get()},
                                          [this]() -> std::optional<TimeMs> {
                                            RunDueEvals();
                                            return std::nullopt;
                                          });
  // Keys from the release that served one repository name the repository served then (issue 37).
  // An installation has no home repository to give them: a store that served one repository
  // moves to an installation by starting once with that github.repo first.
  if (!config_.github.repo.empty()) {
    auto qualified = engine_->QualifyGitHubThreads(config_.github.repo);
    if (!qualified.ok()) return qualified.status();
  }
  // Before any loop picks work: what was in flight when the previous run died is charged, and a
  // crash loop's item is set aside here instead of crashing this run too.
  auto set_aside = engine_->RecordStart(static_cast<std::int64_t>(getpid()));
  if (!set_aside.ok()) return set_aside.status();
  marked_running_ = true;
  auto views = Views::Open(db_path);
  if (!views.ok()) return views.status();
  views_ = std::move(*views);
  // A ModelAssessor when the variable named by llm.api_key_env holds a key; otherwise
  // NoModelAssessor, with one warning line saying so.
  llm_http_ = MakeHttpClient(std::string("superagent/") + SUPERAGENT_VERSION, HttpProxiesFromEnvironment());
  assessor_ = MakeAssessor(config_, llm_http_.get());
  auto app = MakeGitHubApp(config_, SystemClock(), nullptr, secrets_.get());
  if (!app.ok()) return app.status();
  github_app_ = std::move(*app);
  if (config_.github.On()) {
    auto gh = MakeGitHub(config_, engine_.get(), views_.get(), SystemClock(), nullptr, github_app_);
    if (!gh.ok()) return gh.status();
    github_ = std::move(*gh);
    serving_ = github_.get();
  }
  if (config_.feishu.enabled) {
    auto fs = MakeFeishu(config_, engine_.get(), views_.get(), SystemClock());
    if (!fs.ok()) return fs.status();
    feishu_ = std::move(*fs);
  }

  std::string host;
  int port = 0;
  if (!SplitHostPort(config_.panel.listen, &host, &port))
    return Status::InvalidArgument("panel.listen: expected host:port, got \"" + config_.panel.listen + "\"");
  // Built before the routes (the panel reads its slots), started after the outbox.
  exec::ExecutionOptions execution_options = ExecutionOptionsFor(config_, github_app_);
  // A turn's result and PR are in the outbox when it ends: sent now, not at the Effects loop's
  // next round (it is made below, before any turn can run: the scheduler starts after it).
  execution_options.on_turn_end = [this] {
    if (effects_) effects_->Wake();
  };
  auto execution = exec::Execution::Create(std::move(execution_options), engine_.get(), views_.get(), llm_http_.get());
  if (!execution.ok()) return execution.status();
  execution_ = std::move(*execution);
  // The intercom (SPEC §10) over the worker sessions: its tools go to every turn, the panel
  // gets its communication center.
  session_host_ = std::make_unique<exec::WorkerSessionHost>(engine_.get(), views_.get(), DaemonWorkspace(config_),
                                                            [this] { execution_->Wake(); }, secrets_.get());
  intercom_ = std::make_unique<Intercom>(engine_.get(), views_.get(), session_host_.get(), SystemClock());
  execution_->AttachIntercom(intercom_.get());
  http_ = std::make_unique<httplib::Server>();
  if (Status s = InstallRoutes(); !s.ok()) return s;
  if (github_) github_->InstallWebhookRoute(*http_);
  if (feishu_) feishu_->InstallCallbackRoute(*http_);
  if (!http_->bind_to_port(host, port))
    return Status::IoError("cannot listen on " + config_.panel.listen + " (is another process using the port?)");
  http_thread_ = std::thread([this] { http_->listen_after_bind(); });
  // "Ready" means the panel answers; and httplib 0.11's stop() is lost if it comes before the
  // accept loop runs, so a stop signal right after start would hang the shutdown. The loop is
  // up within microseconds; this waits for a thread to start, bounded at 5 s.
  for (int i = 0; i < 25'000 && !http_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
  if (!http_->is_running()) return Status::Internal("the panel's HTTP server did not start");
  // Everything the agent says leaves through the outbox. A platform without a Channel keeps its
  // messages pending and raises a system problem instead of dropping them.
  channels_.push_back(panel::MakePanelChannel());  // replies in sessions opened from the panel
  std::vector<Channel*> channels;
  for (auto& c : channels_) channels.push_back(c.get());
  if (github_) channels.push_back(github_->channel());
  if (feishu_) channels.push_back(feishu_->channel());
  EffectsOptions effects_options;
  effects_options.secrets = secrets_.get();
  effects_ = std::make_unique<EffectsLoop>(engine_.get(), channels, SystemClock(), effects_options);
  effects_->Start();
  if (Status s = execution_->Start(); !s.ok()) return s;
  eval_loop_->Start();  // after effects_ and execution_: it wakes both
  if (github_) github_->Start();
  if (feishu_) feishu_->Start();

  // What the daemon hears (issue 24): a daemon with no Source looks calm and hears nothing.
  std::string repos = config_.github.installation ? "installation" : "";
  for (const std::string& r : config_.github.repos) repos += (repos.empty() ? "" : ",") + r;
  spdlog::info("sources {} {} panel=on", Kv("github", github_ ? repos : "off (github.repos is empty)"),
               Kv("feishu", feishu_ ? "on" : "off (feishu.enabled is false)"));
  if (!github_ && !feishu_)
    spdlog::warn("no Source is on: only the panel reaches the daemon; set github.repo or feishu.enabled "
                 "(`superagent init` writes a config that does)");
  WarnIfNobodyMayAsk();
  spdlog::info("ready {} {} {} {} {}", Kv("listen", config_.panel.listen), Kv("data_dir", config_.data_dir),
               Kv("policy", origin), Kv("policy_version", engine_->PolicyVersion()),
               Kv("mode", ModeName(engine_->CurrentPolicy().mode)));
  // Store open, sources started, panel listening: what Type=notify waits for.
  NotifyServiceManager("READY=1\nSTATUS=serving on " + config_.panel.listen + ", policy version " +
                       std::to_string(engine_->PolicyVersion()));
  return Status::Ok();
}

void Daemon::WarnIfNobodyMayAsk() {
  // The version makes each policy's line its own: an identical warning within a minute is held
  // back by the log (issue 34), and a reload that is still deaf must be said again.
  const std::int64_t version = engine_->PolicyVersion();
  for (const NobodyMayAsk& n : NobodyMayAskFor(config_, engine_->CurrentPolicy(), &run_mode_))
    spdlog::warn("nobody may ask for work yet {} {} {} {}", Kv("source", n.source), Kv("key", n.key),
                 Kv("policy_version", version), Kv("fix", n.fix));
}

Status Daemon::InstallRoutes() {
  panel::PanelContext ctx = PanelContextFor(config_, run_mode_);
  // Who may ask changes with the policy: asked of the version in force at each read.
  ctx.live_setup = [this] { return PolicySetupGapsFor(config_, engine_->CurrentPolicy(), run_mode_); };
  if (github_) ctx.repositories = [g = github_.get()] { return g->Repositories(); };  // an installation's change
  ctx.engine = engine_.get();
  ctx.views = views_.get();
  ctx.token = panel_token_;
  ctx.reload_policy = [this] { return ReloadPolicy("panel"); };
  ctx.policy_on_disk = [this] {
    std::lock_guard<std::mutex> lock(reload_mu_);
    return policy_on_disk_;
  };
  ctx.slots = [this]() -> std::optional<SlotsView> {
    if (!execution_ || !execution_->scheduler()) return std::nullopt;
    return execution_->scheduler()->Slots();
  };
  ctx.worker_pool = [this]() -> std::optional<exec::PoolView> {
    if (!execution_ || execution_->pool() == nullptr) return std::nullopt;
    execution_->pool()->ExpireLeases();  // a worker gone quiet shows as gone, whether or not a turn waits
    return execution_->pool()->View();
  };
  ctx.revoke_worker = [this](const std::string& worker) {
    return execution_ && execution_->worker_server() != nullptr && execution_->worker_server()->Revoke(worker);
  };
  ctx.intercom = intercom_.get();
  ctx.secrets = secrets_.get();
  ctx.clock = SystemClock();
  auto installed = panel::InstallRoutes(*http_, std::move(ctx));
  if (!installed.ok()) return installed.status();
  panel_ = std::move(*installed);
  return Status::Ok();
}

void Daemon::RunDueEvals() {
  // A step that throws is logged and recorded by the loop's guard; the Eval it held expires and
  // is retried by its own rules.
  if (stopping_) return;
  if (auto expired = engine_->ExpireEvals(); !expired.ok())
    spdlog::error("eval expiry failed {}", Kv("error", expired.status().ToString()));
  while (!stopping_) {
    auto ran = RunOneEval(*engine_, *assessor_);
    if (!ran.ok()) {
      spdlog::error("eval failed {}", Kv("error", ran.status().ToString()));
      break;
    }
    if (!*ran) break;
    effects_->Wake();     // an acknowledgement may be waiting in the outbox
    execution_->Wake();  // and an accepted Ticket's first Assignment
  }
}

void Daemon::WakeEvalLoop() {
  if (eval_loop_) eval_loop_->Wake();
}

bool Daemon::PolicyFileChanged() {
  std::lock_guard<std::mutex> lock(reload_mu_);
  return !config_.policy_file.empty() && MTime(config_.policy_file) != policy_mtime_;
}

panel::PolicyReloadResult Daemon::ReloadPolicy(const std::string& why) {
  std::lock_guard<std::mutex> lock(reload_mu_);
  panel::PolicyReloadResult r;
  r.version = engine_->PolicyVersion();
  if (config_.policy_file.empty()) {
    spdlog::info("policy reload skipped {} reason=\"no policy_file configured\"", Kv("trigger", why));
    r.valid = true;
    r.origin = "embedded default";
    return r;
  }
  r.origin = config_.policy_file;
  policy_mtime_ = MTime(config_.policy_file);
  std::vector<Problem> problems;
  auto loaded = LoadPolicyFile(config_.policy_file, &problems);
  if (!loaded) {
    spdlog::error("policy reload failed {} {} keeping_version={}", Kv("file", config_.policy_file),
                  Kv("problems", static_cast<std::int64_t>(problems.size())), engine_->PolicyVersion());
    for (const Problem& p : problems) {
      spdlog::error("policy problem {}", Kv("at", p.ToString()));
      r.problems.push_back(p.ToString());
    }
    policy_on_disk_ = r;
    return r;
  }
  r.valid = true;
  auto change = engine_->ApplyPolicy(*loaded, config_.policy_file);
  if (!change.ok()) {
    spdlog::error("policy reload failed {}", Kv("error", change.status().ToString()));
    r.error = change.status().ToString();
    policy_on_disk_ = r;
    return r;
  }
  policy_on_disk_.reset();
  r.changed = change->changed;
  r.version = change->version;
  if (!change->changed) spdlog::info("policy unchanged {} {}", Kv("trigger", why), Kv("version", change->version));
  else WarnIfNobodyMayAsk();
  return r;
}

bool Daemon::HandleSignal(int sig) {
  if (sig == SIGINT || sig == SIGTERM) {
    spdlog::info("shutting down {}", Kv("signal", sig == SIGINT ? "SIGINT" : "SIGTERM"));
    NotifyServiceManager("STOPPING=1");
    return false;
  }
  if (sig == SIGHUP) {
    NotifyServiceManager("RELOADING=1");
    ReloadPolicy("SIGHUP");
    NotifyServiceManager("READY=1\nSTATUS=policy version " + std::to_string(engine_->PolicyVersion()));
  }
  return true;
}

void Daemon::Run() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  using std::chrono::steady_clock;
  const auto keepalive = WatchdogKeepAliveInterval();
  auto wait = std::chrono::milliseconds(1000);
  if (keepalive.count() > 0) wait = std::min(wait, keepalive);
  auto next_keepalive = steady_clock::now();
  LoopGuard policy_watch("the policy watcher", engine_.get());
  while (true) {
    // A keep-alive only while the Engine answers: a deadlocked store or engine stops them, and
    // systemd restarts the process after WatchdogSec.
    if (keepalive.count() > 0 && steady_clock::now() >= next_keepalive) {
      (void)engine_->PolicyVersion();
      NotifyServiceManager("WATCHDOG=1");
      next_keepalive = steady_clock::now() + keepalive;
    }
    timespec timeout{static_cast<time_t>(wait.count() / 1000), static_cast<long>(wait.count() % 1000) * 1'000'000L};
    int sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig > 0) {
      if (HandleSignal(sig)) continue;
      stop_watch_ = std::thread([this] { WatchSecondSignal(); });
      return;
    }
    // Also pick up edits to policy.yaml without a signal.
    policy_watch.Run([this] {
      if (PolicyFileChanged()) ReloadPolicy("file changed");
    });
  }
}

void Daemon::WatchSecondSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + kShutdownBudget;
  while (!shut_down_) {
    timespec timeout{0, 100'000'000L};
    int sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig == SIGINT || sig == SIGTERM) {
      spdlog::warn("second stop signal: exiting at once {}", Kv("signal", sig == SIGINT ? "SIGINT" : "SIGTERM"));
      KillWorkerProcesses();
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      spdlog::error("shutdown took longer than {} s: exiting at once", kShutdownBudget.count());
      KillWorkerProcesses();
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }
  }
}

void Daemon::KillWorkerProcesses() {
  std::lock_guard<std::mutex> lock(execution_mu_);
  if (execution_) execution_->KillAllProcesses();
}

void Daemon::Shutdown() {
  if (stopping_.exchange(true)) return;  // the Eval runner starts no further Eval
  if (intercom_) intercom_->Shutdown();  // a turn waiting in intercom_ask returns at once
  if (execution_) execution_->Stop();  // before the effects loop: a last report still gets enqueued
  if (github_) github_->Stop();
  if (feishu_) feishu_->Stop();
  if (effects_) effects_->Stop();
  if (panel_) panel_->Stop();  // live-update streams end, so the server stops at once
  if (http_) http_->stop();
  if (http_thread_.joinable()) http_thread_.join();
  if (eval_loop_) eval_loop_->Stop();
  panel_.reset();
  {
    std::lock_guard<std::mutex> lock(execution_mu_);
    execution_.reset();
  }
  intercom_.reset();
  session_host_.reset();
  serving_ = nullptr;
  github_.reset();
  feishu_.reset();
  views_.reset();
  // Every loop has stopped: nothing is in flight that the next start should charge.
  if (engine_ && marked_running_)
    if (Status s = engine_->RecordCleanStop(); !s.ok()) spdlog::error("clean stop not recorded {}", Kv("error", s.ToString()));
  engine_.reset();
  spdlog::info("stopped");
  shut_down_ = true;
  if (stop_watch_.joinable()) stop_watch_.join();
}

}  // namespace superagent::app
