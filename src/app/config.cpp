// The config's key table (ConfigKeys()), its value checks, and what the table drives besides
// parsing (config_parse.cpp) and the modules' options (config_options.cpp): the defaults of a
// fresh Config, the secrets' names, the JSON shown.
#include "app/config.h"

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "app/config_internal.h"
#include "app/config_options.h"
#include "superagent/host_port.h"

namespace superagent {

namespace {

using config_internal::BoolOf;
using config_internal::IntOf;
using config_internal::ListOf;
using config_internal::StartsWith;
using config_internal::StringOf;
using config_internal::Type;
using Convert = ConfigKey::Convert;

bool IsHttpUrl(std::string_view s) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (StartsWith(s, scheme) && s.size() > scheme.size()) return s.find_first_of(" \t\r\n") == std::string_view::npos;
  }
  return false;
}

// GitHub's own rules: owners are alphanumerics and '-', repository names add '.' and '_'. Empty
// means "no repository".
bool IsEmptyOrRepoName(std::string_view repo) {
  if (repo.empty()) return true;
  size_t slash = repo.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == repo.size()) return false;
  std::string_view owner = repo.substr(0, slash);
  std::string_view name = repo.substr(slash + 1);
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  for (char c : owner) {
    if (!alnum(c) && c != '-') return false;
  }
  for (char c : name) {
    if (!alnum(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return name != "." && name != "..";
}

bool IsRepoName(std::string_view repo) { return !repo.empty() && IsEmptyOrRepoName(repo); }

// A GitHub login: letters, digits and single inner hyphens, at most 39 characters; an app's bot
// account adds "[bot]". Empty means "ask GitHub".
bool IsEmptyOrLogin(std::string_view s) {
  if (s.empty()) return true;
  std::string_view name = s;
  if (name.size() > 5 && name.substr(name.size() - 5) == "[bot]") name.remove_suffix(5);
  bool valid = name.size() <= 39 && !name.empty() && name.front() != '-' && name.back() != '-';
  for (char c : name) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && c != '-') valid = false;
  }
  return valid;
}

bool IsListenAddress(std::string_view s) {
  std::string host;
  int port = 0;
  return SplitHostPort(s, &host, &port);
}

// ---- the key table ----

// The member a key sets, as the function pointer ConfigKey::Field holds.
#define CONFIG_FIELD(member) [](Config& c) -> auto& { return c.member; }
// The module option a key feeds, as the function pointer ConfigKey::Target holds.
#define OPTION(member) +[](app::ModuleOptions& o) -> auto& { return o.member; }

// Where a row's value goes, as it is or converted (ConfigKey::Convert says how).
template <class T>
ConfigKey::Destination Same(T& (*to)(app::ModuleOptions&)) {
  return {to, Convert::kSame};
}
template <class T>
ConfigKey::Destination Ms(T& (*to)(app::ModuleOptions&)) {
  return {to, Convert::kMilliseconds};
}
template <class T>
ConfigKey::Destination Secret(T& (*to)(app::ModuleOptions&)) {
  return {to, Convert::kSecret};
}
template <class T>
ConfigKey::Destination Decimal(T& (*to)(app::ModuleOptions&)) {
  return {to, Convert::kDecimal};
}
template <class T>
ConfigKey::Destination Integer(T& (*to)(app::ModuleOptions&)) {
  return {to, Convert::kInteger};
}

// Row `k`, feeding each of `to`.
template <class... D>
ConfigKey Feeds(ConfigKey k, const D&... to) {
  (k.destinations.push_back(to), ...);
  return k;
}

ConfigKey String(std::string_view name, std::string& (*field)(Config&), std::string_view def, std::string_view doc) {
  ConfigKey k;
  k.name = name;
  k.type = Type::kString;
  k.field = field;
  k.default_value = std::string(def);
  k.doc = doc;
  return k;
}

// A string that must not be empty.
ConfigKey Required(std::string_view name, std::string& (*field)(Config&), std::string_view def, std::string_view doc) {
  ConfigKey k = String(name, field, def, doc);
  k.required = true;
  return k;
}

