// The panel's read model on a real store written by the real Engine.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "panel_fixture.h"
#include "result_ok.h"
#include "superagent/views.h"

namespace superagent::testing {
namespace {

class ViewsTest : public PanelSeedTest {
 protected:
  void OpenViews() {
    auto v = Views::Open((dir_ / "superagent.db").string());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    views_ = std::move(*v);
  }
  void TearDown() override {
    views_.reset();
    PanelSeedTest::TearDown();
  }
  std::unique_ptr<Views> views_;
};

TEST_F(ViewsTest, OpeningWithoutADatabaseCreatesNothing) {
  auto v = Views::Open((dir_ / "missing.db").string());
  EXPECT_EQ(v.status().code(), Status::Code::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "missing.db"));
}

TEST_F(ViewsTest, DataVersionMovesWhenTheEngineCommits) {
  OpenViews();
  std::int64_t before = views_->DataVersion();
  EXPECT_EQ(views_->DataVersion(), before);  // nothing happened
  Receive(Comment("c1", "alice", true, "@agent hello"));
  EXPECT_NE(views_->DataVersion(), before);
}

TEST_F(ViewsTest, SeesTheSeededStateAsThePanelShowsIt) {
  PanelSeed s = Seed();
  OpenViews();
  auto questions = Ok(views_->TicketsInStage(Stage::kWaitingForPerson, 10));
  ASSERT_EQ(questions.size(), 2u);
  EXPECT_EQ(questions[0].ticket.id, s.question_old);  // asked first, answered first
  ASSERT_TRUE(questions[0].ticket.waiting);
  EXPECT_EQ(questions[0].ticket.waiting->form["options"][0], "docs/setup.md");
  ASSERT_TRUE(questions[0].origin);
  EXPECT_EQ(questions[0].origin->trigger.id, "gh:comment:1001");
  EXPECT_EQ(questions[0].origin->trigger.threads, std::vector<std::string>{"github:acme/widgets:issue:11"});

  auto problems = Ok(views_->Problems(3));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, "source:feishu:backfill");
  EXPECT_TRUE(Ok(views_->Problems(4)).empty());

  StatusCounts c = Ok(views_->Counts());
  EXPECT_EQ(c.tickets["waiting_for_person"], 2);
  EXPECT_EQ(c.tickets["blocked"], 1);
  EXPECT_EQ(c.tickets["ended"], 1);
  EXPECT_EQ(c.decisions["accept"], 4);
  EXPECT_EQ(c.decisions["ignore"], 1);
  EXPECT_EQ(c.would_accept, 1);
  EXPECT_EQ(c.assignments_pending, 3);  // the ended Ticket's Assignment ended with it
  EXPECT_EQ(c.assignments_running, 0);
  EXPECT_EQ(c.receipts_pending, 6);  // four acknowledgements, two questions

  auto policy = Ok(views_->CurrentPolicy());
  ASSERT_TRUE(policy);
  EXPECT_EQ(policy->version, 1);
  ASSERT_EQ(Ok(views_->SourcesHealth()).size(), 2u);
  ASSERT_EQ(Ok(views_->Cursors()).size(), 2u);

  auto ended = Ok(views_->Tickets(Stage::kEnded, 10, std::nullopt));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].ticket.id, s.ended);
  auto older = Ok(views_->Tickets(std::nullopt, 10, s.blocked));
  ASSERT_EQ(older.size(), 2u);
  EXPECT_EQ(older[0].ticket.id, s.question_new);

  auto wa = Ok(views_->WouldAccept(10));
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_TRUE(wa[0].decision.would_accept);
  ASSERT_EQ(wa[0].batch.size(), 1u);
  EXPECT_EQ(wa[0].batch[0].record.trigger.id, s.would_accept_trigger);
  EXPECT_TRUE(wa[0].batch[0].candidate);
}

TEST_F(ViewsTest, DetailHoldsEverythingAboutOneTicket) {
  PanelSeed s = Seed();
  ASSERT_TRUE(engine_->StopTicket(s.blocked, "Tess (panel)").ok());
  OpenViews();
  auto d = views_->Detail(s.blocked);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->row.ticket.stage, Stage::kEnded);
  ASSERT_TRUE(d->row.mandate);
  EXPECT_EQ(d->row.mandate->mandate.ended_as, "withdrawn");
  EXPECT_EQ(d->row.mandate->ended_by, "Tess (panel)");
  ASSERT_EQ(d->decisions.size(), 1u);
  EXPECT_EQ(d->decisions[0].decision.outcome, DecisionOutcome::kAccept);
  ASSERT_EQ(d->inputs.size(), 1u);
  ASSERT_TRUE(d->inputs[0].trigger);
  EXPECT_EQ(d->inputs[0].trigger->trigger.text, "@agent please update the CI badge in README");
  ASSERT_EQ(d->events.size(), 3u);  // accepted, blocked, stopped
  EXPECT_EQ(d->events[1].to, Stage::kBlocked);
  EXPECT_EQ(d->events[2].cause, "panel stop by Tess (panel)");
  ASSERT_EQ(d->commands.size(), 1u);
  EXPECT_EQ(d->commands[0].command, "stop");
  ASSERT_EQ(d->assignments.size(), 1u);
  EXPECT_EQ(d->assignments[0].state, "ended");
  EXPECT_EQ(views_->Detail(999).status().code(), Status::Code::kNotFound);
}

// Issue 18: a read the store fails is an error, never an empty list ("Nothing needs you" while
// the store is broken would be a lie a person acts on). Another process damages the schema.
TEST_F(ViewsTest, AFailedReadIsAnErrorNotAnEmptyList) {
  PanelSeed s = Seed();
  OpenViews();
  ASSERT_EQ(Ok(views_->Problems(3)).size(), 1u);
  sqlite3* outside = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "superagent.db").string().c_str(), &outside), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(outside, "DROP TABLE system_problems; DROP TABLE trigger_threads;", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(outside);
  auto problems = views_->Problems(3);
  ASSERT_FALSE(problems.ok());
  EXPECT_NE(problems.status().message().find("system_problems"), std::string::npos) << problems.status().ToString();
  // A Ticket row reads its origin's threads: that failure reaches the caller too.
  auto questions = views_->TicketsInStage(Stage::kWaitingForPerson, 10);
  EXPECT_FALSE(questions.ok());
  EXPECT_FALSE(views_->Detail(s.blocked).ok());
  EXPECT_NE(views_->Detail(s.blocked).status().code(), Status::Code::kNotFound);
  // What the damage did not touch still reads.
  EXPECT_TRUE(views_->Cursors().ok());
}

TEST_F(ViewsTest, RecordCommandKeepsWhoAndWhen) {
  OpenViews();
  ASSERT_TRUE(engine_->RecordCommand("Tess (panel)", "reload_policy", "policy", "{\"valid\":true}").ok());
  EXPECT_EQ(engine_->RecordCommand("", "reload_policy", "", "").code(), Status::Code::kInvalidArgument);
  auto commands = Ok(views_->Commands(10));
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].who, "Tess (panel)");
  EXPECT_EQ(commands[0].at, clock_.NowMs());
}

}  // namespace
}  // namespace superagent::testing
