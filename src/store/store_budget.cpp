// Typed queries for budgets (issue 22): a Ticket's spend, read the same way by the Engine's store
// and the panel's views, and the append-only budget events beside the Mandate.
#include <algorithm>

#include "store/rows.h"
#include "store/store.h"

namespace superagent::store {

using nlohmann::json;

Result<BudgetSpend> ReadBudgetSpend(Db& db, TicketId ticket) {
  BudgetSpend out;
  {
    Stmt s = db.Prepare(
        "SELECT COALESCE(SUM(total_tokens),0), COALESCE(SUM(cost_usd),0) FROM token_usage WHERE ticket_id = ?");
    s.Bind(1, ticket);
    if (s.Step()) {
      out.tokens = s.Int(0);
      out.cost_usd = s.Real(1);
    }
    RETURN_IF_ERROR(s.status());
    s.Reset();
  }
  {
    Stmt s = db.Prepare("SELECT COUNT(*) FROM assignments WHERE ticket_id = ? AND started_at IS NOT NULL");
    s.Bind(1, ticket);
    if (s.Step()) out.turns = s.Int(0);
    RETURN_IF_ERROR(s.status());
    s.Reset();
  }
  // Time in stage working, from the stage changes: a turn's time and the background work that
  // kept the Ticket working after it, but not the time it waited for a person or sat idle.
  Stmt s = db.Prepare("SELECT at, from_stage, to_stage FROM ticket_events WHERE ticket_id = ? ORDER BY id");
  s.Bind(1, ticket);
  std::optional<TimeMs> since;
  while (s.Step()) {
    const bool to_working = s.Text(2) == "working";
    const bool from_working = s.OptText(1).value_or("") == "working";
    if (to_working && !from_working) since = s.Int(0);
    if (from_working && !to_working && since) {
      out.working_ms += std::max<TimeMs>(0, s.Int(0) - *since);
      since.reset();
    }
  }
  RETURN_IF_ERROR(s.status());
  out.working_since = since;
  return out;
}

Result<std::vector<BudgetEvent>> ReadBudgetEvents(Db& db, TicketId ticket) {
  Stmt s = db.Prepare(
      "SELECT id, ticket_id, kind, dimension, amount, spent, budget, question, after_input, by_whom, at "
      "FROM budget_events WHERE ticket_id = ? ORDER BY id");
  s.Bind(1, ticket);
  std::vector<BudgetEvent> out;
  while (s.Step()) {
    BudgetEvent e;
    e.id = s.Int(0);
    e.ticket = s.Int(1);
    e.kind = s.Text(2);
    e.dimension = s.Text(3);
    e.amount = s.Real(4);
    e.spent = s.Real(5);
    e.budget = s.Real(6);
    if (auto q = s.OptText(7)) {
      json j = json::parse(*q, nullptr, false);
      if (j.is_object()) {
        HumanAction a;
        a.thread = j.value("thread", "");
        a.actor = j.value("actor", "");
        a.question = j.value("question", "");
        if (j.contains("form")) a.form = j["form"];
        e.question = a;
      }
    }
    e.after_input = s.OptInt(8).value_or(0);
    e.by = s.OptText(9).value_or("");
    e.at = s.Int(10);
    out.push_back(std::move(e));
  }
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<BudgetSpend> Store::BudgetSpendOf(TicketId ticket) { return ReadBudgetSpend(db_, ticket); }

Result<std::vector<BudgetEvent>> Store::BudgetEvents(TicketId ticket) { return ReadBudgetEvents(db_, ticket); }

Status Store::InsertBudgetEvent(const BudgetEvent& e) {
  Stmt s = db_.Prepare(
      "INSERT INTO budget_events (ticket_id, kind, dimension, amount, spent, budget, question, after_input, by_whom, at) "
      "VALUES (?,?,?,?,?,?,?,?,?,?)");
  s.Bind(1, e.ticket).Bind(2, e.kind).Bind(3, e.dimension).Bind(4, e.amount).Bind(5, e.spent).Bind(6, e.budget);
  if (e.question) {
    s.Bind(7, json{{"thread", e.question->thread}, {"actor", e.question->actor}, {"question", e.question->question},
                   {"form", e.question->form}}.dump());
  } else {
    s.BindNull(7);
  }
  s.Bind(8, e.kind == "asked" ? std::optional<std::int64_t>(e.after_input) : std::nullopt);
  s.Bind(9, e.by.empty() ? std::nullopt : std::optional<std::string>(e.by)).Bind(10, e.at);
  return s.Run();
}

Status Store::MarkInputTaken(std::int64_t input_id) {
  Stmt s = db_.Prepare("UPDATE ticket_inputs SET state = 'taken' WHERE id = ?");
  return s.Bind(1, input_id).Run();
}

Result<std::int64_t> Store::LastInputId(TicketId ticket) {
  Stmt s = db_.Prepare("SELECT COALESCE(MAX(id), 0) FROM ticket_inputs WHERE ticket_id = ?");
  s.Bind(1, ticket);
  std::int64_t id = s.Step() ? s.Int(0) : 0;
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return id;
}

}  // namespace superagent::store
