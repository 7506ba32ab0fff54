// Typed queries for the pull requests opened for Tickets (SPEC §6: a linked open PR keeps being
// tracked) and the outbox questions that tracking asks.
#include "store/rows.h"
#include "store/store.h"

namespace superagent::store {

namespace {

#define PULL_COLUMNS \
  "ticket_id, number, head_branch, url, state, ci_fix_attempts, ci_fix_sha, created_at, updated_at, repo, merge_check"

TicketPull ReadPull(Stmt& s) {
  TicketPull p;
  p.ticket = s.Int(0);
  p.number = s.Int(1);
  p.head_branch = s.Text(2);
  p.url = s.Text(3);
  p.state = s.Text(4);
  p.ci_fix_attempts = static_cast<int>(s.Int(5));
  p.ci_fix_sha = s.Text(6);
  p.created_at = s.Int(7);
  p.updated_at = s.Int(8);
  p.repo = s.Text(9);
  p.merge_check = s.Text(10);
  return p;
}

Result<std::vector<TicketPull>> ReadPulls(Stmt& s) {
  std::vector<TicketPull> out;
  while (s.Step()) out.push_back(ReadPull(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace

Status Store::InsertTicketPull(const TicketPull& p) {
  return db_.Prepare("INSERT OR IGNORE INTO ticket_pulls (" PULL_COLUMNS ") VALUES (?,?,?,?,?,?,?,?,?,?,?)")
      .Bind(1, p.ticket)
      .Bind(2, p.number)
      .Bind(3, p.head_branch)
      .Bind(4, p.url)
      .Bind(5, p.state)
      .Bind(6, p.ci_fix_attempts)
      .Bind(7, p.ci_fix_sha)
      .Bind(8, p.created_at)
      .Bind(9, p.updated_at)
      .Bind(10, p.repo)
      .Bind(11, p.merge_check)
      .Run();
}

Result<std::vector<TicketPull>> ReadTicketPulls(Db& db, TicketId ticket) {
  Stmt s = db.Prepare("SELECT " PULL_COLUMNS " FROM ticket_pulls WHERE ticket_id = ? ORDER BY created_at, number");
  s.Bind(1, ticket);
  return ReadPulls(s);
}

Result<std::vector<TicketPull>> Store::TicketPulls(TicketId ticket) { return ReadTicketPulls(db_, ticket); }

Result<std::vector<TicketPull>> Store::OpenTicketPulls() {
  Stmt s = db_.Prepare(
      "SELECT " PULL_COLUMNS " FROM ticket_pulls p WHERE p.state = 'open' AND NOT EXISTS "
      "(SELECT 1 FROM mandates m JOIN mandate_ends e ON e.mandate_id = m.id WHERE m.ticket_id = p.ticket_id) "
      "ORDER BY p.created_at, p.number");
  return ReadPulls(s);
}

Result<std::optional<TicketPull>> Store::TicketPullOn(TicketId ticket, const std::string& thread_key) {
  Stmt s = db_.Prepare("SELECT " PULL_COLUMNS " FROM ticket_pulls WHERE ticket_id = ?1 AND "
                       "('github:' || repo || ':pull:' || number = ?2 OR 'github:' || repo || ':ci:' || head_branch = ?2) "
                       "ORDER BY created_at DESC LIMIT 1");
  s.Bind(1, ticket).Bind(2, thread_key);
  if (!s.Step()) return Missing(s);
  TicketPull p = ReadPull(s);
  s.Reset();
  return std::optional<TicketPull>(p);
}

Status Store::UpdateTicketPull(const TicketPull& p) {
  return db_.Prepare("UPDATE ticket_pulls SET url = ?, state = ?, ci_fix_attempts = ?, ci_fix_sha = ?, updated_at = ?, "
                     "merge_check = ? WHERE ticket_id = ? AND repo = ? AND number = ?")
      .Bind(1, p.url)
      .Bind(2, p.state)
      .Bind(3, p.ci_fix_attempts)
      .Bind(4, p.ci_fix_sha)
      .Bind(5, p.updated_at)
      .Bind(6, p.merge_check)
      .Bind(7, p.ticket)
      .Bind(8, p.repo)
      .Bind(9, p.number)
      .Run();
}

Result<bool> Store::ActionPendingFor(TicketId ticket, const std::string& kind) {
  Stmt s = db_.Prepare("SELECT EXISTS (SELECT 1 FROM effects WHERE status = 'pending' AND kind_class = 'action' "
                       "AND kind = ? AND json_valid(payload) AND json_extract(payload, '$.ticket') = ?)");
  s.Bind(1, kind).Bind(2, ticket);
  const bool pending = s.Step() && s.Bool(0);
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return pending;
}

Status Store::SetReceiptBody(const std::string& id, const std::string& body) {
  return db_.Prepare("UPDATE receipts SET body = ? WHERE id = ? AND status = 'pending'").Bind(1, body).Bind(2, id).Run();
}

}  // namespace superagent::store
