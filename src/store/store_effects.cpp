// Typed queries for the outbox's delivery side.
#include "store/store.h"

#include "store/rows.h"

namespace superagent::store {

namespace {
Store::EffectRow ReadEffect(Stmt& s) {
  Store::EffectRow e;
  e.id = s.Int(0);
  e.receipt_id = s.OptText(1).value_or("");
  e.kind = s.Text(2);
  e.payload = s.Text(3);
  e.status = s.Text(4);
  e.kind_class = s.Text(5);
  e.attempts = static_cast<int>(s.Int(6));
  e.next_at = s.Int(7);
  e.started_at = s.OptInt(8);
  e.outcome_unknown = s.Bool(9);
  return e;
}
#define EFFECT_COLUMNS "id, receipt_id, kind, payload, status, kind_class, attempts, next_at, started_at, outcome_unknown"
}  // namespace

Result<std::vector<Store::EffectRow>> Store::DueEffects(TimeMs now, int limit) {
  Stmt s = db_.Prepare("SELECT " EFFECT_COLUMNS " FROM effects WHERE status = 'pending' AND next_at <= ? "
      "AND NOT EXISTS (SELECT 1 FROM quarantine x WHERE x.kind = 'effect' AND x.item = CAST(effects.id AS TEXT) "
      "AND x.set_aside_at IS NOT NULL) ORDER BY id LIMIT ?");
  s.Bind(1, now).Bind(2, limit);
  std::vector<EffectRow> out;
  while (s.Step()) out.push_back(ReadEffect(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::optional<Store::EffectRow>> Store::GetEffect(std::int64_t id) {
  Stmt s = db_.Prepare("SELECT " EFFECT_COLUMNS " FROM effects WHERE id = ?");
  s.Bind(1, id);
  if (!s.Step()) return Missing(s);
  EffectRow e = ReadEffect(s);
  s.Reset();
  return std::optional<Store::EffectRow>(e);
}

Result<std::optional<Receipt>> Store::GetReceipt(const std::string& id) {
  Stmt s = db_.Prepare("SELECT " RECEIPT_COLUMNS " FROM receipts WHERE id = ?");
  s.Bind(1, id);
  if (!s.Step()) return Missing(s);
  Receipt r = ReadReceipt(s);
  s.Reset();
  return std::optional<Receipt>(r);
}

Result<bool> Store::EarlierReceiptPending(const std::string& receipt_id) {
  // "Earlier" is insertion order (rowid): an acknowledgement enqueued before a result stays first
  // even when both carry the same millisecond.
  Stmt s = db_.Prepare(
      "SELECT EXISTS (SELECT 1 FROM receipts r2, receipts r WHERE r.id = ?1 AND r2.status = 'pending' "
      "AND r2.rowid < r.rowid AND (r2.thread_key = r.thread_key OR (r.ticket_id IS NOT NULL AND r2.ticket_id = r.ticket_id)))");
  s.Bind(1, receipt_id);
  bool pending = s.Step() && s.Bool(0);
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return pending;
}

Status Store::MarkEffectInFlight(std::int64_t id, TimeMs at, bool outcome_unknown) {
  return db_.Prepare("UPDATE effects SET started_at = ?, outcome_unknown = ? WHERE id = ?")
      .Bind(1, at)
      .Bind(2, outcome_unknown)
      .Bind(3, id)
      .Run();
}

Status Store::FinishEffect(std::int64_t id, const std::string& status, const std::string& reason,
                           const std::string& external_id) {
  Stmt s = db_.Prepare(
      "UPDATE effects SET status = ?, ended_reason = ?, external_id = ?, started_at = NULL, "
      "attempts = attempts + 1, last_error = CASE WHEN ?1 = 'done' THEN last_error ELSE ?2 END WHERE id = ?4");
  s.Bind(1, status);
  if (reason.empty()) s.BindNull(2); else s.Bind(2, reason);
  if (external_id.empty()) s.BindNull(3); else s.Bind(3, external_id);
  return s.Bind(4, id).Run();
}

Status Store::RescheduleEffect(std::int64_t id, TimeMs next_at, const std::string& error) {
  return db_.Prepare(
             "UPDATE effects SET attempts = attempts + 1, next_at = ?, last_error = ?, started_at = NULL WHERE id = ?")
      .Bind(1, next_at)
      .Bind(2, error)
      .Bind(3, id)
      .Run();
}

Status Store::SetReceiptStatus(const std::string& id, const std::string& status, const std::string& external_id,
                               TimeMs at) {
  Stmt s = db_.Prepare(
      "UPDATE receipts SET status = ?, external_id = COALESCE(?, external_id), "
      "sent_at = CASE WHEN ?1 = 'sent' THEN ? ELSE sent_at END WHERE id = ?");
  s.Bind(1, status);
  if (external_id.empty()) s.BindNull(2); else s.Bind(2, external_id);
  return s.Bind(3, at).Bind(4, id).Run();
}

Result<bool> Store::ActionExists(const std::string& key) {
  Stmt s = db_.Prepare(
      "SELECT EXISTS (SELECT 1 FROM effects WHERE kind_class = 'action' AND json_extract(payload, '$.idempotency_key') = ?)");
  s.Bind(1, key);
  bool exists = s.Step() && s.Bool(0);
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return exists;
}

Result<nlohmann::json> Store::EffectCounts() {
  nlohmann::json out = {{"pending", 0}, {"in_flight", 0}, {"failed", 0}, {"abandoned", 0}, {"done", 0}};
  Stmt s = db_.Prepare(
      "SELECT CASE WHEN status = 'pending' AND started_at IS NOT NULL THEN 'in_flight' ELSE status END, COUNT(*) "
      "FROM effects GROUP BY 1");
  while (s.Step()) out[s.Text(0)] = s.Int(1);
  RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace superagent::store
