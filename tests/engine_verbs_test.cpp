// A person's verbs (issue 22 item 6, docs/002): "@agent stop" and "@agent status" are decided by
// code in the Eval — no model call — act on that Thread's Tickets, and are answered once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "engine_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

TEST(VerbTest, OnlyTheWholeMessageIsAVerb) {
  for (const char* s : {"@agent stop", "stop", "@agent STOP!", "/stop", "@superagent-bot   stop.", "@agent 停止",
                        "@agent 停止。", "@agent 停止！", "@a @b stop"})
    EXPECT_EQ(ParseVerb(s), Verb::kStop) << s;
  for (const char* s : {"@agent status", "/status", "@agent 状态", "Status?"})
    EXPECT_EQ(ParseVerb(s), std::string(s) == "Status?" ? std::nullopt : std::optional<Verb>(Verb::kStatus)) << s;
  for (const char* s : {"@agent please stop the build", "@agent stop it", "don't stop", "", "@agent", "@agent ",
                        "stopp", "@agent 停", "@agent stop\xff", "🛑", "@agent stop 🛑"})
    EXPECT_FALSE(ParseVerb(s).has_value()) << "a sentence is the model's to judge: " << s;
}

// Issue 38: a verdict on what observe mode would have done here, in the discussion.
TEST(VerbTest, AVerdictIsAFixedPhrase) {
  for (const char* s : {"@agent not a request", "@agent Not a request.", "@agent 不是请求", "@agent 不是请求。", "not a request!"})
    EXPECT_EQ(ParseVerb(s), Verb::kNotARequest) << s;
  for (const char* s : {"@agent was a request", "@agent a request", "@agent 是请求！", "WAS A REQUEST"})
    EXPECT_EQ(ParseVerb(s), Verb::kWasARequest) << s;
  for (const char* s : {"@agent this is not a request", "@agent not a request, fix it", "@agent request",
                        "@agent not a", "@agent 这不是请求", "@agent not a request 🙂"})
    EXPECT_FALSE(ParseVerb(s).has_value()) << s;
}

TEST(VerbTest, AMentionWithASpaceIsOneMention) {
  Trigger t;
  t.text = "@Super Agent 停止";
  EXPECT_FALSE(ParseVerb(t.text).has_value()) << "without the Source's mentions, \"Agent\" is a word";
  t.meta = {{"mentions", {"@Super Agent", 7}}};
  EXPECT_EQ(VerbOf(t), Verb::kStop);
  t.meta = {{"mentions", "@Super Agent"}};
  EXPECT_FALSE(VerbOf(t).has_value()) << "mentions that are not a list are ignored";
}

class EngineVerbsTest : public EngineTest {
 protected:
  Receipt LastReceiptOn(const std::string& thread) {
    auto all = Ok(views_->Receipts(std::nullopt));
    for (auto it = all.rbegin(); it != all.rend(); ++it)
      if (it->thread == thread) return *it;
    ADD_FAILURE() << "nothing sent on " << thread;
    return {};
  }
};

TEST_F(EngineVerbsTest, StopFromAnAllowListedPersonStopsTheThreadsTicketsWithoutAModel) {
  TicketId a = AcceptedTicket("c1");
  const int calls = assessor_.calls;
  IntakeResult r = Receive(Comment("c2", "bob", true, "@agent stop"));
  EXPECT_TRUE(r.delivered_to.empty()) << "a verb goes to the Eval, not to the working Ticket";
  EXPECT_TRUE(r.queued_for_eval);
  // The model is down: the stop still works.
  assessor_.answers.push_back(Status::Unavailable("model down"));
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(assessor_.calls, calls) << "no model call";
  auto tk = views_->GetTicket(a);
  EXPECT_EQ(tk->stage, Stage::kEnded);
  EXPECT_EQ(tk->end_reason, "stopped in conversation");
  auto story = Ok(ExplainNow("c2"));
  ASSERT_EQ(story["evals"].size(), 1u) << story.dump();
  EXPECT_EQ(story["evals"][0]["decision"]["outcome"], "stop") << story.dump();
  EXPECT_EQ(story["evals"][0]["decision"]["reason"], "stop command from bob");
  Receipt said = LastReceiptOn("github:acme/widgets:issue:1");
  EXPECT_EQ(said.kind, MessageKind::kAnswer);
  EXPECT_EQ(said.body, "Stopped: ticket " + std::to_string(a) + " (Fix the typo in README). A new message here resumes it.");
  // The Mandate is not withdrawn (that is the panel's Stop): a person's next message resumes it.
  EXPECT_EQ(Receive(Comment("c3", "alice", false, "actually, go on")).resumed, std::vector<TicketId>{a});
}

