// Budgets in the Mandate (issue 22): policy.yaml's budgets, the budget a Mandate records at
// accept, and the scheduler enforcing it — a limit reached mid-turn or before one ends the turn
// and asks the requester one structured question; "1"/option 1 extends, option 2 ends; a restart
// keeps spend and extensions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <condition_variable>
#include <mutex>

#include "exec_fixture.h"
#include "result_ok.h"
#include "superagent/budget.h"
#include "superagent/worker.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

Policy Parsed(const std::string& yaml) {
  std::vector<Problem> problems;
  auto p = ParsePolicy(yaml, "policy.yaml", &problems);
  EXPECT_TRUE(p.has_value()) << (problems.empty() ? "" : problems[0].ToString());
  return p ? *p : Policy{};
}

std::vector<std::string> Problems(const std::string& yaml) {
  std::vector<Problem> problems;
  EXPECT_FALSE(ParsePolicy(yaml, "policy.yaml", &problems).has_value());
  std::vector<std::string> out;
  for (const Problem& p : problems) out.push_back(p.ToString());
  return out;
}

TEST(BudgetPolicy, AbsentBudgetsAreTheDefaultsByAdmissionKind) {
  const Policy p = Parsed("mode: auto\n");
  EXPECT_EQ(p.budgets.for_explicit, (Budget{2'000'000, 10, 480, 40}));
  EXPECT_EQ(p.budgets.for_inferred, (Budget{300'000, 2, 120, 10}));
  EXPECT_EQ(&p.budgets.For(Strength::kExplicit), &p.budgets.for_explicit);
  EXPECT_EQ(&p.budgets.For(Strength::kInferred), &p.budgets.for_inferred);
}

TEST(BudgetPolicy, EachLimitIsOptionalAndZeroMeansNoLimit) {
  const Policy p = Parsed(
      "budgets:\n"
      "  inferred: {tokens: 0, cost_usd: 2.5, turns: 3}\n"
      "  explicit:\n");
  EXPECT_EQ(p.budgets.for_inferred, (Budget{0, 2.5, 120, 3}));
  EXPECT_EQ(p.budgets.for_explicit, (Budget{2'000'000, 10, 480, 40}));
  // Zero in a dimension never stops work, however much is spent.
  BudgetSpend spent;
  spent.tokens = 50'000'000;
  EXPECT_EQ(ComputeBudgetStatus(p.budgets.for_inferred, {}, spent, 0).reached, "");
  spent.turns = 3;
  EXPECT_EQ(ComputeBudgetStatus(p.budgets.for_inferred, {}, spent, 0).reached, "turns");
}

TEST(BudgetPolicy, WrongTypesNegativesAndUnknownKeysArePreciseProblems) {
  EXPECT_THAT(Problems("budgets:\n"
                       "  explicit: {tokens: -5, cost_usd: \"10\", wall_clock_minutes: 1.5, turns: many}\n"
                       "  inferred: {tokens: 99999999999999999999, cost_usd: -1, turns: [1]}\n"),
              ::testing::ElementsAre(
                  "policy.yaml:2:22: budgets.explicit.tokens: must be a whole number, 0 or more (0: no limit) (got \"-5\")",
                  "policy.yaml:2:36: budgets.explicit.cost_usd: must be an amount of US dollars such as 10 or 2.5, 0 or "
                  "more (0: no limit) (got \"10\")",
                  "policy.yaml:2:62: budgets.explicit.wall_clock_minutes: must be a whole number, 0 or more (0: no "
                  "limit) (got \"1.5\")",
                  "policy.yaml:2:74: budgets.explicit.turns: must be a whole number, 0 or more (0: no limit) (got \"many\")",
                  "policy.yaml:3:22: budgets.inferred.tokens: is too large (got \"99999999999999999999\")",
                  "policy.yaml:3:54: budgets.inferred.cost_usd: must be an amount of US dollars such as 10 or 2.5, 0 or "
                  "more (0: no limit) (got \"-1\")",
                  "policy.yaml:3:65: budgets.inferred.turns: must be a whole number, 0 or more (0: no limit) (got a list)"));
  EXPECT_THAT(Problems("budgets: [10, 20]\n"), ::testing::ElementsAre("policy.yaml:1:10: budgets: must be a mapping"));
  EXPECT_THAT(Problems("budgets:\n  explicit: 100\n"),
              ::testing::ElementsAre("policy.yaml:2:13: budgets.explicit: must be a mapping"));
}

TEST(BudgetPolicy, ChineseKeysAreRejectedByName) {
  EXPECT_THAT(Problems("预算:\n  explicit: {tokens: 1}\n"),
              ::testing::ElementsAre("policy.yaml:1:1: 预算: unknown key (expected one of mode, sources, rules, budgets, circuit_breaker, judgement, repos)"));
  EXPECT_THAT(Problems("budgets:\n  显式: {tokens: 1}\n"),
              ::testing::ElementsAre("policy.yaml:2:3: budgets.显式: unknown key (expected one of explicit, inferred)"));
  EXPECT_THAT(Problems("budgets:\n  inferred: {令牌: 1, tokens: 🙂}\n"),  // yaml-cpp counts columns in bytes
              ::testing::ElementsAre("policy.yaml:2:14: budgets.inferred.令牌: unknown key (expected one of tokens, "
                                     "cost_usd, wall_clock_minutes, turns)",
                                     "policy.yaml:2:33: budgets.inferred.tokens: must be a whole number, 0 or more (0: "
                                     "no limit) (got \"🙂\")"));
}

TEST(BudgetPolicy, BudgetsArePartOfThePolicysVersion) {
  const Policy a = Parsed("mode: auto\n");
  const Policy b = Parsed("mode: auto\nbudgets:\n  inferred: {tokens: 1000}\n");
  EXPECT_NE(a.Fingerprint(), b.Fingerprint());
  EXPECT_EQ(a.Fingerprint(), Parsed("mode: auto\nbudgets:\n  inferred: {tokens: 300000}\n").Fingerprint())
      << "writing a default out changes nothing";
  auto back = PolicyFromJson(b.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->budgets, b.budgets);
  EXPECT_EQ(back->Fingerprint(), b.Fingerprint());
  // A version stored before budgets existed reads with the defaults.
  json old = a.ToJson();
  old.erase("budgets");
  EXPECT_EQ(Ok(PolicyFromJson(old)).budgets, Budgets{});
  json bad = a.ToJson();
  bad["budgets"]["inferred"]["tokens"] = -1;
  EXPECT_EQ(PolicyFromJson(bad).status().message(),
            "policy.budgets.inferred: tokens: must be a whole number of 0 or more");
  bad = a.ToJson();
  bad["budgets"]["inferred"]["turns"] = "10";
  EXPECT_FALSE(PolicyFromJson(bad).ok());
}

// An executor that records the token usage each turn is scripted with (as an executor does when
// the model reports it) and, when told to, holds the turn until it is cancelled.
class SpendingExecutor : public exec::Executor {
 public:
  explicit SpendingExecutor(Engine* engine) : engine_(engine) {}
  std::string name() const override { return "spending"; }
  Result<exec::TurnResult> RunTurn(const exec::WorkerTask& t) override {
    json usage;
    bool hold;
    {
      std::lock_guard<std::mutex> lock(mu_);
      inputs.push_back(t.inputs);
      first_inputs.push_back(t.first_turn ? exec::FirstInputText(t) : "");
      usage = next_usage;
      next_usage = nullptr;
      hold = hold_next;
      hold_next = false;
    }
    if (!usage.is_null()) {
      Status s = engine_->RecordTokenUsage(t.ticket, t.session, usage);
      if (!s.ok()) return s;
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++spent;
      cv_.notify_all();
      // Polls the cancel flag as a real executor does between steps (nobody signals this cv).
      while (!cv_.wait_for(lock, std::chrono::milliseconds(2), [&] { return !hold || released || t.cancel->load(); })) {
      }
      released = false;
      if (t.cancel->load()) cancelled++;
    }
    exec::TurnResult r;
    r.report = exec::WorkerReport{Stage::kReady, "Fixed the typo.", std::nullopt, std::nullopt};
    return r;
  }
  // Waits until turn number `turn` (1-based, of this executor) has recorded its usage.
  void WaitSpent(int turn) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return spent >= turn; });
  }
  void Next(json usage, bool hold) {
    std::lock_guard<std::mutex> lock(mu_);
    next_usage = std::move(usage);
    hold_next = hold;
  }
  // Lets a held turn finish with its report.
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released = true;
    cv_.notify_all();
  }
  std::size_t Turns() {
    std::lock_guard<std::mutex> lock(mu_);
    return inputs.size();
  }

  std::vector<std::vector<json>> inputs;
  std::vector<std::string> first_inputs;
  int cancelled = 0;

 private:
  Engine* engine_;
  std::mutex mu_;
  std::condition_variable cv_;
  json next_usage;
  bool hold_next = false;
  int spent = 0;  // turns that have recorded their usage
  bool released = false;
};

