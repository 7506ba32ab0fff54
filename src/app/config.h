// Config: how this daemon is wired to its surroundings (where it keeps data, where it listens,
// which repository and model endpoint it talks to). Who and what is admitted lives in
// policy.yaml, not here: the config is set up once by whoever deploys; the policy is edited by
// the team and versioned.
//
// Loaded from YAML (config/superagent.example.yaml documents every key). Every problem points
// at file:line:column so `superagent check` can print all of them at once.
//
// There are no keys holding secret values. Secrets (GitHub token, model API key) are read from
// environment variables whose NAMES the config holds (*_env keys), so a config file can be
// shown, committed and logged without leaking anything.
//
// Only app/ reads the config (and the environment): the modules take their own Options, which
// app/config_options.h (ModuleOptionsFor) and app/wiring.h make from a Config with the secrets
// already resolved.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/policy.h"  // Problem

namespace superagent::app {
struct ModuleOptions;  // app/config_options.h: what the rows' destinations fill
}  // namespace superagent::app

namespace superagent {

// Each key's default, bounds, allowed values, one-line doc and the module option it feeds are its
// row of the key table (ConfigKeys(), config.cpp), the one place they are written: the members
// below are value-initialized and the constructor applies every row's default.
struct Config {
  // Every key at its row's default; source_file empty. The same as DefaultConfig().
  Config();

  // Where the SQLite database, worktrees and transcripts live. Created by `serve` if missing.
  std::string data_dir;
  // policy.yaml to load; empty means the embedded DefaultPolicy() (observe mode).
  std::string policy_file;

  struct Panel {
    std::string listen;  // "host:port"; see SplitHostPort (host_port.h)
    // NAME of the variable holding the panel password. Required when `listen` is not a loopback
    // address; when set (and the variable is), every request must carry it, also on loopback.
    std::string token_env;
    // The panel's address as people reach it ("https://agent.example.com"); empty: not said.
    // Check runs link a Ticket there (issue 25).
    std::string public_url;
  } panel;

  struct Log {
    std::string level;  // minimum level written to stderr
  } log;

  struct GitHub {
    std::string api_url;  // the REST API's base URL (GHES: https://HOST/api/v3)
    std::string repo;     // "owner/name": the first of `repos` once loaded; empty disables the GitHub Source
    // Every repository served (issue 37), as configured: github.repos, or github.repo as a list of
    // one. Once loaded the list is complete and `repo` is its first, the home of Tickets asked
    // for in a chat and of keys written before issue 37.
    std::vector<std::string> repos;
    // github.repos: installation (issue 37): `repos` and `repo` are empty, and the GitHub App's
    // installation (app_installation_id) lists the repositories served, kept current at run time.
    bool installation{};
    // The GitHub Source is on: a repository is named, or an installation lists them.
    bool On() const { return !repo.empty() || installation; }
    // How the daemon signs in (issue 25): "token" — a bot user's personal access token from
    // token_env; "app" — a GitHub App: its id, its installation, and its private key (PEM) from
    // app_private_key_env.
    std::string auth;
    std::string token_env;            // NAME of the variable holding the token
    std::string app_id;               // the App's numeric id (auth: app)
    std::string app_installation_id;  // its installation on `repo`; empty: looked up
    std::string app_private_key_env;  // NAME of the variable holding the PEM
    // NAME of the variable holding the webhook secret; webhooks are refused (401) while it is unset.
    std::string webhook_secret_env;
    std::string bot_login;        // the agent's login; empty: asked from GitHub (GET /user)
    int poll_interval_seconds{};  // GitHub's X-Poll-Interval may stretch it
    int quiet_read_interval_seconds{};  // a quiet repository's rounds, at the longest
    int request_budget_per_hour{};      // the pollers' counted requests an hour, at most
    // Longest comment the agent posts (GitHub refuses bodies over 65 536); a longer message is
    // refused when it is enqueued, with the reason, never cut silently.
    int message_max_chars{};
    // Auto-merge's account (SPEC §6: by default never merge as the agent): NAME of the variable
    // holding a person's or merge bot's token; empty: none, so auto-merge refuses unless
    // merge_as_agent says the agent's own token may merge.
    std::string merge_token_env;
    bool merge_as_agent{};
    // What a Ticket's PR body says of where the work was asked for: link | source | none.
    std::string pull_request_origin;
    // Repo-wide read scopes (SPEC §3.3). With a token, mentions, assignments and followed
    // discussions are read through notifications whatever these say; an App has no notifications,
    // so auth: app needs issues and comments on.
    struct Read {
      bool issues{};    // new issues
      bool pulls{};     // new pull requests
      bool comments{};  // every issue/PR comment and review comment
      bool ci{};        // default-branch CI results
    } read;
  } github;