// In observe mode the agent records what it would have done; a person says in the discussion
// whether it was a request: recorded on that Thread's newest unjudged would_accept, answered once,
// with no model call. Nothing waits: said so. Someone the policy does not list: not a verb at all.
TEST_F(EngineVerbsTest, AVerdictInTheDiscussionIsRecordedOnTheThreadsWouldAccept) {
  Receive(Comment("c1", "alice", false, "there's a typo in the README heading"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const int calls = assessor_.calls;
  Receive(Comment("c2", "alice", true, "@agent 不是请求"));
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(assessor_.calls, calls) << "no model call";
  EXPECT_EQ(LastReceiptOn("github:acme/widgets:issue:1").body,
            "Noted: not a request. It counts against the rule that would have taken it.");
  auto records = Ok(views_->WouldAccepts(0));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].verdict, Verdict::kNo);
  EXPECT_EQ(records[0].by, "alice");
  EXPECT_EQ(records[0].via, "thread");
  EXPECT_EQ(records[0].verdict_at, clock_.NowMs());
  // Again: nothing left to judge on this Thread, and the first verdict stands.
  Receive(Comment("c3", "alice", true, "@agent was a request"));
  ASSERT_EQ(Drain(), 1);
  EXPECT_THAT(LastReceiptOn("github:acme/widgets:issue:1").body, ::testing::HasSubstr("Nothing here waits for a verdict"));
  EXPECT_EQ(Ok(views_->WouldAccepts(0))[0].verdict, Verdict::kNo);
  // On another Thread with nothing recorded.
  Receive(Comment("c4", "alice", true, "@agent a request", 2));
  ASSERT_EQ(Drain(), 1);
  EXPECT_THAT(LastReceiptOn("github:acme/widgets:issue:2").body, ::testing::HasSubstr("Nothing here waits for a verdict"));
}

TEST_F(EngineVerbsTest, StatusAnswersWithTheThreadsTicketsAndChangesNothing) {
  TicketId a = AcceptedTicket("c1");
  Receive(Comment("c2", "alice", true, "@agent 状态"));
  const int calls = assessor_.calls;
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(assessor_.calls, calls);
  EXPECT_EQ(views_->GetTicket(a)->stage, Stage::kIdle);
  EXPECT_EQ(LastReceiptOn("github:acme/widgets:issue:1").body, "ticket " + std::to_string(a) + " (Fix the typo in README): idle");

  Receive(Comment("c3", "alice", true, "@agent status", 2));
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(LastReceiptOn("github:acme/widgets:issue:2").body, "No work here.");
  Receive(Comment("c4", "alice", true, "@agent stop", 2));
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(LastReceiptOn("github:acme/widgets:issue:2").body, "Nothing is running here to stop.");
}

TEST_F(EngineVerbsTest, BotsAndStrangersCannotUseVerbs) {
  TicketId a = AcceptedTicket("c1");
  const std::size_t said = Ok(views_->Receipts(std::nullopt)).size();
  Receive(Comment("c2", "dependabot[bot]", true, "@agent stop", 1, /*human=*/false));
  Receive(Comment("c3", "mallory", true, "@agent stop"));
  assessor_.answers.push_back(ScriptedAssessor::Accept(false));
  assessor_.answers.push_back(ScriptedAssessor::Accept(false));
  Drain();
  EXPECT_NE(views_->GetTicket(a)->stage, Stage::kEnded);
  EXPECT_EQ(Ok(views_->Receipts(std::nullopt)).size(), said) << "no answer to a verb nobody may use";
}

}  // namespace
}  // namespace superagent::testing