json Usage(std::int64_t tokens, std::optional<double> cost = std::nullopt) {
  json u{{"model", "deepseek-chat"}, {"purpose", "worker"}, {"calls", 1}, {"prompt_tokens", tokens - tokens / 4},
         {"completion_tokens", tokens / 4}, {"total_tokens", tokens}};
  if (cost) u["cost_usd"] = *cost;
  return u;
}

class BudgetTest : public ExecTest {
 protected:
  // A new Engine over the same database (and the worker services on it).
  void Reopen(const Policy& policy) {
    services_.reset();
    Open(policy);
    services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
  }
  // The test policy with `budgets` (YAML lines) before its rules.
  Policy WithBudgets(const std::string& budgets, const std::string& mode = "observe") {
    return MakePolicy(mode, "rules:=>budgets:\n" + budgets + "rules:");
  }
  std::vector<Receipt> Attention(TicketId t) {
    std::vector<Receipt> out;
    for (const Receipt& r : Ok(views_->Receipts(t)))
      if (r.kind == MessageKind::kAttention) out.push_back(r);
    return out;
  }
  // Ticks until no turn runs, then reaps them.
  void Settle(exec::Scheduler* s) {
    s->WaitForTurns();
    ASSERT_TRUE(s->Tick().ok());
  }
};

