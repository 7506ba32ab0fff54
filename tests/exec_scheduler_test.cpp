// The slots scheduler: N worker slots + 1 reserved for people, order of queued work, background
// work limits, stop and shutdown killing whole process trees, restart recovery, workspace cleanup.
#include <gmock/gmock.h>
#include <atomic>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "exec_fixture.h"
#include "superagent/views.h"
#include "superagent/worker.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

// An executor whose turns are scripted per test; it can hold a Ticket's turn until released.
class ScriptedExecutor : public exec::Executor {
 public:
  std::string name() const override { return "scripted"; }
  Result<exec::TurnResult> RunTurn(const exec::WorkerTask& t) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      turns.push_back(t.ticket);
      inputs[t.ticket] = t.inputs;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !held.count(t.ticket) || (t.cancel != nullptr && t.cancel->load()); });
    }
    if (on_turn) return on_turn(t);
    exec::TurnResult r;
    r.report = exec::WorkerReport{Stage::kReady, "Done with " + std::to_string(t.ticket) + ".", std::nullopt, std::nullopt};
    return r;
  }
  void Hold(TicketId id) {
    std::lock_guard<std::mutex> lock(mu_);
    held.insert(id);
  }
  void Release(TicketId id) {
    std::lock_guard<std::mutex> lock(mu_);
    held.erase(id);
    cv_.notify_all();
  }
  // Waits until `n` turns have started (turn threads are real threads).
  void WaitTurns(std::size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return turns.size() >= n; });
  }
  void Wake() { cv_.notify_all(); }
  std::vector<TicketId> Turns() {
    std::lock_guard<std::mutex> lock(mu_);
    return turns;
  }

  std::function<Result<exec::TurnResult>(const exec::WorkerTask&)> on_turn;
  std::map<TicketId, std::vector<json>> inputs;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<TicketId> held;
  std::vector<TicketId> turns;
};

class ExecSchedulerTest : public ExecTest {};

TEST_F(ExecSchedulerTest, WithOneSlotAPersonsFollowUpUsesTheReservedSlotWhileNewWorkWaits) {
  ScriptedExecutor executor;
  auto scheduler = MakeScheduler(&executor, /*slots=*/1);
  const TicketId b = AcceptedTicket("b1", 2);
  ASSERT_EQ(*scheduler->Tick(), 1);
  scheduler->WaitForTurns();
  ASSERT_TRUE(scheduler->Tick().ok());
  ASSERT_EQ(views_->GetTicket(b)->stage, Stage::kReady);

  const TicketId a = AcceptedTicket("a1", 1);
  executor.Hold(a);
  ASSERT_EQ(*scheduler->Tick(), 1);  // the long Ticket takes the only worker slot
  executor.WaitTurns(2);
  EXPECT_EQ(views_->GetTicket(a)->stage, Stage::kWorking);

  Receive(Comment("b2", "alice", false, "and the other typo too", 2));  // a person's follow-up to b
  const TicketId c = AcceptedTicket("c1", 3);                          // new work
  ASSERT_EQ(*scheduler->Tick(), 1);
  executor.WaitTurns(3);
  EXPECT_EQ(executor.Turns()[2], b);
  auto slots = scheduler->Slots();
  EXPECT_EQ(slots.worker_used, 1);
  EXPECT_TRUE(slots.reserved_used);
  EXPECT_EQ(slots.queued, 1);
  ASSERT_EQ(executor.inputs[b].size(), 1u);
  EXPECT_EQ(executor.inputs[b][0]["text"], "and the other typo too");
  scheduler->WaitForTurns(b);  // b's follow-up finishes (a is still held)
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_EQ(Ok(views_->Assignments(c))[0].state, "pending");  // new work still waits for a's slot
  EXPECT_EQ(views_->GetTicket(c)->stage, Stage::kIdle);

  executor.Release(a);
  scheduler->WaitForTurns();
  ASSERT_TRUE(scheduler->Tick().ok());  // a's slot is free: c starts
  executor.WaitTurns(4);
  EXPECT_EQ(executor.Turns()[3], c);
  scheduler->WaitForTurns();
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_EQ(views_->GetTicket(c)->stage, Stage::kReady);
}