// A file or directory; relative means "next to the config file".
ConfigKey Path(ConfigKey k) {
  k.path = true;
  return k;
}

// A string that must pass `valid`; `must` says what it must be.
ConfigKey Checked(std::string_view name, std::string& (*field)(Config&), std::string_view def,
                  bool (*valid)(std::string_view), std::string_view must, std::string_view doc) {
  ConfigKey k = String(name, field, def, doc);
  k.valid = valid;
  k.must = must;
  return k;
}

ConfigKey Choice(std::string_view name, std::string& (*field)(Config&), std::string_view def,
                 std::vector<std::string_view> choices, std::string_view doc) {
  ConfigKey k = String(name, field, def, doc);
  k.choices = std::move(choices);
  return k;
}

// The NAME of an environment variable; `optional` allows "" (none).
ConfigKey EnvName(std::string_view name, std::string& (*field)(Config&), std::string_view def, std::string_view doc,
                  bool optional = false) {
  ConfigKey k = String(name, field, def, doc);
  k.type = Type::kEnvName;
  k.required = !optional;
  return k;
}

// An integer's inclusive bounds.
struct Bounds {
  int min, max;
};

ConfigKey Int(std::string_view name, int& (*field)(Config&), int def, Bounds bounds, std::string_view doc) {
  ConfigKey k;
  k.name = name;
  k.type = Type::kInt;
  k.field = field;
  k.default_value = def;
  k.min = bounds.min;
  k.max = bounds.max;
  k.doc = doc;
  return k;
}

ConfigKey Bool(std::string_view name, bool& (*field)(Config&), bool def, std::string_view doc,
               Type type = Type::kBool) {
  ConfigKey k;
  k.name = name;
  k.type = type;
  k.field = field;
  k.default_value = def;
  k.doc = doc;
  return k;
}

ConfigKey OnOff(std::string_view name, bool& (*field)(Config&), bool def, std::string_view doc) {
  return Bool(name, field, def, doc, Type::kOnOff);
}

ConfigKey EnvNameList(std::string_view name, std::vector<std::string>& (*field)(Config&), std::vector<std::string> def,
                      std::string_view doc) {
  ConfigKey k;
  k.name = name;
  k.type = Type::kEnvNameList;
  k.field = field;
  k.default_value = std::move(def);
  k.doc = doc;
  return k;
}

ConfigKey StringList(std::string_view name, std::vector<std::string>& (*field)(Config&), std::vector<std::string> def,
                     std::string_view doc) {
  ConfigKey k = EnvNameList(name, field, std::move(def), doc);
  k.type = Type::kStringList;
  return k;
}

// A mapping row: each key to one value or a list, held as "key value" entries (ConfigKey::pairs).
ConfigKey Pairs(std::string_view name, std::vector<std::string>& (*field)(Config&), bool (*valid)(std::string_view),
                std::string_view must, std::string_view doc) {
  ConfigKey k = StringList(name, field, {}, doc);
  k.pairs = true;
  k.valid = valid;
  k.must = must;
  return k;
}

// A list row that also takes one bare word in place of a list (github.repos: installation),
// read as the list of that word.
ConfigKey WithWord(ConfigKey k, std::string_view word) {
  k.choices = {word};
  return k;
}

bool IsEmptyOrHttpUrl(std::string_view s) { return s.empty() || IsHttpUrl(s); }
bool IsEmptyOrListenAddress(std::string_view s) { return s.empty() || IsListenAddress(s); }
bool IsEmptyOrDigits(std::string_view s) {
  return s.size() <= 18 && s.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

// A price: empty, or a non-negative decimal number ("3", "0.27").
bool IsEmptyOrPrice(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > 12) return false;
  bool digit = false, point = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') digit = true;
    else if (c == '.' && !point) point = true;
    else return false;
  }
  return digit;
}

