// Issue 20 on the Engine: the one Ticket state machine, worker turns as one transaction each
// (BeginTurn, FinishTurn), a Stop racing a turn's start, inputs that know their sender and age,
// and the write transactions each domain event costs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/ticket_stage.h"
#include "engine_fixture.h"
#include "superagent/text.h"
#include "superagent/views.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

constexpr Stage kAllStages[] = {Stage::kWorking, Stage::kIdle,    Stage::kWaitingForPerson,
                                Stage::kReady,   Stage::kBlocked, Stage::kEnded};
constexpr StageCause kAllCauses[] = {StageCause::kTurnStarted, StageCause::kReported,  StageCause::kAsked,
                                     StageCause::kAnswered,    StageCause::kResumed,   StageCause::kSetAside,
                                     StageCause::kRetried,     StageCause::kBackgroundDone,
                                     StageCause::kEnded,       StageCause::kStopped};

// The SPEC's rules, checked against every (from, to, cause) the table could hold.
TEST(TicketStageTest, EveryLegalMoveKeepsTheSpecsRules) {
  int legal = 0;
  for (Stage from : kAllStages) {
    for (Stage to : kAllStages) {
      for (StageCause cause : kAllCauses) {
        // Staying is not a move: ChangeStage writes nothing for it, whatever the table says.
        if (from == to || !StageChangeAllowed(from, to, cause)) continue;
        ++legal;
        const std::string move = std::string(StageName(from)) + " -> " + StageName(to) + " (" + StageCauseName(cause) + ")";
        // SPEC §4.5: an ended Ticket is reopened only by a person's message (or answer), in place.
        if (from == Stage::kEnded) {
          EXPECT_TRUE(to == Stage::kIdle && cause == StageCause::kResumed) << move;
        }
        // Only the end of the work or a stop ends a Ticket.
        if (to == Stage::kEnded) {
          EXPECT_TRUE(cause == StageCause::kEnded || cause == StageCause::kStopped) << move;
        }
        // Work starts only with a turn, never on a Ticket waiting for a person or ended.
        if (to == Stage::kWorking) {
          EXPECT_EQ(cause, StageCause::kTurnStarted) << move;
          EXPECT_NE(from, Stage::kWaitingForPerson) << move;
        }
        // A question is answered, set aside or the Ticket ends; nothing else moves it on.
        if (from == Stage::kWaitingForPerson) {
          EXPECT_TRUE(to == Stage::kIdle || to == Stage::kBlocked || to == Stage::kEnded) << move;
        }
        // A question is only ever asked (SPEC §1: structured, never inferred from a report's text).
        if (to == Stage::kWaitingForPerson) {
          EXPECT_EQ(cause, StageCause::kAsked) << move;
        }
      }
    }
  }
  EXPECT_GT(legal, 20) << "the table lost its moves";
  EXPECT_FALSE(StageChangeAllowed(Stage::kEnded, Stage::kIdle, StageCause::kReported));
  EXPECT_FALSE(StageChangeAllowed(Stage::kEnded, Stage::kWorking, StageCause::kTurnStarted));
  EXPECT_FALSE(StageChangeAllowed(Stage::kWaitingForPerson, Stage::kWorking, StageCause::kTurnStarted));
  EXPECT_FALSE(StageChangeAllowed(Stage::kReady, Stage::kIdle, StageCause::kBackgroundDone));
  EXPECT_TRUE(StageChangeAllowed(Stage::kWorking, Stage::kReady, StageCause::kBackgroundDone));
}

