#include "app/doctor.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/secrets.h"
#include "app/wiring.h"
#include "superagent/exec.h"
#include "superagent/feishu.h"
#include "superagent/gate.h"
#include "superagent/process.h"
#include "superagent/sandbox.h"
#include "superagent/text.h"
#include "superagent/views.h"
#include "superagent/workspace.h"

extern char** environ;

namespace superagent::app {

using nlohmann::json;
using R = DoctorCheck::Result;

namespace {

constexpr int kMinSqlite = 3'035'000;  // RETURNING, STRICT-era JSON functions, WAL improvements

// The words of a shell command line before its first operator, quotes removed; nullopt when one
// of them holds an expansion ($, `, a glob) whose value only the shell knows.
std::optional<std::vector<std::string>> LeadingWords(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\'' || c == '"') {
      const std::size_t end = line.find(c, i + 1);
      if (end == std::string::npos) return std::nullopt;
      const std::string quoted = line.substr(i + 1, end - i - 1);
      if (c == '"' && quoted.find_first_of("$`\\") != std::string::npos) return std::nullopt;
      word += quoted;
      in_word = true;
      i = end;
    } else if (c == '$' || c == '`' || c == '\\' || c == '*' || c == '?' || c == '[' || (c == '~' && !in_word)) {
      return std::nullopt;
    } else if (c == ';' || c == '|' || c == '&' || c == '<' || c == '>' || c == '(' || c == ')' || c == '\n' ||
               (c == '#' && !in_word)) {
      break;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

// NAME=value before a command (an assignment, not the program).
bool Assignment(const std::string& w) {
  const std::size_t eq = w.find('=');
  return eq != std::string::npos && eq > 0 && IsEnvVarName(w.substr(0, eq));
}

// The first executable `name` in the colon-separated `path_env`; "" when none.
std::string InPath(const std::string& name, const std::string& path_env) {
  for (std::size_t start = 0; start <= path_env.size();) {
    std::size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    const std::string dir = path_env.substr(start, end - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// What to do about a file the worker cannot see.
std::string MoveItHint(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return "install it where the sandbox shows the system (sudo install -m 0755 " + path + " /usr/local/bin/" + name +
         ", or below /opt), or commit it to the repository and run it by its path there (./tools/" + name +
         "); execution.sandbox: off would show it, and the daemon's data and secrets with it";
}

class Doctor {
 public:
  Doctor(const Config& config, HttpClient& http) : config_(config), http_(http) {}

  std::vector<DoctorCheck> Run() {
    Policy();
    People();
    DataDir();
    Secrets();  // issue 33: where each secret comes from
    Sqlite();
    Database();
    GitHub();
    Feishu();
    Model();
    Git();
    Sandbox();
    CommandProgram();
    CodingCli();
    return std::move(checks_);
  }

 private:
  void Add(std::string name, R r, std::string detail, std::string fix = "") {
    checks_.push_back({std::move(name), r, std::move(detail), std::move(fix)});
  }

  HttpResponse Get(const std::string& url, const std::vector<std::pair<std::string, std::string>>& headers) {
    HttpRequest req;
    req.url = url;
    req.headers = headers;
    req.timeout_ms = 15'000;
    req.connect_timeout_ms = 5'000;
    return http_.Send(req);
  }

  static std::string Answer(const HttpResponse& r) {
    if (!r.error.empty()) return "no answer: " + r.error;
    std::string msg;
    json j = json::parse(r.body, nullptr, false);
    if (j.is_object() && j.contains("message") && j["message"].is_string()) msg = j["message"];
    else if (j.is_object() && j.contains("error") && j["error"].is_object()) msg = j["error"].value("message", "");
    return "HTTP " + std::to_string(r.status) + (msg.empty() ? "" : ": " + text::Cut(msg, 200));
  }

  void Policy() {
    if (config_.policy_file.empty()) {
      Add("policy", R::kOk, "embedded default policy (observe mode)");
      policy_ = DefaultPolicy();
      return;
    }
    std::vector<Problem> problems;
    auto p = LoadPolicyFile(config_.policy_file, &problems);
    if (p) {
      Add("policy", R::kOk, config_.policy_file + ": valid, mode " + ModeName(p->mode));
      policy_ = *p;
      return;
    }
    std::string first = problems.empty() ? "" : problems.front().ToString();
    Add("policy", R::kFailed, std::to_string(problems.size()) + " problem(s), first: " + first,
        "run `superagent check --config " + config_.source_file + "` for every problem and fix them");
  }

  // Whether anyone may ask each Source that is on for work (issue 34). A daemon nobody may ask
  // anywhere hears only its panel: that fails; one deaf Source beside a working one is a warning
  // (a team may take requests in Feishu and only deliver on GitHub).
  void People() {
    const bool github = !config_.github.repo.empty();
    if (!github && !config_.feishu.enabled) {
      Add("policy.people", R::kSkipped, "no Source is on (github.repo is empty, feishu.enabled is false)");
      return;
    }
    if (!policy_) {
      Add("policy.people", R::kSkipped, "needs a valid policy (see the policy check)");
      return;
    }
    const std::vector<NobodyMayAsk> deaf = NobodyMayAskFor(config_, *policy_);
    if (deaf.empty()) {
      std::string who;
      for (const char* source : {"github", "feishu"}) {
        auto it = policy_->sources.find(source);
        if (it == policy_->sources.end() || (std::string(source) == "github" ? !github : !config_.feishu.enabled)) continue;
        const std::size_t n = it->second.people.size();
        who += (who.empty() ? "" : "; ") + std::string(source) + ": " +
               (n == 0 ? std::string("anyone in a row set to others_addressed: explicit")
                       : std::to_string(n) + (n == 1 ? " person" : " people") + " on sources." + source + ".people");
      }
      Add("policy.people", R::kOk, "may ask for work — " + who);
      return;
    }
    std::string what, fix;
    for (const NobodyMayAsk& n : deaf) {
      what += (what.empty() ? "" : " ") + n.what;
      fix += (fix.empty() ? "" : " ") + n.fix;
    }
    const std::size_t on = (github ? 1 : 0) + (config_.feishu.enabled ? 1 : 0);
    Add("policy.people", deaf.size() == on ? R::kFailed : R::kWarning, what, fix);
  }

  // With execution.executor: command, whether a worker can run execution.command (issue 34).
  void CommandProgram() {
    if (config_.execution.executor != "command") return;
    const char* path = std::getenv("PATH");
    const auto problem = FindCommandProgramProblem(config_, path != nullptr ? path : "");
    if (config_.execution.sandbox == "off")
      Add("execution.command", R::kSkipped, "the sandbox is off: the command sees what the service user sees");
    else if (!problem)
      Add("execution.command", R::kOk, "the worker's sandbox shows what it runs: " + text::Cut(config_.execution.command, 120));
    else
      Add("execution.command", R::kFailed, problem->what, problem->fix);
  }

  void DataDir() {
    namespace fs = std::filesystem;
    fs::path dir = config_.data_dir;
    std::error_code ec;
    fs::path probe_dir = dir;
    // serve creates data_dir; then its nearest existing parent must be writable.
    while (!probe_dir.empty() && !fs::exists(probe_dir, ec)) probe_dir = probe_dir.parent_path();
    if (probe_dir.empty()) probe_dir = ".";
    if (!fs::is_directory(probe_dir, ec)) {
      Add("data_dir", R::kFailed, probe_dir.string() + " exists and is not a directory",
          "point data_dir at a directory (under systemd: /var/lib/superagent)");
      return;
    }
    if (::access(probe_dir.c_str(), W_OK | X_OK) != 0) {
      Add("data_dir", R::kFailed, probe_dir.string() + " is not writable by this user (uid " + std::to_string(::getuid()) + ")",
          "run doctor as the service user (sudo -u superagent superagent doctor ...) or chown the directory; under "
          "systemd use StateDirectory= and data_dir: /var/lib/superagent");
      return;
    }
    const bool exists = probe_dir == dir;
    Add("data_dir", R::kOk, dir.string() + (exists ? " is writable" : " will be created (" + probe_dir.string() + " is writable)"));
  }

  // Where each *_env secret is read from (a credential file, the environment, nowhere), never
  // its value; an unusable credential file fails, naming it (issue 33).
  void Secrets() {
    std::string where, unset, failed;
    for (const auto& [key, name] : SecretEnvNames(config_)) {
      auto v = ReadSecret(name);
      if (!v.ok()) failed += (failed.empty() ? "" : "; ") + v.status().message();
      else if (v->origin.empty()) unset += (unset.empty() ? "" : ", ") + name;
      else where += (where.empty() ? "" : ", ") + name + " from " + DescribeOrigin(v->origin);
    }
    if (!unset.empty()) where += (where.empty() ? "" : "; ") + std::string("unset: ") + unset;
    if (!failed.empty())
      Add("secrets", R::kFailed, failed,
          "fix or remove the credential file (one secret per file, UTF-8, no more than 64 KiB), or unset "
          "LoadCredential= for it to read the environment");
    else if (!where.empty())
      Add("secrets", R::kOk, where);
  }

  void Sqlite() {
    const int v = sqlite3_libversion_number();
    if (v < kMinSqlite) {
      Add("sqlite", R::kFailed, std::string("SQLite ") + sqlite3_libversion() + " is too old (needs 3.35 or newer)",
          "install a newer libsqlite3 (Debian 12 ships 3.40)");
      return;
    }
    Add("sqlite", R::kOk, std::string("SQLite ") + sqlite3_libversion());
  }

  // The whole quick_check, read-only: it runs beside a serving daemon.
  void Database() {
    const std::string db_path = (std::filesystem::path(config_.data_dir) / "superagent.db").string();
    if (!std::filesystem::exists(db_path)) {
      Add("database", R::kSkipped, db_path + " does not exist yet (serve creates it)");
      return;
    }
    auto views = Views::Open(db_path);
    Result<bool> sound = views.ok() ? (*views)->QuickCheck(std::chrono::milliseconds(0)) : Result<bool>(views.status());
    if (!sound.ok()) {
      Add("database", R::kFailed, db_path + ": " + sound.status().message(),
          "stop the daemon, keep a copy of the file, then restore a backup or recover it (sqlite3 " + db_path +
              " .recover > dump.sql)");
      return;
    }
    Add("database", R::kOk, db_path + ": quick_check ok");
    // The id in every idempotency key this install sends (issue 23): two deployments of one app
    // must show two different ids; a copied database shares its id with the original.
    auto install = (*views)->InstallId();
    if (install.ok()) Add("install_id", R::kOk, *install);
    else Add("install_id", R::kSkipped, install.status().message());
  }

  void GitHub() {
    const auto& g = config_.github;
    if (g.repo.empty()) {
      for (const char* n : {"github.token", "github.notifications", "github.repo", "github.webhook_secret"})
        Add(n, R::kSkipped, "github.repo is empty: the GitHub Source is disabled");
      return;
    }
    const std::string token = g.auth == "app" ? AppGitHub() : ResolveSecret(g.token_env);
    if (g.auth == "app") {
      // AppGitHub said what it found; the checks below need the installation token it got.
      if (!token.empty()) {
        HttpResponse r = Get(g.api_url + "/repos/" + g.repo,
                             {{"Authorization", "Bearer " + token}, {"Accept", "application/vnd.github+json"},
                              {"X-GitHub-Api-Version", "2022-11-28"}});
        if (r.ok()) {
          Add("github.repo", R::kOk, g.repo + " readable with the installation token");
          BranchProtection(token, r, true);
        } else {
          Add("github.repo", R::kFailed, "GET /repos/" + g.repo + ": " + Answer(r),
              "install the App on " + g.repo + " (the App's page → Install App → choose the repository)");
        }
      }
    } else if (token.empty()) {
      Add("github.token", R::kFailed, "environment variable " + g.token_env + " (github.token_env) is not set",
          "put " + g.token_env + "=<classic token with repo and notifications scopes> in the service's "
          "EnvironmentFile (/etc/superagent/secrets.env)");
      Add("github.notifications", R::kSkipped, "needs the token");
      Add("github.repo", R::kSkipped, "needs the token");
    } else {
      const std::vector<std::pair<std::string, std::string>> auth = {
          {"Authorization", "Bearer " + token}, {"Accept", "application/vnd.github+json"},
          {"X-GitHub-Api-Version", "2022-11-28"}};
      HttpResponse user = Get(g.api_url + "/user", auth);
      std::string login;
      if (user.ok()) {
        json j = json::parse(user.body, nullptr, false);
        if (j.is_object() && j.contains("login") && j["login"].is_string()) login = j["login"];
      }
      if (login.empty()) {
        Add("github.token", R::kFailed, "GET /user: " + Answer(user),
            user.status == 401 ? "the token in " + g.token_env + " is wrong or expired: create a new classic token"
                               : "check github.api_url (" + g.api_url + ") and the network");
        Add("github.notifications", R::kSkipped, "needs an accepted token");
        Add("github.repo", R::kSkipped, "needs an accepted token");
      } else {
        std::string detail = "accepted; the agent acts as " + login;
        if (!g.bot_login.empty() && g.bot_login != login) {
          Add("github.token", R::kFailed, detail + ", but github.bot_login is " + g.bot_login,
              "set github.bot_login to " + login + " (or leave it empty to ask GitHub), or use " + g.bot_login + "'s token");
        } else {
          std::string scopes = user.Header("x-oauth-scopes");
          Add("github.token", R::kOk, detail + (scopes.empty() ? "" : " (scopes: " + scopes + ")"));
        }
        HttpResponse n = Get(g.api_url + "/notifications?per_page=1", auth);
        if (n.ok()) Add("github.notifications", R::kOk, "notifications readable");
        else
          Add("github.notifications", R::kFailed, "GET /notifications: " + Answer(n),
              "mentions are read through notifications, which fine-grained tokens cannot read: use a classic token "
              "with the notifications (and repo) scope");
        HttpResponse r = Get(g.api_url + "/repos/" + g.repo, auth);
        if (r.ok()) {
          Add("github.repo", R::kOk, g.repo + " readable");
          BranchProtection(token, r, false);
        } else
          Add("github.repo", R::kFailed, "GET /repos/" + g.repo + ": " + Answer(r),
              r.status == 404 ? "check github.repo (owner/name) and that " + login + " can see the repository"
                              : "check the token's repo scope");
      }
    }
    if (ResolveSecret(g.webhook_secret_env).empty())
      Add("github.webhook_secret", R::kSkipped,
          g.webhook_secret_env + " is not set: webhooks are refused (401) and the agent relies on polling",
          "to receive webhooks, set " + g.webhook_secret_env + " to the secret entered in the repository's webhook settings");
    else
      Add("github.webhook_secret", R::kOk, g.webhook_secret_env + " is set: signed webhooks at /hooks/github are accepted");
  }

  // Seed 004: what makes approvals mean something is GitHub's own rule on the default branch —
  // reviews required and stale approvals dismissed on a new push — not the agent's good
  // behaviour. A warning with the fix; a failure when a rule lets the daemon auto-merge, because
  // then nothing but the daemon's own guard stands between a model's change and the branch (and
  // the merge account's token could merge anything). A token that may not read the protection
  // (403, or an App without Administration: read) is said to be that, never "unprotected".
  void BranchProtection(const std::string& token, const HttpResponse& repo, bool app) {
    const auto& g = config_.github;
    const std::string name = "github.branch_protection";
    json info = json::parse(repo.body, nullptr, false);
    const std::string branch = info.is_object() && info.contains("default_branch") && info["default_branch"].is_string()
                                   ? info["default_branch"].get<std::string>()
                                   : "";
    if (branch.empty()) {
      Add(name, R::kSkipped, "GET /repos/" + g.repo + " names no default branch");
      return;
    }
    const std::string shown = text::Cut(text::Repair(branch), 80);
    // Which policy rules let the daemon merge: they decide whether a gap is a warning or a failure.
    std::string auto_merging;
    if (!config_.policy_file.empty()) {
      std::vector<Problem> problems;
      if (auto p = LoadPolicyFile(config_.policy_file, &problems))
        for (const Rule& r : p->rules)
          if (r.enabled && r.auto_merge.enabled) auto_merging += (auto_merging.empty() ? "" : ", ") + r.name;
    }
    const std::string settings = "the repository's Settings → Branches → a rule for " + shown +
                                 ": \"Require a pull request before merging\" with at least one approval and "
                                 "\"Dismiss stale pull request approvals when new commits are pushed\"";
    auto gap = [&](const std::string& found) {
      if (auto_merging.empty()) {
        Add(name, R::kWarning, found + "; approvals are then the agent's rule, not GitHub's", settings);
      } else {
        Add(name, R::kFailed,
            found + ", and auto-merge is on (rule " + auto_merging +
                "): auto-merge is unsafe without it, since only the daemon's own guard would stand between a change "
                "and " + shown,
            settings + " — or turn auto_merge off in the policy until it is set");
      }
    };
    // Percent-encoded but for '/', which GitHub's branch paths keep.
    std::string path_branch;
    for (unsigned char c : branch) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
        path_branch += static_cast<char>(c);
      } else {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", c);
        path_branch += buf;
      }
    }
    HttpResponse r = Get(g.api_url + "/repos/" + g.repo + "/branches/" + path_branch + "/protection",
                         {{"Authorization", "Bearer " + token}, {"Accept", "application/vnd.github+json"},
                          {"X-GitHub-Api-Version", "2022-11-28"}});
    // GitHub says "Branch not protected" to a token that may read protection; a bare "Not
    // Found" may also be its answer to one that may not, which tells nothing.
    const json said = json::parse(r.body, nullptr, false);
    const bool unprotected = r.status == 404 && said.is_object() && said.contains("message") &&
                             said["message"] == json("Branch not protected");
    if (unprotected) {
      gap(shown + " is not protected (GitHub: " + Answer(r) + ")");
      return;
    }
    if (r.status == 401 || r.status == 403 || r.status == 404) {
      Add(name, R::kWarning,
          "cannot tell whether " + shown + " is protected: the token may not read its protection (" + Answer(r) + ")" +
              (auto_merging.empty() ? "" : "; auto-merge is on (rule " + auto_merging + "): check it by hand"),
          (app ? "grant the App \"Administration: read\" to have doctor check it, or check "
               : "a token with admin rights on the repository can check it; or check ") +
              settings);
      return;
    }
    json j = r.ok() ? json::parse(r.body, nullptr, false) : json();
    if (!j.is_object()) {
      Add(name, R::kWarning,
          "cannot tell whether " + shown + " is protected: GET …/branches/" + shown + "/protection: " +
              (r.ok() ? "the answer is not an object" : Answer(r)),
          "check " + settings);
      return;
    }
    auto reviews = j.find("required_pull_request_reviews");
    if (reviews == j.end() || !reviews->is_object()) {
      gap(shown + " is protected but requires no pull request review");
      return;
    }
    auto count = reviews->find("required_approving_review_count");
    if (count != reviews->end() && count->is_number_integer() && count->get<std::int64_t>() < 1) {
      gap(shown + " is protected but requires no approving review");
      return;
    }
    auto stale = reviews->find("dismiss_stale_reviews");
    if (stale == reviews->end() || *stale != json(true)) {
      gap(shown + " requires reviews but keeps approvals after a new push (dismiss_stale_reviews is " +
          (stale == reviews->end() ? std::string("missing")
                                    : text::Cut(stale->dump(-1, ' ', false, json::error_handler_t::replace), 40)) +
          ")");
      return;
    }
    Add(name, R::kOk, shown + " requires an approving review and dismisses stale approvals on a new push");
  }

  // github.auth: app — the key signs, GitHub knows the App, it is installed on the repository with
  // the permissions the daemon needs, and an installation token is issued. Returns that token
  // ("" when a check failed; the ones after it are skipped).
  std::string AppGitHub() {
    const auto& g = config_.github;
    Add("github.notifications", R::kSkipped,
        "a GitHub App has no notifications: mentions arrive by webhook and by reading the repository's "
        "issues and comments");
    const TimeMs now = SystemClock()->NowMs();
    auto options = GitHubAppOptionsFor(config_, now);
    if (!options.ok()) {
      Add("github.app", R::kFailed, options.status().message(),
          "put the App's .pem in the service's EnvironmentFile (/etc/superagent/secrets.env) as " +
              g.app_private_key_env + "=\"<the whole .pem, quoted over its lines>\", and github.app_id from the "
              "App's settings page (docs/007-operations.md, \"GitHub App\")");
      for (const char* n : {"github.installation", "github.token", "github.repo"}) Add(n, R::kSkipped, "needs the App's key");
      return "";
    }
    github::AppAuthOptions a = *options;
    auto facts = github::ReadApp(&http_, a, now);
    if (!facts.ok()) {
      Add("github.app", R::kFailed, facts.status().message(),
          "check github.app_id (" + g.app_id + ") and that " + g.app_private_key_env +
              " holds that App's current private key (the App's settings → Private keys)");
      for (const char* n : {"github.installation", "github.token", "github.repo"}) Add(n, R::kSkipped, "needs the App");
      return "";
    }
    const std::string login = github::AppBotLogin(facts->slug);
    if (!g.bot_login.empty() && g.bot_login != login)
      Add("github.app", R::kFailed, "the App is " + facts->slug + ", so the agent writes as " + login +
                                        ", but github.bot_login is " + g.bot_login,
          "leave github.bot_login empty with github.auth: app");
    else
      Add("github.app", R::kOk, "App " + facts->slug + " (" + text::Cut(text::Repair(facts->name), 80) +
                                    "); the agent writes as " + login + " and is mentioned as @" + facts->slug);
    auto inst = github::ReadInstallation(&http_, a, g.repo, now);
    if (!inst.ok()) {
      Add("github.installation", R::kFailed, inst.status().message(),
          "install the App on " + g.repo + ": the App's page → Install App → only select repositories → " + g.repo);
      for (const char* n : {"github.token", "github.repo"}) Add(n, R::kSkipped, "needs the installation");
      return "";
    }
    if (a.installation_id > 0 && a.installation_id != inst->id) {
      Add("github.installation", R::kFailed,
          "github.app_installation_id is " + std::to_string(a.installation_id) + " but the App's installation on " +
              g.repo + " is " + std::to_string(inst->id),
          "set github.app_installation_id to " + std::to_string(inst->id) + " or leave it empty");
      for (const char* n : {"github.token", "github.repo"}) Add(n, R::kSkipped, "needs the right installation");
      return "";
    }
    std::vector<std::string> missing = github::MissingAppPermissions(inst->permissions);
    std::string events;
    for (const char* e : {"issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment",
                          "check_run", "workflow_run"})
      if (std::find(inst->events.begin(), inst->events.end(), e) == inst->events.end())
        events += std::string(events.empty() ? "" : ", ") + e;
    std::string lacks;
    for (const std::string& m : missing) lacks += (lacks.empty() ? "" : ", ") + m;
    if (!missing.empty())
      Add("github.installation", R::kFailed,
          "installation " + std::to_string(inst->id) + " on " + g.repo + " lacks the permissions " + lacks,
          "the App's settings → Permissions & events: grant " + lacks +
              ", then accept the new permissions on the installation (Settings → Integrations → GitHub Apps)");
    else
      Add("github.installation", R::kOk,
          "installation " + std::to_string(inst->id) + " on " + g.repo + " has the permissions the daemon needs" +
              (events.empty() ? "" : "; not subscribed to " + events + " (polling still catches them, later)"));
    a.installation_id = inst->id;
    github::InstallationTokens tokens(&http_, SystemClock(), a);
    auto token = tokens.Token();
    if (!token.ok()) {
      Add("github.token", R::kFailed, token.status().message(),
          "check the installation is not suspended (Settings → Integrations → GitHub Apps)");
      Add("github.repo", R::kSkipped, "needs an installation token");
      return "";
    }
    Add("github.token", R::kOk, "installation token issued (valid an hour; the daemon renews it)");
    return *token;
  }

  // The Feishu app as the daemon will use it: credentials present and accepted (a tenant token),
  // the bot's identity, every configured chat's history readable, and the realtime path.
  void Feishu() {
    const auto& f = config_.feishu;
    if (!f.enabled) {
      Add("feishu", R::kSkipped, "no Feishu configured");
      return;
    }
    const std::string env_file = " in the service's EnvironmentFile (/etc/superagent/secrets.env)";
    feishu::ClientOptions co;
    co.api_url = f.api_url;
    co.app_id = ResolveSecret(f.app_id_env);
    co.app_secret = ResolveSecret(f.app_secret_env);
    std::string unset;
    if (co.app_id.empty()) unset = f.app_id_env + " (feishu.app_id_env)";
    if (co.app_secret.empty()) unset += (unset.empty() ? "" : " and ") + f.app_secret_env + " (feishu.app_secret_env)";
    if (!unset.empty()) {
      const bool both = co.app_id.empty() && co.app_secret.empty();
      Add("feishu.token", R::kFailed,
          std::string(both ? "environment variables " : "environment variable ") + unset + (both ? " are" : " is") +
              " not set",
          "put " + f.app_id_env + "=cli_… and " + f.app_secret_env +
              "=<App Secret> (the app's Credentials & Basic Info page)" + env_file);
      FeishuSkipAfterToken("needs the app credentials");
      return;
    }
    feishu::Client client(&http_, SystemClock(), co);
    auto token = client.TenantToken();
    if (!token.ok()) {
      Add("feishu.token", R::kFailed, token.status().message(),
          "check that " + f.app_id_env + " and " + f.app_secret_env +
              " hold the app id and App Secret of the app's Credentials & Basic Info page, and that feishu.api_url (" +
              f.api_url + ") is the app's platform (Feishu https://open.feishu.cn, Lark https://open.larksuite.com)");
      FeishuSkipAfterToken("needs a tenant token");
      return;
    }
    Add("feishu.token", R::kOk, "tenant access token obtained for app " + co.app_id);
    FeishuBot(client);
    FeishuChats(client);
    FeishuRealtime(client);
  }

  void FeishuSkipAfterToken(const std::string& why) {
    for (const char* n : {"feishu.bot", "feishu.chats", "feishu.realtime"}) Add(n, R::kSkipped, why);
  }

  void FeishuBot(feishu::Client& client) {
    const std::string fix = "enable the app's Bot capability (Features > Bot) and publish a version of the app";
    feishu::ApiResult r = client.Call("GET", "/open-apis/bot/v3/info");
    // bot/v3/info answers with `bot` at the top level, not under data.
    const json bot = r.body.is_object() && r.body.contains("bot") && r.body["bot"].is_object() ? r.body["bot"] : json();
    const std::string open_id = bot.is_object() ? bot.value("open_id", "") : "";
    if (!r.ok() || open_id.empty()) {
      Add("feishu.bot", R::kFailed, r.ok() ? "GET /open-apis/bot/v3/info: answer has no bot.open_id" : r.error, fix);
      return;
    }
    const std::string name = bot.value("app_name", "");
    const std::string who = (name.empty() ? "the bot" : name) + " (open_id " + open_id + ")";
    // activate_status 2 = enabled; other values mean the bot cannot be reached in chats.
    if (bot.contains("activate_status") && bot["activate_status"].is_number_integer() && bot["activate_status"] != 2) {
      Add("feishu.bot", R::kFailed,
          who + " is not activated (activate_status " + std::to_string(bot["activate_status"].get<int>()) + ")", fix);
      return;
    }
    Add("feishu.bot", R::kOk, who + "; mentions are recognised by this open_id");
  }

  // Each `chat:<id>` row of the policy: one cheap history read (page_size 1, from now), which
  // needs what backfill needs — the bot in the chat and the history scopes.
  void FeishuChats(feishu::Client& client) {
    std::vector<std::string> chats;
    if (!config_.policy_file.empty()) {
      std::vector<Problem> problems;
      auto p = LoadPolicyFile(config_.policy_file, &problems);
      if (!p) {
        Add("feishu.chats", R::kSkipped, "needs a valid policy (see the policy check)");
        return;
      }
      if (auto src = p->sources.find("feishu"); src != p->sources.end())
        for (const auto& [scope, row] : src->second.scopes)
          if (scope.rfind("chat:", 0) == 0 && scope.size() > 5) chats.push_back(scope.substr(5));
    }
    if (chats.empty()) {
      Add("feishu.chats", R::kSkipped,
          "the policy configures no chat:<chat_id> rows: no group is backfilled; group messages reach the agent "
          "only when they @-mention it",
          "to read a group, add \"chat:<chat_id>\" under sources.feishu.scopes in the policy");
      return;
    }
    const std::string now_s = std::to_string(SystemClock()->NowMs() / 1000);
    for (const std::string& chat : chats) {
      feishu::ApiResult r = client.Call("GET", "/open-apis/im/v1/messages?container_id_type=chat&container_id=" +
                                                   feishu::QueryValue(chat) + "&start_time=" + now_s + "&page_size=1");
      if (r.ok()) Add("feishu.chat:" + chat, R::kOk, "history readable");
      else
        Add("feishu.chat:" + chat, R::kFailed, r.error,
            "add the bot to chat " + chat +
                " and give the app the message history scope (im:message.history:readonly) and \"read all group "
                "messages\", then publish a version of the app; or check the chat id in the policy");
    }
  }

  void FeishuRealtime(feishu::Client& client) {
    const auto& f = config_.feishu;
    if (f.realtime == "callback") {
      if (ResolveSecret(f.encrypt_key_env).empty())
        Add("feishu.realtime", R::kFailed,
            f.encrypt_key_env + " (feishu.encrypt_key_env) is not set: every callback at /hooks/feishu is refused (401)",
            "set " + f.encrypt_key_env + " to the Encrypt Key of the app's Event Subscriptions page, or use "
            "feishu.realtime: long_connection (needs no public URL)");
      else
        Add("feishu.realtime", R::kOk,
            "callbacks at /hooks/feishu are decrypted and verified with " + f.encrypt_key_env);
      return;
    }
    // Asking for an endpoint opens nothing; the URL it returns (a ticket) is not printed.
    feishu::ApiResult r = client.WsEndpoint();
    const json& data = r.Data();
    if (r.ok() && data.contains("URL") && data["URL"].is_string() && !data["URL"].get<std::string>().empty()) {
      Add("feishu.realtime", R::kOk, "long connection endpoint answers");
      return;
    }
    std::string fix;
    switch (r.code) {
      case 514: fix = "Feishu refused the app credentials for the long connection: check the app id and secret"; break;
      case 403: fix = "the long connection is for self-built apps: check the app type, or use feishu.realtime: callback"; break;
      case 1000040350: fix = "Feishu allows 50 long connections per app: stop other clients of this app"; break;
      default:
        fix = r.http_status == 0 ? "check feishu.api_url (" + f.api_url + ") and outgoing HTTPS"
                                 : "Feishu answered with an error; try again, and check the app's event settings";
    }
    Add("feishu.realtime", R::kFailed, r.ok() ? "POST /callback/ws/endpoint: answer has no URL" : r.error, fix);
  }

  void Model() {
    const auto& l = config_.llm;
    const std::string key = ResolveSecret(l.api_key_env);
    if (key.empty()) {
      Add("model", R::kSkipped, l.api_key_env + " (llm.api_key_env) is not set: explicit requests are accepted "
                                "without a model; inferred work is never assessed",
          "to enable assessments, put " + l.api_key_env + "=<key> in the service's EnvironmentFile");
      return;
    }
    std::string base = l.base_url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    HttpResponse r = Get(base + "/models", {{"Authorization", "Bearer " + key}});
    json j = r.ok() ? json::parse(r.body, nullptr, false) : json();
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) {
      Add("model", R::kFailed, "GET " + base + "/models: " + (r.ok() ? "not an OpenAI-style model list" : Answer(r)),
          r.status == 401 ? "the key in " + l.api_key_env + " is refused: check it"
                          : "check llm.base_url (an OpenAI-compatible endpoint, e.g. https://api.deepseek.com)");
      return;
    }
    std::vector<std::string> ids;
    for (const json& m : j["data"])
      if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"]);
    auto has = [&](const std::string& id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
    std::string missing;
    for (const std::string& m : {l.assessment_model, l.EffectiveExecutionModel()})
      if (!has(m) && missing.find(m) == std::string::npos) missing += (missing.empty() ? "" : ", ") + m;
    if (!missing.empty()) {
      std::string available;
      for (const std::string& id : ids) available += (available.empty() ? "" : ", ") + id;
      Add("model", R::kFailed, "the endpoint does not offer " + missing + " (it offers: " + available + ")",
          "set llm.assessment_model / llm.execution_model to a model the endpoint lists");
      return;
    }
    Add("model", R::kOk, base + " answers; " + l.assessment_model + " is available");
  }

  void Git() {
    std::string out;
    if (RunCommand({"git", "--version"}, {}, &out) != 0) {
      Add("git", R::kFailed, "git is not runnable: " + (out.empty() ? std::string("not found") : out),
          "install git (apt-get install git): workers run it in their worktrees");
      Add("git.remote", R::kSkipped, "needs git");
      return;
    }
    Add("git", R::kOk, out);
    // The remote and the workspace exactly as the workers will have them (same options, same
    // token handling), prepared in a scratch directory that is removed afterwards.
    namespace fs = std::filesystem;
    const fs::path scratch = fs::temp_directory_path() / ("superagent-doctor-" + std::to_string(::getpid()));
    // With an App, git asks it for a token through the doctor's HttpClient, as serve's would.
    std::shared_ptr<github::InstallationTokens> app;
    if (auto a = GitHubAppOptionsFor(config_, SystemClock()->NowMs()); config_.github.auth == "app" &&
                                                                        !config_.github.repo.empty() && a.ok())
      app = std::make_shared<github::InstallationTokens>(&http_, SystemClock(), std::move(*a));
    exec::WorkspaceOptions wo = WorkspaceOptionsFor(config_, scratch.string(), app);
    if (wo.remote.empty()) {
      Add("git.remote", R::kSkipped, "no execution.git_remote and no github.repo: execution is off, Tickets wait",
          "set github.repo (or execution.git_remote) so accepted Tickets are worked on");
      Add("git.prepare", R::kSkipped, "needs a git remote");
      return;
    }
    // The prepare command as serve runs it: sandboxed where serve would sandbox it, its private
    // HOME and TMPDIR inside the scratch directory.
    exec::PosixRunnerOptions ro;
    ro.sandbox = SandboxPolicyFor(config_);
    ro.sandbox.state_dir = (scratch / "sandbox").string();
    ro.sandbox.enabled = config_.execution.sandbox != "off" && exec::ProbeSandbox(ro.sandbox).supported;
    auto runner = exec::MakePosixProcessRunner(ro);
    exec::Workspaces workspaces(wo, runner.get(), SystemClock(), exec::RealSleeper());
    if (Status s = workspaces.CheckRemote(); !s.ok()) {
      Add("git.remote", R::kFailed, Scrub(s.message()),
          wo.git_env.empty() && !wo.git_env_source ? "check the URL in execution.git_remote and that this user's git can read it"
                             : "the API may answer while git cannot: check outgoing HTTPS (proxy, firewall) and the "
                               "token's access to the repository's contents");
      Add("git.prepare", R::kSkipped, "needs a readable remote");
      return;
    }
    Add("git.remote", R::kOk, wo.remote + " reachable with git");
    const TimeMs started = SystemClock()->NowMs();
    auto w = workspaces.Prepare(0);
    if (!w.ok()) {
      Add("git.prepare", R::kFailed, Scrub(w.status().message()),
          wo.prepare.empty() ? "the remote needs a default branch with at least one commit"
                             : "run execution.prepare by hand in a scratch directory and fix what it says");
    } else {
      Add("git.prepare", R::kOk,
          std::string(wo.prepare.empty() ? "git" : "git and execution.prepare") + " made a workspace of " + w->base +
              " in " + std::to_string((SystemClock()->NowMs() - started) / 1000.0).substr(0, 4) + " s");
      (void)workspaces.Remove(*w);
    }
    std::error_code ec;
    fs::remove_all(scratch, ec);
    const exec::Containment c = runner->containment();
    if (config_.execution.cgroups == "off") Add("containment", R::kSkipped, "process groups only (execution.cgroups: off)");
    else if (c.cgroups) Add("containment", R::kOk, "process groups and a cgroup v2 per command under " + c.detail);
    else
      Add("containment", R::kSkipped, "process groups only: " + c.detail,
          "a process that calls setsid() escapes its group; under systemd, Delegate=yes (the shipped unit) fixes it");
  }

  // Whether worker commands will run sandboxed, as `serve` decides it (issue 19).
  void Sandbox() {
    exec::SandboxPolicy policy = SandboxPolicyFor(config_);
    const std::string& mode = config_.execution.sandbox;
    const exec::SandboxSupport support =
        mode == "off" ? exec::SandboxSupport{false, "not probed"} : exec::ProbeSandbox(policy);
    auto d = exec::DecideSandbox(mode, support);
    if (!d.ok()) {
      Add("sandbox", R::kFailed, "serve will refuse to start: " + support.detail, exec::SandboxFix());
      return;
    }
    if (d->enabled) {
      Add("sandbox", R::kOk,
          "worker commands run in bubblewrap (network " + std::string(policy.network ? "shared" : "off") +
              "): " + support.detail);
    } else {
      Add("sandbox", R::kSkipped, d->detail,
          "set execution.sandbox: on where bubblewrap can run, so workers cannot read the daemon's data and secrets");
    }
  }

  // The coding CLI execution.executor names (issue 21): its program, its version, its model key,
  // and a one-token call to its model endpoint in the CLI's own wire format.
  void CodingCli() {
    const Config::CodingCli* cli = config_.execution.ChosenCli();
    if (cli == nullptr) return;
    const std::string& executor = config_.execution.executor;
    const std::string block = "execution." + std::string(executor == "claude-code" ? "claude_code"
                                                          : executor == "gemini-cli" ? "gemini_cli"
                                                          : executor == "qwen-code"  ? "qwen_code"
                                                                                     : "codex");
    static const std::map<std::string, std::string> kPackage = {{"claude-code", "@anthropic-ai/claude-code"},
                                                                {"codex", "@openai/codex"},
                                                                {"gemini-cli", "@google/gemini-cli"},
                                                                {"qwen-code", "@qwen-code/qwen-code"}};
    const exec::CliExecutorOptions o = CliExecutorOptionsFor(executor, *cli);
    // The key and the API are the model gateway's: the same call the gateway would forward.
    const exec::ModelGatewayOptions g = ModelGatewayOptionsFor(executor, *cli);
    if (FindProgram(o.binary).empty()) {
      Add("cli", R::kFailed, executor + ": program \"" + o.binary + "\" not found",
          "install it (npm install -g " + kPackage.at(executor) + ") or set " + block + ".binary to its path");
      Add("cli.model", R::kSkipped, "needs the program");
      return;
    }
    std::string version;
    if (RunCommand({o.binary, "--version"}, {}, &version) != 0) {
      Add("cli", R::kFailed, o.binary + " --version failed: " + text::TailLines(version, 3, 300),
          "run it by hand as the service user; " + block + ".binary must be the CLI itself");
      Add("cli.model", R::kSkipped, "needs a runnable program");
      return;
    }
    Add("cli", R::kOk, executor + ": " + o.binary + " (" + text::FirstLine(version, 100) + ")");
    if (!cli->api_key_env.empty() && g.api_key.empty()) {
      Add("cli.model", R::kFailed, "environment variable " + cli->api_key_env + " (" + block + ".api_key_env) is not set",
          "put " + cli->api_key_env + "=<key> in the service's EnvironmentFile");
      return;
    }
    if (o.model.empty() || g.upstream.empty()) {
      Add("cli.model", R::kSkipped, "the CLI's default " + std::string(o.model.empty() ? "model" : "endpoint") +
                                        " is used; set " + block + ".model and .base_url to have it checked");
      return;
    }
    HttpRequest req;
    req.method = "POST";
    req.timeout_ms = 30'000;
    req.connect_timeout_ms = 5'000;
    std::string base = g.upstream;
    while (!base.empty() && base.back() == '/') base.pop_back();
    json body;
    if (executor == "claude-code") {
      req.url = base + "/v1/messages";
      req.headers = {{"x-api-key", g.api_key}, {"anthropic-version", "2023-06-01"}, {"Content-Type", "application/json"}};
      body = {{"model", o.model}, {"max_tokens", 1}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", "ping"}}}}};
    } else if (executor == "codex") {
      req.url = base + "/responses";
      req.headers = {{"Authorization", "Bearer " + g.api_key}, {"Content-Type", "application/json"}};
      body = {{"model", o.model},
              {"input", {{{"role", "user"}, {"content", "ping"}}}},
              {"max_output_tokens", 16},
              {"store", false},
              {"stream", true}};
    } else if (executor == "gemini-cli") {
      req.url = base + "/v1beta/models/" + o.model + ":generateContent";
      req.headers = {{"x-goog-api-key", g.api_key}, {"Content-Type", "application/json"}};
      body = {{"contents", {{{"role", "user"}, {"parts", {{{"text", "ping"}}}}}}},
              {"generationConfig", {{"maxOutputTokens", 1}}}};
    } else {
      req.url = base + "/chat/completions";
      req.headers = {{"Authorization", "Bearer " + g.api_key}, {"Content-Type", "application/json"}};
      body = {{"model", o.model}, {"max_tokens", 1}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", "ping"}}}}};
    }
    // Streamed, as the CLI itself asks: only the status is read, and the call costs one token.
    req.body = body.dump();
    HttpResponse r = http_.Send(req);
    if (r.ok()) {
      Add("cli.model", R::kOk, "POST " + req.url + " answers for " + o.model);
      return;
    }
    Add("cli.model", R::kFailed, "POST " + req.url + ": " + Answer(r),
        r.status == 401 || r.status == 403 ? "the key in " + cli->api_key_env + " is refused: check it"
                                           : "check " + block + ".base_url and .model");
  }

  // Runs `argv` (no shell) with `env` added to this process's environment; stdout and stderr
  // together in *out, trailing newlines removed. Returns the exit status, or -1.
  static int RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string* out) {
    out->clear();
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    env_s.insert(env_s.end(), env.begin(), env.end());
    std::vector<char*> envp, args;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_s = argv;
    for (auto& a : argv_s) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::dup2(fds[1], STDERR_FILENO);
      int devnull = ::open("/dev/null", O_RDONLY);
      ::dup2(devnull, STDIN_FILENO);
      ::execvpe(args[0], args.data(), envp.data());
      _exit(127);
    }
    ::close(fds[1]);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0 && out->size() < 16'384) out->append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    while (!out->empty() && (out->back() == '\n' || out->back() == '\r')) out->pop_back();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // git's error text, without the token should a server echo the header back.
  std::string Scrub(std::string text) const {
    if (!token_.empty())
      for (std::size_t p; (p = text.find(token_)) != std::string::npos;) text.replace(p, token_.size(), "***");
    return text::Cut(text, 300);
  }

  const Config& config_;
  HttpClient& http_;
  std::vector<DoctorCheck> checks_;
  std::optional<superagent::Policy> policy_;  // the policy in the file, once the policy check read it
  std::string token_ = ResolveSecret(config_.github.token_env);  // scrubbed from anything shown
};

}  // namespace

std::optional<CommandProgramProblem> FindCommandProgramProblem(const Config& config, const std::string& path_env) {
  if (config.execution.executor != "command" || config.execution.sandbox == "off") return std::nullopt;
  auto words = LeadingWords(config.execution.command);
  if (!words) return std::nullopt;
  std::size_t at = 0;
  while (at < words->size() && Assignment((*words)[at])) ++at;
  // Wrappers that run the next word as the program.
  while (at < words->size() && ((*words)[at] == "exec" || (*words)[at] == "nohup" || (*words)[at] == "env")) {
    const bool env = (*words)[at] == "env";
    ++at;
    while (env && at < words->size() && (Assignment((*words)[at]) || (*words)[at].rfind('-', 0) == 0)) ++at;
  }
  if (at >= words->size()) return std::nullopt;
  const exec::SandboxPolicy sandbox = SandboxPolicyFor(config);
  const std::string& program = (*words)[at];
  std::string found;
  if (program.find('/') == std::string::npos) {
    static const char* kShell[] = {".", ":", "[", "cd", "command", "eval", "export", "for", "if", "set", "source",
                                   "test", "true", "false", "while", "until", "case", "{", "!", "builtin", "read"};
    for (const char* b : kShell)
      if (program == b) return std::nullopt;
    found = InPath(program, path_env);
    if (found.empty())
      return CommandProgramProblem{"execution.command: the program \"" + text::Cut(text::Repair(program), 100) +
                                       "\" is in no directory of PATH (" + text::Cut(text::Repair(path_env), 300) +
                                       "), so every turn would fail at once",
                                   "install it, or write its absolute path in execution.command"};
  } else if (program.front() == '/') {
    found = program;
  }
  if (!found.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(found, ec))
      return CommandProgramProblem{"execution.command: the program " + found + " does not exist",
                                   "correct the path in execution.command"};
    if (std::string why = exec::SandboxHides(sandbox, found); !why.empty())
      return CommandProgramProblem{"execution.command: the worker cannot run its program: " + why +
                                       ", so every turn would fail with \"not found\"",
                                   MoveItHint(found)};
  }
  // A script or file it names by an absolute path, which exists here but not inside.
  for (std::size_t i = at + 1; i < words->size(); ++i) {
    const std::string& w = (*words)[i];
    std::error_code ec;
    if (w.empty() || w.front() != '/' || !std::filesystem::exists(w, ec)) continue;
    if (std::string why = exec::SandboxHides(sandbox, w); !why.empty())
      return CommandProgramProblem{"execution.command: the worker cannot read " + w + ", which the command names: " + why,
                                   MoveItHint(w)};
  }
  return std::nullopt;
}

std::vector<DoctorCheck> RunDoctor(const Config& config, HttpClient& http) { return Doctor(config, http).Run(); }

const char* DoctorResultName(DoctorCheck::Result r) {
  switch (r) {
    case R::kOk: return "ok";
    case R::kFailed: return "FAILED";
    case R::kSkipped: return "skipped";
    case R::kWarning: return "warning";
  }
  return "?";
}

}  // namespace superagent::app
