// Workspaces as git worktrees of a local bare clone. Every git command goes through the
// ProcessRunner (own process group, time limit) so a hung remote cannot hold a slot forever.
#include "superagent/workspace.h"

#include "superagent/text.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace superagent::exec {

namespace fs = std::filesystem;

namespace {
std::vector<std::string> With(std::vector<std::string> front, const std::vector<std::string>& back) {
  front.insert(front.end(), back.begin(), back.end());
  return front;
}
std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}
}  // namespace

Workspaces::Workspaces(WorkspaceOptions options, ProcessRunner* runner, Clock* clock, Sleeper sleeper)
    : options_(std::move(options)), runner_(runner), clock_(clock), sleeper_(std::move(sleeper)) {
  // git runs in several directories (the root, the clone, each worktree): a relative data_dir
  // would name a different place from each of them.
  std::error_code ec;
  if (!options_.root.empty()) options_.root = fs::absolute(options_.root, ec).lexically_normal().string();
  // A local remote given relative to the daemon's directory, likewise.
  if (!options_.remote.empty() && options_.remote.find("://") == std::string::npos &&
      options_.remote.find('@') == std::string::npos && fs::exists(options_.remote, ec))
    options_.remote = fs::absolute(options_.remote, ec).lexically_normal().string();
}

std::string Workspaces::ClonePath() const { return (fs::path(options_.root) / "repo.git").string(); }

namespace {
// git subcommands that reach the remote (and need the token for a private repository).
const std::string kRemoteCommands[] = {"clone", "fetch", "ls-remote", "push"};
}  // namespace