class EngineTurnsTest : public EngineTest {
 protected:
  WorkspaceRecord Workspace(TicketId t) {
    WorkspaceRecord w;
    w.ticket = t;
    w.dir = (dir_ / ("work-" + std::to_string(t))).string();
    w.branch = "superagent/ticket-" + std::to_string(t);
    w.base = "origin/main";
    return w;
  }
  std::int64_t PendingAssignment(TicketId t) {
    for (const Assignment& a : Ok(views_->Assignments(t)))
      if (a.state == "pending") return a.id;
    ADD_FAILURE() << "ticket " << t << " has no pending assignment";
    return 0;
  }
  std::vector<Receipt> ResultsOf(TicketId t) {
    std::vector<Receipt> out;
    for (const Receipt& r : Ok(views_->Receipts(t)))
      if (r.kind == MessageKind::kResult) out.push_back(r);
    return out;
  }
  // A turn's end reporting ready with `summary`, its background work still running or not.
  static TurnEnd Ready(const std::string& summary, bool background_running = false) {
    TurnEnd end;
    end.reported = Stage::kReady;
    end.summary = summary;
    end.background_running = background_running;
    return end;
  }
  // Runs one whole turn of `t` (its pending Assignment) ending as `end` says; `inputs`, when
  // given, receives what the turn was given.
  TurnOutcome Turn(TicketId t, TurnEnd end = Ready("Fixed the typo."), std::vector<TakenInput>* inputs = nullptr) {
    auto begun = engine_->BeginTurn(PendingAssignment(t), "builtin", Workspace(t));
    EXPECT_TRUE(begun.ok()) << begun.status().ToString();
    if (!begun.ok()) return {};
    if (inputs) *inputs = begun->inputs;
    end.assignment = begun->assignment.id;
    auto out = engine_->FinishTurn(end);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : TurnOutcome{};
  }
  // How many write transactions `fn` began.
  std::int64_t Writes(const std::function<void()>& fn) {
    const std::int64_t before = engine_->WriteTransactions();
    fn();
    return engine_->WriteTransactions() - before;
  }
};

TEST_F(EngineTurnsTest, BeginTurnGivesTheWholeContextAndFinishTurnAppliesTheReportInOneTransactionEach) {
  const TicketId t = AcceptedTicket("c1");
  const std::int64_t a = PendingAssignment(t);
  Result<TurnContext> begun = Status::Internal("not run");
  EXPECT_EQ(Writes([&] { begun = engine_->BeginTurn(a, "builtin", Workspace(t)); }), 1);
  ASSERT_TRUE(begun.ok()) << begun.status().ToString();
  EXPECT_EQ(begun->ticket.stage, Stage::kWorking);
  EXPECT_EQ(begun->assignment.state, "running");
  EXPECT_EQ(begun->session.status, "running");
  EXPECT_TRUE(begun->first_turn);
  EXPECT_EQ(begun->request_text, "@agent please fix the typo in README");
  ASSERT_TRUE(begun->workspace.has_value());
  EXPECT_EQ(begun->workspace->branch, "superagent/ticket-" + std::to_string(t));
  ASSERT_EQ(begun->inputs.size(), 1u);
  EXPECT_TRUE(begun->inputs[0].request);
  EXPECT_TRUE(begun->inputs[0].input.from_person);
  EXPECT_TRUE(Ok(views_->TicketInputs(t))[0].state == "taken");

  TurnEnd end;
  end.assignment = a;
  end.reported = Stage::kReady;
  end.summary = "Fixed the typo; 修好了 🎉";
  end.actions.emplace_back("open_pull_request", json{{"channel", "github:acme/widgets"}, {"idempotency_key", "pr:ticket:1"}});
  Result<TurnOutcome> out = Status::Internal("not run");
  EXPECT_EQ(Writes([&] { out = engine_->FinishTurn(end); }), 1);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->said);
  EXPECT_EQ(out->stage, Stage::kReady);
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady);
  EXPECT_EQ(Ok(views_->Assignments(t)).back().state, "ended");
  EXPECT_EQ(Ok(views_->SessionForTicket(t))->status, "idle");
  ASSERT_EQ(ResultsOf(t).size(), 1u);
  EXPECT_EQ(ResultsOf(t)[0].body, "Fixed the typo; 修好了 🎉");
  EXPECT_EQ(Ok(views_->OutboxCounts())["pending"].get<int>(), 3) << "ack, result and the PR action";

  // The same report again (a retried call) neither says nor changes anything more.
  ASSERT_TRUE(engine_->FinishTurn(end).ok());
  EXPECT_EQ(ResultsOf(t).size(), 1u);
  EXPECT_EQ(Ok(views_->OutboxCounts())["pending"].get<int>(), 3);
}

