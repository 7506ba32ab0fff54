#include "core/ticket_stage.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "store/store.h"
#include "superagent/assign_or_return.h"
#include "superagent/github_threads.h"
#include "superagent/text.h"

namespace superagent {

namespace {

using S = Stage;

// A set of stages as bits, so the table below is plain constant data.
constexpr unsigned Bit(Stage s) { return 1u << static_cast<unsigned>(s); }
template <typename... T>
constexpr unsigned Set(T... s) { return (Bit(s) | ...); }

struct Move {
  StageCause cause;
  unsigned from;
  unsigned to;
};

// Every legal move. What is not here is refused: e.g. nothing but a person resumes an ended
// Ticket; a Ticket waiting for a person starts no turn and reports nothing until answered; no
// report lands on an ended Ticket (a stopped one says nothing more); only a person's retry
// unblocks set-aside turns.
const Move kMoves[] = {
    {StageCause::kTurnStarted, Set(S::kIdle, S::kReady, S::kBlocked), Set(S::kWorking)},
    // Reports come from turns, which make the Ticket working first; an executor may also report
    // progress between turns (idle, ready and blocked move among each other).
    {StageCause::kReported, Set(S::kWorking, S::kIdle, S::kReady, S::kBlocked), Set(S::kIdle, S::kReady, S::kBlocked)},
    {StageCause::kAsked, Set(S::kWorking, S::kIdle, S::kReady, S::kBlocked), Set(S::kWaitingForPerson)},
    {StageCause::kAnswered, Set(S::kWaitingForPerson), Set(S::kIdle)},
    {StageCause::kResumed, Set(S::kEnded), Set(S::kIdle)},
    {StageCause::kSetAside, Set(S::kWorking, S::kIdle, S::kReady, S::kWaitingForPerson), Set(S::kBlocked)},
    {StageCause::kRetried, Set(S::kBlocked), Set(S::kIdle)},
    {StageCause::kBackgroundDone, Set(S::kWorking), Set(S::kIdle, S::kReady, S::kBlocked)},
    {StageCause::kEnded, Set(S::kWorking, S::kIdle, S::kReady, S::kBlocked, S::kWaitingForPerson), Set(S::kEnded)},
    {StageCause::kStopped, Set(S::kWorking, S::kIdle, S::kReady, S::kBlocked, S::kWaitingForPerson), Set(S::kEnded)},
};

bool In(unsigned set, Stage s) { return (set & Bit(s)) != 0; }

}  // namespace

const char* StageCauseName(StageCause c) {
  switch (c) {
    case StageCause::kTurnStarted: return "turn started";
    case StageCause::kReported: return "reported";
    case StageCause::kAsked: return "asked";
    case StageCause::kAnswered: return "answered";
    case StageCause::kResumed: return "resumed";
    case StageCause::kSetAside: return "set aside";
    case StageCause::kRetried: return "retried";
    case StageCause::kBackgroundDone: return "background work ended";
    case StageCause::kEnded: return "ended";
    case StageCause::kStopped: return "stopped";
  }
  return "?";
}

bool StageChangeAllowed(Stage from, Stage to, StageCause cause) {
  for (const Move& m : kMoves)
    if (m.cause == cause && In(m.from, from) && In(m.to, to)) return true;
  return false;
}

namespace {

// What the check run says of a Ticket in `stage`, in a reviewer's words.
std::string CheckRunTitle(const Ticket& t) {
  const std::string n = "Ticket #" + std::to_string(t.id);
  switch (t.stage) {
    case Stage::kWorking: return n + " is working on it";
    case Stage::kIdle: return n + " is waiting for its next turn";
    case Stage::kWaitingForPerson:
      return n + " is waiting for " + (t.waiting && !t.waiting->actor.empty() ? t.waiting->actor : std::string("a person"));
    case Stage::kReady: return n + " is ready for review";
    case Stage::kBlocked: return n + " is blocked and needs a person";
    case Stage::kEnded: return n + " has ended";
  }
  return n;
}

}  // namespace

Status EnqueueCheckRuns(store::Store* store, const EngineOptions& options, const Ticket& ticket,
                        const std::string& cause, const std::string& detail, TimeMs now) {
  if (!options.check_runs) return Status::Ok();
  ASSIGN_OR_RETURN(auto pulls, store->TicketPulls(ticket.id));
  bool any = false;
  for (const TicketPull& p : pulls) any = any || p.state == "open";
  if (!any) return Status::Ok();
  ASSIGN_OR_RETURN(std::int64_t event, store->LastTicketEventId(ticket.id));
  std::string summary = text::Repair(detail);
  if (ticket.stage == Stage::kWaitingForPerson && ticket.waiting)
    summary += "\n\nThe question: " + text::Repair(ticket.waiting->question);
  const std::string url = options.panel_url.empty() ? "" : options.panel_url + "/#ticket-" + std::to_string(ticket.id);
  if (!url.empty()) summary += "\n\n[Ticket #" + std::to_string(ticket.id) + " in the panel](" + url + ")";
  for (const TicketPull& p : pulls) {
    if (p.state != "open") continue;
    nlohmann::json payload = {{"channel", github_threads::Repository(p.repo)},
                              // The repository too: a Ticket's PRs in two repositories may share a number.
                              {"idempotency_key", "check_run:ticket:" + std::to_string(ticket.id) + ":pull:" + p.repo +
                                                      "#" + std::to_string(p.number) + ":event:" + std::to_string(event)},
                              {"ticket", ticket.id},
                              {"number", p.number},
                              {"stage", StageName(ticket.stage)},
                              {"cause", cause},
                              {"title", CheckRunTitle(ticket)},
                              {"summary", text::Cut(summary, 4'000)},
                              {"at", event}};
    if (!url.empty()) payload["details_url"] = url;
    RETURN_IF_ERROR(store->InsertEffect("", "check_run", payload.dump(), now, "action"));
  }
  return Status::Ok();
}

Status ChangeStage(store::Store* store, const EngineOptions& options, Ticket* ticket, Stage to, StageCause cause,
                   const std::string& detail, TimeMs now) {
  const Stage from = ticket->stage;
  if (from == to) return Status::Ok();
  if (!StageChangeAllowed(from, to, cause))
    return Status::Conflict("ticket " + std::to_string(ticket->id) + " cannot go from " + StageName(from) + " to " +
                            StageName(to) + " (" + StageCauseName(cause) + ")");
  ticket->stage = to;
  if (to != Stage::kWaitingForPerson) ticket->waiting.reset();
  if (to == Stage::kIdle && from == Stage::kEnded) ticket->end_reason.clear();
  ticket->updated_at = now;
  const std::string line = text::Repair(detail.empty() ? std::string(StageCauseName(cause)) : detail);
  RETURN_IF_ERROR(store->UpdateTicket(*ticket));
  RETURN_IF_ERROR(store->InsertTicketEvent(ticket->id, now, from, to, line));
  spdlog::info("ticket stage id={} from={} to={} cause=\"{}\"", ticket->id, StageName(from), StageName(to), line);
  return EnqueueCheckRuns(store, options, *ticket, StageCauseName(cause), line, now);
}

}  // namespace superagent
