// Engine: worker turns (SPEC §6), each one transaction. BeginTurn reads and marks everything a turn
// needs, so a Stop either lands before it (the turn does not start) or after it (the turn is
// cancelled and its end says nothing); FinishTurn applies a report — actions, result message,
// stage, the Assignment's end and the failure count — together, so a daemon killed at any point
// has either done all of it (no turn is repeated) or none (the restarted turn posts the one result).
// The Assignments a Ticket is owed — follow-ups, a restart's recovery — are made here too.
#include <set>

#include <spdlog/spdlog.h>

#include "core/engine_internal.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

// An Assignment and its Ticket, as the caller's transaction reads them.
struct AssignmentAndTicket {
  Assignment assignment;
  Ticket ticket;
};

Result<AssignmentAndTicket> LoadAssignment(store::Store* store, std::int64_t id) {
  ASSIGN_OR_RETURN(auto a, store->GetAssignment(id));
  if (!a) return Status::NotFound("assignment " + Num(id) + " does not exist");
  ASSIGN_OR_RETURN(auto tk, store->GetTicket(a->ticket));
  if (!tk) return Status::NotFound("ticket " + Num(a->ticket) + " does not exist");
  return AssignmentAndTicket{*a, *tk};
}

// The causes of a turn a person is owed an answer from: one started by the request, a person's
// message, answer or Retry, or a restart of one. A turn woken by the intercom or by a bot's or
// CI's input may end quietly — nobody asked it anything.
bool OwedAnAnswer(const Assignment& a) {
  static const std::set<std::string> kOwed = {"accepted", "follow_up", "answer", "resume", "retry", "restart"};
  return kOwed.count(a.cause) > 0;
}

constexpr char kNoResultWords[] = "My last turn on this ended without a result.";
constexpr char kNoResultError[] = "turn ended without a report";

// What the requester of a blocked Ticket can do now: reply (a person's message resumes it), or
// nothing, when this failure sets its turns aside and a person was shown it instead.
std::string BlockedAdvice(bool set_aside) {
  return set_aside ? "\n\nIt failed the same way several times in a row, so I have stopped; a maintainer has "
                     "been shown it on the panel."
                   : "\n\nReply here and I will try again; a maintainer can also retry it from the panel.";
}

std::string TurnSuffix(TicketId ticket, std::int64_t assignment) {
  return ":ticket:" + Num(ticket) + ":assignment:" + Num(assignment);
}

}  // namespace

Result<TurnContext> Engine::BeginTurn(std::int64_t assignment, const std::string& executor,
                                      const std::optional<WorkspaceRecord>& prepared,
                                      const std::vector<WorkspaceRecord>& prepared_others) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(AssignmentAndTicket loaded, LoadAssignment(store_.get(), assignment));
  Assignment* a = &loaded.assignment;
  Ticket* tk = &loaded.ticket;
  ASSIGN_OR_RETURN(const std::string refused, StartAssignmentLocked(a, tk, executor, now));
  if (!refused.empty()) {
    // The Assignment can never run: it ends here, in the same transaction that says so.
    if (a->state == "pending") RETURN_IF_ERROR(store_->SetAssignmentState(assignment, "ended", "", now));
    RETURN_IF_ERROR(tx->Commit());
    return Status::Conflict(refused);
  }
  ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(a->ticket));
  if (!mandate) return Status::Internal("ticket " + Num(a->ticket) + " has no mandate");

  TurnContext c;
  if (prepared) {
    WorkspaceRecord w = *prepared;
    w.created_at = now;
    RETURN_IF_ERROR(store_->UpsertWorkspace(w));
  }
  ASSIGN_OR_RETURN(auto ws, store_->GetWorkspace(a->ticket));
  if (ws && !ws->removed_at) c.workspace = *ws;
  for (WorkspaceRecord w : prepared_others) {
    w.created_at = now;
    RETURN_IF_ERROR(store_->UpsertWorkspaceRepo(w));
  }
  if (c.workspace) {
    ASSIGN_OR_RETURN(c.other_workspaces, store_->WorkspaceRepos(a->ticket));
  }

  ASSIGN_OR_RETURN(auto session, store_->SessionForTicket(a->ticket));
  if (!session) {
    Session s;
    s.ticket = a->ticket;
    s.title = "Ticket " + Num(a->ticket) + ": " + tk->scope;
    s.executor = executor;
    s.status = "idle";
    s.created_at = s.updated_at = now;
    ASSIGN_OR_RETURN(s.id, store_->InsertSession(s));
    session = s;
  }
  RETURN_IF_ERROR(store_->SetSessionStatus(session->id, "running", now));
  session->status = "running";
  ASSIGN_OR_RETURN(const bool has_events, store_->SessionHasEvents(session->id));
  c.first_turn = !has_events;

  ASSIGN_OR_RETURN(c.inputs, TakeInputsLocked(a->ticket, mandate->origin_trigger_seq));
  ASSIGN_OR_RETURN(auto origin, store_->FindTriggerBySeq(mandate->origin_trigger_seq));
  if (origin) c.request_text = origin->trigger.text;
  for (const std::string& name : mandate->matched_rules)
    for (const Rule& rule : policy_.rules)
      if (rule.name == name) c.rules.emplace_back(name, rule.instructions);
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("assignment started id={} ticket={} executor={} cause={}", assignment, a->ticket, executor, a->cause);
  c.assignment = *a;
  c.ticket = *tk;
  c.mandate = *mandate;
  c.session = *session;
  return c;
}