TEST_F(BudgetTest, TheMandateRecordsItsBudgetAtAcceptAndExplainShowsIt) {
  Reopen(WithBudgets("  explicit: {tokens: 5000, cost_usd: 0}\n  inferred: {tokens: 500, turns: 0}\n", "auto"));
  const TicketId t = AcceptedTicket("r1");
  EXPECT_EQ(Ok(views_->GetMandate(t)).budget, (Budget{5000, 0, 480, 40}));
  auto story = Ok(ExplainNow("r1"));
  EXPECT_EQ(story["ticket_created"]["mandate"]["budget"],
            (json{{"tokens", 5000}, {"cost_usd", 0.0}, {"wall_clock_minutes", 480}, {"turns", 40}}));
  EXPECT_EQ(story["ticket_created"]["budget"]["spent"]["tokens"], 0);
  EXPECT_EQ(story["ticket_created"]["budget"]["reached"], nullptr);

  // Inferred work (alice, not addressed, a rule matched in auto mode) gets the inferred budget.
  Receive(Comment("i1", "alice", false, "There is teh typo in README", 7));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId inferred = Ok(ExplainNow("i1"))["ticket_created"]["id"].get<TicketId>();
  const Mandate m = Ok(views_->GetMandate(inferred));
  EXPECT_EQ(m.strength, Strength::kInferred);
  EXPECT_EQ(m.budget, (Budget{500, 2, 120, 0}));

  // Immutable: a later policy does not change a Mandate's budget, in the store or in a new Engine.
  Reopen(WithBudgets("  explicit: {tokens: 9}\n"));
  EXPECT_EQ(Ok(views_->GetMandate(t)).budget, (Budget{5000, 0, 480, 40}));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "superagent.db").c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_NE(sqlite3_exec(db, "UPDATE mandates SET budget = '{}'", nullptr, nullptr, &err), SQLITE_OK);
  EXPECT_THAT(std::string(err ? err : ""), HasSubstr("mandates are immutable"));
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST_F(BudgetTest, TokensReachedMidTurnEndTheTurnAndAskTheRequesterOnce) {
  Reopen(WithBudgets("  explicit: {tokens: 1000, cost_usd: 0, wall_clock_minutes: 0, turns: 0}\n"));
  SpendingExecutor executor(engine_.get());
  auto scheduler = MakeScheduler(&executor);
  const TicketId t = AcceptedTicket("r1");
  executor.Next(Usage(1200), /*hold=*/true);
  ASSERT_EQ(*scheduler->Tick(), 1);
  executor.WaitSpent(1);
  ASSERT_EQ(views_->GetTicket(t)->stage, Stage::kWorking);

  ASSERT_EQ(*scheduler->Tick(), 0);  // sees the usage: ends the turn and asks
  Settle(scheduler.get());
  EXPECT_EQ(executor.cancelled, 1) << "the turn was stopped, not left to finish";
  const Ticket tk = Ok(views_->GetTicket(t));
  ASSERT_EQ(tk.stage, Stage::kWaitingForPerson) << "the Ticket stays open";
  ASSERT_TRUE(tk.waiting.has_value());
  EXPECT_EQ(tk.waiting->actor, "alice");
  EXPECT_EQ(tk.waiting->thread, "github:acme/widgets:issue:1");
  EXPECT_EQ(tk.waiting->form, (json{{"options", {"Continue with 1000 more tokens", "Stop here"}},
                                    {"free_text", false},
                                    {"purpose", "budget"}}));
  auto asked = Attention(t);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].id, "budget:ticket:" + std::to_string(t) + ":1");
  EXPECT_THAT(asked[0].body, HasSubstr("1200 tokens spent of 1000 tokens"));
  for (const Receipt& r : Ok(views_->Receipts(t))) EXPECT_NE(r.kind, MessageKind::kResult) << "the stopped turn says nothing";
  for (const Assignment& a : Ok(views_->Assignments(t))) EXPECT_EQ(a.state, "ended");
  EXPECT_EQ(Ok(views_->SessionForTicket(t))->status, "idle");

  // Nothing more happens until the person answers: no second question, no turn.
  ASSERT_EQ(*scheduler->Tick(), 0);
  ASSERT_EQ(*scheduler->Tick(), 0);
  EXPECT_EQ(Attention(t).size(), 1u);
  EXPECT_EQ(executor.Turns(), 1u);

  // "1" in the discussion continues: an extension beside the Mandate, and the worker goes on
  // without hearing of the budget or the "1".
  Receive(Comment("a1", "alice", false, " 1\n"));
  ASSERT_EQ(*scheduler->Tick(), 1);
  Settle(scheduler.get());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady);
  ASSERT_EQ(executor.Turns(), 2u);
  ASSERT_EQ(executor.inputs[1].size(), 1u);
  EXPECT_EQ(executor.inputs[1][0]["kind"], "resume");
  EXPECT_THAT(executor.inputs[1][0]["text"].get<std::string>(), HasSubstr("Continue the work"));
  EXPECT_THAT(executor.inputs[1][0].dump(), Not(HasSubstr("budget")));
  auto status = Ok(views_->BudgetOf(t, clock_.NowMs()));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->limits.tokens, 2200) << "1000 more than was spent when the person said go on";
  EXPECT_EQ(status->budget.tokens, 1000) << "the Mandate's own budget is unchanged";
  EXPECT_EQ(status->spent.tokens, 1200);
  EXPECT_EQ(status->reached, "");
  EXPECT_EQ(status->waiting, "");
  EXPECT_EQ(Ok(views_->GetMandate(t)).budget->tokens, 1000);
}

