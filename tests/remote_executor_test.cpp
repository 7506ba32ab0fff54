// Issue 36: a Ticket's turn run by a worker elsewhere, through the daemon's real Scheduler,
// Workspaces (sandbox, verified.git, the push) and Engine. The test plays the worker over the
// WorkerPool's interface — what the HTTP endpoints will carry — with real git: it builds its
// repository from the bundle it is given, commits, and hands its commits back as a bundle.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "exec_fixture.h"
#include "result_ok.h"
#include "superagent/worker_pool.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace fs = std::filesystem;

class RemoteExecutorTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    exec::RemoteExecutorOptions o;
    o.executor = "claude-code";
    o.wait_ms = 20;
    executor_ = exec::MakeRemoteExecutor(o, &pool_, workspaces_.get(), services_.get(), &exec_clock_);
    scheduler_ = MakeScheduler(executor_.get());
  }
  void TearDown() override {
    scheduler_.reset();
    executor_.reset();
    ExecTest::TearDown();
  }

  // The lease `worker` gets once the Scheduler has offered a turn (it offers on its own thread).
  exec::Lease ClaimWhenOffered(const std::string& worker) {
    pool_.Announce(worker, {"claude-code"}, 1);
    std::optional<exec::Lease> lease;
    EXPECT_TRUE(Eventually([&] {
      auto claimed = pool_.Claim(worker);
      if (claimed.ok() && claimed->has_value()) lease = **claimed;
      return lease.has_value();
    })) << "nothing was offered";
    return lease.value_or(exec::Lease{});
  }

  // What a worker does with a lease: its own repository from the bundle, `readme` written and
  // committed, the commits over the base bundled.
  std::string WorkOn(const exec::Lease& lease, const std::string& name, const std::string& readme) {
    const fs::path dir = dir_ / name;
    fs::create_directories(dir);
    std::ofstream(dir / "code.bundle", std::ios::binary) << lease.turn.code;
    const std::string base = "refs/remotes/" + lease.turn.task["base"].get<std::string>();
    Sh("cd " + dir.string() + " && git init -q repo && cd repo && git fetch -q ../code.bundle HEAD:refs/heads/work " +
       base + ":" + base + " && git checkout -q work && printf '" + readme + "' > README.md && git -c user.name=w " +
       "-c user.email=w@w commit -qam 'Fix the typo' && git bundle create -q ../return.bundle HEAD ^" + base);
    return ReadText(dir / "return.bundle");
  }

  static exec::TurnReturn Ready(std::string bundle, const std::string& summary) {
    exec::TurnReturn r;
    r.report = {{"stage", "ready"},
                {"summary", summary},
                {"pr", {{"title", "Fix the typo"}, {"body", "修正了 README 里的错别字。"}}}};
    r.bundle = std::move(bundle);
    return r;
  }

  std::string Why(TicketId id) { return Ok(views_->Detail(id)).row.stage_reason; }
  std::string LastResult(TicketId id) {
    auto receipts = Ok(views_->Receipts(id));
    return receipts.empty() ? "" : receipts.back().body;
  }

  exec::WorkerPool pool_{exec::WorkerPool::Options{30'000}, &exec_clock_};
  std::unique_ptr<exec::Executor> executor_;
  std::unique_ptr<exec::Scheduler> scheduler_;
};

TEST_F(RemoteExecutorTest, AWorkerElsewhereDoesTheTurnAndTheDaemonVerifiesAndPushesItsCommits) {
  const TicketId id = AcceptedTicket("m1");
  ASSERT_EQ(*scheduler_->Tick(), 1);
  const exec::Lease lease = ClaimWhenOffered("worker-a");
  EXPECT_EQ(lease.turn.ticket, id);
  EXPECT_THAT(lease.turn.task["request_text"].get<std::string>(), HasSubstr("fix the typo in README"));
  EXPECT_EQ(lease.turn.task["base"], "origin/main");
  ASSERT_EQ(pool_.Heartbeat("worker-a", lease.id), exec::LeaseState::kHeld);
  const std::string bundle = WorkOn(lease, "worker-a", "Hello\\nThere is the typo — 修好了 ✅.\\n");
  ASSERT_TRUE(pool_.Return("worker-a", lease.id, Ready(bundle, "Fixed the typo.")).ok());
  scheduler_->WaitForTurns();

  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady) << LastResult(id);
  EXPECT_THAT(LastResult(id), HasSubstr("Fixed the typo."));
  const std::string branch = Ok(views_->WorkspaceFor(id))->branch;
  EXPECT_EQ(OnOrigin(branch, "README.md"), "Hello\nThere is the typo — 修好了 ✅.\n") << "verified and pushed";
  EXPECT_TRUE(pool_.View().queued.empty());
}