Result<TurnOutcome> Engine::FinishTurn(const TurnEnd& end) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto a, store_->GetAssignment(end.assignment));
  if (!a) return Status::NotFound("assignment " + Num(end.assignment) + " does not exist");
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(a->ticket));
  if (!tk) return Status::NotFound("ticket " + Num(a->ticket) + " does not exist");
  TurnOutcome out;
  if (a->state != "ended") RETURN_IF_ERROR(store_->SetAssignmentState(a->id, "ended", "", now));
  ASSIGN_OR_RETURN(auto session, store_->SessionForTicket(a->ticket));
  if (session && session->status == "running") RETURN_IF_ERROR(store_->SetSessionStatus(session->id, "idle", now));
  out.stage = tk->stage;
  // Stopped meanwhile (or its Assignment ended by a Stop): nothing more is said or changed.
  if (!tk->open() || a->state == "ended") {
    RETURN_IF_ERROR(tx->Commit());
    return out;
  }
  // Last, the turn's failure (or success) is counted: the report of a failure that sets the
  // Ticket's turns aside is still said, and the Ticket ends up blocked with why.
  std::string error = end.error;
  auto count_and_commit = [&]() -> Status {
    mu_.AssertHeld();  // a lambda of a locked method: Clang analyses it on its own
    RETURN_IF_ERROR(CountTurnLocked(a->ticket, error, now));
    ASSIGN_OR_RETURN(auto now_tk, store_->GetTicket(a->ticket));
    if (now_tk) out.stage = now_tk->stage;
    return tx->Commit();
  };
  ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(a->ticket));
  const std::string suffix = TurnSuffix(a->ticket, a->id);
  // A turn that ends without a report leaves the requester owed a result: the Ticket is blocked
  // and they are told, in the daemon's words (issue 34: a Ticket never idles in silence). While
  // background work runs the line waits for it to end (SayNoResultLocked), as the stage does.
  const bool no_report = !end.reported && !end.background_running && OwedAnAnswer(*a);
  Stage to = end.reported.value_or(no_report ? Stage::kBlocked : Stage::kIdle);
  std::string summary = end.summary;
  std::string detail = end.reported ? std::string("reported ") + StageName(to) : kNoResultError;
  if (no_report) {
    // Counted like a failure: a worker that never reports is set aside, not retried forever.
    if (error.empty()) error = detail;
    summary = kNoResultWords;
  } else if (end.reported && to == Stage::kBlocked) {
    // The card's "why" is the cause itself, so nobody has to open the discussion to learn it:
    // its first line, and the end of the rest (where a failing command's stderr says what broke).
    const std::string& cause = error.empty() ? summary : error;
    const std::size_t eol = cause.find('\n');
    detail += ": " + text::FirstLine(cause, 600);
    if (eol != std::string::npos && !text::Trim(cause.substr(eol)).empty())
      detail += " … " + text::TailLines(text::Trim(cause.substr(eol + 1)), 6, 400);
  }
  if (to == Stage::kBlocked && !error.empty()) {
    // What the requester can do now: reply (a person's message resumes a blocked Ticket), or
    // nothing, when this failure sets its turns aside and a person was shown it instead.
    ASSIGN_OR_RETURN(const bool set_aside, WouldSetAsideLocked(kQuarantineTurn, Num(a->ticket), error));
    summary += BlockedAdvice(set_aside);
  }

  for (const auto& [kind, payload] : end.actions) RETURN_IF_ERROR(EnqueueActionLocked(kind, payload, now));
  if (to == Stage::kWaitingForPerson) {
    HumanAction action;
    action.thread = tk->thread;
    action.actor = mandate ? mandate->sender.value_or("") : "";
    action.question = end.question;
    if (!end.question_form.is_null()) action.form = end.question_form;
    if (!action.actor.empty() && !action.question.empty()) {
      Status asked = AskPersonLocked(&*tk, action, "ask" + suffix, now);
      if (asked.ok()) {
        out.handed_over = out.said = true;
        RETURN_IF_ERROR(count_and_commit());
        return out;
      }
      spdlog::warn("question not asked ticket={} error=\"{}\"", a->ticket, asked.message());
    }
    // Nobody to ask (a CI-started Ticket): the question goes out with the result instead.
    to = Stage::kBlocked;
    summary += "\n\nQuestion: " + end.question;
  }
  std::string pull_lines;
  if (end.reported && to == Stage::kReady) {
    // A later turn's result (a CI fix, a review follow-up) names the PR it updated; a PR opened in
    // this turn is named when it is (pulls.cpp), as the result waits for it.
    ASSIGN_OR_RETURN(auto pulls, store_->TicketPulls(a->ticket));
    for (const TicketPull& p : pulls)
      if (p.state == "open") pull_lines += "\n\nPull request: " + (p.url.empty() ? "#" + Num(p.number) : p.url);
  }
  if (end.reported || no_report) {
    // A result always fits (issue 34): one over the channel's limit is cut — the report's words,
    // with the channel's own cut (at a word in chats, an ellipsis) — so the PR lines after it
    // survive. Refusing it left the requester with nothing.
    ASSIGN_OR_RETURN(auto channel, store_->ThreadChannel(tk->thread));
    const std::string why = channel ? TooLong(*channel, summary + pull_lines, options_) : "";
    if (!why.empty()) {
      std::string cut = CutToLimit(*channel, summary, options_);
      for (int i = 0; i < 12 && !cut.empty() && !TooLong(*channel, cut + pull_lines, options_).empty(); ++i)
        cut = CutToLimit(*channel, text::Cut(cut, text::CountCodePoints(cut) * 4 / 5), options_);
      spdlog::warn("result cut to the limit ticket={} channel={} reason=\"{}\"", a->ticket, *channel, why);
      summary = cut;
      detail += "; result cut to the channel's limit";
    }
    summary += pull_lines;
    Status sent = SendLocked({"result" + suffix, a->ticket, tk->thread, MessageKind::kResult, summary}, now);
    if (sent.ok()) {
      out.said = true;
    } else {
      // Never cut silently: the Ticket says why the result did not go out.
      out.not_sent = sent.message();
      to = Stage::kBlocked;
      detail = "result not sent: " + sent.message();
    }
  }
  if (end.background_running) {
    // SPEC §6: background work keeps the slot and the stage; EndBackgroundWork moves it on.
    RETURN_IF_ERROR(store_->InsertTicketEvent(tk->id, now, tk->stage, tk->stage,
                                              text::Repair(detail + "; background work still running")));
    out.deferred = to;
  } else {
    RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, to, StageCause::kReported, detail, now));
  }
  RETURN_IF_ERROR(count_and_commit());
  if (out.stage != Stage::kWorking) out.deferred.reset();  // set aside meanwhile: nothing to defer
  return out;
}