// The nine keys of one coding CLI's block (Config::CodingCli), for execution.<block>; `member` is
// the block's member of Config::Execution and of app::ModuleOptions.
#define CODING_CLI_KEYS(block, member)                                                                              \
  Feeds(String("execution." block ".binary", CONFIG_FIELD(execution.member.binary), "",                            \
               "the CLI's program: a path or a name in PATH; empty: its usual name"),                               \
        Same(OPTION(member.cli.binary))),                                                                           \
      Feeds(String("execution." block ".model", CONFIG_FIELD(execution.member.model), "",                          \
                   "model the CLI asks for; empty: its default"),                                                   \
            Same(OPTION(member.cli.model))),                                                                        \
      Feeds(EnvName("execution." block ".api_key_env", CONFIG_FIELD(execution.member.api_key_env), "",             \
                    "variable holding the CLI's model key; it stays in the daemon's model gateway, never in the "  \
                    "sandbox",                                                                                      \
                    /*optional=*/true),                                                                             \
            Secret(OPTION(member.gateway.api_key))),                                                                \
      Feeds(Checked("execution." block ".base_url", CONFIG_FIELD(execution.member.base_url), "", IsEmptyOrHttpUrl, \
                    "empty or an http:// or https:// URL",                                                          \
                    "the model API's base URL the gateway forwards to; empty: the vendor's API"),                   \
            Same(OPTION(member.gateway.upstream))),                                                                 \
      Feeds(Checked("execution." block ".usd_per_million_input_tokens",                                             \
                    CONFIG_FIELD(execution.member.usd_per_million_input), "", IsEmptyOrPrice,                       \
                    "empty or a decimal number", "the model's price, for budgets' cost_usd; empty: cost not counted"), \
            Decimal(OPTION(member.gateway.usd_per_million_input))),                                                 \
      Feeds(Checked("execution." block ".usd_per_million_output_tokens",                                            \
                    CONFIG_FIELD(execution.member.usd_per_million_output), "", IsEmptyOrPrice,                      \
                    "empty or a decimal number", "the model's price for generated tokens (reasoning included)"),    \
            Decimal(OPTION(member.gateway.usd_per_million_output))),                                                \
      Feeds(StringList("execution." block ".args", CONFIG_FIELD(execution.member.args), {},                        \
                       "extra arguments to the CLI"),                                                               \
            Same(OPTION(member.cli.args))),                                                                         \
      Feeds(StringList("execution." block ".allowed_commands", CONFIG_FIELD(execution.member.allowed_commands), {}, \
                       "shell command prefixes the CLI may run; empty: any (the sandbox confines them)"),           \
            Same(OPTION(member.cli.allowed_commands))),                                                             \
      Feeds(Int("execution." block ".turn_seconds", CONFIG_FIELD(execution.member.turn_seconds), 1800, {10, 86400}, \
                "one turn's wall time before the CLI's process tree is killed"),                                    \
            Ms(OPTION(member.cli.turn_ms)))

