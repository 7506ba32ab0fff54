// The store's own guarantees: immutability enforced by the schema, one running Eval per Thread,
// migrations applied once, refusal to run on a newer schema; and, with other processes on the
// same file, no wedged connection, busy retried then surfaced, reads that tell a failure from
// "no rows", private file modes and a damaged page noticed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <functional>

#include "store/store.h"
#include "superagent/views.h"

namespace superagent::store {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / ("superagent-store-" + std::to_string(::getpid()) + "-" +
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db"))
                .string();
    Remove();
    auto s = Store::Open(path_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    Remove();
  }
  void Remove() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
  }
  std::int64_t AddTrigger(const std::string& id) {
    TriggerRecord r;
    r.trigger.id = id;
    r.trigger.source = "github";
    r.trigger.scope = "comments";
    r.trigger.channel = "github:acme/widgets:issue:1";
    r.trigger.threads = {"github:acme/widgets:issue:1"};
    r.via = "test";
    auto seq = store_->InsertTrigger(r);
    EXPECT_TRUE(seq.ok());
    EXPECT_TRUE(store_->UpsertThread("github:acme/widgets:issue:1", "github", "github:acme/widgets:issue:1", 0).ok());
    return seq.ok() ? *seq : 0;
  }
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, TriggersCannotBeChangedOrDeleted) {
  AddTrigger("t1");
  Db db;
  ASSERT_TRUE(db.Open(path_).ok());
  Status update = db.Exec("UPDATE triggers SET text = 'forged' WHERE id = 't1'");
  EXPECT_FALSE(update.ok());
  EXPECT_NE(update.message().find("immutable"), std::string::npos);
  EXPECT_FALSE(db.Exec("DELETE FROM triggers").ok());
  auto found = store_->FindTrigger("t1");
  ASSERT_TRUE(found.ok() && found->has_value()) << found.status().ToString();
  EXPECT_EQ((*found)->trigger.text, "");
}

TEST_F(StoreTest, DuplicateTriggerIdIsRejectedByTheSchema) {
  AddTrigger("t1");
  TriggerRecord r;
  r.trigger.id = "t1";
  r.trigger.source = "github";
  r.trigger.scope = "comments";
  r.trigger.channel = "c";
  r.via = "test";
  EXPECT_FALSE(store_->InsertTrigger(r).ok());
}

TEST_F(StoreTest, MandatesAndDecisionsAreImmutable) {
  Db db;
  ASSERT_TRUE(db.Open(path_).ok());
  ASSERT_TRUE(db.Exec("PRAGMA foreign_keys=OFF; INSERT INTO policy_versions VALUES (1,'f','{}','t',0);"
                      "INSERT INTO mandates (ticket_id, policy_version, scope, strength, matched_rules, source, "
                      "admission, origin_trigger_seq, created_at) VALUES (1,1,'s','explicit','[]','github','a',1,0);"
                      "INSERT INTO decisions (eval_id, thread_key, outcome, strength, reason, policy_version, created_at)"
                      " VALUES (1,'t','ignore','none','r',1,0);")
                  .ok());
  EXPECT_FALSE(db.Exec("UPDATE mandates SET scope = 'wider'").ok());
  EXPECT_FALSE(db.Exec("UPDATE decisions SET outcome = 'accept'").ok());
  EXPECT_FALSE(db.Exec("DELETE FROM decisions").ok());
}

