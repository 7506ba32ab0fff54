// Budgets in the Mandate (issue 22): what a Ticket has spent against what its Mandate, with the
// extensions people granted, allows. Everything here is computed from stored facts (token usage,
// Assignments, stage changes, budget events), so a restart neither forgets spend nor extensions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/domain.h"
#include "superagent/policy.h"

namespace superagent {

// The dimensions by their policy.yaml names, in the order limits are checked.
inline const std::vector<std::string>& BudgetDimensions() {
  static const std::vector<std::string> kAll = {"tokens", "cost_usd", "wall_clock_minutes", "turns"};
  return kAll;
}

// What a Ticket has spent.
struct BudgetSpend {
  std::int64_t tokens = 0;               // total tokens of every model call recorded for it
  double cost_usd = 0;                   // only costs the model reported; calls with none add 0
  TimeMs working_ms = 0;                 // time in stage working, up to its last stage change
  std::optional<TimeMs> working_since;   // it is working now, since then (not in working_ms)
  std::int64_t turns = 0;                // Assignments that began (a worker turn each)

  // Spend in `dimension`, wall-clock in minutes counted up to `now`.
  double In(const std::string& dimension, TimeMs now) const;
};

// One row of budget_events: a question asked, an extension granted, a stop chosen.
struct BudgetEvent {
  std::int64_t id = 0;
  TicketId ticket = 0;
  std::string kind;       // "asked" | "extended" | "stopped"
  std::string dimension;  // one of BudgetDimensions()
  double amount = 0;      // asked: offered ("N more"); extended: added to the limit
  double spent = 0;       // spend in the dimension then
  double budget = 0;      // the limit in force then
  std::optional<HumanAction> question;  // asked: what was asked
  std::int64_t after_input = 0;         // asked: answers are inputs after this id
  std::string by;                       // extended / stopped: who chose it
  TimeMs at = 0;
};

// A Ticket's budget as it stands.
struct BudgetStatus {
  Budget budget;       // the Mandate's, as granted at accept
  Budget limits;       // with every extension added
  BudgetSpend spent;
  std::string reached;  // the first dimension whose limit is reached; "" when none
  std::string waiting;  // the dimension of a budget question still open; "" when none
};

// A dimension's value in `b` (0: no limit).
double BudgetLimit(const Budget& b, const std::string& dimension);
// The Mandate's budget plus extensions, compared with `spent` at `now`. A limit is reached when
// it is not 0 and the spend is at or over it. `skip_turns`: while a turn runs it may finish, so
// the turns limit only stops the next one.
BudgetStatus ComputeBudgetStatus(const Budget& budget, const std::vector<BudgetEvent>& events,
                                 const BudgetSpend& spent, TimeMs now, bool skip_turns = false);
// The panel's and explain's shape: {"budget":{...limits with extensions},"granted":{...Mandate's},
// "spent":{"tokens","cost_usd","wall_clock_minutes","turns"},"reached":DIM|null,
// "waiting":DIM|null,"working_since":TIME|null}. Minutes are whole minutes spent, rounded down.
nlohmann::json BudgetStatusJson(const BudgetStatus& s, TimeMs now);
// "300000 tokens", "$2.50", "120 minutes of work", "10 turns": a limit or an amount in words.
std::string BudgetAmountText(const std::string& dimension, double amount);
// The worker's one line about its budget, among the host facts of its Mandate ("- budget: …\n").
std::string BudgetFactLine(const Budget& b);

}  // namespace superagent