const std::vector<ConfigKey>& ConfigKeys() {
  static const std::vector<ConfigKey> kKeys = {
      Path(Required("data_dir", CONFIG_FIELD(data_dir), "./superagent-data",
                    "directory of the database, worktrees and transcripts")),
      Path(String("policy_file", CONFIG_FIELD(policy_file), "", "policy.yaml to load; empty: the embedded default")),
      Feeds(Checked("panel.listen", CONFIG_FIELD(panel.listen), "127.0.0.1:8080", IsListenAddress,
                    "\"host:port\" with port 1..65535", "address the web panel listens on"),
            Same(OPTION(panel.listen))),
      Feeds(EnvName("panel.token_env", CONFIG_FIELD(panel.token_env), "",
                    "variable holding a fixed panel password; empty: the generated token, loopback only",
                    /*optional=*/true),
            Same(OPTION(panel.password_env)), Secret(OPTION(panel.password))),
      Feeds(Checked("panel.public_url", CONFIG_FIELD(panel.public_url), "", IsEmptyOrHttpUrl,
                    "empty or an http:// or https:// URL",
                    "the panel's address as people reach it; check runs link Tickets there"),
            Same(OPTION(engine.panel_url))),
      Choice("log.level", CONFIG_FIELD(log.level), "info", {"trace", "debug", "info", "warn", "error"},
             "minimum level written to stderr"),
      Feeds(Checked("github.api_url", CONFIG_FIELD(github.api_url), "https://api.github.com", IsHttpUrl,
                    "an http:// or https:// URL", "GitHub REST API base URL"),
            Same(OPTION(github.client.api_url)), Same(OPTION(github_app.api_url))),
      Feeds(Checked("github.repo", CONFIG_FIELD(github.repo), "", IsEmptyOrRepoName, "empty or \"owner/name\"",
                    "one repository worked on (a list of one); empty and no github.repos disables the GitHub Source"),
            Same(OPTION(github.source.repo)), Same(OPTION(github_app.repo)), Same(OPTION(assessor.repo))),
      WithWord(StringList("github.repos", CONFIG_FIELD(github.repos), {},
                          "the repositories worked on, \"owner/name\" each, the first the home of chat requests; "
                          "or installation: every repository the GitHub App's installation can see"),
               "installation"),
      Choice("github.auth", CONFIG_FIELD(github.auth), "token", {"token", "app"},
             "token: a bot user's personal access token; app: a GitHub App's installation"),
      Feeds(EnvName("github.token_env", CONFIG_FIELD(github.token_env), "GITHUB_TOKEN",
                    "variable holding the GitHub token (auth: token)"),
            Secret(OPTION(github.client.token))),
      Feeds(Checked("github.app_id", CONFIG_FIELD(github.app_id), "", IsEmptyOrDigits, "empty or the App's numeric id",
                    "the GitHub App's id (auth: app)"),
            Same(OPTION(github_app.app_id))),
      Feeds(Checked("github.app_installation_id", CONFIG_FIELD(github.app_installation_id), "", IsEmptyOrDigits,
                    "empty or a numeric id", "the App's installation on the repository; empty: looked up"),
            Integer(OPTION(github_app.installation_id))),
      Feeds(EnvName("github.app_private_key_env", CONFIG_FIELD(github.app_private_key_env), "GITHUB_APP_PRIVATE_KEY",
                    "variable holding the App's private key, PEM (auth: app)"),
            Secret(OPTION(github_app.private_key_pem))),
      Feeds(EnvName("github.webhook_secret_env", CONFIG_FIELD(github.webhook_secret_env), "GITHUB_WEBHOOK_SECRET",
                    "variable holding the webhook secret; webhooks are refused while it is unset"),
            Secret(OPTION(github.source.webhook_secret))),
      Feeds(Checked("github.bot_login", CONFIG_FIELD(github.bot_login), "", IsEmptyOrLogin,
                    "empty or a GitHub login like my-agent", "the agent's login; empty: asked from GitHub"),
            Same(OPTION(github.source.bot_login))),
      Feeds(Int("github.poll_interval_seconds", CONFIG_FIELD(github.poll_interval_seconds), 60, {60, 3600},
                "seconds between polling rounds"),
            Ms(OPTION(github.source.poll_interval_ms))),
      Feeds(Int("github.quiet_read_interval_seconds", CONFIG_FIELD(github.quiet_read_interval_seconds), 600,
                {60, 86400},
                "a repository quiet for a while is read less often, down to once in this many seconds (with "
                "notifications or webhooks; without either every repository is read every round)"),
            Ms(OPTION(github.quiet_read_interval_ms))),
      Feeds(Int("github.request_budget_per_hour", CONFIG_FIELD(github.request_budget_per_hour), 2500, {100, 1000000},
                "requests the pollers may spend an hour (304s are free): beyond it only what people wait for "
                "is read"),
            Same(OPTION(github.source.request_budget_per_hour))),
      Int("github.message_max_chars", CONFIG_FIELD(github.message_max_chars), 65000, {1000, 65000},
          "longest comment the agent posts; a longer one is refused, never cut"),
      Feeds(EnvName("github.merge_token_env", CONFIG_FIELD(github.merge_token_env), "",
                    "variable holding the token auto-merge merges with (a person or merge bot); empty: none",
                    /*optional=*/true),
            Secret(OPTION(github.merge_token))),
      Feeds(Bool("github.merge_as_agent", CONFIG_FIELD(github.merge_as_agent), false,
                 "without merge_token_env, let auto-merge merge as the agent account (off: it never does)"),
            Same(OPTION(github.merge_as_agent))),
      Feeds(Choice("github.pull_request_origin", CONFIG_FIELD(github.pull_request_origin), "link",
                   {"link", "source", "none"},
                   "what a Ticket's PR says of where it was asked for: the discussion's link (a chat: only its "
                   "platform), only the platform, or nothing; never a chat's words"),
            Same(OPTION(github.pull_request_origin))),
      Feeds(Bool("github.read.issues", CONFIG_FIELD(github.read.issues), true, "read new issues repo-wide"),
            Same(OPTION(github.source.read_issues))),
      Feeds(Bool("github.read.pulls", CONFIG_FIELD(github.read.pulls), true, "read new pull requests repo-wide"),
            Same(OPTION(github.source.read_pulls))),
      Feeds(Bool("github.read.comments", CONFIG_FIELD(github.read.comments), true,
                 "read every issue/PR and review comment"),
            Same(OPTION(github.source.read_comments))),
      Feeds(Bool("github.read.ci", CONFIG_FIELD(github.read.ci), true, "read default-branch CI results"),
            Same(OPTION(github.source.read_ci))),
      Bool("feishu.enabled", CONFIG_FIELD(feishu.enabled), false, "run the Feishu/Lark Source and Channel"),
      Feeds(Checked("feishu.api_url", CONFIG_FIELD(feishu.api_url), "https://open.feishu.cn", IsHttpUrl,
                    "an http:// or https:// URL", "Open Platform base URL (Lark: https://open.larksuite.com)"),
            Same(OPTION(feishu.client.api_url))),
      Feeds(EnvName("feishu.app_id_env", CONFIG_FIELD(feishu.app_id_env), "FEISHU_APP_ID",
                    "variable holding the app id"),
            Secret(OPTION(feishu.client.app_id))),
      Feeds(EnvName("feishu.app_secret_env", CONFIG_FIELD(feishu.app_secret_env), "FEISHU_APP_SECRET",
                    "variable holding the app secret"),
            Secret(OPTION(feishu.client.app_secret))),
      Feeds(EnvName("feishu.encrypt_key_env", CONFIG_FIELD(feishu.encrypt_key_env), "FEISHU_ENCRYPT_KEY",
                    "variable holding the callbacks' Encrypt Key; callbacks are refused while it is unset"),
            Secret(OPTION(feishu.source.encrypt_key))),
      Feeds(EnvName("feishu.verification_token_env", CONFIG_FIELD(feishu.verification_token_env),
                    "FEISHU_VERIFICATION_TOKEN", "variable holding the callbacks' Verification Token"),
            Secret(OPTION(feishu.source.verification_token))),
      Choice("feishu.realtime", CONFIG_FIELD(feishu.realtime), "long_connection", {"long_connection", "callback"},
             "how realtime events arrive: a WebSocket the daemon opens, or POSTs to /hooks/feishu"),
      Feeds(Int("feishu.poll_interval_seconds", CONFIG_FIELD(feishu.poll_interval_seconds), 60, {10, 3600},
                "seconds between backfill and thread polling rounds"),
            Ms(OPTION(feishu.source.poll_interval_ms))),
      Feeds(Int("feishu.thread_reads_per_round", CONFIG_FIELD(feishu.thread_reads_per_round), 20, {1, 200},
                "topic threads re-read per polling round at most (open Tickets' first, then the longest due)"),
            Same(OPTION(feishu.source.thread_reads_per_round))),
      Pairs("feishu.chat_repos", CONFIG_FIELD(feishu.chat_repos), IsRepoName, "a repository, \"owner/name\"",
            "chat id: the repositories (owner/name, at most 5) a chat may ask about; a request naming none in a "
            "chat of several is asked which"),
      Feeds(Checked("llm.base_url", CONFIG_FIELD(llm.base_url), "https://api.deepseek.com", IsHttpUrl,
                    "an http:// or https:// URL", "OpenAI-compatible chat-completions API"),
            Same(OPTION(chat.base_url))),
      Feeds(EnvName("llm.api_key_env", CONFIG_FIELD(llm.api_key_env), "DEEPSEEK_API_KEY",
                    "variable holding the model API key"),
            Secret(OPTION(chat.api_key))),
      Feeds(Required("llm.assessment_model", CONFIG_FIELD(llm.assessment_model), "deepseek-chat",
                     "model that assesses messages (Evals)"),
            Same(OPTION(assessor.model))),
      String("llm.execution_model", CONFIG_FIELD(llm.execution_model), "",
             "model of worker sessions; empty: assessment_model"),
      Feeds(Int("llm.timeout_seconds", CONFIG_FIELD(llm.timeout_seconds), 60, {1, 3600},
                "one HTTP request to the model API"),
            Ms(OPTION(chat.timeout_ms))),
      Feeds(Int("llm.max_retries", CONFIG_FIELD(llm.max_retries), 3, {0, 10},
                "extra attempts after a 429, a 5xx or a connection failure"),
            Same(OPTION(chat.max_retries))),
      Feeds(Int("llm.max_retry_wait_seconds", CONFIG_FIELD(llm.max_retry_wait_seconds), 10, {1, 600},
                "longest single wait before a retry"),
            Ms(OPTION(chat.max_retry_wait_ms))),
      Feeds(Path(String("prompts.team_dir", CONFIG_FIELD(prompts.team_dir), "",
                        "directory of the team's prompt sections and skills; empty: built-in only")),
            Same(OPTION(assessor.team_dir)), Same(OPTION(execution.worker.team_dir))),
      Feeds(Int("execution.slots", CONFIG_FIELD(execution.slots), 3, {1, 64},
                "worker sessions at once (one more is reserved for people)"),
            Same(OPTION(execution.slots)), Same(OPTION(panel.slots_configured))),
      Feeds(Int("execution.ci_fix_attempts", CONFIG_FIELD(execution.ci_fix_attempts), 2, {0, 10},
                "failing CI on a Ticket's own PR: fix turns (one per push) before a person is asked"),
            Same(OPTION(engine.ci_fix_attempts))),
      Feeds(Choice("execution.executor", CONFIG_FIELD(execution.executor), "builtin",
                   {"builtin", "command", "claude-code", "codex", "gemini-cli", "qwen-code"},
                   "who does a Ticket's work: the agent loop, execution.command, or a coding CLI"),
            Same(OPTION(execution.executor))),
      Feeds(String("execution.command", CONFIG_FIELD(execution.command), "",
                   "the team's coding CLI, for executor command"),
            Same(OPTION(execution.command))),
      String("execution.git_remote", CONFIG_FIELD(execution.git_remote), "",
             "where code comes from and branches go ({repo}: each repository's owner/name); empty: GitHub's"),
      Feeds(String("execution.prepare", CONFIG_FIELD(execution.prepare), "",
                   "command that makes a Ticket's directory; empty: git worktree add"),
            Same(OPTION(execution.workspace.prepare))),
      Feeds(Int("execution.nice", CONFIG_FIELD(execution.nice), 10, {0, 19}, "niceness of every command a worker runs"),
            Same(OPTION(execution.runner.nice))),
      Choice("execution.cgroups", CONFIG_FIELD(execution.cgroups), "auto", {"auto", "off"},
             "a cgroup v2 per worker process tree where the host allows"),
      Feeds(Choice("execution.sandbox", CONFIG_FIELD(execution.sandbox), "on", {"on", "off"},
                   "worker commands in a bubblewrap sandbox; on refuses to start without one"),
            Same(OPTION(execution.sandbox))),
      Feeds(OnOff("execution.network", CONFIG_FIELD(execution.network), true,
                  "off: sandboxed commands get a network namespace of their own"),
            Same(OPTION(execution.runner.sandbox.network))),
      Feeds(EnvNameList("execution.env", CONFIG_FIELD(execution.env), {},
                        "names of daemon variables passed to worker commands on purpose"),
            Same(OPTION(execution.runner.sandbox.pass_env))),
      Feeds(StringList("execution.ui_paths", CONFIG_FIELD(execution.ui_paths),
                       {"web/**", "*.css", "*.scss", "*.html", "*.vue", "*.tsx", "*.jsx", "*.svelte"},
                       "path globs whose change makes a UI change (ready needs Before/After screenshots)"),
            Same(OPTION(execution.worker.ui_paths))),
      Feeds(Choice("execution.placement", CONFIG_FIELD(execution.placement), "local", {"local", "remote", "any"},
                   "where coding-CLI turns run: this host, the workers (workers.listen), or here first"),
            Same(OPTION(execution.placement))),
      CODING_CLI_KEYS("claude_code", claude_code),
      CODING_CLI_KEYS("codex", codex),
      CODING_CLI_KEYS("gemini_cli", gemini_cli),
      CODING_CLI_KEYS("qwen_code", qwen_code),
      Feeds(Checked("workers.listen", CONFIG_FIELD(workers.listen), "", IsEmptyOrListenAddress,
                    "empty or \"host:port\" with port 1..65535",
                    "address `superagent worker` processes connect to; empty: no workers"),
            Same(OPTION(execution.workers.listen))),
      Feeds(EnvName("workers.join_token_env", CONFIG_FIELD(workers.join_token_env), "",
                    "variable holding the join token workers prove once; empty: no worker may join",
                    /*optional=*/true),
            Secret(OPTION(execution.workers.join_token))),
      Feeds(Int("workers.lease_seconds", CONFIG_FIELD(workers.lease_seconds), 30, {5, 600},
                "a remote turn whose worker is silent this long is offered again"),
            Ms(OPTION(execution.pool.lease_ms))),
      Feeds(Int("workers.max_turns", CONFIG_FIELD(workers.max_turns), 16, {1, 256},
                "turns offered to workers at once, beyond execution.slots"),
            Same(OPTION(execution.remote_slots))),
      Feeds(Path(String("workers.tls_cert_file", CONFIG_FIELD(workers.tls_cert_file), "",
                        "the listener's PEM certificate (chain), for HTTPS; empty: plain HTTP")),
            Same(OPTION(execution.workers.tls_cert_file))),
      Feeds(Path(String("workers.tls_key_file", CONFIG_FIELD(workers.tls_key_file), "",
                        "the private key of workers.tls_cert_file (PEM)")),
            Same(OPTION(execution.workers.tls_key_file))),
      Feeds(Int("eval.timeout_seconds", CONFIG_FIELD(eval.timeout_seconds), 120, {1, 3600},
                "one assessment call, before it is abandoned and retried"),
            Ms(OPTION(engine.eval_timeout_ms))),
      Feeds(Int("eval.max_attempts", CONFIG_FIELD(eval.max_attempts), 3, {1, 20},
                "assessment attempts before a Trigger is parked as failed"),
            Same(OPTION(engine.eval_max_attempts))),
      Feeds(Int("quarantine.after", CONFIG_FIELD(quarantine.after), 5, {2, 100},
                "same failures in a row before an item is set aside"),
            Same(OPTION(engine.quarantine_after))),
  };
  return kKeys;
}