// A worker that dies (or is cut off) mid-turn: its lease expires, the turn goes to another worker
// from the start, the first one's late return is refused, and the Ticket gets one result.
TEST_F(RemoteExecutorTest, AWorkerLostMidTurnLosesItsLeaseAndTheNextWorkersResultIsTheOneTaken) {
  const TicketId id = AcceptedTicket("m1");
  ASSERT_EQ(*scheduler_->Tick(), 1);
  const exec::Lease lost = ClaimWhenOffered("worker-a");
  const std::string late = WorkOn(lost, "worker-a", "Hello\\nlate\\n");
  exec_clock_.Advance(30'000);  // no heartbeat for the lease's time: the offerer's loop expires it
  const exec::Lease second = ClaimWhenOffered("worker-b");
  EXPECT_EQ(second.attempt, 2);
  EXPECT_EQ(second.turn.ticket, id);
  EXPECT_EQ(pool_.Return("worker-a", lost.id, Ready(late, "late")).code(), Status::Code::kConflict);
  const std::string bundle = WorkOn(second, "worker-b", "Hello\\nThere is the typo.\\n");
  ASSERT_TRUE(pool_.Return("worker-b", second.id, Ready(bundle, "Fixed by the second worker.")).ok());
  scheduler_->WaitForTurns();

  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
  auto receipts = Ok(views_->Receipts(id));
  int results = 0;
  for (const auto& r : receipts) results += r.body.find("Fixed by the second worker.") != std::string::npos;
  EXPECT_EQ(results, 1);
  for (const auto& r : receipts) EXPECT_EQ(r.body.find("late"), std::string::npos) << r.body;
  EXPECT_EQ(OnOrigin(Ok(views_->WorkspaceFor(id))->branch, "README.md"), "Hello\nThere is the typo.\n");
}

// A person's Stop reaches the remote turn: the offer is withdrawn, the worker hears it at its
// next heartbeat, and what it sends afterwards is refused.
TEST_F(RemoteExecutorTest, AStopWithdrawsTheRemoteTurnAndItsReturnIsRefused) {
  const TicketId id = AcceptedTicket("m1");
  ASSERT_EQ(*scheduler_->Tick(), 1);
  const exec::Lease lease = ClaimWhenOffered("worker-a");
  ASSERT_TRUE(engine_->StopTicket(id, "alice").ok());
  ASSERT_TRUE(scheduler_->Tick().ok());
  scheduler_->WaitForTurns();
  EXPECT_EQ(pool_.Heartbeat("worker-a", lease.id), exec::LeaseState::kLost) << "the offer is gone";
  EXPECT_EQ(pool_.Return("worker-a", lease.id, Ready(WorkOn(lease, "worker-a", "x\\n"), "after the stop")).code(),
            Status::Code::kConflict);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kEnded);
  for (const auto& r : Ok(views_->Receipts(id))) EXPECT_EQ(r.body.find("after the stop"), std::string::npos);
}

// A hostile worker's bundle — garbage, or commits that do not start from the Ticket's base — is
// refused by git in the sandbox or by the daemon's checks: nothing is pushed, the Ticket is
// blocked and the panel's card says why.
TEST_F(RemoteExecutorTest, AHostileWorkersBundleIsRefusedAndNothingIsPushed) {
  const TicketId id = AcceptedTicket("m1");
  ASSERT_EQ(*scheduler_->Tick(), 1);
  const exec::Lease lease = ClaimWhenOffered("worker-a");
  std::string garbage = "# v2 git bundle\n";
  garbage += std::string("\0\xff 垃圾 😀\n\n PACK", 22) + std::string(4096, '\x01');
  ASSERT_TRUE(pool_.Return("worker-a", lease.id, Ready(garbage, "trust me")).ok());
  scheduler_->WaitForTurns();
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  EXPECT_EQ(LastResult(id).find("trust me"), std::string::npos);
  const std::string branch = Ok(views_->WorkspaceFor(id))->branch;
  EXPECT_EQ(Sh("git -C " + origin_.string() + " branch --list " + branch), "") << "nothing pushed";

  // Commits with their own root, not the Ticket's base: the daemon's check refuses them.
  Receive(Comment("m2", "alice", true, "@agent please try again", 1));
  ASSERT_TRUE(engine_->AssignFollowUps().ok());
  ASSERT_EQ(*scheduler_->Tick(), 1) << "the follow-up starts a turn";
  const exec::Lease again = ClaimWhenOffered("worker-a");
  const fs::path dir = dir_ / "orphan";
  Sh("git init -q " + dir.string() + " && cd " + dir.string() +
     " && echo owned > README.md && git add -A && git -c user.name=x -c user.email=x@x commit -qm own"
     " && git bundle create -q ../orphan.bundle HEAD");
  ASSERT_TRUE(pool_.Return("worker-a", again.id, Ready(ReadText(dir_ / "orphan.bundle"), "trust me too")).ok());
  scheduler_->WaitForTurns();
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  EXPECT_THAT(Why(id), HasSubstr("does not start from its base"));
  EXPECT_EQ(Sh("git -C " + origin_.string() + " branch --list " + branch), "") << "nothing pushed";
}


// Issue 37: a remote worker takes one repository's bundle; a Ticket across repositories is refused
// there in words, before anything is offered, rather than losing the other repositories' work.
TEST_F(RemoteExecutorTest, ATicketAcrossRepositoriesIsRefusedInWordsAndNothingIsOffered) {
  exec::WorkerTask task;
  task.ticket = AcceptedTicket("c1");
  task.workspace = Ok(workspaces_->Prepare(task.ticket));
  WorkspaceRecord other = task.workspace;
  other.repo = "acme/api";
  other.dir = workspaces_->DirFor(task.ticket, "acme/api");
  task.other_workspaces = {other};
  auto turn = executor_->RunTurn(task);
  ASSERT_FALSE(turn.ok());
  EXPECT_EQ(turn.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(turn.status().message(), HasSubstr("a Ticket that changes 2 repositories runs on this machine's workers only"));
  pool_.Announce("w1", {"claude-code"}, 1);
  auto claimed = pool_.Claim("w1");
  ASSERT_TRUE(claimed.ok());
  EXPECT_FALSE(claimed->has_value()) << "nothing was offered";
}

}  // namespace
}  // namespace superagent::testing