  // Feishu/Lark Source and Channel (SPEC §3.4). Which chats are read is the policy's business
  // (sources.feishu.scopes "chat:<id>" rows); this says how to reach the platform.
  struct Feishu {
    bool enabled{};          // off: no Feishu Source, Channel or /hooks/feishu
    std::string api_url;     // Lark: https://open.larksuite.com
    std::string app_id_env;  // NAME of the variable holding the app id (cli_…)
    std::string app_secret_env;
    // NAMEs of the callback's Encrypt Key and Verification Token; callbacks are refused (401)
    // while the encrypt key is unset.
    std::string encrypt_key_env;
    std::string verification_token_env;
    std::string realtime;          // a WebSocket the daemon opens, or callbacks
    int poll_interval_seconds{};   // backfill and thread polling rounds
    int thread_reads_per_round{};  // topic threads re-read per round at most
    // Issue 37: the repositories each chat may ask about, "<chat id> <owner/name>" per pair (the
    // config writes a mapping, chat id to one repository or a list), in the order written.
    std::vector<std::string> chat_repos;
  } feishu;

  struct Llm {
    std::string base_url;          // OpenAI-compatible endpoint
    std::string api_key_env;       // NAME of the variable holding the key
    std::string assessment_model;  // the model that assesses messages (Evals)
    std::string execution_model;   // empty: the worker uses assessment_model
    int timeout_seconds{};         // one HTTP request to the model API
    int max_retries{};             // extra attempts after a 429, a 5xx or a connection failure
    int max_retry_wait_seconds{};  // longest single wait before a retry; a longer Retry-After fails the call

    // The model worker sessions use, after the fallback.
    const std::string& EffectiveExecutionModel() const {
      return execution_model.empty() ? assessment_model : execution_model;
    }
  } llm;

  // Team prompt files (SPEC §7 level 4): <team_dir>/sections/<name>.md and
  // <team_dir>/skills/<name>.md, re-read on every model call so edits need no restart.
  struct Prompts {
    std::string team_dir;  // empty: built-in sections only
  } prompts;

  // One coding CLI's block (execution.claude_code, .codex, .gemini_cli, .qwen_code): kept side by
  // side, so a team switches its executor by editing execution.executor alone.
  struct CodingCli {
    std::string binary;       // path or name in PATH; empty: the CLI's usual name (claude, codex, gemini, qwen)
    std::string model;        // empty: the CLI's default model
    std::string api_key_env;  // NAME of the variable holding its model key (kept by the model gateway)
    std::string base_url;     // the model API's base URL the gateway forwards to; empty: the vendor's
    // US dollars per million tokens, for the budget's cost_usd; empty: calls add no cost.
    std::string usd_per_million_input;
    std::string usd_per_million_output;
    std::vector<std::string> args;              // extra arguments
    std::vector<std::string> allowed_commands;  // shell command prefixes it may run; empty: any
    int turn_seconds{};  // one turn's wall time before its process tree is killed
  };

