// Typed queries for Source bookkeeping and system problems.
#include "store/store.h"
#include "store/rows.h"

namespace superagent::store {

Status Store::SetCursor(const std::string& source, const std::string& name, const std::string& value, TimeMs at) {
  Stmt s = db_.Prepare(
      "INSERT INTO source_cursors (source, name, value, updated_at) VALUES (?,?,?,?) "
      "ON CONFLICT (source, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at");
  return s.Bind(1, source).Bind(2, name).Bind(3, value).Bind(4, at).Run();
}

Status Store::EraseCursor(const std::string& source, const std::string& name) {
  return db_.Prepare("DELETE FROM source_cursors WHERE source = ? AND name = ?").Bind(1, source).Bind(2, name).Run();
}

Result<std::map<std::string, std::string>> Store::Cursors(const std::string& source) {
  Stmt s = db_.Prepare("SELECT name, value FROM source_cursors WHERE source = ?");
  s.Bind(1, source);
  std::map<std::string, std::string> out;
  while (s.Step()) out[s.Text(0)] = s.Text(1);
  RETURN_IF_ERROR(s.status());
  return out;
}

Status Store::RecordPathOutcome(const std::string& source, const std::string& path, bool ok, const std::string& error,
                                const std::string& note, int skipped, TimeMs at) {
  Stmt s = db_.Prepare(
      "INSERT INTO source_health (source, path, last_success_at, last_error, last_error_at, consecutive_failures, "
      "skipped_items, note) VALUES (?1, ?2, CASE WHEN ?3 THEN ?5 END, CASE WHEN ?3 THEN NULL ELSE ?4 END, "
      "CASE WHEN ?3 THEN NULL ELSE ?5 END, CASE WHEN ?3 THEN 0 ELSE 1 END, ?6, ?7) "
      "ON CONFLICT (source, path) DO UPDATE SET note = excluded.note, "
      "last_success_at = CASE WHEN ?3 THEN ?5 ELSE last_success_at END, "
      "last_error = CASE WHEN ?3 THEN last_error ELSE ?4 END, "
      "last_error_at = CASE WHEN ?3 THEN last_error_at ELSE ?5 END, "
      "consecutive_failures = CASE WHEN ?3 THEN 0 ELSE consecutive_failures + 1 END, "
      "skipped_items = skipped_items + ?6");
  return s.Bind(1, source).Bind(2, path).Bind(3, ok).Bind(4, error).Bind(5, at).Bind(6, skipped).Bind(7, note).Run();
}

Result<std::string> Store::InstallId() { return ReadInstallId(db_); }

Result<std::vector<TicketMessage>> Store::OpenTicketMessages(const std::string& channel_prefix) {
  // substr, not LIKE: a prefix holding % or _ must match only itself. Both halves use indexes
  // (tickets_by_stage, the triggers' key, receipts_by_ticket); open Tickets are few.
  Stmt s = db_.Prepare(
      "SELECT t.id, 1, tr.channel, NULL, tr.meta, tr.at FROM tickets t "
      "JOIN triggers tr ON tr.seq = t.origin_trigger_seq "
      "WHERE t.stage != 'ended' AND substr(tr.channel, 1, length(?1)) = ?1 "
      "UNION ALL "
      "SELECT r.ticket_id, 0, r.channel, r.external_id, r.kind, COALESCE(r.sent_at, r.created_at) FROM receipts r "
      "JOIN tickets t ON t.id = r.ticket_id "
      "WHERE t.stage != 'ended' AND r.status = 'sent' AND r.external_id IS NOT NULL AND r.external_id != '' "
      "AND substr(r.channel, 1, length(?1)) = ?1 "
      "ORDER BY 1, 6, 2 DESC");
  s.Bind(1, channel_prefix);
  std::vector<TicketMessage> out;
  while (s.Step()) {
    TicketMessage m;
    m.ticket = s.Int(0);
    m.request = s.Bool(1);
    m.channel = s.Text(2);
    if (m.request) {
      m.kind = "request";
      m.meta = nlohmann::json::parse(s.Text(4), nullptr, false);
      if (m.meta.is_discarded()) m.meta = nullptr;
    } else {
      m.external_id = s.Text(3);
      m.kind = s.Text(4);
    }
    m.at = s.Int(5);
    out.push_back(std::move(m));
  }
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::optional<SourceHealth>> Store::GetHealth(const std::string& source, const std::string& path) {
  Stmt s = db_.Prepare("SELECT " HEALTH_COLUMNS " FROM source_health WHERE source = ? AND path = ?");
  s.Bind(1, source).Bind(2, path);
  if (!s.Step()) return Missing(s);
  SourceHealth h = ReadHealth(s);
  s.Reset();
  return std::optional<SourceHealth>(h);
}

Result<std::vector<SourceHealth>> Store::AllHealth() {
  Stmt s = db_.Prepare("SELECT " HEALTH_COLUMNS " FROM source_health ORDER BY source, path");
  std::vector<SourceHealth> out;
  while (s.Step()) out.push_back(ReadHealth(s));
  RETURN_IF_ERROR(s.status());
  return out;
}

Status Store::MarkThreadDeleted(const std::string& thread, TimeMs at) {
  return db_.Prepare("UPDATE threads SET deleted_at = COALESCE(deleted_at, ?) WHERE key = ?").Bind(1, at).Bind(2, thread).Run();
}

Result<bool> Store::ThreadDeleted(const std::string& thread) {
  Stmt s = db_.Prepare("SELECT deleted_at IS NOT NULL FROM threads WHERE key = ?");
  s.Bind(1, thread);
  bool deleted = s.Step() && s.Bool(0);
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return deleted;
}

Status Store::SetSourceEnabled(const std::string& source, bool enabled) {
  Stmt s = db_.Prepare(
      "INSERT INTO sources (name, enabled) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled");
  return s.Bind(1, source).Bind(2, enabled).Run();
}

Result<bool> Store::SourceEnabled(const std::string& source) {
  Stmt s = db_.Prepare("SELECT enabled FROM sources WHERE name = ?");
  s.Bind(1, source);
  bool enabled = !s.Step() || s.Bool(0);  // a Source nobody disabled is enabled
  RETURN_IF_ERROR(s.status());
  s.Reset();
  return enabled;
}

Result<int> Store::CountFailure(const std::string& kind, const std::string& message, TimeMs at) {
  Stmt s = db_.Prepare(
      "INSERT INTO system_problems (kind, message, failures, first_at, last_at, cleared_at) VALUES (?1, ?2, 1, ?3, ?3, NULL) "
      "ON CONFLICT (kind) DO UPDATE SET message = excluded.message, last_at = excluded.last_at, "
      "failures = CASE WHEN cleared_at IS NULL THEN failures + 1 ELSE 1 END, "
      "first_at = CASE WHEN cleared_at IS NULL THEN first_at ELSE excluded.first_at END, cleared_at = NULL");
  if (Status st = s.Bind(1, kind).Bind(2, message).Bind(3, at).Run(); !st.ok()) return st;
  Stmt q = db_.Prepare("SELECT failures FROM system_problems WHERE kind = ?");
  q.Bind(1, kind);
  int n = q.Step() ? static_cast<int>(q.Int(0)) : 0;
  RETURN_IF_ERROR(q.status());
  q.Reset();
  return n;
}

Status Store::ClearFailures(const std::string& kind, TimeMs at) {
  return db_.Prepare("UPDATE system_problems SET cleared_at = ?, failures = 0 WHERE kind = ? AND cleared_at IS NULL")
      .Bind(1, at)
      .Bind(2, kind)
      .Run();
}

// ---------------------------------------------------------------------------------------------
// Issue 37: GitHub keys written before the daemon served several repositories

namespace {

// A Thread key or channel of the old grammar, rewritten with ?1 (the repository, canonical):
// "github:issue:5" → "github:<repo>:issue:5", "github:repo" → "github:<repo>". Qualified keys,
// other platforms' and other GitHub keys pass unchanged.
#define QUALIFIED_KEY(col)                                                                                   \
  "CASE WHEN " col " GLOB 'github:issue:*' OR " col " GLOB 'github:pull:*' OR " col " GLOB 'github:ci:*' OR " \
  col " GLOB 'github:commit:*' THEN 'github:' || ?1 || substr(" col ", 7) WHEN " col                          \
  " = 'github:repo' THEN 'github:' || ?1 ELSE " col " END"
// Trigger ids: only an issue's or pull request's own text and a pull request's closing carry
// their discussion; comment, review and CI ids are GitHub's global ids and stay as they are.
#define QUALIFIED_ID(col) \
  "CASE WHEN " col " GLOB 'github:issue:*' OR " col " GLOB 'github:pull:*' THEN 'github:' || ?1 || substr(" col ", 7) ELSE " col " END"
// A JSON payload naming a channel ("channel": "github:issue:5").
#define QUALIFIED_JSON(col)                                                                    \
  "replace(replace(replace(replace(replace(" col ", '\"github:issue:', '\"github:' || ?1 || ':issue:'), " \
  "'\"github:pull:', '\"github:' || ?1 || ':pull:'), '\"github:ci:', '\"github:' || ?1 || ':ci:'), "     \
  "'\"github:commit:', '\"github:' || ?1 || ':commit:'), '\"github:repo\"', '\"github:' || ?1 || '\"')"
// The platform's own rows under source "github" (issue 37): one webhook route and one account.
#define PLATFORM_CURSOR_NOT "name NOT IN ('notifications', 'rate')"
#define PLATFORM_PATH_NOT "path NOT IN ('webhook', 'notifications')"
#define OLD_KEY(col) "(" col " GLOB 'github:issue:*' OR " col " GLOB 'github:pull:*' OR " col " GLOB 'github:ci:*' OR " col " GLOB 'github:commit:*' OR " col " = 'github:repo')"

}  // namespace

Result<int> Store::QualifyGitHubKeys(const std::string& repo) {
  // Asked at every start: the answer must not cost a scan of a million Triggers. Every old key
  // has its Thread (a channel too: a comment's is its Thread, a CI result's Thread is its branch),
  // and the rewrite below is one transaction, so Threads, cursors and the two tables whose rows
  // may name no repository say whether anything is left — each read by its index.
  {
    Stmt probe = db_.Prepare(
        "SELECT EXISTS (SELECT 1 FROM threads WHERE key GLOB 'github:issue:*' OR key GLOB 'github:pull:*' OR "
        "key GLOB 'github:ci:*' OR key GLOB 'github:commit:*' OR key = 'github:repo') "
        "OR EXISTS (SELECT 1 FROM source_cursors WHERE source = 'github' AND " PLATFORM_CURSOR_NOT ") "
        "OR EXISTS (SELECT 1 FROM source_health WHERE source = 'github' AND " PLATFORM_PATH_NOT ") "
        "OR EXISTS (SELECT 1 FROM ticket_pulls WHERE repo = '') OR EXISTS (SELECT 1 FROM workspaces WHERE repo = '')");
    const bool left = probe.Step() && probe.Bool(0);
    RETURN_IF_ERROR(probe.status());
    probe.Reset();
    if (!left) return 0;
  }
  // Children first would break their references mid-way; checked at commit instead, when every
  // table speaks the new keys.
  RETURN_IF_ERROR(db_.Exec("PRAGMA defer_foreign_keys = ON"));
  int threads = 0;
  {
    Stmt s = db_.Prepare("UPDATE threads SET key = " QUALIFIED_KEY("key") ", channel = " QUALIFIED_KEY("channel")
                         " WHERE " OLD_KEY("key") " OR " OLD_KEY("channel"));
    RETURN_IF_ERROR(s.Bind(1, repo).Run());
    threads = db_.Changes();
  }
  const char* const statements[] = {
      // A Trigger is immutable (what was said, by whom, when), and so is a Decision. The name of
      // the place where it was said is renamed here once, with every other name of that place,
      // inside this transaction; both guards are back before it commits.
      "DROP TRIGGER triggers_immutable",
      "DROP TRIGGER decisions_immutable",
      "UPDATE triggers SET id = " QUALIFIED_ID("id") ", channel = " QUALIFIED_KEY("channel")
      " WHERE id GLOB 'github:issue:*' OR id GLOB 'github:pull:*' OR " OLD_KEY("channel"),
      "CREATE TRIGGER triggers_immutable BEFORE UPDATE ON triggers BEGIN SELECT RAISE(ABORT, 'triggers are immutable'); END",
      "UPDATE trigger_threads SET thread_key = " QUALIFIED_KEY("thread_key") " WHERE " OLD_KEY("thread_key"),
      "UPDATE evals SET thread_key = " QUALIFIED_KEY("thread_key") " WHERE " OLD_KEY("thread_key"),
      "UPDATE eval_queue SET thread_key = " QUALIFIED_KEY("thread_key") " WHERE " OLD_KEY("thread_key"),
      "UPDATE decisions SET thread_key = " QUALIFIED_KEY("thread_key") " WHERE " OLD_KEY("thread_key"),
      "CREATE TRIGGER decisions_immutable BEFORE UPDATE ON decisions BEGIN SELECT RAISE(ABORT, 'decisions are recorded forever'); END",
      "UPDATE tickets SET thread_key = " QUALIFIED_KEY("thread_key") " WHERE " OLD_KEY("thread_key"),
      "UPDATE subscriptions SET thread_key = " QUALIFIED_KEY("thread_key") " WHERE " OLD_KEY("thread_key"),
      "UPDATE receipts SET thread_key = " QUALIFIED_KEY("thread_key") ", channel = " QUALIFIED_KEY("channel")
      " WHERE " OLD_KEY("thread_key") " OR " OLD_KEY("channel"),
      "UPDATE effects SET payload = " QUALIFIED_JSON("payload") " WHERE payload LIKE '%\"github:%'",
      "UPDATE ticket_pulls SET repo = ?1 WHERE repo = ''",
      "UPDATE workspaces SET repo = ?1 WHERE repo = ''",
      // The repository's Source keeps its cursors and health under its own name. What serves
      // every repository stays the platform's: the webhook route, the account's notifications
      // and its rate budget.
      "UPDATE source_cursors SET source = 'github:' || ?1 WHERE source = 'github' AND " PLATFORM_CURSOR_NOT,
      "UPDATE source_health SET source = 'github:' || ?1 WHERE source = 'github' AND " PLATFORM_PATH_NOT,
      // clang-format off
      "UPDATE system_problems SET kind = 'source:github:' || ?1 || substr(kind, 14) WHERE kind GLOB 'source:github:*' AND kind NOT GLOB 'source:github:*/*' AND kind NOT IN ('source:github:webhook', 'source:github:notifications')",
      // clang-format on
  };
  for (const char* sql : statements) {
    Stmt s = db_.Prepare(sql);
    if (std::string_view(sql).find("?1") != std::string_view::npos) s.Bind(1, repo);
    RETURN_IF_ERROR(s.Run());
  }
  return threads;
}

#undef QUALIFIED_KEY
#undef QUALIFIED_ID
#undef QUALIFIED_JSON
#undef OLD_KEY
#undef PLATFORM_CURSOR_NOT
#undef PLATFORM_PATH_NOT

}  // namespace superagent::store
