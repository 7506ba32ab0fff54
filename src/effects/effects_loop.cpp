#include "superagent/effects.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "superagent/catch_all.h"

namespace superagent {

Effect FilteredEffect(const Effect& effect, SecretFilter* secrets) {
  if (secrets == nullptr) return effect;
  Effect out = effect;
  std::vector<std::string> found;
  if (out.receipt) out.receipt->body = secrets->Redact(out.receipt->body, &found);
  secrets->RedactJson(&out.payload, &found);
  if (found.empty()) return out;
  // Where, as a person finds it again: the kind, the outbox row, the message and the Ticket.
  std::string where = out.kind + " effect=" + std::to_string(out.id);
  if (out.receipt) where += " receipt=" + out.receipt->id;
  std::optional<TicketId> ticket = out.receipt ? out.receipt->ticket : std::nullopt;
  if (!ticket && out.payload.is_object() && out.payload.contains("ticket") && out.payload["ticket"].is_number_integer())
    ticket = out.payload["ticket"].get<TicketId>();
  if (ticket) where += " ticket=" + std::to_string(*ticket);
  secrets->Record("outbox", where, found);
  return out;
}

TimeMs BackoffDelay(bool is_message, int attempt, const EffectsOptions& o) {
  return is_message ? DoublingDelay(o.message_backoff_start_ms, attempt - 1, o.message_backoff_max_ms)
                    : DoublingDelay(o.action_backoff_start_ms, attempt - 1, o.action_backoff_max_ms);
}

EffectsLoop::EffectsLoop(Engine* engine, std::vector<Channel*> channels, Clock* clock, EffectsOptions options,
                         std::uint64_t seed)
    : engine_(engine), channels_(std::move(channels)), clock_(clock), options_(options), rng_(seed),
      loop_({"the effects loop", options_.idle_wait_ms, engine_}, [this]() -> std::optional<TimeMs> {
        Result<int> n = RunOnce();  // a throw is logged and recorded by the loop's guard
        if (!n.ok()) spdlog::error("effects loop error=\"{}\"", n.status().ToString());
        if (n.ok() && *n > 0) return 0;  // more may be due right away
        return std::nullopt;
      }) {}

EffectsLoop::~EffectsLoop() { Stop(); }

Channel* EffectsLoop::ChannelFor(const ClaimedEffect& c) const {
  std::string target = c.effect.receipt ? c.effect.receipt->channel : c.effect.payload.value("channel", "");
  for (Channel* ch : channels_)
    if (ch->Handles(target)) return ch;
  return nullptr;
}

TimeMs EffectsLoop::RetryAt(const ClaimedEffect& c, const Delivery& d) {
  TimeMs delay = BackoffDelay(c.is_message, c.effect.attempts + 1, options_);
  if (options_.jitter > 0) {
    std::uniform_real_distribution<double> factor(1.0 - options_.jitter, 1.0 + options_.jitter);
    delay = static_cast<TimeMs>(static_cast<double>(delay) * factor(rng_));
  }
  // A peer's own instruction (Retry-After, rate-limit reset) wins when it asks for longer.
  delay = std::max(delay, d.retry_after_ms);
  return clock_->NowMs() + delay;
}

Result<int> EffectsLoop::RunOnce() {
  auto claimed = engine_->ClaimDueEffects(options_.batch);
  if (!claimed.ok()) return claimed.status();
  int performed = 0;
  for (const ClaimedEffect& c : *claimed) {
    Delivery d;
    if (loop_.stopping()) {
      // Claimed but not performed: leave it for the next start, which will look before acting.
      d = Delivery::Retry("shutting down before this attempt");
      if (Status s = engine_->RecordDelivery(c.effect.id, d, clock_->NowMs()); !s.ok()) return s;
      continue;
    }
    Channel* channel = ChannelFor(c);
    if (channel == nullptr) {
      d = Delivery::Retry("no channel is configured for " + (c.platform.empty() ? std::string("this target") : c.platform));
    } else {
      // A channel that throws has not said whether the peer got it: retried like any failure
      // whose outcome is unknown, and the next Effects go on.
      Status thrown = CatchAll("delivering effect " + std::to_string(c.effect.id), [&] {
        // The last point before bytes leave for GitHub, Feishu or a panel session: the filter runs
        // here, on every attempt, so a secret learnt after the Effect was stored (an installation
        // token issued since) is still caught, and no Channel can forget it. The outbox rows are
        // not rewritten at enqueue: the store is the daemon's own (data_dir, hidden from workers),
        // every way out of it (this loop, the panel, the log) filters, and one place decides.
        const Effect effect = FilteredEffect(c.effect, options_.secrets);
        d = channel->Perform(effect, c.outcome_unknown);
      });
      if (!thrown.ok()) {
        spdlog::error("effect delivery failed unexpectedly effect={} error=\"{}\"", c.effect.id, thrown.message());
        d = Delivery::Retry(thrown.message());
      }
      ++performed;
    }
    TimeMs retry_at = d.outcome == Delivery::Outcome::kRetry ? RetryAt(c, d) : 0;
    if (Status s = engine_->RecordDelivery(c.effect.id, d, retry_at); !s.ok()) return s;
  }
  return performed;
}

void EffectsLoop::Start() { loop_.Start(); }

void EffectsLoop::Stop() { loop_.Stop(); }

void EffectsLoop::Wake() { loop_.Wake(); }

}  // namespace superagent