Status Engine::EndBackgroundWork(TicketId ticket, Stage after, const std::string& why) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + Num(ticket) + " does not exist");
  if (tk->stage != Stage::kWorking) return Status::Ok();
  ASSIGN_OR_RETURN(auto assignments, store_->AssignmentsFor(ticket));
  for (const Assignment& a : assignments)
    if (a.state == "running") return Status::Ok();  // a new turn owns the stage now
  ASSIGN_OR_RETURN(const bool said, SayNoResultLocked(&*tk, why, now));
  if (!said) RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, after, StageCause::kBackgroundDone, why, now));
  return tx->Commit();
}

Result<bool> Engine::SayNoResultLocked(Ticket* tk, const std::string& why, TimeMs now) {
  ASSIGN_OR_RETURN(auto assignments, store_->AssignmentsFor(tk->id));
  const Assignment* last = nullptr;
  for (const Assignment& a : assignments)
    if (a.state == "ended" && (last == nullptr || a.id > last->id)) last = &a;
  if (last == nullptr || !OwedAnAnswer(*last)) return false;
  // Its report, question or earlier line is the answer; each is recorded under the turn's id.
  const std::string suffix = TurnSuffix(tk->id, last->id);
  for (const char* kind : {"result", "ask"}) {
    ASSIGN_OR_RETURN(auto receipt, store_->GetReceipt(kind + suffix));
    if (receipt) return false;
  }
  ASSIGN_OR_RETURN(const bool set_aside, WouldSetAsideLocked(kQuarantineTurn, Num(tk->id), kNoResultError));
  RETURN_IF_ERROR(SendLocked({"result" + suffix, tk->id, tk->thread, MessageKind::kResult,
                              std::string(kNoResultWords) + BlockedAdvice(set_aside)},
                             now));
  RETURN_IF_ERROR(ChangeStage(store_.get(), options_, tk, Stage::kBlocked, StageCause::kBackgroundDone,
                              std::string(kNoResultError) + "; " + why, now));
  RETURN_IF_ERROR(CountTurnLocked(tk->id, kNoResultError, now));
  return true;
}