// The Engine's store and the panel's views read a Mandate with one reader (rows.cpp): a damaged
// matched_rules reads the same in both, without throwing — only its strings are kept.
TEST_F(StoreTest, ADamagedMandateReadsTheSameInTheStoreAndTheViews) {
  Db db;
  ASSERT_TRUE(db.Open(path_).ok());
  ASSERT_TRUE(db.Exec("PRAGMA foreign_keys=OFF; INSERT INTO policy_versions VALUES (1,'f','{}','t',0);"
                      "INSERT INTO mandates (ticket_id, policy_version, scope, strength, matched_rules, source, "
                      "admission, origin_trigger_seq, created_at) VALUES "
                      "(1,1,'s','inferred','[1,\"triage\",null,{\"a\":1}]','github','a',1,0),"
                      "(2,1,'s','inferred','{\"not\":\"a list\"}','github','a',2,0);"
                      "INSERT INTO tickets (id, origin_trigger_seq, decision_id, thread_key, scope, stage, created_at, "
                      "updated_at) VALUES (1,1,1,'t','s','idle',0,0), (2,2,1,'t','s','idle',0,0);")
                  .ok());
  auto views = Views::Open(path_);
  ASSERT_TRUE(views.ok()) << views.status().ToString();
  auto rows = (*views)->Tickets(std::nullopt, 10, std::nullopt);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  for (const TicketRow& row : *rows) {
    auto from_store = store_->MandateForTicket(row.ticket.id);
    ASSERT_TRUE(from_store.ok() && *from_store) << from_store.status().ToString();
    ASSERT_TRUE(row.mandate);
    const std::vector<std::string> want =
        row.ticket.id == 1 ? std::vector<std::string>{"triage"} : std::vector<std::string>{};
    EXPECT_EQ((*from_store)->matched_rules, want);
    EXPECT_EQ(row.mandate->mandate.matched_rules, want);
    EXPECT_EQ((*from_store)->strength, row.mandate->mandate.strength);
  }
}

TEST_F(StoreTest, SchemaAllowsOneRunningEvalPerThread) {
  AddTrigger("t1");
  ASSERT_TRUE(store_->InsertPolicyVersion("f", "{}", "t", 0).ok());
  ASSERT_TRUE(store_->InsertEval("github:acme/widgets:issue:1", 1, 0, 10).ok());
  EXPECT_FALSE(store_->InsertEval("github:acme/widgets:issue:1", 1, 0, 10).ok());
}

TEST_F(StoreTest, MigrationsRunOnceAndNewerSchemasAreRefused) {
  int v = *store_->SchemaVersion();
  EXPECT_GE(v, 1);
  store_.reset();
  auto again = Store::Open(path_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)->SchemaVersion(), v);
  again->reset();
  Db db;
  ASSERT_TRUE(db.Open(path_).ok());
  ASSERT_TRUE(db.Exec("INSERT INTO schema_migrations VALUES (999, 'future', 0)").ok());
  auto refused = Store::Open(path_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("newer"), std::string::npos);
}

TEST_F(StoreTest, UnwritablePathIsAClearError) {
  auto s = Store::Open("/nonexistent-dir/for/sure/superagent.db");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/nonexistent-dir/for/sure/superagent.db"), std::string::npos);
}


// --- Other processes on the same file ----------------------------------------------------------

// Each read that finds its row, then a write by another connection (what `superagent receive`,
// `sqlite3` or a second daemon do), then the store's next write. Before statements were reset on
// every path, the first read kept a snapshot open and the write failed at once with "database is
// locked" (SQLITE_BUSY_SNAPSHOT) — and every write after it, until a restart.
TEST_F(StoreTest, AnOutsideWriteBetweenTwoOperationsNeverWedgesTheNextWrite) {
  AddTrigger("t1");
  ASSERT_TRUE(store_->InsertPolicyVersion("f", "{}", "t", 0).ok());
  Db outside;
  ASSERT_TRUE(outside.Open(path_).ok());
  const std::vector<std::pair<std::string, std::function<bool()>>> reads = {
      {"TokenTotals", [&] { return store_->TokenTotals(1).ok(); }},
      {"FindTrigger", [&] { auto r = store_->FindTrigger("t1"); return r.ok() && r->has_value(); }},
      {"ThreadChannel", [&] { auto r = store_->ThreadChannel("github:acme/widgets:issue:1"); return r.ok() && r->has_value(); }},
      {"LatestPolicyVersion", [&] { auto r = store_->LatestPolicyVersion(); return r.ok() && r->has_value(); }},
      {"SourceEnabled", [&] { return store_->SourceEnabled("github").ok(); }},
      {"EffectCounts", [&] { return store_->EffectCounts().ok(); }},
  };
  int n = 0;
  for (const auto& [name, read] : reads) {
    ASSERT_TRUE(read()) << name;
    EXPECT_EQ(store_->BusyStatements(), 0) << name << " left its statement holding a snapshot";
    ASSERT_TRUE(outside.Exec("INSERT INTO commands (at, who, command, target, detail) VALUES (1, 'sqlite3', 'x', 'y', '')").ok());
    auto tx = store_->Begin();
    ASSERT_TRUE(tx->begin_status().ok()) << name << ": " << tx->begin_status().ToString();
    ASSERT_TRUE(store_->InsertCommand(2, "daemon", "stop", "ticket:" + std::to_string(++n), "").ok()) << name;
    ASSERT_TRUE(tx->Commit().ok()) << name;
  }
  Stmt count = outside.Prepare("SELECT COUNT(*) FROM commands");
  ASSERT_TRUE(count.Step());
  EXPECT_EQ(count.Int(0), 2 * static_cast<std::int64_t>(reads.size()));
}

