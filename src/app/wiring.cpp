#include "app/wiring.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <map>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "app/config_options.h"
#include "policy/policy_lines.h"
#include "superagent/assign_or_return.h"
#include "superagent/chat.h"
#include "superagent/gate.h"
#include "superagent/model_assessor.h"
#include "superagent/text.h"
#include "superagent/views.h"

namespace superagent::app {

namespace {

// The PEM as GitHub gave it from one written on one line with "\n" for its line breaks (what
// fits an EnvironmentFile line); a PEM with real line breaks is kept as it is.
std::string RestoreLineBreaks(std::string pem) {
  if (pem.find('\n') == std::string::npos)
    for (std::size_t at = pem.find("\\n"); at != std::string::npos; at = pem.find("\\n", at + 1)) pem.replace(at, 2, "\n");
  return pem;
}

// {name, value} of each of `names` set in the daemon's environment (set but empty counts).
std::vector<std::pair<std::string, std::string>> EnvironmentOf(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& name : names)
    if (const char* v = std::getenv(name.c_str())) out.emplace_back(name, v);
  return out;
}

}  // namespace

HttpProxies HttpProxiesFromEnvironment() {
  // The first of `names` set to something; "" when none is.
  auto first = [](std::initializer_list<const char*> names) -> std::string {
    for (const char* name : names)
      if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
    return "";
  };
  HttpProxies p;
  p.http_proxy = first({"http_proxy"});  // never HTTP_PROXY (httpoxy)
  p.https_proxy = first({"https_proxy", "HTTPS_PROXY"});
  p.all_proxy = first({"all_proxy", "ALL_PROXY"});
  p.no_proxy = first({"no_proxy", "NO_PROXY"});
  return p;
}

std::shared_ptr<SecretFilter> MakeSecretFilter(const Config& config, const std::string& panel_token, Clock* clock) {
  // Secret values are read here, in app/, and handed down inside the filter: no module below
  // reads the environment to learn what to hide.
  auto filter = std::make_shared<SecretFilter>(clock);
  for (const auto& [key, env] : SecretEnvNames(config)) filter->Learn(key, ResolveSecret(env));
  // As the App signs with it: line breaks restored from an EnvironmentFile's "\n" (its body
  // lines are learnt one by one, so a worker printing part of it publishes the marker).
  filter->Learn("github.app_private_key_env", GitHubAppPrivateKey(config));
  filter->Learn("panel token", panel_token);
  return filter;
}

github::SourceOptions GitHubSourceOptionsFor(const Config& config) { return ModuleOptionsFor(config).github.source; }

std::string GitHubAppPrivateKey(const Config& config) {
  return RestoreLineBreaks(ModuleOptionsFor(config).github_app.private_key_pem);
}

Result<github::AppAuthOptions> GitHubAppOptionsFor(const Config& config, TimeMs now) {
  github::AppAuthOptions a = ModuleOptionsFor(config).github_app;  // api_url, app_id, installation, repo, key
  a.user_agent = std::string("superagent/") + SUPERAGENT_VERSION;
  if (a.app_id.empty()) return Status::InvalidArgument("github.app_id is empty (github.auth: app needs the App's id)");
  a.private_key_pem = RestoreLineBreaks(std::move(a.private_key_pem));
  if (a.private_key_pem.empty())
    return Status::InvalidArgument("github.app_private_key_env: environment variable " +
                                   config.github.app_private_key_env +
                                   " is not set (github.auth: app needs the App's private key, the .pem GitHub gave)");
  // A key that cannot sign is said now, not at the first request an hour into the night.
  if (auto jwt = github::AppJwt(a.app_id, a.private_key_pem, now); !jwt.ok())
    return Status::InvalidArgument("github.app_private_key_env: " + config.github.app_private_key_env + ": " +
                                   jwt.status().message());
  return a;
}

Result<std::shared_ptr<github::InstallationTokens>> MakeGitHubApp(const Config& config, Clock* clock,
                                                                  std::unique_ptr<HttpClient> http,
                                                                  SecretFilter* secrets) {
  if (config.github.auth != "app" || !config.github.On()) return std::shared_ptr<github::InstallationTokens>();
  auto a = GitHubAppOptionsFor(config, clock->NowMs());
  if (!a.ok()) return a.status();
  a->secrets = secrets;
  if (!http) http = MakeHttpClient(a->user_agent, HttpProxiesFromEnvironment());
  return std::make_shared<github::InstallationTokens>(std::move(http), clock, std::move(*a));
}