// Issue 35: a turn is two Engine writes — BeginTurn and FinishTurn — plus one per transcript
// event it appends (what the panel shows live); what the Scheduler asks besides (pending
// Assignments, the Ticket's stage, workspaces to remove) goes to the read face and writes nothing.
TEST_F(ExecSchedulerTest, ATurnIsTwoEngineWritesPlusOnePerTranscriptEvent) {
  auto executor = exec::MakeCommandExecutor(
      {"echo '{\"stage\":\"ready\",\"summary\":\"Fixed it.\",\"question\":null}'"}, engine_.get());
  auto scheduler = MakeScheduler(executor.get());
  const TicketId t = AcceptedTicket("w1");
  const std::int64_t before = engine_->WriteTransactions();
  ASSERT_EQ(*scheduler->Tick(), 1);
  scheduler->WaitForTurns();
  ASSERT_TRUE(scheduler->Tick().ok());
  const std::int64_t writes = engine_->WriteTransactions() - before;
  ASSERT_EQ(views_->GetTicket(t)->stage, Stage::kReady);
  const auto session = Ok(views_->SessionForTicket(t));
  ASSERT_TRUE(session.has_value());
  const auto events = Ok(views_->SessionEvents(session->id));
  EXPECT_FALSE(events.empty());
  EXPECT_EQ(writes, 2 + static_cast<std::int64_t>(events.size()));
  // A pass with nothing to do writes nothing.
  const std::int64_t idle = engine_->WriteTransactions();
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_EQ(engine_->WriteTransactions(), idle);
}

// SPEC §6: the extra slot is for people. A bot's comment on a Ticket whose worker slot is taken
// waits for an ordinary slot; a person's message on the same Ticket does not.
TEST_F(ExecSchedulerTest, ABotsCommentNeverTakesTheSlotKeptForPeople) {
  ScriptedExecutor executor;
  auto scheduler = MakeScheduler(&executor, /*slots=*/1);
  const TicketId b = AcceptedTicket("b1", 2);
  ASSERT_EQ(*scheduler->Tick(), 1);
  scheduler->WaitForTurns();
  ASSERT_TRUE(scheduler->Tick().ok());
  const TicketId a = AcceptedTicket("a1", 1);
  executor.Hold(a);
  ASSERT_EQ(*scheduler->Tick(), 1);  // a holds the only worker slot
  executor.WaitTurns(2);

  Receive(Comment("bot", "renovate[bot]", false, "Update dependency eslint to v9", 2, /*human=*/false));
  EXPECT_EQ(*scheduler->Tick(), 0) << "the bot's update waits for a's slot";
  EXPECT_EQ(Ok(views_->Assignments(b)).back().cause, "update");
  EXPECT_FALSE(scheduler->Slots().reserved_used);

  // A person's message to the same Ticket makes its queued turn theirs: it starts now, in the
  // reserved slot, and takes both inputs.
  Receive(Comment("person", "alice", false, "please also bump the lockfile", 2));
  EXPECT_EQ(Ok(views_->Assignments(b)).back().cause, "follow_up");
  EXPECT_EQ(*scheduler->Tick(), 1);
  executor.WaitTurns(3);
  EXPECT_EQ(executor.Turns()[2], b);
  EXPECT_TRUE(scheduler->Slots().reserved_used);
  ASSERT_EQ(executor.inputs[b].size(), 2u) << "one turn takes both";
  scheduler->WaitForTurns(b);
  executor.Release(a);
  scheduler->WaitForTurns();
}

TEST_F(ExecSchedulerTest, QueuedTicketsStartInOrder) {
  ScriptedExecutor executor;
  auto scheduler = MakeScheduler(&executor, /*slots=*/1);
  const TicketId first = AcceptedTicket("t1", 1), second = AcceptedTicket("t2", 2), third = AcceptedTicket("t3", 3);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(*scheduler->Tick(), 1);
    scheduler->WaitForTurns();
  }
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_EQ(executor.Turns(), (std::vector<TicketId>{first, second, third}));
}

