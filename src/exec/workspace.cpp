// Workspaces as git worktrees of a local bare clone. Every git command goes through the
// ProcessRunner (own process group, time limit) so a hung remote cannot hold a slot forever.
// A turn's commits, taken, checked and pushed: workspace_commits.cpp.
#include "superagent/digest.h"
#include "superagent/workspace.h"

#include "exec/workspace_internal.h"
#include "superagent/assign_or_return.h"
#include "superagent/github_threads.h"
#include "superagent/text.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace superagent::exec {

namespace fs = std::filesystem;
using workspace_internal::Failed;
using workspace_internal::IncomingRef;
using workspace_internal::TicketName;

namespace {
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
  auto absolute = [&](std::string* remote) {
    if (!remote->empty() && remote->find("://") == std::string::npos && remote->find('@') == std::string::npos &&
        fs::exists(*remote, ec))
      *remote = fs::absolute(*remote, ec).lexically_normal().string();
  };
  absolute(&options_.remote);
  options_.repo = text::AsciiLower(options_.repo);
  for (auto& [repo, remote] : options_.other_remotes) {
    repo = text::AsciiLower(repo);
    absolute(&remote);
  }
}

Result<Workspaces::Mirror> Workspaces::MirrorOf(const std::string& repo_in) const {
  const std::string repo = text::AsciiLower(repo_in);
  // With no repository named (a remote that is not a GitHub repository's), there is one mirror
  // and every Ticket works in it.
  const bool only_one = options_.repo.empty() && options_.other_remotes.empty() && !options_.remote_of;
  if (options_.remote_of && options_.repo.empty() && repo.empty())
    return Status::NotFound("the Ticket names no repository, and an installation has no home repository: ask in a "
                            "repository's discussion");
  if (repo.empty() || repo == options_.repo || only_one)
    return Mirror{"", options_.remote, (fs::path(options_.root) / "repo.git").string(),
                  (fs::path(options_.root) / "verified.git").string()};
  std::vector<std::pair<std::string, std::string>> listed;  // a run-time repository, when it is one
  if (options_.remote_of && github_threads::IsRepositoryName(repo) &&
      std::none_of(options_.other_remotes.begin(), options_.other_remotes.end(),
                   [&](const auto& o) { return o.first == repo; }))
    if (std::string remote = options_.remote_of(repo); !remote.empty()) listed.emplace_back(repo, remote);
  for (const auto& [other, remote] : listed.empty() ? options_.other_remotes : listed) {
    if (other != repo) continue;
    // Repository names are GitHub's (letters, digits, '-', '_', '.'; github_threads.h), checked
    // where the configuration is read; "." and ".." are refused here all the same.
    const std::size_t slash = other.find('/');
    const std::string owner = other.substr(0, slash), name = other.substr(slash + 1);
    if (slash == std::string::npos || owner == "." || owner == ".." || name == "." || name == "..")
      break;
    const fs::path dir = fs::path(options_.root) / "repos" / owner / name;
    return Mirror{other, remote, (dir / "repo.git").string(), (dir / "verified.git").string()};
  }
  return Status::NotFound("repository " + text::Cut(repo, 120) + " is not one execution works in (github.repos)");
}

std::string Workspaces::RepositoryOf(const WorkspaceRecord& w) const { return w.repo.empty() ? options_.repo : w.repo; }

namespace {
std::string BaseRef(TicketId t) { return "refs/superagent/base/" + TicketName(t); }
std::string AdoptedRef(TicketId t) { return "refs/superagent/adopted/" + TicketName(t); }
}  // namespace

std::string Workspaces::BranchFor(TicketId ticket) const {
  // Issue 34: another install on the same repository (or this one after its data_dir was reset)
  // numbers its Tickets from 1 as well; the install id keeps their branches apart. Only the
  // characters a ref name certainly allows are taken from it.
  std::string install;
  for (char c : options_.install_id) {
    if (install.size() == 12) break;
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) install += c;
  }
  return "superagent/" + (install.empty() ? "" : install + "/") + TicketName(ticket);
}

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

std::string Workspaces::DirFor(TicketId ticket, const std::string& repo) const {
  return (fs::path(DirFor(ticket)) / kOtherRepositories / text::AsciiLower(repo)).string();
}

