// Judgement's reads (issue 38), shared by the Engine's store (a rule in auto that has lost its
// precision holds its next Ticket) and the panel's views (reports, proposals, /metrics): what was
// done or would have been, the verdict or the outcome that labels it, what a person asked for
// right after a decline, and what each Ticket cost and yielded.
#include "store/rows.h"
#include "superagent/assign_or_return.h"

namespace superagent::store {

using nlohmann::json;

namespace {

std::vector<std::string> Names(const json& list, bool matched_only) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const json& r : list) {
    if (r.is_string()) out.push_back(r.get<std::string>());  // a Mandate's matched_rules
    else if (r.is_object() && r.contains("name") && r["name"].is_string() && (!matched_only || r.value("matched", false) == true))
      out.push_back(r["name"].get<std::string>());
  }
  return out;
}

// The rules an assessment (as decisions.assessment stores it) matched; none from damaged text.
std::vector<std::string> AssessmentRules(const Stmt& s, int col) {
  if (s.IsNull(col)) return {};
  const json a = json::parse(s.Text(col), nullptr, false);
  if (!a.is_object() || !a.contains("rules")) return {};
  return Names(a["rules"], true);
}

std::optional<TimeMs> MinOf(Db& db, const char* sql, TicketId ticket) {
  Stmt s = db.Prepare(sql);
  s.Bind(1, ticket);
  std::optional<TimeMs> out;
  if (s.Step() && !s.IsNull(0)) out = s.Int(0);
  return out;
}

}  // namespace

Result<OutcomeFacts> ReadOutcomeFacts(Db& db, TicketId ticket) {
  OutcomeFacts f;
  // Stopped by a person: the panel's Stop (or a drop of a held Ticket) withdraws the Mandate; a
  // person's "stop" in the discussion is a Decision that ends the Ticket.
  Stmt stop = db.Prepare(
      "SELECT MIN(at) FROM (SELECT e.at AS at FROM mandate_ends e JOIN mandates m ON m.id = e.mandate_id "
      "WHERE m.ticket_id = ?1 AND e.kind = 'withdrawn' "
      "UNION ALL SELECT at FROM ticket_events WHERE ticket_id = ?1 AND to_stage = 'ended' AND cause = 'decision stop')");
  stop.Bind(1, ticket);
  if (stop.Step() && !stop.IsNull(0)) {
    f.stopped_by_person = true;
    Stmt turns = db.Prepare("SELECT COUNT(*) FROM assignments WHERE ticket_id = ? AND started_at IS NOT NULL AND started_at <= ?");
    turns.Bind(1, ticket).Bind(2, stop.Int(0));
    if (turns.Step()) f.turns_when_stopped = turns.Int(0);
    RETURN_IF_ERROR(turns.status());
  }
  RETURN_IF_ERROR(stop.status());
  stop.Reset();
  Stmt pulls = db.Prepare("SELECT state, COUNT(*) FROM ticket_pulls WHERE ticket_id = ? GROUP BY state");
  pulls.Bind(1, ticket);
  while (pulls.Step()) {
    const std::string state = pulls.Text(0);
    const int n = static_cast<int>(pulls.Int(1));
    (state == "merged" ? f.pulls_merged : state == "closed" ? f.pulls_closed : f.pulls_open) += n;
  }
  RETURN_IF_ERROR(pulls.status());
  // A question answered: a result went out and the Ticket reported ready.
  const std::optional<TimeMs> result_at =
      MinOf(db, "SELECT MIN(sent_at) FROM receipts WHERE ticket_id = ? AND kind = 'result' AND status = 'sent'", ticket);
  if (result_at) {
    Stmt ready = db.Prepare("SELECT EXISTS (SELECT 1 FROM ticket_events WHERE ticket_id = ? AND to_stage = 'ready')");
    ready.Bind(1, ticket);
    f.result_sent = ready.Step() && ready.Bool(0);
    RETURN_IF_ERROR(ready.status());
    ready.Reset();
    Stmt thanks = db.Prepare(
        "SELECT t.text FROM ticket_inputs i JOIN triggers t ON t.seq = i.trigger_seq "
        "WHERE i.ticket_id = ? AND i.from_person = 1 AND i.created_at >= ? ORDER BY i.id LIMIT 20");
    thanks.Bind(1, ticket).Bind(2, *result_at);
    while (thanks.Step())
      if (IsThanks(thanks.Text(0))) f.thanked = true;
    RETURN_IF_ERROR(thanks.status());
  }
  return f;
}

