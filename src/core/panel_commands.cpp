// Panel commands (SPEC §4.5): what a person does in the panel — Stop a Ticket, answer its question,
// any other command (a policy reload) — each one transaction that also records who gave the command
// and when. A person's Retry of an item set aside is quarantine.cpp's.
#include <spdlog/spdlog.h>

#include "core/engine_internal.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/question.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

// The panel names its people "NAME (panel)"; a line in a discussion names them as people know them.
std::string PanelName(const std::string& who) {
  std::string name = who;
  if (static const std::string kTag = " (panel)"; name.size() > kTag.size() && name.ends_with(kTag))
    name.resize(name.size() - kTag.size());
  return text::Cut(name, 80);
}

}  // namespace

Status Engine::StopTicket(TicketId ticket, const std::string& who) {
  MutexLock lock(&mu_);
  if (who.empty()) return Status::InvalidArgument("a stop must say who pressed it");
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(ticket));
  if (!m) return Status::Internal("ticket " + std::to_string(ticket) + " has no mandate");
  if (tk->open()) {
    tk->end_reason = "stopped by " + who;
    RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kEnded, StageCause::kStopped, "panel stop by " + who, now));
    RETURN_IF_ERROR(store_->EndAssignments(ticket, now));
    // The discussion tells its own story (issue 22): one short line where the request was made,
    // so the people there do not wait for a result that will never come. Same transaction. It is
    // the daemon's line about the Ticket, not the Ticket's own output: unattached, so the rule
    // that a stopped Ticket's pending messages are cancelled does not cancel it too.
    ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(tk->thread));
    const std::string name = PanelName(who);
    if (channel)
      RETURN_IF_ERROR(SendLocked({"stop:ticket:" + std::to_string(ticket), std::nullopt, tk->thread, MessageKind::kResult,
                                  "Stopped by " + name + " from the panel; nothing more will be done here."},
                                 now));
  }
  // A turn that started before this Stop leaves no running session behind for an ended Ticket.
  ASSIGN_OR_RETURN(auto session, store_->SessionForTicket(ticket));
  if (session && session->status == "running") RETURN_IF_ERROR(store_->SetSessionStatus(session->id, "idle", now));
  RETURN_IF_ERROR(store_->EndMandate(m->id, "withdrawn", "stopped in the panel", who, now));
  RETURN_IF_ERROR(store_->InsertCommand(now, who, "stop", "ticket:" + std::to_string(ticket), ""));
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("ticket stopped id={} by=\"{}\" mandate=withdrawn", ticket, who);
  return Status::Ok();
}

Status Engine::RetryTicket(TicketId ticket, const std::string& who) {
  if (who.empty()) return Status::InvalidArgument("a retry must say who pressed it");
  {
    MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(auto q, store_->GetQuarantine(kQuarantineTurn, std::to_string(ticket)));
    // Its turns are set aside: clearing that is the quarantine's Retry, which also gives the turn.
    if (q && q->set_aside()) {
      // (released below: RetryQuarantined takes the lock itself)
    } else {
      const TimeMs now = clock_->NowMs();
      auto tx = store_->Begin();
      RETURN_IF_ERROR(tx->begin_status());
      ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
      if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
      if (tk->stage != Stage::kBlocked)
        return Status::Conflict("ticket " + std::to_string(ticket) + " is not blocked (stage " + StageName(tk->stage) +
                                "): only a blocked Ticket is retried");
      ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(ticket));
      if (!m || !m->ended_as.empty()) return Status::Conflict("ticket " + std::to_string(ticket) + "'s mandate has ended");
      ASSIGN_OR_RETURN(const std::string why, store_->LastStageCause(ticket, Stage::kBlocked));
      TicketInput in;
      in.ticket = ticket;
      in.kind = "restart";
      in.body = json{{"retried_by", who}, {"blocked_because", why}};
      in.state = "pending";
      in.created_at = now;
      in.from_person = true;
      auto iid = store_->InsertInput(in);
      if (!iid.ok()) return iid.status();
      auto aid = store_->InsertAssignment(ticket, "worker", "retry", now);
      if (!aid.ok()) return aid.status();
      RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kIdle, StageCause::kRetried, "retried by " + who, now));
      RETURN_IF_ERROR(store_->InsertCommand(now, who, "retry", "ticket:" + std::to_string(ticket), why));
      RETURN_IF_ERROR(tx->Commit());
      spdlog::info("ticket retried id={} by=\"{}\"", ticket, who);
      return Status::Ok();
    }
  }
  return RetryQuarantined(kQuarantineTurn, std::to_string(ticket), who);
}

