// Workspaces (SPEC §6): one Ticket = one directory = one branch. A worker is an untrusted party
// (issue 33): its directory is a git repository of its own, and the daemon never runs git, or any
// program, in it. Every git command in a Ticket's directory runs in that Ticket's sandbox; what a
// turn hands back is a git bundle (bytes), which the daemon fetches into a repository no worker
// can see, verifies there, and pushes from there.
//
//   <root>/repo.git       a bare mirror of the remote (its branches under refs/remotes/origin/,
//                         the Tickets' own branches left out), fetched before each preparation;
//                         shown read-only to workers, whose repositories borrow its objects
//   <root>/verified.git   the daemon's private repository: bundles are fetched into it, checked
//                         and pushed from it; never shown to a worker
//   <root>/tickets/ticket-<id>   the Ticket's repository and working tree (the worker's)
//
// A team may add its own preparation with a command template, run in the Ticket's sandbox.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "superagent/clock.h"
#include "superagent/domain.h"
#include "superagent/process.h"
#include "superagent/session.h"
#include "superagent/status.h"

namespace superagent::exec {

struct WorkspaceOptions {
  std::string root;    // directory for the local clone and the worktrees (under data_dir)
  std::string remote;  // where the code comes from and branches go: git URL or local path
  // Issue 37: the home repository ("owner/name", lower case; "" when `remote` is not a GitHub
  // repository's), whose mirror is <root>/repo.git as before, and the other repositories a Ticket
  // may work in, each with its remote; their mirrors are <root>/repos/<owner>/<name>/.
  std::string repo;
  std::vector<std::pair<std::string, std::string>> other_remotes;  // {"owner/name", remote}
  // Repositories known only at run time (github.repos: installation): the remote of one not in
  // other_remotes ("" refuses it). Unset: only those configured above. A Ticket that names no
  // repository (a chat's) has no mirror then: there is no home repository.
  std::function<std::string(const std::string& repo)> remote_of;
  // Shell command template run once per Ticket after the daemon has made its repository in
  // {dir}, in the Ticket's sandbox (its directory read-write, the mirror read-only); placeholders
  // {repo} (the mirror), {remote}, {branch}, {dir}, {base} are replaced, shell-quoted.
  std::string prepare;
  TimeMs prepare_limit_ms = 10 * 60'000;  // SPEC §6: prepare is limited to 10 minutes
  TimeMs git_limit_ms = 5 * 60'000;       // one git command (fetch, push, commit)
  // Added to every git command's environment (GitAuthEnv: the GitHub token for an https remote
  // on github.com, given as git config through the environment, never on a command line).
  std::vector<std::pair<std::string, std::string>> git_env;
  // When set, asked before each command that reaches the remote instead of git_env: a GitHub
  // App's token expires hourly (issue 25). An error fails that command unrun.
  std::function<Result<std::vector<std::pair<std::string, std::string>>>()> git_env_source;
  // Added to every git command's environment: the daemon's own values of GitPassThroughNames()
  // that are set, which reaching a remote may need on the team's box. app/ reads them.
  std::vector<std::pair<std::string, std::string>> git_pass_env;
  // This install's id (Views::InstallId): its first 12 characters name the Tickets' branches,
  // "superagent/<install>/ticket-<id>", so two installs on one repository never share one.
  // Empty (tests that build Workspaces alone): "superagent/ticket-<id>".
  std::string install_id;
  std::string author_name = "superagent";
  std::string author_email = "superagent@localhost";
  // What one turn may hand back (VerifyCommits): the bundle's size, the files its branch changes
  // and the size of each of them.
  std::uint64_t max_bundle_bytes = 100ull << 20;
  std::size_t max_changed_files = 10'000;
  std::uint64_t max_file_bytes = 50ull << 20;  // GitHub refuses a file over 100 MB
};

// What a Ticket's commits may change, from its Mandate (WorkerServices decides).
struct CommitRules {
  // Files under .github/workflows/: what CI runs with the repository's secrets, so a model does
  // not rewrite it on its own.
  bool workflows = false;
};

// A Ticket's branch as the daemon took it from the worker and checked it: in verified.git, never
// in the worker's directory.
struct VerifiedCommits {
  int ahead = 0;                    // commits over the base; 0: nothing to push
  std::string tip;                  // the branch's commit (empty when ahead == 0)
  std::vector<std::string> files;   // the repository paths the branch changes against its base
};

// Thread-safe: turns of different Tickets prepare, push and remove at once, and every one of
// those touches the shared clone (fetch, worktree list, refs), which git does not lock for us.
// The environment that lets git authenticate to `remote` with a GitHub token: for an https
// remote on `web_url` (github.com, or a GitHub Enterprise Server's address), an
// `http.extraHeader` set through GIT_CONFIG_* variables (ps never shows it, and no credential
// helper is needed on the team box). Empty for other remotes or no token.
std::vector<std::pair<std::string, std::string>> GitAuthEnv(const std::string& remote, const std::string& token,
                                                            const std::string& web_url = "https://github.com");

// The variables the daemon's own git is given when the daemon has them (WorkspaceOptions::
// git_pass_env): a proxy, a CA bundle, an SSH agent. The runner gives the daemon's commands only
// an allow-list of its environment, so git opts in to these.
const std::vector<std::string>& GitPassThroughNames();

class Workspaces {
 public:
  // `runner` and `clock` must outlive this.
  Workspaces(WorkspaceOptions options, ProcessRunner* runner, Clock* clock, Sleeper sleeper);

