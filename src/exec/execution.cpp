// Wiring of execution from the config, so the daemon only starts and stops it.
#include "superagent/exec.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

namespace superagent::exec {

std::string EffectiveGitRemote(const Config& config) {
  if (!config.execution.git_remote.empty()) return config.execution.git_remote;
  if (!config.github.repo.empty()) return "https://github.com/" + config.github.repo + ".git";
  return "";
}

WorkspaceOptions WorkspaceOptionsFor(const Config& config, const std::string& root) {
  WorkspaceOptions wo;
  wo.root = root;
  wo.remote = EffectiveGitRemote(config);
  wo.prepare = config.execution.prepare;
  // Private repositories: git gets the token the GitHub Source already uses.
  wo.git_env = GitAuthEnv(wo.remote, ResolveSecret(config.github.token_env));
  return wo;
}

SandboxPolicy SandboxPolicyFor(const Config& config) {
  namespace fs = std::filesystem;
  SandboxPolicy p;
  p.network = config.execution.network;
  p.pass_env = config.execution.env;
  std::error_code ec;
  const fs::path data = fs::absolute(config.data_dir, ec).lexically_normal();
  p.state_dir = (data / "work" / "sandbox").string();
  // Also what a daemon run as root could read below /etc as the files' owner even without
  // capabilities: password hashes, the host's SSH keys, TLS private keys.
  p.hidden = {data.string(),     "/etc/superagent", "/etc/shadow",      "/etc/shadow-",  "/etc/gshadow",
              "/etc/gshadow-",   "/etc/ssh",        "/etc/ssl/private", "/etc/sudoers", "/etc/sudoers.d"};
  auto dir_of = [&](const std::string& file) {
    if (!file.empty()) p.hidden.push_back(fs::absolute(file, ec).lexically_normal().parent_path().string());
  };
  dir_of(config.source_file);
  dir_of(config.policy_file);
  // A directory the config or policy lives in that is the root or a system directory itself
  // would hide the system: those are only ever hidden file by file.
  std::vector<std::string> kept;
  for (const std::string& h : p.hidden) {
    static const char* kSystem[] = {"/", "/etc", "/usr", "/opt", "/bin", "/lib"};
    if (std::find(std::begin(kSystem), std::end(kSystem), h) == std::end(kSystem)) kept.push_back(h);
  }
  if (!config.source_file.empty()) kept.push_back(fs::absolute(config.source_file, ec).lexically_normal().string());
  if (!config.policy_file.empty()) kept.push_back(fs::absolute(config.policy_file, ec).lexically_normal().string());
  p.hidden = kept;
  return p;
}

Result<std::unique_ptr<Execution>> Execution::Create(const Config& config, Engine* engine, HttpClient* llm_http) {
  std::unique_ptr<Execution> e(new Execution());
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::absolute(config.data_dir, ec) / "work";
  WorkspaceOptions wo = WorkspaceOptionsFor(config, root.string());
  if (wo.remote.empty()) {
    // Without a repository there is nothing to work in: Tickets wait (their Assignments stay
    // pending) instead of all being reported blocked.
    spdlog::warn("execution disabled: no git remote; set execution.git_remote or github.repo");
    return e;
  }
  PosixRunnerOptions ro;
  if (config.execution.cgroups == "off") ro.cgroup_parent = "off";
  ro.nice = config.execution.nice;
  // Workers are untrusted (issue 19): their commands in a sandbox where the host allows it,
  // decided once here, and said at start either way.
  ro.sandbox = SandboxPolicyFor(config);
  const SandboxSupport support =
      config.execution.sandbox == "off" ? SandboxSupport{false, "not probed"} : ProbeSandbox(ro.sandbox);
  auto decision = DecideSandbox(config.execution.sandbox, support);
  if (!decision.ok()) return decision.status();
  ro.sandbox.enabled = decision->enabled;
  if (decision->enabled)
    spdlog::info("sandbox mode=bwrap network={} detail=\"{}\"", ro.sandbox.network ? "on" : "off", decision->detail);
  else
    spdlog::warn("sandbox mode=OFF detail=\"{}\"", decision->detail);
  for (const std::string& w : ExecutionEnvWarnings(config)) spdlog::warn("{}", w);
  e->runner_ = MakePosixProcessRunner(ro);
  const Containment c = e->runner_->containment();
  spdlog::info("process containment groups=yes cgroups={} detail=\"{}\"", c.cgroups ? "yes" : "no", c.detail);
  e->workspaces_ = std::make_unique<Workspaces>(wo, e->runner_.get(), SystemClock(), RealSleeper());
  e->services_ = std::make_unique<WorkerServices>(engine, e->workspaces_.get());
  if (config.execution.executor == "command") {
    e->executor_ = MakeCommandExecutor({config.execution.command}, engine);
  } else {
    llm::ChatOptions chat = llm::ChatOptionsFromConfig(config);
    if (chat.api_key.empty())
      spdlog::warn("worker model disabled: environment variable {} is unset; Tickets will be blocked",
                   config.llm.api_key_env);
    e->chat_ = std::make_unique<llm::OpenAiChatClient>(std::move(chat), llm_http, SystemClock(), llm::RealSleeper());
    BuiltinExecutorOptions bo;
    bo.model = config.llm.EffectiveExecutionModel();
    e->executor_ = MakeBuiltinExecutor(bo, engine, e->chat_.get(), e->services_.get());
  }
  SchedulerOptions so;
  so.slots = config.execution.slots;
  so.jobs_dir = (root / "jobs").string();
  std::filesystem::create_directories(so.jobs_dir, ec);
  if (ec) return Status::IoError("cannot create " + so.jobs_dir + ": " + ec.message());
  e->scheduler_ = std::make_unique<Scheduler>(engine, e->workspaces_.get(), e->executor_.get(), e->services_.get(),
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
