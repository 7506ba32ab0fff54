// The read face: typed queries on a read-only connection (see views.h). The panel's multi-table
// pages are here; the one-item reads of the domain, over the Store's own queries, are in
// views_domain.cpp.
#include "superagent/views.h"

#include <map>
#include <tuple>

#include "store/answers.h"
#include "store/rows.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/views_internal.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;
using store::Stmt;
using store::ReadDecision;
using store::ReadReceipt;
using store::ReadTicket;
using store::ReadTrigger;
using store::views_internal::EachRow;
using store::views_internal::ReadTx;

namespace {

CommandRecord ReadCommand(Stmt& s) {
  return {s.Int(0), s.Int(1), s.Text(2), s.Text(3), s.OptText(4).value_or(""), s.OptText(5).value_or("")};
}

}  // namespace

Views::Views() = default;
Views::~Views() = default;

Result<std::unique_ptr<Views>> Views::Open(const std::string& db_path) {
  std::unique_ptr<Views> v(new Views());
  MutexLock lock(&v->mu_);  // nobody else has it yet: for the analysis's sake
  ASSIGN_OR_RETURN(v->store_, store::Store::OpenReadOnly(db_path));
  v->db_ = &v->store_->db_;
  return v;
}

Result<bool> Views::QuickCheck(std::chrono::milliseconds budget) {
  MutexLock lock(&mu_);
  return store::QuickCheck(*db_, budget);
}

Result<std::string> Views::InstallId() {
  MutexLock lock(&mu_);
  return ReadInstallId(*db_);
}

std::int64_t Views::DataVersion() {
  MutexLock lock(&mu_);
  Stmt s = db_->Prepare("PRAGMA data_version");
  std::int64_t v = s.Step() ? s.Int(0) : -1;
  s.Reset();
  return v;
}

Result<std::optional<MandateView>> Views::MandateOf(TicketId id) {
  Stmt s = db_->Prepare("SELECT " MANDATE_COLUMNS ", e.by_whom, e.at FROM " MANDATE_TABLES " WHERE m.ticket_id = ?");
  s.Bind(1, id);
  if (!s.Step()) return store::Missing(s);
  MandateView v;
  v.mandate = store::ReadMandate(s);
  v.ended_by = s.OptText(15).value_or("");
  v.ended_at = s.OptInt(16);
  return std::optional<MandateView>(std::move(v));
}

Result<std::vector<AnswerFacts>> Views::AddressedSince(TimeMs since, int limit) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  ASSIGN_OR_RETURN(auto records, store::ReadAddressedSince(*db_, since, limit));
  std::vector<AnswerFacts> out;
  out.reserve(records.size());
  for (const TriggerRecord& rec : records) {
    ASSIGN_OR_RETURN(AnswerFacts f, store::ReadAnswerFacts(*db_, rec));
    out.push_back(std::move(f));
  }
  return out;
}

Result<std::optional<TriggerRecord>> Views::TriggerBySeq(std::int64_t seq) {
  Stmt s = db_->Prepare("SELECT " TRIGGER_COLUMNS " FROM triggers WHERE seq = ?");
  s.Bind(1, seq);
  if (!s.Step()) return store::Missing(s);
  TriggerRecord r = ReadTrigger(s);
  s.Reset();
  Stmt th = db_->Prepare("SELECT thread_key FROM trigger_threads WHERE trigger_seq = ? ORDER BY position");
  th.Bind(1, seq);
  RETURN_IF_ERROR(EachRow(th, [&](Stmt& row) { r.trigger.threads.push_back(row.Text(0)); }));
  return std::optional<TriggerRecord>(std::move(r));
}

