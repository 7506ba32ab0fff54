// Source bookkeeping (SPEC §3.3–3.5), system problems (SPEC §6) and answers from the panel.
#include "engine_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

TEST_F(EngineTest, SourceUpdateSavesCursorsAndFailedItemsTogether) {
  SourceUpdate u;
  u.source = "github";
  u.set_cursors = {{"notifications", "2026-01-01T00:00:00Z"}, {"retry:issue:57", R"({"since":"x","attempts":1})"}};
  u.path = "notifications";
  u.skipped = 2;
  ASSERT_TRUE(engine_->UpdateSource(u).ok());
  auto cursors = views_->SourceCursors("github").value();
  EXPECT_EQ(cursors.size(), 2u);
  EXPECT_EQ(cursors["retry:issue:57"], R"({"since":"x","attempts":1})");
  SourceUpdate done;
  done.source = "github";
  done.erase_cursors = {"retry:issue:57"};
  ASSERT_TRUE(engine_->UpdateSource(done).ok());
  EXPECT_EQ(views_->SourceCursors("github").value().count("retry:issue:57"), 0u);
  auto health = Ok(views_->SourcesHealth());
  ASSERT_EQ(health.size(), 1u);
  EXPECT_EQ(health[0].skipped_items, 2);
  EXPECT_EQ(health[0].last_success_at, clock_.NowMs());
  EXPECT_TRUE(views_->SourceCursors("feishu").value().empty()) << "each Source keeps its own cursors";
}

TEST_F(EngineTest, ThreeConsecutiveFailuresRaiseOneProblemAndSuccessClearsIt) {
  SourceUpdate fail;
  fail.source = "github";
  fail.path = "notifications";
  fail.ok = false;
  fail.error = "HTTP 502";
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(engine_->UpdateSource(fail).ok());
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty()) << "two failures are not yet a problem";
  ASSERT_TRUE(engine_->UpdateSource(fail).ok());
  ASSERT_TRUE(engine_->UpdateSource(fail).ok());
  auto problems = Ok(views_->Problems(options_.problem_threshold));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, "source:github:notifications");
  EXPECT_EQ(problems[0].failures, 4);
  EXPECT_EQ(Ok(views_->SourcesHealth())[0].consecutive_failures, 4);
  SourceUpdate ok;
  ok.source = "github";
  ok.path = "notifications";
  ASSERT_TRUE(engine_->UpdateSource(ok).ok());
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty());
  EXPECT_EQ(Ok(views_->SourcesHealth())[0].consecutive_failures, 0);
  EXPECT_EQ(Ok(views_->SourcesHealth())[0].last_error, "HTTP 502") << "the last error stays visible";
  // A new run of failures starts counting from one.
  ASSERT_TRUE(engine_->UpdateSource(fail).ok());
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty());
}

// A read the daemon's stop cut short is not the peer's failure: its cursors are still saved, but
// the path's health and failure count stay as they were.
TEST_F(EngineTest, AnAbandonedReadIsNeitherRecordedNorCounted) {
  SourceUpdate fail;
  fail.source = "github";
  fail.path = "notifications";
  fail.ok = false;
  fail.error = "HTTP 502";
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(engine_->UpdateSource(fail).ok());
  SourceUpdate abandoned = fail;
  abandoned.error = "GET /notifications: abandoned, shutting down";
  abandoned.abandoned = true;
  abandoned.set_cursors = {{"retry:issue:57", "{}"}};
  ASSERT_TRUE(engine_->UpdateSource(abandoned).ok());
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty()) << "an abandoned read is not a third failure";
  auto health = Ok(views_->SourcesHealth());
  ASSERT_EQ(health.size(), 1u);
  EXPECT_EQ(health[0].consecutive_failures, 2);
  EXPECT_EQ(health[0].last_error, "HTTP 502");
  EXPECT_EQ(views_->SourceCursors("github").value().count("retry:issue:57"), 1u);
}

TEST_F(EngineTest, GenericFailuresUseTheSameThreshold) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine_->ReportFailure("effect:post_message:github", "HTTP 500").ok());
  ASSERT_EQ(Ok(views_->Problems(options_.problem_threshold)).size(), 1u);
  ASSERT_TRUE(engine_->ReportSuccess("effect:post_message:github").ok());
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty());
}

TEST_F(EngineTest, PanelAnswerResumesOnlyAWaitingTicket) {
  TicketId id = AcceptedTicket("c1");
  EXPECT_EQ(engine_->AnswerQuestion(id, "panel:alice", "root").code(), Status::Code::kConflict);
  ASSERT_TRUE(EngineTestPeer(*engine_).AskPerson(id, {"github:acme/widgets:issue:1", "bob", "Which README?", {}}, "ask:1").ok());
  EXPECT_EQ(engine_->AnswerQuestion(id, "", "root").code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(engine_->AnswerQuestion(id, "panel:alice", "root").ok());
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kIdle);
  auto last = Ok(views_->TicketInputs(id)).back();
  EXPECT_EQ(last.kind, "answer");
  EXPECT_EQ(last.body["answer"], (nlohmann::json{{"text", "root"}}));
  EXPECT_EQ(last.body["question"], "Which README?");
}

TEST_F(EngineTest, DeletedThreadIsRecorded) {
  Receive(Comment("c1", "alice", true, "hi"));
  ASSERT_TRUE(engine_->MarkThreadDeleted("github:acme/widgets:issue:1", "HTTP 410").ok());
  EXPECT_EQ(engine_->MarkThreadDeleted("github:acme/widgets:issue:404", "x").code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace superagent::testing