Result<std::vector<WouldAcceptRecord>> ReadJudged(Db& db, TimeMs since, std::vector<EvalId>* evals) {
  Stmt s = db.Prepare(
      "SELECT d.id, d.thread_key, d.assessment, d.created_at, d.would_accept, d.strength, v.verdict, v.by_whom, v.via, "
      "v.created_at, t.id, m.admission, m.matched_rules, d.eval_id "
      "FROM decisions d LEFT JOIN verdicts v ON v.decision_id = d.id "
      "LEFT JOIN tickets t ON t.decision_id = d.id LEFT JOIN mandates m ON m.ticket_id = t.id "
      "WHERE d.created_at >= ? AND (d.would_accept = 1 OR (d.outcome = 'accept' AND t.id IS NOT NULL)) ORDER BY d.id");
  s.Bind(1, since);
  std::vector<WouldAcceptRecord> out;
  while (s.Step()) {
    WouldAcceptRecord w;
    w.decision = s.Int(0);
    w.thread = s.Text(1);
    w.created_at = s.Int(3);
    w.accepted = !s.Bool(4);
    w.explicit_request = w.accepted && s.Text(5) == "explicit";
    if (!s.IsNull(6)) {
      w.verdict = ParseVerdict(s.Text(6));
      w.by = s.Text(7);
      w.via = s.Text(8);
      w.verdict_at = s.Int(9);
    }
    if (!s.IsNull(10)) w.ticket = s.Int(10);
    w.admission = s.IsNull(11) ? "" : s.Text(11);
    // A would_accept's rules are its assessment's; an accepted one's, its Mandate's (the same
    // names, and the Mandate is what the work was done under).
    w.rules = w.accepted ? Names(json::parse(s.IsNull(12) ? "[]" : s.Text(12), nullptr, false), false)
                         : AssessmentRules(s, 2);
    if (evals) evals->push_back(s.Int(13));
    out.push_back(std::move(w));
  }
  RETURN_IF_ERROR(s.status());
  s.Reset();
  for (WouldAcceptRecord& w : out) {
    if (w.verdict || !w.ticket) continue;
    ASSIGN_OR_RETURN(const OutcomeFacts facts, ReadOutcomeFacts(db, *w.ticket));
    if (std::optional<OutcomeLabel> label = LabelOutcome(facts)) {
      w.verdict = label->verdict;
      w.by = label->name;
      w.via = "outcome";
    }
  }
  return out;
}

