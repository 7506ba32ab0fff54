// Budgets (issue 22): the Engine's side of what one Ticket may spend. The scheduler asks before a
// turn and while it runs; each check is one transaction that applies a person's answer to a
// budget question, compares spend with the Mandate's budget plus extensions, and — at a reached
// limit — ends the Assignment and asks the requester one structured question. The limit is code:
// the worker is never asked to watch it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/engine_internal.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

// A number as a person reads it in this dimension: whole units, dollars with cents when needed.
std::string Amount(const std::string& dimension, double v) {
  if (dimension == "cost_usd" && std::floor(v) != v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
  }
  return std::to_string(static_cast<std::int64_t>(std::floor(v)));
}

// The unit after an amount: "1 more minute", "30 more minutes".
std::string Unit(const std::string& dimension, const std::string& amount) {
  const bool one = amount == "1";
  if (dimension == "cost_usd") return one ? "US dollar" : "US dollars";
  if (dimension == "wall_clock_minutes") return one ? "minute" : "minutes";
  if (one) return dimension == "tokens" ? "token" : "turn";
  return dimension;  // "tokens", "turns"
}

enum class BudgetChoice { kNone, kContinue, kStop };

struct BudgetAnswer {
  BudgetChoice choice = BudgetChoice::kNone;
  std::string who;
};

// What an answer input says to a budget question. The panel's form sends {"option": 1|2, ...};
// free text (a message in the discussion, or a panel answer that is a string) means "continue"
// only when it is exactly "1" (surrounding blanks aside): anything else is for the worker.
Result<BudgetAnswer> ReadBudgetAnswer(store::Store* store, const TicketInput& in) {
  BudgetAnswer out;
  std::optional<std::string> text;
  if (in.trigger_seq) {
    ASSIGN_OR_RETURN(auto t, store->FindTriggerBySeq(*in.trigger_seq));
    if (!t) return out;
    out.who = t->trigger.actor.value_or("");
    text = t->trigger.text;
  } else if (in.body.is_object()) {
    out.who = in.body.value("from", "");
    const json answer = in.body.value("answer", json());
    if (answer.is_object()) {
      const json option = answer.value("option", json());
      if (option.is_number_integer() && option.get<std::int64_t>() == 1) out.choice = BudgetChoice::kContinue;
      if (option.is_number_integer() && option.get<std::int64_t>() == 2) out.choice = BudgetChoice::kStop;
      return out;
    }
    if (answer.is_string()) text = answer.get<std::string>();
  }
  if (text) {
    const std::size_t b = text->find_first_not_of(" \t\r\n"), e = text->find_last_not_of(" \t\r\n");
    if (b != std::string::npos && text->substr(b, e - b + 1) == "1") out.choice = BudgetChoice::kContinue;
  }
  return out;
}

}  // namespace