TEST_F(BudgetTest, OptionTwoEndsTheTicketAndSaysWhoStoppedIt) {
  Reopen(WithBudgets("  explicit: {tokens: 1000}\n"));
  SpendingExecutor executor(engine_.get());
  auto scheduler = MakeScheduler(&executor);
  const TicketId t = AcceptedTicket("r1");
  executor.Next(Usage(1000), false);
  ASSERT_EQ(*scheduler->Tick(), 1);
  Settle(scheduler.get());
  ASSERT_EQ(views_->GetTicket(t)->stage, Stage::kReady) << "a turn that ends at the limit keeps its result";

  // More work is asked for: the limit is reached before the turn, so the requester is asked
  // instead and no turn starts.
  Receive(Comment("f1", "alice", false, "also fix the other typo"));
  ASSERT_EQ(*scheduler->Tick(), 0);
  ASSERT_EQ(views_->GetTicket(t)->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(executor.Turns(), 1u);

  ASSERT_TRUE(engine_->AnswerQuestion(t, "alice (panel)", json{{"option", 2}, {"text", "Stop here"}}).ok());
  ASSERT_EQ(*scheduler->Tick(), 0);
  const Ticket tk = Ok(views_->GetTicket(t));
  EXPECT_EQ(tk.stage, Stage::kEnded);
  EXPECT_EQ(tk.end_reason, "budget reached; stopped by alice (panel)");
  EXPECT_EQ(Ok(views_->GetMandate(t)).ended_as, "") << "not a panel Stop: the Mandate stays";
  EXPECT_EQ(executor.Turns(), 1u);
  for (const Assignment& a : Ok(views_->Assignments(t))) EXPECT_EQ(a.state, "ended");
}

TEST_F(BudgetTest, FreeTextOtherThanOneLeavesTheQuestionOpenAndReachesTheWorkerLater) {
  Reopen(WithBudgets("  explicit: {tokens: 100}\n"));
  SpendingExecutor executor(engine_.get());
  auto scheduler = MakeScheduler(&executor);
  const TicketId t = AcceptedTicket("r1");
  executor.Next(Usage(150), false);
  ASSERT_EQ(*scheduler->Tick(), 1);
  Settle(scheduler.get());
  Receive(Comment("f1", "alice", false, "one more thing"));
  ASSERT_EQ(*scheduler->Tick(), 0);
  ASSERT_EQ(views_->GetTicket(t)->stage, Stage::kWaitingForPerson);

  int n = 0;
  for (const char* text : {"为什么这么贵？🤔", "11", "1 please", "\xff\xfe"}) {
    Receive(Comment("x" + std::to_string(++n), "alice", false, text));
    ASSERT_EQ(views_->GetTicket(t)->stage, Stage::kIdle);
    ASSERT_EQ(*scheduler->Tick(), 0) << text;
    const Ticket tk = Ok(views_->GetTicket(t));
    ASSERT_EQ(tk.stage, Stage::kWaitingForPerson) << text;
    EXPECT_EQ(tk.waiting->form["purpose"], "budget");
  }
  // A panel answer with no valid option is refused (question.h's NormalizeAnswer) and changes nothing.
  const Status refused = engine_->AnswerQuestion(t, "alice (panel)", json{{"option", 3}});
  EXPECT_EQ(refused.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(refused.message(), "answer.option: must be a number from 1 to 2");
  ASSERT_EQ(*scheduler->Tick(), 0);
  ASSERT_EQ(views_->GetTicket(t)->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(Attention(t).size(), 1u) << "one question, asked once";
  EXPECT_EQ(executor.Turns(), 1u);

  ASSERT_TRUE(engine_->AnswerQuestion(t, "bob (panel)", json{{"option", 1}, {"text", "Continue with 100 more tokens"}}).ok());
  ASSERT_EQ(*scheduler->Tick(), 1);
  Settle(scheduler.get());
  ASSERT_EQ(executor.Turns(), 2u);
  std::string seen;
  for (const json& in : executor.inputs[1]) seen += in.dump() + "\n";
  EXPECT_THAT(seen, HasSubstr("one more thing"));
  EXPECT_THAT(seen, HasSubstr("为什么这么贵？🤔"));
  EXPECT_THAT(seen, HasSubstr("1 please"));
  EXPECT_THAT(seen, HasSubstr("Continue the work"));
  int answers = 0;
  for (const json& in : executor.inputs[1]) {
    if (in["kind"] != "answer") continue;
    ++answers;
    EXPECT_NE(in.value("from", ""), "bob (panel)") << "the option that decided is the daemon's, not the worker's";
  }
  EXPECT_EQ(answers, 4) << "four replies in the discussion; the refused panel answer left nothing";
  EXPECT_EQ(Ok(views_->BudgetOf(t, clock_.NowMs()))->limits.tokens, 250);
}

TEST_F(BudgetTest, TheTurnsLimitStopsTheNextTurnNotTheRunningOne) {
  Reopen(WithBudgets("  explicit: {tokens: 0, cost_usd: 0, wall_clock_minutes: 0, turns: 2}\n"));
  SpendingExecutor executor(engine_.get());
  auto scheduler = MakeScheduler(&executor);
  const TicketId t = AcceptedTicket("r1");
  ASSERT_EQ(*scheduler->Tick(), 1);
  Settle(scheduler.get());
  Receive(Comment("f1", "alice", false, "and the second typo"));
  executor.Next(nullptr, /*hold=*/true);
  ASSERT_EQ(*scheduler->Tick(), 1);
  executor.WaitSpent(2);
  ASSERT_EQ(*scheduler->Tick(), 0);  // the second turn runs on: 2 of 2 turns is not over
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kWorking);
  executor.Release();
  Settle(scheduler.get());
  ASSERT_EQ(views_->GetTicket(t)->stage, Stage::kReady);
  EXPECT_EQ(executor.cancelled, 0);

  Receive(Comment("f2", "alice", false, "and a third"));
  ASSERT_EQ(*scheduler->Tick(), 0);  // a third turn would be over: asked instead
  const Ticket tk = Ok(views_->GetTicket(t));
  ASSERT_EQ(tk.stage, Stage::kWaitingForPerson);
  EXPECT_EQ(tk.waiting->form["options"][0], "Continue with 2 more turns");
  EXPECT_THAT(Attention(t).at(0).body, HasSubstr("2 turns spent of 2 turns"));
  EXPECT_EQ(executor.Turns(), 2u);
}

TEST_F(BudgetTest, WallClockCountsOnlyTimeWorkingWithAnInjectedClock) {
  Reopen(WithBudgets("  explicit: {tokens: 0, cost_usd: 0, wall_clock_minutes: 30, turns: 0}\n"));
  SpendingExecutor executor(engine_.get());
  auto scheduler = MakeScheduler(&executor);
  const TicketId t = AcceptedTicket("r1");
  clock_.Advance(10 * 60'000);  // waiting in the queue is not work
  executor.Next(nullptr, /*hold=*/true);
  ASSERT_EQ(*scheduler->Tick(), 1);
  executor.WaitSpent(1);
  clock_.Advance(29 * 60'000);
  ASSERT_EQ(*scheduler->Tick(), 0);
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kWorking) << "29 of 30 minutes";
  clock_.Advance(60'000);
  ASSERT_EQ(*scheduler->Tick(), 0);
  Settle(scheduler.get());
  const Ticket tk = Ok(views_->GetTicket(t));
  ASSERT_EQ(tk.stage, Stage::kWaitingForPerson);
  EXPECT_EQ(tk.waiting->form["options"][0], "Continue with 30 more minutes");
  EXPECT_THAT(Attention(t).at(0).body, HasSubstr("30 minutes of work spent of 30 minutes of work"));

  clock_.Advance(5 * 60 * 60'000);  // waiting for the person is not work either
  auto status = Ok(views_->BudgetOf(t, clock_.NowMs()));
  EXPECT_EQ(BudgetStatusJson(*status, clock_.NowMs())["spent"]["wall_clock_minutes"], 30);
  EXPECT_EQ(status->waiting, "wall_clock_minutes");
}

// Issue 34: "1 minutes of work". One of a unit is said in the singular, in the question and its
// option alike.
TEST_F(BudgetTest, OneOfAUnitIsSaidInTheSingular) {
  Reopen(WithBudgets("  explicit: {tokens: 0, cost_usd: 0, wall_clock_minutes: 1, turns: 0}\n"));
  SpendingExecutor executor(engine_.get());
  auto scheduler = MakeScheduler(&executor);
  const TicketId t = AcceptedTicket("r1");
  executor.Next(nullptr, /*hold=*/true);
  ASSERT_EQ(*scheduler->Tick(), 1);
  executor.WaitSpent(1);
  clock_.Advance(60'000);
  ASSERT_EQ(*scheduler->Tick(), 0);
  Settle(scheduler.get());
  const Ticket tk = Ok(views_->GetTicket(t));
  ASSERT_EQ(tk.stage, Stage::kWaitingForPerson);
  EXPECT_EQ(tk.waiting->form["options"][0], "Continue with 1 more minute");
  EXPECT_THAT(Attention(t).at(0).body, HasSubstr("1 minute of work spent of 1 minute of work"));
  EXPECT_EQ(BudgetAmountText("tokens", 1), "1 token");
  EXPECT_EQ(BudgetAmountText("tokens", 2), "2 tokens");
  EXPECT_EQ(BudgetAmountText("turns", 1), "1 turn");
  EXPECT_EQ(BudgetAmountText("wall_clock_minutes", 11), "11 minutes of work");
  EXPECT_EQ(BudgetAmountText("cost_usd", 1), "$1.00");
}

TEST_F(BudgetTest, OnlyReportedCostCountsAndACostLimitAsksBeforeTheTurn) {
  Reopen(WithBudgets("  explicit: {tokens: 0, cost_usd: 1, wall_clock_minutes: 0, turns: 0}\n"));
  SpendingExecutor executor(engine_.get());
  auto scheduler = MakeScheduler(&executor);
  const TicketId t = AcceptedTicket("r1");
  ASSERT_TRUE(engine_->RecordTokenUsage(t, std::nullopt, Usage(100, 0.25)).ok());
  ASSERT_TRUE(engine_->RecordTokenUsage(t, std::nullopt, Usage(100'000)).ok()) << "no cost reported: counts 0";
  json wrong = Usage(10);
  wrong["cost_usd"] = "0.5";  // a wrong type is not a cost
  ASSERT_TRUE(engine_->RecordTokenUsage(t, std::nullopt, wrong).ok());
  EXPECT_DOUBLE_EQ(Ok(views_->BudgetOf(t, clock_.NowMs()))->spent.cost_usd, 0.25);
  ASSERT_EQ(*scheduler->Tick(), 1);
  Settle(scheduler.get());
  ASSERT_TRUE(engine_->RecordTokenUsage(t, std::nullopt, Usage(100, 0.75)).ok());
  Receive(Comment("f1", "alice", false, "one more"));
  ASSERT_EQ(*scheduler->Tick(), 0);
  const Ticket tk = Ok(views_->GetTicket(t));
  ASSERT_EQ(tk.stage, Stage::kWaitingForPerson);
  EXPECT_EQ(tk.waiting->form["options"][0], "Continue with 1 more US dollar");
  EXPECT_THAT(Attention(t).at(0).body, HasSubstr("$1.00 spent of $1.00"));
}

TEST_F(BudgetTest, ARestartKeepsSpendAndExtensions) {
  Reopen(WithBudgets("  explicit: {tokens: 1000}\n"));
  TicketId t = 0;
  {
    SpendingExecutor executor(engine_.get());
    auto scheduler = MakeScheduler(&executor);
    t = AcceptedTicket("r1");
    executor.Next(Usage(1500), false);
    ASSERT_EQ(*scheduler->Tick(), 1);
    Settle(scheduler.get());
    Receive(Comment("f1", "alice", false, "more please"));
    ASSERT_EQ(*scheduler->Tick(), 0);
    ASSERT_TRUE(engine_->AnswerQuestion(t, "alice (panel)", json{{"option", 1}}).ok());
    ASSERT_EQ(*scheduler->Tick(), 1);
    Settle(scheduler.get());
    scheduler->Stop();
  }
  Reopen(WithBudgets("  explicit: {tokens: 10}\n"));  // a new Engine over the same database
  auto status = Ok(views_->BudgetOf(t, clock_.NowMs()));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->spent.tokens, 1500);
  EXPECT_EQ(status->spent.turns, 2);
  EXPECT_EQ(status->limits.tokens, 2500);
  EXPECT_EQ(status->budget.tokens, 1000);
  auto story = Ok(ExplainNow("r1"));
  EXPECT_EQ(story["ticket_created"]["budget"]["budget"]["tokens"], 2500);
  EXPECT_EQ(story["ticket_created"]["budget"]["granted"]["tokens"], 1000);
  EXPECT_EQ(story["ticket_created"]["budget"]["spent"]["turns"], 2);

  // The extended limit still holds after the restart: more work within it runs.
  SpendingExecutor executor(engine_.get());
  auto scheduler = MakeScheduler(&executor);
  Receive(Comment("f2", "alice", false, "and the last one"));
  executor.Next(Usage(1000), /*hold=*/true);
  ASSERT_EQ(*scheduler->Tick(), 1);
  executor.WaitSpent(1);
  ASSERT_EQ(*scheduler->Tick(), 0);  // 2500 of 2500: reached mid-turn
  Settle(scheduler.get());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(Attention(t).size(), 2u);
  EXPECT_EQ(Attention(t).back().id, "budget:ticket:" + std::to_string(t) + ":2");
}

TEST_F(BudgetTest, TheWorkerHearsOfItsBudgetInOneHostFactLine) {
  Reopen(WithBudgets("  explicit: {tokens: 1000, cost_usd: 0}\n"));
  SpendingExecutor executor(engine_.get());
  auto scheduler = MakeScheduler(&executor);
  AcceptedTicket("r1");
  ASSERT_EQ(*scheduler->Tick(), 1);
  Settle(scheduler.get());
  const std::string first = executor.first_inputs.at(0);
  EXPECT_THAT(first, HasSubstr("- budget: 1000 tokens, 480 minutes of work, 40 turns (enforced by the host"));
  std::size_t mentions = 0;
  for (std::size_t at = first.find("budget"); at != std::string::npos; at = first.find("budget", at + 1)) ++mentions;
  EXPECT_EQ(mentions, 1u) << first;
}

}  // namespace
}  // namespace superagent::testing
