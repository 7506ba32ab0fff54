// Benchmark (issue 38): what judgement's reads cost on a busy store. The panel's Needs-you (its
// proposal cards) and /api/judgement read every judged Decision of the window, /metrics every
// Ticket's outcome, at each refresh and scrape; explain and each accept of a rule in auto read
// the window too. The store is made by the Engine (schema, migrations) and filled in one set-up
// transaction with rows shaped like the Engine's: a month of Decisions on their own Threads —
// 60 % would_accept (half with a verdict), 25 % a rule's accept with its Ticket, 10 % an
// inferred decline, 5 % a person's explicit request right after one — and each Ticket with its
// Mandate, two turns, an acknowledgement, and a result, a merged, closed or open pull request, or
// a stop. Then each read is timed (median of --runs). Targets on 2 cores, at 20 000 Decisions
// in the window (6 000 Tickets; a month of a very busy organisation): Judged + Missed ≤ 150 ms
// (the panel's Needs-you and /api/judgement), and a /metrics scrape's outcome read ≤ 50 ms once
// the panel's cache holds the settled Tickets (reading every Ticket at every scrape grows with
// the store's whole history).
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench_common.h"
#include "superagent/engine.h"
#include "superagent/judgement.h"
#include "superagent/metrics.h"
#include "superagent/views.h"
#include "panel/metrics_gather.h"

using namespace superagent;
using namespace superagent::bench;

namespace {

constexpr TimeMs kDayMs = 86'400'000;

class Filler {
 public:
  explicit Filler(sqlite3* db) : db_(db) {}
  ~Filler() {
    for (auto& [sql, s] : stmts_) sqlite3_finalize(s);
  }
  bool Exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) == SQLITE_OK) return true;
    std::fprintf(stderr, "sqlite: %s in %s\n", err ? err : "?", sql);
    sqlite3_free(err);
    return false;
  }
  // One row of `sql` with `values` bound in order (integers as text are bound as text).
  bool Row(const std::string& sql, const std::vector<std::string>& texts, const std::vector<long long>& ints) {
    sqlite3_stmt*& s = stmts_[sql];
    if (s == nullptr && sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      std::fprintf(stderr, "prepare: %s in %s\n", sqlite3_errmsg(db_), sql.c_str());
      return false;
    }
    int i = 1;
    for (const std::string& t : texts) sqlite3_bind_text(s, i++, t.data(), static_cast<int>(t.size()), SQLITE_TRANSIENT);
    for (long long v : ints) sqlite3_bind_int64(s, i++, v);
    const bool ok = sqlite3_step(s) == SQLITE_DONE;
    if (!ok) std::fprintf(stderr, "row: %s in %s\n", sqlite3_errmsg(db_), sql.c_str());
    sqlite3_reset(s);
    return ok;
  }

 private:
  sqlite3* db_;
  std::map<std::string, sqlite3_stmt*> stmts_;
};

const char* kAssessment =
    R"({"decision":"accept","rules":[{"name":"wording","matched":true,"reason":"a typo"},)"
    R"({"name":"visual_fix","matched":false,"reason":"-"}],"usage":{"model":"deepseek-chat"}})";
const char* kDeclined =
    R"({"decision":"ignore","rules":[{"name":"wording","matched":true,"reason":"maybe"},)"
    R"({"name":"visual_fix","matched":false,"reason":"-"}]})";