// An executor that throws (a type error deep in a turn) used to end the daemon: the exception left
// the turn's thread. Now the Ticket is blocked with why, the slot is freed, and the next Ticket's
// turn runs.
TEST_F(ExecSchedulerTest, ATurnThatThrowsBlocksItsTicketWithWhyAndTheNextTurnRuns) {
  ScriptedExecutor executor;
  auto scheduler = MakeScheduler(&executor, /*slots=*/1);
  const TicketId first = AcceptedTicket("t1", 1), second = AcceptedTicket("t2", 2);
  executor.on_turn = [&](const exec::WorkerTask& t) -> Result<exec::TurnResult> {
    if (t.ticket == first) (void)json::parse(R"({"path": 5})").value("path", "");  // type_error 302
    exec::TurnResult r;
    r.report = exec::WorkerReport{Stage::kReady, "Done.", std::nullopt, std::nullopt};
    return r;
  };
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(*scheduler->Tick(), 1);
    scheduler->WaitForTurns();
  }
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_EQ(executor.Turns(), (std::vector<TicketId>{first, second}));
  EXPECT_EQ(views_->GetTicket(first)->stage, Stage::kBlocked);
  EXPECT_EQ(views_->GetTicket(second)->stage, Stage::kReady);
  // The discussion hears the daemon's words; the panel's card has the exception's (issue 34).
  bool said = false;
  for (const Receipt& r : Ok(views_->Receipts(first)))
    said = said || r.body.find("the worker stopped with an error") != std::string::npos;
  EXPECT_TRUE(said) << "the blocked result says what happened";
  auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
  EXPECT_THAT(Ok(views->Detail(first)).row.stage_reason, HasSubstr("unexpected error in the worker turn"));
  EXPECT_EQ(scheduler->Slots().worker_used, 0);
}

TEST_F(ExecSchedulerTest, BackgroundWorkKeepsTheSlotAndIsKilledAfterThirtyMinutesAndReported) {
  const int port = FreePort();
  ScriptedExecutor executor;
  executor.on_turn = [&](const exec::WorkerTask& t) -> Result<exec::TurnResult> {
    auto r = t.jobs->Run(ListenerCommand(port), t.workspace.dir, "", 5'000);
    if (!r.ok()) return r.status();
    EXPECT_TRUE(r->background);
    return exec::TurnResult{};  // the turn ends; the server keeps running in the background
  };
  auto scheduler = MakeScheduler(&executor, /*slots=*/1);
  const TicketId id = AcceptedTicket("t1");
  ASSERT_EQ(*scheduler->Tick(), 1);
  scheduler->WaitForTurns();
  ASSERT_TRUE(Eventually([&] { return Listening(port); }));
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_EQ(scheduler->Slots().worker_used, 1);  // background work holds the slot
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kWorking) << "SPEC §6: it stays working while its jobs run";
  exec_clock_.Advance(29 * 60'000);
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_TRUE(Listening(port));
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kWorking);
  exec_clock_.Advance(2 * 60'000);
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_TRUE(Eventually([&] { return !Listening(port); })) << "an orphan still listens";
  EXPECT_EQ(scheduler->Slots().worker_used, 0);
  // The turn never reported, so once its jobs are gone its requester is told so (issue 34).
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked) << "the turn's own outcome once its jobs are gone";
  auto views = Views::Open((dir_ / "superagent.db").string());
  ASSERT_TRUE(views.ok());
  auto detail = (*views)->Detail(id);
  ASSERT_TRUE(detail.ok());
  EXPECT_THAT(detail->events.back().cause, HasSubstr("background jobs killed after 30 min: " + ListenerCommand(port)));
  auto events = Ok(views_->SessionEvents(Ok(views_->SessionForTicket(id))->id));
  EXPECT_EQ(events.back().kind, "jobs_killed");
  bool told = false;
  for (const Receipt& r : Ok(views_->Receipts(id))) told |= r.body.find("ended without a result") != std::string::npos;
  EXPECT_TRUE(told);
}

