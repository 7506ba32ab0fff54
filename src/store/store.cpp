#include "store/store.h"

#include <filesystem>

#include "core/message_url.h"
#include "store/rows.h"
#include "store/schema.h"
#include "store/store_internal.h"

namespace superagent::store {

using store_internal::InsertReturningId;

namespace {

EvalRow ReadEval(Stmt& s) {
  EvalRow e;
  e.id = s.Int(0);
  e.thread = s.Text(1);
  e.policy_version = s.Int(2);
  e.status = s.Text(3);
  e.started_at = s.Int(4);
  e.deadline_at = s.Int(5);
  return e;
}
#define EVAL_COLUMNS "id, thread_key, policy_version, status, started_at, deadline_at"

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, DbOptions options) {
  auto store = std::unique_ptr<Store>(new Store());
  if (Status s = MakePrivate(path); !s.ok()) return s;
  if (Status s = store->db_.Open(path, std::move(options)); !s.ok()) return s;
  if (Status s = store->Configure(); !s.ok()) return s;
  if (Status s = store->Migrate(); !s.ok()) return s;
  return store;
}

Result<std::unique_ptr<Store>> Store::OpenReadOnly(const std::string& path) {
  if (!std::filesystem::exists(path)) return Status::NotFound("no database at " + path);
  auto store = std::unique_ptr<Store>(new Store());
  if (Status s = store->db_.Open(path); !s.ok()) return s;
  // (Db::Open has set the busy timeout already, before this first statement.)
  if (Status s = store->db_.Exec("PRAGMA query_only=ON;"); !s.ok()) return s;
  return store;
}

Status Store::Configure() {
  // WAL lets the panel read while the Engine writes; synchronous=FULL because "nothing is lost"
  // includes a power cut right after a commit that the Effects loop then acts on.
  // (The busy timeout is already set: Db::Open does it before any statement, this one included.)
  return db_.Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;");
}

Result<int> Store::SchemaVersion() {
  Stmt s = db_.Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
  int v = s.Step() ? static_cast<int>(s.Int(0)) : 0;
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return v;
}

Status Store::Migrate() {
  if (Status s = db_.Exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                          "description TEXT NOT NULL, applied_at INTEGER NOT NULL)");
      !s.ok())
    return s;
  ASSIGN_OR_RETURN(int current, SchemaVersion());
  const auto& all = Migrations();
  if (!all.empty() && current > all.back().version)
    return Status::Internal("database schema version " + std::to_string(current) +
                            " is newer than this binary knows (" + std::to_string(all.back().version) +
                            "); refusing to run an older superagent on it");
  for (const Migration& m : all) {
    if (m.version <= current) continue;
    Tx tx(&db_);
    if (!tx.begin_status().ok()) return tx.begin_status();
    if (Status s = db_.Exec(m.sql); !s.ok())
      return Status::Internal("migration " + std::to_string(m.version) + " failed: " + s.message());
    Stmt ins = db_.Prepare("INSERT INTO schema_migrations (version, description, applied_at) "
                            "VALUES (?, ?, strftime('%s','now') * 1000)");
    ins.Bind(1, m.version).Bind(2, m.description);
    if (Status s = ins.Run(); !s.ok()) return s;
    if (Status s = tx.Commit(); !s.ok()) return s;
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Triggers and Threads

Result<std::optional<TriggerRecord>> Store::FindTrigger(const std::string& id) {
  Stmt s = db_.Prepare("SELECT " TRIGGER_COLUMNS " FROM triggers WHERE id = ?");
  s.Bind(1, id);
  if (!s.Step()) return Missing(s);
  TriggerRecord r = ReadTrigger(s);
  s.Reset();
  ASSIGN_OR_RETURN(r.trigger.threads, TriggerThreads(r.seq));
  return std::optional<TriggerRecord>(r);
}

Result<std::optional<TriggerRecord>> Store::FindTriggerBySeq(std::int64_t seq) {
  Stmt s = db_.Prepare("SELECT " TRIGGER_COLUMNS " FROM triggers WHERE seq = ?");
  s.Bind(1, seq);
  if (!s.Step()) return Missing(s);
  TriggerRecord r = ReadTrigger(s);
  s.Reset();
  ASSIGN_OR_RETURN(r.trigger.threads, TriggerThreads(r.seq));
  return std::optional<TriggerRecord>(r);
}

Result<std::optional<TriggerRecord>> Store::FindTriggerByUrl(const std::string& url) {
  // The newest version of an edited comment answers for its URL.
  const MessageUrlForms forms = MessageUrlFormsOf(url);
  for (const std::string& exact : {url, forms.tidy}) {
    Stmt s = db_.Prepare("SELECT id FROM triggers WHERE url = ? ORDER BY seq DESC LIMIT 1");
    s.Bind(1, exact);
    if (s.Step()) {
      std::string id = s.Text(0);
      s.Reset();
      return FindTrigger(id);
    }
    RETURN_IF_ERROR(s.status());
  }
  if (forms.discussion.size() != 2) return std::optional<TriggerRecord>();
  // The discussion's own URL, or one of its messages' (URL#fragment): '#' sorts just before '$',
  // so the range reads the url index.
  Stmt s = db_.Prepare(
      "SELECT id FROM triggers WHERE url = ?1 OR (url >= ?1 || '#' AND url < ?1 || '$') "
      "OR url = ?2 OR (url >= ?2 || '#' AND url < ?2 || '$') "
      "ORDER BY addressed DESC, outcome = 'filtered', at DESC, seq DESC LIMIT 1");
  s.Bind(1, forms.discussion[0]).Bind(2, forms.discussion[1]);
  if (!s.Step()) return Missing(s);
  std::string id = s.Text(0);
  s.Reset();
  return FindTrigger(id);
}

Result<std::int64_t> Store::InsertTrigger(const TriggerRecord& r) {
  const Trigger& t = r.trigger;
  Stmt s = db_.Prepare(
      "INSERT INTO triggers (id, source, scope, actor, human, addressed, text, at, channel, meta, url, via, "
      "received_at, outcome, filter_reason) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  std::string url = TriggerUrl(t);
  s.Bind(1, t.id).Bind(2, t.source).Bind(3, t.scope).Bind(4, t.actor).Bind(5, t.human).Bind(6, t.addressed);
  s.Bind(7, t.text).Bind(8, t.at).Bind(9, t.channel).Bind(10, t.meta.dump());
  if (url.empty()) s.BindNull(11); else s.Bind(11, url);
  s.Bind(12, r.via).Bind(13, r.received_at).Bind(14, IntakeOutcomeName(r.outcome));
  if (r.outcome == IntakeOutcome::kFiltered) s.Bind(15, r.filter_reason); else s.BindNull(15);
  return InsertReturningId(db_, s);
}

Status Store::InsertTriggerThread(std::int64_t seq, const std::string& thread, int position) {
  Stmt s = db_.Prepare("INSERT OR IGNORE INTO trigger_threads (trigger_seq, thread_key, position) VALUES (?,?,?)");
  return s.Bind(1, seq).Bind(2, thread).Bind(3, position).Run();
}

Result<std::vector<std::string>> Store::TriggerThreads(std::int64_t seq) {
  Stmt s = db_.Prepare("SELECT thread_key FROM trigger_threads WHERE trigger_seq = ? ORDER BY position");
  s.Bind(1, seq);
  std::vector<std::string> out;
  while (s.Step()) out.push_back(s.Text(0));
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<Trigger>> Store::ThreadHistory(const std::string& thread, std::size_t limit) {
  Stmt s = db_.Prepare(
      "SELECT seq FROM trigger_threads JOIN triggers ON triggers.seq = trigger_threads.trigger_seq "
      "WHERE thread_key = ? AND outcome = 'stored' ORDER BY at DESC, seq DESC LIMIT ?");
  s.Bind(1, thread).Bind(2, static_cast<std::int64_t>(limit));
  std::vector<std::int64_t> seqs;
  while (s.Step()) seqs.push_back(s.Int(0));
  RETURN_IF_ERROR(s.status());
  std::vector<Trigger> out;
  for (auto it = seqs.rbegin(); it != seqs.rend(); ++it) {
    ASSIGN_OR_RETURN(auto r, FindTriggerBySeq(*it));
    if (r) out.push_back(r->trigger);
  }
  return out;
}

Status Store::UpsertThread(const std::string& key, const std::string& source, const std::string& channel, TimeMs at) {
  Stmt s = db_.Prepare(
      "INSERT INTO threads (key, source, channel, created_at, last_activity_at) VALUES (?1, ?2, ?3, ?4, ?4) "
      "ON CONFLICT (key) DO UPDATE SET channel = excluded.channel, "
      "last_activity_at = MAX(last_activity_at, excluded.last_activity_at)");
  return s.Bind(1, key).Bind(2, source).Bind(3, channel).Bind(4, at).Run();
}

Result<std::optional<std::string>> Store::ThreadChannel(const std::string& key) {
  Stmt s = db_.Prepare("SELECT channel FROM threads WHERE key = ?");
  s.Bind(1, key);
  if (!s.Step()) return Missing(s);
  std::string c = s.Text(0);
  s.Reset();
  return std::optional<std::string>(c);
}

// ---------------------------------------------------------------------------------------------
// Policy versions

Result<std::optional<PolicyVersionRow>> Store::LatestPolicyVersion() {
  Stmt s = db_.Prepare(
      "SELECT version, fingerprint, body, origin, created_at FROM policy_versions ORDER BY version DESC LIMIT 1");
  if (!s.Step()) return Missing(s);
  PolicyVersionRow r{s.Int(0), s.Text(1), s.Text(2), s.Text(3), s.Int(4)};
  s.Reset();
  return std::optional<PolicyVersionRow>(r);
}

Result<std::int64_t> Store::InsertPolicyVersion(const std::string& fingerprint, const std::string& body,
                                                const std::string& origin, TimeMs at) {
  Stmt s = db_.Prepare("INSERT INTO policy_versions (fingerprint, body, origin, created_at) VALUES (?,?,?,?)");
  s.Bind(1, fingerprint).Bind(2, body).Bind(3, origin).Bind(4, at);
  return InsertReturningId(db_, s);
}

// ---------------------------------------------------------------------------------------------
// Eval queue and Evals

Status Store::Enqueue(std::int64_t seq, const std::string& thread, TimeMs at, TimeMs not_before, int attempts,
                      const std::string& handback) {
  Stmt s = db_.Prepare(
      "INSERT INTO eval_queue (trigger_seq, thread_key, queued_at, not_before, attempts, handback) "
      "VALUES (?,?,?,?,?,?) ON CONFLICT (trigger_seq) DO UPDATE SET not_before = excluded.not_before, "
      "handback = excluded.handback");
  s.Bind(1, seq).Bind(2, thread).Bind(3, at).Bind(4, not_before).Bind(5, attempts);
  if (handback.empty()) s.BindNull(6); else s.Bind(6, handback);
  return s.Run();
}

Result<std::optional<QueueRow>> Store::QueueRowFor(std::int64_t seq) {
  Stmt s = db_.Prepare("SELECT trigger_seq, thread_key, attempts, eval_id, handback FROM eval_queue WHERE trigger_seq = ?");
  s.Bind(1, seq);
  if (!s.Step()) return Missing(s);
  QueueRow r{s.Int(0), s.Text(1), static_cast<int>(s.Int(2)), s.OptInt(3), s.OptText(4).value_or("")};
  s.Reset();
  return std::optional<QueueRow>(r);
}

Result<std::optional<std::string>> Store::NextDueThread(TimeMs now) {
  Stmt s = db_.Prepare(
      "SELECT q.thread_key FROM eval_queue q WHERE q.eval_id IS NULL AND q.not_before <= ? "
      "AND NOT EXISTS (SELECT 1 FROM evals e WHERE e.thread_key = q.thread_key AND e.status = 'running') "
      "AND NOT EXISTS (SELECT 1 FROM quarantine x WHERE x.kind = 'eval' AND x.item = q.thread_key "
      "AND x.set_aside_at IS NOT NULL) "
      "ORDER BY q.trigger_seq LIMIT 1");
  s.Bind(1, now);
  if (!s.Step()) return Missing(s);
  std::string t = s.Text(0);
  s.Reset();
  return std::optional<std::string>(t);
}

Result<EvalId> Store::InsertEval(const std::string& thread, std::int64_t policy_version, TimeMs at, TimeMs deadline) {
  Stmt s = db_.Prepare(
      "INSERT INTO evals (thread_key, policy_version, status, started_at, deadline_at) VALUES (?,?,'running',?,?)");
  s.Bind(1, thread).Bind(2, policy_version).Bind(3, at).Bind(4, deadline);
  return InsertReturningId(db_, s);
}

Status Store::ClaimBatch(EvalId eval, const std::string& thread, TimeMs now) {
  Stmt s = db_.Prepare(
      "UPDATE eval_queue SET eval_id = ? WHERE thread_key = ? AND eval_id IS NULL AND not_before <= ?");
  return s.Bind(1, eval).Bind(2, thread).Bind(3, now).Run();
}

Result<std::vector<QueueRow>> Store::Batch(EvalId eval) {
  Stmt s = db_.Prepare(
      "SELECT trigger_seq, thread_key, attempts, eval_id, handback FROM eval_queue WHERE eval_id = ? ORDER BY trigger_seq");
  s.Bind(1, eval);
  std::vector<QueueRow> out;
  while (s.Step()) out.push_back({s.Int(0), s.Text(1), static_cast<int>(s.Int(2)), s.OptInt(3), s.OptText(4).value_or("")});
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::optional<EvalRow>> Store::GetEval(EvalId eval) {
  Stmt s = db_.Prepare("SELECT " EVAL_COLUMNS " FROM evals WHERE id = ?");
  s.Bind(1, eval);
  if (!s.Step()) return Missing(s);
  EvalRow e = ReadEval(s);
  s.Reset();
  return std::optional<EvalRow>(e);
}

Result<std::vector<EvalRow>> Store::RunningEvals() {
  Stmt s = db_.Prepare("SELECT " EVAL_COLUMNS " FROM evals WHERE status = 'running' ORDER BY id");
  std::vector<EvalRow> out;
  while (s.Step()) out.push_back(ReadEval(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Status Store::SetEvalStatus(EvalId eval, const std::string& status, TimeMs at) {
  Stmt s = db_.Prepare("UPDATE evals SET status = ?, ended_at = ? WHERE id = ?");
  return s.Bind(1, status).Bind(2, at).Bind(3, eval).Run();
}

Status Store::DequeueBatch(EvalId eval) {
  return db_.Prepare("DELETE FROM eval_queue WHERE eval_id = ?").Bind(1, eval).Run();
}

Status Store::ReleaseBatch(EvalId eval, TimeMs not_before, int attempt_increment) {
  Stmt s = db_.Prepare(
      "UPDATE eval_queue SET eval_id = NULL, not_before = ?, attempts = attempts + ? WHERE eval_id = ?");
  return s.Bind(1, not_before).Bind(2, attempt_increment).Bind(3, eval).Run();
}

Status Store::InsertGateRow(const GateRow& row) {
  Stmt s = db_.Prepare(
      "INSERT OR REPLACE INTO eval_triggers (eval_id, trigger_seq, strength, candidate, gate_reason) VALUES (?,?,?,?,?)");
  return s.Bind(1, row.eval).Bind(2, row.seq).Bind(3, row.strength).Bind(4, row.candidate).Bind(5, row.reason).Run();
}

Result<std::vector<GateRow>> Store::GateRowsFor(std::int64_t seq) {
  Stmt s = db_.Prepare(
      "SELECT eval_id, trigger_seq, strength, candidate, gate_reason FROM eval_triggers WHERE trigger_seq = ? ORDER BY eval_id");
  s.Bind(1, seq);
  std::vector<GateRow> out;
  while (s.Step()) out.push_back({s.Int(0), s.Int(1), s.Text(2), s.Text(4), s.Bool(3)});
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::int64_t> Store::InsertDecision(const Decision& d) {
  Stmt s = db_.Prepare(
      "INSERT INTO decisions (eval_id, thread_key, outcome, would_accept, strength, reason, assessment, ticket_id, "
      "policy_version, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)");
  s.Bind(1, d.eval).Bind(2, d.thread).Bind(3, DecisionOutcomeName(d.outcome)).Bind(4, d.would_accept);
  s.Bind(5, StrengthName(d.strength)).Bind(6, d.reason);
  if (d.assessment.is_null()) s.BindNull(7); else s.Bind(7, d.assessment.dump());
  s.Bind(8, d.ticket).Bind(9, d.policy_version).Bind(10, d.created_at);
  return InsertReturningId(db_, s);
}

Result<std::vector<Decision>> Store::DecisionsForThread(const std::string& thread) {
  Stmt s = db_.Prepare("SELECT " DECISION_COLUMNS " FROM decisions WHERE thread_key = ? ORDER BY id");
  s.Bind(1, thread);
  std::vector<Decision> out;
  while (s.Step()) out.push_back(ReadDecision(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::optional<Decision>> Store::DecisionForEval(EvalId eval) {
  Stmt s = db_.Prepare("SELECT " DECISION_COLUMNS " FROM decisions WHERE eval_id = ?");
  s.Bind(1, eval);
  if (!s.Step()) return Missing(s);
  Decision d = ReadDecision(s);
  s.Reset();
  return std::optional<Decision>(d);
}

Result<std::optional<Decision>> Store::DecisionById(std::int64_t decision) {
  Stmt s = db_.Prepare("SELECT " DECISION_COLUMNS " FROM decisions WHERE id = ?");
  s.Bind(1, decision);
  if (!s.Step()) return Missing(s);
  Decision d = ReadDecision(s);
  s.Reset();
  return std::optional<Decision>(d);
}

Result<std::optional<std::int64_t>> Store::NewestUnjudged(const std::string& thread) {
  Stmt s = db_.Prepare(
      "SELECT d.id FROM decisions d LEFT JOIN verdicts v ON v.decision_id = d.id "
      "WHERE d.thread_key = ? AND v.decision_id IS NULL AND (d.would_accept = 1 OR (d.outcome = 'accept' AND "
      "d.strength = 'inferred' AND EXISTS (SELECT 1 FROM tickets t WHERE t.decision_id = d.id))) "
      "ORDER BY d.id DESC LIMIT 1");
  s.Bind(1, thread);
  if (!s.Step()) return Missing(s);
  const std::int64_t id = s.Int(0);
  s.Reset();
  return std::optional<std::int64_t>(id);
}

Result<std::vector<RulePrecision>> Store::PrecisionNow(const JudgementSettings& settings, TimeMs now) {
  ASSIGN_OR_RETURN(auto judged, ReadJudged(db_, JudgementWindowStart(settings, now)));
  return PrecisionByRule(judged);
}

Result<bool> Store::InsertVerdict(std::int64_t decision, const std::string& verdict, const std::string& by,
                                  const std::string& via, TimeMs at) {
  Stmt s = db_.Prepare(
      "INSERT OR IGNORE INTO verdicts (decision_id, verdict, by_whom, via, created_at) VALUES (?, ?, ?, ?, ?)");
  s.Bind(1, decision).Bind(2, verdict).Bind(3, by).Bind(4, via).Bind(5, at);
  RETURN_IF_ERROR(s.Run());
  return db_.Changes() > 0;
}

// ---------------------------------------------------------------------------------------------
// Outbox

Result<bool> Store::InsertReceipt(const Receipt& r) {
  Stmt s = db_.Prepare(
      "INSERT OR IGNORE INTO receipts (id, ticket_id, thread_key, channel, kind, body, status, created_at) "
      "VALUES (?,?,?,?,?,?,'pending',?)");
  s.Bind(1, r.id).Bind(2, r.ticket).Bind(3, r.thread).Bind(4, r.channel).Bind(5, MessageKindName(r.kind));
  s.Bind(6, r.body).Bind(7, r.created_at);
  if (Status st = s.Run(); !st.ok()) return st;
  return db_.Changes() > 0;
}

Status Store::InsertEffect(const std::string& receipt_id, const std::string& kind, const std::string& payload, TimeMs at,
                           const std::string& kind_class) {
  Stmt s = db_.Prepare(
      "INSERT INTO effects (receipt_id, kind, payload, status, attempts, next_at, created_at, kind_class) "
      "VALUES (?,?,?,'pending',0,?,?,?)");
  if (receipt_id.empty()) s.BindNull(1); else s.Bind(1, receipt_id);
  return s.Bind(2, kind).Bind(3, payload).Bind(4, at).Bind(5, at).Bind(6, kind_class).Run();
}

Result<std::vector<Receipt>> Store::ReceiptsFor(std::optional<TicketId> ticket) {
  std::vector<Receipt> out;
  if (ticket) {
    Stmt s = db_.Prepare("SELECT " RECEIPT_COLUMNS " FROM receipts WHERE ticket_id = ? ORDER BY created_at, rowid");
    s.Bind(1, *ticket);
    while (s.Step()) out.push_back(ReadReceipt(s));
    RETURN_IF_ERROR(s.status());
  } else {
    Stmt s = db_.Prepare("SELECT " RECEIPT_COLUMNS " FROM receipts ORDER BY created_at, rowid");
    while (s.Step()) out.push_back(ReadReceipt(s));
    RETURN_IF_ERROR(s.status());
  }
  return out;
}

Result<std::vector<Receipt>> Store::ReceiptsForThread(const std::string& thread) {
  Stmt s = db_.Prepare("SELECT " RECEIPT_COLUMNS " FROM receipts WHERE thread_key = ? ORDER BY created_at, rowid");
  s.Bind(1, thread);
  std::vector<Receipt> out;
  while (s.Step()) out.push_back(ReadReceipt(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

// ---------------------------------------------------------------------------------------------
// Commands and counters

Status Store::InsertCommand(TimeMs at, const std::string& who, const std::string& command, const std::string& target,
                            const std::string& detail) {
  Stmt s = db_.Prepare("INSERT INTO commands (at, who, command, target, detail) VALUES (?,?,?,?,?)");
  return s.Bind(1, at).Bind(2, who).Bind(3, command).Bind(4, target).Bind(5, detail).Run();
}

}  // namespace superagent::store
