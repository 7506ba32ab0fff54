#include "panel/metrics_gather.h"

#include <nlohmann/json.hpp>

#include "superagent/engine.h"
#include "superagent/views.h"

namespace superagent::panel {

metrics::Snapshot GatherMetrics(Engine& engine, Views& views, const Config& config, int problem_threshold,
                                std::optional<SlotsView> slots) {
  metrics::Snapshot s;
  s.version = SUPERAGENT_VERSION;
  s.policy_version = engine.PolicyVersion();
  s.mode = ModeName(engine.CurrentPolicy().mode);
  s.triggers = views.TriggersBySource();
  StatusCounts c = views.Counts();
  s.decisions = c.decisions;
  s.would_accept = c.would_accept;
  s.tickets = c.tickets;
  s.eval_queue = c.eval_queue;
  s.slots_configured = config.execution.slots;
  s.slots_busy = slots ? slots->worker_used : c.assignments_running;
  if (slots) s.reserved_slot_busy = slots->reserved_used;
  nlohmann::json effects = engine.OutboxCounts();
  s.effects_pending = effects.value("pending", std::int64_t{0});
  s.effects_in_flight = effects.value("in_flight", std::int64_t{0});
  s.effects_failed = effects.value("failed", std::int64_t{0});
  s.system_problems = static_cast<std::int64_t>(views.Problems(problem_threshold).size());
  for (const QuarantineItem& q : views.SetAside(1000)) ++s.set_aside[q.kind];
  s.sources = views.SourcesHealth();
  // The GitHub Source saves its rate budget as a cursor with every notifications round.
  for (const CursorRecord& cr : views.Cursors()) {
    if (cr.source != "github" || cr.name != "rate") continue;
    nlohmann::json j = nlohmann::json::parse(cr.value, nullptr, false);
    if (!j.is_object()) continue;
    metrics::RateLimit r;
    r.limit = j.value("limit", std::int64_t{-1});
    r.remaining = j.value("remaining", std::int64_t{-1});
    r.reset_at = j.value("reset_at", std::int64_t{0});
    s.github_rate = r;
  }
  s.rounds = metrics::ProcessRuntime().Rounds();
  s.model_tokens = metrics::ProcessRuntime().ModelUsage();
  s.webhook_refused = {{"github", 0}, {"feishu", 0}};  // shown from the start, so alerts have a series
  for (const auto& [hook, n] : metrics::ProcessRuntime().RefusedDeliveries()) s.webhook_refused[hook] = n;
  return s;
}

}  // namespace superagent::panel