Result<TicketRow> Views::RowOf(const Ticket& t) {
  TicketRow row;
  row.ticket = t;
  ASSIGN_OR_RETURN(row.mandate, MandateOf(t.id));
  Stmt s = db_->Prepare("SELECT origin_trigger_seq FROM tickets WHERE id = ?");
  s.Bind(1, t.id);
  std::optional<std::int64_t> seq;
  if (s.Step()) seq = s.Int(0);
  RETURN_IF_ERROR(s.status());
  s.Reset();
  if (seq) {
    ASSIGN_OR_RETURN(row.origin, TriggerBySeq(*seq));
  }
  if (row.mandate && row.mandate->mandate.budget) {
    ASSIGN_OR_RETURN(auto spend, store::ReadBudgetSpend(*db_, t.id));
    ASSIGN_OR_RETURN(auto events, store::ReadBudgetEvents(*db_, t.id));
    row.budget = ComputeBudgetStatus(*row.mandate->mandate.budget, events, spend, spend.working_since.value_or(0));
  }
  ASSIGN_OR_RETURN(row.pulls, store::ReadTicketPulls(*db_, t.id));
  Stmt why = db_->Prepare("SELECT cause FROM ticket_events WHERE ticket_id = ? AND to_stage = ? ORDER BY id DESC LIMIT 1");
  why.Bind(1, t.id).Bind(2, StageName(t.stage));
  if (why.Step()) row.stage_reason = why.Text(0);
  RETURN_IF_ERROR(why.status());
  return row;
}

Result<std::vector<TicketRow>> Views::RowsOf(const std::vector<Ticket>& tickets) {
  std::vector<TicketRow> out;
  for (const Ticket& t : tickets) {
    ASSIGN_OR_RETURN(TicketRow row, RowOf(t));
    out.push_back(std::move(row));
  }
  return out;
}

Result<std::vector<TicketRow>> Views::TicketsInStage(Stage stage, int limit) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  Stmt s = db_->Prepare("SELECT " TICKET_COLUMNS " FROM tickets WHERE stage = ? ORDER BY updated_at, id LIMIT ?");
  s.Bind(1, StageName(stage)).Bind(2, limit);
  std::vector<Ticket> tickets;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& row) { tickets.push_back(ReadTicket(row)); }));
  s.Reset();
  return RowsOf(tickets);
}

Result<std::vector<SystemProblem>> Views::Problems(int threshold) {
  MutexLock lock(&mu_);
  Stmt s = db_->Prepare(
      "SELECT kind, message, failures, first_at, last_at FROM system_problems "
      "WHERE cleared_at IS NULL AND failures >= 1 ORDER BY first_at");
  std::vector<SystemProblem> failing;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) {
    failing.push_back({r.Text(0), r.Text(1), static_cast<int>(r.Int(2)), r.Int(3), r.Int(4)});
  }));
  // A Source whose paths fail together is an outage: its card comes after the first failed
  // round, not after `threshold` of them (issue 34: the card came ~4 minutes into an outage). One
  // path failing alone, or anything else failing, waits for `threshold` in a row (SPEC §6).
  auto source_of = [](const std::string& kind) -> std::string {
    if (kind.rfind("source:", 0) != 0) return "";
    const std::size_t colon = kind.find(':', 7);
    return colon == std::string::npos ? "" : kind.substr(0, colon);
  };
  std::map<std::string, int> paths_failing;
  for (const SystemProblem& p : failing)
    if (std::string src = source_of(p.kind); !src.empty()) ++paths_failing[src];
  std::vector<SystemProblem> out;
  for (SystemProblem& p : failing) {
    const std::string src = source_of(p.kind);
    if (p.failures >= threshold || (!src.empty() && paths_failing[src] >= 2)) out.push_back(std::move(p));
  }
  return out;
}

Result<std::vector<QuarantineItem>> Views::SetAside(int limit) {
  MutexLock lock(&mu_);
  Stmt s = db_->Prepare("SELECT " QUARANTINE_COLUMNS " FROM quarantine WHERE set_aside_at IS NOT NULL "
                         "ORDER BY set_aside_at LIMIT ?");
  s.Bind(1, limit);
  std::vector<QuarantineItem> out;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) { out.push_back(store::ReadQuarantine(r)); }));
  return out;
}

