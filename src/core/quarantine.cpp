// Quarantine (issue 18): poison items set aside — an Effect, a Thread's Evals, a Ticket's turns —
// and the crash-loop guard, so one bad item cannot stop the daemon's loops. One place decides when
// an item is set aside (DueForQuarantine) and what setting aside means for each kind; a person's
// Retry from the panel is here too, since it undoes exactly that.
#include <spdlog/spdlog.h>

#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

std::string FailureSignature(const std::string& error) {
  std::string out;
  bool in_digits = false;
  for (char c : error) {
    const bool digit = c >= '0' && c <= '9';
    if (digit && !in_digits) out.push_back('#');
    if (!digit) out.push_back(c);
    in_digits = digit;
    if (out.size() >= 200) break;
  }
  return out;
}

namespace {

std::string EffectLabel(store::Store& store, const std::string& item) {
  auto found = store.GetEffect(std::stoll(item));
  if (!found.ok() || !found->has_value()) return "effect " + item;
  const store::Store::EffectRow& row = **found;
  if (!row.receipt_id.empty()) {
    auto r = store.GetReceipt(row.receipt_id);
    return "message " + row.receipt_id + (r.ok() && r->has_value() ? " to " + (*r)->channel : std::string());
  }
  json payload = json::parse(row.payload, nullptr, false);
  std::string channel = payload.is_object() && payload.contains("channel") && payload["channel"].is_string()
                            ? payload["channel"].get<std::string>()
                            : std::string("?");
  return "action " + row.kind + " on " + channel;
}

std::string TurnLabel(store::Store& store, TicketId ticket) {
  auto tk = store.GetTicket(ticket);
  return "worker turns of Ticket " + std::to_string(ticket) +
         (tk.ok() && tk->has_value() ? " (" + (*tk)->scope + ")" : std::string());
}

std::string EvalLabel(const std::string& thread) { return "Evals of Thread " + thread; }

// What the item is, in a person's words, for the Needs-you card and the log.
std::string LabelOf(store::Store& store, const std::string& kind, const std::string& item) {
  if (kind == kQuarantineEffect) return EffectLabel(store, item);
  if (kind == kQuarantineTurn) return TurnLabel(store, std::stoll(item));
  return EvalLabel(item);
}

}  // namespace

bool Engine::DueForQuarantine(const QuarantineItem& q) const {
  return !q.set_aside() && (q.failures >= options_.quarantine_after || q.crashes >= options_.quarantine_after);
}

Result<QuarantineItem> Engine::ChargeLocked(const std::string& kind, const std::string& item,
                                             const std::string& error, bool crash, TimeMs now) {
  ASSIGN_OR_RETURN(auto stored, store_->GetQuarantine(kind, item));
  QuarantineItem q = stored.value_or(QuarantineItem{});
  if (q.set_aside()) return q;
  q.kind = kind;
  q.item = item;
  q.label = LabelOf(*store_, kind, item);
  if (crash) {
    ++q.crashes;
  } else {
    q.failures = q.failures > 0 && FailureSignature(q.last_error) == FailureSignature(error) ? q.failures + 1 : 1;
    q.last_error = error;
  }
  q.updated_at = now;
  RETURN_IF_ERROR(store_->PutQuarantine(q));
  return q;
}

Result<bool> Engine::WouldSetAsideLocked(const std::string& kind, const std::string& item, const std::string& error) {
  ASSIGN_OR_RETURN(auto stored, store_->GetQuarantine(kind, item));
  QuarantineItem q = stored.value_or(QuarantineItem{});
  if (q.set_aside()) return false;  // already: this failure changes nothing
  q.failures = q.failures > 0 && FailureSignature(q.last_error) == FailureSignature(error) ? q.failures + 1 : 1;
  return DueForQuarantine(q);
}

Status Engine::SetAsideLocked(QuarantineItem q, TimeMs now) {
  q.set_aside_at = now;
  q.updated_at = now;
  if (q.failures >= options_.quarantine_after)
    q.reason = "failed the same way " + std::to_string(q.failures) + " times in a row: " + q.last_error;
  else
    q.reason = "in flight during " + std::to_string(q.crashes) + " abnormal exits of the daemon in a row" +
               (q.last_error.empty() ? std::string() : " (last error: " + q.last_error + ")");
  RETURN_IF_ERROR(store_->PutQuarantine(q));
  if (q.kind == kQuarantineTurn) {
    // Its Assignments end (a restart does not resume it) and the Ticket says why it stopped.
    const TicketId ticket = std::stoll(q.item);
    RETURN_IF_ERROR(store_->EndAssignments(ticket, now));
    ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
    // Already blocked (the failing turn's own report): the card's "why" still becomes this.
    if (tk && tk->open() && tk->stage == Stage::kBlocked)
      RETURN_IF_ERROR(store_->InsertTicketEvent(ticket, now, Stage::kBlocked, Stage::kBlocked, text::Repair("set aside: " + q.reason)));
    else if (tk && tk->open())
      RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kBlocked, StageCause::kSetAside, "set aside: " + q.reason, now));
  }
  // Effects and Threads need nothing more: their loops' queries skip what is set aside.
  spdlog::error("set aside kind={} item={} what=\"{}\" reason=\"{}\"", q.kind, q.item, q.label, q.reason);
  return Status::Ok();
}

