// A person's verb (issue 22, docs/002): "stop", "status" and a verdict ("not a request", issue 38)
// typed to the agent are decided by code in the Eval (eval.cpp ParseVerb, JudgeEval), so they work
// when no model answers. Each gets one short
// answer on its Thread — the acknowledgement rule: say once what was done, then be quiet.
#include <spdlog/spdlog.h>

#include "core/engine_internal.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent {

namespace {

std::string Named(const Ticket& tk) { return "ticket " + Num(tk.id) + " (" + text::Cut(tk.scope, 60) + ")"; }

}  // namespace

Status Engine::AnswerVerbLocked(EvalId eval, const std::string& thread, const std::string& verb,
                                const std::vector<TicketId>& stopped, TimeMs now, const std::string& note) {
  std::string body;
  if (!note.empty()) {
    body = note;
  } else if (verb == "stop") {
    if (stopped.empty()) {
      body = "Nothing is running here to stop.";
    } else {
      body = "Stopped";
      for (std::size_t i = 0; i < stopped.size(); ++i) {
        ASSIGN_OR_RETURN(auto tk, store_->GetTicket(stopped[i]));
        if (tk) body += (i ? "; " : ": ") + Named(*tk);
      }
      body += ". A new message here resumes it.";
    }
  } else {
    ASSIGN_OR_RETURN(auto ids, store_->SubscribedTickets({thread}));
    for (TicketId id : ids) {
      ASSIGN_OR_RETURN(auto tk, store_->GetTicket(id));
      if (!tk) continue;
      std::string line = Named(*tk) + ": " + StageName(tk->stage);
      if (tk->stage == Stage::kWaitingForPerson && tk->waiting) line += " (asked " + tk->waiting->actor + ")";
      if (tk->stage == Stage::kEnded && !tk->end_reason.empty()) line += " (" + text::Cut(tk->end_reason, 60) + ")";
      ASSIGN_OR_RETURN(auto pulls, store_->TicketPulls(id));
      for (const TicketPull& p : pulls) line += ", pull request #" + Num(p.number) + " " + p.state;
      body += (body.empty() ? "" : "\n") + line;
    }
    if (body.empty()) body = "No work here.";
  }
  ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(thread));
  if (!channel) return Status::Ok();
  // A Thread with many Tickets: the answer is cut to the channel's limit, never refused.
  const std::string id = "verb:eval:" + Num(eval);
  RETURN_IF_ERROR(SendLocked({id, std::nullopt, thread, MessageKind::kAnswer, CutToLimit(*channel, body, options_)}, now));
  spdlog::info("verb answered eval={} thread={} verb={} stopped={}", eval, thread, verb, stopped.size());
  return Status::Ok();
}

}  // namespace superagent