Result<std::unique_ptr<github::Integration>> MakeGitHub(const Config& config, Engine* engine, Views* views, Clock* clock,
                                                        std::unique_ptr<HttpClient> http,
                                                        std::shared_ptr<github::InstallationTokens> app) {
  if (!config.github.On()) return Status::InvalidArgument("github.repo is empty: the GitHub Source is disabled");
  // api_url, the token, the Source's settings, merge_token, merge_as_agent, pull_request_origin.
  github::IntegrationOptions o = ModuleOptionsFor(config).github;
  o.repos = config.github.repos;
  o.installation = config.github.installation;
  o.installation_id = ModuleOptionsFor(config).github_app.installation_id;
  if (config.github.auth == "app") {
    if (!app) {
      auto made = MakeGitHubApp(config, clock);
      if (!made.ok()) return made.status();
      app = std::move(*made);
    }
    o.client.token.clear();  // the App's installation tokens only, never github.token_env's
    // Each request asks for the token (it expires hourly); a 401 forgets it for a fresh one.
    o.client.token_source = [app] { return app->Token(); };
    o.client.token_rejected = [app] { app->Invalidate(); };
    if (o.source.bot_login.empty()) o.source.identity = [app] { return app->BotLogin(); };
    o.source.read_notifications = false;
  } else if (o.client.token.empty()) {
    return Status::InvalidArgument("github.token_env: environment variable " + config.github.token_env +
                                   " is not set (the GitHub Source needs a token: a classic PAT with repo and "
                                   "notifications scopes, or a GitHub App: github.auth: app)");
  }
  // The PRs opened for Tickets, followed besides what is read anyway (docs/003, docs/006). Called
  // from the poller's and the webhook server's threads: the read face is thread-safe. Without a
  // store (config checks) nothing is followed.
  o.source.tracked_pulls = [views]() -> Result<std::vector<github::TrackedPull>> {
    if (views == nullptr) return std::vector<github::TrackedPull>();
    ASSIGN_OR_RETURN(auto pulls, views->TrackedPulls());
    std::vector<github::TrackedPull> out;
    for (const TicketPull& p : pulls) out.push_back({p.ticket, p.repo, p.number, p.head_branch});
    return out;
  };
  // The screenshot rule's paths: a UI change auto-merges only with the rule's named approver.
  o.ui_path = [globs = config.execution.ui_paths](const std::string& path) { return exec::MatchesUiPath(globs, path); };
  // Made here, not left to the Integration: a Source reads no environment, so the client it
  // would make itself would go around the proxy. Its user agent, as the Integration's.
  if (!http) http = MakeHttpClient(std::string("superagent/") + SUPERAGENT_VERSION, HttpProxiesFromEnvironment());
  return github::Integration::Create(std::move(o), engine, views, clock, std::move(http));
}

feishu::SourceOptions FeishuSourceOptionsFor(const Config& config) { return ModuleOptionsFor(config).feishu.source; }

Result<std::unique_ptr<feishu::Integration>> MakeFeishu(const Config& config, Engine* engine, Views* views, Clock* clock,
                                                        std::unique_ptr<HttpClient> http) {
  if (!config.feishu.enabled) return Status::InvalidArgument("feishu.enabled is false: the Feishu Source is disabled");
  // api_url, the app id and secret, the Source's settings.
  feishu::IntegrationOptions o = ModuleOptionsFor(config).feishu;
  if (o.client.app_id.empty())
    return Status::InvalidArgument("feishu.app_id_env: environment variable " + config.feishu.app_id_env + " is not set");
  if (o.client.app_secret.empty())
    return Status::InvalidArgument("feishu.app_secret_env: environment variable " + config.feishu.app_secret_env +
                                   " is not set");
  o.long_connection = config.feishu.realtime == "long_connection";
  // As in MakeGitHub: the client is made here, with the environment's proxies.
  if (!http) http = MakeHttpClient(std::string("superagent/") + SUPERAGENT_VERSION, HttpProxiesFromEnvironment());
  return feishu::Integration::Create(std::move(o), engine, views, clock, std::move(http));
}

MessageLimit ChatMessageLimit() {
  MessageLimit limit;
  limit.too_long = [](const std::string& body) { return ChatTooLong(body, kChatWordLimit); };
  limit.cut = [](const std::string& body) { return text::CutWords(body, kChatWordLimit); };
  return limit;
}

