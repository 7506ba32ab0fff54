// Execution built from its options, so the daemon only starts and stops it.
#include "superagent/exec.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <mutex>

#include "superagent/assign_or_return.h"
#include "superagent/views.h"

namespace superagent::exec {

namespace {

// execution.placement: any — a turn runs on this host while it has a free slot of its own, else
// on the workers. The Scheduler's slots are both together.
class PlacementExecutor : public Executor {
 public:
  PlacementExecutor(Executor* local, Executor* remote, int local_slots)
      : local_(local), remote_(remote), local_slots_(local_slots) {}
  std::string name() const override { return local_->name(); }
  Result<TurnResult> RunTurn(const WorkerTask& task) override {
    bool local = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (local_running_ < local_slots_) {
        ++local_running_;
        local = true;
      }
    }
    if (!local) return remote_->RunTurn(task);  // never under mu_: turns run side by side
    auto result = local_->RunTurn(task);
    std::lock_guard<std::mutex> lock(mu_);
    --local_running_;
    return result;
  }

 private:
  Executor* const local_;
  Executor* const remote_;
  const int local_slots_;
  std::mutex mu_;
  int local_running_ = 0;
};

}  // namespace

Result<std::unique_ptr<Execution>> Execution::Create(ExecutionOptions options, Engine* engine, Views* views,
                                                      HttpClient* llm_http) {
  std::unique_ptr<Execution> e(new Execution());
  if (options.workspace.remote.empty() && !options.workspace.remote_of) {  // remote_of: an installation's
    // Without a repository there is nothing to work in: Tickets wait (their Assignments stay
    // pending) instead of all being reported blocked.
    spdlog::warn("execution disabled: no git remote; set execution.git_remote or github.repo");
    return e;
  }
  // Workers are untrusted (issue 19): their commands in a sandbox where the host allows it,
  // decided once here, and said at start either way.
  PosixRunnerOptions ro = std::move(options.runner);
  const SandboxSupport support =
      options.sandbox == "off" ? SandboxSupport{false, "not probed"} : ProbeSandbox(ro.sandbox);
  auto decision = DecideSandbox(options.sandbox, support);
  if (!decision.ok()) return decision.status();
  ro.sandbox.enabled = decision->enabled;
  if (decision->enabled)
    spdlog::info("sandbox mode=bwrap network={} detail=\"{}\"", ro.sandbox.network ? "on" : "off", decision->detail);
  else
    spdlog::warn("sandbox mode=OFF detail=\"{}\"", decision->detail);
  for (const std::string& w : options.warnings) spdlog::warn("{}", w);
  e->runner_ = MakePosixProcessRunner(ro);
  const Containment c = e->runner_->containment();
  spdlog::info("process containment groups=yes cgroups={} detail=\"{}\"", c.cgroups ? "yes" : "no", c.detail);
  // The Tickets' branches carry the install id (issue 34): another install on the same remote
  // numbers its Tickets from 1 too.
  if (options.workspace.install_id.empty()) {
    ASSIGN_OR_RETURN(options.workspace.install_id, views->InstallId());
  }
  e->workspaces_ = std::make_unique<Workspaces>(std::move(options.workspace), e->runner_.get(), SystemClock(),
                                                RealSleeper());
  e->services_ = std::make_unique<WorkerServices>(engine, e->workspaces_.get(), std::move(options.worker));
  if (options.placement != "local" && (options.executor == "command" || options.executor == "builtin"))
    return Status::InvalidArgument("execution.placement " + options.placement +
                                   " runs coding CLIs on workers: set execution.executor to one (claude-code, codex, "
                                   "gemini-cli, qwen-code)");
  if (options.executor == "command") {
    e->executor_ = MakeCommandExecutor({options.command}, engine);
  } else if (options.executor != "builtin") {
    options.cli.cli = options.executor;
    // The CLI's model key stays here: the CLI gets the gateway's address and a pass per turn.
    if (llm_http == nullptr) return Status::InvalidArgument("a coding CLI needs an HTTP client for its model gateway");
    const bool isolated = ro.sandbox.enabled && !ro.sandbox.network;
    if (isolated) {
      // No network in the sandbox: the gateway also accepts on a unix socket in a directory the
      // sandbox shows, and the daemon's own binary bridges to it from inside.
      const std::filesystem::path dir = std::filesystem::path(e->workspaces_->options().root) / "gateway";
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) return Status::IoError("cannot create " + dir.string() + ": " + ec.message());
      // A root daemon's workers run as nobody: they must be able to reach the socket inside.
      std::filesystem::permissions(dir, std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                            std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                                            std::filesystem::perms::others_exec, ec);
      options.gateway.socket_path = (dir / "model.sock").string();
      options.cli.readable.push_back(dir.string());
      if (options.cli.bridge_binary.empty())
        return Status::InvalidArgument("execution.network is off and the daemon's own binary is unknown (the bridge)");
      options.cli.readable.push_back(std::filesystem::path(options.cli.bridge_binary).parent_path().string());
    } else {
      options.cli.bridge_binary.clear();
    }
    ASSIGN_OR_RETURN(e->gateway_, ModelGateway::Start(std::move(options.gateway), llm_http, engine, views, SystemClock()));
    options.cli.gateway = e->gateway_.get();
    options.cli.api_key.clear();
    options.cli.base_url.clear();
    spdlog::info("executor cli={} binary={} model={} readable={}", options.executor, options.cli.binary,
                 options.cli.model.empty() ? "(its default)" : options.cli.model, options.cli.readable.size());
    RemoteExecutorOptions remote;
    remote.executor = options.executor;
    remote.turn_ms = options.cli.turn_ms;
    remote.gateway = e->gateway_.get();
    remote.model = options.cli.model;
    remote.allowed_commands = options.cli.allowed_commands;
    remote.args = options.cli.args;
    ASSIGN_OR_RETURN(e->executor_, MakeCliExecutor(std::move(options.cli), engine, views, e->services_.get(), SystemClock(),
                                                   RealSleeper()));
    if (options.placement != "local") {
      if (options.workers.listen.empty())
        return Status::InvalidArgument("execution.placement " + options.placement +
                                       " needs workers.listen: the address workers connect to");
      e->pool_ = std::make_unique<WorkerPool>(options.pool, SystemClock());
      options.workers.gateway_port = e->gateway_->port();
      ASSIGN_OR_RETURN(e->worker_server_, WorkerServer::Start(std::move(options.workers), e->pool_.get(), llm_http));
      e->remote_executor_ =
          MakeRemoteExecutor(std::move(remote), e->pool_.get(), e->workspaces_.get(), e->services_.get(), SystemClock());
      if (options.placement == "remote") {
        e->local_executor_ = std::move(e->executor_);  // kept for nothing but symmetry of lifetimes
        e->executor_ = std::make_unique<PlacementExecutor>(e->local_executor_.get(), e->remote_executor_.get(), 0);
      } else {
        e->local_executor_ = std::move(e->executor_);
        e->executor_ = std::make_unique<PlacementExecutor>(e->local_executor_.get(), e->remote_executor_.get(),
                                                           options.slots);
      }
      spdlog::info("placement={} local_slots={} remote_turns={} lease_ms={}", options.placement,
                   options.placement == "remote" ? 0 : options.slots, options.remote_slots, options.pool.lease_ms);
    }
  } else {
    e->chat_ = std::make_unique<llm::OpenAiChatClient>(std::move(options.chat), llm_http, SystemClock(),
                                                       llm::RealSleeper());
    BuiltinExecutorOptions bo;
    bo.model = options.model;
    e->executor_ = MakeBuiltinExecutor(bo, engine, views, e->chat_.get(), e->services_.get());
  }
  SchedulerOptions so;
  so.slots = options.placement == "remote" ? options.remote_slots
             : options.placement == "any"  ? options.slots + options.remote_slots
                                           : options.slots;
  so.jobs_dir = (std::filesystem::path(e->workspaces_->options().root) / "jobs").string();
  so.on_turn_end = std::move(options.on_turn_end);
  std::error_code ec;
  std::filesystem::create_directories(so.jobs_dir, ec);
  if (ec) return Status::IoError("cannot create " + so.jobs_dir + ": " + ec.message());
  e->scheduler_ = std::make_unique<Scheduler>(engine, views, e->workspaces_.get(), e->executor_.get(), e->services_.get(),
                                              e->runner_.get(), SystemClock(), RealSleeper(), so);
  return e;
}

Execution::~Execution() { Stop(); }

Status Execution::Start() { return scheduler_ ? scheduler_->Start() : Status::Ok(); }

void Execution::KillAllProcesses() {
  if (runner_) runner_->KillAll();
}

void Execution::Wake() {
  if (scheduler_) scheduler_->Wake();
}

void Execution::AttachIntercom(Intercom* intercom) {
  if (scheduler_) scheduler_->AttachIntercom(intercom);
}

void Execution::Stop() {
  if (scheduler_) scheduler_->Stop();
}

}  // namespace superagent::exec
