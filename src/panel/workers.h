// The remote workers' pool as the panel shows it (issue 36): GET /api/workers' body, what the
// live-update stream watches of it, and Needs-you's card for turns that wait for an executor no
// connected worker offers. Every name and executor in the pool is a stranger's text (a worker
// names itself); the page shows it as text only.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/mutex.h"
#include "superagent/worker_pool.h"

namespace superagent::panel {

// A worker's name as a worker may give it (ParseAnnouncement): 1 to 64 of [A-Za-z0-9._-].
bool IsWorkerName(const std::string& name);

// GET /api/workers: {"enabled": false} without a pool; else {"enabled": true, "queued", "running",
// "free_slots" (executor → n), "workers": [{id, executors, slots, leases, last_seen, last_seen_ms,
// seconds_since_seen}]}, the heartbeat ages taken at `now`.
nlohmann::json WorkersJson(const std::optional<exec::PoolView>& pool, TimeMs now);

// What the page shows of the pool, less the heartbeat times (the page ages those itself): it
// changes when a worker joins, leaves or changes its offer, a lease is taken or ends, or a turn
// queues. The live-update stream sends a change when it does; a heartbeat alone changes nothing.
std::string PoolFingerprint(const std::optional<exec::PoolView>& pool);

// How long turns may wait for an executor no connected worker offers before Needs-you shows a
// card: longer than workers take to join again after a daemon restart or a network blip.
inline constexpr TimeMs kUnservedAfterMs = 60'000;

// Watches for turns waiting for an executor that no connected worker offers (placement remote
// with no worker up, or none offering that CLI): they would wait for ever, and nothing else
// tells a person. Thread-safe.
class UnservedWatch {
 public:
  // The executors whose turns have been waiting, with no connected worker offering them, since
  // at least kUnservedAfterMs before `now` (as far as this panel has seen: its stream looks every
  // poll_ms while a page is open), each with when the panel first saw it. Empty without a pool.
  std::map<std::string, TimeMs> Update(const std::optional<exec::PoolView>& pool, TimeMs now);

 private:
  Mutex mu_;
  std::map<std::string, TimeMs> since_ GUARDED_BY(mu_);
};

// Needs-you's card for `unserved` (UnservedWatch::Update): {what, fix, since, executors:
// [{executor, queued, since}]}; null when `unserved` is empty.
nlohmann::json UnservedCardJson(const std::map<std::string, TimeMs>& unserved, const exec::PoolView& pool);

}  // namespace superagent::panel