std::function<std::optional<MessageLimit>(const std::string& channel)> MessageLimitsFor(const Config& config) {
  MessageLimit github_limit = github::MessageLimitOf(static_cast<std::size_t>(config.github.message_max_chars));
  MessageLimit chat_limit = ChatMessageLimit();
  return [github_limit, chat_limit](const std::string& channel) -> std::optional<MessageLimit> {
    if (github::IsGitHubChannel(channel)) return github_limit;
    if (IsChat(channel)) return chat_limit;
    return std::nullopt;
  };
}

EngineOptions EngineOptionsFor(const Config& config) {
  EngineOptions o = ModuleOptionsFor(config).engine;  // eval_*, quarantine_after, ci_fix_attempts, panel_url
  o.message_limit = MessageLimitsFor(config);
  // Only an App may write check runs (issue 25); a personal token would have every one refused.
  o.check_runs = config.github.auth == "app" && config.github.On();
  for (const std::string& pair : config.feishu.chat_repos) {
    const std::size_t space = pair.find(' ');
    if (space != std::string::npos) o.chat_repositories[pair.substr(0, space)].push_back(pair.substr(space + 1));
  }
  while (!o.panel_url.empty() && o.panel_url.back() == '/') o.panel_url.pop_back();
  return o;
}

llm::ChatOptions ChatOptionsFor(const Config& config) { return ModuleOptionsFor(config).chat; }

std::unique_ptr<Assessor> MakeAssessor(const Config& config, HttpClient* http) {
  return MakeAssessor(config, http, SystemClock(), llm::RealSleeper());
}

std::unique_ptr<Assessor> MakeAssessor(const Config& config, HttpClient* http, Clock* clock, llm::Sleeper sleeper) {
  ModuleOptions m = ModuleOptionsFor(config);
  llm::ChatOptions chat = std::move(m.chat);
  if (chat.api_key.empty() || http == nullptr) {
    spdlog::warn("llm disabled: environment variable {} is unset or empty; explicit requests are shaped from their "
                 "first line and inferred candidates end unavailable until a key is set",
                 config.llm.api_key_env);
    return std::make_unique<NoModelAssessor>();
  }
  ModelAssessorOptions o = std::move(m.assessor);  // model, repo, team_dir
  // Leave a little of the Eval's deadline for recording the outcome.
  const TimeMs eval_ms = m.engine.eval_timeout_ms;
  o.budget_ms = std::max<TimeMs>(1'000, eval_ms - std::min<TimeMs>(2'000, eval_ms / 10));
  auto client = std::make_unique<llm::OpenAiChatClient>(std::move(chat), http, clock, std::move(sleeper));
  spdlog::info("llm enabled base_url={} model={} key_env={}", config.llm.base_url, o.model, config.llm.api_key_env);
  return std::make_unique<ModelAssessor>(std::move(client), std::move(o), clock);
}

std::string GitRemoteOf(const Config& config, const std::string& repo) {
  const std::string& remote = config.execution.git_remote;
  if (const std::size_t at = remote.find("{repo}"); at != std::string::npos && !repo.empty())
    return remote.substr(0, at) + repo + remote.substr(at + 6);
  // A remote without {repo} is the home repository's (or the only one, with no GitHub at all).
  if (!remote.empty() && remote.find("{repo}") == std::string::npos &&
      (repo.empty() || text::AsciiLower(repo) == text::AsciiLower(config.github.repo)))
    return remote;
  if (!repo.empty()) return github::WebUrlOf(config.github.api_url) + "/" + repo + ".git";
  return "";
}

std::string EffectiveGitRemote(const Config& config) { return GitRemoteOf(config, config.github.repo); }

std::string DaemonWorkspace(const Config& config) {
  if (!config.execution.git_remote.empty()) return config.execution.git_remote;
  return config.github.repo;
}

