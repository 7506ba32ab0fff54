// Gathers /metrics' Snapshot at scrape time: the store through Views (no Engine mutex for the
// big counts), the outbox through the Engine, and the process-wide Runtime.
#pragma once

#include <map>
#include <mutex>
#include <vector>

#include "superagent/metrics.h"
#include "superagent/session.h"
#include "superagent/status.h"
#include "superagent/worker_pool.h"

namespace superagent {
class Engine;
class Views;
}  // namespace superagent

namespace superagent::panel {

// Every Ticket's outcome for /metrics without reading every Ticket at every scrape: a settled
// outcome (merged, closed, answered, stopped, ended) is kept once read, and each scrape reads only
// the Tickets still at work and the new ones. A settled Ticket a person resumes keeps the outcome
// it was counted with, so the counters never go down. Thread-safe (scrapes may overlap).
class TicketOutcomeCache {
 public:
  // The outcome of every Ticket: the settled ones kept, the rest read now.
  Result<std::vector<TicketOutcome>> Read(Views& views);

 private:
  std::mutex mu_;
  std::map<TicketId, TicketOutcome> settled_;
  std::vector<TicketId> unsettled_;  // read again at each scrape
  TicketId next_ = 0;                // every Ticket below it is in settled_ or unsettled_
};

// `slots_configured`: execution.slots. `slots`: the scheduler's live view, or nullopt when
// execution is off (then the store's running Assignments are counted). `pool`: the remote
// workers' pool (issue 36), or nullopt when there is none. The store's error when it cannot be
// read (a scrape never gets zeros made up for a failed read). `now` places the judgement
// window; 0: the system clock. `outcomes` keeps settled Ticket outcomes between scrapes; null:
// every Ticket is read.
Result<metrics::Snapshot> GatherMetrics(Engine& engine, Views& views, int slots_configured, int problem_threshold,
                                std::optional<SlotsView> slots = std::nullopt,
                                const std::optional<exec::PoolView>& pool = std::nullopt, TimeMs now = 0,
                                TicketOutcomeCache* outcomes = nullptr);

}  // namespace superagent::panel