// The same with the real sqlite3 shell as the outside writer, as a person would use it.
TEST_F(StoreTest, TheSqlite3ShellWritingBetweenTwoOperationsDoesNotWedgeTheStore) {
  if (std::system("command -v sqlite3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no sqlite3 shell installed";
  ASSERT_TRUE(store_->TokenTotals(1).ok());
  ASSERT_EQ(std::system(("sqlite3 " + path_ + " \"INSERT INTO commands (at, who, command, target, detail) VALUES "
                                              "(1, 'sqlite3', 'x', 'y', '')\"").c_str()),
            0);
  auto tx = store_->Begin();
  ASSERT_TRUE(tx->begin_status().ok()) << tx->begin_status().ToString();
  ASSERT_TRUE(store_->InsertCommand(2, "daemon", "stop", "ticket:1", "").ok());
  ASSERT_TRUE(tx->Commit().ok());
}

class BusyStoreTest : public StoreTest {
 protected:
  // A store that waits 1 ms per attempt in SQLite and calls `on_sleep` instead of sleeping.
  std::unique_ptr<Store> OpenWithSleep(std::function<void(std::chrono::milliseconds)> on_sleep) {
    DbOptions o;
    o.busy_timeout_ms = 1;
    o.busy_retries = 4;
    o.sleep = std::move(on_sleep);
    auto s = Store::Open(path_, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
};

// Another process holds the write lock past SQLite's busy timeout (a `sqlite3` session in a
// transaction, a backup): the store backs off and tries again, and the write goes through once
// the lock is released.
TEST_F(BusyStoreTest, BusyIsRetriedWithBackoffAndTheWriteSucceedsOnceTheLockIsGone) {
  Db outside;
  ASSERT_TRUE(outside.Open(path_).ok());
  ASSERT_TRUE(outside.Exec("BEGIN IMMEDIATE").ok());
  std::vector<std::chrono::milliseconds> slept;
  auto store = OpenWithSleep([&](std::chrono::milliseconds d) {
    slept.push_back(d);
    if (slept.size() == 2) {
      ASSERT_TRUE(outside.Exec("COMMIT").ok());
    }
  });
  ASSERT_TRUE(store);
  auto tx = store->Begin();
  ASSERT_TRUE(tx->begin_status().ok()) << tx->begin_status().ToString();
  ASSERT_TRUE(store->InsertCommand(1, "daemon", "stop", "ticket:1", "").ok());
  ASSERT_TRUE(tx->Commit().ok());
  ASSERT_EQ(slept.size(), 2u);
  EXPECT_LT(slept[0], slept[1]) << "the backoff grows";
}

// A lock that never goes away is surfaced as "busy", after a bounded number of attempts, and
// nothing is written.
TEST_F(BusyStoreTest, BusyThatPersistsIsAnUnavailableErrorAfterBoundedAttempts) {
  Db outside;
  ASSERT_TRUE(outside.Open(path_).ok());
  int sleeps = 0;
  auto store = OpenWithSleep([&](std::chrono::milliseconds) { ++sleeps; });
  ASSERT_TRUE(store);
  ASSERT_TRUE(outside.Exec("BEGIN IMMEDIATE").ok());
  {
    auto tx = store->Begin();
    EXPECT_EQ(tx->begin_status().code(), Status::Code::kUnavailable) << tx->begin_status().ToString();
    EXPECT_NE(tx->begin_status().message().find("busy"), std::string::npos) << tx->begin_status().message();
    EXPECT_FALSE(tx->Commit().ok());
  }
  EXPECT_EQ(sleeps, 4);
  ASSERT_TRUE(outside.Exec("COMMIT").ok());
  Stmt count = outside.Prepare("SELECT COUNT(*) FROM commands");
  ASSERT_TRUE(count.Step());
  EXPECT_EQ(count.Int(0), 0);
}

// A read that fails is an error, never "no rows": here another process dropped the table, both
// for a statement prepared before (cached) and one prepared for the first time after.
TEST_F(StoreTest, AReadThatFailsIsAnErrorNotAnEmptyResult) {
  ASSERT_TRUE(store_->SetCursor("github", "notifications", "etag-1", 0).ok());
  auto before = store_->Cursors("github");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->size(), 1u);
  Db outside;
  ASSERT_TRUE(outside.Open(path_).ok());
  ASSERT_TRUE(outside.Exec("DROP TABLE source_cursors; DROP TABLE source_health;").ok());
  auto cached = store_->Cursors("github");
  ASSERT_FALSE(cached.ok()) << "a dropped table read as " << cached->size() << " cursors";
  EXPECT_NE(cached.status().message().find("source_cursors"), std::string::npos) << cached.status().message();
  auto fresh = store_->GetHealth("github", "notifications");
  ASSERT_FALSE(fresh.ok()) << "a dropped table read as \"no health yet\"";
  EXPECT_NE(fresh.status().message().find("source_health"), std::string::npos) << fresh.status().message();
  EXPECT_FALSE(store_->AllHealth().ok());
  EXPECT_EQ(store_->BusyStatements(), 0);
}

// --- Files ----------------------------------------------------------------------------------

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 0777;
}

// The database holds every message and transcript: 0600 whatever the umask, and an existing
// file with wider modes is narrowed when the store opens it.
TEST_F(StoreTest, TheDatabaseAndItsWalAndShmAreOwnerOnlyUnderAnyUmask) {
  store_.reset();
  Remove();
  const mode_t old = ::umask(0);
  auto s = Store::Open(path_);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->SetCursor("github", "n", "v", 0).ok());  // -wal and -shm exist while open
  EXPECT_EQ(ModeOf(path_), 0600u);
  EXPECT_EQ(ModeOf(path_ + "-wal"), 0600u);
  EXPECT_EQ(ModeOf(path_ + "-shm"), 0600u);
  s->reset();
  ASSERT_EQ(::chmod(path_.c_str(), 0666), 0);
  auto again = Store::Open(path_);
  ::umask(old);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ModeOf(path_), 0600u);
  store_ = std::move(*again);
}