WorkerScope Workspaces::ScopeFor(TicketId ticket, const std::vector<std::string>& repos) const {
  WorkerScope scope = ScopeFor(ticket, repos.empty() ? std::string() : repos.front());
  // Only mirrors that exist: a sandbox cannot show a directory that is not there (a mirror is
  // made by the first PrepareAlso; Jobs::ShowAlso adds it to a session begun before).
  for (std::size_t i = 1; i < repos.size(); ++i) {
    std::error_code ec;
    if (auto m = MirrorOf(repos[i]); m.ok() && fs::is_directory(m->clone, ec) &&
                                     std::find(scope.readable.begin(), scope.readable.end(), m->clone) == scope.readable.end())
      scope.readable.push_back(m->clone);
  }
  return scope;
}

WorkerScope Workspaces::ScopeFor(TicketId ticket, const std::string& repo) const {
  WorkerScope scope;
  scope.name = TicketName(ticket);
  // The Ticket's repository read-write (it is the worker's: its config, hooks and objects); the
  // mirror read-only, whose objects that repository borrows. Nothing the daemon's git reads —
  // the mirror's config, verified.git, other Tickets' repositories — is writable or visible.
  scope.writable = {DirFor(ticket)};
  // An unknown repository shows no mirror: Prepare refuses it before anything runs there.
  if (auto m = MirrorOf(repo); m.ok()) scope.readable = {m->clone};
  return scope;
}

Result<RunResult> Workspaces::Git(const std::string& cwd, std::vector<std::string> args, TimeMs limit_ms,
                                  const std::atomic<bool>* cancel, const std::string& stdin_text, bool local) {
  // The subcommand: the first word that is neither an option nor a "-c name=value" pair's value.
  std::string subcommand;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-c" || args[i] == "-C") {
      ++i;
    } else if (args[i].rfind("-", 0) != 0) {
      subcommand = args[i];
      break;
    }
  }
  ProcessSpec spec;
  // The daemon's git runs only in repositories no worker can write (the class comment); no hooks
  // and no fsmonitor all the same.
  spec.argv = {"git", "-c", "user.name=" + options_.author_name, "-c", "user.email=" + options_.author_email,
               "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"};
  for (auto& a : args) spec.argv.push_back(std::move(a));
  spec.cwd = cwd;
  spec.stdin_text = stdin_text;
  spec.env = {{"GIT_TERMINAL_PROMPT", "0"}, {"LC_ALL", "C"}};
  // The runner gives the daemon's own commands only an allow-list of its environment; git opts in
  // to what reaching a remote may need on the team's box (a proxy, a CA bundle, an SSH agent).
  spec.env.insert(spec.env.end(), options_.git_pass_env.begin(), options_.git_pass_env.end());
  // The token only for the commands that talk to the remote.
  const bool remote = !local && std::find(std::begin(kRemoteCommands), std::end(kRemoteCommands), subcommand) !=
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
// Deletes every ref under `prefix` in the repository `repo` (the daemon's own).
std::string DeleteRefsScript(const std::string& listing) {
  std::string script;
  for (std::size_t at = 0; at < listing.size();) {
    std::size_t end = listing.find('\n', at);
    if (end == std::string::npos) end = listing.size();
    const std::string ref = text::Trim(listing.substr(at, end - at));
    if (!ref.empty()) script += "delete " + ref + "\n";
    at = end + 1;
  }
  return script;
}
}  // namespace

Status Workspaces::DeleteRefs(const std::string& repo, const std::string& prefix) {
  auto list = Git(repo, {"for-each-ref", "--format=%(refname)", prefix});
  RETURN_IF_ERROR(Failed("cannot list " + prefix, list));
  const std::string script = DeleteRefsScript(list->out);
  if (script.empty()) return Status::Ok();
  return Failed("cannot delete " + prefix, Git(repo, {"update-ref", "--stdin"}, 0, nullptr, script));
}

