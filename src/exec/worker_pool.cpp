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

LeaseState WorkerPool::Progress(const std::string& worker, const std::string& lease, std::vector<TurnEvent> events) {
  MutexLock lock(&mu_);
  if (auto w = workers_.find(worker); w != workers_.end()) w->second.last_seen = clock_->NowMs();
  Offered* o = ByLease(lease);
  if (o == nullptr || o->holder != worker) return LeaseState::kLost;
  if (o->outcome.kind == OfferOutcome::Kind::kWithdrawn) return LeaseState::kWithdrawn;
  if (o->outcome.kind != OfferOutcome::Kind::kWaiting) return LeaseState::kLost;
  o->renewed_at = clock_->NowMs();
  for (TurnEvent& e : events) o->events.push_back(std::move(e));
  if (o->events.size() > kMaxPendingEvents) {
    const std::size_t drop = o->events.size() - kMaxPendingEvents;
    o->events.erase(o->events.begin(), o->events.begin() + static_cast<std::ptrdiff_t>(drop));
    spdlog::warn("remote turn events dropped ticket={} worker={} dropped={}", o->turn.ticket, worker, drop);
  }
  if (!events.empty()) changed_.notify_all();
  return LeaseState::kHeld;
}

std::vector<TurnEvent> WorkerPool::TakeEvents(std::int64_t offer) {
  MutexLock lock(&mu_);
  auto it = offers_.find(offer);
  if (it == offers_.end()) return {};
  std::vector<TurnEvent> out;
  out.swap(it->second.events);
  return out;
}

void WorkerPool::WaitForWork(TimeMs max_wait_ms) {
  MutexLock lock(&mu_);
  MutexWaitable w{&mu_};
  changed_.wait_for(w, std::chrono::milliseconds(std::max<TimeMs>(0, max_wait_ms)));
}

bool WorkerPool::Revoke(const std::string& worker) {
  MutexLock lock(&mu_);
  if (workers_.erase(worker) == 0) return false;
  int ended = 0;
  for (auto& [id, o] : offers_) {
    if (o.holder != worker) continue;
    if (o.outcome.kind == OfferOutcome::Kind::kWaiting) {
      o.lease.clear();
      ++ended;
    }
    o.holder.clear();
  }
  spdlog::warn("worker revoked worker={} leases_ended={}; their turns are offered again", worker, ended);
  changed_.notify_all();
  return true;
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
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (now - it->second.last_seen >= 2 * options_.lease_ms && HeldBy(it->first) == 0) {
      spdlog::info("worker gone worker={} silent_ms={}", it->first, now - it->second.last_seen);
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
  if (expired > 0) changed_.notify_all();
  return expired;
}

PoolView WorkerPool::View() const {
  MutexLock lock(&mu_);
  PoolView v;
  for (const auto& [id, o] : offers_)
    if (o.outcome.kind == OfferOutcome::Kind::kWaiting) (o.lease.empty() ? v.queued : v.running)[o.turn.executor] += 1;
  for (const auto& [name, w] : workers_) {
    PoolWorker pw;
    pw.id = name;
    pw.executors = w.executors;
    pw.slots = w.slots;
    pw.last_seen = w.last_seen;
    for (const auto& [id, o] : offers_)
      if (o.holder == name && !o.lease.empty() && o.outcome.kind == OfferOutcome::Kind::kWaiting)
        pw.leases.push_back("ticket-" + std::to_string(o.turn.ticket));
    const int free = std::max(0, w.slots - static_cast<int>(pw.leases.size()));
    for (const std::string& e : w.executors) v.free_slots[e] += free;
    v.workers.push_back(std::move(pw));
  }
  return v;
}

}  // namespace superagent::exec
