// Typed queries for the intercom's mailbox and groups (SPEC §10).
#include "store/store.h"

namespace superagent::store {

namespace {

#define INTERCOM_COLUMNS \
  "id, from_session, from_person, to_session, text, delivery, applied, state, reply_to, group_id, created_at, delivered_at"
IntercomMessage ReadIntercom(Stmt& s) {
  IntercomMessage m;
  m.id = s.Text(0);
  m.from_session = s.Text(1);
  m.from_person = s.Text(2);
  m.to_session = s.Text(3);
  m.text = s.Text(4);
  m.delivery = s.Text(5);
  m.applied = s.Text(6);
  m.state = s.Text(7);
  m.reply_to = s.Text(8);
  m.group = s.Text(9);
  m.created_at = s.Int(10);
  m.delivered_at = s.OptInt(11);
  return m;
}

Result<std::vector<IntercomMessage>> ReadAll(Stmt& s) {
  std::vector<IntercomMessage> out;
  while (s.Step()) out.push_back(ReadIntercom(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

}  // namespace

Status Store::InsertIntercomMessage(const IntercomMessage& m) {
  Stmt s = db_.Prepare("INSERT INTO intercom_messages (" INTERCOM_COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.Bind(1, m.id).Bind(2, m.from_session).Bind(3, m.from_person).Bind(4, m.to_session).Bind(5, m.text);
  s.Bind(6, m.delivery).Bind(7, m.applied).Bind(8, m.state).Bind(9, m.reply_to).Bind(10, m.group);
  s.Bind(11, m.created_at).Bind(12, m.delivered_at);
  return s.Run();
}

Result<std::optional<IntercomMessage>> Store::GetIntercomMessage(const std::string& id) {
  Stmt s = db_.Prepare("SELECT " INTERCOM_COLUMNS " FROM intercom_messages WHERE id = ?");
  s.Bind(1, id);
  if (!s.Step()) return Missing(s);
  IntercomMessage m = ReadIntercom(s);
  s.Reset();
  return std::optional<IntercomMessage>(m);
}

Result<std::int64_t> Store::IntercomMessageCount() {
  Stmt s = db_.Prepare("SELECT COUNT(*) FROM intercom_messages");
  std::int64_t n = s.Step() ? s.Int(0) : 0;
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return n;
}

Result<int> Store::CountIntercomSince(const std::string& to, const std::optional<std::string>& from, TimeMs since) {
  Stmt s = db_.Prepare(
      "SELECT COUNT(*) FROM intercom_messages WHERE to_session = ?1 AND created_at > ?2 "
      "AND (?3 IS NULL OR from_session = ?3) AND from_person = ''");
  s.Bind(1, to).Bind(2, since).Bind(3, from);
  int n = s.Step() ? static_cast<int>(s.Int(0)) : 0;
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return n;
}

Result<std::vector<IntercomMessage>> Store::QueuedIntercomFor(const std::string& session) {
  Stmt s = db_.Prepare("SELECT " INTERCOM_COLUMNS
                        " FROM intercom_messages WHERE to_session = ? AND state = 'queued' ORDER BY created_at, rowid");
  s.Bind(1, session);
  return ReadAll(s);
}

Status Store::MarkIntercomDelivered(const std::string& id, TimeMs at) {
  Stmt s = db_.Prepare("UPDATE intercom_messages SET state = 'delivered', delivered_at = ? WHERE id = ? AND state = 'queued'");
  s.Bind(1, at).Bind(2, id);
  return s.Run();
}

Status Store::MarkIntercomAnswered(const std::string& id) {
  Stmt s = db_.Prepare("UPDATE intercom_messages SET state = 'answered' WHERE id = ?");
  s.Bind(1, id);
  return s.Run();
}

Result<std::vector<IntercomMessage>> Store::IntercomRepliesBetween(const std::string& from, const std::string& to) {
  Stmt s = db_.Prepare("SELECT r.id, r.from_session, r.from_person, r.to_session, r.text, r.delivery, r.applied, "
                        "r.state, r.reply_to, r.group_id, r.created_at, r.delivered_at "
                        "FROM intercom_messages r JOIN intercom_messages q ON q.id = r.reply_to "
                        "WHERE r.from_session = ?1 AND r.to_session = ?2 AND q.from_session = ?2 AND q.to_session = ?1 "
                        "ORDER BY r.created_at, r.rowid");
  s.Bind(1, from).Bind(2, to);
  return ReadAll(s);
}

Result<std::vector<IntercomMessage>> Store::IntercomMessagesOf(const std::string& session, TimeMs since, int limit) {
  Stmt s = db_.Prepare("SELECT " INTERCOM_COLUMNS " FROM (SELECT *, rowid AS r FROM intercom_messages "
                        "WHERE (from_session = ?1 OR to_session = ?1) AND created_at > ?2 "
                        "ORDER BY created_at DESC, r DESC LIMIT ?3) ORDER BY created_at, r");
  s.Bind(1, session).Bind(2, since).Bind(3, limit);
  return ReadAll(s);
}

Result<int> Store::WakesSpent(const std::string& session) {
  Stmt s = db_.Prepare("SELECT spent FROM intercom_wake_budget WHERE session_id = ?");
  s.Bind(1, session);
  int n = s.Step() ? static_cast<int>(s.Int(0)) : 0;
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return n;
}

Status Store::SetWakesSpent(const std::string& session, int spent) {
  Stmt s = db_.Prepare("INSERT INTO intercom_wake_budget (session_id, spent) VALUES (?1, ?2) "
                        "ON CONFLICT (session_id) DO UPDATE SET spent = ?2");
  s.Bind(1, session).Bind(2, spent);
  return s.Run();
}

Status Store::InsertIntercomGroup(const IntercomGroup& g, TimeMs at) {
  Stmt s = db_.Prepare("INSERT INTO intercom_groups (id, name, automatic, created_at) VALUES (?, ?, ?, ?)");
  s.Bind(1, g.id).Bind(2, g.name).Bind(3, g.automatic).Bind(4, at);
  return s.Run();
}

Status Store::DeleteIntercomGroup(const std::string& id) {
  Stmt s = db_.Prepare("DELETE FROM intercom_groups WHERE id = ? AND automatic = 0");
  s.Bind(1, id);
  return s.Run();
}

Status Store::AddIntercomMember(const std::string& group, const std::string& session, TimeMs at) {
  Stmt s = db_.Prepare("INSERT OR IGNORE INTO intercom_group_members (group_id, session_id, joined_at) VALUES (?, ?, ?)");
  s.Bind(1, group).Bind(2, session).Bind(3, at);
  return s.Run();
}

Status Store::RemoveIntercomMember(const std::string& group, const std::string& session) {
  Stmt s = db_.Prepare("DELETE FROM intercom_group_members WHERE group_id = ? AND session_id = ?");
  s.Bind(1, group).Bind(2, session);
  return s.Run();
}

Result<std::vector<IntercomGroup>> Store::IntercomGroups() {
  std::vector<IntercomGroup> out;
  Stmt g = db_.Prepare("SELECT id, name, automatic FROM intercom_groups ORDER BY automatic DESC, created_at, id");
  while (g.Step()) {
    IntercomGroup x;
    x.id = g.Text(0);
    x.name = g.Text(1);
    x.automatic = g.Bool(2);
    out.push_back(std::move(x));
  }
  RETURN_IF_ERROR(g.status());
  Stmt m = db_.Prepare("SELECT group_id, session_id FROM intercom_group_members ORDER BY joined_at, rowid");
  while (m.Step()) {
    const std::string group = m.Text(0);
    for (IntercomGroup& x : out)
      if (x.id == group) x.members.push_back(m.Text(1));
  }
  RETURN_IF_ERROR(m.status());
  return out;
}

}  // namespace superagent::store
