// Engine: execution bookkeeping (SPEC §6). The scheduler and worker sessions change domain state
// only through these methods, each one transaction.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "core/logged_read.h"
#include "core/ticket_stage.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {
std::string Num(std::int64_t v) { return std::to_string(v); }
}  // namespace

Result<int> Engine::AssignFollowUps() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  // Asked every scheduler pass: usually nothing is due, and then no write transaction is begun.
  ASSIGN_OR_RETURN(const auto due, store_->TicketsDueAFollowUp());
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

std::vector<Assignment> Engine::AssignmentsInState(const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->AssignmentsInState(state), "assignments by state");
}

Status Engine::StartAssignment(std::int64_t assignment, const std::string& executor) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto a, store_->GetAssignment(assignment));
  if (!a) return Status::NotFound("assignment " + Num(assignment) + " does not exist");
  if (a->state != "pending") return Status::Conflict("assignment " + Num(assignment) + " is " + a->state);
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(a->ticket));
  if (!tk || !tk->open()) return Status::Conflict("ticket " + Num(a->ticket) + " has ended");
  if (tk->stage == Stage::kWaitingForPerson)
    return Status::Conflict("ticket " + Num(a->ticket) + " is waiting for a person");
  ASSIGN_OR_RETURN(auto q, store_->GetQuarantine(kQuarantineTurn, Num(a->ticket)));
  if (q && q->set_aside())
    return Status::Conflict("ticket " + Num(a->ticket) + "'s turns are set aside (" + q->reason + ")");
  RETURN_IF_ERROR(store_->SetAssignmentState(assignment, "running", executor, now));
  RETURN_IF_ERROR(ChangeStage(store_.get(), &*tk, Stage::kWorking, StageCause::kTurnStarted,
                              "assignment " + Num(assignment) + " started", now));
  RETURN_IF_ERROR(tx->Commit());
  spdlog::info("assignment started id={} ticket={} executor={} cause={}", assignment, a->ticket, executor, a->cause);
  return Status::Ok();
}

Status Engine::FinishAssignment(std::int64_t assignment) {
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
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
  // for it any more, so it is idle (its result, if any, was already enqueued).
  ASSIGN_OR_RETURN(auto open, store_->OpenTickets());
  for (TicketId id : open) {
    if (std::find(out.begin(), out.end(), id) != out.end()) continue;
    ASSIGN_OR_RETURN(auto tk, store_->GetTicket(id));
    if (!tk || tk->stage != Stage::kWorking) continue;
    RETURN_IF_ERROR(ChangeStage(store_.get(), &*tk, Stage::kIdle, StageCause::kBackgroundDone,
                                "background work ended with the daemon's restart", now));
  }
  RETURN_IF_ERROR(tx->Commit());
  for (TicketId id : out) spdlog::info("work resumed after restart ticket={}", id);
  return out;
}

Status Engine::NoteTicket(TicketId ticket, const std::string& cause) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + Num(ticket) + " does not exist");
  RETURN_IF_ERROR(store_->InsertTicketEvent(ticket, now, tk->stage, tk->stage, text::Repair(cause)));
  return tx->Commit();
}

Result<TriggerRecord> Engine::GetTriggerBySeq(std::int64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(auto r, store_->FindTriggerBySeq(seq));
  if (!r) return Status::NotFound("trigger #" + Num(seq) + " does not exist");
  return *r;
}

Result<Session> Engine::OpenSession(TicketId ticket, const std::string& title, const std::string& executor) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(auto existing, store_->SessionForTicket(ticket));
  if (existing) return *existing;
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto tk, store_->GetTicket(ticket));
  if (!tk) return Status::NotFound("ticket " + Num(ticket) + " does not exist");
  Session s;
  s.ticket = ticket;
  s.title = title;
  s.executor = executor;
  s.status = "idle";
  s.created_at = s.updated_at = now;
  auto id = store_->InsertSession(s);
  if (!id.ok()) return id.status();
  RETURN_IF_ERROR(tx->Commit());
  s.id = *id;
  return s;
}

std::optional<Session> Engine::SessionForTicket(TicketId ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->SessionForTicket(ticket), "session of a ticket");
}

Result<Session> Engine::GetSession(SessionId id) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(auto s, store_->GetSession(id));
  if (!s) return Status::NotFound("session " + Num(id) + " does not exist");
  return *s;
}

std::vector<Session> Engine::Sessions() {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->AllSessions(), "sessions");
}

Status Engine::SetSessionStatus(SessionId session, const std::string& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (status != "idle" && status != "running" && status != "ended")
    return Status::InvalidArgument("session status must be idle, running or ended, not \"" + status + "\"");
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto existing, store_->GetSession(session));
  if (!existing) return Status::NotFound("session " + Num(session) + " does not exist");
  RETURN_IF_ERROR(store_->SetSessionStatus(session, status, clock_->NowMs()));
  return tx->Commit();
}

Result<std::int64_t> Engine::AppendSessionEvent(SessionId session, std::int64_t assignment, const std::string& kind,
                                                const json& body) {
  std::lock_guard<std::mutex> lock(mu_);
  if (kind.empty()) return Status::InvalidArgument("a session event needs a kind");
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  SessionEvent e;
  e.session = session;
  e.assignment = assignment;
  e.kind = kind;
  e.body = body;
  // A transcript holds what processes printed and files held: repaired so it can be stored
  // (the store keeps it as JSON) and shown.
  text::RepairJson(&e.body);
  e.at = clock_->NowMs();
  auto id = store_->InsertSessionEvent(e);
  if (!id.ok()) return id.status();
  RETURN_IF_ERROR(tx->Commit());
  return *id;
}

std::vector<SessionEvent> Engine::SessionEvents(SessionId session, std::int64_t after_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->SessionEvents(session, after_id), "session events");
}

Status Engine::RecordTokenUsage(TicketId ticket, std::optional<SessionId> session, const json& usage) {
  std::lock_guard<std::mutex> lock(mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(store_->InsertTokenUsage(ticket, session, usage, clock_->NowMs()));
  return tx->Commit();
}

json Engine::TokenUsage(TicketId ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->TokenTotals(ticket), "token usage");
}

Status Engine::RecordWorkspace(const WorkspaceRecord& workspace) {
  std::lock_guard<std::mutex> lock(mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  WorkspaceRecord w = workspace;
  w.created_at = clock_->NowMs();
  RETURN_IF_ERROR(store_->UpsertWorkspace(w));
  return tx->Commit();
}

std::optional<WorkspaceRecord> Engine::WorkspaceFor(TicketId ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->GetWorkspace(ticket), "workspace");
}

std::vector<WorkspaceRecord> Engine::WorkspacesToRemove() {
  std::lock_guard<std::mutex> lock(mu_);
  return LoggedRead(store_->WorkspacesEndedForGood(), "workspaces to remove");
}

Status Engine::MarkWorkspaceRemoved(TicketId ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(store_->MarkWorkspaceRemoved(ticket, clock_->NowMs()));
  return tx->Commit();
}

}  // namespace superagent
