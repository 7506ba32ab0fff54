// Budget values (issue 22): spend in a dimension, limits with extensions, the JSON the panel and
// explain show. The Engine's enforcement is in budgets.cpp.
#include "superagent/budget.h"

#include <cmath>
#include <cstdio>

namespace superagent {

using nlohmann::json;

namespace {

constexpr TimeMs kMinuteMs = 60'000;

TimeMs WorkingMs(const BudgetSpend& s, TimeMs now) {
  return s.working_ms + (s.working_since && now > *s.working_since ? now - *s.working_since : 0);
}

void Add(Budget* b, const std::string& dimension, double amount) {
  if (dimension == "tokens") b->tokens += static_cast<std::int64_t>(std::llround(amount));
  else if (dimension == "cost_usd") b->cost_usd += amount;
  else if (dimension == "wall_clock_minutes") b->wall_clock_minutes += static_cast<std::int64_t>(std::llround(amount));
  else if (dimension == "turns") b->turns += static_cast<std::int64_t>(std::llround(amount));
}

}  // namespace

double BudgetSpend::In(const std::string& dimension, TimeMs now) const {
  if (dimension == "tokens") return static_cast<double>(tokens);
  if (dimension == "cost_usd") return cost_usd;
  if (dimension == "wall_clock_minutes") return static_cast<double>(WorkingMs(*this, now)) / kMinuteMs;
  if (dimension == "turns") return static_cast<double>(turns);
  return 0;
}

double BudgetLimit(const Budget& b, const std::string& dimension) {
  if (dimension == "tokens") return static_cast<double>(b.tokens);
  if (dimension == "cost_usd") return b.cost_usd;
  if (dimension == "wall_clock_minutes") return static_cast<double>(b.wall_clock_minutes);
  if (dimension == "turns") return static_cast<double>(b.turns);
  return 0;
}

BudgetStatus ComputeBudgetStatus(const Budget& budget, const std::vector<BudgetEvent>& events, const BudgetSpend& spent,
                                 TimeMs now, bool skip_turns) {
  BudgetStatus s;
  s.budget = s.limits = budget;
  s.spent = spent;
  for (const BudgetEvent& e : events) {
    if (e.kind == "extended") Add(&s.limits, e.dimension, e.amount);
    // The newest event decides whether a question is open: an extension or a stop answers it.
    s.waiting = e.kind == "asked" ? e.dimension : "";
  }
  for (const std::string& d : BudgetDimensions()) {
    if (skip_turns && d == "turns") continue;
    const double limit = BudgetLimit(s.limits, d);
    // A dimension whose granted budget is 0 has no limit, whatever was added to it.
    if (BudgetLimit(budget, d) > 0 && spent.In(d, now) >= limit) {
      s.reached = d;
      break;
    }
  }
  return s;
}

json BudgetStatusJson(const BudgetStatus& s, TimeMs now) {
  json spent{{"tokens", s.spent.tokens},
             {"cost_usd", s.spent.cost_usd},
             {"wall_clock_minutes", WorkingMs(s.spent, now) / kMinuteMs},
             {"turns", s.spent.turns}};
  return json{{"budget", s.limits.ToJson()},
              {"granted", s.budget.ToJson()},
              {"spent", spent},
              {"reached", s.reached.empty() ? json(nullptr) : json(s.reached)},
              {"waiting", s.waiting.empty() ? json(nullptr) : json(s.waiting)},
              {"working_since", s.spent.working_since ? json(FormatTime(*s.spent.working_since)) : json(nullptr)}};
}

std::string BudgetAmountText(const std::string& dimension, double amount) {
  if (dimension == "cost_usd") {
    char buf[64];
    std::snprintf(buf, sizeof buf, "$%.2f", amount);
    return buf;
  }
  const std::string n = std::to_string(static_cast<std::int64_t>(std::floor(amount)));
  const bool one = n == "1";  // "1 minute of work", never "1 minutes of work"
  if (dimension == "tokens") return n + (one ? " token" : " tokens");
  if (dimension == "wall_clock_minutes") return n + (one ? " minute of work" : " minutes of work");
  return n + (one ? " turn" : " turns");
}

std::string BudgetFactLine(const Budget& b) {
  std::string limits;
  for (const std::string& d : BudgetDimensions())
    if (BudgetLimit(b, d) > 0) limits += (limits.empty() ? "" : ", ") + BudgetAmountText(d, BudgetLimit(b, d));
  return "- budget: " + (limits.empty() ? std::string("none") : limits) +
         " (enforced by the host, which pauses the work and asks the requester at a limit; nothing for you to "
         "track)\n";
}

}  // namespace superagent
