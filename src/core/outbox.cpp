// The outbox (SPEC §8): the Engine tells the outside world only by enqueueing — a message (Send:
// Receipt + Effect) or an external action (EnqueueAction), each one transaction with an idempotency
// key, so a repeat is harmless. The Effects loop claims and performs them; this records what
// happened (ClaimDueEffects, RecordDelivery).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "core/engine_internal.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

std::string PlatformOf(const std::string& channel) { return channel.substr(0, channel.find(':')); }

std::string ProblemKind(const std::string& kind, const std::string& platform) {
  return "effect:" + kind + ":" + platform;
}

}  // namespace

Status Engine::Send(const MessageSpec& message) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(SendLocked(message, now));
  return tx->Commit();
}

Status Engine::SendLocked(const MessageSpec& message_in, TimeMs now) {
  MessageSpec message = message_in;
  message.body = text::Repair(message.body);
  if (message.id.empty()) return Status::InvalidArgument("message id is required (it is the idempotency key)");
  if (message.body.empty()) return Status::InvalidArgument("message body is empty");
  ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(message.thread));
  if (!channel) return Status::InvalidArgument("thread " + message.thread + " is unknown");
  if (std::string why = TooLong(*channel, message.body, options_); !why.empty()) return Status::InvalidArgument(why);
  Receipt r;
  r.id = message.id;
  r.ticket = message.ticket;
  r.thread = message.thread;
  r.channel = *channel;
  r.kind = message.kind;
  r.body = message.body;
  r.created_at = now;
  auto inserted = store_->InsertReceipt(r);
  if (!inserted.ok()) return inserted.status();
  if (*inserted) RETURN_IF_ERROR(store_->InsertEffect(r.id, "post_message", json{{"receipt", r.id}}.dump(), now));
  return Status::Ok();
}

Result<std::vector<ClaimedEffect>> Engine::ClaimDueEffects(int limit) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  std::vector<ClaimedEffect> claimed;
  // Look further than `limit`: blocked effects (ordering, disabled Source) must not starve others.
  ASSIGN_OR_RETURN(auto due, store_->DueEffects(now, limit * 4 + 16));
  for (const store::Store::EffectRow& row : due) {
    if (static_cast<int>(claimed.size()) >= limit) break;
    ClaimedEffect c;
    c.effect.id = row.id;
    c.effect.kind = row.kind;
    c.effect.payload = json::parse(row.payload, nullptr, false);
    c.effect.attempts = row.attempts;
    c.is_message = row.kind_class == "message";
    std::string channel = c.effect.payload.value("channel", "");
    if (!row.receipt_id.empty()) {
      ASSIGN_OR_RETURN(auto receipt, store_->GetReceipt(row.receipt_id));
      if (!receipt || receipt->status != "pending") {
        RETURN_IF_ERROR(store_->FinishEffect(row.id, "abandoned", "receipt is no longer pending", ""));
        continue;
      }
      channel = receipt->channel;
      // Cancel what can no longer be delivered, with the reason recorded.
      std::string cancel;
      ASSIGN_OR_RETURN(bool deleted, store_->ThreadDeleted(receipt->thread));
      if (deleted) cancel = "the discussion was deleted";
      if (receipt->ticket) {
        ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(*receipt->ticket));
        if (m && m->ended_as == "withdrawn") cancel = "the ticket was stopped";
      }
      if (!cancel.empty()) {
        RETURN_IF_ERROR(store_->FinishEffect(row.id, "abandoned", cancel, ""));
        RETURN_IF_ERROR(store_->SetReceiptStatus(receipt->id, "abandoned", "", now));
        spdlog::info("message cancelled receipt={} reason=\"{}\"", receipt->id, cancel);
        continue;
      }
      ASSIGN_OR_RETURN(bool earlier, store_->EarlierReceiptPending(receipt->id));
      if (earlier) continue;  // an acknowledgement goes first
      if (receipt->ticket && receipt->kind == MessageKind::kResult) {
        // A result waits for its Ticket's pull request, so it can say where the work is (pulls.cpp).
        ASSIGN_OR_RETURN(bool pr_pending, store_->ActionPendingFor(*receipt->ticket, "open_pull_request"));
        if (pr_pending) continue;
      }
      c.effect.receipt = *receipt;
      // Rows written before text was repaired at intake may hold invalid UTF-8; a channel that
      // dumps it into a request would throw at every start.
      c.effect.receipt->body = text::Repair(c.effect.receipt->body);
    }
    c.platform = PlatformOf(channel);
    if (!c.platform.empty()) {
      ASSIGN_OR_RETURN(bool enabled, store_->SourceEnabled(c.platform));
      if (!enabled) continue;  // waits, not lost
    }
    // In flight before (a crash between send and record) or tried before (a timeout may have
    // delivered): the channel must look before acting again.
    c.outcome_unknown = row.started_at.has_value() || row.attempts > 0;
    RETURN_IF_ERROR(store_->MarkEffectInFlight(row.id, now, c.outcome_unknown));
    claimed.push_back(std::move(c));
  }
  RETURN_IF_ERROR(tx->Commit());
  return claimed;
}

