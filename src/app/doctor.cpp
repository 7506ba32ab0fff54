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

#include "app/doctor_internal.h"
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


}  // namespace

void Doctor::Policy() {
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

void Doctor::People() {
  const bool github = config_.github.On();
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

void Doctor::CommandProgram() {
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

void Doctor::DataDir() {
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

void Doctor::Secrets() {
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

void Doctor::Sqlite() {
  const int v = sqlite3_libversion_number();
  if (v < kMinSqlite) {
    Add("sqlite", R::kFailed, std::string("SQLite ") + sqlite3_libversion() + " is too old (needs 3.35 or newer)",
        "install a newer libsqlite3 (Debian 12 ships 3.40)");
    return;
  }
  Add("sqlite", R::kOk, std::string("SQLite ") + sqlite3_libversion());
}

void Doctor::Database() {
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

void Doctor::Git() {
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
                                                                      config_.github.On() && a.ok())
    app = std::make_shared<github::InstallationTokens>(&http_, SystemClock(), std::move(*a));
  exec::WorkspaceOptions wo = WorkspaceOptionsFor(config_, scratch.string(), app);
  if (wo.remote.empty() && config_.github.installation) {
    Add("git.remote", R::kSkipped, "github.repos: installation: each repository is cloned when its first Ticket "
                                   "comes (its remote: execution.git_remote's {repo}, or GitHub's clone URL)");
    Add("git.prepare", R::kSkipped, "needs a repository's remote");
    return;
  }
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

void Doctor::Sandbox() {
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

int Doctor::RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string* out) {
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