Result<std::optional<PolicyVersionInfo>> Views::CurrentPolicy() {
  MutexLock lock(&mu_);
  Stmt s = db_->Prepare("SELECT version, origin, created_at FROM policy_versions ORDER BY version DESC LIMIT 1");
  if (!s.Step()) return store::Missing(s);
  return std::optional<PolicyVersionInfo>(PolicyVersionInfo{s.Int(0), s.Text(1), s.Int(2)});
}

Result<std::vector<SourceHealth>> Views::SourcesHealth() {
  MutexLock lock(&mu_);
  Stmt s = db_->Prepare("SELECT " HEALTH_COLUMNS " FROM source_health ORDER BY source, path");
  std::vector<SourceHealth> out;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) { out.push_back(store::ReadHealth(r)); }));
  return out;
}

Result<std::vector<CursorRecord>> Views::Cursors() {
  MutexLock lock(&mu_);
  Stmt s = db_->Prepare("SELECT source, name, value, updated_at FROM source_cursors ORDER BY source, name");
  std::vector<CursorRecord> out;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) { out.push_back({r.Text(0), r.Text(1), r.Text(2), r.Int(3)}); }));
  return out;
}

Result<StatusCounts> Views::Counts() {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  StatusCounts c;
  Stmt t = db_->Prepare("SELECT outcome, COUNT(*) FROM triggers GROUP BY outcome");
  RETURN_IF_ERROR(EachRow(t, [&](Stmt& r) { c.triggers[r.Text(0)] = r.Int(1); }));
  Stmt k = db_->Prepare("SELECT stage, COUNT(*) FROM tickets GROUP BY stage");
  RETURN_IF_ERROR(EachRow(k, [&](Stmt& r) { c.tickets[r.Text(0)] = r.Int(1); }));
  Stmt d = db_->Prepare("SELECT outcome, COUNT(*), SUM(would_accept) FROM decisions GROUP BY outcome");
  RETURN_IF_ERROR(EachRow(d, [&](Stmt& r) {
    c.decisions[r.Text(0)] = r.Int(1);
    c.would_accept += r.Int(2);
  }));
  auto count = [&](const char* sql, std::int64_t* n) -> Status {
    mu_.AssertHeld();  // a lambda of a locked method: Clang analyses it on its own
    Stmt s = db_->Prepare(sql);
    *n = s.Step() ? s.Int(0) : 0;
    return s.status();
  };
  RETURN_IF_ERROR(count("SELECT COUNT(*) FROM eval_queue", &c.eval_queue));
  RETURN_IF_ERROR(count("SELECT COUNT(*) FROM receipts WHERE status = 'pending'", &c.receipts_pending));
  RETURN_IF_ERROR(count("SELECT COUNT(*) FROM receipts WHERE status = 'failed'", &c.receipts_failed));
  RETURN_IF_ERROR(count("SELECT COUNT(*) FROM assignments WHERE state = 'running'", &c.assignments_running));
  RETURN_IF_ERROR(count("SELECT COUNT(*) FROM assignments WHERE state = 'pending'", &c.assignments_pending));
  return c;
}

Result<std::map<std::pair<std::string, std::string>, std::int64_t>> Views::TriggersBySource() {
  MutexLock lock(&mu_);
  std::map<std::pair<std::string, std::string>, std::int64_t> out;
  Stmt s = db_->Prepare("SELECT source, outcome, COUNT(*) FROM triggers GROUP BY source, outcome");
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) { out[{r.Text(0), r.Text(1)}] = r.Int(2); }));
  return out;
}

