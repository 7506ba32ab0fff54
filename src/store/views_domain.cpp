// The read face's one-item reads of the domain (views.h): each the Store's own query, under this
// connection's lock, so there is one SQL text for each and the Engine's writers read as the
// Scheduler, the Sources and the panel do.
#include <set>

#include "core/explain.h"
#include "store/store.h"
#include "store/views_internal.h"
#include "superagent/views.h"

namespace superagent {

using nlohmann::json;
using store::views_internal::ReadTx;

Result<Ticket> Views::GetTicket(TicketId id) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(auto t, store_->GetTicket(id));
  if (!t) return Status::NotFound("ticket " + std::to_string(id) + " does not exist");
  return *t;
}

Result<Mandate> Views::GetMandate(TicketId ticket) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(ticket));
  if (!m) return Status::NotFound("ticket " + std::to_string(ticket) + " has no mandate");
  return *m;
}

Result<std::vector<TicketInput>> Views::TicketInputs(TicketId ticket) {
  MutexLock lock(&mu_);
  return store_->InputsForTicket(ticket);
}

Result<std::vector<Assignment>> Views::Assignments(TicketId ticket) {
  MutexLock lock(&mu_);
  return store_->AssignmentsFor(ticket);
}

Result<std::vector<Assignment>> Views::AssignmentsInState(const std::string& state) {
  MutexLock lock(&mu_);
  return store_->AssignmentsInState(state);
}

Result<std::vector<Receipt>> Views::Receipts(std::optional<TicketId> ticket) {
  MutexLock lock(&mu_);
  return store_->ReceiptsFor(ticket);
}

Result<std::vector<Decision>> Views::Decisions(const std::string& thread) {
  MutexLock lock(&mu_);
  return store_->DecisionsForThread(thread);
}

Result<TriggerRecord> Views::GetTrigger(const std::string& id) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(auto r, store_->FindTrigger(id));
  if (!r) return Status::NotFound("trigger " + id + " does not exist");
  return *r;
}

Result<TriggerRecord> Views::GetTriggerBySeq(std::int64_t seq) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(auto r, store_->FindTriggerBySeq(seq));
  if (!r) return Status::NotFound("trigger #" + std::to_string(seq) + " does not exist");
  return *r;
}

Result<std::vector<TicketPull>> Views::TrackedPulls() {
  MutexLock lock(&mu_);
  return store_->OpenTicketPulls();
}

Result<std::vector<TicketPull>> Views::TicketPulls(TicketId ticket) {
  MutexLock lock(&mu_);
  return store_->TicketPulls(ticket);
}

Result<std::optional<BudgetStatus>> Views::BudgetOf(TicketId ticket, TimeMs now) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(ticket));
  if (!m || !m->budget) return std::optional<BudgetStatus>();
  ASSIGN_OR_RETURN(auto events, store_->BudgetEvents(ticket));
  ASSIGN_OR_RETURN(auto spend, store_->BudgetSpendOf(ticket));
  return std::optional<BudgetStatus>(ComputeBudgetStatus(*m->budget, events, spend, now));
}

Result<json> Views::Explain(const std::string& id_or_url, const Policy& policy, TimeMs now) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  return ExplainTrigger(*store_, policy, now, id_or_url);
}

Result<json> Views::OutboxCounts() {
  MutexLock lock(&mu_);
  return store_->EffectCounts();
}

Result<std::map<std::string, std::string>> Views::SourceCursors(const std::string& source) {
  MutexLock lock(&mu_);
  return store_->Cursors(source);
}

Result<std::vector<std::string>> Views::OpenTicketThreads(const std::string& prefix) {
  MutexLock lock(&mu_);
  ReadTx tx(db_);
  RETURN_IF_ERROR(tx.begin_status());
  std::set<std::string> keys;
  ASSIGN_OR_RETURN(std::vector<TicketId> open, store_->OpenTickets());
  for (TicketId id : open) {
    ASSIGN_OR_RETURN(std::vector<std::string> threads, store_->TicketThreads(id));
    for (const std::string& thread : threads)
      if (thread.rfind(prefix, 0) == 0) keys.insert(thread);
  }
  return std::vector<std::string>(keys.begin(), keys.end());
}

Result<std::map<std::string, TimeMs>> Views::EndedTicketThreads(const std::string& prefix, TimeMs since) {
  MutexLock lock(&mu_);
  return store_->EndedTicketThreads(prefix, since);
}

Result<std::vector<TicketMessage>> Views::OpenTicketMessages(const std::string& prefix) {
  MutexLock lock(&mu_);
  return store_->OpenTicketMessages(prefix);
}

Result<std::optional<Session>> Views::SessionForTicket(TicketId ticket) {
  MutexLock lock(&mu_);
  return store_->SessionForTicket(ticket);
}

Result<Session> Views::GetSession(SessionId id) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(auto s, store_->GetSession(id));
  if (!s) return Status::NotFound("session " + std::to_string(id) + " does not exist");
  return *s;
}

Result<std::vector<Session>> Views::Sessions() {
  MutexLock lock(&mu_);
  return store_->AllSessions();
}

Result<std::vector<SessionEvent>> Views::SessionEvents(SessionId session, std::int64_t after_id) {
  MutexLock lock(&mu_);
  return store_->SessionEvents(session, after_id);
}

Result<json> Views::TokenUsage(TicketId ticket) {
  MutexLock lock(&mu_);
  return store_->TokenTotals(ticket);
}

Result<std::optional<WorkspaceRecord>> Views::WorkspaceFor(TicketId ticket) {
  MutexLock lock(&mu_);
  return store_->GetWorkspace(ticket);
}

Result<std::vector<WorkspaceRecord>> Views::OtherWorkspacesFor(TicketId ticket) {
  MutexLock lock(&mu_);
  return store_->WorkspaceRepos(ticket);
}

Result<std::optional<std::string>> Views::ChosenRepository(TicketId ticket) {
  MutexLock lock(&mu_);
  return store_->ChosenRepository(ticket);
}

Result<std::vector<WorkspaceRecord>> Views::WorkspacesToRemove() {
  MutexLock lock(&mu_);
  return store_->WorkspacesEndedForGood();
}

Result<std::optional<IntercomMessage>> Views::GetIntercomMessage(const std::string& id) {
  MutexLock lock(&mu_);
  return store_->GetIntercomMessage(id);
}

Result<std::vector<IntercomMessage>> Views::QueuedIntercom(const std::string& session) {
  MutexLock lock(&mu_);
  return store_->QueuedIntercomFor(session);
}

Result<std::vector<IntercomMessage>> Views::IntercomMessagesOf(const std::string& session, TimeMs since, int limit) {
  MutexLock lock(&mu_);
  return store_->IntercomMessagesOf(session, since, limit);
}

Result<int> Views::IntercomWakesSpent(const std::string& session) {
  MutexLock lock(&mu_);
  return store_->WakesSpent(session);
}

Result<std::vector<IntercomGroup>> Views::IntercomGroups() {
  MutexLock lock(&mu_);
  return store_->IntercomGroups();
}

}  // namespace superagent
