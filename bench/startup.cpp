// Benchmark 4 (issue 10): start-up of the real daemon with a store of 1 000 000 Triggers, its
// GitHub keys naming their repository and three repositories configured (issue 37).
//
// The store is made by the Engine (schema, migrations, policy version) and then filled in one
// set-up transaction with Triggers shaped like the Engine's own rows (realistic text and meta,
// 20 000 Threads, trigger_threads links). Then `superagent serve` is started 5 times; each time
// is from just before exec to the "ready" log line, which the daemon writes once the store is
// open, migrations are checked and the panel is listening. Target ≤ 200 ms. Also reported: the
// store's size on disk per Trigger.
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>

#include <httplib.h>

#include "bench_common.h"
#include "daemon_env.h"
#include "superagent/engine.h"

using namespace superagent;
using namespace superagent::bench;

namespace {

bool Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "sqlite: %s in %s\n", err ? err : "?", sql);
    sqlite3_free(err);
    return false;
  }
  return true;
}

bool Fill(const std::string& path, long n, long threads) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return false;
  // Set-up only: the rows are what the Engine writes, the durability of their loading is not measured.
  Exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; BEGIN");
  sqlite3_stmt *th = nullptr, *tr = nullptr, *link = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO threads (key, source, channel, created_at, last_activity_at) VALUES (?,?,?,?,?)", -1,
                     &th, nullptr);
  sqlite3_prepare_v2(db,
                     "INSERT INTO triggers (id, source, scope, actor, human, addressed, text, at, channel, meta, url, via, "
                     "received_at, outcome, filter_reason) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     -1, &tr, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO trigger_threads (trigger_seq, thread_key, position) VALUES (?,?,0)", -1, &link,
                     nullptr);
  auto text = [](sqlite3_stmt* s, int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  };
  auto step = [&](sqlite3_stmt* s) {
    if (sqlite3_step(s) != SQLITE_DONE) std::fprintf(stderr, "fill: %s\n", sqlite3_errmsg(db));
    sqlite3_reset(s);
  };
  const TimeMs base = 1'700'000'000'000;
  for (long t = 1; t <= threads; ++t) {
    const std::string key = "github:acme/widgets:issue:" + std::to_string(t);
    text(th, 1, key);
    text(th, 2, "github");
    text(th, 3, key);
    sqlite3_bind_int64(th, 4, base);
    sqlite3_bind_int64(th, 5, base);
    step(th);
  }
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<long> pick(1, threads);
  std::uniform_real_distribution<double> u(0, 1);
  for (long i = 0; i < n; ++i) {
    const long issue = pick(rng);
    const std::string key = "github:acme/widgets:issue:" + std::to_string(issue);
    const std::string url = "https://github.com/acme/widgets/issues/" + std::to_string(issue) + "#issuecomment-" +
                            std::to_string(500'000'000 + i);
    const nlohmann::json meta = {{"html_url", url}, {"comment_id", 500'000'000 + i}, {"issue", issue},
                                 {"author_association", "MEMBER"}};
    const bool filtered = u(rng) < 0.05;
    text(tr, 1, "github:comment:" + std::to_string(500'000'000 + i) + "@2026-12-02T10:00:00Z");
    text(tr, 2, "github");
    text(tr, 3, "comments");
    text(tr, 4, "person" + std::to_string(i % 20));
    sqlite3_bind_int64(tr, 5, 1);
    sqlite3_bind_int64(tr, 6, u(rng) < 0.2);
    text(tr, 7, Words(rng, MessageLength(rng)));
    sqlite3_bind_int64(tr, 8, base + i * 1000);
    text(tr, 9, key);
    text(tr, 10, meta.dump());
    text(tr, 11, url);
    text(tr, 12, "poll");
    sqlite3_bind_int64(tr, 13, base + i * 1000);
    text(tr, 14, filtered ? "filtered" : "stored");
    if (filtered) text(tr, 15, "own_message");
    else sqlite3_bind_null(tr, 15);
    step(tr);
    sqlite3_bind_int64(link, 1, sqlite3_last_insert_rowid(db));
    text(link, 2, key);
    step(link);
  }
  sqlite3_finalize(th);
  sqlite3_finalize(tr);
  sqlite3_finalize(link);
  bool ok = Exec(db, "COMMIT") && Exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite3_close(db);
  return ok;
}

std::uintmax_t DiskBytes(const std::string& dir) {
  std::uintmax_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string().rfind("superagent.db", 0) == 0) total += e.file_size();
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = Arg(argc, argv, "n", 1'000'000);
  const int starts = static_cast<int>(Arg(argc, argv, "starts", 5));
  ScratchDir dir("startup");
  const std::string data = dir / "data";
  std::filesystem::create_directories(data);
  const std::string db = data + "/superagent.db";
  {
    LogToFile(dir / "setup.log");
    std::vector<Problem> problems;
    auto policy = ParsePolicy("mode: observe\nsources:\n  github:\n    people: [Codertocat]\n", "bench", &problems);
    auto engine = Engine::Open(db, SystemClock(), *policy, (dir / "policy.yaml"));
    if (!engine.ok()) {
      std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
      return 1;
    }
  }
  const double f0 = NowSeconds();
  if (!Fill(db, n, 20'000)) return 1;
  const double fill_s = NowSeconds() - f0;
  const std::uintmax_t bytes = DiskBytes(data);

  // GitHub on, serving three repositories (issue 37): each start asks the store whether keys
  // from before repositories were named are left, which must not cost a scan. GitHub itself is
  // a closed loopback port: "ready" comes before the Sources' first rounds.
  DaemonSetup setup;
  setup.extra_config = "github:\n  api_url: http://127.0.0.1:9\n  repos: [acme/widgets, acme/api, acme/web]\n";
  setup.env = {{"GITHUB_TOKEN", "ghp_benchtoken0123456789"}};
  BenchDaemon daemon(dir, setup, data);
  std::vector<double> ms;
  for (int i = 0; i < starts; ++i) {
    const double s = daemon.Start();
    if (s < 0) {
      std::fprintf(stderr, "daemon did not start; log: %s\n", daemon.log_path().c_str());
      return 1;
    }
    httplib::Client http("127.0.0.1", daemon.port());
    auto health = http.Get("/healthz");  // "ready" means listening: check it is true
    if (!health || health->status != 200) std::fprintf(stderr, "start %d: /healthz did not answer 200\n", i);
    daemon.Stop();
    ms.push_back(1000 * s);
  }
  const double p50 = Percentile(ms, 0.5), worst = Percentile(ms, 1.0);
  std::printf("start-up with %ld Triggers (store filled in %.0f s; page cache warm)\n", n, fill_s);
  std::printf("  exec -> ready: first %.1f ms, median %.1f ms, worst %.1f ms of %d starts (target <= 200 ms)\n", ms[0], p50,
              worst, starts);
  std::printf("  store on disk: %.1f MB, %.0f bytes per Trigger\n", static_cast<double>(bytes) / 1e6,
              static_cast<double>(bytes) / static_cast<double>(n));
  Summary("startup")
      .Add("triggers", n)
      .Add("first_ms", ms[0])
      .Add("median_ms", p50)
      .Add("worst_ms", worst)
      .Add("bytes_per_trigger", static_cast<double>(bytes) / static_cast<double>(n))
      .Add("pass", worst <= 200 ? 1 : 0)
      .Print();
  return 0;
}