// Issue 34: a result over the channel's limit used to block the Ticket and say nothing to the
// requester. It is cut to fit (the channel's own cut, with an ellipsis) and sent; the log and the
// Ticket's stage history say it was cut.
TEST_F(EngineTurnsTest, AResultOverTheLimitIsCutToFitAndSent) {
  const TicketId t = AcceptedTicket("c1");
  std::string report = "修好了 🎉 ";
  while (text::CountCodePoints(report) < 70'000) report += "很长的总结，";
  const TurnOutcome out = Turn(t, Ready(report));
  EXPECT_TRUE(out.said);
  EXPECT_EQ(out.not_sent, "");
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady);
  ASSERT_EQ(ResultsOf(t).size(), 1u);
  const std::string sent = ResultsOf(t)[0].body;
  EXPECT_LE(text::CountCodePoints(sent), 65'000u);
  EXPECT_THAT(sent, ::testing::StartsWith("修好了 🎉 很长的总结"));
  EXPECT_THAT(sent, ::testing::EndsWith("\xE2\x80\xA6"));
  EXPECT_TRUE(text::IsValid(sent));
}

// A Stop and a turn's start, in both orders (the Engine's lock makes every interleaving one of
// these two): the ended Ticket is never left with a running session, and says nothing more.
TEST_F(EngineTurnsTest, AStopRacingATurnsStartNeverLeavesARunningSessionForAnEndedTicket) {
  // Stop first: the turn does not begin, its Assignment ends with it.
  const TicketId first = AcceptedTicket("c1", 1);
  const std::int64_t a1 = PendingAssignment(first);
  std::int64_t stop_writes = Writes([&] { ASSERT_TRUE(engine_->StopTicket(first, "alice").ok()); });
  EXPECT_EQ(stop_writes, 1);
  auto refused = engine_->BeginTurn(a1, "builtin", Workspace(first));
  EXPECT_EQ(refused.status().code(), Status::Code::kConflict);
  EXPECT_THAT(refused.status().message(), HasSubstr("ended")) << "the Stop ended its Assignment";
  EXPECT_EQ(Ok(views_->Assignments(first)).back().state, "ended");
  EXPECT_FALSE(Ok(views_->SessionForTicket(first)).has_value()) << "no session was opened for it";

  // The turn first: the Stop idles its session in the Stop's own transaction, and the turn's end
  // (a report of the work it did until the cancel reached it) says nothing.
  const TicketId second = AcceptedTicket("c2", 2);
  auto begun = engine_->BeginTurn(PendingAssignment(second), "builtin", Workspace(second));
  ASSERT_TRUE(begun.ok());
  EXPECT_EQ(Ok(views_->SessionForTicket(second))->status, "running");
  stop_writes = Writes([&] { ASSERT_TRUE(engine_->StopTicket(second, "alice").ok()); });
  EXPECT_EQ(stop_writes, 1);
  EXPECT_EQ(Ok(views_->SessionForTicket(second))->status, "idle");
  TurnEnd end = Ready("Done.");
  end.assignment = begun->assignment.id;
  auto out = engine_->FinishTurn(end);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->said);
  EXPECT_EQ(out->stage, Stage::kEnded);
  EXPECT_TRUE(ResultsOf(second).empty());
  for (const Session& s : Ok(views_->Sessions())) EXPECT_NE(s.status, "running") << "session " << s.id;
}