Status Engine::RecordDelivery(std::int64_t effect_id, const Delivery& d, TimeMs retry_at) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto row, store_->GetEffect(effect_id));
  if (!row) return Status::NotFound("effect " + std::to_string(effect_id) + " does not exist");
  if (row->status != "pending") return Status::Conflict("effect " + std::to_string(effect_id) + " is " + row->status);
  std::optional<Receipt> receipt;
  if (!row->receipt_id.empty()) {
    ASSIGN_OR_RETURN(receipt, store_->GetReceipt(row->receipt_id));
  }
  json payload = json::parse(row->payload, nullptr, false);
  const std::string platform = PlatformOf(receipt ? receipt->channel : payload.value("channel", ""));
  const std::string problem = ProblemKind(row->kind, platform);
  std::string what = receipt ? "receipt=" + receipt->id : "effect=" + std::to_string(effect_id);
  const std::string item = std::to_string(effect_id);

  switch (d.outcome) {
    case Delivery::Outcome::kDone:
      RETURN_IF_ERROR(store_->FinishEffect(effect_id, "done", "", d.external_id));
      RETURN_IF_ERROR(PullDeliveredLocked(row->kind, payload, d, now));
      if (receipt) RETURN_IF_ERROR(store_->SetReceiptStatus(receipt->id, "sent", d.external_id, now));
      RETURN_IF_ERROR(store_->ClearFailures(problem, now));
      RETURN_IF_ERROR(ClearedLocked(kQuarantineEffect, item));
      break;
    case Delivery::Outcome::kRetry: {
      RETURN_IF_ERROR(store_->RescheduleEffect(effect_id, retry_at, d.error));
      auto n = store_->CountFailure(problem, row->kind + " on " + platform + " failing: " + d.error, now);
      if (!n.ok()) return n.status();
      if (*n == options_.problem_threshold)
        spdlog::error("system problem kind={} failures={} error=\"{}\"", problem, *n, d.error);
      auto q = ChargeLocked(kQuarantineEffect, item, d.error, false, now);
      if (!q.ok()) return q.status();
      // Poison, not an outage: the peer took some other delivery of this kind since this one began
      // failing this way (the kind's own count is shorter). When everything fails, nothing is set
      // aside; the system problem above says the peer is down.
      if (DueForQuarantine(*q) && *n < q->failures) RETURN_IF_ERROR(SetAsideLocked(*q, now));
      break;
    }
    case Delivery::Outcome::kFailed: {
      RETURN_IF_ERROR(store_->FinishEffect(effect_id, "failed", d.error, ""));
      RETURN_IF_ERROR(PullDeliveredLocked(row->kind, payload, d, now));
      if (receipt) RETURN_IF_ERROR(store_->SetReceiptStatus(receipt->id, "failed", "", now));
      // The auto-merge guard refusing is a decision, not a failing peer: no system problem.
      const bool refused = row->kind == "merge_pull_request" && d.error.rfind("auto-merge refused", 0) == 0;
      if (!refused) {
        auto n = store_->CountFailure(problem, row->kind + " on " + platform + " failed: " + d.error, now);
        if (!n.ok()) return n.status();
      }
      RETURN_IF_ERROR(ClearedLocked(kQuarantineEffect, item));  // ended: nothing left to set aside
      break;
    }
    case Delivery::Outcome::kTargetGone:
      RETURN_IF_ERROR(store_->FinishEffect(effect_id, "abandoned", "target gone: " + d.error, ""));
      if (receipt) {
        RETURN_IF_ERROR(store_->SetReceiptStatus(receipt->id, "abandoned", "", now));
        RETURN_IF_ERROR(store_->MarkThreadDeleted(receipt->thread, now));
      }
      RETURN_IF_ERROR(ClearedLocked(kQuarantineEffect, item));
      break;
  }
  RETURN_IF_ERROR(tx->Commit());
  switch (d.outcome) {
    case Delivery::Outcome::kDone:
      spdlog::info("message sent {} kind={} external_id={}", what, row->kind, d.external_id);
      break;
    case Delivery::Outcome::kRetry:
      spdlog::warn("delivery retry {} kind={} attempt={} next_in_ms={} error=\"{}\"", what, row->kind,
                   row->attempts + 1, retry_at - now, d.error);
      break;
    case Delivery::Outcome::kFailed:
      spdlog::error("delivery failed {} kind={} error=\"{}\"", what, row->kind, d.error);
      break;
    case Delivery::Outcome::kTargetGone:
      spdlog::warn("delivery abandoned {} kind={} reason=\"target gone: {}\"", what, row->kind, d.error);
      break;
  }
  return Status::Ok();
}

