// WorkerPool: the daemon's side of turns that run on other machines (issue 36). A turn offered
// here waits for a worker to claim it; the claim is a lease, which the worker renews with
// heartbeats. A lease not renewed within Options::lease_ms expires and the turn is offered again,
// from the start (its durable point: the Ticket's branch as last verified); a return under an
// expired, withdrawn, unknown or another worker's lease is refused and changes nothing. So
// whatever workers do — die, hang, lose their network, come back late, replay a message — an
// offered turn gets at most one result, and its offerer learns which.
//
// The pool keeps no state on disk: the Assignment a turn belongs to is the durable record, and a
// daemon that restarts re-offers its running Assignments (Engine::RecoverInterruptedWork).
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/domain.h"
#include "superagent/mutex.h"
#include "superagent/process.h"
#include "superagent/status.h"

namespace superagent {
class HttpClient;
}  // namespace superagent

namespace superagent::exec {

// A turn as a worker gets it.
struct OfferedTurn {
  std::int64_t assignment = 0;
  TicketId ticket = 0;
  std::string executor;  // what must run it ("claude-code", "codex", ...): only a worker offering it claims it
  nlohmann::json task;   // the turn's context as data (what a local executor's WorkerTask holds)
  std::string code;      // the Ticket's repository as a git bundle (Workspaces::CodeBundle)
};

// A claimed turn: the lease's id is the worker's proof, on every heartbeat and on the return.
struct Lease {
  std::string id;        // 64 hex digits, from OpenSSL's generator; never reused
  std::int64_t offer = 0;
  int attempt = 1;       // 2 and up: offered again after a lease expired
  OfferedTurn turn;
};

// What a worker hands back at a turn's end.
struct TurnReturn {
  nlohmann::json report;  // the worker's report (ParseReport's shape); null: it made none
  std::string bundle;     // the branch's commits over its base as a git bundle; "": none
};

// How an offer ended, for the offerer.
struct OfferOutcome {
  enum class Kind { kWaiting, kReturned, kWithdrawn };
  Kind kind = Kind::kWaiting;
  TurnReturn returned;      // kReturned
  std::string worker;       // kReturned: who returned it
  int attempts = 0;         // how many leases it took
};

// What a heartbeat tells the worker.
enum class LeaseState {
  kHeld,       // go on
  kWithdrawn,  // stop the turn: its Ticket was stopped, or its time is up (return nothing)
  kLost,       // not yours (expired, unknown, another worker's): abandon it, return nothing
};

// A worker as the pool last saw it (for the panel and /metrics).
struct PoolWorker {
  std::string id;
  std::vector<std::string> executors;
  int slots = 0;
  std::vector<std::string> leases;  // offers it holds: "ticket-N"
  TimeMs last_seen = 0;
};

struct PoolView {
  std::map<std::string, int> queued;      // executor -> turns waiting for a worker
  std::map<std::string, int> free_slots;  // executor -> slots of workers offering it not holding a lease
  std::map<std::string, int> running;     // executor -> turns leased to a worker now
  std::vector<PoolWorker> workers;
};

// One transcript event of a remote turn, as the worker streams it: kind ("assistant",
// "tool_result", "command") and body (the shapes CliProgress::events documents).
using TurnEvent = std::pair<std::string, nlohmann::json>;

class WorkerPool {
 public:
  struct Options {
    TimeMs lease_ms = 30'000;  // a lease not renewed for this long expires
  };
  // `clock` must outlive the pool.
  WorkerPool(Options options, Clock* clock);

  // --- the daemon's side ---
  // Offers `turn` to the workers; returns the offer's id (never reused).
  std::int64_t Offer(OfferedTurn turn);
  // Where offer `offer` stands. Once it is kReturned or kWithdrawn it stays so; the offer is
  // forgotten by Forget. NotFound for an offer the pool does not know.
  Result<OfferOutcome> Outcome(std::int64_t offer) const;
  // Waits (real time, at most `max_wait_ms`) until `offer` is no longer waiting or the pool
  // changes; the caller looks again with Outcome. For the offerer's loop, which also watches its
  // own cancel flag and deadline: never a reason to miss a result, only a bound on the wait.
  void WaitForChange(std::int64_t offer, TimeMs max_wait_ms);
  // Takes the offer back (its Ticket was stopped, its time is up, the daemon stops): a worker
  // holding it hears kWithdrawn at its next heartbeat, and its return is refused. No-op once
  // returned or withdrawn.
  void Withdraw(std::int64_t offer, const std::string& why);
  // Drops a finished offer's record (after the offerer has read its outcome).
  void Forget(std::int64_t offer);

