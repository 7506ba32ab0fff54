// Worker sessions (SPEC §6, §10): a Ticket's session, its transcript, the model usage charged to it
// and its workspace, each record one transaction. A turn's start and end (turns.cpp) change these
// together with the Ticket; what is here is what the worker services record during a turn.
#include "core/engine_internal.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

Result<Session> Engine::OpenSession(TicketId ticket, const std::string& title, const std::string& executor) {
  MutexLock lock(&mu_);
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

Status Engine::SetSessionStatus(SessionId session, const std::string& status) {
  MutexLock lock(&mu_);
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
  MutexLock lock(&mu_);
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

Status Engine::RecordTokenUsage(TicketId ticket, std::optional<SessionId> session, const json& usage) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(store_->InsertTokenUsage(ticket, session, usage, clock_->NowMs()));
  return tx->Commit();
}

Status Engine::RecordWorkspace(const WorkspaceRecord& workspace) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  WorkspaceRecord w = workspace;
  w.created_at = clock_->NowMs();
  RETURN_IF_ERROR(store_->UpsertWorkspace(w));
  return tx->Commit();
}

Status Engine::MarkWorkspaceRemoved(TicketId ticket) {
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  RETURN_IF_ERROR(store_->MarkWorkspaceRemoved(ticket, clock_->NowMs()));
  return tx->Commit();
}

}  // namespace superagent