// A damaged page is noticed: quick_check on a copy whose page was overwritten names the damage,
// while the intact original checks clean.
TEST_F(StoreTest, QuickCheckNoticesACorruptedPage) {
  for (int i = 0; i < 200; ++i) AddTrigger("t" + std::to_string(i));
  auto sound = store_->QuickCheck(std::chrono::milliseconds(0));
  ASSERT_TRUE(sound.ok()) << sound.status().ToString();
  EXPECT_TRUE(*sound);
  store_.reset();  // the last connection checkpoints the WAL into the file
  const std::string copy = path_ + ".copy";
  std::filesystem::copy_file(path_, copy, std::filesystem::copy_options::overwrite_existing);
  const auto size = std::filesystem::file_size(copy);
  ASSERT_GT(size, 8u * 4096u);
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2 / 4096 * 4096));
    std::string junk(4096, '\xA5');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  Db damaged;
  ASSERT_TRUE(damaged.Open(copy).ok());
  auto check = QuickCheck(damaged, std::chrono::milliseconds(0));
  EXPECT_FALSE(check.ok()) << "a page of 0xA5 bytes passed quick_check";
  EXPECT_NE(check.status().message().find("damaged"), std::string::npos) << check.status().message();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(copy + suffix);
  auto reopened = Store::Open(path_);
  ASSERT_TRUE(reopened.ok());
  store_ = std::move(*reopened);
}

}  // namespace
}  // namespace superagent::store
