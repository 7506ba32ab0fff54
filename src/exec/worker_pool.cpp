#include "superagent/worker_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "superagent/digest.h"

namespace superagent::exec {

WorkerPool::WorkerPool(Options options, Clock* clock) : options_(options), clock_(clock) {}

std::int64_t WorkerPool::Offer(OfferedTurn turn) {
  MutexLock lock(&mu_);
  const std::int64_t id = next_offer_++;
  Offered& o = offers_[id];
  o.turn = std::move(turn);
  spdlog::info("remote turn offered offer={} ticket={} assignment={} executor={}", id, o.turn.ticket,
               o.turn.assignment, o.turn.executor);
  changed_.notify_all();
  return id;
}

Result<OfferOutcome> WorkerPool::Outcome(std::int64_t offer) const {
  MutexLock lock(&mu_);
  auto it = offers_.find(offer);
  if (it == offers_.end()) return Status::NotFound("no remote turn offered as " + std::to_string(offer));
  return it->second.outcome;
}

void WorkerPool::WaitForChange(std::int64_t offer, TimeMs max_wait_ms) {
  MutexLock lock(&mu_);
  auto waiting = [&] {
    mu_.AssertHeld();
    auto it = offers_.find(offer);
    return it != offers_.end() && it->second.outcome.kind == OfferOutcome::Kind::kWaiting;
  };
  if (!waiting()) return;
  MutexWaitable w{&mu_};
  changed_.wait_for(w, std::chrono::milliseconds(std::max<TimeMs>(0, max_wait_ms)));
}

void WorkerPool::Withdraw(std::int64_t offer, const std::string& why) {
  MutexLock lock(&mu_);
  auto it = offers_.find(offer);
  if (it == offers_.end() || it->second.outcome.kind != OfferOutcome::Kind::kWaiting) return;
  Offered& o = it->second;
  o.outcome.kind = OfferOutcome::Kind::kWithdrawn;
  o.withdrawn_why = why;
  // The lease stays known, so its holder hears "withdrawn" (stop) rather than "lost".
  spdlog::info("remote turn withdrawn offer={} ticket={} worker={} why=\"{}\"", offer, o.turn.ticket,
               o.holder.empty() ? "-" : o.holder, why);
  changed_.notify_all();
}

void WorkerPool::Forget(std::int64_t offer) {
  MutexLock lock(&mu_);
  auto it = offers_.find(offer);
  if (it != offers_.end() && it->second.outcome.kind != OfferOutcome::Kind::kWaiting) offers_.erase(it);
}

void WorkerPool::Announce(const std::string& worker, const std::vector<std::string>& executors, int slots) {
  MutexLock lock(&mu_);
  Worker& w = workers_[worker];
  w.executors = executors;
  w.slots = std::max(0, slots);
  w.last_seen = clock_->NowMs();
}

int WorkerPool::HeldBy(const std::string& worker) const {
  int n = 0;
  for (const auto& [id, o] : offers_)
    if (o.holder == worker && !o.lease.empty() && o.outcome.kind == OfferOutcome::Kind::kWaiting) ++n;
  return n;
}

WorkerPool::Offered* WorkerPool::ByLease(const std::string& lease) {
  if (lease.empty()) return nullptr;
  for (auto& [id, o] : offers_)
    if (o.lease == lease) return &o;
  return nullptr;
}

Result<std::optional<Lease>> WorkerPool::Claim(const std::string& worker) {
  MutexLock lock(&mu_);
  auto w = workers_.find(worker);
  if (w == workers_.end()) return Status::InvalidArgument("worker " + worker + " has not announced itself");
  w->second.last_seen = clock_->NowMs();
  if (HeldBy(worker) >= w->second.slots) return std::optional<Lease>();
  for (auto& [id, o] : offers_) {
    if (o.outcome.kind != OfferOutcome::Kind::kWaiting || !o.lease.empty()) continue;
    const auto& offered = w->second.executors;
    if (std::find(offered.begin(), offered.end(), o.turn.executor) == offered.end()) continue;
    Lease lease;
    lease.id = RandomHex(32);
    // No randomness, no lease: an empty id would match nothing, so the turn stays offered.
    if (lease.id.empty()) return Status::Unavailable("no random bytes for a lease");
    o.lease = lease.id;
    o.holder = worker;
    o.renewed_at = clock_->NowMs();
    o.outcome.attempts += 1;
    lease.offer = id;
    lease.attempt = o.outcome.attempts;
    lease.turn = o.turn;
    spdlog::info("remote turn leased offer={} ticket={} worker={} attempt={}", id, o.turn.ticket, worker,
                 lease.attempt);
    return std::optional<Lease>(std::move(lease));
  }
  return std::optional<Lease>();
}

LeaseState WorkerPool::Heartbeat(const std::string& worker, const std::string& lease) {
  MutexLock lock(&mu_);
  if (auto w = workers_.find(worker); w != workers_.end()) w->second.last_seen = clock_->NowMs();
  Offered* o = ByLease(lease);
  if (o == nullptr || o->holder != worker) return LeaseState::kLost;
  if (o->outcome.kind == OfferOutcome::Kind::kWithdrawn) return LeaseState::kWithdrawn;
  if (o->outcome.kind != OfferOutcome::Kind::kWaiting) return LeaseState::kLost;
  o->renewed_at = clock_->NowMs();
  return LeaseState::kHeld;
}

Status WorkerPool::Return(const std::string& worker, const std::string& lease, TurnReturn result) {
  MutexLock lock(&mu_);
  Offered* o = ByLease(lease);
  if (o == nullptr || o->holder != worker)
    return Status::Conflict("the lease is not this worker's (expired, unknown or another worker's): nothing recorded");
  if (o->outcome.kind == OfferOutcome::Kind::kWithdrawn)
    return Status::Conflict("the turn was withdrawn (" + o->withdrawn_why + "): nothing recorded");
  if (o->outcome.kind == OfferOutcome::Kind::kReturned) return Status::Conflict("the turn was already returned");
  o->outcome.kind = OfferOutcome::Kind::kReturned;
  o->outcome.returned = std::move(result);
  o->outcome.worker = worker;
  spdlog::info("remote turn returned ticket={} worker={} attempt={} bundle_bytes={}", o->turn.ticket, worker,
               o->outcome.attempts, o->outcome.returned.bundle.size());
  changed_.notify_all();
  return Status::Ok();
}

int WorkerPool::ExpireLeases() {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  int expired = 0;
  for (auto& [id, o] : offers_) {
    if (o.lease.empty() || o.outcome.kind != OfferOutcome::Kind::kWaiting) continue;
    if (now - o.renewed_at < options_.lease_ms) continue;
    spdlog::warn("remote turn lease expired offer={} ticket={} worker={} silent_ms={}; offered again", id,
                 o.turn.ticket, o.holder, now - o.renewed_at);
    o.lease.clear();
    o.holder.clear();
    ++expired;
  }
  if (expired > 0) changed_.notify_all();
  return expired;
}

PoolView WorkerPool::View() const {
  MutexLock lock(&mu_);
  PoolView v;
  for (const auto& [id, o] : offers_)
    if (o.outcome.kind == OfferOutcome::Kind::kWaiting && o.lease.empty()) v.queued[o.turn.executor] += 1;
  for (const auto& [name, w] : workers_) {
    PoolWorker pw;
    pw.id = name;
    pw.executors = w.executors;
    pw.slots = w.slots;
    pw.last_seen = w.last_seen;
    for (const auto& [id, o] : offers_)
      if (o.holder == name && !o.lease.empty() && o.outcome.kind == OfferOutcome::Kind::kWaiting)
        pw.leases.push_back("ticket-" + std::to_string(o.turn.ticket));
    v.workers.push_back(std::move(pw));
  }
  return v;
}

}  // namespace superagent::exec