// The reported defect: the issue's opening text, older than the mention that made the Ticket,
// arrived by polling after the Ticket was worked to a result and started a second turn that
// posted a second result.
TEST_F(EngineTurnsTest, AMessageOlderThanTheRequestIsContextForTheNextTurnAndStartsNone) {
  const Trigger opening = [&] {
    Trigger t = Comment("issue-opened", "alice", false, "README says 'teh typo'.", 1);
    t.scope = "issues";
    return t;
  }();
  clock_.Advance(5 * 60'000);
  const TicketId t = AcceptedTicket("mention");
  Turn(t);
  ASSERT_EQ(ResultsOf(t).size(), 1u);

  IntakeResult r = Receive(opening);  // polling brings the older opening text now
  EXPECT_THAT(r.delivered_to, ::testing::ElementsAre(t)) << "it reached the Ticket: no Eval of it";
  EXPECT_FALSE(r.queued_for_eval);
  EXPECT_EQ(Ok(views_->TicketInputs(t)).back().state, "context");
  EXPECT_EQ(*engine_->AssignFollowUps(), 0) << "an older message starts no turn";
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady);
  EXPECT_EQ(ResultsOf(t).size(), 1u);

  // A person's later message does start one, and that turn sees the older text as context.
  clock_.Advance(60'000);
  Receive(Comment("later", "alice", false, "and the heading too", 1));
  ASSERT_EQ(*engine_->AssignFollowUps(), 1);
  EXPECT_EQ(Ok(views_->Assignments(t)).back().cause, "follow_up");
  std::vector<TakenInput> inputs;
  Turn(t, Ready("Fixed the heading too."), &inputs);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_TRUE(inputs[0].context);
  EXPECT_EQ(inputs[0].trigger->id, "issue-opened");
  EXPECT_FALSE(inputs[1].context);
  EXPECT_EQ(inputs[1].trigger->text, "and the heading too");
  EXPECT_EQ(ResultsOf(t).size(), 2u) << "one result per piece of work";
}

TEST_F(EngineTurnsTest, AnOlderPersonsMessageDoesNotResumeAnEndedTicket) {
  const Trigger older = Comment("older", "alice", false, "context from before", 1);
  clock_.Advance(60'000);
  const TicketId t = AcceptedTicket("mention");
  Turn(t);
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(t, "result delivered").ok());
  Receive(older);
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kEnded);
  EXPECT_EQ(Ok(views_->TicketInputs(t)).back().state, "context");
  Receive(Comment("newer", "alice", false, "one more thing", 1));
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle) << "a newer one resumes it in place";
}

// SPEC §6: the extra slot is for people. A bot's comment or CI's result on a Ticket's Thread is
// still delivered, but its turn waits for an ordinary slot.
TEST_F(EngineTurnsTest, OnlyAPersonsInputMakesAFollowUpThatMayTakeTheReservedSlot) {
  const TicketId t = AcceptedTicket("mention");
  Turn(t);
  Receive(Comment("bot", "dependabot[bot]", false, "Bumps lodash", 1, /*human=*/false));
  ASSERT_EQ(*engine_->AssignFollowUps(), 1);
  EXPECT_EQ(Ok(views_->Assignments(t)).back().cause, "update");
  EXPECT_FALSE(Ok(views_->TicketInputs(t)).back().from_person);
  Turn(t);
  Trigger ci = Comment("ci", "github-actions", false, "CI failed on main", 1);
  ci.scope = "ci";
  Receive(ci);
  ASSERT_EQ(*engine_->AssignFollowUps(), 1);
  EXPECT_EQ(Ok(views_->Assignments(t)).back().cause, "update") << "CI is not a person, even when marked human";
  Turn(t);
  Receive(Comment("person", "bob", false, "thanks, one more", 1));
  ASSERT_EQ(*engine_->AssignFollowUps(), 1);
  EXPECT_EQ(Ok(views_->Assignments(t)).back().cause, "follow_up");
  EXPECT_TRUE(Ok(views_->TicketInputs(t)).back().from_person);
  Turn(t);
  // A person's message to a Ticket whose turn is queued for a bot's input makes that turn theirs.
  Receive(Comment("bot2", "dependabot[bot]", false, "Bumps axios", 1, /*human=*/false));
  ASSERT_EQ(*engine_->AssignFollowUps(), 1);
  EXPECT_EQ(Ok(views_->Assignments(t)).back().cause, "update");
  Receive(Comment("person2", "bob", false, "and please rebase", 1));
  EXPECT_EQ(Ok(views_->Assignments(t)).back().cause, "follow_up");
  EXPECT_EQ(*engine_->AssignFollowUps(), 0) << "still one queued turn";
}

