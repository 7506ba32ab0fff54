// The doctor's checks, one class (doctor.h runs them): the host's checks are defined in
// doctor.cpp (policy, people, data_dir, secrets, SQLite, the database, git, the sandbox, the
// command's program), the platforms' in doctor_platforms.cpp (GitHub, Feishu, the model, the
// coding CLI). Private to those two files.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/doctor.h"
#include "app/secrets.h"
#include "superagent/feishu.h"
#include "superagent/policy.h"
#include "superagent/text.h"

namespace superagent::app {

class Doctor {
  using R = DoctorCheck::Result;
  using json = nlohmann::json;

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

  void Policy();

  // Whether anyone may ask each Source that is on for work (issue 34). A daemon nobody may ask
  // anywhere hears only its panel: that fails; one deaf Source beside a working one is a warning
  // (a team may take requests in Feishu and only deliver on GitHub).
  void People();

  // With execution.executor: command, whether a worker can run execution.command (issue 34).
  void CommandProgram();

  void DataDir();

  // Where each *_env secret is read from (a credential file, the environment, nowhere), never
  // its value; an unusable credential file fails, naming it (issue 33).
  void Secrets();

  void Sqlite();

  // The whole quick_check, read-only: it runs beside a serving daemon.
  void Database();

  void GitHub();

  // The repositories of github.repos after the first, each GET /repos/<owner>/<name> with `token`.
  void OtherRepositories(const std::string& token, bool app);
  // github.repos: installation: GET /installation/repositories with the installation's token.
  void InstallationRepositories(const std::string& token);
  // Seed 004: what makes approvals mean something is GitHub's own rule on the default branch —
  // reviews required and stale approvals dismissed on a new push — not the agent's good
  // behaviour. A warning with the fix; a failure when a rule lets the daemon auto-merge, because
  // then nothing but the daemon's own guard stands between a model's change and the branch (and
  // the merge account's token could merge anything). A token that may not read the protection
  // (403, or an App without Administration: read) is said to be that, never "unprotected".
  void BranchProtection(const std::string& token, const HttpResponse& repo, bool app);

  // github.auth: app — the key signs, GitHub knows the App, it is installed on the repository with
  // the permissions the daemon needs, and an installation token is issued. Returns that token
  // ("" when a check failed; the ones after it are skipped).
  std::string AppGitHub();

  // The Feishu app as the daemon will use it: credentials present and accepted (a tenant token),
  // the bot's identity, every configured chat's history readable, and the realtime path.
  void Feishu();

  void FeishuSkipAfterToken(const std::string& why);

  void FeishuBot(feishu::Client& client);

  // Each `chat:<id>` row of the policy: one cheap history read (page_size 1, from now), which
  // needs what backfill needs — the bot in the chat and the history scopes.
  void FeishuChats(feishu::Client& client);

  void FeishuRealtime(feishu::Client& client);

  void Model();

  void Git();

  // Whether worker commands will run sandboxed, as `serve` decides it (issue 19).
  void Sandbox();

  // The coding CLI execution.executor names (issue 21): its program, its version, its model key,
  // and a one-token call to its model endpoint in the CLI's own wire format.
  void CodingCli();

  // Runs `argv` (no shell) with `env` added to this process's environment; stdout and stderr
  // together in *out, trailing newlines removed. Returns the exit status, or -1.
  static int RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string* out);

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

}  // namespace superagent::app