TEST_F(ExecSchedulerTest, StoppingATicketKillsItsWholeProcessTree) {
  const int port = FreePort();
  ScriptedExecutor executor;
  executor.on_turn = [&](const exec::WorkerTask& t) -> Result<exec::TurnResult> {
    auto r = t.jobs->Run(ListenerCommand(port), t.workspace.dir, "", 365LL * 24 * 3600 * 1000, t.cancel);
    if (!r.ok()) return r.status();
    return exec::TurnResult{};
  };
  auto scheduler = MakeScheduler(&executor);
  const TicketId id = AcceptedTicket("t1");
  ASSERT_EQ(*scheduler->Tick(), 1);
  ASSERT_TRUE(Eventually([&] { return Listening(port); }));
  ASSERT_TRUE(engine_->StopTicket(id, "alice").ok());
  ASSERT_TRUE(scheduler->Tick().ok());  // sees the stop: cancels the turn and kills its tree
  scheduler->WaitForTurns();
  EXPECT_TRUE(Eventually([&] { return !Listening(port); }));
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_EQ(scheduler->Slots().worker_used, 0);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kEnded);
  // Only the acknowledgement is the Ticket's: a stopped Ticket says nothing more itself (the
  // Stop's one line in the discussion is the daemon's, not attached to the Ticket).
  EXPECT_EQ(Ok(views_->Receipts(id)).size(), 1u);
  // Ended for good (Mandate withdrawn): the worktree and its local branch are gone.
  auto ws = Ok(views_->WorkspaceFor(id));
  ASSERT_TRUE(ws.has_value());
  EXPECT_TRUE(ws->removed_at.has_value());
  EXPECT_FALSE(std::filesystem::exists(ws->dir));
  EXPECT_EQ(Sh("git -C " + (dir_ / "work" / "repo.git").string() + " branch --list 'superagent/*'"), "");
}

TEST_F(ExecSchedulerTest, ShutdownKillsRunningTreesAndARestartResumesWithACheckFirstInput) {
  const int port = FreePort();
  ScriptedExecutor executor;
  executor.on_turn = [&](const exec::WorkerTask& t) -> Result<exec::TurnResult> {
    auto r = t.jobs->Run(ListenerCommand(port), t.workspace.dir, "", 365LL * 24 * 3600 * 1000, t.cancel);
    if (!r.ok()) return r.status();
    return exec::TurnResult{};
  };
  const TicketId id = AcceptedTicket("t1");
  {
    auto scheduler = MakeScheduler(&executor);
    ASSERT_EQ(*scheduler->Tick(), 1);
    ASSERT_TRUE(Eventually([&] { return Listening(port); }));
    scheduler->Stop();
  }
  EXPECT_TRUE(Eventually([&] { return !Listening(port); }));
  auto before = Ok(views_->Assignments(id));
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].state, "running");  // interrupted, not finished

  ScriptedExecutor after;
  auto scheduler = MakeScheduler(&after);
  auto recovered = engine_->RecoverInterruptedWork();
  ASSERT_TRUE(recovered.ok());
  EXPECT_EQ(*recovered, std::vector<TicketId>{id});
  ASSERT_EQ(*scheduler->Tick(), 1);
  scheduler->WaitForTurns();
  auto assignments = Ok(views_->Assignments(id));
  ASSERT_EQ(assignments.size(), 2u);
  EXPECT_EQ(assignments[0].state, "ended");
  EXPECT_EQ(assignments[1].cause, "restart");
  ASSERT_EQ(after.inputs[id].size(), 1u);
  EXPECT_EQ(after.inputs[id][0]["kind"], "restart");
  EXPECT_THAT(exec::InputsText(after.inputs[id]), HasSubstr("check the directory, the git history"));
}