Status Engine::ClearedLocked(const std::string& kind, const std::string& item) {
  return store_->DeleteQuarantine(kind, item);
}

Result<std::vector<QuarantineItem>> Engine::RecordStart(std::int64_t pid) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  auto died = store_->MarkRunning(now, pid);
  if (!died.ok()) return died.status();
  std::vector<QuarantineItem> set_aside;
  int charged = 0;
  auto charge = [&](const std::string& kind, const std::string& item) -> Result<bool> {
    mu_.AssertHeld();  // a lambda of a locked method: Clang analyses it on its own
    auto q = ChargeLocked(kind, item, "", true, now);
    if (!q.ok()) return q.status();
    ++charged;
    if (!DueForQuarantine(*q)) return false;
    RETURN_IF_ERROR(SetAsideLocked(*q, now));
    ASSIGN_OR_RETURN(auto now_set_aside, store_->GetQuarantine(kind, item));
    if (now_set_aside) set_aside.push_back(*now_set_aside);
    return true;
  };
  if (*died) {
    ASSIGN_OR_RETURN(auto in_flight, store_->InFlightEffects());
    for (const store::Store::EffectRow& row : in_flight) {
      auto r = charge(kQuarantineEffect, std::to_string(row.id));
      if (!r.ok()) return r.status();
    }
    ASSIGN_OR_RETURN(auto running, store_->RunningEvals());
    for (const store::EvalRow& e : running) {
      auto r = charge(kQuarantineEval, e.thread);
      if (!r.ok()) return r.status();
      if (*r) {  // its batch goes back to the queue, where the Thread waits for a person's Retry
        RETURN_IF_ERROR(store_->SetEvalStatus(e.id, "discarded", now));
        RETURN_IF_ERROR(store_->ReleaseBatch(e.id, now, 1));
      }
    }
    ASSIGN_OR_RETURN(auto turns, store_->AssignmentsInState("running"));
    for (const Assignment& a : turns) {
      auto r = charge(kQuarantineTurn, std::to_string(a.ticket));
      if (!r.ok()) return r.status();
    }
  }
  RETURN_IF_ERROR(tx->Commit());
  if (*died)
    spdlog::warn("the previous run did not stop cleanly: in-flight items charged={} set_aside={}", charged,
                 set_aside.size());
  return set_aside;
}

Status Engine::RecordCleanStop() {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(store_->MarkStopped(clock_->NowMs()));
  return tx->Commit();
}

Status Engine::RetryQuarantined(const std::string& kind, const std::string& item, const std::string& who) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto q, store_->GetQuarantine(kind, item));
  if (!q || !q->set_aside()) return Status::NotFound("nothing set aside as " + kind + " " + item);
  RETURN_IF_ERROR(store_->DeleteQuarantine(kind, item));
  bool eval_due = false;
  if (kind == kQuarantineEffect) {
    RETURN_IF_ERROR(store_->RequeueEffect(std::stoll(item), now));
  } else if (kind == kQuarantineEval) {
    RETURN_IF_ERROR(store_->RequeueThread(item, now));
    ASSIGN_OR_RETURN(auto due, store_->NextDueThread(now));
    eval_due = due.has_value();
  } else if (kind == kQuarantineTurn) {
    const TicketId ticket = std::stoll(item);
    ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
    if (tk && tk->open()) {
      TicketInput in;
      in.ticket = ticket;
      in.kind = "restart";
      in.body = json{{"retried_by", who}, {"set_aside_because", q->reason}};
      in.state = "pending";
      in.created_at = now;
      auto iid = store_->InsertInput(in);
      if (!iid.ok()) return iid.status();
      auto aid = store_->InsertAssignment(ticket, "worker", "retry", now);
      if (!aid.ok()) return aid.status();
      RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kIdle, StageCause::kRetried,
                                  "set-aside turns retried by " + who, now));
    }
  }
  RETURN_IF_ERROR(store_->InsertCommand(now, who, "retry", kind + ":" + item, q->reason));
  RETURN_IF_ERROR(tx->Commit());
  if (eval_due && options_.on_eval_queued) options_.on_eval_queued();
  spdlog::info("set-aside item retried kind={} item={} by=\"{}\"", kind, item, who);
  return Status::Ok();
}

}  // namespace superagent