TEST_F(EngineTurnsTest, BackgroundWorkKeepsTheTicketWorkingUntilItEnds) {
  const TicketId t = AcceptedTicket("mention");
  const TurnOutcome out = Turn(t, Ready("The server is up at :8080 for review.", /*background_running=*/true));
  EXPECT_TRUE(out.said) << "the result goes out at once";
  EXPECT_EQ(out.stage, Stage::kWorking);
  ASSERT_TRUE(out.deferred.has_value());
  EXPECT_EQ(*out.deferred, Stage::kReady);
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kWorking);

  // An illegal move is refused and writes nothing.
  auto views = Views::Open((dir_ / "superagent.db").string());
  ASSERT_TRUE(views.ok());
  const std::size_t events = (*views)->Detail(t)->events.size();
  Status illegal = engine_->EndBackgroundWork(t, Stage::kWaitingForPerson, "jobs ended");
  EXPECT_EQ(illegal.code(), Status::Code::kConflict);
  EXPECT_THAT(illegal.message(), HasSubstr("cannot go from working to waiting_for_person"));
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kWorking);
  EXPECT_EQ((*views)->Detail(t)->events.size(), events);

  ASSERT_TRUE(engine_->EndBackgroundWork(t, Stage::kReady, "background work ended").ok());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady);
  EXPECT_EQ((*views)->Detail(t)->events.back().cause, "background work ended");
}

TEST_F(EngineTurnsTest, ARestartIdlesATicketWhoseBackgroundWorkDiedWithTheDaemon) {
  const TicketId t = AcceptedTicket("mention");
  EXPECT_EQ(Turn(t, Ready("Done; the dev server runs.", /*background_running=*/true)).stage, Stage::kWorking);
  Open(MakePolicy("observe"));  // the daemon restarts
  ASSERT_TRUE(engine_->RecoverInterruptedWork().ok());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle);
  EXPECT_EQ(ResultsOf(t).size(), 1u);
  EXPECT_EQ(*engine_->AssignFollowUps(), 0) << "nothing to redo";
}

// One delivery by a Source is one transaction, also when it starts following a discussion.
TEST_F(EngineTurnsTest, AReceiveWithItsSourcesBookkeepingIsOneTransaction) {
  SourceUpdate u;
  u.source = "github";
  u.path = "webhook";
  u.set_cursors["issue:7"] = R"({"since":"2026-01-01T00:00:00Z"})";
  EXPECT_EQ(Writes([&] { ASSERT_TRUE(engine_->Receive(Comment("w1", "alice", true, "@agent 修一下", 7), "webhook", "", &u).ok()); }),
            1);
  EXPECT_EQ(views_->SourceCursors("github").value().count("issue:7"), 1u);
  bool found = false;
  for (const SourceHealth& h : Ok(views_->SourcesHealth())) found |= h.source == "github" && h.path == "webhook";
  EXPECT_TRUE(found);
  // A duplicate still records the path's health, in one transaction, and stores nothing else.
  u.set_cursors.clear();
  Result<IntakeResult> dup = Status::Internal("not run");
  EXPECT_EQ(Writes([&] { dup = engine_->Receive(Comment("w1", "alice", true, "@agent 修一下", 7), "webhook", "", &u); }), 1);
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->outcome, IntakeOutcome::kDuplicate);
  // A Trigger intake refuses writes neither it nor the bookkeeping.
  Trigger bad = Comment("", "alice", true, "no id", 7);
  u.set_cursors["issue:8"] = "{}";
  EXPECT_EQ(Writes([&] { EXPECT_FALSE(engine_->Receive(bad, "webhook", "", &u).ok()); }), 0);
  EXPECT_EQ(views_->SourceCursors("github").value().count("issue:8"), 0u);
}