Result<std::vector<TicketRow>> Views::Tickets(std::optional<Stage> stage, int limit, std::optional<TicketId> before,
                                              const std::string& repo) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  // A repository's Tickets: those of its Threads (a key's prefix: the range its index reads),
  // those a chat asked for whose workspace is there, and those across repositories with a
  // workspace there (issue 37).
  Stmt s = db_->Prepare("SELECT " TICKET_COLUMNS " FROM tickets WHERE (?1 IS NULL OR stage = ?1) "
                         "AND (?2 IS NULL OR id < ?2) AND (?4 IS NULL OR (thread_key >= ?5 AND thread_key < ?6) OR "
                         "EXISTS (SELECT 1 FROM workspaces w WHERE w.ticket_id = tickets.id AND w.repo = ?4) OR "
                         "EXISTS (SELECT 1 FROM workspace_repos w WHERE w.ticket_id = tickets.id AND w.repo = ?4)) "
                         "ORDER BY id DESC LIMIT ?3");
  if (stage) s.Bind(1, StageName(*stage));
  else s.BindNull(1);
  // "github:<repo>:" up to "github:<repo>;" (';' follows ':'): every key of the repository.
  const std::string canonical = text::AsciiLower(repo);
  s.Bind(2, before).Bind(3, limit).Bind(5, "github:" + canonical + ":").Bind(6, "github:" + canonical + ";");
  if (canonical.empty()) s.BindNull(4);
  else s.Bind(4, canonical);
  std::vector<Ticket> tickets;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& row) { tickets.push_back(ReadTicket(row)); }));
  s.Reset();
  return RowsOf(tickets);
}

Result<std::vector<JudgedTrigger>> Views::BatchOf(EvalId eval) {
  Stmt s = db_->Prepare("SELECT g.strength, g.gate_reason, g.candidate, t.seq FROM eval_triggers g "
                         "JOIN triggers t ON t.seq = g.trigger_seq WHERE g.eval_id = ? ORDER BY t.seq");
  s.Bind(1, eval);
  std::vector<std::tuple<std::string, std::string, bool, std::int64_t>> rows;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) { rows.emplace_back(r.Text(0), r.Text(1), r.Bool(2), r.Int(3)); }));
  s.Reset();
  std::vector<JudgedTrigger> out;
  for (auto& [strength, reason, candidate, seq] : rows) {
    ASSIGN_OR_RETURN(auto rec, TriggerBySeq(seq));
    if (!rec) continue;  // the join found it: only a concurrent delete could, and reads don't race writes here
    out.push_back({*rec, strength, reason, candidate});
  }
  return out;
}