  // --- a worker's side ---
  // Records that `worker` is alive and what it offers (executors, slots).
  void Announce(const std::string& worker, const std::vector<std::string>& executors, int slots);
  // The oldest waiting offer one of `worker`'s executors runs, leased to it; nullopt when there is
  // none or the worker holds as many leases as it has slots. InvalidArgument when the worker has
  // not announced itself.
  Result<std::optional<Lease>> Claim(const std::string& worker);
  // Renews `lease` for `worker` (see LeaseState).
  LeaseState Heartbeat(const std::string& worker, const std::string& lease);
  // Renews `lease` as Heartbeat does and, while it is held, keeps `events` for the offerer
  // (TakeEvents). At most kMaxPendingEvents wait per offer: beyond that the oldest are dropped
  // (an offerer that stopped reading must not let a worker grow the daemon's memory).
  LeaseState Progress(const std::string& worker, const std::string& lease, std::vector<TurnEvent> events);
  static constexpr std::size_t kMaxPendingEvents = 2000;
  // Waits (real time, at most `max_wait_ms`) for the pool to change: a new offer, a lease
  // expiring. For a worker's long-polling claim, which then claims again.
  void WaitForWork(TimeMs max_wait_ms);
  // Hands back the turn under `lease`. Conflict, and nothing is recorded, when the lease is not
  // `worker`'s, has expired, was withdrawn, or was already returned.
  Status Return(const std::string& worker, const std::string& lease, TurnReturn result);

  // The events streamed for `offer` since the last call, oldest first (empty for an unknown offer).
  std::vector<TurnEvent> TakeEvents(std::int64_t offer);

  // --- housekeeping ---
  // Expires every lease not renewed within lease_ms: its turn waits for a worker again. A worker
  // silent for twice that long with no lease is forgotten (it left). Returns how many leases
  // expired.
  int ExpireLeases();
  TimeMs lease_ms() const { return options_.lease_ms; }
  // Forgets `worker` (its credential was revoked): its leases end at once and their turns are
  // offered again; its heartbeats hear kLost and its returns are refused. False when unknown.
  bool Revoke(const std::string& worker);
  PoolView View() const;

 private:
  struct Offered {
    OfferedTurn turn;
    OfferOutcome outcome;
    std::string lease;        // the lease in force, "" when none
    std::string holder;       // its worker
    TimeMs renewed_at = 0;
    std::string withdrawn_why;
    std::vector<TurnEvent> events;  // streamed, not yet taken by the offerer
  };
  struct Worker {
    std::vector<std::string> executors;
    int slots = 0;
    TimeMs last_seen = 0;
  };
  int HeldBy(const std::string& worker) const REQUIRES(mu_);
  Offered* ByLease(const std::string& lease) REQUIRES(mu_);

