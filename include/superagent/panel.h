// The attention-first panel (SPEC §9): JSON API under /api/, live updates by Server-Sent Events,
// and the page from web/ (embedded at build time), all on the daemon's cpp-httplib server.
//
// The panel reads through Views (its own read-only connection) and changes state only through
// Engine commands (Stop, answer) and the daemon's policy reload. Security (docs/005-panel.md):
// every request but /healthz, the webhooks, /login and the page's own files needs the panel
// token — a cookie set by /login, or an Authorization header — so a process that cannot read the
// token (a worker) can neither read nor command; loopback-only unless panel.token_env sets a
// fixed password; commands need a same-origin request carrying the CSRF token; every command is
// logged with who and when.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "superagent/session.h"
#include "superagent/status.h"
#include "superagent/worker_pool.h"

namespace httplib { class Server; }

namespace superagent {

class Clock;
class Engine;
class Intercom;
class SecretFilter;
class Views;

namespace panel {

// What a policy reload did, as the "reload policy" button shows it.
struct PolicyReloadResult {
  bool valid = false;                 // the file parsed and validated (or there is no file)
  bool changed = false;               // a new version was made
  std::int64_t version = 0;           // the version now in force
  std::string origin;                 // the policy file, or "embedded default"
  std::vector<std::string> problems;  // "file:line:col: message", when !valid
  std::string error;                  // anything else that failed (e.g. the store)
};

// A piece of the deployment that is off, or has never answered (issue 24): Needs-you shows one
// "Set up" card for each, with the exact key or command that fixes it, so "Nothing needs you"
// means the daemon is really listening.
struct SetupGap {
  std::string piece;  // "sources", "github", "feishu", "model", "execution"
  std::string what;   // what is wrong, in a person's words
  std::string fix;    // the key to set or the command to run
  // Shown only while the Source `piece` has read paths, none of which has ever succeeded, and
  // one has failed: a configured Source failing its first contact. Its problems fold into the card.
  bool until_first_contact = false;
};

struct PanelContext {
  Engine* engine = nullptr;  // commands; must outlive the Panel
  Views* views = nullptr;    // reads; must outlive the Panel
  std::string listen = "127.0.0.1:8080";  // the address the server is bound to ("host:port")
  // The NAME of the variable holding a fixed password (panel.token_env), "" for none; only named
  // in messages. When set, `password` (its value, which app/ reads) is the token, and `token`
  // is ignored.
  std::string password_env;
  std::string password;
  // The panel token (the daemon's data_dir/panel.token). Never shown in a response.
  std::string token;
  int slots_configured = 3;  // execution.slots, shown by /api/status and /metrics
  // Re-reads the policy file and applies it (the daemon's reload); the panel records the command.
  std::function<PolicyReloadResult()> reload_policy;
  // The policy file on disk when it is not the version in force — invalid, or valid but not
  // loaded — with its problems; nullopt when it is in force (or there is no file). Needs-you
  // shows it as a card. Called on request threads.
  std::function<std::optional<PolicyReloadResult>()> policy_on_disk;
  // The path of the policy file in force (the config's policy_file), "" when the embedded
  // defaults are in force: what the proposed policy edits (issue 38) are diffs of. The panel only
  // reads it; a person edits it.
  std::string policy_file;
  // The GitHub repositories served now (github.repos, or what an installation lists), in their
  // order; History offers them as a filter when there are several. Unset: none.
  std::function<std::vector<std::string>()> repositories;
  // What is not set up (the daemon's config, read once at start); see SetupGap.
  std::vector<SetupGap> setup;
  // What is not set up in the policy in force — a Source nobody may ask (issue 34) — asked on
  // each Needs-you read, after `setup`, so a reload shows at once; null: nothing. Called on
  // request threads.
  std::function<std::vector<SetupGap>()> live_setup;
  // The live worker slots; empty function or nullopt when execution is disabled (no git remote),
  // and the panel says so. Called on request threads.
  std::function<std::optional<SlotsView>()> slots;
  // The workers on other machines (issue 36), when execution.placement is not local: the pool as
  // it is now (workers, their slots and leases, last heartbeat; turns waiting per executor), and
  // the revoke of one worker's credential (WorkerServer::Revoke: false for an unknown worker).
  // Unset, or nullopt: there is no pool. Called on request threads.
  std::function<std::optional<exec::PoolView>()> worker_pool;
  std::function<bool(const std::string& worker)> revoke_worker;
  // The communication center (SPEC §10); null: its routes answer 503 and the page hides it.
  Intercom* intercom = nullptr;
  // The outbound filter (issue 33): every JSON response — transcripts, reports, Tickets, errors —
  // passes it before it is written, and Needs-you shows one card once it has replaced anything.
  // Not owned; null only in tests that do not look at secrets (the daemon always sets it).
  SecretFilter* secrets = nullptr;
  // "Now" for Needs-you's answer cards (how long a message has waited); null: the system clock.
  Clock* clock = nullptr;
  int problem_threshold = 3;  // EngineOptions::problem_threshold
  int poll_ms = 500;          // how often a live-update stream checks for changes
};

class Panel {
 public:
  ~Panel();
  // Ends every live-update stream (they return within poll_ms anyway) so the HTTP server can
  // stop promptly. Call before httplib::Server::stop(). Idempotent.
  void Stop();

  struct Impl;
  explicit Panel(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

// Checks the security settings and installs every route (and the server's pre-routing handler)
// on `server`. InvalidArgument, and nothing installed, when `listen` is not "host:port", when
// there is no token (neither context.token nor a password_env), when `listen` is not loopback
// and password_env is not set, or when password_env is set but `password` is empty.
Result<std::unique_ptr<Panel>> InstallRoutes(httplib::Server& server, PanelContext context);

}  // namespace panel
}  // namespace superagent