Status Engine::AnswerQuestion(TicketId ticket, const std::string& who, const json& answer) {
  MutexLock lock(&mu_);
  if (who.empty()) return Status::InvalidArgument("an answer must say who gave it");
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + std::to_string(ticket) + " does not exist");
  if (tk->stage != Stage::kWaitingForPerson)
    return Status::Conflict("ticket " + std::to_string(ticket) + " is not waiting for an answer (stage " +
                            StageName(tk->stage) + ")");
  ASSIGN_OR_RETURN(const QuestionForm form, ParseQuestionForm(tk->waiting->form));
  ASSIGN_OR_RETURN(const json structured, NormalizeAnswer(form, answer));
  if (form.purpose == kHoldPurpose) {
    // Code acts on this answer alone: no input for a worker that never asked, no line in the
    // discussion beyond the acknowledgement a started Ticket would have had anyway.
    RETURN_IF_ERROR(ReleaseHoldLocked(&*tk, who, structured, now));
    RETURN_IF_ERROR(store_->InsertCommand(now, who, "answer", "ticket:" + std::to_string(ticket), structured.dump()));
    return tx->Commit();
  }
  TicketInput in;
  in.ticket = ticket;
  in.kind = "answer";
  in.body = json{{"from", who}, {"via", "panel"}, {"question", tk->waiting->question}, {"answer", structured}};
  in.state = "pending";
  in.created_at = now;
  in.from_person = true;
  auto id = store_->InsertInput(in);
  if (!id.ok()) return id.status();
  const HumanAction asked = *tk->waiting;
  RETURN_IF_ERROR(AnsweredLocked(ticket, asked, structured, now));
  RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kIdle, StageCause::kAnswered, "answered by " + who, now));
  auto a = store_->InsertAssignment(ticket, "worker", "answer", now);
  if (!a.ok()) return a.status();
  RETURN_IF_ERROR(store_->InsertCommand(now, who, "answer", "ticket:" + std::to_string(ticket), structured.dump()));
  // The discussion where the question was asked tells its own story: one line with the answer,
  // which the asked person would otherwise never see (issue 22). Cut to the channel's limit.
  ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(asked.thread));
  if (channel) {
    MessageSpec line;
    line.id = "answer:ticket:" + std::to_string(ticket) + ":input:" + std::to_string(*id);
    line.ticket = ticket;
    line.thread = asked.thread;
    line.kind = MessageKind::kAnswer;
    line.body = text::CutWords(PanelName(who) + " answered in the panel: " + AnswerText(structured), 100);
    RETURN_IF_ERROR(SendLocked(line, now));
  }
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("ticket answered id={} by=\"{}\"", ticket, who);
  return Status::Ok();
}

Status Engine::RecordCommand(const std::string& who, const std::string& command, const std::string& target,
                             const std::string& detail) {
  MutexLock lock(&mu_);
  if (who.empty() || command.empty()) return Status::InvalidArgument("a command must say who gave it and what it is");
  auto tx = store_->Begin();
  if (!tx->begin_status().ok()) return tx->begin_status();
  if (Status s = store_->InsertCommand(clock_->NowMs(), text::Repair(who), command, target, text::Repair(detail)); !s.ok()) return s;
  return tx->Commit();
}

}  // namespace superagent