Status Workspaces::SyncClone(const Mirror& m, const std::atomic<bool>* cancel, std::string* default_branch,
                             std::string* default_tip, const std::string& record_tip_as) {
  if (m.remote.empty()) return Status::InvalidArgument("execution.git_remote is not set and there is no GitHub repository");
  std::error_code ec;
  const std::string parent = fs::path(m.clone).parent_path().string();
  fs::create_directories(parent, ec);
  if (ec) return Status::IoError("cannot create " + parent + ": " + ec.message());
  const std::string& clone = m.clone;
  if (!fs::exists(fs::path(clone) / "HEAD")) {
    auto r = Git(parent, {"clone", "--bare", m.remote, clone}, 0, cancel);
    RETURN_IF_ERROR(Failed("cannot clone " + m.remote, r));
    // A bare clone keeps branches as local heads; track the remote's under origin/ instead so
    // fetching never collides with the Tickets' own branches.
    r = Git(clone, {"config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"});
    RETURN_IF_ERROR(Failed("cannot configure the clone", r));
    // Workers read the mirror: the Tickets' pushed branches (this install's and any other's)
    // are no business of another Ticket's.
    RETURN_IF_ERROR(DeleteRefs(clone, "refs/heads/superagent/"));
  }
  // The Tickets' branches are left out here too (a negative refspec), and any a fetch of an
  // older daemon brought in are dropped.
  // No automatic maintenance after the fetch: it is a process start on every Ticket's way to its
  // turn; Remove runs it when a Ticket is done.
  auto r = Git(clone, {"-c", "maintenance.auto=false", "fetch", "--prune", "origin", "+refs/heads/*:refs/remotes/origin/*",
                       "^refs/heads/superagent/*"},
               0, cancel);
  RETURN_IF_ERROR(Failed("cannot fetch from " + m.remote, r));
  // One listing says both what to drop and where the default branch is now.
  const std::string dropped = "refs/remotes/origin/superagent/";
  std::string origin_ref;
  if (default_tip != nullptr) {
    ASSIGN_OR_RETURN(*default_branch, DefaultBranch(m.repo));
    origin_ref = "refs/remotes/origin/" + *default_branch;
  }
  std::vector<std::string> listing = {"for-each-ref", "--format=%(refname) %(objectname)", dropped};
  if (!origin_ref.empty()) listing.push_back(origin_ref);
  auto listed = Git(clone, listing);
  RETURN_IF_ERROR(Failed("cannot list " + dropped, listed));
  std::string drop;
  for (const auto& [ref, id] : workspace_internal::ParseRefListing(listed->out)) {
    if (ref.rfind(dropped, 0) == 0) drop += "delete " + ref + "\n";
    else if (ref == origin_ref) *default_tip = id;
  }
  if (default_tip != nullptr && default_tip->empty())
    return Status::Unavailable("cannot find origin/" + *default_branch + " in the mirror of " + m.remote);
  // The caller's record of that commit rides in the same update as the drops: one git run.
  if (default_tip != nullptr && !record_tip_as.empty()) drop += "update " + record_tip_as + " " + *default_tip + "\n";
  if (!drop.empty())
    RETURN_IF_ERROR(Failed("cannot update the mirror's refs", Git(clone, {"update-ref", "--stdin"}, 0, nullptr, drop)));
  // verified.git: the daemon's private repository, borrowing the mirror's objects. Made with no
  // template (no hooks, not even samples).
  const std::string& verified = m.verified;
  if (!fs::exists(fs::path(verified) / "HEAD")) {
    r = Git(parent, {"init", "-q", "--bare", "--template=", verified});
    RETURN_IF_ERROR(Failed("cannot make " + verified, r));
  }
  const fs::path alternates = fs::path(verified) / "objects" / "info" / "alternates";
  fs::create_directories(alternates.parent_path(), ec);
  std::ofstream out(alternates, std::ios::trunc);
  out << (fs::path(clone) / "objects").string() << "\n";
  if (!out.flush()) return Status::IoError("cannot write " + alternates.string());
  return Status::Ok();
}

