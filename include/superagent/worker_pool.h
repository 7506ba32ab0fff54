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
#include "superagent/status.h"

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
  std::map<std::string, int> queued;  // executor -> turns waiting for a worker
  std::vector<PoolWorker> workers;
};

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
  // Hands back the turn under `lease`. Conflict, and nothing is recorded, when the lease is not
  // `worker`'s, has expired, was withdrawn, or was already returned.
  Status Return(const std::string& worker, const std::string& lease, TurnReturn result);

  // --- housekeeping ---
  // Expires every lease not renewed within lease_ms: its turn waits for a worker again. Returns
  // how many expired.
  int ExpireLeases();
  PoolView View() const;

 private:
  struct Offered {
    OfferedTurn turn;
    OfferOutcome outcome;
    std::string lease;        // the lease in force, "" when none
    std::string holder;       // its worker
    TimeMs renewed_at = 0;
    std::string withdrawn_why;
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

class Executor;
class Workspaces;
struct WorkerTask;

struct RemoteExecutorOptions {
  std::string executor;         // what the workers must run, e.g. "claude-code"; also the Assignment's executor
  TimeMs turn_ms = 30 * 60'000;  // SPEC §6: a turn's time, then it is withdrawn
  TimeMs wait_ms = 200;         // how often (real time) the offerer looks at its cancel flag, deadline and leases
};

// The turn's context as a worker gets it (OfferedTurn::task): the original request, the
// Mandate's scope, the matched rules, the turn's inputs, AGENTS.md, the branch and its base.
nlohmann::json TaskToJson(const WorkerTask& task);

// An Executor whose turns run on `pool`'s workers. The Ticket's repository (prepared as for a
// local turn) goes with the offer as a bundle; the worker's commits come back as one and become
// the repository's HEAD (Workspaces::ApplyBundle), so the turn's end — the report's checks, the
// verified push — is the local one's. A Stop or the daemon stopping (the task's cancel flag) and
// the end of turn_ms withdraw the offer; the worker hears it at its next heartbeat. `pool`,
// `workspaces` and `clock` must outlive it.
std::unique_ptr<Executor> MakeRemoteExecutor(RemoteExecutorOptions options, WorkerPool* pool, Workspaces* workspaces,
                                             Clock* clock);

}  // namespace superagent::exec