  struct Execution {
    int slots{};            // concurrent worker sessions; one more slot is always reserved for people
    int ci_fix_attempts{};  // pushes whose failing checks a Ticket's worker fixes before a person is asked
    // "builtin" (agent loop) | "command" (execution.command) | a coding CLI: "claude-code",
    // "codex", "gemini-cli", "qwen-code" (its block below)
    std::string executor;
    std::string command;     // the team's coding CLI, run with /bin/sh -c; required for "command"
    std::string git_remote;  // where code comes from and branches go; empty: the GitHub repo's clone URL
    std::string prepare;     // workspace command template ({repo} {remote} {branch} {dir} {base}); empty: git worktree
    int nice{};           // niceness of every command a worker runs
    std::string cgroups;  // "auto": a cgroup v2 per process tree where the host allows; "off"
    // Worker commands in a bubblewrap sandbox (issue 19): "on" = always (the daemon refuses to start
    // where the host cannot), "off" = never (said loudly at start).
    std::string sandbox;
    bool network{};  // false: worker commands get a network namespace of their own (no network)
    // NAMES of daemon environment variables passed to worker commands on purpose (e.g. a coding
    // CLI's own model key); nothing else of the daemon's environment reaches a worker.
    std::vector<std::string> env;
    // A branch changing a path that matches one of these globs is a UI change: its ready report
    // needs Before and After screenshots (SPEC §6). Empty: no path is a UI change.
    std::vector<std::string> ui_paths;
    // Where a coding CLI's turns run (issue 36): "local" | "remote" (workers) | "any" (here first).
    std::string placement;
    CodingCli claude_code, codex, gemini_cli, qwen_code;
    // The block of the coding CLI execution.executor names; nullptr for builtin and command.
    const CodingCli* ChosenCli() const {
      if (executor == "claude-code") return &claude_code;
      if (executor == "codex") return &codex;
      if (executor == "gemini-cli") return &gemini_cli;
      if (executor == "qwen-code") return &qwen_code;
      return nullptr;
    }
    CodingCli* ChosenCli() { return const_cast<CodingCli*>(std::as_const(*this).ChosenCli()); }
  } execution;

  // The worker listener (issue 36): where `superagent worker` processes on other machines connect.
  struct Workers {
    std::string listen;          // "host:port"; empty: no listener (execution.placement must be local)
    std::string join_token_env;  // NAME of the variable holding the join token
    int lease_seconds{};         // a lease not renewed for this long ends; its turn is offered again
    int max_turns{};             // turns offered to workers at once
    std::string tls_cert_file;   // HTTPS: PEM certificate (chain); with tls_key_file
    std::string tls_key_file;    // its private key (PEM); both empty: plain HTTP
  } workers;

  struct Eval {
    int timeout_seconds{};  // one assessment call, before it is retried
    int max_attempts{};     // assessment attempts before the Trigger is parked as failed
  } eval;

  struct Quarantine {
    // An Effect, a Thread's Evals or a Ticket's turns failing the same way this many times in a
    // row, or in flight during this many abnormal exits in a row, are set aside.
    int after{};
  } quarantine;

  // The file this config was read from; empty for DefaultConfig(). Not a config key.
  std::string source_file;
};

// One config key, as Redis's config.c has them: its dotted name, the Config member it sets, its
// default, how its value is read, checked and shown, a one-line doc, and the module options it
// feeds. The table of them drives Config's constructor, ParseConfig, ConfigToJson, SecretEnvNames
// and ModuleOptionsFor (app/config_options.h), and tests hold config/superagent.example.yaml to it.
struct ConfigKey {
  enum class Type {
    kString,       // a string; null (`key:` alone) reads as ""
    kEnvName,      // the NAME of an environment variable; a pasted secret is refused, never echoed
    kInt,          // an integer within [min, max]
    kBool,         // true | false (YAML 1.2 spellings only: "yes" is refused as ambiguous)
    kOnOff,        // on | off, shown so; true | false too (YAML reads a bare on/off as a boolean)
    kEnvNameList,  // a list of environment variable names
    kStringList,   // a list of strings (null reads as empty)
  };
  // The member the key sets, by type: a string (kString, kEnvName), an int, a bool (kBool,
  // kOnOff) or a list of names.
  using Field = std::variant<std::string& (*)(Config&), int& (*)(Config&), bool& (*)(Config&),
                             std::vector<std::string>& (*)(Config&)>;
  // A value of the key, by type as Field: the default a fresh Config holds.
  using Value = std::variant<std::string, int, bool, std::vector<std::string>>;

