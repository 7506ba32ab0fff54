// Sandbox: what a worker's command can see and carry (SPEC §6 "workers hold no credential",
// issue 19). A worker runs commands a language model chose after reading strangers' text, so
// each of them gets
//   - an environment BUILT from an allow-list, never the daemon's own (which holds the GitHub
//     token, the model key, the webhook and panel secrets), and
//   - where the host supports it, a bubblewrap (`bwrap`) sandbox: its Ticket's worktree and a
//     private HOME and TMPDIR read-write, the system read-only, its own /proc and /dev, and
//     nothing else — not data_dir (database, other worktrees, transcripts), not the config and
//     policy directory, not the secrets file, not the daemon's process.
// The pieces here are plain functions of their inputs, so what a sandbox contains is tested
// without starting anything; the ProcessRunner (process.h) applies them when it spawns.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "superagent/status.h"

namespace superagent::exec {

// The daemon-wide rules for worker commands, from the config (execution.sandbox, .network,
// .env) and the daemon's own paths.
struct SandboxPolicy {
  bool enabled = false;        // run worker commands under bwrap (decided by DecideSandbox)
  std::string bwrap = "bwrap";  // the program, looked up in PATH
  bool network = true;          // false: a network namespace of its own (only loopback, and empty)
  // execution.env: names of daemon variables a team passes to workers on purpose.
  std::vector<std::string> pass_env;
  // Paths never visible inside, even where they lie below a directory the sandbox shows
  // read-only (the secrets file /etc/superagent/secrets.env below /etc, a config directory
  // below /etc or /opt). Paths outside the shown directories are invisible anyway.
  std::vector<std::string> hidden;
  // Where each scope's private HOME and TMPDIR are made: <state_dir>/<scope name>/{home,tmp}.
  // "" = <system temp directory>/superagent-workers-<uid>.
  std::string state_dir;
  // The uid and gid a daemon run as root runs its workers' commands as (issue 33): nobody and
  // nogroup. Never root: a worker that is uid 0 — even without capabilities, even renamed by a
  // user namespace that maps it onto root — owns every root file it can see (the host's SSH and
  // TLS keys below /etc, a root-only file anywhere it is shown) and may read and write them.
  // A daemon run as any other user runs them as itself (it has no other uid to give).
  int root_worker_uid = 65534;
  int root_worker_gid = 65534;
};

// The uid and gid a worker command under `policy` runs as when it is not the daemon's own:
// policy.root_worker_uid/gid when the sandbox is on and this process is root; nullopt otherwise.
std::optional<std::pair<int, int>> WorkerIds(const SandboxPolicy& policy);

// One worker command's place, set by the caller that knows it (a Ticket's shells, its prepare
// command). A ProcessSpec without one is the daemon's own command (git fetch/commit/push).
struct WorkerScope {
  std::string name;                   // names the private HOME and TMPDIR, e.g. "ticket-7"
  std::vector<std::string> writable;  // shown read-write at the same path (the worktree)
  std::vector<std::string> readable;  // shown read-only at the same path (the shared git clone)
};

// The environment of a daemon-internal command: the allow-list below taken from `daemon_env`,
// plus HOME (the daemon's own git reads its ~/.gitconfig), then `extra` (which wins). "K=V"
// strings, sorted.
std::vector<std::string> DaemonCommandEnv(const std::map<std::string, std::string>& daemon_env,
                                          const std::vector<std::pair<std::string, std::string>>& extra);

// The environment of a worker command: PATH (a default when the daemon has none), LANG,
// LANGUAGE, LC_*, TERM and TZ from `daemon_env`; HOME=`home`, TMPDIR=`tmp`; the variables
// `policy.pass_env` names (when set in `daemon_env`); then `extra` (which wins). Nothing else of
// the daemon's reaches it. When the worker runs under a uid of its own (WorkerIds), git inside
// is told safe.directory=* (appended to any GIT_CONFIG_COUNT in `extra`): the worktree and clone
// it works in are the daemon's, which git would otherwise refuse as "dubious ownership".
// "K=V" strings, sorted.
std::vector<std::string> WorkerEnv(const SandboxPolicy& policy, const std::map<std::string, std::string>& daemon_env,
                                   const std::string& home, const std::string& tmp,
                                   const std::vector<std::pair<std::string, std::string>>& extra);

// The argv that runs `argv` in the sandbox `policy` and `scope` describe, in directory `cwd`
// (which should be one of scope.writable/readable; "" = the private HOME), with `home` and `tmp`
// as the private HOME and TMPDIR (TMPDIR is also mounted at /tmp). Shown: /usr, /bin, /sbin,
// /lib*, /etc and /opt read-only (minus policy.hidden), a new /proc in a new pid namespace, a
// minimal /dev, the scope's directories; with policy.network false a new network namespace.
// Run by root, the command runs as WorkerIds' uid and gid (bwrap keeps only the capabilities to
// switch, and setpriv switches, empties every capability set and the supplementary groups before
// the command starts; the mount points' parents bwrap makes 0700 are opened to 0755 so that uid
// can walk to its directories); otherwise every capability is dropped inside.
// The command runs in a new session (no terminal to inject keystrokes into) and dies with the
// bwrap process that starts it, so killing the spawned process group, or the cgroup, kills the
// whole tree (the pid namespace goes with its first process).
// Reads the file system only to tell a symlinked /bin from a directory and to skip what does
// not exist; deterministic for a given host.
std::vector<std::string> SandboxArgv(const SandboxPolicy& policy, const WorkerScope& scope, const std::string& home,
                                     const std::string& tmp, const std::string& cwd,
                                     const std::vector<std::string>& argv);

// Why a worker command under `policy` cannot see the host's `path` (a program, a script it reads),
// or "" when it can: it must lie below a system directory SandboxArgv shows read-only and below
// none of `policy.hidden`, both as written and with its links resolved. What a Ticket's scope
// shows (its own directory, a private HOME) is not counted: those hold nothing of the host's.
// Reads the file system only to resolve links; the answer is the sandbox's, whether or not it
// is enabled.
std::string SandboxHides(const SandboxPolicy& policy, const std::string& path);

// Lets the worker uid of `policy` (WorkerIds; nothing to do without one) use `scope`: read and
// write `home`, `tmp` and scope.writable, read scope.readable — by POSIX ACL entries for that uid
// on every directory and regular file below them (and default entries on directories, so what
// the daemon adds later is the worker's too). Owners and modes stay as they are, so the daemon's
// own git still sees its repositories as its own; files the worker creates are the worker uid's.
// Only directories below state_dir's parent (data_dir/work) besides home and tmp. Never follows a
// symbolic link (a worker's link to /etc/shadow stays a link), never leaves the
// file system it starts on. An error (a file system without ACLs) says what to do.
Status GrantWorkerAccess(const SandboxPolicy& policy, const WorkerScope& scope, const std::string& home,
                         const std::string& tmp);

// <state_dir>/<scope name>/home and …/tmp, for `scope` under `policy`. The name is reduced to
// [A-Za-z0-9._-] so it can never leave state_dir.
std::pair<std::string, std::string> ScopeDirs(const SandboxPolicy& policy, const WorkerScope& scope);

// Whether this host can run the sandbox `policy` describes (bwrap installed, namespaces
// allowed): it starts `true` in one, once. `detail` says what was found, or why not and how to
// fix it.
struct SandboxSupport {
  bool supported = false;
  std::string detail;
};
SandboxSupport ProbeSandbox(const SandboxPolicy& policy);

// execution.sandbox ("on" | "off") against what the host supports.
struct SandboxDecision {
  bool enabled = false;
  std::string detail;  // for the start-up log and `doctor`: which mode and why
};
// InvalidArgument (the daemon refuses to start) for "on" on a host that cannot sandbox, with the
// fix in the message: running workers without a sandbox takes an explicit "off".
Result<SandboxDecision> DecideSandbox(const std::string& mode, const SandboxSupport& support);

// What to do about a host that cannot sandbox (for messages).
std::string SandboxFix();

}  // namespace superagent::exec