Status Engine::EnqueueAction(const std::string& kind, const json& payload) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(EnqueueActionLocked(kind, payload, now));
  return tx->Commit();
}

Status Engine::EnqueueActionLocked(const std::string& kind, const json& payload, TimeMs now) {
  if (kind.empty() || kind == "post_message") return Status::InvalidArgument("an action needs a kind other than post_message");
  if (!payload.is_object() || !payload.contains("channel") || !payload["channel"].is_string())
    return Status::InvalidArgument("an action's payload must name its channel");
  if (!payload.contains("idempotency_key") || !payload["idempotency_key"].is_string())
    return Status::InvalidArgument("an action's payload needs an idempotency_key");
  // The idempotency key lives in the payload; one action per key, ever.
  ASSIGN_OR_RETURN(bool exists, store_->ActionExists(payload["idempotency_key"].get<std::string>()));
  if (exists) return Status::Ok();
  json out = payload;
  if (kind == "open_pull_request" && payload.contains("ticket") && payload["ticket"].is_number_integer()) {
    // The PR points back at the discussion that asked for it (issue 22), as the result points at the PR.
    ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(payload["ticket"].get<TicketId>()));
    if (mandate) {
      ASSIGN_OR_RETURN(auto origin, store_->FindTriggerBySeq(mandate->origin_trigger_seq));
      if (origin) {
        if (std::string url = TriggerUrl(origin->trigger); !url.empty()) out["discussion_url"] = url;
        out["requested_via"] = origin->trigger.source;  // the channel says as much as its config allows
      }
      // SPEC §4.4: a review rule names the approver; the PR asks them for the review.
      std::vector<std::string> reviewers;
      for (const std::string& name : mandate->matched_rules)
        if (const Rule* r = policy_.FindRule(name); r && !r->approver.empty() &&
            std::find(reviewers.begin(), reviewers.end(), r->approver) == reviewers.end())
          reviewers.push_back(r->approver);
      if (!reviewers.empty()) out["reviewers"] = reviewers;
    }
  }
  return store_->InsertEffect("", kind, out.dump(), now, "action");
}

}  // namespace superagent
