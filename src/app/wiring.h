// Wiring: the composition root's translation of the Config into each module's Options. Only
// app/ reads the config file and the environment; every module below takes plain values (its
// Options, with secrets already resolved by ResolveSecret), so a module never sees a config key
// it does not use and never reads a secret it was not handed.
//
// What a key gives a module as it is (or converted: seconds, a secret, a price) comes from its row
// of the key table through ModuleOptionsFor (app/config_options.h); the functions below start from
// those and add only what is computed from several keys or from the host.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/config.h"
#include "app/run_mode.h"
#include "superagent/assessment.h"
#include "superagent/clock.h"
#include "superagent/engine.h"
#include "superagent/exec.h"
#include "superagent/feishu.h"
#include "superagent/github.h"
#include "superagent/github_app.h"
#include "superagent/http.h"
#include "superagent/llm.h"
#include "superagent/panel.h"
#include "superagent/secret_filter.h"

namespace superagent {
class Views;
}  // namespace superagent

namespace superagent::app {

// ---- the outbound filter (issue 33) ----

// The filter everything the daemon publishes passes, knowing every secret value the config
// names: the value of each *_env key (SecretEnvNames, as ResolveSecret reads it), the App's
// private key and each line of its PEM body (GitHubAppPrivateKey), and `panel_token` (the
// daemon's data_dir/panel.token). Installation tokens are learnt as they are issued
// (MakeGitHubApp's `secrets`). Values shorter than kMinSecretLength are not learnt.
std::shared_ptr<SecretFilter> MakeSecretFilter(const Config& config, const std::string& panel_token,
                                               Clock* clock = nullptr);

// ---- outgoing HTTP ----

// The proxies the daemon's HTTP clients use, read from the environment by libcurl's rules (see
// HttpProxies): http_proxy (lower-case only: HTTP_PROXY is never read, httpoxy); https_proxy,
// else HTTPS_PROXY; all_proxy, else ALL_PROXY; no_proxy, else NO_PROXY. A variable set to "" is
// unset. Values are passed on as they are: a malformed one fails the requests it would carry
// (MakeHttpClient), it is not dropped here. Read at each call; pass the result to
// MakeHttpClient wherever the daemon or a command makes a client.
HttpProxies HttpProxiesFromEnvironment();

// ---- GitHub (github.*) ----

// The Source's settings: repo, bot_login, the webhook secret from the variable
// github.webhook_secret_env names ("" when unset), the poll interval and the read scopes.
github::SourceOptions GitHubSourceOptionsFor(const Config& config);

// With github.auth: app, the App's installation tokens, shared by the GitHub Integration (its
// API calls) and the workspaces (git push), over `http` (null: a client with the environment's
// proxies, HttpProxiesFromEnvironment); null with auth: token or no github.repo. InvalidArgument,
// naming the key to fix, when the App id is missing or the variable github.app_private_key_env
// names holds no RSA private key in PEM. Asks GitHub nothing.
// The App's private key from the variable github.app_private_key_env names: the PEM as GitHub
// gave it, or written on one line with "\n" for its line breaks (what fits an EnvironmentFile
// line); "" when unset.
std::string GitHubAppPrivateKey(const Config& config);
// The App's options from github.* (api_url, app_id, installation, repo, the key), checked without
// the network: InvalidArgument, naming the key to fix, when the id is missing or the key is unset
// or cannot sign. doctor asks GitHub with them; MakeGitHubApp runs the daemon's tokens on them.
Result<github::AppAuthOptions> GitHubAppOptionsFor(const Config& config, TimeMs now);
// `secrets` (not owned, may be null) learns each installation token as it is issued.
Result<std::shared_ptr<github::InstallationTokens>> MakeGitHubApp(const Config& config, Clock* clock,
                                                                  std::unique_ptr<HttpClient> http = nullptr,
                                                                  SecretFilter* secrets = nullptr);
// The GitHub Source and Channel the daemon runs, over `http` (null: a client with the
// environment's proxies). InvalidArgument, naming the key to fix, when github.repo is empty (the
// Source is disabled) or, with auth: token, the variable github.token_env names is unset or empty.
// With auth: app it acts through `app` (MakeGitHubApp's; null: made here): installation tokens,
// the login "<slug>[bot]", no notifications.
Result<std::unique_ptr<github::Integration>> MakeGitHub(const Config& config, Engine* engine, Views* views, Clock* clock,
                                                        std::unique_ptr<HttpClient> http = nullptr,
                                                        std::shared_ptr<github::InstallationTokens> app = nullptr);

// ---- Feishu (feishu.*) ----

// The Source's settings: the callback's encrypt key and verification token from the variables
// feishu.encrypt_key_env and feishu.verification_token_env name, and the poll interval.
feishu::SourceOptions FeishuSourceOptionsFor(const Config& config);

// The Feishu Source, Channel and realtime path, over `http` (null: a client with the
// environment's proxies). InvalidArgument, naming the key to fix, when feishu.enabled is false or
// the app id or secret variable is unset.
Result<std::unique_ptr<feishu::Integration>> MakeFeishu(const Config& config, Engine* engine, Views* views, Clock* clock,
                                                        std::unique_ptr<HttpClient> http = nullptr);

// ---- the Engine: each platform's message length rule ----

// SPEC §1's rule for a chat message (Feishu, the panel): at most kChatWordLimit words
// (ChatTooLong, text::CountWords), cut by text::CutWords.
MessageLimit ChatMessageLimit();
// EngineOptions::message_limit as the daemon sets it: a GitHub channel gets GitHub's character
// cap (github.message_max_chars, github::MessageLimitOf), a chat the word limit above; other
// channels have none.
std::function<std::optional<MessageLimit>(const std::string& channel)> MessageLimitsFor(const Config& config);

// EngineOptions as the daemon sets them from the config: eval_timeout_ms, eval_max_attempts,
// quarantine_after, ci_fix_attempts and panel_url (its trailing '/' dropped) from the table,
// message_limit (MessageLimitsFor), check_runs (only a GitHub App on a repository writes them).
// The daemon adds its own: follow_up_settle_ms, on_eval_queued.
EngineOptions EngineOptionsFor(const Config& config);

// ---- the model (llm.*) ----

// The chat client's options: base URL, the key from the variable llm.api_key_env names (""
// when unset: no model configured), timeouts and retries.
llm::ChatOptions ChatOptionsFor(const Config& config);

// The daemon's Assessor: a ModelAssessor on llm.assessment_model when the variable named by
// llm.api_key_env holds a key, else (with one warning line) NoModelAssessor. Its budget stays
// inside eval.timeout_seconds. `http` is not owned and must outlive the result.
std::unique_ptr<Assessor> MakeAssessor(const Config& config, HttpClient* http);
// The same with injected time (tests).
std::unique_ptr<Assessor> MakeAssessor(const Config& config, HttpClient* http, Clock* clock, llm::Sleeper sleeper);

// ---- execution (execution.*) ----

// Where Tickets' code comes from and their branches go: execution.git_remote, else the GitHub
// repository's https clone URL, else "" (execution disabled).
std::string EffectiveGitRemote(const Config& config);
// Where `repo`'s code comes from and its branches go: execution.git_remote with {repo} replaced,
// that remote as it is for the home repository (github.repo), else GitHub's clone URL.
std::string GitRemoteOf(const Config& config, const std::string& repo);

// The repository the daemon works on, which is every worker session's intercom workspace:
// execution.git_remote, else github.repo. "" when neither is set: unknown, so the intercom
// refuses to deliver between sessions (it fails closed).
std::string DaemonWorkspace(const Config& config);

// The workspace options the daemon uses, rooted at `root` (the daemon passes <data_dir>/work;
// doctor a scratch directory), with git authenticated by the GitHub token and given the
// daemon's proxy, CA and SSH-agent variables (exec::GitPassThroughNames).
// With a GitHub App (`app`), git asks it for an installation token before each command that
// reaches the remote.
exec::WorkspaceOptions WorkspaceOptionsFor(const Config& config, const std::string& root,
                                           std::shared_ptr<github::InstallationTokens> app = nullptr);

// The sandbox rules (execution.network, execution.env), hiding data_dir, the config's and the
// policy's directories and files, and /etc/superagent (the secrets file), with the workers'
// HOMEs under <data_dir>/work/sandbox (Workspaces::Remove removes a Ticket's with its
// directory). `enabled` is left false: DecideSandbox (sandbox.h) sets it from execution.sandbox
// and ProbeSandbox.
exec::SandboxPolicy SandboxPolicyFor(const Config& config);

// Everything Execution::Create needs (execution.*, llm.*, github.repo, data_dir), rooted at
// <data_dir>/work, with the start-up warnings (secrets passed to workers, a missing worker model
// key) it logs when execution is enabled.
exec::ExecutionOptions ExecutionOptionsFor(const Config& config,
                                           std::shared_ptr<github::InstallationTokens> app = nullptr);

// A program's path: `name` made absolute when it has a slash, else the first executable of that
// name in PATH; "" when none is found.
std::string FindProgram(const std::string& name);
// What a coding CLI needs shown read-only in the sandbox to start: the outermost node_modules
// above `binary` (and above its real path, through symlinks), or the directories holding them.
std::vector<std::string> CliInstallDirs(const std::string& binary);
// The options of the coding CLI `executor` names ("claude-code", …) from its config block: the
// binary found, its install directories. No key: that is the gateway's.
exec::CliExecutorOptions CliExecutorOptionsFor(const std::string& executor, const Config::CodingCli& cli);
// The model gateway for that CLI: its wire, the API it forwards to, the key read from the
// variable the block names, and the prices.
exec::ModelGatewayOptions ModelGatewayOptionsFor(const std::string& executor, const Config::CodingCli& cli);

// ---- the panel (panel.*) ----

// A PanelContext with what the config says: listen, the fixed password's variable name and
// value (panel.token_env), execution.slots, the Set-up cards of the config (SetupGapsFor, with
// `mode`'s hints). The caller adds the Engine, Views, token and callbacks (live_setup among them).
panel::PanelContext PanelContextFor(const Config& config, const RunMode& mode = RunMode{});
// What `config` leaves off or unset — no Source, a missing token or key, no repository to work
// in — as the panel's "Set up" cards (issue 24); a configured Source also gets a card shown only
// until its first successful read. Each fix ends with how to restart the daemon as `mode` says it
// runs (issue 34: systemctl only under systemd) and says where a secret goes for it.
std::vector<panel::SetupGap> SetupGapsFor(const Config& config, const RunMode& mode = RunMode{});

// A Source that is on (github.repo set, feishu.enabled) where nobody may ask for work under the
// policy in force (AnyoneMayAsk, gate.h): every @-mention there is ignored (issue 34).
struct NobodyMayAsk {
  std::string source;  // "github" | "feishu"
  std::string key;     // "sources.github.people": the key that fixes it
  std::string what;    // "Nobody may ask for work yet on GitHub (o/r): …"
  // What to write where (with the line of policy_file, when it is written), and that a saved
  // policy file is reloaded; without a policy_file, how to name one and restart (`mode`; null:
  // "restart the daemon").
  std::string fix;
};
// Each Source of `config` that is on and that nobody may ask under `policy`, GitHub first.
std::vector<NobodyMayAsk> NobodyMayAskFor(const Config& config, const Policy& policy, const RunMode* mode = nullptr);
// The same as "Set up" cards (piece "github.people", "feishu.people"): the daemon asks for them on
// each Needs-you read, so they follow the policy in force (PanelContext::live_setup).
std::vector<panel::SetupGap> PolicySetupGapsFor(const Config& config, const Policy& policy, const RunMode& mode);

}  // namespace superagent::app