Result<BudgetCheck> Engine::EnforceBudget(TicketId ticket, std::int64_t assignment) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  // Asked every second while a turn runs: the reads need no transaction (the Engine is the only
  // writer and its lock is held), and one is begun only when something is written.
  std::unique_ptr<store::Tx> tx;
  auto begin = [&]() -> Status {
    mu_.AssertHeld();  // a lambda of a locked method: Clang analyses it on its own
    if (!tx) tx = store_->Begin();
    return tx->begin_status();
  };
  BudgetCheck check;
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + Num(ticket) + " does not exist");
  ASSIGN_OR_RETURN(auto a, store_->GetAssignment(assignment));
  if (!a || a->ticket != ticket)
    return Status::NotFound("assignment " + Num(assignment) + " of ticket " + Num(ticket) + " does not exist");
  ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(ticket));
  // Nothing to limit, or nothing to stop: the turn's own paths (BeginTurn, FinishTurn) decide.
  if (!m || !m->budget || !tk->open() || a->state == "ended" || tk->stage == Stage::kWaitingForPerson) return check;
  const bool in_turn = a->state == "running";
  ASSIGN_OR_RETURN(auto events, store_->BudgetEvents(ticket));
  ASSIGN_OR_RETURN(auto spend, store_->BudgetSpendOf(ticket));

  auto end_work = [&]() -> Status {
    mu_.AssertHeld();  // a lambda of a locked method: Clang analyses it on its own
    RETURN_IF_ERROR(store_->EndAssignments(ticket, now));
    ASSIGN_OR_RETURN(auto session, store_->SessionForTicket(ticket));
    if (session && session->status == "running") RETURN_IF_ERROR(store_->SetSessionStatus(session->id, "idle", now));
    return Status::Ok();
  };

  // An open question (the newest event asked one) and answers given since: the first option
  // decides; free text alone leaves the question open.
  if (!in_turn && !events.empty() && events.back().kind == "asked") {
    const BudgetEvent asked = events.back();
    const BudgetStatus before = ComputeBudgetStatus(*m->budget, events, spend, now);
    ASSIGN_OR_RETURN(auto inputs, store_->InputsForTicket(ticket));
    bool answered = false, decided = false;
    for (const TicketInput& in : inputs) {
      if (in.id <= asked.after_input || in.kind != "answer" || in.state != "pending") continue;
      answered = true;
      ASSIGN_OR_RETURN(BudgetAnswer ans, ReadBudgetAnswer(store_.get(), in));
      if (ans.choice == BudgetChoice::kNone) continue;
      decided = true;
      RETURN_IF_ERROR(begin());
      // The daemon took this answer: the worker is told only to go on, never about the budget.
      RETURN_IF_ERROR(store_->MarkInputTaken(in.id));
      const std::string who = text::Repair(ans.who.empty() ? std::string("?") : ans.who);
      BudgetEvent e;
      e.ticket = ticket;
      e.dimension = asked.dimension;
      e.spent = spend.In(asked.dimension, now);
      e.budget = BudgetLimit(before.limits, asked.dimension);
      e.by = who;
      e.at = now;
      if (ans.choice == BudgetChoice::kStop) {
        e.kind = "stopped";
        RETURN_IF_ERROR(store_->InsertBudgetEvent(e));
        tk->end_reason = "budget reached; stopped by " + who;
        RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kEnded, StageCause::kEnded, tk->end_reason, now));
        RETURN_IF_ERROR(end_work());
        RETURN_IF_ERROR(tx->Commit());
        spdlog::info("budget stop ticket={} limit={} by=\"{}\"", ticket, asked.dimension, who);
        return BudgetCheck{BudgetVerdict::kEnded, asked.dimension};
      }
      // "N more" counts from what is spent now, so an overshoot is not charged against it.
      e.kind = "extended";
      e.amount = std::max(0.0, e.spent - e.budget) + asked.amount;
      RETURN_IF_ERROR(store_->InsertBudgetEvent(e));
      events.push_back(e);
      TicketInput go_on;
      go_on.ticket = ticket;
      go_on.kind = "resume";
      go_on.body = json{{"continue", true}, {"from", who}};
      go_on.state = "pending";
      go_on.created_at = now;
      go_on.from_person = true;
      auto id = store_->InsertInput(go_on);
      if (!id.ok()) return id.status();
      spdlog::info("budget extended ticket={} limit={} by=\"{}\" more={} budget={}", ticket, asked.dimension, who,
                   Amount(asked.dimension, e.amount), Amount(asked.dimension, e.budget + e.amount));
      break;
    }
    if (answered && !decided) {
      RETURN_IF_ERROR(begin());
      // Still open: the Ticket waits again without a second message; the text stays pending and
      // reaches the worker with its next turn, as any message does.
      HumanAction q = asked.question.value_or(HumanAction{tk->thread, m->sender.value_or(""), "", json::object()});
      tk->waiting = q;
      RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kWaitingForPerson, StageCause::kAsked,
                                  "budget question still open: the answer chose no option", now));
      RETURN_IF_ERROR(end_work());
      RETURN_IF_ERROR(tx->Commit());
      return BudgetCheck{BudgetVerdict::kWaiting, asked.dimension};
    }
  }

  const BudgetStatus st = ComputeBudgetStatus(*m->budget, events, spend, now, /*skip_turns=*/in_turn);
  if (st.reached.empty()) {
    if (tx) {
      RETURN_IF_ERROR(tx->Commit());
    }
    return check;
  }
  RETURN_IF_ERROR(begin());
  const std::string dim = st.reached;
  const double spent = spend.In(dim, now), limit = BudgetLimit(st.limits, dim), more = BudgetLimit(*m->budget, dim);
  spdlog::info("budget reached ticket={} limit={} spent={} budget={}", ticket, dim, Amount(dim, spent), Amount(dim, limit));
  RETURN_IF_ERROR(end_work());
  if (!m->sender || m->sender->empty()) {
    // Work nobody asked for by name (CI): there is no one to ask, so it stops here.
    tk->end_reason = "budget reached (" + BudgetAmountText(dim, limit) + "); nobody to ask";
    RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kEnded, StageCause::kEnded, tk->end_reason, now));
    RETURN_IF_ERROR(tx->Commit());
    return BudgetCheck{BudgetVerdict::kEnded, dim};
  }
  HumanAction q;
  q.thread = tk->thread;
  q.actor = *m->sender;
  const std::string go_on = "Continue with " + Amount(dim, more) + " more " + Unit(dim, Amount(dim, more));
  q.question = "This work reached its budget: " + BudgetAmountText(dim, spent) + " spent of " +
               BudgetAmountText(dim, limit) + ". " + go_on + ", or stop here?";
  q.form = json{{"options", json::array({go_on, "Stop here"})}, {"free_text", false}, {"purpose", "budget"}};
  ASSIGN_OR_RETURN(const std::int64_t after, store_->LastInputId(ticket));
  const auto asked_before = std::count_if(events.begin(), events.end(), [](const BudgetEvent& e) { return e.kind == "asked"; });
  RETURN_IF_ERROR(AskPersonLocked(&*tk, q, "budget:ticket:" + Num(ticket) + ":" + Num(asked_before + 1), now));
  BudgetEvent e;
  e.ticket = ticket;
  e.kind = "asked";
  e.dimension = dim;
  e.amount = more;
  e.spent = spent;
  e.budget = limit;
  e.question = q;
  e.after_input = after;
  e.at = now;
  RETURN_IF_ERROR(store_->InsertBudgetEvent(e));
  RETURN_IF_ERROR(tx->Commit());
  return BudgetCheck{BudgetVerdict::kAsked, dim};
}

}  // namespace superagent