TEST_F(ExecSchedulerTest, APrepareFailureBlocksTheTicketWithGitsWords) {
  exec::WorkspaceOptions wo = workspaces_->options();
  wo.remote = (dir_ / "no-such-origin.git").string();
  workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
  services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
  ScriptedExecutor executor;
  auto scheduler = MakeScheduler(&executor);
  const TicketId id = AcceptedTicket("t1");
  ASSERT_EQ(*scheduler->Tick(), 1);
  scheduler->WaitForTurns();
  EXPECT_TRUE(executor.Turns().empty());
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  auto receipts = Ok(views_->Receipts(id));
  ASSERT_EQ(receipts.size(), 2u);
  EXPECT_THAT(receipts[1].body, HasSubstr("its working copy of the repository could not be prepared"));
  EXPECT_THAT(receipts[1].body, ::testing::Not(HasSubstr("no-such-origin"))) << "no host path in the discussion";
  auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
  const std::string why = Ok(views->Detail(id)).row.stage_reason;  // git's words are the card's
  EXPECT_THAT(why, HasSubstr("cannot clone"));
  EXPECT_THAT(why, HasSubstr("does not exist"));
  // Reported once: the failed turn does not start again by itself (it did, every second).
  ASSERT_EQ(*scheduler->Tick(), 0);
  ASSERT_EQ(*scheduler->Tick(), 0);
  EXPECT_EQ(Ok(views_->Receipts(id)).size(), 2u);
  // A person's next message is a new reason to try, and one more report.
  Receive(Comment("t2", "alice", false, "the remote is back, try again", 1));
  ASSERT_EQ(*scheduler->Tick(), 1);
  scheduler->WaitForTurns();
  ASSERT_EQ(*scheduler->Tick(), 0);
  EXPECT_EQ(Ok(views_->Receipts(id)).size(), 3u);
}

// data_dir and a local git_remote may be relative (to where the daemon runs); git runs in
// several directories, so the Workspaces make both absolute first.
TEST_F(ExecSchedulerTest, ARelativeDataDirAndRemoteStillPrepare) {
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  exec::WorkspaceOptions wo;
  wo.root = "rel/work";
  wo.remote = "origin.git";
  exec::Workspaces ws(wo, runner_.get(), &exec_clock_, sleeper_);
  auto w = ws.Prepare(5);
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->dir, (dir_ / "rel" / "work" / "tickets" / "ticket-5").string());
  EXPECT_EQ(ReadText(std::filesystem::path(w->dir) / "README.md"), "Hello\nThere is teh typo.\n");
}

// The team's command finishes what the daemon made: the Ticket's repository is there, on its branch.
TEST_F(ExecSchedulerTest, APrepareTemplateRunsInTheTicketsRepository) {
  exec::WorkspaceOptions wo = workspaces_->options();
  wo.prepare = "test \"$(git rev-parse --abbrev-ref HEAD)\" = {branch} && test \"$PWD\" = {dir} && "
               "git -C {repo} rev-parse -q --verify {base} >/dev/null && echo prepared > PREPARED";
  workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
  auto w = workspaces_->Prepare(7);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->branch, "superagent/ticket-7");
  EXPECT_EQ(ReadText(std::filesystem::path(w->dir) / "PREPARED"), "prepared\n");
  EXPECT_EQ(ReadText(std::filesystem::path(w->dir) / "README.md"), "Hello\nThere is teh typo.\n");
  // Prepared again (after a restart): the directory is reused as it is.
  auto again = workspaces_->Prepare(7);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->dir, w->dir);
}

