// Typed queries for execution (SPEC §6): Assignments by state, worker sessions and their
// transcripts, token usage and workspaces.
#include "store/store.h"

#include <cmath>

namespace superagent::store {

using nlohmann::json;

namespace {

Assignment ReadAssignment(Stmt& s) {
  return {s.Int(0), s.Int(1), s.Text(2), s.Text(3), s.Int(4), s.OptInt(5), s.OptInt(6), s.Text(7)};
}
#define ASSIGNMENT_COLUMNS "id, ticket_id, executor, state, created_at, started_at, ended_at, cause"

Session ReadSession(Stmt& s) {
  Session out;
  out.id = s.Int(0);
  out.ticket = s.OptInt(1);
  out.title = s.Text(2);
  out.executor = s.Text(3);
  out.status = s.Text(4);
  out.created_at = s.Int(5);
  out.updated_at = s.Int(6);
  return out;
}
#define SESSION_COLUMNS "id, ticket_id, title, executor, status, created_at, updated_at"

WorkspaceRecord ReadWorkspace(Stmt& s) {
  return {s.Int(0), s.Text(1), s.Text(2), s.Text(3), s.Int(4), s.OptInt(5), s.Text(6)};
}
#define WORKSPACE_COLUMNS "ticket_id, dir, branch, base, created_at, removed_at, repo"

Result<std::int64_t> RunInsert(Db& db, Stmt& s) {
  if (Status st = s.Run(); !st.ok()) return st;
  return db.LastInsertId();
}

}  // namespace

Result<std::vector<Assignment>> Store::AssignmentsInState(const std::string& state) {
  Stmt s = db_.Prepare("SELECT " ASSIGNMENT_COLUMNS " FROM assignments WHERE state = ? ORDER BY id");
  s.Bind(1, state);
  std::vector<Assignment> out;
  while (s.Step()) out.push_back(ReadAssignment(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::optional<Assignment>> Store::GetAssignment(std::int64_t id) {
  Stmt s = db_.Prepare("SELECT " ASSIGNMENT_COLUMNS " FROM assignments WHERE id = ?");
  s.Bind(1, id);
  if (!s.Step()) return Missing(s);
  return std::optional<Assignment>(ReadAssignment(s));
}

Status Store::SetAssignmentState(std::int64_t id, const std::string& state, const std::string& executor, TimeMs at) {
  if (state == "running") {
    Stmt s = db_.Prepare("UPDATE assignments SET state = 'running', executor = ?, started_at = ? WHERE id = ?");
    return s.Bind(1, executor).Bind(2, at).Bind(3, id).Run();
  }
  Stmt s = db_.Prepare("UPDATE assignments SET state = ?, ended_at = ? WHERE id = ?");
  return s.Bind(1, state).Bind(2, at).Bind(3, id).Run();
}

Status Store::MarkInputsTaken(TicketId ticket) {
  Stmt s = db_.Prepare(
      "UPDATE ticket_inputs SET state = 'taken' WHERE ticket_id = ? AND state IN ('pending', 'context')");
  return s.Bind(1, ticket).Run();
}

Result<SessionId> Store::InsertSession(const Session& x) {
  Stmt s = db_.Prepare(
      "INSERT INTO sessions (ticket_id, title, executor, status, created_at, updated_at) VALUES (?,?,?,?,?,?)");
  s.Bind(1, x.ticket).Bind(2, x.title).Bind(3, x.executor).Bind(4, x.status).Bind(5, x.created_at);
  s.Bind(6, x.updated_at);
  return RunInsert(db_, s);
}

Result<std::optional<Session>> Store::GetSession(SessionId id) {
  Stmt s = db_.Prepare("SELECT " SESSION_COLUMNS " FROM sessions WHERE id = ?");
  s.Bind(1, id);
  if (!s.Step()) return Missing(s);
  return std::optional<Session>(ReadSession(s));
}

Result<std::optional<Session>> Store::SessionForTicket(TicketId ticket) {
  Stmt s = db_.Prepare("SELECT " SESSION_COLUMNS " FROM sessions WHERE ticket_id = ?");
  s.Bind(1, ticket);
  if (!s.Step()) return Missing(s);
  return std::optional<Session>(ReadSession(s));
}

Result<std::vector<Session>> Store::AllSessions() {
  Stmt s = db_.Prepare("SELECT " SESSION_COLUMNS " FROM sessions ORDER BY id");
  s.Reset();
  std::vector<Session> out;
  while (s.Step()) out.push_back(ReadSession(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Status Store::SetSessionStatus(SessionId id, const std::string& status, TimeMs at) {
  Stmt s = db_.Prepare("UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?");
  return s.Bind(1, status).Bind(2, at).Bind(3, id).Run();
}

Result<std::int64_t> Store::InsertSessionEvent(const SessionEvent& e) {
  Stmt s = db_.Prepare(
      "INSERT INTO session_events (session_id, assignment_id, kind, body, at) VALUES (?,?,?,?,?)");
  s.Bind(1, e.session).Bind(2, e.assignment).Bind(3, e.kind).Bind(4, e.body.dump()).Bind(5, e.at);
  return RunInsert(db_, s);
}

Result<std::vector<SessionEvent>> Store::SessionEvents(SessionId id, std::int64_t after_id) {
  Stmt s = db_.Prepare(
      "SELECT id, session_id, assignment_id, kind, body, at FROM session_events WHERE session_id = ? AND id > ? "
      "ORDER BY id");
  s.Bind(1, id).Bind(2, after_id);
  std::vector<SessionEvent> out;
  while (s.Step()) {
    SessionEvent e;
    e.id = s.Int(0);
    e.session = s.Int(1);
    e.assignment = s.Int(2);
    e.kind = s.Text(3);
    e.body = json::parse(s.Text(4), nullptr, false);
    e.at = s.Int(5);
    out.push_back(std::move(e));
  }
  RETURN_IF_ERROR(s.status());
  return out;
}

Status Store::InsertTokenUsage(TicketId ticket, std::optional<SessionId> session, const json& u, TimeMs at) {
  Stmt s = db_.Prepare(
      "INSERT INTO token_usage (ticket_id, session_id, model, purpose, calls, prompt_tokens, completion_tokens, "
      "total_tokens, cache_hit_tokens, at, cost_usd) VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  std::optional<std::int64_t> cache;
  if (u.contains("cache_hit_tokens") && u["cache_hit_tokens"].is_number_integer()) cache = u["cache_hit_tokens"].get<std::int64_t>();
  s.Bind(1, ticket).Bind(2, session).Bind(3, u.value("model", "")).Bind(4, u.value("purpose", ""));
  s.Bind(5, u.value("calls", 0)).Bind(6, u.value("prompt_tokens", std::int64_t{0}));
  s.Bind(7, u.value("completion_tokens", std::int64_t{0})).Bind(8, u.value("total_tokens", std::int64_t{0}));
  s.Bind(9, cache).Bind(10, at);
  // Only a cost the model reported counts: none is estimated from token counts.
  if (const auto c = u.find("cost_usd"); c != u.end() && c->is_number() && std::isfinite(c->get<double>()) &&
                                         c->get<double>() >= 0)
    s.Bind(11, c->get<double>());
  else
    s.BindNull(11);
  return s.Run();
}

Result<json> Store::TokenTotals(TicketId ticket) {
  Stmt s = db_.Prepare(
      "SELECT COALESCE(SUM(calls),0), COALESCE(SUM(prompt_tokens),0), COALESCE(SUM(completion_tokens),0), "
      "COALESCE(SUM(total_tokens),0), COALESCE(SUM(cache_hit_tokens),0) FROM token_usage WHERE ticket_id = ?");
  s.Bind(1, ticket);
  if (!s.Step()) {
    RETURN_IF_ERROR(s.status());
    return json::object();
  }
  return json{{"calls", s.Int(0)}, {"prompt_tokens", s.Int(1)}, {"completion_tokens", s.Int(2)},
          {"total_tokens", s.Int(3)}, {"cache_hit_tokens", s.Int(4)}};
}

Status Store::UpsertWorkspace(const WorkspaceRecord& w) {
  Stmt s = db_.Prepare(
      "INSERT INTO workspaces (ticket_id, dir, branch, base, created_at, removed_at, repo) VALUES (?,?,?,?,?,NULL,?) "
      "ON CONFLICT (ticket_id) DO UPDATE SET dir = excluded.dir, branch = excluded.branch, base = excluded.base, "
      "created_at = excluded.created_at, removed_at = NULL, repo = excluded.repo");
  return s.Bind(1, w.ticket).Bind(2, w.dir).Bind(3, w.branch).Bind(4, w.base).Bind(5, w.created_at).Bind(6, w.repo).Run();
}

Result<std::optional<WorkspaceRecord>> Store::GetWorkspace(TicketId ticket) {
  Stmt s = db_.Prepare("SELECT " WORKSPACE_COLUMNS " FROM workspaces WHERE ticket_id = ?");
  s.Bind(1, ticket);
  if (!s.Step()) return Missing(s);
  return std::optional<WorkspaceRecord>(ReadWorkspace(s));
}

Result<std::vector<WorkspaceRecord>> Store::LiveWorkspaces() {
  Stmt s = db_.Prepare("SELECT " WORKSPACE_COLUMNS " FROM workspaces WHERE removed_at IS NULL ORDER BY ticket_id");
  s.Reset();
  std::vector<WorkspaceRecord> out;
  while (s.Step()) out.push_back(ReadWorkspace(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<WorkspaceRecord>> Store::WorkspacesEndedForGood() {
  Stmt s = db_.Prepare(
      "SELECT w.ticket_id, w.dir, w.branch, w.base, w.created_at, w.removed_at, w.repo FROM workspaces w "
      "JOIN tickets t ON t.id = w.ticket_id JOIN mandates m ON m.ticket_id = w.ticket_id "
      "JOIN mandate_ends e ON e.mandate_id = m.id "
      "WHERE w.removed_at IS NULL AND t.stage = 'ended' ORDER BY w.ticket_id");
  std::vector<WorkspaceRecord> out;
  while (s.Step()) out.push_back(ReadWorkspace(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<Store::DueFollowUp>> Store::TicketsDueAFollowUp(TimeMs settled_at) {
  Stmt s = db_.Prepare(
      "SELECT i.ticket_id, MAX(i.from_person) FROM ticket_inputs i JOIN tickets t ON t.id = i.ticket_id "
      "WHERE i.state = 'pending' AND t.stage NOT IN ('ended', 'waiting_for_person') "
      "AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.ticket_id = i.ticket_id AND a.state <> 'ended') "
      "AND NOT EXISTS (SELECT 1 FROM quarantine x WHERE x.kind = 'turn' AND x.item = CAST(i.ticket_id AS TEXT) "
      "AND x.set_aside_at IS NOT NULL) "
      "GROUP BY i.ticket_id HAVING MAX(i.created_at) <= ? ORDER BY i.ticket_id");
  s.Bind(1, settled_at);
  std::vector<DueFollowUp> out;
  while (s.Step()) out.push_back({s.Int(0), s.Int(1) != 0});
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<bool> Store::SessionHasEvents(SessionId id) {
  Stmt s = db_.Prepare("SELECT EXISTS (SELECT 1 FROM session_events WHERE session_id = ?)");
  s.Bind(1, id);
  const bool any = s.Step() && s.Int(0) != 0;
  RETURN_IF_ERROR(s.status());
  return any;
}

Status Store::MarkWorkspaceRemoved(TicketId ticket, TimeMs at) {
  Stmt s = db_.Prepare("UPDATE workspaces SET removed_at = ? WHERE ticket_id = ?");
  RETURN_IF_ERROR(s.Bind(1, at).Bind(2, ticket).Run());
  Stmt others = db_.Prepare("UPDATE workspace_repos SET removed_at = ? WHERE ticket_id = ? AND removed_at IS NULL");
  return others.Bind(1, at).Bind(2, ticket).Run();
}

Status Store::ChooseRepository(TicketId ticket, const std::string& repo, const std::string& by, TimeMs at) {
  Stmt s = db_.Prepare("INSERT OR IGNORE INTO ticket_repository (ticket_id, repo, chosen_by, at) VALUES (?,?,?,?)");
  return s.Bind(1, ticket).Bind(2, repo).Bind(3, by).Bind(4, at).Run();
}

Result<std::optional<std::string>> Store::ChosenRepository(TicketId ticket) {
  Stmt s = db_.Prepare("SELECT repo FROM ticket_repository WHERE ticket_id = ?");
  s.Bind(1, ticket);
  if (!s.Step()) return Missing(s);
  return std::optional<std::string>(s.Text(0));
}

Status Store::UpsertWorkspaceRepo(const WorkspaceRecord& w) {
  Stmt s = db_.Prepare(
      "INSERT INTO workspace_repos (ticket_id, repo, dir, branch, base, created_at, removed_at) VALUES (?,?,?,?,?,?,NULL) "
      "ON CONFLICT (ticket_id, repo) DO UPDATE SET dir = excluded.dir, branch = excluded.branch, base = excluded.base, "
      "created_at = excluded.created_at, removed_at = NULL");
  return s.Bind(1, w.ticket).Bind(2, w.repo).Bind(3, w.dir).Bind(4, w.branch).Bind(5, w.base).Bind(6, w.created_at).Run();
}

Result<std::vector<WorkspaceRecord>> Store::WorkspaceRepos(TicketId ticket) {
  Stmt s = db_.Prepare(
      "SELECT " WORKSPACE_COLUMNS " FROM workspace_repos WHERE ticket_id = ? AND removed_at IS NULL ORDER BY created_at, repo");
  s.Bind(1, ticket);
  std::vector<WorkspaceRecord> out;
  while (s.Step()) out.push_back(ReadWorkspace(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace superagent::store