Result<TicketDetail> Views::Detail(TicketId id) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  Stmt s = db_->Prepare("SELECT " TICKET_COLUMNS " FROM tickets WHERE id = ?");
  s.Bind(1, id);
  if (!s.Step()) {
    RETURN_IF_ERROR(s.status());
    return Status::NotFound("ticket " + std::to_string(id) + " does not exist");
  }
  Ticket t = ReadTicket(s);
  s.Reset();
  TicketDetail d;
  ASSIGN_OR_RETURN(d.row, RowOf(t));

  // The accept that created it, Decisions that name it, and stops judged on its Threads later.
  Stmt ds = db_->Prepare(
      "SELECT " DECISION_COLUMNS " FROM decisions WHERE id = ?1 OR ticket_id = ?2 OR "
      "(outcome = 'stop' AND id > ?1 AND thread_key IN (SELECT thread_key FROM subscriptions WHERE ticket_id = ?2)) "
      "ORDER BY id");
  ds.Bind(1, t.decision_id).Bind(2, id);
  std::vector<Decision> decisions;
  RETURN_IF_ERROR(EachRow(ds, [&](Stmt& r) { decisions.push_back(ReadDecision(r)); }));
  ds.Reset();
  for (Decision& dec : decisions) {
    DecisionView v;
    ASSIGN_OR_RETURN(v.batch, BatchOf(dec.eval));
    v.decision = std::move(dec);
    d.decisions.push_back(std::move(v));
  }

  Stmt as = db_->Prepare(
      "SELECT id, ticket_id, executor, state, created_at, started_at, ended_at FROM assignments "
      "WHERE ticket_id = ? ORDER BY id");
  as.Bind(1, id);
  RETURN_IF_ERROR(EachRow(as, [&](Stmt& r) {
    d.assignments.push_back({r.Int(0), r.Int(1), r.Text(2), r.Text(3), r.Int(4), r.OptInt(5), r.OptInt(6)});
  }));

  Stmt rs = db_->Prepare("SELECT " RECEIPT_COLUMNS " FROM receipts WHERE ticket_id = ? ORDER BY created_at, rowid");
  rs.Bind(1, id);
  RETURN_IF_ERROR(EachRow(rs, [&](Stmt& r) { d.receipts.push_back(ReadReceipt(r)); }));

  Stmt is = db_->Prepare("SELECT " INPUT_COLUMNS " FROM ticket_inputs WHERE ticket_id = ? ORDER BY id");
  is.Bind(1, id);
  std::vector<TicketInput> inputs;
  RETURN_IF_ERROR(EachRow(is, [&](Stmt& r) { inputs.push_back(store::ReadInput(r)); }));
  is.Reset();
  for (TicketInput& in : inputs) {
    InputView v;
    if (in.trigger_seq) {
      ASSIGN_OR_RETURN(v.trigger, TriggerBySeq(*in.trigger_seq));
    }
    v.input = std::move(in);
    d.inputs.push_back(std::move(v));
  }

  Stmt es = db_->Prepare(
      "SELECT id, ticket_id, at, from_stage, to_stage, cause FROM ticket_events WHERE ticket_id = ? ORDER BY id");
  es.Bind(1, id);
  RETURN_IF_ERROR(EachRow(es, [&](Stmt& r) {
    TicketEvent e;
    e.id = r.Int(0);
    e.ticket = r.Int(1);
    e.at = r.Int(2);
    if (auto from = r.OptText(3)) {
      Stage st;
      if (ParseStage(*from, &st)) e.from = st;
    }
    ParseStage(r.Text(4), &e.to);
    e.cause = r.Text(5);
    d.events.push_back(std::move(e));
  }));

  Stmt cs = db_->Prepare("SELECT id, at, who, command, target, detail FROM commands WHERE target = ? ORDER BY id");
  cs.Bind(1, "ticket:" + std::to_string(id));
  RETURN_IF_ERROR(EachRow(cs, [&](Stmt& r) { d.commands.push_back(ReadCommand(r)); }));
  Stmt th = db_->Prepare("SELECT thread_key FROM subscriptions WHERE ticket_id = ? ORDER BY created_at, thread_key");
  th.Bind(1, id);
  RETURN_IF_ERROR(EachRow(th, [&](Stmt& r) { d.threads.push_back(r.Text(0)); }));
  return d;
}

Result<std::vector<RecordedDecision>> Views::DecisionsSince(TimeMs since) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  Stmt s = db_->Prepare("SELECT " DECISION_COLUMNS " FROM decisions WHERE created_at >= ? ORDER BY id");
  s.Bind(1, since);
  std::vector<Decision> decisions;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) { decisions.push_back(ReadDecision(r)); }));
  s.Reset();
  std::vector<RecordedDecision> out;
  for (Decision& d : decisions) {
    RecordedDecision r;
    Stmt t = db_->Prepare(
        "SELECT t.id, t.stage, COALESCE(m.scope, ''), m.id IS NOT NULL AND e.mandate_id IS NULL FROM subscriptions s "
        "JOIN tickets t ON t.id = s.ticket_id LEFT JOIN mandates m ON m.ticket_id = t.id "
        "LEFT JOIN mandate_ends e ON e.mandate_id = m.id WHERE s.thread_key = ? AND s.created_at < ? ORDER BY t.id");
    t.Bind(1, d.thread).Bind(2, d.created_at);
    RETURN_IF_ERROR(EachRow(t, [&](Stmt& row) {
      TicketView v;
      v.id = row.Int(0);
      ParseStage(row.Text(1), &v.stage);
      v.scope = row.Text(2);
      v.mandate_active = row.Bool(3);
      r.tickets.push_back(v);
    }));
    t.Reset();
    r.thread_had_ticket = !r.tickets.empty();
    ASSIGN_OR_RETURN(r.view.batch, BatchOf(d.eval));
    r.view.decision = std::move(d);
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<DecisionView>> Views::WouldAccept(int limit) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  Stmt s = db_->Prepare("SELECT " DECISION_COLUMNS " FROM decisions WHERE would_accept = 1 ORDER BY id DESC LIMIT ?");
  s.Bind(1, limit);
  std::vector<Decision> decisions;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) { decisions.push_back(ReadDecision(r)); }));
  s.Reset();
  std::vector<DecisionView> out;
  for (Decision& d : decisions) {
    DecisionView v;
    ASSIGN_OR_RETURN(v.batch, BatchOf(d.eval));
    v.decision = std::move(d);
    out.push_back(std::move(v));
  }
  return out;
}