namespace {

// WorkspaceOptionsFor with the table's options `m` of `config` already made.
exec::WorkspaceOptions WorkspaceOptionsFrom(const Config& config, const ModuleOptions& m, const std::string& root,
                                            std::shared_ptr<github::InstallationTokens> app) {
  exec::WorkspaceOptions wo = m.execution.workspace;  // prepare
  wo.root = root;
  wo.remote = EffectiveGitRemote(config);
  wo.repo = text::AsciiLower(config.github.repo);
  for (std::size_t i = 1; i < config.github.repos.size(); ++i)
    wo.other_remotes.emplace_back(config.github.repos[i], GitRemoteOf(config, config.github.repos[i]));
  // An installation's repositories are known only at run time: any of them is reached as the
  // configured ones are ({repo} in execution.git_remote, else GitHub's clone URL).
  if (config.github.installation) wo.remote_of = [config](const std::string& repo) { return GitRemoteOf(config, repo); };
  // Private repositories: git gets the token the GitHub Source already uses — an App's fresh for
  // each command that reaches the remote. Its header is GitHub's host's alone (GitAuthEnv), so
  // any of the remotes on that host stands for all of them.
  const std::string web = github::WebUrlOf(config.github.api_url);
  std::string on_github = wo.remote;
  for (const auto& [repo, remote] : wo.other_remotes)
    if (remote.rfind(web + "/", 0) == 0) on_github = remote;
  if (wo.remote.rfind(web + "/", 0) == 0) on_github = wo.remote;
  if (config.github.installation && on_github.empty()) on_github = web + "/";
  if (app) {
    wo.git_env_source = [app, remote = on_github, web]() -> Result<std::vector<std::pair<std::string, std::string>>> {
      auto token = app->Token();
      if (!token.ok()) return token.status();
      return exec::GitAuthEnv(remote, *token, web);
    };
  } else if (config.github.auth != "app") {
    wo.git_env = exec::GitAuthEnv(on_github, m.github.client.token, web);
  }
  wo.git_pass_env = EnvironmentOf(exec::GitPassThroughNames());
  return wo;
}

// SandboxPolicyFor with the table's options `m` of `config` already made.
exec::SandboxPolicy SandboxPolicyFrom(const Config& config, const ModuleOptions& m) {
  namespace fs = std::filesystem;
  exec::SandboxPolicy p = m.execution.runner.sandbox;  // network, pass_env
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

// The host's share of a coding CLI's options `o` (the table's): the program found in PATH (the
// block's binary, else the CLI's usual name), the directories it needs shown, the bridge.
exec::CliExecutorOptions WithProgram(const std::string& executor, exec::CliExecutorOptions o) {
  o.cli = executor;
  static const std::map<std::string, std::string> kUsualName = {
      {"claude-code", "claude"}, {"codex", "codex"}, {"gemini-cli", "gemini"}, {"qwen-code", "qwen"}};
  const std::string wanted = o.binary.empty() ? kUsualName.at(executor) : o.binary;
  o.binary = FindProgram(wanted);
  if (o.binary.empty()) o.binary = wanted;  // not found: the turn says so when it cannot start
  o.readable = CliInstallDirs(o.binary);
  // The bridge a sandbox without network reaches the model gateway by is this very binary.
  std::error_code ec;
  o.bridge_binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  return o;
}

// The gateway options `o` (the table's) with the wire of the CLI `executor` names.
exec::ModelGatewayOptions WithWire(const std::string& executor, exec::ModelGatewayOptions o) {
  if (auto wire = exec::ModelWireOf(executor); wire.ok()) o.wire = *wire;
  return o;
}

// What the table makes of one coding CLI block `cli`: put in the block `executor` names of an
// otherwise default Config (claude_code's for another name: the four blocks have the same rows).
CodingCliOptions CodingCliOptionsOf(const std::string& executor, const Config::CodingCli& cli) {
  Config c;
  c.execution.executor = executor;
  Config::CodingCli* block = c.execution.ChosenCli();
  (block != nullptr ? *block : c.execution.claude_code) = cli;
  const ModuleOptions m = ModuleOptionsFor(c);
  const CodingCliOptions* o = m.ChosenCli(executor);
  return o != nullptr ? *o : m.claude_code;
}

}  // namespace

exec::WorkspaceOptions WorkspaceOptionsFor(const Config& config, const std::string& root,
                                           std::shared_ptr<github::InstallationTokens> app) {
  return WorkspaceOptionsFrom(config, ModuleOptionsFor(config), root, std::move(app));
}

exec::SandboxPolicy SandboxPolicyFor(const Config& config) {
  return SandboxPolicyFrom(config, ModuleOptionsFor(config));
}

std::string FindProgram(const std::string& name) {
  namespace fs = std::filesystem;
  if (name.find('/') != std::string::npos) {
    std::error_code ec;
    return fs::absolute(name, ec).lexically_normal().string();
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
    if (!candidate.parent_path().empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

std::vector<std::string> CliInstallDirs(const std::string& binary) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  if (binary.empty()) return dirs;
  std::error_code ec;
  for (const fs::path& p : {fs::path(binary), fs::canonical(binary, ec)}) {
    if (p.empty()) continue;
    // npm installs a CLI's code, its native binary and its dependencies as siblings below one
    // node_modules: the outermost one above the program is shown whole.
    fs::path shown = p.parent_path();
    for (fs::path at = p.parent_path(); !at.empty() && at != at.root_path(); at = at.parent_path())
      if (at.filename() == "node_modules") shown = at;
    if (std::find(dirs.begin(), dirs.end(), shown.string()) == dirs.end()) dirs.push_back(shown.string());
  }
  return dirs;
}

exec::CliExecutorOptions CliExecutorOptionsFor(const std::string& executor, const Config::CodingCli& cli) {
  return WithProgram(executor, CodingCliOptionsOf(executor, cli).cli);
}

exec::ModelGatewayOptions ModelGatewayOptionsFor(const std::string& executor, const Config::CodingCli& cli) {
  return WithWire(executor, CodingCliOptionsOf(executor, cli).gateway);
}

exec::ExecutionOptions ExecutionOptionsFor(const Config& config, std::shared_ptr<github::InstallationTokens> app) {
  const ModuleOptions m = ModuleOptionsFor(config);
  // executor, command, sandbox, slots, runner.nice, worker.team_dir and .ui_paths.
  exec::ExecutionOptions o = m.execution;
  std::error_code ec;
  const std::string root = (std::filesystem::absolute(config.data_dir, ec) / "work").string();
  o.workspace = WorkspaceOptionsFrom(config, m, root, std::move(app));
  if (config.execution.cgroups == "off") o.runner.cgroup_parent = "off";  // "auto": the runner's own choice
  o.runner.sandbox = SandboxPolicyFrom(config, m);
  o.warnings = ExecutionEnvWarnings(config);
  const Config::CodingCli* block = config.execution.ChosenCli();
  const CodingCliOptions* cli = m.ChosenCli(config.execution.executor);
  if (block != nullptr && cli != nullptr) {
    o.cli = WithProgram(config.execution.executor, cli->cli);
    o.gateway = WithWire(config.execution.executor, cli->gateway);
    if (!block->api_key_env.empty() && o.gateway.api_key.empty())
      o.warnings.push_back(config.execution.executor + ": environment variable " + block->api_key_env +
                           " (its model key) is unset; its turns will fail");
  } else if (o.executor != "command") {
    o.chat = m.chat;
    o.model = config.llm.EffectiveExecutionModel();
    if (o.chat.api_key.empty())
      o.warnings.push_back("worker model disabled: environment variable " + config.llm.api_key_env +
                           " is unset; Tickets will be blocked");
  }
  return o;
}

std::vector<panel::SetupGap> SetupGapsFor(const Config& config, const RunMode& mode) {
  std::vector<panel::SetupGap> gaps;
  const std::string restart = " " + RestartHint(mode);
  const std::string secrets = SecretsHint(mode);
  const bool github = config.github.On();
  const std::string served = config.github.installation ? std::string("the App's installation") : config.github.repo;
  if (!github && !config.feishu.enabled)
    gaps.push_back({"sources",
                    "Nothing reaches the daemon: GitHub and Feishu are both off, so only the panel can ask it for work.",
                    "Set github.repo: OWNER/NAME in superagent.yaml, or feishu.enabled: true (with its app). "
                    "`superagent init` writes a commented superagent.yaml and policy.yaml for you." + restart});
  if (github) {
    const bool app = config.github.auth == "app";
    const std::string& env = app ? config.github.app_private_key_env : config.github.token_env;
    if (ResolveSecret(env).empty())
      gaps.push_back({"github",
                      std::string(app ? "The GitHub App has no private key" : "GitHub has no token") + ": the variable " +
                          env + " is unset or empty, so nothing of " + served + " can be read.",
                      "Set " + env +
                          (app ? "=<the App's .pem, quoted over its lines> " : "=<a token with the repo and notifications scopes> ") +
                          secrets + (app ? "; github.app_private_key_env" : "; github.token_env") + " names the variable." +
                          restart});
    else
      gaps.push_back({"github", "GitHub has not answered since the daemon started.",
                      "Check github.repos (" + served + "), github.api_url (" + config.github.api_url +
                          ") and the token in " + env + "; `superagent doctor --config …` tries all three.",
                      true});
  }
  if (config.feishu.enabled) {
    std::vector<std::string> unset;
    for (const std::string& env : {config.feishu.app_id_env, config.feishu.app_secret_env})
      if (ResolveSecret(env).empty()) unset.push_back(env);
    if (!unset.empty())
      gaps.push_back({"feishu",
                      "Feishu has no app: " + unset.front() + (unset.size() == 1 ? " is" : " and " + unset.back() + " are") +
                          " unset or empty, so no chat can be read or answered.",
                      "Set the app's id and secret " + secrets + "; feishu.app_id_env and feishu.app_secret_env name "
                      "the variables." + restart});
    else
      gaps.push_back({"feishu", "Feishu has not answered since the daemon started.",
                      "Check feishu.api_url (" + config.feishu.api_url + ") and the app's id and secret in " +
                          config.feishu.app_id_env + " and " + config.feishu.app_secret_env +
                          "; `superagent doctor --config …` tries them.",
                      true});
  }
  if (ResolveSecret(config.llm.api_key_env).empty())
    gaps.push_back({"model",
                    "The model is off: the variable " + config.llm.api_key_env +
                        " is unset or empty, so explicit requests are shaped from their first line and inferred "
                        "work is never taken" +
                        std::string(config.execution.executor == "builtin"
                                        ? "; the built-in agent cannot work either, so accepted Tickets are blocked."
                                        : "."),
                    "Set " + config.llm.api_key_env + "=<a key for " + config.llm.base_url + "> " + secrets +
                        "; llm.api_key_env names the variable, llm.base_url the endpoint." + restart});
  if (EffectiveGitRemote(config).empty() && !config.github.installation)
    gaps.push_back({"execution", "Execution is off: there is no repository to work in, so accepted Tickets wait.",
                    "Set github.repo, or execution.git_remote for another remote." + restart});
  return gaps;
}

std::vector<NobodyMayAsk> NobodyMayAskFor(const Config& config, const Policy& policy, const RunMode* mode) {
  std::vector<NobodyMayAsk> out;
  struct On {
    const char* source;
    std::string where;  // "GitHub (o/r)"
    const char* who;    // what goes in the list
  };
  std::vector<On> on;
  if (config.github.On())
    on.push_back({"github", "GitHub (" + (config.github.installation ? std::string("the App's installation") : config.github.repo) + ")",
                  "the GitHub logins"});
  if (config.feishu.enabled) on.push_back({"feishu", "Feishu", "the Feishu open_ids (ou_…)"});
  for (const On& o : on) {
    if (AnyoneMayAsk(policy, o.source)) continue;
    NobodyMayAsk n;
    n.source = o.source;
    n.key = std::string("sources.") + o.source + ".people";
    const bool section = policy.sources.count(o.source) > 0;
    n.what = "Nobody may ask for work yet on " + o.where + ": " +
             (section ? n.key + " is empty and no row of sources." + std::string(o.source) +
                            ".scopes takes others' @-mentions as explicit, so every @-mention of the agent is "
                            "ignored (explain says ignored:others_addressed)."
                      : "the policy has no sources." + std::string(o.source) +
                            " section, so every message there is ignored (explain says source_not_in_policy).");
    if (config.policy_file.empty()) {
      n.fix = "The daemon runs on the embedded default policy, which lets nobody ask. Set policy_file: policy.yaml "
              "in " + (config.source_file.empty() ? std::string("its config") : config.source_file) + " and list " +
              o.who + " of the people who may ask under " + n.key + " there (`superagent init` writes one). " +
              (mode ? RestartHint(*mode) : std::string("Then restart the daemon."));
    } else {
      n.fix = "Add " + std::string(o.who) + " of the people who may ask to " + n.key + " in " + config.policy_file +
              " (e.g. people: [" + (std::string(o.source) == "github" ? "alice, bob" : "ou_1a2b3c") + "]). " +
              KeyLineWords(config.policy_file, {"sources", o.source, "people"}) +
              " The daemon reloads the file when it is saved; no restart is needed.";
    }
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<panel::SetupGap> PolicySetupGapsFor(const Config& config, const Policy& policy, const RunMode& mode) {
  std::vector<panel::SetupGap> gaps;
  for (const NobodyMayAsk& n : NobodyMayAskFor(config, policy, &mode))
    gaps.push_back({n.source + ".people", n.what, n.fix});
  return gaps;
}

panel::PanelContext PanelContextFor(const Config& config, const RunMode& mode) {
  panel::PanelContext ctx = ModuleOptionsFor(config).panel;  // listen, password_env, password, slots_configured
  ctx.setup = SetupGapsFor(config, mode);
  ctx.policy_file = config.policy_file;
  ctx.repositories = [repos = config.github.repos] { return repos; };
  return ctx;
}

}  // namespace superagent::app