// Turns of different Tickets prepare at the same moment, all against the one shared clone (the
// first of them also makes it); git takes no lock for that, so the Workspaces must.
TEST_F(ExecSchedulerTest, TicketsPreparedAtOnceAllGetTheirWorkspace) {
  constexpr int kTickets = 6;
  std::vector<std::thread> threads;
  std::vector<Result<WorkspaceRecord>> prepared(kTickets, Status::Internal("not run"));
  for (int i = 0; i < kTickets; ++i)
    threads.emplace_back([&, i] { prepared[i] = workspaces_->Prepare(100 + i); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kTickets; ++i) {
    ASSERT_TRUE(prepared[i].ok()) << "ticket " << 100 + i << ": " << prepared[i].status().ToString();
    EXPECT_EQ(ReadText(std::filesystem::path(prepared[i]->dir) / "README.md"), "Hello\nThere is teh typo.\n");
  }
  threads.clear();
  std::vector<Status> removed(kTickets, Status::Internal("not run"));
  for (int i = 0; i < kTickets; ++i) threads.emplace_back([&, i] { removed[i] = workspaces_->Remove(*prepared[i]); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kTickets; ++i) {
    EXPECT_TRUE(removed[i].ok()) << removed[i].ToString();
    EXPECT_FALSE(std::filesystem::exists(prepared[i]->dir));
  }
  EXPECT_EQ(Sh("git -C " + (dir_ / "work" / "repo.git").string() + " branch --list 'superagent/*'"), "");
}

// Private repositories: git authenticates to github.com with the Source's token, passed as git
// config in the environment (never on a command line, never to other hosts).
TEST(GitAuthEnvTest, OnlyHttpsGitHubRemotesGetTheTokenAsAnExtraHeader) {
  auto env = exec::GitAuthEnv("https://github.com/acme/widgets.git", "ghp_abc");
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"GIT_CONFIG_COUNT", "1"}));
  EXPECT_EQ(env[1].second, "http.https://github.com/.extraHeader");
  EXPECT_EQ(env[2].second, "Authorization: Basic eC1hY2Nlc3MtdG9rZW46Z2hwX2FiYw==");  // x-access-token:ghp_abc
  EXPECT_TRUE(exec::GitAuthEnv("https://github.com/acme/widgets.git", "").empty());
  EXPECT_TRUE(exec::GitAuthEnv("https://git.example.com/acme/widgets.git", "ghp_abc").empty());
  EXPECT_TRUE(exec::GitAuthEnv("git@github.com:acme/widgets.git", "ghp_abc").empty());
  EXPECT_TRUE(exec::GitAuthEnv("/srv/git/widgets.git", "ghp_abc").empty());
}

// A GitHub App's token expires hourly (issue 25): each git command that reaches the remote asks
// for the credentials anew, the others never; when none can be had the command is not run.
TEST_F(ExecSchedulerTest, EachRemoteGitCommandAsksForFreshCredentialsAndNoneRunsWithout) {
  exec::WorkspaceOptions wo = workspaces_->options();
  std::atomic<int> asked{0};
  wo.git_env = {{"GIT_CONFIG_COUNT", "1"}, {"GIT_CONFIG_KEY_0", "http.extraHeader"}, {"GIT_CONFIG_VALUE_0", "stale"}};
  wo.git_env_source = [&asked]() -> Result<std::vector<std::pair<std::string, std::string>>> {
    ++asked;
    return std::vector<std::pair<std::string, std::string>>{};
  };
  workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
  auto w = workspaces_->Prepare(8);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const int after_prepare = asked;
  EXPECT_GE(after_prepare, 1) << "the clone or fetch asked";
  ASSERT_TRUE(workspaces_->CheckRemote().ok());
  EXPECT_EQ(asked, after_prepare + 1) << "ls-remote asked again: a token is never reused from the last command";

  wo.git_env_source = []() -> Result<std::vector<std::pair<std::string, std::string>>> {
    return Status::Unavailable("the installation token was refused: HTTP 401");
  };
  exec::Workspaces refused(wo, runner_.get(), &exec_clock_, sleeper_);
  Status s = refused.CheckRemote();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has no credentials: the installation token was refused"), std::string::npos) << s.ToString();
}