Result<std::vector<MissedRecord>> ReadMissed(Db& db, TimeMs since) {
  // The explicit requests of the window, each with the newest Decision before it on its Thread.
  Stmt s = db.Prepare(
      "SELECT d.id, d.thread_key, d.created_at, p.id, p.strength, p.outcome, p.would_accept, p.assessment, p.created_at "
      "FROM decisions d JOIN decisions p ON p.id = (SELECT MAX(q.id) FROM decisions q WHERE q.thread_key = d.thread_key "
      "AND q.id < d.id) "
      "WHERE d.created_at >= ? AND d.strength = 'explicit' AND d.outcome = 'accept' ORDER BY d.id");
  s.Bind(1, since);
  std::vector<MissedRecord> out;
  while (s.Step()) {
    if (s.Text(4) != "inferred" || s.Text(5) != "ignore" || s.Bool(6)) continue;
    if (s.Int(2) - s.Int(8) > kMissedWithinMs) continue;
    MissedRecord m;
    m.request = s.Int(0);
    m.thread = s.Text(1);
    m.at = s.Int(2);
    m.declined = s.Int(3);
    m.rules = AssessmentRules(s, 7);
    out.push_back(std::move(m));
  }
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<TicketOutcome>> ReadTicketOutcomes(Db& db, TimeMs since) {
  Stmt s = db.Prepare(
      "SELECT t.id, t.stage, t.created_at, m.strength, m.matched_rules, tr.received_at, "
      "(SELECT executor FROM sessions WHERE ticket_id = t.id), "
      "(SELECT MIN(sent_at) FROM receipts WHERE ticket_id = t.id AND kind = 'acknowledgement' AND status = 'sent'), "
      "(SELECT MIN(at) FROM ticket_events WHERE ticket_id = t.id AND cause LIKE 'pushed %'), "
      "(SELECT MIN(created_at) FROM ticket_pulls WHERE ticket_id = t.id), "
      "(SELECT MIN(updated_at) FROM ticket_pulls WHERE ticket_id = t.id AND state = 'merged'), "
      "(SELECT COUNT(*) FROM assignments WHERE ticket_id = t.id AND started_at IS NOT NULL), "
      "(SELECT COALESCE(SUM(total_tokens), 0) FROM token_usage WHERE ticket_id = t.id), "
      "(SELECT COALESCE(SUM(cost_usd), 0) FROM token_usage WHERE ticket_id = t.id), "
      "(SELECT COUNT(*) FROM ticket_events WHERE ticket_id = t.id AND to_stage = 'waiting_for_person') "
      "FROM tickets t JOIN mandates m ON m.ticket_id = t.id LEFT JOIN triggers tr ON tr.seq = m.origin_trigger_seq "
      "WHERE t.created_at >= ? ORDER BY t.id");
  s.Bind(1, since);
  std::vector<TicketOutcome> out;
  std::vector<std::string> stages;
  while (s.Step()) {
    TicketOutcome o;
    o.ticket = s.Int(0);
    stages.push_back(s.Text(1));
    o.created_at = s.Int(2);
    const std::vector<std::string> rules = Names(json::parse(s.Text(4), nullptr, false), false);
    o.rule = s.Text(3) == "explicit" || rules.empty() ? "explicit" : rules.front();
    o.executor = s.IsNull(6) ? "none" : s.Text(6);
    // From the moment the request reached the daemon (the Ticket's own time when it is gone).
    const TimeMs asked = s.IsNull(5) ? o.created_at : s.Int(5);
    auto seconds = [&](int col) -> std::optional<double> {
      if (s.IsNull(col)) return std::nullopt;
      return std::max<TimeMs>(0, s.Int(col) - asked) / 1000.0;
    };
    o.seconds_to_acknowledgement = seconds(7);
    o.seconds_to_first_commit = seconds(8);
    o.seconds_to_pull_request = seconds(9);
    o.seconds_to_merge = seconds(10);
    o.turns = s.Int(11);
    o.tokens = s.Int(12);
    o.cost_usd = s.Real(13);
    o.person_asks = s.Int(14);
    out.push_back(std::move(o));
  }
  RETURN_IF_ERROR(s.status());
  s.Reset();
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSIGN_OR_RETURN(const OutcomeFacts f, ReadOutcomeFacts(db, out[i].ticket));
    const std::string& stage = stages[i];
    if (f.pulls_merged > 0) out[i].outcome = "merged";
    else if (f.pulls_open > 0) out[i].outcome = "pr_open";
    else if (f.pulls_closed > 0) out[i].outcome = "closed";
    else if (f.stopped_by_person) out[i].outcome = "stopped";
    else if (f.result_sent && (stage == "ready" || stage == "ended")) out[i].outcome = "answered";
    else if (stage == "ended") out[i].outcome = "ended";
    else out[i].outcome = "live";
  }
  return out;
}

}  // namespace superagent::store
