// Gathers /metrics' Snapshot at scrape time: the store through Views (no Engine mutex for the
// big counts), the outbox through the Engine, and the process-wide Runtime.
#pragma once

#include "superagent/metrics.h"
#include "superagent/session.h"
#include "superagent/status.h"
#include "superagent/worker_pool.h"

namespace superagent {
class Engine;
class Views;
}  // namespace superagent

namespace superagent::panel {

// `slots_configured`: execution.slots. `slots`: the scheduler's live view, or nullopt when
// execution is off (then the store's running Assignments are counted). `pool`: the remote
// workers' pool (issue 36), or nullopt when there is none. The store's error when it cannot be
// read (a scrape never gets zeros made up for a failed read). `now` places the judgement
// window; 0: the system clock.
Result<metrics::Snapshot> GatherMetrics(Engine& engine, Views& views, int slots_configured, int problem_threshold,
                                std::optional<SlotsView> slots = std::nullopt,
                                const std::optional<exec::PoolView>& pool = std::nullopt, TimeMs now = 0);

}  // namespace superagent::panel