// A Stop (or the daemon stopping) while the workspace is still being prepared kills the
// preparation, and leaves no half-made directory that a later attempt would take as finished.
TEST_F(ExecSchedulerTest, CancellingAPreparationKillsItAndLeavesNoHalfMadeDirectory) {
  const int port = FreePort();
  exec::WorkspaceOptions wo = workspaces_->options();
  wo.prepare = "mkdir -p {dir} && " + ListenerCommand(port);
  workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
  std::atomic<bool> cancel{false};
  Result<WorkspaceRecord> prepared = Status::Internal("not run");
  std::thread preparing([&] { prepared = workspaces_->Prepare(9, &cancel); });
  ASSERT_TRUE(Eventually([&] { return Listening(port); })) << "the prepare command never started";
  cancel = true;
  preparing.join();
  ASSERT_FALSE(prepared.ok());
  EXPECT_THAT(prepared.status().message(), HasSubstr("cancelled"));
  EXPECT_TRUE(Eventually([&] { return !Listening(port); })) << "the preparation still runs";
  EXPECT_FALSE(std::filesystem::exists(dir_ / "work" / "tickets" / "ticket-9"));
}

// Only a Ticket that can never resume loses its workspace: ended *and* its Mandate withdrawn or
// revoked. One that ended normally keeps it, since a person's message may reopen it; open ones
// keep theirs of course.
TEST_F(ExecSchedulerTest, OnlyWorkspacesOfTicketsEndedForGoodAreToBeRemoved) {
  const TicketId open = AcceptedTicket("o1", 1), ended = AcceptedTicket("e1", 2), stopped = AcceptedTicket("s1", 3);
  for (TicketId t : {open, ended, stopped}) {
    WorkspaceRecord w;
    w.ticket = t;
    w.dir = (dir_ / ("w" + std::to_string(t))).string();
    w.branch = "superagent/ticket-" + std::to_string(t);
    w.base = "origin/main";
    ASSERT_TRUE(EngineTestPeer(*engine_).RecordWorkspace(w).ok());
  }
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(ended, "done").ok());
  ASSERT_TRUE(engine_->StopTicket(stopped, "alice").ok());
  auto remove = Ok(views_->WorkspacesToRemove());
  ASSERT_EQ(remove.size(), 1u);
  EXPECT_EQ(remove[0].ticket, stopped);
  ASSERT_TRUE(engine_->MarkWorkspaceRemoved(stopped).ok());
  EXPECT_TRUE(Ok(views_->WorkspacesToRemove()).empty()) << "a removed workspace is not removed twice";
}

TEST_F(ExecSchedulerTest, EngineRefusesToStartAnAssignmentTwiceOrForAnEndedTicket) {
  const TicketId id = AcceptedTicket("t1");
  auto pending = Ok(views_->AssignmentsInState("pending"));
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].cause, "accepted");
  ASSERT_TRUE(EngineTestPeer(*engine_).StartAssignment(pending[0].id, "command").ok());
  EXPECT_EQ(EngineTestPeer(*engine_).StartAssignment(pending[0].id, "command").code(), Status::Code::kConflict);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kWorking);
  EXPECT_EQ(engine_->SetSessionStatus(1, "sleeping").code(), Status::Code::kInvalidArgument);
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(id, "done").ok());
  EXPECT_TRUE(Ok(views_->AssignmentsInState("running")).empty());
}

TEST_F(ExecSchedulerTest, ATicketWaitingForAPersonDoesNotStartBeforeTheAnswer) {
  ScriptedExecutor executor;
  auto scheduler = MakeScheduler(&executor);
  const TicketId id = AcceptedTicket("t1");
  ASSERT_TRUE(EngineTestPeer(*engine_).AskPerson(id, {"github:acme/widgets:issue:1", "alice", "Which file?", json::object()}, "ask:1").ok());
  const auto pending = Ok(views_->AssignmentsInState("pending"));
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(EngineTestPeer(*engine_).StartAssignment(pending[0].id, "scripted").code(), Status::Code::kConflict);
  EXPECT_EQ(*scheduler->Tick(), 0);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kWaitingForPerson);
  Receive(Comment("t2", "alice", false, "README.md"));
  EXPECT_EQ(*scheduler->Tick(), 1);  // the answer resumes it
  scheduler->WaitForTurns();
  EXPECT_EQ(executor.Turns(), std::vector<TicketId>{id});
}