Result<std::vector<TakenInput>> Engine::TakeInputs(TicketId ticket) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto mandate, store_->MandateForTicket(ticket));
  ASSIGN_OR_RETURN(auto out, TakeInputsLocked(ticket, mandate ? mandate->origin_trigger_seq : 0));
  RETURN_IF_ERROR(tx->Commit());
  return out;
}

Result<std::vector<TakenInput>> Engine::TakeInputsLocked(TicketId ticket, std::int64_t origin_seq) {
  std::vector<TakenInput> out;
  ASSIGN_OR_RETURN(auto inputs, store_->InputsForTicket(ticket));
  for (TicketInput& in : inputs) {
    if (in.state != "pending" && in.state != "context") continue;
    TakenInput t;
    t.context = in.state == "context";
    t.input = std::move(in);
    t.input.state = "taken";
    if (t.input.trigger_seq) {
      ASSIGN_OR_RETURN(auto rec, store_->FindTriggerBySeq(*t.input.trigger_seq));
      if (rec) t.trigger = rec->trigger;
      t.request = *t.input.trigger_seq == origin_seq;
    }
    out.push_back(std::move(t));
  }
  if (!out.empty()) RETURN_IF_ERROR(store_->MarkInputsTaken(ticket));
  return out;
}

Status Engine::CountTurnLocked(TicketId ticket, const std::string& error, TimeMs now) {
  if (error.empty()) return ClearedLocked(kQuarantineTurn, Num(ticket));
  auto q = ChargeLocked(kQuarantineTurn, Num(ticket), error, false, now);
  if (!q.ok()) return q.status();
  if (DueForQuarantine(*q)) RETURN_IF_ERROR(SetAsideLocked(*q, now));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Assignments: the turns a Ticket is owed, before BeginTurn and after a restart

Result<int> Engine::AssignFollowUps() {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  // Asked every scheduler pass: usually nothing is due, and then no write transaction is begun.
  // A burst (a review's comments, several checks of one push) settles first: one turn takes it all.
  ASSIGN_OR_RETURN(const auto due, store_->TicketsDueAFollowUp(now - options_.follow_up_settle_ms));
  if (due.empty()) return 0;
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  int created = 0;
  for (const auto& d : due) {  // the Engine's lock is held: nothing changed since the query
    // SPEC §6: only a person's input may take the slot kept for people; a bot's comment, a CI
    // result or a policy notice waits for an ordinary slot ("update").
    auto a = store_->InsertAssignment(d.ticket, "worker", d.from_person ? "follow_up" : "update", now);
    if (!a.ok()) return a.status();
    ++created;
  }
  RETURN_IF_ERROR(tx->Commit());
  return created;
}

Status Engine::StartAssignment(std::int64_t assignment, const std::string& executor) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(AssignmentAndTicket loaded, LoadAssignment(store_.get(), assignment));
  const Assignment* a = &loaded.assignment;
  ASSIGN_OR_RETURN(const std::string refused, StartAssignmentLocked(&loaded.assignment, &loaded.ticket, executor, now));
  if (!refused.empty()) return Status::Conflict(refused);
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("assignment started id={} ticket={} executor={} cause={}", assignment, a->ticket, executor, a->cause);
  return Status::Ok();
}