  // Makes the Ticket's repository and branch (`branch` when the Ticket already had one, which it
  // keeps; else BranchFor) at the remote's default branch, and remembers that commit as the
  // branch's base. An existing directory is reused as it is (after a restart; a worktree of the
  // layout before issue 33 becomes a repository of its own, its work kept). Unavailable when the
  // remote cannot be read or a command fails or times out, with git's own words.
  // *cancel (optional) becoming true (a Stop, the daemon stopping) kills what runs and returns
  // Unavailable("cancelled").
  // `repo` is the repository the Ticket works in ("" or options().repo: the home one);
  // NotFound when it is none this Workspaces knows, and nothing is made.
  Result<WorkspaceRecord> Prepare(TicketId ticket, const std::atomic<bool>* cancel = nullptr,
                                  const std::string& branch = "", const std::string& repo = "");
  // Issue 37, a Ticket across repositories. The workspace of `repo`, another repository the
  // Ticket's Mandate lists, inside the Ticket's directory (`primary`, Prepare's record) at
  // DirFor(ticket, repo), on the same branch name, at that repository's default branch: the
  // worker sees every repository of its Ticket under one directory, and the Ticket's own
  // repository ignores the others (.git/info/exclude). Made in the Ticket's sandbox, directories
  // included, so a link the worker left on the way leads nowhere outside it. Reused as Prepare
  // reuses; NotFound for a repository this Workspaces does not know, and nothing is made.
  Result<WorkspaceRecord> PrepareAlso(const WorkspaceRecord& primary, const std::string& repo,
                                      const std::atomic<bool>* cancel = nullptr);
  // The repository a workspace is of, as GitHub names it (lower case): its record's, or the home
  // repository's for a record that names none. "" when the remote is not a GitHub repository.
  std::string RepositoryOf(const WorkspaceRecord& workspace) const;
  // The branch a new Ticket's workspace gets: "superagent/<first 12 of the install id>/ticket-<id>".
  std::string BranchFor(TicketId ticket) const;
  // Removes the Ticket's directory and the daemon's refs for it (the pushed branch stays on the
  // remote).
  Status Remove(const WorkspaceRecord& workspace);
  // Whether the directory has anything to offer as a PR: uncommitted changes (untracked files
  // included) or commits over the base. Asked of git in the sandbox: a hint (TakeCommits decides).
  Result<bool> HasChanges(const WorkspaceRecord& workspace);
  // The repository paths the directory changes against the base: committed, staged, modified
  // and untracked (not ignored) files, sorted and distinct. Asked of git in the sandbox: what a
  // worker's own git says, for hints such as the screenshot rule; VerifiedCommits::files is the
  // daemon's own answer.
  Result<std::vector<std::string>> ChangedFiles(const WorkspaceRecord& workspace);
  // Stages `paths` even when .gitignore names them (a report's screenshots must reach the branch),
  // in the sandbox.
  Status AddFiles(const WorkspaceRecord& workspace, const std::vector<std::string>& paths);
  // Takes the branch out of the worker's repository as a bundle (made in the sandbox), fetches
  // it into verified.git and checks it there: it descends from the base, stays within the size
  // and file limits, adds no gitlink and does not touch .gitmodules, has no symlink leading out
  // of the tree, and changes .github/workflows/ only when `rules` allow. InvalidArgument naming
  // the first file refused (the branch is then not kept); Unavailable when git fails. With a
  // `commit_message`, every change in the directory is committed with it first, in the same
  // sandboxed run as the bundle (one sandbox start for both).
  Result<VerifiedCommits> TakeCommits(const WorkspaceRecord& workspace, const CommitRules& rules,
                                      const std::optional<std::string>& commit_message = std::nullopt);
  // Pushes the commits TakeCommits verified last to the Ticket's branch on the remote, from
  // verified.git. It replaces the branch only when the branch is this install's to replace: absent,
  // at the commit this install pushed there last, or contained in what is pushed now (nothing
  // lost); the push is pinned (--force-with-lease) to what this install pushed last, so the usual
  // push is one round trip, and only a refused lease makes it ask the remote what it holds.
  // Otherwise Conflict, in the daemon's words (the branch, its tip, what a person can do), and
  // nothing is pushed. Conflict also when nothing was verified.
  Status Push(const WorkspaceRecord& workspace);
  // Issue 36, a turn on another machine. The Ticket's repository as a git bundle (its branch's
  // HEAD with all history, and origin/<default>), made by git in the Ticket's sandbox: what a
  // remote worker starts from. Unavailable when git fails.
  Result<std::string> CodeBundle(const WorkspaceRecord& workspace);
  // A remote worker's commits (a bundle of its HEAD, made from CodeBundle's) become the Ticket's
  // repository's HEAD, its files checked out: git in the sandbox reads the bundle (a stranger's
  // bytes, given on stdin), so what TakeCommits then verifies and pushes is what the worker made.
  // InvalidArgument over max_bundle_bytes or when git refuses the bundle; nothing changes then.
  Status ApplyBundle(const WorkspaceRecord& workspace, const std::string& bundle);
  // The default branch's name on `repo`'s remote ("": the home one), e.g. "main" (known after
  // the first Prepare there).
  Result<std::string> DefaultBranch(const std::string& repo = "");
  // Whether git can read the home remote (`git ls-remote`), as workers will; Unavailable with
  // git's words otherwise. For `doctor`.
  Status CheckRemote();

