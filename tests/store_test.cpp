// The store's own guarantees: immutability enforced by the schema, one running Eval per Thread,
// migrations applied once, and refusal to run on a newer schema.
#include <gtest/gtest.h>

#include <filesystem>

#include "store/store.h"

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
    r.trigger.channel = "github:issue:1";
    r.trigger.threads = {"github:issue:1"};
    r.via = "test";
    auto seq = store_->InsertTrigger(r);
    EXPECT_TRUE(seq.ok());
    EXPECT_TRUE(store_->UpsertThread("github:issue:1", "github", "github:issue:1", 0).ok());
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
  EXPECT_EQ(store_->FindTrigger("t1")->trigger.text, "");
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

TEST_F(StoreTest, SchemaAllowsOneRunningEvalPerThread) {
  AddTrigger("t1");
  ASSERT_TRUE(store_->InsertPolicyVersion("f", "{}", "t", 0).ok());
  ASSERT_TRUE(store_->InsertEval("github:issue:1", 1, 0, 10).ok());
  EXPECT_FALSE(store_->InsertEval("github:issue:1", 1, 0, 10).ok());
}

TEST_F(StoreTest, MigrationsRunOnceAndNewerSchemasAreRefused) {
  int v = store_->SchemaVersion();
  EXPECT_GE(v, 1);
  store_.reset();
  auto again = Store::Open(path_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->SchemaVersion(), v);
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

}  // namespace
}  // namespace superagent::store