  const Options options_;
  Clock* const clock_;
  mutable Mutex mu_;
  std::condition_variable_any changed_;
  std::int64_t next_offer_ GUARDED_BY(mu_) = 1;
  std::map<std::int64_t, Offered> offers_ GUARDED_BY(mu_);  // by id: oldest first
  std::map<std::string, Worker> workers_ GUARDED_BY(mu_);
};

// --- The wire (what the worker endpoints carry, JSON both ways; worker_wire.cpp). Every parser
// takes a stranger's JSON: a wrong type, a value out of bounds, a name with a character a name
// may not have are refused with InvalidArgument naming the field; nothing throws. ---

// A worker's announcement: {"worker": name, "executors": [...], "slots": n}. A name is 1 to 64
// of [A-Za-z0-9._-]; executors 1 to 8 distinct names of 1 to 32 of [a-z0-9-]; slots 1 to 64.
struct Announcement {
  std::string worker;
  std::vector<std::string> executors;
  int slots = 0;
};
Result<Announcement> ParseAnnouncement(const nlohmann::json& j);
nlohmann::json AnnouncementToJson(const Announcement& a);

// A lease as the daemon sends it ({"lease","offer","attempt","turn":{...,"code": base64}}) and a
// worker reads it back; ParseLease checks what a worker relies on: a 64-hex-digit id, positive
// numbers, an object task, code that is base64.
nlohmann::json LeaseToJson(const Lease& lease);
Result<Lease> ParseLease(const nlohmann::json& j);

// A heartbeat or a return names its worker and its lease: {"worker", "lease", ...}.
struct LeaseRef {
  std::string worker;
  std::string lease;
};
Result<LeaseRef> ParseLeaseRef(const nlohmann::json& j);
const char* LeaseStateName(LeaseState state);  // "held" | "withdrawn" | "lost"

// A return: {"worker","lease","report": object or null,"bundle": base64 or ""}; the bundle's
// bytes at most `max_bundle_bytes`.
Result<std::pair<LeaseRef, TurnReturn>> ParseTurnReturn(const nlohmann::json& j, std::uint64_t max_bundle_bytes);
nlohmann::json TurnReturnToJson(const LeaseRef& ref, const TurnReturn& r);

// A worker's join: {"worker": name, "join_token": the team's join token (1 to 512 characters)}.
struct Join {
  std::string worker;
  std::string join_token;
};
Result<Join> ParseJoin(const nlohmann::json& j);

// Streamed transcript events: {"worker","lease","events":[{"kind","body"}...]}: at most
// kMaxEventsPerProgress a call, kinds "assistant" | "tool_result" | "command", each body an
// object of at most kMaxEventBytes as JSON.
inline constexpr std::size_t kMaxEventsPerProgress = 200;
inline constexpr std::size_t kMaxEventBytes = 64u << 10;
Result<std::pair<LeaseRef, std::vector<TurnEvent>>> ParseProgress(const nlohmann::json& j);
nlohmann::json ProgressToJson(const LeaseRef& ref, const std::vector<TurnEvent>& events);

// The daemon's worker listener (worker_server.cpp): the pool's calls over HTTP, JSON both ways.
//   POST /workers/v1/join       ParseJoin → {"worker","credential","lease_ms","claim_wait_ms"}; 401 for
//                               a wrong join token. A worker joining again gets a new credential and
//                               its old one dies.
//   POST /workers/v1/claim      an Announcement → {"lease": LeaseToJson or null}; waits up to
//                               claim_wait_ms for a turn its executors run
//   POST /workers/v1/heartbeat  a LeaseRef → {"state": LeaseStateName}
//   POST /workers/v1/events     ParseProgress → {"state"}; renews the lease like a heartbeat
//   POST /workers/v1/return     ParseTurnReturn → {"ok": true}; 409 when the pool refuses it
//   POST /workers/v1/model/...  a CLI's model call, relayed to the gateway (the pass is its key)
// HTTPS when WorkerServerOptions names a certificate. Every call but join and model carries
// "Authorization: Bearer <credential>" and names the
// credential's worker (else 401 / 403). Bodies are sized from Content-Length before they are read
// (411 without one, 413 over the route's limit); a malformed one is a 400 naming the field.
inline constexpr std::size_t kMinJoinTokenBytes = 32;  // a shorter join token is refused at start

struct WorkerServerOptions {
  std::string listen = "127.0.0.1:8790";  // workers.listen, "host:port"; port 0 = any free one (tests)
  std::string join_token;                 // workers.join_token_env's value, >= kMinJoinTokenBytes; "" refuses every join
  std::uint64_t max_bundle_bytes = 100u << 20;  // a returned bundle at most
  TimeMs claim_wait_ms = 10'000;          // how long a claim waits for a turn before answering null
  int gateway_port = 0;                   // the model gateway's loopback port; 0: no model endpoints
  std::size_t max_connections = 512;      // connection threads at most (a waiting claim holds one)
  // HTTPS: a PEM certificate (chain) and its private key (workers.tls_cert_file, tls_key_file);
  // both empty: plain HTTP, for a listener behind a TLS proxy or on a trusted network.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class WorkerServer {
 public:
  // Listens on options.listen. `http` relays model calls to the gateway (may be null when
  // gateway_port is 0). `pool` and `http` must outlive it.
  static Result<std::unique_ptr<WorkerServer>> Start(WorkerServerOptions options, WorkerPool* pool, HttpClient* http);
  // Stops listening; waits for relayed model calls to end.
  virtual ~WorkerServer() = default;
  virtual int port() const = 0;
  // Kills `worker`'s credential and ends its leases (WorkerPool::Revoke); it must join again with
  // the join token. False when no such worker is known.
  virtual bool Revoke(const std::string& worker) = 0;
  // The workers holding a credential now, by name.
  virtual std::vector<std::string> Joined() const = 0;
};

class Executor;
class ModelGateway;
class Workspaces;
class WorkerServices;
struct WorkerTask;

struct RemoteExecutorOptions {
  std::string executor;         // what the workers must run, e.g. "claude-code"; also the Assignment's executor
  TimeMs turn_ms = 30 * 60'000;  // SPEC §6: a turn's time, then it is withdrawn
  TimeMs wait_ms = 200;         // how often (real time) the offerer looks at its cancel flag, deadline and leases
  // A coding CLI's turn: the gateway opens the turn's pass, which the worker's CLI presents at the
  // worker listener's /workers/v1/model/ (the key stays here); null: no pass is sent.
  ModelGateway* gateway = nullptr;
  // The CLI's settings from execution.<cli>, sent with the turn: the worker has its own binary.
  std::string model;
  std::vector<std::string> allowed_commands;
  std::vector<std::string> args;
};

// The turn's context as a worker gets it (OfferedTurn::task): the original request, the
// Mandate's scope, the matched rules, the turn's inputs, AGENTS.md, the branch and its base.
nlohmann::json TaskToJson(const WorkerTask& task);

// An Executor whose turns run on `pool`'s workers. The Ticket's repository (prepared as for a
// local turn) goes with the offer as a bundle, with the prompt made here (CliPrompt: the host
// facts, the Mandate, the team's skills from `services`) and the turn's gateway pass; the
// worker's transcript events are appended to the session as they stream in; its commits come back
// as a bundle and become the repository's HEAD (Workspaces::ApplyBundle), so the turn's end — the
// report's checks, the verified push — is the local one's. A Stop or the daemon stopping (the
// task's cancel flag) and the end of turn_ms withdraw the offer; the worker hears it at its next
// heartbeat. `services` may be null (no prompt skills, no transcript: tests of the pool alone).
// `pool`, `workspaces`, `services` and `clock` must outlive it.
std::unique_ptr<Executor> MakeRemoteExecutor(RemoteExecutorOptions options, WorkerPool* pool, Workspaces* workspaces,
                                             WorkerServices* services, Clock* clock);

// --- The worker's side (`superagent worker`, remote_worker.cpp) ---

struct RemoteWorkerOptions {
  std::string daemon_url;  // the daemon's worker listener, "http(s)://host:port" (worker.yaml daemon_url)
  std::string join_token;  // the team's join token (the value of join_token_env)
  std::string name;        // this worker's name: 1 to 64 of [A-Za-z0-9._-]
  int slots = 1;           // turns at once, 1 to 64
  std::string work_dir;    // where turns' repositories live while they run (removed after)
  struct Executor {
    std::string binary;                 // the CLI's program; "" = its usual name in PATH
    std::vector<std::string> readable;  // shown read-only in the sandbox (the CLI's installation)
  };
  std::map<std::string, Executor> executors;  // the coding CLIs it offers, by executor name
  // The PEM file of the CA that signed the daemon's certificate, when it is not one the system
  // trusts (worker.yaml ca_file; the worker's own client is pointed at it by app/): also shown
  // read-only to each turn's CLI and given to it as NODE_EXTRA_CA_CERTS, added to its own roots,
  // so the CLI reaches the model through the daemon over HTTPS. "" = the system's roots only.
  std::string ca_file;
};

// Runs the worker until *stop: joins with the join token (again whenever the daemon refuses the
// credential), long-polls for turns on `slots` threads, and runs each lease in `runner`'s sandbox
// (a scope of its own, the turn's directory the only writable one). A lease the daemon takes back
// (lost, withdrawn) kills the CLI's tree and returns nothing. InvalidArgument for options it cannot
// run with (no executor, an unknown one). `http`, `runner`, `clock` must outlive it.
Status RunRemoteWorker(RemoteWorkerOptions options, HttpClient* http, ProcessRunner* runner, Clock* clock,
                       Sleeper sleeper, const std::atomic<bool>* stop);

}  // namespace superagent::exec