Result<std::vector<WouldAcceptRecord>> Views::WouldAccepts(TimeMs since) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  Stmt s = db_->Prepare("SELECT d.id, d.eval_id, d.thread_key, d.assessment, d.created_at, v.verdict, v.by_whom, v.via, "
                        "v.created_at "
                        "FROM decisions d LEFT JOIN verdicts v ON v.decision_id = d.id "
                        "WHERE d.would_accept = 1 AND d.created_at >= ? ORDER BY d.id");
  s.Bind(1, since);
  std::vector<std::pair<WouldAcceptRecord, EvalId>> rows;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) {
    WouldAcceptRecord w;
    w.decision = r.Int(0);
    w.thread = r.Text(2);
    const nlohmann::json assessment = nlohmann::json::parse(r.Text(3), nullptr, false);
    if (assessment.is_object() && assessment.contains("rules") && assessment["rules"].is_array())
      for (const auto& rule : assessment["rules"])
        if (rule.is_object() && rule.value("matched", false) && rule.contains("name") && rule["name"].is_string())
          w.rules.push_back(rule["name"].get<std::string>());
    w.created_at = r.Int(4);
    if (!r.IsNull(5)) w.verdict = ParseVerdict(r.Text(5));
    w.by = r.IsNull(6) ? "" : r.Text(6);
    w.via = r.IsNull(7) ? "" : r.Text(7);
    w.verdict_at = r.IsNull(8) ? 0 : r.Int(8);
    rows.emplace_back(std::move(w), r.Int(1));
  }));
  s.Reset();
  std::vector<WouldAcceptRecord> out;
  for (auto& [w, eval] : rows) {
    ASSIGN_OR_RETURN(auto batch, BatchOf(eval));
    if (!batch.empty()) w.text = batch.back().record.trigger.text;
    out.push_back(std::move(w));
  }
  return out;
}

Result<std::vector<WouldAcceptRecord>> Views::Judged(TimeMs since) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  return ReadJudged(*db_, since);
}

Result<std::vector<MissedRecord>> Views::Missed(TimeMs since) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  return ReadMissed(*db_, since);
}

Result<std::vector<TicketOutcome>> Views::TicketOutcomes(TimeMs since) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  return ReadTicketOutcomes(*db_, since);
}

Result<std::vector<TicketOutcome>> Views::TicketOutcomesOf(const TicketSet& tickets) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  return ReadTicketOutcomes(*db_, 0, tickets);
}

Result<std::vector<CommandRecord>> Views::Commands(int limit) {
  MutexLock lock(&mu_);
  Stmt s = db_->Prepare("SELECT id, at, who, command, target, detail FROM commands ORDER BY id DESC LIMIT ?");
  s.Bind(1, limit);
  std::vector<CommandRecord> out;
  RETURN_IF_ERROR(EachRow(s, [&](Stmt& r) { out.push_back(ReadCommand(r)); }));
  return out;
}

}  // namespace superagent