Result<std::string> Engine::StartAssignmentLocked(Assignment* a, Ticket* tk, const std::string& executor, TimeMs now) {
  if (a->state != "pending") return "assignment " + Num(a->id) + " is " + a->state;
  if (!tk->open()) return "ticket " + Num(a->ticket) + " has ended";
  if (tk->stage == Stage::kWaitingForPerson) return "ticket " + Num(a->ticket) + " is waiting for a person";
  ASSIGN_OR_RETURN(auto q, store_->GetQuarantine(kQuarantineTurn, Num(a->ticket)));
  if (q && q->set_aside()) return "ticket " + Num(a->ticket) + "'s turns are set aside (" + q->reason + ")";
  RETURN_IF_ERROR(store_->SetAssignmentState(a->id, "running", executor, now));
  a->state = "running";
  a->executor = executor;
  a->started_at = now;
  RETURN_IF_ERROR(ChangeStage(store_.get(), options_, tk, Stage::kWorking, StageCause::kTurnStarted,
                              "assignment " + Num(a->id) + " started", now));
  return std::string();
}

Status Engine::FinishAssignment(std::int64_t assignment) {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto a, store_->GetAssignment(assignment));
  if (!a) return Status::NotFound("assignment " + Num(assignment) + " does not exist");
  if (a->state == "ended") return Status::Ok();
  RETURN_IF_ERROR(store_->SetAssignmentState(assignment, "ended", "", now));
  return tx->Commit();
}

Result<std::vector<TicketId>> Engine::RecoverInterruptedWork() {
  MutexLock lock(&mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  std::vector<TicketId> out;
  ASSIGN_OR_RETURN(auto running, store_->AssignmentsInState("running"));
  for (const Assignment& a : running) {
    RETURN_IF_ERROR(store_->SetAssignmentState(a.id, "ended", "", now));
    ASSIGN_OR_RETURN(auto tk, store_->GetTicket(a.ticket));
    if (!tk || !tk->open()) continue;
    TicketInput in;
    in.ticket = a.ticket;
    in.kind = "restart";
    in.body = json{{"interrupted_assignment", a.id}};
    in.state = "pending";
    in.created_at = now;
    auto iid = store_->InsertInput(in);
    if (!iid.ok()) return iid.status();
    auto nid = store_->InsertAssignment(a.ticket, "worker", "restart", now);
    if (!nid.ok()) return nid.status();
    RETURN_IF_ERROR(store_->InsertTicketEvent(a.ticket, now, tk->stage, tk->stage, "restarted after a daemon restart"));
    out.push_back(a.ticket);
  }
  // Background work that kept a Ticket working after its turn died with the daemon: nothing runs
  // for it any more, so it is idle (its result, if any, was already enqueued) — or blocked with
  // the line its requester is owed when that turn never reported.
  ASSIGN_OR_RETURN(auto open, store_->OpenTickets());
  for (TicketId id : open) {
    if (std::find(out.begin(), out.end(), id) != out.end()) continue;
    ASSIGN_OR_RETURN(auto tk, store_->GetTicket(id));
    if (!tk || tk->stage != Stage::kWorking) continue;
    const std::string why = "background work ended with the daemon's restart";
    ASSIGN_OR_RETURN(const bool said, SayNoResultLocked(&*tk, why, now));
    if (!said) RETURN_IF_ERROR(ChangeStage(store_.get(), options_, &*tk, Stage::kIdle, StageCause::kBackgroundDone, why, now));
  }
  RETURN_IF_ERROR(tx->Commit());
  for (TicketId id : out) spdlog::info("work resumed after restart ticket={}", id);
  return out;
}

}  // namespace superagent
