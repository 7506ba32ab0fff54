#include "panel/metrics_gather.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "panel/judgement_api.h"
#include "superagent/assign_or_return.h"
#include "superagent/engine.h"
#include "superagent/json_read.h"
#include "superagent/views.h"

namespace superagent::panel {

namespace {
bool Settled(const TicketOutcome& o) { return o.outcome != "live" && o.outcome != "pr_open"; }
}  // namespace

Result<std::vector<TicketOutcome>> TicketOutcomeCache::Read(Views& views) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(auto fresh, views.TicketOutcomesOf(TicketSet{next_, unsettled_}));
  std::vector<TicketOutcome> out;
  out.reserve(settled_.size() + fresh.size());
  unsettled_.clear();
  for (TicketOutcome& o : fresh) {
    next_ = std::max(next_, o.ticket + 1);
    if (!Settled(o)) {
      unsettled_.push_back(o.ticket);
      out.push_back(std::move(o));
    } else {
      settled_.emplace(o.ticket, std::move(o));  // a Ticket settled before keeps its first outcome
    }
  }
  for (const auto& [id, o] : settled_) out.push_back(o);
  return out;
}

Result<metrics::Snapshot> GatherMetrics(Engine& engine, Views& views, int slots_configured, int problem_threshold,
                                std::optional<SlotsView> slots, const std::optional<exec::PoolView>& pool, TimeMs now,
                                TicketOutcomeCache* outcomes) {
  metrics::Snapshot s;
  s.version = SUPERAGENT_VERSION;
  s.policy_version = engine.PolicyVersion();
  s.mode = ModeName(engine.CurrentPolicy().mode);
  ASSIGN_OR_RETURN(s.triggers, views.TriggersBySource());
  ASSIGN_OR_RETURN(StatusCounts c, views.Counts());
  s.decisions = c.decisions;
  s.would_accept = c.would_accept;
  s.tickets = c.tickets;
  s.eval_queue = c.eval_queue;
  s.slots_configured = slots_configured;
  s.slots_busy = slots ? slots->worker_used : c.assignments_running;
  if (slots) s.reserved_slot_busy = slots->reserved_used;
  ASSIGN_OR_RETURN(nlohmann::json effects, views.OutboxCounts());
  s.effects_pending = json_read::IntOr(effects, "pending");
  s.effects_in_flight = json_read::IntOr(effects, "in_flight");
  s.effects_failed = json_read::IntOr(effects, "failed");
  ASSIGN_OR_RETURN(auto problems, views.Problems(problem_threshold));
  s.system_problems = static_cast<std::int64_t>(problems.size());
  ASSIGN_OR_RETURN(auto set_aside, views.SetAside(1000));
  for (const QuarantineItem& q : set_aside) ++s.set_aside[q.kind];
  ASSIGN_OR_RETURN(s.sources, views.SourcesHealth());
  ASSIGN_OR_RETURN(auto cursors, views.Cursors());
  // The GitHub Source saves its rate budget as a cursor with every notifications round.
  for (const CursorRecord& cr : cursors) {
    if (cr.source != "github" || cr.name != "rate") continue;
    nlohmann::json j = nlohmann::json::parse(cr.value, nullptr, false);
    if (!j.is_object()) continue;
    metrics::RateLimit r;
    r.limit = json_read::IntOr(j, "limit", -1);
    r.remaining = json_read::IntOr(j, "remaining", -1);
    r.reset_at = json_read::IntOr(j, "reset_at", 0);
    s.github_rate = r;
  }
  s.rounds = metrics::ProcessRuntime().Rounds();
  s.model_tokens = metrics::ProcessRuntime().ModelUsage();
  s.webhook_refused = {{"github", 0}, {"feishu", 0}};  // shown from the start, so alerts have a series
  for (const auto& [hook, n] : metrics::ProcessRuntime().RefusedDeliveries()) s.webhook_refused[hook] = n;
  s.gateway_refused = {{"pass", 0}, {"budget", 0}, {"path", 0}, {"upstream", 0}};  // stable series for alerts
  for (const auto& [reason, n] : metrics::ProcessRuntime().GatewayRefusals()) s.gateway_refused[reason] = n;
  // Outcomes over all time (counters and histograms only grow); precision over the policy's
  // judgement window, as the panel and `policy report` show it.
  if (outcomes != nullptr) {
    ASSIGN_OR_RETURN(s.ticket_outcomes, outcomes->Read(views));
  } else {
    ASSIGN_OR_RETURN(s.ticket_outcomes, views.TicketOutcomes(0));
  }
  const Policy policy = engine.CurrentPolicy();
  if (now == 0) now = SystemClock()->NowMs();
  ASSIGN_OR_RETURN(s.rule_precision, ReadRulePrecision(views, policy.judgement, now));
  if (pool) {
    metrics::Snapshot::WorkerPool p;
    for (const auto& [executor, n] : pool->queued) p.queued[executor] = n;
    for (const auto& [executor, n] : pool->running) p.running[executor] = n;
    for (const auto& [executor, n] : pool->free_slots) p.free_slots[executor] = n;
    p.connected = static_cast<std::int64_t>(pool->workers.size());
    s.worker_pool = std::move(p);
  }
  return s;
}

}  // namespace superagent::panel
