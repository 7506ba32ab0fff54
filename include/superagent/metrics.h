// Metrics: the figures an operator graphs and alerts on, as Prometheus text (GET /metrics on the
// panel's server, behind the panel's auth). Most figures are read from the store at scrape time,
// so they survive restarts; a few exist only in the process (model tokens, poll latency) and
// are counted by the clients that see them, in the process-wide Runtime.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "superagent/clock.h"
#include "superagent/judgement.h"  // TicketOutcome, RulePrecision
#include "superagent/source_state.h"  // SourceHealth

namespace superagent::metrics {

// Model tokens of one purpose ("assessment", "worker", ...) since the process started.
struct ModelTokens {
  std::int64_t calls = 0, prompt = 0, completion = 0, cache_hit = 0;
};

// Polling rounds of one Source since the process started.
struct SourceRounds {
  std::int64_t rounds = 0, failed = 0;
  double seconds_sum = 0, last_seconds = 0;
};

// Counters only the process sees. Thread-safe; cheap enough to call on every model call and
// every polling round.
class Runtime {
 public:
  void AddModelUsage(const std::string& purpose, std::int64_t prompt, std::int64_t completion, std::int64_t cache_hit);
  // One whole polling round of `source`: how long it took and whether every path succeeded.
  void ObserveSourceRound(const std::string& source, TimeMs duration_ms, bool ok);
  // One webhook delivery to `hook` ("github", "feishu") refused for its proof (signature,
  // timestamp, token, encryption): counted, never stored with its text.
  void CountRefusedDelivery(const std::string& hook);
  // One model call the model gateway refused, by `reason` ("pass", "budget", "path",
  // "upstream"): counted, never with the pass or the request.
  void CountGatewayRefusal(const std::string& reason);
  std::map<std::string, ModelTokens> ModelUsage() const;
  std::map<std::string, SourceRounds> Rounds() const;
  std::map<std::string, std::int64_t> RefusedDeliveries() const;
  std::map<std::string, std::int64_t> GatewayRefusals() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, ModelTokens> model_;
  std::map<std::string, SourceRounds> rounds_;
  std::map<std::string, std::int64_t> refused_;
  std::map<std::string, std::int64_t> gateway_refused_;
};

// The one Runtime of this process.
Runtime& ProcessRuntime();

// Runs one polling round of `source` (`round` returns a report with `errors`) and records it in
// the process's poll metrics: its duration, and ok when it had no errors. A round that throws is
// recorded as failed and the exception goes on to the loop's guard.
template <typename RoundFn>
auto ObservedRound(const std::string& source, Clock* clock, RoundFn&& round) -> decltype(round()) {
  const TimeMs started = clock->NowMs();
  try {
    auto report = round();
    ProcessRuntime().ObserveSourceRound(source, clock->NowMs() - started, report.errors.empty());
    return report;
  } catch (...) {
    ProcessRuntime().ObserveSourceRound(source, clock->NowMs() - started, /*ok=*/false);
    throw;
  }
}

// GitHub's primary rate limit as the Source last saw it (its "rate" cursor).
struct RateLimit {
  std::int64_t limit = -1, remaining = -1;  // -1: not known yet
  TimeMs reset_at = 0;
};

// Everything /metrics shows, gathered at scrape time. Absent optionals are left out of the text
// rather than shown as a misleading zero.
struct Snapshot {
  std::string version;
  std::int64_t policy_version = 0;
  std::string mode;
  std::map<std::pair<std::string, std::string>, std::int64_t> triggers;  // (source, intake outcome) → count
  std::map<std::string, std::int64_t> decisions;                         // by outcome
  std::int64_t would_accept = 0;
  std::map<std::string, std::int64_t> tickets;  // by stage; missing stages are shown as 0
  std::int64_t eval_queue = 0;
  int slots_configured = 0;
  std::int64_t slots_busy = 0;  // worker slots held (a Ticket's background jobs hold one too)
  std::optional<bool> reserved_slot_busy;  // the slot kept for people; absent: execution is off
  std::int64_t effects_pending = 0, effects_in_flight = 0, effects_failed = 0;
  std::int64_t system_problems = 0;
  std::map<std::string, std::int64_t> set_aside;  // quarantined items by kind (effect, eval, turn)
  std::vector<SourceHealth> sources;
  std::map<std::string, SourceRounds> rounds;
  std::optional<RateLimit> github_rate;
  std::map<std::string, ModelTokens> model_tokens;
  std::map<std::string, std::int64_t> webhook_refused;  // by hook, since the process started
  // Occasions the outbound filter replaced a secret, by path (outbox, panel, log), since the
  // process started (SecretFilter::Counts).
  std::map<std::string, std::int64_t> secrets_redacted;
  // Model calls the model gateway refused, by reason, since the process started.
  std::map<std::string, std::int64_t> gateway_refused;
  // The remote workers' pool (issue 36), when execution.placement is not local; absent: there is
  // no pool, and its families are left out (as the reserved slot's is when execution is off).
  struct WorkerPool {
    // By executor: turns waiting for a worker, turns leased to one now, slots of workers offering
    // it that hold no lease. Every executor named in any of the three is shown in all three.
    std::map<std::string, std::int64_t> queued, running, free_slots;
    std::int64_t connected = 0;  // workers the pool knows (PoolView::workers)
  };
  std::optional<WorkerPool> worker_pool;
  // Every Ticket's outcome (issue 38 §4), rendered as counters and histograms labelled by rule,
  // executor and outcome. Read from the store: they survive restarts.
  std::vector<TicketOutcome> ticket_outcomes;
  // Each rule's (and explicit path's) verdict counts and precision over the policy's judgement
  // window (PrecisionByRule).
  std::vector<RulePrecision> rule_precision;
};

// Prometheus text exposition format 0.0.4: HELP and TYPE for every family, label values escaped,
// families in a stable order.
std::string RenderPrometheus(const Snapshot& s);

// The content type /metrics answers with.
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace superagent::metrics