// Issue 18: a turn that fails the same way every time (here: the model's answer cannot be read)
// is set aside after five, the Ticket blocked with why; no sixth turn starts until a Retry.
TEST_F(ExecSchedulerTest, ATurnFailingTheSameWayFiveTimesIsSetAsideUntilRetried) {
  ScriptedExecutor executor;
  executor.on_turn = [](const exec::WorkerTask&) -> Result<exec::TurnResult> {
    return Status::Internal("[json.exception.type_error.316] invalid UTF-8 byte at index 12: 0xE4");
  };
  auto scheduler = MakeScheduler(&executor);
  const TicketId id = AcceptedTicket("t1");
  for (int turn = 1; turn <= 5; ++turn) {
    ASSERT_EQ(*scheduler->Tick(), 1) << "turn " << turn;
    scheduler->WaitForTurns();
    Receive(Comment("t1-" + std::to_string(turn), "alice", false, "请再试一次 " + std::to_string(turn), 1));
  }
  EXPECT_EQ(executor.Turns().size(), 5u);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  int said = 0;  // every failed turn says why, the one that sets the turns aside too
  for (const Receipt& r : Ok(views_->Receipts(id))) said += r.kind == MessageKind::kResult;
  EXPECT_EQ(said, 5);
  auto q = Ok(views_->SetAside(1000));
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].kind, "turn");
  EXPECT_THAT(q[0].reason, HasSubstr("failed the same way 5 times in a row"));
  EXPECT_THAT(q[0].reason, HasSubstr("type_error.316"));
  ASSERT_EQ(*scheduler->Tick(), 0);
  ASSERT_EQ(*scheduler->Tick(), 0);
  EXPECT_EQ(executor.Turns().size(), 5u) << "a set-aside Ticket got another turn";
  ASSERT_TRUE(engine_->RetryQuarantined("turn", std::to_string(id), "alice (panel)").ok());
  executor.on_turn = nullptr;
  ASSERT_EQ(*scheduler->Tick(), 1);
  scheduler->WaitForTurns();
  EXPECT_EQ(executor.Turns().size(), 6u);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty());
}

// Issue 20: a read the store failed is not "nothing": the scheduler starts no turn on it — and
// prepares no fresh workspace over the one the Ticket may have — says its queue is unknown, and
// the next pass, with the store readable again, does the work.
TEST_F(ExecSchedulerTest, AReadTheStoreFailsStartsNothingAndTheNextPassDoesTheWork) {
  ScriptedExecutor executor;
  auto scheduler = MakeScheduler(&executor, /*slots=*/1);
  const TicketId id = AcceptedTicket("t1");
  sqlite3* outside = nullptr;  // another process breaks a table under the daemon, then mends it
  ASSERT_EQ(sqlite3_open((dir_ / "superagent.db").string().c_str(), &outside), SQLITE_OK);
  auto sql = [&](const char* statement) {
    ASSERT_EQ(sqlite3_exec(outside, statement, nullptr, nullptr, nullptr), SQLITE_OK) << statement;
  };

  sql("ALTER TABLE assignments RENAME TO hidden_assignments");
  EXPECT_FALSE(scheduler->Tick().ok()) << "a failed read is the pass's error";
  EXPECT_EQ(scheduler->Slots().queued, -1) << "unknown, not 'nothing queued'";
  sql("ALTER TABLE hidden_assignments RENAME TO assignments");

  sql("ALTER TABLE workspaces RENAME TO hidden_workspaces");
  ASSERT_TRUE(scheduler->Tick().ok());  // the turn's thread reads no workspace and begins nothing
  scheduler->WaitForTurns();
  EXPECT_TRUE(executor.Turns().empty());
  EXPECT_EQ(Ok(views_->Assignments(id)).back().state, "pending") << "it waits for the next pass";
  sql("ALTER TABLE hidden_workspaces RENAME TO workspaces");
  sqlite3_close(outside);

  EXPECT_EQ(scheduler->Slots().queued, 1);
  ASSERT_EQ(*scheduler->Tick(), 1);
  scheduler->WaitForTurns();
  EXPECT_EQ(executor.Turns().size(), 1u);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
}

}  // namespace
}  // namespace superagent::testing
