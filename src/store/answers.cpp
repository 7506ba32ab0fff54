// The reads behind the answer invariant (store/answers.h). A message's answer is spread over the
// tables that record it (its Gate rows, the Ticket it created and that Ticket's receipts, the
// Tickets it reached, the set-aside Threads): each query below reads one of them.
#include "store/answers.h"

#include "store/rows.h"

namespace superagent::store {

namespace {

// Receipts that are said or on their way; a failed or abandoned one said nothing.
#define SAID "status IN ('pending', 'sent')"

// One optional integer from a one-column query bound with `seq` (and `at`, when the query has a
// second parameter).
Result<std::optional<std::int64_t>> OneInt(Db& db, const char* sql, std::int64_t seq, std::optional<TimeMs> at = {}) {
  Stmt s = db.Prepare(sql);
  s.Bind(1, seq);
  if (at) s.Bind(2, *at);
  if (!s.Step()) return Missing(s);
  std::optional<std::int64_t> v = s.OptInt(0);
  s.Reset();
  if (!v) return std::optional<std::int64_t>();
  return v;
}

}  // namespace

Result<AnswerFacts> ReadAnswerFacts(Db& db, const TriggerRecord& rec) {
  AnswerFacts f;
  f.record = rec;
  const std::int64_t seq = rec.seq;
  {  // The Gate's latest verdict, and the latest failed attempt's reason.
    Stmt s = db.Prepare("SELECT strength, gate_reason FROM eval_triggers WHERE trigger_seq = ? ORDER BY eval_id");
    s.Bind(1, seq);
    while (s.Step()) {
      std::string reason = s.Text(1);
      if (reason.rfind("not judged: ", 0) == 0) {
        f.last_failure = reason.substr(12);
        continue;
      }
      f.gate_strength = s.Text(0);
      f.gate_reason = std::move(reason);
    }
    RETURN_IF_ERROR(s.status());
  }
  {
    Stmt s = db.Prepare("SELECT attempts, eval_id FROM eval_queue WHERE trigger_seq = ?");
    s.Bind(1, seq);
    if (s.Step()) {
      f.queued_attempts = static_cast<int>(s.Int(0));
      f.in_running_eval = !s.IsNull(1);
      s.Reset();
    } else {
      RETURN_IF_ERROR(s.status());
    }
  }
  if (f.last_failure.empty()) {  // an Eval that ended `unavailable` (timed out, failed) says why
    Stmt s = db.Prepare(
        "SELECT d.reason FROM decisions d JOIN evals e ON e.id = d.eval_id JOIN trigger_threads tt ON tt.thread_key = "
        "e.thread_key WHERE tt.trigger_seq = ? AND d.outcome = 'unavailable' AND d.created_at >= ? ORDER BY d.id DESC "
        "LIMIT 1");
    s.Bind(1, seq).Bind(2, rec.received_at);
    if (s.Step()) {
      f.last_failure = s.Text(0);
      s.Reset();
    } else {
      RETURN_IF_ERROR(s.status());
    }
  }
  {
    Stmt s = db.Prepare("SELECT id, stage FROM tickets WHERE origin_trigger_seq = ?");
    s.Bind(1, seq);
    if (s.Step()) {
      f.created = s.Int(0);
      Stage st;
      if (ParseStage(s.Text(1), &st)) f.created_stage = st;
      s.Reset();
    } else {
      RETURN_IF_ERROR(s.status());
    }
  }
  if (f.created) {
    ASSIGN_OR_RETURN(auto said, OneInt(db, "SELECT 1 FROM receipts WHERE ticket_id = ? AND " SAID " LIMIT 1", *f.created));
    f.acknowledged = said.has_value();
  }
  {  // A reply written for it: a verb's answer (keyed by its Eval), or a "could not take it" line.
    ASSIGN_OR_RETURN(auto replied,
                     OneInt(db,
                            "SELECT 1 FROM receipts WHERE " SAID " AND (id = 'unable:trigger:' || ?1 OR id IN "
                            "(SELECT 'verb:eval:' || eval_id FROM eval_triggers WHERE trigger_seq = ?1)) LIMIT 1",
                            seq));
    f.replied = replied.has_value();
  }
  {  // The Tickets it reached (not the one it created): who said something after it, who holds it.
    Stmt s = db.Prepare(
        "SELECT i.ticket_id, i.state, t.stage, EXISTS (SELECT 1 FROM receipts r WHERE r.ticket_id = i.ticket_id AND "
        "r." SAID " AND r.created_at > ?2) FROM ticket_inputs i JOIN tickets t ON t.id = i.ticket_id "
        "WHERE i.trigger_seq = ?1 AND t.origin_trigger_seq != ?1 ORDER BY i.id");
    s.Bind(1, seq).Bind(2, rec.received_at);
    while (s.Step()) {
      const TicketId ticket = s.Int(0);
      const std::string state = s.Text(1);
      Stage stage = Stage::kEnded;
      ParseStage(s.Text(2), &stage);
      if (s.Bool(3) && !f.answered_by) f.answered_by = ticket;
      if (state == "handed_back") continue;
      if ((stage == Stage::kWorking || stage == Stage::kIdle || stage == Stage::kReady) && !f.taken_by) f.taken_by = ticket;
      if ((stage == Stage::kWaitingForPerson || stage == Stage::kBlocked) && !f.waiting_on) f.waiting_on = ticket;
    }
    RETURN_IF_ERROR(s.status());
  }
  {
    ASSIGN_OR_RETURN(auto aside,
                     OneInt(db,
                            "SELECT 1 FROM quarantine q JOIN trigger_threads tt ON tt.thread_key = q.item WHERE "
                            "tt.trigger_seq = ? AND q.kind = 'eval' AND q.set_aside_at IS NOT NULL LIMIT 1",
                            seq));
    f.set_aside = aside.has_value();
  }
  return f;
}

Result<std::vector<TriggerRecord>> ReadAddressedSince(Db& db, TimeMs since, int limit) {
  Stmt s = db.Prepare("SELECT " TRIGGER_COLUMNS " FROM triggers WHERE human = 1 AND addressed = 1 AND received_at >= ? "
                      "AND (filter_reason IS NULL OR filter_reason != 'own_message') ORDER BY seq DESC LIMIT ?");
  s.Bind(1, since).Bind(2, limit);
  std::vector<TriggerRecord> out;
  while (s.Step()) out.push_back(ReadTrigger(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace superagent::store