bool Fill(const std::string& path, long decisions, TimeMs now, long* tickets_made) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return false;
  Filler f(db);
  bool ok = f.Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; BEGIN");
  const TimeMs start = now - 30 * kDayMs;
  const TimeMs step = 30 * kDayMs / decisions;
  long ticket = 0;
  for (long i = 1; ok && i <= decisions; ++i) {
    const TimeMs at = start + i * step;
    const int kind = static_cast<int>(i % 20);  // 0..11 would_accept, 12..16 auto, 17..18 declined, 19 explicit
    // The explicit request comes on the Thread the Eval had just declined: a "missed" one.
    const std::string thread = "github:issue:" + std::to_string(kind == 19 ? i - 1 : i);
    ok &= f.Row("INSERT INTO triggers (seq, id, source, scope, actor, human, addressed, text, at, channel, meta, via, "
                "received_at, outcome) VALUES (?5, ?1, 'github', 'comments', 'alice', 1, ?4, ?2, ?6, ?3, '{}', 'webhook', ?6, "
                "'stored')",
                {"gh:c" + std::to_string(i), kind == 19 ? "@agent please fix it" : "the README says teh", thread},
                {kind == 19 ? 1 : 0, i, at});
    std::string outcome = "ignore", strength = "inferred", assessment = kAssessment;
    long long would = 0;
    if (kind <= 11) would = 1;
    else if (kind <= 16) outcome = "accept";
    else if (kind <= 18) assessment = kDeclined;
    else outcome = "accept", strength = "explicit";
    ok &= f.Row("INSERT INTO decisions (id, eval_id, thread_key, outcome, would_accept, strength, reason, assessment, "
                "policy_version, created_at) VALUES (?5, ?5, ?1, ?2, ?6, ?3, 'bench', ?4, 1, ?7)",
                {thread, outcome, strength, assessment}, {i, would, at});
    if (would && i % 2 == 0)
      ok &= f.Row("INSERT INTO verdicts (decision_id, verdict, by_whom, via, created_at) VALUES (?3, ?1, ?2, 'panel', ?4)",
                  {i % 6 == 0 ? "no" : "yes", "tess"}, {i, at + 3'600'000});
    if (outcome != "accept") continue;
    const long t = ++ticket;
    const int fate = static_cast<int>(t % 5);  // 0 merged, 1 closed, 2 open, 3 answered, 4 stopped
    ok &= f.Row("INSERT INTO tickets (id, origin_trigger_seq, decision_id, thread_key, scope, stage, end_reason, "
                "created_at, updated_at) VALUES (?3, ?4, ?4, ?1, 'Fix the typo', ?2, NULL, ?5, ?5)",
                {thread, fate == 2 ? "ready" : fate == 3 ? "ready" : "ended"}, {t, i, at});
    ok &= f.Row("INSERT INTO mandates (ticket_id, policy_version, scope, strength, matched_rules, source, sender, "
                "admission, origin_trigger_seq, created_at) VALUES (?3, 1, 'Fix the typo', ?1, ?2, 'github', 'alice', "
                "'cell:allowed_unaddressed', ?4, ?5)",
                {strength, strength == "explicit" ? "[]" : R"(["wording"])"}, {t, i, at});
    for (int turn = 0; turn < 2 && ok; ++turn)
      ok &= f.Row("INSERT INTO assignments (ticket_id, executor, state, cause, created_at, started_at, ended_at) "
                  "VALUES (?1, 'worker', 'ended', 'accepted', ?2, ?2, ?3)",
                  {}, {t, at + turn * 600'000, at + turn * 600'000 + 300'000});
    ok &= f.Row("INSERT INTO receipts (id, ticket_id, thread_key, channel, kind, body, status, created_at, sent_at) "
                "VALUES (?1, ?3, ?2, ?2, 'acknowledgement', 'On it', 'sent', ?4, ?4)",
                {"ack:ticket:" + std::to_string(t), thread}, {t, at + 2'000});
    ok &= f.Row("INSERT INTO ticket_events (ticket_id, at, from_stage, to_stage, cause) VALUES (?1, ?2, 'idle', 'working', "
                "'turn started'), (?1, ?3, 'working', 'idle', 'pushed 1 commit to superagent/ticket')",
                {}, {t, at + 5'000, at + 400'000});
    ok &= f.Row("INSERT INTO token_usage (ticket_id, model, purpose, calls, prompt_tokens, completion_tokens, "
                "total_tokens, cost_usd, at) VALUES (?1, 'deepseek-chat', 'worker', 12, 90000, 4000, 94000, 0.21, ?2)",
                {}, {t, at + 600'000});
    if (fate <= 2)
      ok &= f.Row("INSERT INTO ticket_pulls (ticket_id, number, head_branch, url, state, created_at, updated_at) "
                  "VALUES (?2, ?3, 'superagent/ticket', '', ?1, ?4, ?5)",
                  {fate == 0 ? "merged" : fate == 1 ? "closed" : "open"}, {t, t, at + 700'000, at + 7'200'000});
    if (fate == 3) {
      ok &= f.Row("INSERT INTO receipts (id, ticket_id, thread_key, channel, kind, body, status, created_at, sent_at) "
                  "VALUES (?1, ?3, ?2, ?2, 'result', 'Done', 'sent', ?4, ?4)",
                  {"result:ticket:" + std::to_string(t), thread}, {t, at + 900'000});
      ok &= f.Row("INSERT INTO ticket_events (ticket_id, at, from_stage, to_stage, cause) VALUES (?1, ?2, 'working', "
                  "'ready', 'reported ready')",
                  {}, {t, at + 900'000});
    }
    if (fate == 4)
      ok &= f.Row("INSERT INTO ticket_events (ticket_id, at, from_stage, to_stage, cause) VALUES (?1, ?2, 'working', "
                  "'ended', 'decision stop')",
                  {}, {t, at + 100'000});
  }
  ok &= f.Exec("COMMIT");
  sqlite3_close(db);
  *tickets_made = ticket;
  return ok;
}

template <typename F>
double MedianMs(int runs, F&& read) {
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const double t0 = NowSeconds();
    if (!read()) return -1;
    ms.push_back((NowSeconds() - t0) * 1000);
  }
  return Percentile(ms, 0.5);
}

}  // namespace

int main(int argc, char** argv) {
  const long decisions = Arg(argc, argv, "decisions", 20'000);
  const int runs = static_cast<int>(Arg(argc, argv, "runs", 5));
  ScratchDir dir("judgement");
  const std::string db = dir / "superagent.db";
  {
    LogToFile(dir / "setup.log");
    std::vector<Problem> problems;
    auto policy = ParsePolicy("mode: observe\n", "bench", &problems);
    auto engine = Engine::Open(db, SystemClock(), *policy, (dir / "policy.yaml"));
    if (!engine.ok()) {
      std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
      return 1;
    }
  }
  const TimeMs now = SystemClock()->NowMs();
  long tickets = 0;
  if (!Fill(db, decisions, now, &tickets)) return 1;
  auto views = Views::Open(db);
  if (!views.ok()) {
    std::fprintf(stderr, "views: %s\n", views.status().ToString().c_str());
    return 1;
  }
  const TimeMs since = now - 30 * kDayMs - 1;
  std::vector<WouldAcceptRecord> judged;
  std::vector<MissedRecord> missed;
  std::vector<TicketOutcome> outcomes;
  const double judged_ms = MedianMs(runs, [&] {
    auto r = (*views)->Judged(since);
    if (r.ok()) judged = std::move(*r);
    return r.ok();
  });
  const double missed_ms = MedianMs(runs, [&] {
    auto r = (*views)->Missed(since);
    if (r.ok()) missed = std::move(*r);
    return r.ok();
  });
  const double outcomes_ms = MedianMs(runs, [&] {
    auto r = (*views)->TicketOutcomes(0);
    if (r.ok()) outcomes = std::move(*r);
    return r.ok();
  });
  // /metrics reads through the panel's cache: the first scrape reads every Ticket, the next only
  // those from the oldest one still at work.
  panel::TicketOutcomeCache cache;
  const double first_scrape_ms = MedianMs(1, [&] { return cache.Read(**views).ok(); });
  const double scrape_ms = MedianMs(runs, [&] {
    auto r = cache.Read(**views);
    return r.ok() && r->size() == outcomes.size();
  });
  metrics::Snapshot snapshot;
  const double render_ms = MedianMs(runs, [&] {
    snapshot.rule_precision = PrecisionByRule(judged, missed);
    snapshot.ticket_outcomes = outcomes;
    return !metrics::RenderPrometheus(snapshot).empty();
  });
  if (judged_ms < 0 || missed_ms < 0 || outcomes_ms < 0) {
    std::fprintf(stderr, "a read failed\n");
    return 1;
  }
  int yes = 0, no = 0;
  for (const RulePrecision& r : snapshot.rule_precision)
    if (r.rule == "wording") yes = r.yes, no = r.no;
  // A run that did not read what it filled measured nothing.
  if (static_cast<long>(judged.size()) < decisions * 17 / 20 - 1 || static_cast<long>(outcomes.size()) != tickets ||
      missed.empty()) {
    std::fprintf(stderr, "read %zu judged, %zu outcomes, %zu missed of %ld decisions, %ld tickets\n", judged.size(),
                 outcomes.size(), missed.size(), decisions, tickets);
    return 1;
  }
  std::printf("%ld Decisions over 30 days, %ld Tickets; wording: yes %d, no %d; %zu missed\n", decisions, tickets, yes, no,
              missed.size());
  std::printf("  Views::Judged          %8.1f ms (median of %d)\n", judged_ms, runs);
  std::printf("  Views::Missed          %8.1f ms\n", missed_ms);
  std::printf("  Views::TicketOutcomes  %8.1f ms\n", outcomes_ms);
  std::printf("  /metrics outcomes, first scrape %6.1f ms; next scrapes %6.1f ms (cached)\n", first_scrape_ms, scrape_ms);
  std::printf("  precision + /metrics render %5.1f ms\n", render_ms);
  const bool pass = judged_ms + missed_ms <= 150 && scrape_ms >= 0 && scrape_ms <= 50;
  std::printf("BENCH name=judgement decisions=%ld tickets=%ld judged_ms=%.2f missed_ms=%.2f outcomes_ms=%.2f scrape_ms=%.2f "
              "render_ms=%.2f pass=%d\n",
              decisions, tickets, judged_ms, missed_ms, outcomes_ms, scrape_ms, render_ms, pass ? 1 : 0);
  return 0;
}