const std::vector<std::string>& GitPassThroughNames() {
  static const std::vector<std::string> kNames = {
      "http_proxy",    "https_proxy",  "HTTP_PROXY",     "HTTPS_PROXY",   "no_proxy", "NO_PROXY",        "all_proxy",
      "ALL_PROXY",     "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "SSH_AUTH_SOCK", "GIT_SSH", "GIT_SSH_COMMAND"};
  return kNames;
}

std::string Workspaces::DirFor(TicketId ticket) const {
  return (fs::path(options_.root) / "tickets" / ("ticket-" + std::to_string(ticket))).string();
}

WorkerScope Workspaces::ScopeFor(TicketId ticket) const {
  WorkerScope scope;
  scope.name = "ticket-" + std::to_string(ticket);
  const std::string dir = DirFor(ticket);
  // The worktree read-write; the shared clone (with the worktree's own git directory in it)
  // read-only: `git status`, `diff` and `log` work, but nothing a worker writes can change what
  // the daemon's git reads — its config, hooks, other Tickets' branches (the daemon commits and
  // pushes; docs/003).
  scope.writable = {dir};
  scope.readable = {ClonePath()};
  return scope;
}

std::vector<std::string> Workspaces::WorktreeArgs(const WorkspaceRecord& w) const {
  // The daemon's git names the worktree's git directory itself instead of reading the `.git`
  // file in the worktree, which a worker can rewrite to point at a config of its own.
  const fs::path gitdir = fs::path(ClonePath()) / "worktrees" / fs::path(w.dir).filename();
  std::error_code ec;
  if (w.dir != DirFor(w.ticket) || !fs::exists(gitdir / "commondir", ec)) return {};
  // Only when that git directory is this worktree's (git names it after the directory, and
  // records the directory in it).
  std::ifstream in(gitdir / "gitdir");
  std::string recorded;
  std::getline(in, recorded);
  if (fs::path(recorded).lexically_normal() != (fs::path(w.dir) / ".git").lexically_normal()) return {};
  return {"--git-dir=" + gitdir.string(), "--work-tree=" + w.dir};
}

Result<RunResult> Workspaces::Git(const std::string& cwd, std::vector<std::string> args, TimeMs limit_ms,
                                  const std::atomic<bool>* cancel) {
  std::string subcommand;
  for (const std::string& a : args)
    if (a.rfind("--", 0) != 0) {
      subcommand = a;
      break;
    }
  ProcessSpec spec;
  // No hooks and no fsmonitor: the daemon's git runs outside the sandbox, in directories a
  // worker wrote to, and must not run a program the worker left there.
  spec.argv = {"git", "-c", "user.name=" + options_.author_name, "-c", "user.email=" + options_.author_email,
               "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"};
  for (auto& a : args) spec.argv.push_back(std::move(a));
  spec.cwd = cwd;
  spec.env = {{"GIT_TERMINAL_PROMPT", "0"}, {"LC_ALL", "C"}};
  // The runner gives the daemon's own commands only an allow-list of its environment; git opts in
  // to what reaching a remote may need on the team's box (a proxy, a CA bundle, an SSH agent).
  spec.env.insert(spec.env.end(), options_.git_pass_env.begin(), options_.git_pass_env.end());
  // The token only for the commands that talk to the remote: a commit in a worktree a worker
  // wrote to (its hooks, its config) must not run with it.
  const bool remote = std::find(std::begin(kRemoteCommands), std::end(kRemoteCommands), subcommand) !=
                      std::end(kRemoteCommands);
  if (remote && options_.git_env_source) {
    auto env = options_.git_env_source();
    if (!env.ok()) return Status::Unavailable("git " + subcommand + " has no credentials: " + env.status().message());
    spec.env.insert(spec.env.end(), env->begin(), env->end());
  } else if (remote) {
    spec.env.insert(spec.env.end(), options_.git_env.begin(), options_.git_env.end());
  }
  return RunToCompletion(*runner_, spec, clock_, sleeper_, limit_ms > 0 ? limit_ms : options_.git_limit_ms, 20, cancel);
}

namespace {
Status Failed(const std::string& what, const Result<RunResult>& r) {
  if (!r.ok()) return Status::Unavailable(what + ": " + r.status().message());
  if (r->cancelled) return Status::Unavailable(what + ": cancelled");
  if (r->timed_out) return Status::Unavailable(what + ": timed out");
  if (r->exit_code != 0) return Status::Unavailable(what + ": " + text::TailLines(r->err, 5, 500));
  return Status::Ok();
}
}  // namespace

Status Workspaces::SyncClone(const std::atomic<bool>* cancel) {
  if (options_.remote.empty()) return Status::InvalidArgument("execution.git_remote is not set and there is no GitHub repository");
  std::error_code ec;
  fs::create_directories(options_.root, ec);
  if (ec) return Status::IoError("cannot create " + options_.root + ": " + ec.message());
  const std::string clone = ClonePath();
  if (!fs::exists(fs::path(clone) / "HEAD")) {
    auto r = Git(options_.root, {"clone", "--bare", options_.remote, clone}, 0, cancel);
    RETURN_IF_ERROR(Failed("cannot clone " + options_.remote, r));
    // A bare clone keeps branches as local heads; track the remote's under origin/ instead so
    // fetching never collides with the Tickets' own branches.
    r = Git(clone, {"config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"});
    RETURN_IF_ERROR(Failed("cannot configure the clone", r));
  }
  auto r = Git(clone, {"fetch", "--prune", "origin"}, 0, cancel);
  return Failed("cannot fetch from " + options_.remote, r);
}

Status Workspaces::CheckRemote() {
  if (options_.remote.empty()) return Status::InvalidArgument("no git remote");
  std::error_code ec;
  const std::string cwd = fs::is_directory(options_.root, ec) ? options_.root : fs::temp_directory_path().string();
  auto r = Git(cwd, {"ls-remote", "--heads", options_.remote}, 60'000);
  return Failed("git ls-remote " + options_.remote + " failed", r);
}

namespace {
std::string Base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += {k[v >> 18], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> GitAuthEnv(const std::string& remote, const std::string& token,
                                                            const std::string& web_url) {
  std::string base = web_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  // Only over https, and only to that GitHub: the header is the token itself.
  if (token.empty() || base.rfind("https://", 0) != 0 || remote.rfind(base + "/", 0) != 0) return {};
  return {{"GIT_CONFIG_COUNT", "1"},
          {"GIT_CONFIG_KEY_0", "http." + base + "/.extraHeader"},
          {"GIT_CONFIG_VALUE_0", "Authorization: Basic " + Base64("x-access-token:" + token)}};
}

Result<std::string> Workspaces::DefaultBranch() {
  auto r = Git(ClonePath(), {"symbolic-ref", "--short", "HEAD"});
  RETURN_IF_ERROR(Failed("cannot read the default branch", r));
  return text::Trim(r->out);
}

// A preparation that failed or was killed half-way must not leave a directory that the next
// attempt would take for a finished workspace ("an existing directory is reused").
void Workspaces::DiscardHalfMade(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  (void)Git(ClonePath(), {"worktree", "prune"});
}

Result<WorkspaceRecord> Workspaces::Prepare(TicketId ticket, const std::atomic<bool>* cancel) {
  WorkspaceRecord w;
  w.ticket = ticket;
  w.branch = "superagent/ticket-" + std::to_string(ticket);
  w.dir = DirFor(ticket);
  std::lock_guard<std::mutex> lock(clone_mu_);
  RETURN_IF_ERROR(SyncClone(cancel));
  auto def = DefaultBranch();
  if (!def.ok()) return def.status();
  w.base = "origin/" + *def;
  // Prepared before a restart: keep the work in it. (An empty directory is the mount point a
  // sandboxed prepare command was given and did not fill.)
  std::error_code dir_ec;
  if (fs::exists(w.dir) && !fs::is_empty(w.dir, dir_ec)) return w;
  if (!options_.prepare.empty()) {
    std::string cmd = options_.prepare;
    cmd = Replace(cmd, "{repo}", ShellQuote(ClonePath()));
    cmd = Replace(cmd, "{remote}", ShellQuote(options_.remote));
    cmd = Replace(cmd, "{branch}", ShellQuote(w.branch));
    cmd = Replace(cmd, "{dir}", ShellQuote(w.dir));
    cmd = Replace(cmd, "{base}", ShellQuote(w.base));
    // The team's command runs as a worker's does (sandboxed, built environment), seeing the
    // clone (it adds the worktree there) and its own directory — made empty beforehand so it
    // can be shown — and a local remote read-only; not the other Tickets' directories.
    std::error_code ec;
    fs::create_directories(w.dir, ec);
    if (ec) return Status::IoError("cannot create " + w.dir + ": " + ec.message());
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", cmd};
    spec.cwd = w.dir;
    spec.env = {{"GIT_TERMINAL_PROMPT", "0"}};
    WorkerScope scope = ScopeFor(ticket);
    scope.writable = {ClonePath(), w.dir};
    scope.readable.clear();
    if (options_.remote.find("://") == std::string::npos && fs::exists(options_.remote, ec))
      scope.readable.push_back(options_.remote);
    spec.worker = scope;
    auto r = RunToCompletion(*runner_, spec, clock_, sleeper_, options_.prepare_limit_ms, 20, cancel);
    if (Status s = Failed("prepare command failed", r); !s.ok()) {
      DiscardHalfMade(w.dir);
      return s;
    }
    if (!fs::is_directory(w.dir) || fs::is_empty(w.dir, ec)) {
      DiscardHalfMade(w.dir);
      return Status::Unavailable("prepare command did not create " + w.dir);
    }
  } else {
    std::error_code ec;
    fs::create_directories(fs::path(w.dir).parent_path(), ec);
    auto r = Git(ClonePath(), {"worktree", "add", "-B", w.branch, w.dir, w.base}, options_.prepare_limit_ms, cancel);
    if (Status s = Failed("cannot add the worktree", r); !s.ok()) {
      DiscardHalfMade(w.dir);
      return s;
    }
  }
  spdlog::info("workspace prepared ticket={} dir={} branch={} base={}", ticket, w.dir, w.branch, w.base);
  return w;
}

Status Workspaces::Remove(const WorkspaceRecord& w) {
  std::lock_guard<std::mutex> lock(clone_mu_);
  if (fs::exists(w.dir)) {
    auto r = Git(ClonePath(), {"worktree", "remove", "--force", w.dir});
    if (!r.ok() || r->exit_code != 0) {
      std::error_code ec;
      fs::remove_all(w.dir, ec);
      Git(ClonePath(), {"worktree", "prune"});
    }
  }
  auto r = Git(ClonePath(), {"branch", "-D", w.branch});
  (void)r;  // the branch may never have been created by a custom prepare command
  // The worker's private HOME and TMPDIR (SandboxPolicyFor keeps them in <root>/sandbox).
  std::error_code ec;
  fs::remove_all(fs::path(options_.root) / "sandbox" / ("ticket-" + std::to_string(w.ticket)), ec);
  spdlog::info("workspace removed ticket={} dir={} branch={}", w.ticket, w.dir, w.branch);
  return Status::Ok();
}

Result<bool> Workspaces::CommitAll(const WorkspaceRecord& w, const std::string& message) {
  auto r = Git(w.dir, With(WorktreeArgs(w), {"add", "-A"}));
  RETURN_IF_ERROR(Failed("git add failed", r));
  r = Git(w.dir, With(WorktreeArgs(w), {"status", "--porcelain"}));
  RETURN_IF_ERROR(Failed("git status failed", r));
  if (text::Trim(r->out).empty()) return false;
  r = Git(w.dir, With(WorktreeArgs(w), {"commit", "-q", "-m", message}));
  RETURN_IF_ERROR(Failed("git commit failed", r));
  return true;
}

Result<int> Workspaces::CommitsAhead(const WorkspaceRecord& w) {
  auto r = Git(w.dir, With(WorktreeArgs(w), {"rev-list", "--count", w.base + "..HEAD"}));
  RETURN_IF_ERROR(Failed("cannot count commits", r));
  try {
    return std::stoi(text::Trim(r->out));
  } catch (...) {
    return Status::Internal("git rev-list printed \"" + text::Trim(r->out) + "\"");
  }
}

Result<bool> Workspaces::HasChanges(const WorkspaceRecord& w) {
  auto r = Git(w.dir, With(WorktreeArgs(w), {"status", "--porcelain"}));
  RETURN_IF_ERROR(Failed("git status failed", r));
  if (!text::Trim(r->out).empty()) return true;
  auto ahead = CommitsAhead(w);
  if (!ahead.ok()) return ahead.status();
  return *ahead > 0;
}

Result<std::vector<std::string>> Workspaces::ChangedFiles(const WorkspaceRecord& w) {
  auto fork = Git(w.dir, With(WorktreeArgs(w), {"merge-base", w.base, "HEAD"}));
  RETURN_IF_ERROR(Failed("git merge-base failed", fork));
  // -z: names as they are (no quoting of non-ASCII names), one NUL after each.
  auto diff = Git(w.dir, With(WorktreeArgs(w), {"diff", "--name-only", "-z", text::Trim(fork->out)}));
  RETURN_IF_ERROR(Failed("git diff failed", diff));
  auto untracked = Git(w.dir, With(WorktreeArgs(w), {"ls-files", "-z", "--others", "--exclude-standard"}));
  RETURN_IF_ERROR(Failed("git ls-files failed", untracked));
  std::vector<std::string> out;
  for (const std::string* list : {&diff->out, &untracked->out})
    for (std::size_t at = 0; at < list->size();) {
      std::size_t end = list->find('\0', at);
      if (end == std::string::npos) end = list->size();
      if (end > at) out.push_back(list->substr(at, end - at));
      at = end + 1;
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status Workspaces::AddFiles(const WorkspaceRecord& w, const std::vector<std::string>& paths) {
  if (paths.empty()) return Status::Ok();
  std::vector<std::string> args = {"add", "-f", "--"};
  args.insert(args.end(), paths.begin(), paths.end());
  auto r = Git(w.dir, With(WorktreeArgs(w), args));
  return Failed("git add failed", r);
}

Status Workspaces::Push(const WorkspaceRecord& w) {
  std::lock_guard<std::mutex> lock(clone_mu_);  // updates the clone's origin/* refs
  auto r = Git(w.dir, With(WorktreeArgs(w), {"push", "--force", "origin", "HEAD:refs/heads/" + w.branch}));
  RETURN_IF_ERROR(Failed("cannot push " + w.branch, r));
  spdlog::info("branch pushed ticket={} branch={}", w.ticket, w.branch);
  return Status::Ok();
}

}  // namespace superagent::exec
