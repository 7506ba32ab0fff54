// Tickets (SPEC §4, §6): what an executor tells the domain about a Ticket's work — a question for a
// person, progress, the end of the work, a line in its history — each one transaction. Every stage
// change goes through ChangeStage (ticket_stage.cpp), the one Ticket state machine.
#include <spdlog/spdlog.h>

#include "core/engine_internal.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/question.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

Status Engine::AskPerson(TicketId ticket, const HumanAction& action, const std::string& message_id) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  RETURN_IF_ERROR(AskPersonLocked(&*tk, action, message_id, now));
  return tx->Commit();
}

Status Engine::AskPersonLocked(Ticket* tk, const HumanAction& action_in, const std::string& message_id, TimeMs now) {
  HumanAction action = action_in;
  for (std::string* s : {&action.thread, &action.actor, &action.question}) *s = text::Repair(*s);
  if (action.thread.empty() || action.actor.empty() || action.question.empty())
    return Status::InvalidArgument("human_action needs thread, actor and question");
  ASSIGN_OR_RETURN(const QuestionForm form, ParseQuestionForm(action.form));
  action.form = QuestionFormJson(form);
  if (!tk->open()) return Status::Conflict("ticket " + std::to_string(tk->id) + " has ended");
  ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(action.thread));
  if (!channel) return Status::InvalidArgument("thread " + action.thread + " is unknown");
  // The person reads the question with its numbered options: that whole message must fit.
  const std::string body = RenderQuestion(action.question, form);
  if (std::string why = TooLong(*channel, body, options_); !why.empty()) return Status::InvalidArgument(why);
  const bool was_waiting = tk->stage == Stage::kWaitingForPerson;
  tk->waiting = action;  // also when it was waiting already: the newest question is the one open
  if (was_waiting) RETURN_IF_ERROR(store_->UpdateTicket(*tk));
  else RETURN_IF_ERROR(ChangeStage(store_.get(), options_, tk, Stage::kWaitingForPerson, StageCause::kAsked, "asked " + action.actor, now));
  RETURN_IF_ERROR(store_->Subscribe(action.thread, tk->id, now));
  Receipt r;
  r.id = message_id;
  r.ticket = tk->id;
  r.thread = action.thread;
  r.channel = *channel;
  r.kind = MessageKind::kAttention;
  r.body = body;
  r.created_at = now;
  auto inserted = store_->InsertReceipt(r);
  if (!inserted.ok()) return inserted.status();
  // The question and its form ride along, so a channel with buttons (Feishu's card) can offer
  // the options; a channel without them posts the rendered body.
  const json payload{{"receipt", r.id}, {"question", action.question}, {"form", action.form}};
  if (*inserted) RETURN_IF_ERROR(store_->InsertEffect(r.id, "post_message", payload.dump(), now));
  return Status::Ok();
}

Status Engine::AskRepositoryLocked(Ticket* tk, const std::string& actor, const std::vector<std::string>& repos,
                                   TimeMs now) {
  HumanAction which;
  which.thread = tk->thread;
  which.actor = actor;
  which.question = "Which repository is this about?";
  which.form = QuestionFormJson({repos, false, "repository"});
  RETURN_IF_ERROR(AskPersonLocked(tk, which, "ask:repository:ticket:" + std::to_string(tk->id), now));
  spdlog::info("repository asked ticket={} repos={}", tk->id, text::Join(repos, ","));
  return Status::Ok();
}

Status Engine::SetStage(TicketId ticket, Stage stage, const std::string& cause) {
  MutexLock lock(&mu_);
  if (stage == Stage::kEnded || stage == Stage::kWaitingForPerson)
    return Status::InvalidArgument(std::string("stage ") + StageName(stage) + " is set by EndTicket/StopTicket/AskPerson");
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  if (!tk->open()) return Status::Conflict("ticket " + std::to_string(ticket) + " has ended");
  const StageCause why = stage == Stage::kWorking ? StageCause::kTurnStarted : StageCause::kReported;
  RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, stage, why, cause, now));
  return tx->Commit();
}

Status Engine::EndTicket(TicketId ticket, const std::string& reason) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  if (!tk->open()) return Status::Ok();
  tk->end_reason = text::Repair(reason);
  RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kEnded, StageCause::kEnded, tk->end_reason, now));
  RETURN_IF_ERROR(store_->EndAssignments(ticket, now));
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("ticket ended id={} reason=\"{}\"", ticket, reason);
  return Status::Ok();
}

Status Engine::NoteTicket(TicketId ticket, const std::string& cause) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + Num(ticket) + " does not exist");
  RETURN_IF_ERROR(store_->InsertTicketEvent(ticket, now, tk->stage, tk->stage, text::Repair(cause)));
  return tx->Commit();
}

}  // namespace superagent
