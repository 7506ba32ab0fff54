// Workspaces (SPEC §6): one Ticket = one directory = one branch. By default a `git worktree` of a
// new branch, made from the default branch of a local clone under data_dir that is kept up to
// date from the configured remote (any git URL or local path); branches are pushed back there.
// A team may replace the preparation with its own command template.
#pragma once

#include <functional>
#include <mutex>
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
  // Shell command template run once per Ticket instead of the built-in worktree; placeholders
  // {repo} (the local clone), {remote}, {branch}, {dir}, {base} are replaced, shell-quoted.
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
  std::string author_name = "superagent";
  std::string author_email = "superagent@localhost";
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

  // Makes the Ticket's directory and branch ("superagent/ticket-<id>"). An existing directory
  // is reused as it is (after a restart). Unavailable when the remote cannot be read or the
  // command fails or times out, with git's own words.
  // *cancel (optional) becoming true (a Stop, the daemon stopping) kills what runs and returns
  // Unavailable("cancelled").
  Result<WorkspaceRecord> Prepare(TicketId ticket, const std::atomic<bool>* cancel = nullptr);
  // Removes the worktree and deletes the local branch (the pushed one stays on the remote).
  Status Remove(const WorkspaceRecord& workspace);
  // Commits every change in the directory; false when there was nothing to commit.
  Result<bool> CommitAll(const WorkspaceRecord& workspace, const std::string& message);
  // Commits on the branch that `base` does not have.
  Result<int> CommitsAhead(const WorkspaceRecord& workspace);
  // Whether the directory has anything to offer as a PR: uncommitted changes (untracked files
  // included) or commits over `base`.
  Result<bool> HasChanges(const WorkspaceRecord& workspace);
  // The repository paths the branch changes: committed since it left `base`, staged, modified
  // and untracked (not ignored) files, sorted and distinct.
  Result<std::vector<std::string>> ChangedFiles(const WorkspaceRecord& workspace);
  // Stages `paths` even when .gitignore names them (a report's screenshots must reach the branch).
  Status AddFiles(const WorkspaceRecord& workspace, const std::vector<std::string>& paths);
  // Pushes the branch to the remote (forced: the branch belongs to this Ticket alone).
  Status Push(const WorkspaceRecord& workspace);
  // The default branch's name on the remote, e.g. "main" (known after the first Prepare).
  Result<std::string> DefaultBranch();
  // Whether git can read the remote (`git ls-remote`), as workers will; Unavailable with git's
  // words otherwise. For `doctor`.
  Status CheckRemote();

  // Where Ticket `ticket`'s directory is (made by Prepare).
  std::string DirFor(TicketId ticket) const;
  // What the Ticket's worker commands may see (sandbox.h): its directory read-write, the shared
  // clone read-only; HOME and TMPDIR named after the Ticket.
  WorkerScope ScopeFor(TicketId ticket) const;

  const WorkspaceOptions& options() const { return options_; }

 private:
  Result<RunResult> Git(const std::string& cwd, std::vector<std::string> args, TimeMs limit_ms = 0,
                        const std::atomic<bool>* cancel = nullptr);
  Status SyncClone(const std::atomic<bool>* cancel);
  std::vector<std::string> WorktreeArgs(const WorkspaceRecord& w) const;
  void DiscardHalfMade(const std::string& dir);
  std::string ClonePath() const;

  WorkspaceOptions options_;
  ProcessRunner* runner_;
  Clock* clock_;
  Sleeper sleeper_;
  std::mutex clone_mu_;  // held by every operation that writes the shared clone
};

}  // namespace superagent::exec