// Issue 34: a turn that ends without a report does not leave the Ticket idling in silence.
TEST_F(EngineTurnsTest, ATurnWithoutAReportBlocksTheTicketAndTellsTheRequesterWhatTheyCanDo) {
  const TicketId t = AcceptedTicket("c1");
  Turn(t, TurnEnd{});
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kBlocked);
  auto results = ResultsOf(t);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_THAT(results[0].body, HasSubstr("ended without a result"));
  EXPECT_THAT(results[0].body, HasSubstr("Reply here and I will try again"));
  auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
  EXPECT_EQ(Ok(views->Detail(t)).row.stage_reason, "turn ended without a report");

  // The requester's reply resumes it: a person's message on a blocked Ticket is a follow-up.
  Receive(Comment("c2", "alice", false, "please try again"));
  clock_.Advance(options_.follow_up_settle_ms + 1);
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 1);
}

// Background work hides a missing report only while it runs: when it ends, the requester is told
// what a turn without a report always tells them, and the Ticket is blocked, not idle.
TEST_F(EngineTurnsTest, ATurnWithoutAReportWhileBackgroundWorkRunsIsToldWhenTheWorkEnds) {
  const TicketId t = AcceptedTicket("c1");
  TurnEnd end;
  end.background_running = true;
  const TurnOutcome out = Turn(t, end);
  EXPECT_TRUE(ResultsOf(t).empty()) << "it may still be reported on";
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kWorking);
  ASSERT_TRUE(out.deferred.has_value());

  ASSERT_TRUE(engine_->EndBackgroundWork(t, *out.deferred, "background work ended").ok());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kBlocked);
  auto results = ResultsOf(t);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_THAT(results[0].body, HasSubstr("ended without a result"));
  EXPECT_THAT(results[0].body, HasSubstr("Reply here and I will try again"));
  auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
  EXPECT_EQ(Ok(views->Detail(t)).row.stage_reason, "turn ended without a report; background work ended");
  // Said once: a second end (the scheduler's, a restart's) finds the Ticket no longer working.
  ASSERT_TRUE(engine_->EndBackgroundWork(t, Stage::kIdle, "background work ended").ok());
  EXPECT_EQ(ResultsOf(t).size(), 1u);
}

TEST_F(EngineTurnsTest, ARestartTellsTheRequesterOfATurnWithoutAReportWhoseBackgroundWorkDied) {
  const TicketId t = AcceptedTicket("c1");
  TurnEnd end;
  end.background_running = true;
  Turn(t, end);
  Open(MakePolicy("observe"));  // the daemon restarts
  ASSERT_TRUE(engine_->RecoverInterruptedWork().ok());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kBlocked);
  auto results = ResultsOf(t);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_THAT(results[0].body, HasSubstr("ended without a result"));
}