  // Where Ticket `ticket`'s directory is (made by Prepare).
  std::string DirFor(TicketId ticket) const;
  // Where the workspace of another repository `repo` ("owner/name") of the Ticket is: inside its
  // directory, at .superagent-repos/<owner>/<name> (PrepareAlso).
  std::string DirFor(TicketId ticket, const std::string& repo) const;
  // The directory, relative to the Ticket's, under which its other repositories are.
  static constexpr const char* kOtherRepositories = ".superagent-repos";
  // What the Ticket's worker commands may see (sandbox.h): its directory read-write, the mirror
  // of `repo` ("": the home repository's) read-only (its repository borrows the mirror's
  // objects); HOME and TMPDIR named after the Ticket.
  WorkerScope ScopeFor(TicketId ticket, const std::string& repo = "") const;
  // … with the mirrors of every repository in `repos` read-only (a Ticket across repositories).
  WorkerScope ScopeFor(TicketId ticket, const std::vector<std::string>& repos) const;

  const WorkspaceOptions& options() const { return options_; }

 private:
  // git run by the daemon, in a repository only the daemon writes (the mirror, verified.git, or a
  // Ticket's git directory it has just made); credentials only for clone/fetch/ls-remote/push, never when `local`.
  Result<RunResult> Git(const std::string& cwd, std::vector<std::string> args, TimeMs limit_ms = 0,
                        const std::atomic<bool>* cancel = nullptr, const std::string& stdin_text = "", bool local = false);
  // `script` (sh, with "$@" = args, `stdin_bytes` on its standard input) run in the Ticket's
  // sandbox, in its directory.
  Result<RunResult> InSandbox(const WorkspaceRecord& w, const std::string& script, std::vector<std::string> args,
                              bool binary_stdout = false, const std::atomic<bool>* cancel = nullptr,
                              const std::string& stdin_bytes = "");
  // The mirror made or fetched, verified.git made. With `default_tip`: the default branch's name and
  // its commit now (read with the refs it drops), also set as the ref `record_tip_as` names if any.
  // One repository's mirror: its remote, the mirror and verified.git.
  struct Mirror {
    std::string repo;  // "" for the home repository
    std::string remote;
    std::string clone;     // the bare mirror workers read
    std::string verified;  // the daemon's private repository, borrowing the mirror's objects
  };
  // The mirror of `repo` ("" or the home repository: <root>/repo.git); NotFound for another.
  Result<Mirror> MirrorOf(const std::string& repo) const;
  Status SyncClone(const Mirror& m, const std::atomic<bool>* cancel, std::string* default_branch = nullptr,
                   std::string* default_tip = nullptr, const std::string& record_tip_as = "");
  Status MakeTicketRepository(const WorkspaceRecord& w, const std::string& start, bool checkout,
                              const std::string& origin_ref, const std::string& base, const std::atomic<bool>* cancel);
  Status DeleteRefs(const std::string& repo, const std::string& prefix);
  Status AdoptOldWorktree(const Mirror& m, const WorkspaceRecord& w, const std::string& default_branch,
                          const std::atomic<bool>* cancel);
  Result<std::string> BaseOf(const WorkspaceRecord& w);
  // Checks base..tip in `verified` (the mirror's verified.git).
  Status Check(const std::string& verified, const std::string& base, const std::string& tip, const CommitRules& rules,
               VerifiedCommits* out);
  void DiscardHalfMade(const Mirror& m, const WorkspaceRecord& w);
  // Whether the record is another repository's workspace inside the Ticket's directory: the
  // daemon then touches none of its path itself (a link the worker made could lead it out).
  bool Nested(const WorkspaceRecord& w) const { return w.dir != DirFor(w.ticket); }
  // The mirror a record's workspace was made from; its repository must still be configured.
  Result<Mirror> MirrorOfRecord(const WorkspaceRecord& w) const { return MirrorOf(w.repo); }

  WorkspaceOptions options_;
  ProcessRunner* runner_;
  Clock* clock_;
  Sleeper sleeper_;
  std::mutex clone_mu_;  // held by every operation that writes the shared clone
};

}  // namespace superagent::exec
