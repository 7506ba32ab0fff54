// Workspaces as git worktrees of a local bare clone. Every git command goes through the
// ProcessRunner (own process group, time limit) so a hung remote cannot hold a slot forever.
#include "superagent/workspace.h"

#include "superagent/text.h"

#include <spdlog/spdlog.h>

#include <filesystem>

namespace superagent::exec {

namespace fs = std::filesystem;

namespace {
std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
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

Result<RunResult> Workspaces::Git(const std::string& cwd, std::vector<std::string> args, TimeMs limit_ms,
                                  const std::atomic<bool>* cancel) {
  ProcessSpec spec;
  spec.argv = {"git", "-c", "user.name=" + options_.author_name, "-c", "user.email=" + options_.author_email};
  for (auto& a : args) spec.argv.push_back(std::move(a));
  spec.cwd = cwd;
  spec.env = {{"GIT_TERMINAL_PROMPT", "0"}, {"LC_ALL", "C"}};
  spec.env.insert(spec.env.end(), options_.git_env.begin(), options_.git_env.end());
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

std::vector<std::pair<std::string, std::string>> GitAuthEnv(const std::string& remote, const std::string& token) {
  if (token.empty() || remote.rfind("https://github.com/", 0) != 0) return {};
  return {{"GIT_CONFIG_COUNT", "1"},
          {"GIT_CONFIG_KEY_0", "http.https://github.com/.extraHeader"},
          {"GIT_CONFIG_VALUE_0", "Authorization: Basic " + Base64("x-access-token:" + token)}};
}

Result<std::string> Workspaces::DefaultBranch() {
  auto r = Git(ClonePath(), {"symbolic-ref", "--short", "HEAD"});
  RETURN_IF_ERROR(Failed("cannot read the default branch", r));
  return Trim(r->out);
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
  w.dir = (fs::path(options_.root) / "tickets" / ("ticket-" + std::to_string(ticket))).string();
  std::lock_guard<std::mutex> lock(clone_mu_);
  RETURN_IF_ERROR(SyncClone(cancel));
  auto def = DefaultBranch();
  if (!def.ok()) return def.status();
  w.base = "origin/" + *def;
  if (fs::exists(w.dir)) return w;  // prepared before a restart: keep the work in it
  if (!options_.prepare.empty()) {
    std::string cmd = options_.prepare;
    cmd = Replace(cmd, "{repo}", ShellQuote(ClonePath()));
    cmd = Replace(cmd, "{remote}", ShellQuote(options_.remote));
    cmd = Replace(cmd, "{branch}", ShellQuote(w.branch));
    cmd = Replace(cmd, "{dir}", ShellQuote(w.dir));
    cmd = Replace(cmd, "{base}", ShellQuote(w.base));
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", cmd};
    spec.cwd = options_.root;
    spec.env = {{"GIT_TERMINAL_PROMPT", "0"}};
    auto r = RunToCompletion(*runner_, spec, clock_, sleeper_, options_.prepare_limit_ms, 20, cancel);
    if (Status s = Failed("prepare command failed", r); !s.ok()) {
      DiscardHalfMade(w.dir);
      return s;
    }
    if (!fs::is_directory(w.dir)) return Status::Unavailable("prepare command did not create " + w.dir);
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
  spdlog::info("workspace removed ticket={} dir={} branch={}", w.ticket, w.dir, w.branch);
  return Status::Ok();
}

Result<bool> Workspaces::CommitAll(const WorkspaceRecord& w, const std::string& message) {
  auto r = Git(w.dir, {"add", "-A"});
  RETURN_IF_ERROR(Failed("git add failed", r));
  r = Git(w.dir, {"status", "--porcelain"});
  RETURN_IF_ERROR(Failed("git status failed", r));
  if (Trim(r->out).empty()) return false;
  r = Git(w.dir, {"commit", "-q", "-m", message});
  RETURN_IF_ERROR(Failed("git commit failed", r));
  return true;
}

Result<int> Workspaces::CommitsAhead(const WorkspaceRecord& w) {
  auto r = Git(w.dir, {"rev-list", "--count", w.base + "..HEAD"});
  RETURN_IF_ERROR(Failed("cannot count commits", r));
  try {
    return std::stoi(Trim(r->out));
  } catch (...) {
    return Status::Internal("git rev-list printed \"" + Trim(r->out) + "\"");
  }
}

Status Workspaces::Push(const WorkspaceRecord& w) {
  std::lock_guard<std::mutex> lock(clone_mu_);  // updates the clone's origin/* refs
  auto r = Git(w.dir, {"push", "--force", "origin", "HEAD:refs/heads/" + w.branch});
  RETURN_IF_ERROR(Failed("cannot push " + w.branch, r));
  spdlog::info("branch pushed ticket={} branch={}", w.ticket, w.branch);
  return Status::Ok();
}

}  // namespace superagent::exec
