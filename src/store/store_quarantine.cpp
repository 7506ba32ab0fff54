// Typed queries for quarantine records and the clean-stop marker.
#include "store/rows.h"
#include "store/store.h"

namespace superagent::store {

QuarantineItem ReadQuarantine(Stmt& s) {
  QuarantineItem q;
  q.kind = s.Text(0);
  q.item = s.Text(1);
  q.label = s.Text(2);
  q.last_error = s.Text(3);
  q.failures = static_cast<int>(s.Int(4));
  q.crashes = static_cast<int>(s.Int(5));
  q.set_aside_at = s.OptInt(6);
  q.reason = s.Text(7);
  q.updated_at = s.Int(8);
  return q;
}

Result<std::optional<QuarantineItem>> Store::GetQuarantine(const std::string& kind, const std::string& item) {
  Stmt s = db_.Prepare("SELECT " QUARANTINE_COLUMNS " FROM quarantine WHERE kind = ? AND item = ?");
  s.Bind(1, kind).Bind(2, item);
  if (!s.Step()) return Missing(s);
  return std::optional<QuarantineItem>(ReadQuarantine(s));
}

Status Store::PutQuarantine(const QuarantineItem& q) {
  return db_.Prepare("INSERT OR REPLACE INTO quarantine (" QUARANTINE_COLUMNS ") VALUES (?,?,?,?,?,?,?,?,?)")
      .Bind(1, q.kind)
      .Bind(2, q.item)
      .Bind(3, q.label)
      .Bind(4, q.last_error)
      .Bind(5, q.failures)
      .Bind(6, q.crashes)
      .Bind(7, q.set_aside_at)
      .Bind(8, q.reason)
      .Bind(9, q.updated_at)
      .Run();
}

Status Store::DeleteQuarantine(const std::string& kind, const std::string& item) {
  return db_.Prepare("DELETE FROM quarantine WHERE kind = ? AND item = ?").Bind(1, kind).Bind(2, item).Run();
}

Result<std::optional<QuarantineItem>> Store::SetAsideEffectOf(const std::string& receipt_id) {
  Stmt s = db_.Prepare(
      "SELECT q.kind, q.item, q.label, q.last_error, q.failures, q.crashes, q.set_aside_at, q.reason, q.updated_at "
      "FROM effects e JOIN quarantine q ON q.kind = 'effect' AND q.item = CAST(e.id AS TEXT) "
      "WHERE e.receipt_id = ? AND q.set_aside_at IS NOT NULL LIMIT 1");
  s.Bind(1, receipt_id);
  if (!s.Step()) return Missing(s);
  return std::optional<QuarantineItem>(ReadQuarantine(s));
}

Result<bool> Store::MarkRunning(TimeMs at, std::int64_t pid) {
  bool died = false;
  {
    Stmt s = db_.Prepare("SELECT running FROM daemon_run WHERE id = 1");
    died = s.Step() && s.Bool(0);
    RETURN_IF_ERROR(s.status());
  }
  RETURN_IF_ERROR(db_.Prepare("INSERT OR REPLACE INTO daemon_run (id, running, pid, started_at) VALUES (1, 1, ?, ?)")
                      .Bind(1, pid)
                      .Bind(2, at)
                      .Run());
  return died;
}

Status Store::MarkStopped(TimeMs at) {
  return db_.Prepare("UPDATE daemon_run SET running = 0, stopped_at = ? WHERE id = 1").Bind(1, at).Run();
}

Result<std::vector<Store::EffectRow>> Store::InFlightEffects() {
  std::vector<std::int64_t> ids;
  {
    Stmt s = db_.Prepare("SELECT id FROM effects WHERE status = 'pending' AND started_at IS NOT NULL ORDER BY id");
    while (s.Step()) ids.push_back(s.Int(0));
    RETURN_IF_ERROR(s.status());
  }
  std::vector<EffectRow> out;
  for (std::int64_t id : ids) {
    ASSIGN_OR_RETURN(auto row, GetEffect(id));
    if (row) out.push_back(*row);
  }
  return out;
}

Status Store::RequeueEffect(std::int64_t id, TimeMs at) {
  return db_.Prepare("UPDATE effects SET next_at = ? WHERE id = ? AND status = 'pending'").Bind(1, at).Bind(2, id).Run();
}

Status Store::RequeueThread(const std::string& thread, TimeMs at) {
  return db_.Prepare("UPDATE eval_queue SET not_before = ? WHERE thread_key = ? AND eval_id IS NULL")
      .Bind(1, at)
      .Bind(2, thread)
      .Run();
}

}  // namespace superagent::store