  // How the key's value becomes a module option's.
  enum class Convert {
    kSame,          // copied as it is (an int widened to the option's integer type)
    kMilliseconds,  // kInt seconds -> milliseconds
    kSecret,        // kEnvName: the variable's NAME -> the secret's value (ResolveSecret); "" when unset
    kDecimal,       // kString holding a decimal number (a price) -> double; "" -> 0
    kInteger,       // kString holding digits (an id) -> integer; "" -> 0
  };
  // The module option a key feeds: a member of app::ModuleOptions, by its type.
  using Target = std::variant<std::string& (*)(app::ModuleOptions&), int& (*)(app::ModuleOptions&),
                              bool& (*)(app::ModuleOptions&), std::vector<std::string>& (*)(app::ModuleOptions&),
                              long& (*)(app::ModuleOptions&), long long& (*)(app::ModuleOptions&),
                              double& (*)(app::ModuleOptions&)>;
  struct Destination {
    Target to;
    Convert convert = Convert::kSame;
  };

  std::string_view name;  // dotted path, e.g. "github.poll_interval_seconds"
  Type type = Type::kString;
  Field field;
  Value default_value;  // of the alternative `type` reads into: a string, an int, a bool or a list
  int min = 0, max = 0;                   // kInt: the bounds, inclusive
  std::vector<std::string_view> choices;  // kString: the allowed values; empty = any
  // kString: a further rule, and what a value must be to pass it ("an http:// or https:// URL").
  bool (*valid)(std::string_view value) = nullptr;
  std::string_view must;
  bool required = false;  // kString: must not be empty; kEnvName: false allows "" (none)
  bool path = false;      // kString: a relative path is resolved against the config file's directory
  // kStringList: written as a mapping, each key to one value or a list of them, held as "key value"
  // entries (feishu.chat_repos). `valid` checks each value, `must` says what one must be.
  bool pairs = false;
  std::string_view doc;   // one line; config/superagent.example.yaml says more
  // The module options the value goes to as it is (or converted); empty for a key that wiring
  // reads with others or with the host (data_dir, github.auth, execution.git_remote, ...).
  std::vector<Destination> destinations;
};

// Every config key, in the order `check`'s "known keys" lists them.
const std::vector<ConfigKey>& ConfigKeys();

// The embedded defaults (every row's default; the same as `Config{}`), so `superagent serve` runs
// without --config. Relative paths in it are relative to the current working directory.
Config DefaultConfig();

// Parses and validates config YAML. Keys that are absent keep their defaults. On success returns
// the Config and leaves *problems untouched; otherwise returns nullopt and appends *every*
// problem found (unknown keys, wrong types, invalid values), each with `file` and a 1-based
// line and column. `problems` may be null when only success matters.
//
// Relative data_dir, policy_file and prompts.team_dir (the table's `path` keys; including the
// default data_dir when the key is absent) are resolved against the directory of `file`, so a config means the same thing
// whatever directory the daemon is started from (systemd units rarely set one). An empty
// policy_file or team_dir stays empty.
std::optional<Config> ParseConfig(std::string_view yaml, const std::string& file, std::vector<Problem>* problems);

// Reads `path` and parses it. An unreadable file is one Problem with line 0.
std::optional<Config> LoadConfigFile(const std::string& path, std::vector<Problem>* problems);

// The value of secret `env_name` (app/secrets.h, which defines it): what LoadSecrets read at
// start when it read that name, else read now from $CREDENTIALS_DIRECTORY/<env_name> or the
// environment. Empty when it is unset, unusable or the name is empty. Never log the result.
std::string ResolveSecret(const std::string& env_name);

// The secrets the config names: {key, variable name} for every non-empty *_env key (GitHub
// token and webhook secret, Feishu credentials, the model key, the panel password). None of
// them may reach a worker unless execution.env lists it.
std::vector<std::pair<std::string, std::string>> SecretEnvNames(const Config& config);

// Why listing each of execution.env's secret variables is dangerous, one line each (for
// `check` and the start-up log); empty when it names none.
std::vector<std::string> ExecutionEnvWarnings(const Config& config);

// Every key, safe to show in logs, the panel and `check`: it holds only variable NAMES.
nlohmann::json ConfigToJson(const Config& config);

// True when `name` can be an environment variable name: [A-Za-z_][A-Za-z0-9_]*.
bool IsEnvVarName(std::string_view name);

// True when `value` looks like a credential (a GitHub token, an "sk-" API key, ...) rather
// than the name of a variable that holds one.
bool LooksLikeSecret(std::string_view value);

}  // namespace superagent
