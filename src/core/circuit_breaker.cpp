// The circuit breaker (issue 22): a runaway loop — a worker that files issues, a bot that answers a
// bot, a script — must not open Tickets faster than people can look. At accept, code counts the
// Mandates its sender and its Source made in the policy's window; past either limit the new Ticket
// is held in Needs-you. A hold asks nothing in the discussion (a message per held Ticket would feed
// the very loop it stops): its question is for the panel alone, whose person starts it (the
// Assignment and the acknowledgement it would have had) or drops it.
#include <spdlog/spdlog.h>

#include "core/engine_internal.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/json_read.h"
#include "superagent/question.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

const char* const kStart = "Start the work";
const char* const kDrop = "Drop it";

// Over `limit` (0: off) with `count` Tickets already made in the window?
bool Over(std::int64_t count, std::int64_t limit) { return limit > 0 && count >= limit; }

}  // namespace

Result<std::string> Engine::CircuitBreakerLocked(const Mandate& m, TimeMs now) {
  const CircuitBreaker& cb = policy_.circuit_breaker;
  // A request made in the panel comes from a person who is looking already.
  if (m.source == "panel") return std::string();
  const TimeMs since = now - cb.window_minutes * 60'000;
  const std::string window = Num(cb.window_minutes) + " minute" + (cb.window_minutes == 1 ? "" : "s");
  if (m.sender && !m.sender->empty()) {
    ASSIGN_OR_RETURN(const std::int64_t n, store_->CountMandatesSince(m.source, m.sender, since));
    if (Over(n, cb.per_sender))
      return m.source + " sender " + *m.sender + " has opened " + Num(n) + " Tickets in the last " + window +
             " (circuit_breaker.per_sender: " + Num(cb.per_sender) + ")";
  }
  ASSIGN_OR_RETURN(const std::int64_t n, store_->CountMandatesSince(m.source, std::nullopt, since));
  if (Over(n, cb.per_source))
    return m.source + " has opened " + Num(n) + " Tickets in the last " + window + " (circuit_breaker.per_source: " +
           Num(cb.per_source) + ")";
  return std::string();
}

Status Engine::HoldLocked(Ticket* tk, const std::string& by, const std::string& why, const std::string& acknowledgement,
                          TimeMs now, const std::string& ask_repository) {
  HumanAction hold;
  hold.thread = tk->thread;
  // No Source reports an actor with spaces: only the panel can answer this question.
  hold.actor = kPanelActor;
  hold.question = text::Repair("Held by " + by + ": " + why + ". Start this Ticket, or drop it?");
  QuestionForm form{{kStart, kDrop}, false, kHoldPurpose};
  hold.form = QuestionFormJson(form);
  if (!acknowledgement.empty()) hold.form["acknowledgement"] = acknowledgement;
  hold.form["held_by"] = by;
  if (!ask_repository.empty()) hold.form["ask_repository"] = ask_repository;
  tk->waiting = hold;
  RETURN_IF_ERROR(ChangeStage(store_.get(), options_, tk, Stage::kWaitingForPerson, StageCause::kAsked,
                              "held by " + by + ": " + why, now));
  return Status::Ok();
}

Status Engine::ReleaseHoldLocked(Ticket* tk, const std::string& who, const json& answer, TimeMs now) {
  const json option = answer.is_object() ? answer.value("option", json()) : json();
  const std::string ack = tk->waiting ? tk->waiting->form.value("acknowledgement", "") : "";
  const std::string asker = tk->waiting ? json_read::StringOr(tk->waiting->form, "ask_repository") : "";
  if (option == 1 && !asker.empty()) {
    // A chat's Ticket of several repositories: started means its asker is asked which, as at accept.
    ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(tk->id));
    if (m && m->repos.size() > 1) {
      RETURN_IF_ERROR(store_->InsertTicketEvent(tk->id, now, tk->stage, tk->stage, "started by " + who));
      RETURN_IF_ERROR(AskRepositoryLocked(tk, asker, m->repos, now));
      spdlog::info("circuit breaker released ticket={} by=\"{}\" asked=repository", tk->id, who);
      return Status::Ok();
    }
  }
  if (option == 1) {
    RETURN_IF_ERROR(ChangeStage(store_.get(), options_, tk, Stage::kIdle, StageCause::kAnswered, "started by " + who, now));
    auto a = store_->InsertAssignment(tk->id, "worker", "accepted", now);
    if (!a.ok()) return a.status();
    // What the requester would have read at accept, now that the work begins.
    if (!ack.empty())
      RETURN_IF_ERROR(SendLocked({"ack:ticket:" + Num(tk->id), tk->id, tk->thread, MessageKind::kAcknowledgement, ack}, now));
    spdlog::info("circuit breaker released ticket={} by=\"{}\"", tk->id, who);
    return Status::Ok();
  }
  if (option != 2) return Status::InvalidArgument("answer: choose option 1 (" + std::string(kStart) + ") or 2 (" + kDrop + ")");
  // Dropped quietly: the discussion hears nothing more of a request a person chose not to start.
  const std::string held_by = tk->waiting ? tk->waiting->form.value("held_by", "the circuit breaker") : "the circuit breaker";
  tk->end_reason = "dropped by " + who + " after " + held_by + " held it";
  RETURN_IF_ERROR(ChangeStage(store_.get(), options_, tk, Stage::kEnded, StageCause::kStopped, tk->end_reason, now));
  RETURN_IF_ERROR(store_->EndAssignments(tk->id, now));
  ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(tk->id));
  if (m) RETURN_IF_ERROR(store_->EndMandate(m->id, "withdrawn", "dropped in the panel (" + held_by.substr(held_by.rfind("the ", 0) == 0 ? 4 : 0) + ")", who, now));
  spdlog::info("circuit breaker dropped ticket={} by=\"{}\"", tk->id, who);
  return Status::Ok();
}

}  // namespace superagent
