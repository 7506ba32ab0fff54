// Typed queries for what exists once an Eval has made a Ticket: the Ticket and its history, its
// Mandate, Subscriptions, inputs and Assignments; apart from store.cpp's intake and Eval rows.
#include <algorithm>

#include "store/rows.h"
#include "store/store.h"
#include "store/store_internal.h"

namespace superagent::store {

using nlohmann::json;
using store_internal::InsertReturningId;

// ---------------------------------------------------------------------------------------------
// Tickets, Mandates, Subscriptions

Result<TicketId> Store::InsertTicket(const Ticket& t, std::int64_t origin_seq) {
  Stmt s = db_.Prepare(
      "INSERT INTO tickets (origin_trigger_seq, decision_id, thread_key, scope, stage, waiting, end_reason, "
      "created_at, updated_at) VALUES (?,?,?,?,?,NULL,NULL,?,?)");
  s.Bind(1, origin_seq).Bind(2, t.decision_id).Bind(3, t.thread).Bind(4, t.scope).Bind(5, StageName(t.stage));
  s.Bind(6, t.created_at).Bind(7, t.updated_at);
  return InsertReturningId(db_, s);
}

Result<std::optional<Ticket>> Store::GetTicket(TicketId id) {
  Stmt s = db_.Prepare("SELECT " TICKET_COLUMNS " FROM tickets WHERE id = ?");
  s.Bind(1, id);
  if (!s.Step()) return Missing(s);
  Ticket t = ReadTicket(s);
  s.Reset();
  return std::optional<Ticket>(t);
}

Result<std::optional<TicketId>> Store::TicketByOrigin(std::int64_t origin_seq) {
  Stmt s = db_.Prepare("SELECT id FROM tickets WHERE origin_trigger_seq = ?");
  s.Bind(1, origin_seq);
  if (!s.Step()) return Missing(s);
  TicketId id = s.Int(0);
  s.Reset();
  return std::optional<TicketId>(id);
}

Status Store::UpdateTicket(const Ticket& t) {
  Stmt s = db_.Prepare("UPDATE tickets SET stage = ?, waiting = ?, end_reason = ?, scope = ?, updated_at = ? WHERE id = ?");
  s.Bind(1, StageName(t.stage));
  if (t.waiting) {
    s.Bind(2, json{{"thread", t.waiting->thread}, {"actor", t.waiting->actor}, {"question", t.waiting->question},
                   {"form", t.waiting->form}}.dump());
  } else {
    s.BindNull(2);
  }
  if (t.end_reason.empty()) s.BindNull(3); else s.Bind(3, t.end_reason);
  s.Bind(4, t.scope).Bind(5, t.updated_at).Bind(6, t.id);
  return s.Run();
}

Status Store::InsertTicketEvent(TicketId id, TimeMs at, std::optional<Stage> from, Stage to, const std::string& cause) {
  Stmt s = db_.Prepare("INSERT INTO ticket_events (ticket_id, at, from_stage, to_stage, cause) VALUES (?,?,?,?,?)");
  s.Bind(1, id).Bind(2, at);
  if (from) s.Bind(3, StageName(*from)); else s.BindNull(3);
  return s.Bind(4, StageName(to)).Bind(5, cause).Run();
}

Result<std::string> Store::LastStageCause(TicketId id, Stage to) {
  Stmt s = db_.Prepare("SELECT cause FROM ticket_events WHERE ticket_id = ? AND to_stage = ? ORDER BY id DESC LIMIT 1");
  s.Bind(1, id).Bind(2, StageName(to));
  if (!s.Step()) {
    RETURN_IF_ERROR(s.status());
    return std::string();
  }
  std::string cause = s.Text(0);
  s.Reset();
  return cause;
}

Result<std::int64_t> Store::LastTicketEventId(TicketId id) {
  Stmt s = db_.Prepare("SELECT COALESCE(MAX(id), 0) FROM ticket_events WHERE ticket_id = ?");
  s.Bind(1, id);
  if (!s.Step()) {
    if (!s.status().ok()) return s.status();  // a failed read is not "no lines"
    return std::int64_t{0};
  }
  return s.Int(0);
}

Result<std::int64_t> Store::InsertMandate(const Mandate& m) {
  Stmt s = db_.Prepare(
      "INSERT INTO mandates (ticket_id, policy_version, scope, strength, matched_rules, source, sender, admission, "
      "origin_trigger_seq, created_at, budget, repos) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  s.Bind(1, m.ticket).Bind(2, m.policy_version).Bind(3, m.scope).Bind(4, StrengthName(m.strength));
  s.Bind(5, json(m.matched_rules).dump()).Bind(6, m.source).Bind(7, m.sender).Bind(8, m.admission);
  s.Bind(9, m.origin_trigger_seq).Bind(10, m.created_at);
  s.Bind(11, m.budget ? std::optional<std::string>(m.budget->ToJson().dump()) : std::nullopt);
  s.Bind(12, json(m.repos).dump());
  return InsertReturningId(db_, s);
}

Result<std::optional<Mandate>> Store::MandateForTicket(TicketId id) {
  Stmt s = db_.Prepare("SELECT " MANDATE_COLUMNS " FROM " MANDATE_TABLES " WHERE m.ticket_id = ?");
  s.Bind(1, id);
  if (!s.Step()) return Missing(s);
  Mandate m = ReadMandate(s);
  s.Reset();
  return std::optional<Mandate>(std::move(m));
}

Result<std::int64_t> Store::CountMandatesSince(const std::string& source, const std::optional<std::string>& sender,
                                               TimeMs since) {
  Stmt s = db_.Prepare(sender ? "SELECT COUNT(*) FROM mandates WHERE source = ? AND created_at >= ? AND sender = ?"
                              : "SELECT COUNT(*) FROM mandates WHERE source = ? AND created_at >= ?");
  s.Bind(1, source).Bind(2, since);
  if (sender) s.Bind(3, *sender);
  const std::int64_t n = s.Step() ? s.Int(0) : 0;
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return n;
}

Status Store::EndMandate(std::int64_t mandate_id, const std::string& kind, const std::string& reason,
                         const std::string& by, TimeMs at) {
  Stmt s = db_.Prepare(
      "INSERT OR IGNORE INTO mandate_ends (mandate_id, kind, reason, by_whom, at) VALUES (?,?,?,?,?)");
  return s.Bind(1, mandate_id).Bind(2, kind).Bind(3, reason).Bind(4, by).Bind(5, at).Run();
}

Status Store::Subscribe(const std::string& thread, TicketId ticket, TimeMs at) {
  Stmt s = db_.Prepare("INSERT OR IGNORE INTO subscriptions (thread_key, ticket_id, created_at) VALUES (?,?,?)");
  return s.Bind(1, thread).Bind(2, ticket).Bind(3, at).Run();
}

Result<std::vector<TicketId>> Store::SubscribedTickets(const std::vector<std::string>& threads) {
  std::vector<TicketId> out;
  Stmt s = db_.Prepare("SELECT ticket_id FROM subscriptions WHERE thread_key = ? ORDER BY ticket_id");
  for (const auto& th : threads) {
    s.Reset().Bind(1, th);
    while (s.Step()) {
      TicketId id = s.Int(0);
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    }
    RETURN_IF_ERROR(s.status());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<std::string>> Store::TicketThreads(TicketId ticket) {
  Stmt s = db_.Prepare("SELECT thread_key FROM subscriptions WHERE ticket_id = ? ORDER BY created_at, thread_key");
  s.Bind(1, ticket);
  std::vector<std::string> out;
  while (s.Step()) out.push_back(s.Text(0));
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<TicketId>> Store::OpenTickets() {
  Stmt s = db_.Prepare("SELECT id FROM tickets WHERE stage != 'ended' ORDER BY id");
  std::vector<TicketId> out;
  while (s.Step()) out.push_back(s.Int(0));
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::map<std::string, TimeMs>> Store::EndedTicketThreads(const std::string& prefix, TimeMs since) {
  // An ended Ticket's row is not written again, so updated_at is when it ended.
  Stmt s = db_.Prepare(
      "SELECT s.thread_key, MAX(t.updated_at) FROM tickets t JOIN subscriptions s ON s.ticket_id = t.id"
      " WHERE t.stage = 'ended' AND t.updated_at >= ? AND substr(s.thread_key, 1, ?) = ? GROUP BY s.thread_key");
  s.Bind(1, since);
  s.Bind(2, static_cast<std::int64_t>(prefix.size()));
  s.Bind(3, prefix);
  std::map<std::string, TimeMs> out;
  while (s.Step()) out[s.Text(0)] = s.Int(1);
  RETURN_IF_ERROR(s.status());
  return out;
}

// ---------------------------------------------------------------------------------------------
// Ticket inputs

Result<std::int64_t> Store::InsertInput(const TicketInput& in) {
  Stmt s = db_.Prepare(
      "INSERT OR IGNORE INTO ticket_inputs (ticket_id, kind, trigger_seq, body, state, created_at, from_person) "
      "VALUES (?,?,?,?,?,?,?)");
  s.Bind(1, in.ticket).Bind(2, in.kind).Bind(3, in.trigger_seq).Bind(4, in.body.dump()).Bind(5, in.state);
  s.Bind(6, in.created_at).Bind(7, in.from_person ? 1 : 0);
  if (Status st = s.Run(); !st.ok()) return st;
  return db_.Changes() == 0 ? 0 : db_.LastInsertId();
}

Result<std::vector<TicketInput>> Store::InputsForTicket(TicketId ticket) {
  Stmt s = db_.Prepare("SELECT " INPUT_COLUMNS " FROM ticket_inputs WHERE ticket_id = ? ORDER BY id");
  s.Bind(1, ticket);
  std::vector<TicketInput> out;
  while (s.Step()) out.push_back(ReadInput(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<TicketInput>> Store::InputsForTrigger(std::int64_t seq) {
  Stmt s = db_.Prepare("SELECT " INPUT_COLUMNS " FROM ticket_inputs WHERE trigger_seq = ? ORDER BY id");
  s.Bind(1, seq);
  std::vector<TicketInput> out;
  while (s.Step()) out.push_back(ReadInput(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Status Store::MarkHandedBack(std::int64_t input_id, const std::string& kind, const std::string& reason) {
  Stmt s = db_.Prepare(
      "UPDATE ticket_inputs SET state = 'handed_back', handback_kind = ?, handback_reason = ? WHERE id = ?");
  return s.Bind(1, kind).Bind(2, reason).Bind(3, input_id).Run();
}

// ---------------------------------------------------------------------------------------------
// Assignments

Result<std::int64_t> Store::InsertAssignment(TicketId ticket, const std::string& executor, const std::string& cause,
                                             TimeMs at) {
  Stmt s = db_.Prepare(
      "INSERT INTO assignments (ticket_id, executor, state, cause, created_at) VALUES (?,?,'pending',?,?)");
  s.Bind(1, ticket).Bind(2, executor).Bind(3, cause).Bind(4, at);
  return InsertReturningId(db_, s);
}

Result<std::vector<Assignment>> Store::AssignmentsFor(TicketId ticket) {
  Stmt s = db_.Prepare(
      "SELECT id, ticket_id, executor, state, created_at, started_at, ended_at, cause FROM assignments "
      "WHERE ticket_id = ? ORDER BY id");
  s.Bind(1, ticket);
  std::vector<Assignment> out;
  while (s.Step())
    out.push_back({s.Int(0), s.Int(1), s.Text(2), s.Text(3), s.Int(4), s.OptInt(5), s.OptInt(6), s.Text(7)});
  RETURN_IF_ERROR(s.status());
  return out;
}

Status Store::PromoteQueuedUpdate(TicketId ticket) {
  Stmt s = db_.Prepare(
      "UPDATE assignments SET cause = 'follow_up' WHERE ticket_id = ? AND state = 'pending' AND cause = 'update'");
  return s.Bind(1, ticket).Run();
}

Status Store::EndAssignments(TicketId ticket, TimeMs at) {
  Stmt s = db_.Prepare("UPDATE assignments SET state = 'ended', ended_at = ? WHERE ticket_id = ? AND state != 'ended'");
  return s.Bind(1, at).Bind(2, ticket).Run();
}

}  // namespace superagent::store