#undef CODING_CLI_KEYS
#undef OPTION
#undef CONFIG_FIELD

Config::Config() {
  for (const ConfigKey& k : ConfigKeys()) {
    switch (k.type) {
      case Type::kString:
      case Type::kEnvName: StringOf(k, *this) = std::get<std::string>(k.default_value); break;
      case Type::kInt: IntOf(k, *this) = std::get<int>(k.default_value); break;
      case Type::kBool:
      case Type::kOnOff: BoolOf(k, *this) = std::get<bool>(k.default_value); break;
      case Type::kEnvNameList:
      case Type::kStringList: ListOf(k, *this) = std::get<std::vector<std::string>>(k.default_value); break;
    }
  }
}

Config DefaultConfig() { return Config{}; }

bool IsEnvVarName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

bool LooksLikeSecret(std::string_view value) {
  // Prefixes of credentials people actually paste: GitHub (classic, OAuth, user-to-server,
  // server-to-server, refresh, fine-grained), OpenAI-style API keys (DeepSeek too), Slack,
  // GitLab, AWS access key ids, and whole Authorization headers.
  static constexpr std::string_view kPrefixes[] = {
      "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "xoxb-", "xoxp-", "glpat-", "AKIA", "Bearer ",
  };
  for (std::string_view p : kPrefixes) {
    if (StartsWith(value, p) && value.size() > p.size()) return true;
  }
  // Variable names are short words joined by '_'; a long run of mixed-case letters and digits
  // without one is a random token (e.g. a Feishu app secret).
  if (value.size() >= 24 && value.find('_') == std::string_view::npos) {
    bool lower = false, upper = false, digit = false;
    for (char c : value) {
      lower |= c >= 'a' && c <= 'z';
      upper |= c >= 'A' && c <= 'Z';
      digit |= c >= '0' && c <= '9';
    }
    if (digit && (lower || upper)) return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> SecretEnvNames(const Config& config) {
  Config c = config;  // the table's accessors take a Config they may write; this only reads
  std::vector<std::pair<std::string, std::string>> out;
  for (const ConfigKey& k : ConfigKeys()) {
    if (k.type != Type::kEnvName) continue;
    const std::string& name = StringOf(k, c);
    if (!name.empty()) out.emplace_back(std::string(k.name), name);
  }
  return out;
}

std::vector<std::string> ExecutionEnvWarnings(const Config& c) {
  std::vector<std::string> out;
  for (const std::string& name : c.execution.env)
    for (const auto& [key, secret] : SecretEnvNames(c))
      if (name == secret)
        out.push_back("execution.env passes " + name + " (the daemon's " + key +
                      ") to every worker command: a worker that reads strangers' text can be made to print or "
                      "send it; give the worker a credential of its own under another name instead");
  return out;
}

nlohmann::json ConfigToJson(const Config& config) {
  Config c = config;  // the table's accessors take a Config they may write; this only reads
  nlohmann::json out = nlohmann::json::object();
  for (const ConfigKey& k : ConfigKeys()) {
    // "a.b.c" -> out["a"]["b"]["c"]
    nlohmann::json* at = &out;
    std::string_view rest = k.name;
    for (std::size_t dot; (dot = rest.find('.')) != std::string_view::npos; rest.remove_prefix(dot + 1))
      at = &(*at)[std::string(rest.substr(0, dot))];
    nlohmann::json& value = (*at)[std::string(rest)];
    switch (k.type) {
      case Type::kString:
      case Type::kEnvName: value = StringOf(k, c); break;
      case Type::kInt: value = IntOf(k, c); break;
      case Type::kBool: value = BoolOf(k, c); break;
      case Type::kOnOff: value = BoolOf(k, c) ? "on" : "off"; break;
      case Type::kEnvNameList:
      case Type::kStringList:
        if (!k.pairs) {
          value = ListOf(k, c);
          break;
        }
        value = nlohmann::json::object();
        for (const std::string& pair : ListOf(k, c)) {
          const std::size_t space = pair.find(' ');
          value[pair.substr(0, space)].push_back(space == std::string::npos ? "" : pair.substr(space + 1));
        }
        break;
    }
  }
  return out;
}

}  // namespace superagent