Status Workspaces::CheckRemote() {
  if (options_.remote.empty()) return Status::InvalidArgument("no git remote");
  std::error_code ec;
  const std::string cwd = fs::is_directory(options_.root, ec) ? options_.root : fs::temp_directory_path().string();
  auto r = Git(cwd, {"ls-remote", "--heads", options_.remote}, 60'000);
  return Failed("git ls-remote " + options_.remote + " failed", r);
}

namespace {
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

Result<std::string> Workspaces::DefaultBranch(const std::string& repo) {
  ASSIGN_OR_RETURN(const Mirror m, MirrorOf(repo));
  // The mirror is the daemon's alone (no worker writes it): its HEAD file is read as it is, and
  // git asked only when the file says something else (a detached HEAD, a future format).
  {
    std::ifstream in(fs::path(m.clone) / "HEAD");
    std::string line;
    static const std::string kPrefix = "ref: refs/heads/";
    if (std::getline(in, line) && line.rfind(kPrefix, 0) == 0 && line.size() > kPrefix.size() &&
        line.find_first_of(" \t\r", kPrefix.size()) == std::string::npos)
      return line.substr(kPrefix.size());
  }
  auto r = Git(m.clone, {"symbolic-ref", "--short", "HEAD"});
  RETURN_IF_ERROR(Failed("cannot read the default branch", r));
  return text::Trim(r->out);
}

Result<RunResult> Workspaces::InSandbox(const WorkspaceRecord& w, const std::string& script,
                                        std::vector<std::string> args, bool binary_stdout,
                                        const std::atomic<bool>* cancel, const std::string& stdin_bytes) {
  ProcessSpec spec;
  spec.stdin_text = stdin_bytes;
  spec.argv = {"/bin/sh", "-c", script, "sh"};
  for (auto& a : args) spec.argv.push_back(std::move(a));
  spec.cwd = w.dir;
  spec.env = {{"GIT_TERMINAL_PROMPT", "0"},
              {"LC_ALL", "C"},
              // The repository is the worker's own; whichever uid the sandbox gives it, git there
              // must not refuse it for its owner. The daemon's runs there start no maintenance:
              // each would be a process more on a turn's way, in a repository that lives as long
              // as its Ticket.
              {"GIT_CONFIG_COUNT", "2"},
              {"GIT_CONFIG_KEY_0", "safe.directory"},
              {"GIT_CONFIG_VALUE_0", "*"},
              {"GIT_CONFIG_KEY_1", "maintenance.auto"},
              {"GIT_CONFIG_VALUE_1", "false"},
              {"GIT_AUTHOR_NAME", options_.author_name},
              {"GIT_AUTHOR_EMAIL", options_.author_email},
              {"GIT_COMMITTER_NAME", options_.author_name},
              {"GIT_COMMITTER_EMAIL", options_.author_email}};
  spec.worker = ScopeFor(w.ticket, w.repo);
  spec.binary_stdout = binary_stdout;
  return RunToCompletion(*runner_, spec, clock_, sleeper_, options_.git_limit_ms, 20, cancel);
}

// The Ticket's repository, made inside its sandbox: the daemon's git never runs in the directory.
// It borrows the mirror's objects, has its branch at `start`, origin/<default> at the base (so
// "git diff origin/main" means what it always did), and commits as the daemon's author.
Status Workspaces::MakeTicketRepository(const WorkspaceRecord& w, const std::string& start, bool checkout,
                                        const std::string& origin_ref, const std::string& base,
                                        const std::atomic<bool>* cancel) {
  // Another repository's directory is made by PrepareAlso, in the sandbox.
  if (!Nested(w)) {
    std::error_code ec;
    fs::create_directories(w.dir, ec);
    if (ec) return Status::IoError("cannot create " + w.dir + ": " + ec.message());
  }
  // Two git runs: each costs a process start in the sandbox. origin/<default> is written as the
  // new repository's packed-refs file (one "<id> <ref>" line, git's format), the author appended
  // to its config (quoted as git's config syntax wants), and the reset both sets the unborn
  // branch to `start` and fills the index (and, for a new checkout, the files).
  static const char* kScript =
      "set -e\n"
      "git init -q -b \"$2\"\n"
      "printf '%s\\n' \"$1\" > .git/objects/info/alternates\n"
      "printf '%s %s\\n' \"$5\" \"$4\" > .git/packed-refs\n"
      "printf '%s' \"$7\" >> .git/config\n"
      "git reset -q \"--$6\" \"$3\"\n";
  auto quoted = [](const std::string& value) {
    std::string out = "\"";
    for (char c : value) {
      if (c == '\\' || c == '"') out += '\\';
      if (c == '\n') out += "\\n";
      else if (c != '\0') out += c;
    }
    return out + "\"";
  };
  const std::string author =
      "[user]\n\tname = " + quoted(options_.author_name) + "\n\temail = " + quoted(options_.author_email) + "\n";
  ASSIGN_OR_RETURN(const Mirror m, MirrorOfRecord(w));
  auto r = InSandbox(w, kScript,
                     {(fs::path(m.clone) / "objects").string(), w.branch, start, origin_ref, base,
                      checkout ? "hard" : "mixed", author},
                     false, cancel);
  return Failed("cannot make the Ticket's repository", r);
}

// A worktree of the layout before issue 33 (its `.git` a file naming the mirror): it becomes a
// repository of its own at the branch the mirror holds for it, the worker's files kept as they are.
Status Workspaces::AdoptOldWorktree(const Mirror& m, const WorkspaceRecord& w, const std::string& default_branch,
                                    const std::atomic<bool>* cancel) {
  const std::string& clone = m.clone;
  auto tip = Git(clone, {"rev-parse", "--verify", "-q", "refs/heads/" + w.branch + "^{commit}"});
  RETURN_IF_ERROR(Failed("cannot find the branch " + w.branch, tip));
  const std::string origin = "refs/remotes/origin/" + default_branch;
  auto base = Git(clone, {"merge-base", text::Trim(tip->out), origin});
  RETURN_IF_ERROR(Failed("cannot find where " + w.branch + " left " + default_branch, base));
  std::error_code ec;
  fs::remove(fs::path(w.dir) / ".git", ec);
  fs::remove_all(fs::path(clone) / "worktrees" / fs::path(w.dir).filename(), ec);
  RETURN_IF_ERROR(MakeTicketRepository(w, text::Trim(tip->out), false, origin, text::Trim(base->out), cancel));
  RETURN_IF_ERROR(Failed("cannot record the base", Git(clone, {"update-ref", BaseRef(w.ticket), text::Trim(base->out)})));
  // The old turns' objects are the mirror's, borrowed by the new repository: a ref keeps them
  // from being collected (as the branch did), in the daemon's namespace, until Remove.
  RETURN_IF_ERROR(Failed("cannot keep the old commits", Git(clone, {"update-ref", AdoptedRef(w.ticket), text::Trim(tip->out)})));
  (void)Git(clone, {"branch", "-D", w.branch});
  spdlog::info("workspace adopted ticket={} dir={} branch={}", w.ticket, w.dir, w.branch);
  return Status::Ok();
}

// A preparation that failed or was killed half-way must not leave a directory that the next
// attempt would take for a finished workspace ("an existing directory is reused").
void Workspaces::DiscardHalfMade(const Mirror& m, const WorkspaceRecord& w) {
  if (Nested(w)) {
    // Emptied in the sandbox: the path is the worker's to bend.
    (void)InSandbox(w, "find . -mindepth 1 -maxdepth 1 -exec rm -rf {} +", {});
  } else {
    std::error_code ec;
    fs::remove_all(w.dir, ec);
  }
  (void)Git(m.clone, {"update-ref", "-d", BaseRef(w.ticket)});
}

Result<WorkspaceRecord> Workspaces::PrepareAlso(const WorkspaceRecord& primary, const std::string& repo_in,
                                                const std::atomic<bool>* cancel) {
  const std::string repo = text::AsciiLower(repo_in);
  ASSIGN_OR_RETURN(const Mirror m, MirrorOf(repo));
  if (m.repo.empty() || !github_threads::IsRepositoryName(repo))
    return Status::InvalidArgument(repo + " is the Ticket's own repository, not another one");
  WorkspaceRecord w;
  w.ticket = primary.ticket;
  w.repo = repo;
  w.branch = primary.branch;
  w.dir = DirFor(primary.ticket, repo);
  std::lock_guard<std::mutex> lock(clone_mu_);
  std::error_code dir_ec;
  // Read only: a link here leads the check astray at worst, never a write.
  const bool kept = fs::is_directory(w.dir, dir_ec) && !fs::is_empty(w.dir, dir_ec);
  std::string def, base_sha;
  RETURN_IF_ERROR(SyncClone(m, cancel, &def, &base_sha, kept ? "" : BaseRef(w.ticket)));
  w.base = "origin/" + def;
  if (kept) return w;
  // The directory and the exclusion, made by the worker's own uid in its sandbox; the exclusion
  // keeps `git add -A` in the Ticket's repository from taking the others as gitlinks.
  const std::string rel = std::string(kOtherRepositories) + "/" + repo;
  static const char* kMake =
      "set -e\n"
      "mkdir -p \"$1\"\n"
      "mkdir -p .git/info\n"
      "grep -qxF \"$2\" .git/info/exclude 2>/dev/null || printf '%s\\n' \"$2\" >> .git/info/exclude\n";
  RETURN_IF_ERROR(Failed("cannot make the directory for " + repo,
                         InSandbox(primary, kMake, {rel, "/" + std::string(kOtherRepositories) + "/"}, false, cancel)));
  if (Status s = MakeTicketRepository(w, base_sha, true, "refs/remotes/origin/" + def, base_sha, cancel); !s.ok()) {
    DiscardHalfMade(m, w);
    return s;
  }
  spdlog::info("workspace prepared ticket={} dir={} branch={} base={} repo={}", w.ticket, w.dir, w.branch, w.base,
               w.repo);
  return w;
}

Result<WorkspaceRecord> Workspaces::Prepare(TicketId ticket, const std::atomic<bool>* cancel, const std::string& branch,
                                            const std::string& repo) {
  ASSIGN_OR_RETURN(const Mirror m, MirrorOf(repo));
  WorkspaceRecord w;
  w.ticket = ticket;
  // The repository by name whenever there is one, so the record still finds its mirror if the
  // home repository changes later.
  w.repo = m.repo.empty() ? options_.repo : m.repo;
  // A Ticket that had a branch keeps it (its pull request is on it), whatever it was named then.
  w.branch = branch.empty() ? BranchFor(ticket) : branch;
  w.dir = DirFor(ticket);
  std::lock_guard<std::mutex> lock(clone_mu_);
  std::string def, base_sha;
  // Prepared before a restart: keep the work in it, and its recorded base. (An empty directory is
  // the mount point a sandboxed prepare command was given and did not fill.) A new one's base is
  // recorded in the mirror (which the worker reads but cannot write) by the fetch's own ref
  // update: what TakeCommits checks the branch against, and what keeps its objects from collection.
  std::error_code dir_ec;
  const bool kept = fs::exists(w.dir) && !fs::is_empty(w.dir, dir_ec);
  RETURN_IF_ERROR(SyncClone(m, cancel, &def, &base_sha, kept ? "" : BaseRef(ticket)));
  w.base = "origin/" + def;
  const std::string origin = "refs/remotes/origin/" + def;
  if (kept) {
    const fs::path dot_git = fs::path(w.dir) / ".git";
    if (fs::is_regular_file(fs::symlink_status(dot_git, dir_ec))) RETURN_IF_ERROR(AdoptOldWorktree(m, w, def, cancel));
    return w;
  }
  if (Status s = MakeTicketRepository(w, base_sha, true, origin, base_sha, cancel); !s.ok()) {
    DiscardHalfMade(m, w);
    return s;
  }
  if (!options_.prepare.empty()) {
    std::string cmd = options_.prepare;
    cmd = Replace(cmd, "{repo}", ShellQuote(m.clone));
    cmd = Replace(cmd, "{remote}", ShellQuote(m.remote));
    cmd = Replace(cmd, "{branch}", ShellQuote(w.branch));
    cmd = Replace(cmd, "{dir}", ShellQuote(w.dir));
    cmd = Replace(cmd, "{base}", ShellQuote(w.base));
    // The team's command runs as a worker's does (sandboxed, built environment), in the Ticket's
    // repository, seeing the mirror and a local remote read-only; not the other Tickets'.
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", cmd};
    spec.cwd = w.dir;
    spec.env = {{"GIT_TERMINAL_PROMPT", "0"}};
    WorkerScope scope = ScopeFor(ticket, w.repo);
    std::error_code ec;
    if (m.remote.find("://") == std::string::npos && fs::exists(m.remote, ec)) scope.readable.push_back(m.remote);
    spec.worker = scope;
    auto r = RunToCompletion(*runner_, spec, clock_, sleeper_, options_.prepare_limit_ms, 20, cancel);
    if (Status s = Failed("prepare command failed", r); !s.ok()) {
      DiscardHalfMade(m, w);
      return s;
    }
  }
  spdlog::info("workspace prepared ticket={} dir={} branch={} base={}{}", ticket, w.dir, w.branch, w.base,
               w.repo.empty() ? "" : " repo=" + w.repo);
  return w;
}

Status Workspaces::Remove(const WorkspaceRecord& w) {
  std::lock_guard<std::mutex> lock(clone_mu_);
  // A repository taken out of the configuration leaves its mirror's refs as they are; the
  // Ticket's directory and sandbox still go.
  auto mirror = MirrorOfRecord(w);
  const std::string clone = mirror.ok() ? mirror->clone : "", verified = mirror.ok() ? mirror->verified : "";
  std::error_code ec;
  if (Nested(w)) {
    // Its files go with the Ticket's directory; the daemon follows no path the worker could bend.
    if (!clone.empty()) (void)Git(clone, {"update-ref", "-d", BaseRef(w.ticket)});
    if (!verified.empty() && fs::exists(fs::path(verified) / "HEAD"))
      (void)Git(verified, {"update-ref", "-d", IncomingRef(w.ticket)});
    spdlog::info("workspace removed ticket={} repo={} branch={}", w.ticket, w.repo, w.branch);
    return Status::Ok();
  }
  const bool old_worktree = fs::is_regular_file(fs::symlink_status(fs::path(w.dir) / ".git", ec));
  // Deleting files runs nothing of the worker's (remove_all removes a link, never its target).
  fs::remove_all(w.dir, ec);
  if (old_worktree && !clone.empty()) {
    (void)Git(clone, {"worktree", "prune"});
    (void)Git(clone, {"branch", "-D", w.branch});
  }
  if (!clone.empty()) {
    (void)Git(clone, {"update-ref", "-d", BaseRef(w.ticket)});
    (void)Git(clone, {"update-ref", "-d", AdoptedRef(w.ticket)});
  }
  if (!verified.empty() && fs::exists(fs::path(verified) / "HEAD")) (void)Git(verified, {"update-ref", "-d", IncomingRef(w.ticket)});
  // The maintenance the turns' fetches leave out (SyncClone, TakeCommits): packing what they
  // brought in, when git's own thresholds say so.
  for (const std::string& repo : {clone, verified})
    if (!repo.empty() && fs::exists(fs::path(repo) / "HEAD")) (void)Git(repo, {"maintenance", "run", "--auto", "--quiet"});
  // The worker's private HOME and TMPDIR (SandboxPolicyFor keeps them in <root>/sandbox).
  fs::remove_all(fs::path(options_.root) / "sandbox" / TicketName(w.ticket), ec);
  spdlog::info("workspace removed ticket={} dir={} branch={}", w.ticket, w.dir, w.branch);
  return Status::Ok();
}

Result<std::string> Workspaces::BaseOf(const WorkspaceRecord& w) {
  ASSIGN_OR_RETURN(const Mirror m, MirrorOfRecord(w));
  if (std::string id = workspace_internal::LooseRef(m.clone, BaseRef(w.ticket)); !id.empty()) return id;
  auto r = Git(m.clone, {"rev-parse", "--verify", "-q", BaseRef(w.ticket) + "^{commit}"});
  if (!r.ok() || r->exit_code != 0)
    return Status::Conflict("the base of " + w.branch + " is not known (prepare the workspace again)");
  return text::Trim(r->out);
}

Result<bool> Workspaces::HasChanges(const WorkspaceRecord& w) {
  ASSIGN_OR_RETURN(std::string base, BaseOf(w));
  auto r = InSandbox(w,
                     "s=$(git status --porcelain) || exit 1\n"
                     "n=$(git rev-list --count \"$1..HEAD\") || exit 1\n"
                     "if [ -n \"$s\" ] || [ \"$n\" != 0 ]; then echo yes; else echo no; fi\n",
                     {base});
  RETURN_IF_ERROR(Failed("git status failed", r));
  return text::Trim(r->out) == "yes";
}

namespace {
// NUL-separated names, as git's -z prints them.
void SplitNul(const std::string& list, std::vector<std::string>* out) {
  for (std::size_t at = 0; at < list.size();) {
    std::size_t end = list.find('\0', at);
    if (end == std::string::npos) end = list.size();
    if (end > at) out->push_back(list.substr(at, end - at));
    at = end + 1;
  }
}
}  // namespace

Result<std::vector<std::string>> Workspaces::ChangedFiles(const WorkspaceRecord& w) {
  ASSIGN_OR_RETURN(std::string base, BaseOf(w));
  // -z: names as they are (no quoting of non-ASCII names), one NUL after each.
  auto r = InSandbox(w, "git diff --name-only -z \"$1\" && git ls-files -z --others --exclude-standard", {base});
  RETURN_IF_ERROR(Failed("git diff failed", r));
  std::vector<std::string> out;
  SplitNul(r->out, &out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status Workspaces::AddFiles(const WorkspaceRecord& w, const std::vector<std::string>& paths) {
  if (paths.empty()) return Status::Ok();
  return Failed("git add failed", InSandbox(w, "git add -f -- \"$@\"", paths));
}

}  // namespace superagent::exec
