// Row readers shared by the Engine's store and the panel's read-only views.
#include "store/rows.h"

#include "superagent/source_state.h"

namespace superagent::store {

using nlohmann::json;

TriggerRecord ReadTrigger(Stmt& s, int c) {
  TriggerRecord r;
  r.seq = s.Int(c + 0);
  r.trigger.id = s.Text(c + 1);
  r.trigger.source = s.Text(c + 2);
  r.trigger.scope = s.Text(c + 3);
  r.trigger.actor = s.OptText(c + 4);
  r.trigger.human = s.Bool(c + 5);
  r.trigger.addressed = s.Bool(c + 6);
  r.trigger.text = s.Text(c + 7);
  r.trigger.at = s.Int(c + 8);
  r.trigger.channel = s.Text(c + 9);
  r.trigger.meta = json::parse(s.Text(c + 10), nullptr, false);
  r.via = s.Text(c + 11);
  r.received_at = s.Int(c + 12);
  r.outcome = s.Text(c + 13) == "filtered" ? IntakeOutcome::kFiltered : IntakeOutcome::kStored;
  r.filter_reason = s.OptText(c + 14).value_or("");
  return r;
}

Ticket ReadTicket(Stmt& s) {
  Ticket t;
  t.id = s.Int(0);
  t.thread = s.Text(1);
  ParseStage(s.Text(2), &t.stage);
  t.scope = s.Text(3);
  if (auto w = s.OptText(4)) {
    json j = json::parse(*w, nullptr, false);
    if (!j.is_object()) j = json::object();  // a damaged row still reads; the question is just empty
    HumanAction a;
    a.thread = j.value("thread", "");
    a.actor = j.value("actor", "");
    a.question = j.value("question", "");
    a.form = j.value("form", json::object());
    t.waiting = a;
  }
  t.end_reason = s.OptText(5).value_or("");
  t.decision_id = s.Int(6);
  t.created_at = s.Int(7);
  t.updated_at = s.Int(8);
  return t;
}

Mandate ReadMandate(Stmt& s) {
  Mandate m;
  m.id = s.Int(0);
  m.ticket = s.Int(1);
  m.policy_version = s.Int(2);
  m.scope = s.Text(3);
  ParseStrength(s.Text(4), &m.strength);
  json rules = json::parse(s.Text(5), nullptr, false);
  if (rules.is_array())
    for (const auto& r : rules)
      if (r.is_string()) m.matched_rules.push_back(r.get<std::string>());
  m.source = s.Text(6);
  m.sender = s.OptText(7);
  m.admission = s.Text(8);
  m.origin_trigger_seq = s.Int(9);
  m.created_at = s.Int(10);
  // A damaged budget reads as none rather than as a limit nobody set.
  if (auto b = s.OptText(11)) {
    if (auto budget = Budget::FromJson(json::parse(*b, nullptr, false)); budget.ok()) m.budget = *budget;
  }
  m.ended_as = s.OptText(12).value_or("");
  m.ended_reason = s.OptText(13).value_or("");
  json repos = json::parse(s.Text(14), nullptr, false);
  if (repos.is_array())
    for (const auto& r : repos)
      if (r.is_string()) m.repos.push_back(r.get<std::string>());
  return m;
}

Decision ReadDecision(Stmt& s) {
  Decision d;
  d.id = s.Int(0);
  d.eval = s.Int(1);
  d.thread = s.Text(2);
  ParseDecisionOutcome(s.Text(3), &d.outcome);
  d.would_accept = s.Bool(4);
  ParseStrength(s.Text(5), &d.strength);
  d.reason = s.Text(6);
  d.assessment = s.IsNull(7) ? json(nullptr) : json::parse(s.Text(7), nullptr, false);
  d.ticket = s.OptInt(8);
  d.policy_version = s.Int(9);
  d.created_at = s.Int(10);
  return d;
}

Result<std::string> ReadInstallId(Db& db) {
  Stmt s = db.Prepare("SELECT install_id FROM install WHERE id = 1");
  if (!s.status().ok()) return Status::NotFound("no install id yet: the daemon's next start adds it (schema 14)");
  if (!s.Step()) {
    RETURN_IF_ERROR(s.status());
    return Status::NotFound("no install id in the database");
  }
  std::string id = s.Text(0);
  s.Reset();
  return id;
}

SourceHealth ReadHealth(Stmt& s) {
  SourceHealth h;
  h.source = s.Text(0);
  h.path = s.Text(1);
  h.last_success_at = s.OptInt(2);
  h.last_error = s.OptText(3).value_or("");
  h.last_error_at = s.OptInt(4);
  h.consecutive_failures = static_cast<int>(s.Int(5));
  h.skipped_items = s.Int(6);
  h.note = s.Text(7);
  return h;
}

TicketInput ReadInput(Stmt& s) {
  TicketInput in;
  in.id = s.Int(0);
  in.ticket = s.Int(1);
  in.kind = s.Text(2);
  in.trigger_seq = s.OptInt(3);
  in.body = json::parse(s.Text(4), nullptr, false);
  in.state = s.Text(5);
  in.handback_kind = s.OptText(6).value_or("");
  in.handback_reason = s.OptText(7).value_or("");
  in.created_at = s.Int(8);
  in.from_person = s.Int(9) != 0;
  return in;
}

Receipt ReadReceipt(Stmt& s) {
  Receipt r;
  r.id = s.Text(0);
  r.ticket = s.OptInt(1);
  r.thread = s.Text(2);
  r.channel = s.Text(3);
  std::string kind = s.Text(4);
  for (auto k : {MessageKind::kAcknowledgement, MessageKind::kAnswer, MessageKind::kResult, MessageKind::kAttention})
    if (kind == MessageKindName(k)) r.kind = k;
  r.body = s.Text(5);
  r.status = s.Text(6);
  r.created_at = s.Int(7);
  return r;
}

}  // namespace superagent::store