// A turn nobody asked for (a bot's update) may still end quietly when its background work does.
TEST_F(EngineTurnsTest, AnUnaskedTurnWithoutAReportEndsQuietlyWhenItsBackgroundWorkDoes) {
  const TicketId t = AcceptedTicket("c1");
  Turn(t, Ready("Done."));
  Receive(Comment("bot1", "dependabot[bot]", false, "Bumps axios", 1, /*human=*/false));
  ASSERT_EQ(Ok(engine_->AssignFollowUps()), 1);
  ASSERT_EQ(Ok(views_->Assignments(t)).back().cause, "update");
  TurnEnd end;
  end.background_running = true;
  Turn(t, end);
  ASSERT_TRUE(engine_->EndBackgroundWork(t, Stage::kIdle, "background work ended").ok());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle);
  EXPECT_EQ(ResultsOf(t).size(), 1u) << "only the first turn's result";
}

// What a failed turn posts is the daemon's; the raw cause (host paths, stderr) is the card's.
TEST_F(EngineTurnsTest, AFailedTurnPostsTheDaemonsWordsAndTheCardCarriesTheRawCause) {
  const TicketId t = AcceptedTicket("c1");
  TurnEnd end;
  end.reported = Stage::kBlocked;
  end.summary = "The command exited with code 2.";
  end.error = "The command exited with code 2.\n\n/home/svc/.cache/tool: permission denied";
  Turn(t, end);
  auto results = ResultsOf(t);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_THAT(results[0].body, HasSubstr("The command exited with code 2."));
  EXPECT_THAT(results[0].body, ::testing::Not(HasSubstr("/home/svc")));
  EXPECT_THAT(results[0].body, HasSubstr("Reply here and I will try again"));
  auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
  EXPECT_THAT(Ok(views->Detail(t)).row.stage_reason, HasSubstr("reported blocked: The command exited with code 2."));
}

TEST_F(EngineTurnsTest, AFailureThatSetsTheTurnsAsideSaysAMaintainerWasShownIt) {
  options_.quarantine_after = 2;
  Open(MakePolicy("observe"));
  const TicketId t = AcceptedTicket("c1");
  TurnEnd end;
  end.reported = Stage::kBlocked;
  end.summary = "claude failed (exit code 1).";
  end.error = "claude failed (exit code 1): API Error 500";
  Turn(t, end);
  ASSERT_TRUE(engine_->RetryTicket(t, "ann (panel)").ok());
  Turn(t, end);
  auto results = ResultsOf(t);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_THAT(results[0].body, HasSubstr("Reply here"));
  EXPECT_THAT(results[1].body, HasSubstr("a maintainer has been shown it"));
  EXPECT_THAT(results[1].body, ::testing::Not(HasSubstr("Reply here")));
  // The panel's Retry of a Ticket whose turns are set aside clears that too.
  ASSERT_TRUE(engine_->RetryTicket(t, "ann (panel)").ok());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle);
  EXPECT_TRUE(Ok(views_->SetAside(1000)).empty());
}

TEST_F(EngineTurnsTest, RetryGivesABlockedTicketATurnAndRefusesAnythingElse) {
  const TicketId t = AcceptedTicket("c1");
  EXPECT_EQ(engine_->RetryTicket(t, "ann (panel)").code(), Status::Code::kConflict);  // idle, not blocked
  EXPECT_EQ(engine_->RetryTicket(9999, "ann (panel)").code(), Status::Code::kNotFound);
  EXPECT_EQ(engine_->RetryTicket(t, "").code(), Status::Code::kInvalidArgument);
  TurnEnd end;
  end.reported = Stage::kBlocked;
  end.summary = "Which file?";
  Turn(t, end);
  ASSERT_TRUE(engine_->RetryTicket(t, "ann (panel)").ok());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kIdle);
  std::vector<TakenInput> inputs;
  Turn(t, Ready("Done."), &inputs);
  ASSERT_FALSE(inputs.empty());
  EXPECT_EQ(inputs.back().input.kind, "restart");
  EXPECT_EQ(inputs.back().input.body["retried_by"], "ann (panel)");
  EXPECT_THAT(inputs.back().input.body["blocked_because"].get<std::string>(), HasSubstr("Which file?"));
}

}  // namespace
}  // namespace superagent::testing
