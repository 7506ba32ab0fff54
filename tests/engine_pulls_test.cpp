// A Ticket's own pull request (issue 22 item 3, SPEC §6): the result waits for the PR and links it,
// the PR links the discussion, and the PR's CI, reviews and end reach the Ticket.
#include <gtest/gtest.h>

#include "engine_pulls_fixture.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using nlohmann::json;

TEST_F(EnginePullsTest, TheResultWaitsForItsPullRequestAndLinksIt) {
  TicketId t = AcceptedTicket("c1");
  ReadyTurn(t, true);
  auto first = DeliverDue(Sent);
  ASSERT_EQ(first.size(), 2u) << "the acknowledgement and the PR; the result waits for the PR";
  const ClaimedEffect& pr = first[0].effect.kind == "open_pull_request" ? first[0] : first[1];
  EXPECT_EQ(pr.effect.payload["discussion_url"], "https://github.com/o/r/issues/1#c1")
      << "the PR points back at the discussion that asked for it";
  auto second = DeliverDue(Sent);
  ASSERT_EQ(second.size(), 1u);
  ASSERT_TRUE(second[0].effect.receipt.has_value());
  EXPECT_EQ(second[0].effect.receipt->body, "Fixed the typo.\n\nPull request: https://github.com/o/r/pull/42");

  auto pulls = Ok(views_->TicketPulls(t));
  ASSERT_EQ(pulls.size(), 1u);
  EXPECT_EQ(pulls[0].number, 42);
  EXPECT_EQ(pulls[0].head_branch, Branch(t));
  EXPECT_EQ(pulls[0].state, "open");
  auto tracked = Ok(views_->TrackedPulls());
  ASSERT_EQ(tracked.size(), 1u);
  EXPECT_EQ(tracked[0].ticket, t);
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady);
  const json shown = Ok(ExplainNow("c1"))["ticket_created"]["pull_requests"];
  ASSERT_EQ(shown.size(), 1u) << shown.dump();
  EXPECT_EQ(shown[0]["url"], "https://github.com/o/r/pull/42");
  EXPECT_EQ(shown[0]["state"], "open");
}

TEST_F(EnginePullsTest, APullRequestThatCouldNotBeOpenedIsSaidInTheResult) {
  TicketId t = AcceptedTicket("c1");
  ReadyTurn(t, true);
  DeliverDue([](const ClaimedEffect& c) {
    return c.effect.kind == "open_pull_request" ? Delivery::Failed("HTTP 422: head branch 中文 does not exist")
                                                : Delivery::Done("comment-1");
  });
  auto second = DeliverDue(Sent);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].effect.receipt->body,
            "Fixed the typo.\n\nThe pull request could not be opened: HTTP 422: head branch 中文 does not exist");
  EXPECT_TRUE(Ok(views_->TrackedPulls()).empty());
}

TEST_F(EnginePullsTest, AFailingCheckOnItsPullRequestStartsAFixTurnUntilTheAttemptsAreSpent) {
  TicketId t = TicketWithPull();
  const std::size_t receipts = Ok(views_->Receipts(t)).size();

  Receive(Ci("ci:1", t, "success", "aaa"));
  EXPECT_EQ(LastInputState(t), "context") << "a passing check starts no turn";

  Receive(Ci("ci:2", t, "failure", "bbb"));
  EXPECT_EQ(LastInputState(t), "pending");
  Receive(Ci("ci:3", t, "timed_out", "bbb"));
  EXPECT_EQ(LastInputState(t), "pending") << "another check of the same push";
  EXPECT_EQ(Ok(views_->TicketPulls(t))[0].ci_fix_attempts, 1) << "attempts count pushes, not checks";
  ReadyTurn(t, false, "Fixed the test.");

  Receive(Ci("ci:4", t, "failure", "ccc"));
  EXPECT_EQ(LastInputState(t), "pending");
  EXPECT_EQ(Ok(views_->TicketPulls(t))[0].ci_fix_attempts, 2);
  ReadyTurn(t, false, "Fixed it again.");
  auto results = Ok(views_->Receipts(t));
  EXPECT_EQ(results.back().body, "Fixed it again.\n\nPull request: https://github.com/o/r/pull/42")
      << "a later result names the PR it updated";

  // The third push still fails: a person is asked, with a form, instead of a third attempt.
  Receive(Ci("ci:5", t, "failure", "ddd"));
  EXPECT_EQ(LastInputState(t), "context");
  auto tk = views_->GetTicket(t);
  ASSERT_EQ(tk->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(tk->waiting->actor, "alice");
  EXPECT_EQ(tk->waiting->form["options"], (json{"Try again", "Leave it to me"}));
  EXPECT_EQ(tk->waiting->form["purpose"], "ci_fix");
  EXPECT_GT(Ok(views_->Receipts(t)).size(), receipts);
  EXPECT_NE(Ok(views_->Receipts(t)).back().body.find("CI still fails on https://github.com/o/r/pull/42 after 2 fix attempts"),
            std::string::npos);
  // CI failing again meanwhile asks nothing more.
  const std::size_t asked = Ok(views_->Receipts(t)).size();
  Receive(Ci("ci:6", t, "failure", "ddd"));
  EXPECT_EQ(Ok(views_->Receipts(t)).size(), asked);

  // "1" (Try again) gives a fresh set of attempts.
  Receive(Comment("c9", "alice", false, "1"));
  EXPECT_EQ(Ok(views_->TicketInputs(t)).back().body["answer"], (json{{"option", 1}, {"text", "Try again"}}));
  EXPECT_EQ(Ok(views_->TicketPulls(t))[0].ci_fix_attempts, 0);
}

TEST_F(EnginePullsTest, AMergedPullRequestEndsTheTicketAndNeverResumesIt) {
  TicketId t = TicketWithPull();
  const std::size_t receipts = Ok(views_->Receipts(t)).size();
  IntakeResult r = Receive(Closed("pr42:closed", true, "bob"));
  EXPECT_EQ(r.delivered_to, std::vector<TicketId>{t});
  EXPECT_TRUE(r.resumed.empty());
  EXPECT_FALSE(r.queued_for_eval);
  auto tk = views_->GetTicket(t);
  EXPECT_EQ(tk->stage, Stage::kEnded);
  EXPECT_EQ(tk->end_reason, "pull request #42 merged by bob");
  EXPECT_EQ(Ok(views_->TicketPulls(t))[0].state, "merged");
  EXPECT_TRUE(Ok(views_->TrackedPulls()).empty()) << "nothing left to follow";
  EXPECT_EQ(Ok(views_->Receipts(t)).size(), receipts) << "people who merged know: nothing is said";
  // CI finishing after the merge neither wakes nor reaches the ended Ticket.
  IntakeResult late = Receive(Ci("ci:late", t, "failure", "eee"));
  EXPECT_TRUE(late.delivered_to.empty());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kEnded);
  // A person's review comment on the merged PR is an ordinary follow-up: it resumes in place.
  Trigger review = Comment("rc1", "alice", false, "one more thing: the footer");
  review.threads = {"github:acme/widgets:pull:42"};
  review.channel = "github:acme/widgets:pull:42";
  EXPECT_EQ(Receive(review).resumed, std::vector<TicketId>{t});
}

TEST_F(EnginePullsTest, AClosedPullRequestEndsTheTicketWithThatReason) {
  TicketId t = TicketWithPull();
  Receive(Closed("pr42:closed", false, "碧波"));
  EXPECT_EQ(views_->GetTicket(t)->end_reason, "pull request #42 closed by 碧波");
  EXPECT_EQ(Ok(views_->TicketPulls(t))[0].state, "closed");
}

TEST_F(EnginePullsTest, AReviewOnItsPullRequestIsAnInputAndAStoppedTicketIsNotFollowed) {
  TicketId t = TicketWithPull();
  Trigger review = Comment("rv1", "bob", false, "Please rename the variable.");
  review.threads = {"github:acme/widgets:pull:42:review:7", "github:acme/widgets:pull:42"};
  review.channel = "github:acme/widgets:pull:42:review:7";
  review.meta["type"] = "review";
  review.meta["state"] = "changes_requested";
  EXPECT_EQ(Receive(review).delivered_to, std::vector<TicketId>{t});
  EXPECT_EQ(LastInputState(t), "pending");
  ASSERT_TRUE(engine_->StopTicket(t, "carol (panel)").ok());
  EXPECT_TRUE(Ok(views_->TrackedPulls()).empty()) << "a withdrawn Mandate's PR is no longer followed";
}

TEST_F(EnginePullsTest, AReviewRulesApproverIsAskedToReviewThePullRequest) {
  Open(MakePolicy("auto", "instructions: Keep the change to the text in question.=>"
                          "instructions: Keep the change to the text in question.\n    approver: carol"));
  Receive(Comment("c1", "alice", false, "There is a typo in the README: teh → the"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  auto story = Ok(ExplainNow("c1"));
  ASSERT_TRUE(story.contains("ticket_created")) << story.dump();
  const TicketId t = story["ticket_created"]["id"];
  ReadyTurn(t, true);
  bool seen = false;
  for (const ClaimedEffect& c : DeliverDue(Sent)) {
    if (c.effect.kind != "open_pull_request") continue;
    seen = true;
    EXPECT_EQ(c.effect.payload["reviewers"], (json{"carol"}));
  }
  EXPECT_TRUE(seen);
}

TEST_F(EnginePullsTest, AnApprovalOfAReadyRulesPullRequestAsksTheAutoMergeGuardOncePerHead) {
  Open(MakePolicy("auto", "instructions: Keep the change to the text in question.=>"
                          "instructions: Keep the change to the text in question.\n    approver: carol\n"
                          "    auto_merge: {enabled: true, max_changed_lines: 50}"));
  Receive(Comment("c1", "alice", false, "There is a typo in the README: teh → the"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId t = Ok(ExplainNow("c1"))["ticket_created"]["id"];
  ReadyTurn(t, true);
  DeliverDue(Sent);
  DeliverDue(Sent);
  auto approval = [&](const std::string& id, const std::string& who, const std::string& sha, bool human = true) {
    Trigger r = Comment(id, who, false, "LGTM", 1, human);
    r.threads = {"github:acme/widgets:pull:42"};
    r.channel = "github:acme/widgets:pull:42";
    r.meta = {{"type", "review"}, {"state", "approved"}, {"commit_id", sha}};
    return r;
  };
  Receive(approval("rv1", "dependabot[bot]", "abc", /*human=*/false));
  EXPECT_TRUE(Ok(engine_->ClaimDueEffects(10)).empty()) << "a bot's approval asks for nothing";

  Receive(approval("rv2", "carol", "abc"));
  Receive(approval("rv2b", "Carol", "abc"));  // the same head and person again: no second attempt
  auto claimed = DeliverDue([](const ClaimedEffect&) { return Delivery::Failed("auto-merge refused: needs 2 approvals"); });
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].effect.kind, "merge_pull_request");
  EXPECT_EQ(claimed[0].effect.payload["number"], 42);
  EXPECT_EQ(claimed[0].effect.payload["head_sha"], "abc");
  EXPECT_EQ(claimed[0].effect.payload["max_changed_lines"], 50);
  EXPECT_EQ(claimed[0].effect.payload["approver"], "carol");
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty()) << "a refusal is the guard's decision, not a failing peer";
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady);

  // Another person approves the same head: the guard is asked again (a stranger who approved
  // first, refused, must not use up the attempt a writer's approval makes).
  Receive(approval("rv3", "bob", "abc"));
  claimed = DeliverDue([](const ClaimedEffect&) { return Delivery::Failed("auto-merge refused: not counted: bob (read)"); });
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].effect.payload["head_sha"], "abc");

  // A new head approved: a new attempt, which merges; the Ticket ends.
  Receive(approval("rv4", "carol", "def"));
  claimed = DeliverDue([](const ClaimedEffect&) { return Delivery::Done("merge-sha"); });
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(views_->GetTicket(t)->end_reason, "pull request #42 merged by the auto-merge guard");
  EXPECT_EQ(Ok(views_->TicketPulls(t))[0].state, "merged");
}

TEST_F(EnginePullsTest, AnExplicitRequestsPullRequestIsNeverAutoMerged) {
  Open(MakePolicy("auto", "instructions: Keep the change to the text in question.=>"
                          "instructions: Keep the change to the text in question.\n    auto_merge: {enabled: true}"));
  TicketId t = TicketWithPull();
  Trigger r = Comment("rv1", "bob", false, "LGTM");
  r.threads = {"github:acme/widgets:pull:42"};
  r.channel = "github:acme/widgets:pull:42";
  r.meta = {{"type", "review"}, {"state", "approved"}, {"commit_id", "abc"}};
  Receive(r);
  for (const ClaimedEffect& c : Ok(engine_->ClaimDueEffects(10))) EXPECT_NE(c.effect.kind, "merge_pull_request");
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady) << "a person merges what a person asked for";
}

// Issue 34: a review its Source marks as asking for nothing (a bare approval) is context wherever
// it goes — an open Ticket's next turn sees it, but it starts none, resumes no ended Ticket and
// answers no question — while the auto-merge guard still counts it.
TEST_F(EnginePullsTest, AnApprovalWithoutWordsIsContextAndStartsNoTurn) {
  Open(MakePolicy("auto", "instructions: Keep the change to the text in question.=>"
                          "instructions: Keep the change to the text in question.\n    auto_merge: {enabled: true}"));
  Receive(Comment("c1", "alice", false, "There is a typo in the README: teh → the"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId t = Ok(ExplainNow("c1"))["ticket_created"]["id"];
  ReadyTurn(t, true);
  DeliverDue(Sent);
  DeliverDue(Sent);
  auto review = [&](const std::string& id, const std::string& who, const std::string& state, bool asks_nothing) {
    Trigger r = Comment(id, who, false, "Review: " + state, 1);
    r.threads = {"github:acme/widgets:pull:42"};
    r.channel = "github:acme/widgets:pull:42";
    r.meta = {{"type", "review"}, {"state", state}, {"commit_id", "abc"}};
    if (asks_nothing) r.meta["asks_nothing"] = true;
    return r;
  };
  auto follow_ups = [&] { return Ok(engine_->AssignFollowUps()); };

  // alice (who asked) approves without a word: the guard is asked, no turn is started.
  Receive(review("rv1", "alice", "approved", true));
  EXPECT_EQ(LastInputState(t), "context");
  EXPECT_EQ(follow_ups(), 0);
  auto claimed = DeliverDue([](const ClaimedEffect&) { return Delivery::Failed("auto-merge refused: needs 2 approvals"); });
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].effect.kind, "merge_pull_request") << "a bare approval still counts for auto-merge";
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady);

  // Words, or changes requested, ask for something: a turn.
  Receive(review("rv2", "bob", "changes_requested", false));
  EXPECT_EQ(LastInputState(t), "pending");
  EXPECT_EQ(follow_ups(), 1);
}

TEST_F(EnginePullsTest, AnApprovalWithoutWordsResumesNoEndedTicketAndAnswersNoQuestion) {
  TicketId t = TicketWithPull();
  auto bare = [&](const std::string& id, const std::string& who) {
    Trigger r = Comment(id, who, false, "Review: approved", 1);
    r.threads = {"github:acme/widgets:pull:42"};
    r.channel = "github:acme/widgets:pull:42";
    r.meta = {{"type", "review"}, {"state", "approved"}, {"commit_id", "abc"}, {"asks_nothing", true}};
    return r;
  };
  // A question waits for alice on the PR: her bare approval is not her answer.
  HumanAction ask;
  ask.thread = "github:acme/widgets:pull:42";
  ask.actor = "alice";
  ask.question = "Which file should the fix go in?";
  ASSERT_TRUE(EngineTestPeer(*engine_).AskPerson(t, ask, "ask:1").ok());
  IntakeResult r = Receive(bare("rv1", "alice"));
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(LastInputState(t), "context");
  EXPECT_EQ(Ok(views_->TicketInputs(t)).back().kind, "trigger");

  // Ended: a person's bare approval is context for a later resume, not a resume.
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(t, "done").ok());
  r = Receive(bare("rv2", "alice"));
  EXPECT_TRUE(r.resumed.empty());
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kEnded);
  EXPECT_EQ(LastInputState(t), "context");
  // A wrongly typed mark is no mark: the message is an ordinary one (and resumes the Ticket).
  Trigger odd = bare("rv3", "alice");
  odd.meta["asks_nothing"] = "yes";
  r = Receive(odd);
  EXPECT_EQ(r.resumed, std::vector<TicketId>{t});
}

TEST_F(EnginePullsTest, AReviewsBurstOfCommentsIsOneTurn) {
  options_.follow_up_settle_ms = 3000;
  Open(MakePolicy("observe"));
  TicketId t = TicketWithPull();
  for (int i = 0; i < 3; ++i) {
    Trigger c = Comment("rc" + std::to_string(i), "bob", false, "nit " + std::to_string(i) + ": 改一下");
    c.threads = {"github:acme/widgets:pull:42:review:9", "github:acme/widgets:pull:42"};
    c.channel = "github:acme/widgets:pull:42:review:9";
    Receive(c);
    EXPECT_EQ(Ok(engine_->AssignFollowUps()), 0) << "the burst has not settled";
    clock_.Advance(1000);
  }
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 0);
  clock_.Advance(2000);
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 1) << "one turn for the three comments";
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 0);
  EXPECT_EQ(Ok(views_->Assignments(t)).back().state, "pending");
}

// Issue 23 (SPEC §5, §12): work asked for in a chat lives on in a GitHub PR. A message in the
// chat that quotes the PR's link — or the request's issue link — reaches the Ticket that owns it
// as data for its next turn, instead of starting a new Eval; a link that only starts the same
// (pull/421) is another PR; an ended Ticket is not resumed from afar.
TEST_F(EnginePullsTest, AMessageElsewhereQuotingTheTicketsLinkReachesThatTicket) {
  TicketId t = TicketWithPull();
  // explain shows every place the Ticket is discussed.
  EXPECT_EQ(Ok(ExplainNow("c1"))["ticket_created"]["threads"],
            json({"github:acme/widgets:ci:superagent/ticket-1", "github:acme/widgets:issue:1", "github:acme/widgets:pull:42"}))
      << "subscribed in one transaction: in key order";
  auto chat = [&](const std::string& id, const std::string& text) { return FeishuMessage(id, text); };
  IntakeResult r = Receive(chat("om_q1", "评审意见在这里 https://github.com/o/r/pull/42 👀"));
  EXPECT_EQ(r.delivered_to, std::vector<TicketId>{t});
  EXPECT_FALSE(r.queued_for_eval);
  auto inputs = Ok(views_->TicketInputs(t));
  ASSERT_FALSE(inputs.empty());
  EXPECT_EQ(inputs.back().state, "pending");
  EXPECT_EQ(inputs.back().body["quoted_link"], true);
  EXPECT_EQ(Receive(chat("om_q2", "and https://github.com/o/r/issues/1, the original")).delivered_to, std::vector<TicketId>{t});
  IntakeResult other = Receive(chat("om_q3", "unrelated: https://github.com/o/r/pull/421"));
  EXPECT_TRUE(other.delivered_to.empty());
  EXPECT_TRUE(other.queued_for_eval);
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(t, "done").ok());
  IntakeResult late = Receive(chat("om_q4", "https://github.com/o/r/pull/42 again?"));
  EXPECT_TRUE(late.delivered_to.empty()) << "an ended Ticket resumes only from its own Threads";
  EXPECT_TRUE(late.resumed.empty());
  EXPECT_TRUE(late.queued_for_eval);
}

// Issue 23 (SPEC §12: one Ticket linked across a GitHub discussion and a Feishu thread): work
// asked for in a Feishu topic gets its PR on GitHub; the result goes back to the topic once, with
// the PR's link; a review comment on the PR reaches the same Ticket; explain shows both places.
TEST_F(EnginePullsTest, WorkAskedForInAFeishuTopicIsOneTicketWithItsPullRequestOnGitHub) {
  Receive(FeishuMessage("om_ask", "@Agent 请修复 README 里的错别字", true, "omt_1"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId t = Ok(ExplainNow("feishu:om_ask"))["ticket_created"]["id"].get<TicketId>();
  ReadyTurn(t, true);
  auto first = DeliverDue(Sent);
  for (const ClaimedEffect& c : first)
    if (c.effect.kind == "open_pull_request") {
      EXPECT_EQ(c.effect.payload["requested_via"], "feishu");
      EXPECT_FALSE(c.effect.payload.contains("discussion_url")) << "a chat has no link, and its words stay there";
    }
  DeliverDue(Sent);
  int results = 0;
  for (const Receipt& r : Ok(views_->Receipts(std::nullopt)))
    if (r.kind == MessageKind::kResult) {
      ++results;
      EXPECT_EQ(r.channel, "feishu:chat:oc_support:reply:om_ask:thread");
      EXPECT_EQ(r.body, "Fixed the typo.\n\nPull request: https://github.com/o/r/pull/42");
    }
  EXPECT_EQ(results, 1);

  Trigger review;
  review.id = "github:review-comment:5";
  review.source = "github";
  review.scope = "comments";
  review.actor = "bob";
  review.human = true;
  review.text = "这里少了一个逗号";
  review.at = clock_.NowMs();
  review.threads = {"github:acme/widgets:pull:42"};
  review.channel = "github:acme/widgets:pull:42:review:5";
  EXPECT_EQ(Receive(review).delivered_to, std::vector<TicketId>{t}) << "the PR's discussion reaches the same Ticket";
  const json threads = Ok(ExplainNow("feishu:om_ask"))["ticket_created"]["threads"];
  EXPECT_NE(std::find(threads.begin(), threads.end(), "feishu:thread:omt_1"), threads.end()) << threads.dump();
  EXPECT_NE(std::find(threads.begin(), threads.end(), "github:acme/widgets:pull:42"), threads.end()) << threads.dump();
}

// Issue 23 (SPEC §12): the issues a Ticket's PR says it closes are its discussion too — their
// comments reach the Ticket as its PR's do. Only GitHub's closing keywords name one: a mention, a
// keyword glued to the number, or another repository's issue does not.
TEST_F(EnginePullsTest, TheIssuesItsPullRequestClosesReachTheTicket) {
  TicketId t = AcceptedTicket("c1");
  ReadyTurn(t, true, "Fixed the typo.",
            "修复错别字 🎉 Fixes #7, CLOSES: #8 and resolved #7 again.\nSee #9; fixes#11; fixes other/repo#10; "
            "fixes #12abc; fixes #99999999999999999999");
  DeliverDue(Sent);
  DeliverDue(Sent);
  const json threads = Ok(ExplainNow("c1"))["ticket_created"]["threads"];
  EXPECT_EQ(threads, json({"github:acme/widgets:ci:superagent/ticket-1", "github:acme/widgets:issue:1", "github:acme/widgets:issue:7", "github:acme/widgets:issue:8",
                           "github:acme/widgets:pull:42"}));
  IntakeResult r = Receive(IssueComment("70", 7, "我在 Safari 上也看到了"));
  EXPECT_EQ(r.delivered_to, std::vector<TicketId>{t});
  EXPECT_FALSE(r.queued_for_eval);
  IntakeResult mention = Receive(IssueComment("90", 9, "unrelated"));
  EXPECT_TRUE(mention.delivered_to.empty()) << "#9 was only mentioned";
}

// Issue 23: a message on GitHub that names a live Ticket's Feishu topic id (the panel shows it
// under "Discussed in"; Feishu's shared links are opaque) reaches that Ticket; a longer id, or one
// glued to a word, is another topic.
TEST_F(EnginePullsTest, AMessageNamingTheTicketsFeishuTopicReachesIt) {
  Receive(FeishuMessage("om_ask", "@Agent 请修复 README 里的错别字", true, "omt_1"));
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId t = Ok(ExplainNow("feishu:om_ask"))["ticket_created"]["id"].get<TicketId>();
  IntakeResult near = Receive(IssueComment("1", 50, "see omt_12 and xomt_1 ✨"));
  EXPECT_TRUE(near.delivered_to.empty());
  EXPECT_TRUE(near.queued_for_eval);
  IntakeResult r = Receive(IssueComment("2", 51, "讨论见飞书话题 omt_1。"));
  EXPECT_EQ(r.delivered_to, std::vector<TicketId>{t});
  EXPECT_FALSE(r.queued_for_eval);
  EXPECT_EQ(Ok(views_->TicketInputs(t)).back().body["quoted_link"], true);
}

// Issue 25: with check runs on (a GitHub App), every stage change of a Ticket with an open PR is
// one check_run Effect in the same transaction, numbered by its history line so a late retry can
// never show an older stage; nothing before the PR exists, after it is merged, or with them off.
TEST_F(EnginePullsTest, WithCheckRunsEachStageChangeOfATicketWithAnOpenPullRequestIsOneCheckRunEffect) {
  options_.check_runs = true;
  options_.panel_url = "https://agent.example.com";
  Open(MakePolicy("observe"));
  auto check_runs = [&](const std::vector<ClaimedEffect>& claimed) {
    std::vector<json> out;
    for (const ClaimedEffect& c : claimed)
      if (c.effect.kind == "check_run") out.push_back(c.effect.payload);
    return out;
  };
  TicketId t = AcceptedTicket("c1");
  ReadyTurn(t, true);
  auto first = DeliverDue(Sent);  // the acknowledgement and the PR: the Ticket was ready before its PR existed
  EXPECT_TRUE(check_runs(first).empty());
  auto second = DeliverDue(Sent);  // the result, and the check run the new PR gets at once
  auto opened = check_runs(second);
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened[0]["channel"], "github:acme/widgets");
  EXPECT_EQ(opened[0]["ticket"], t);
  EXPECT_EQ(opened[0]["number"], 42);
  EXPECT_EQ(opened[0]["stage"], "ready");
  EXPECT_EQ(opened[0]["cause"], "pull request opened");
  EXPECT_EQ(opened[0]["title"], "Ticket #" + std::to_string(t) + " is ready for review");
  EXPECT_EQ(opened[0]["details_url"], "https://agent.example.com/#ticket-" + std::to_string(t));

  ASSERT_TRUE(EngineTestPeer(*engine_).SetStage(t, Stage::kWorking, "a review asked for more").ok());
  ASSERT_TRUE(EngineTestPeer(*engine_).SetStage(t, Stage::kBlocked, "tests fail: 测试失败 🧪").ok());
  auto moved = check_runs(DeliverDue(Sent));
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved[0]["stage"], "working");
  EXPECT_EQ(moved[1]["stage"], "blocked");
  EXPECT_EQ(moved[1]["cause"], "reported");
  EXPECT_NE(moved[1]["summary"].get<std::string>().find("tests fail: 测试失败 🧪"), std::string::npos) << moved[1];
  EXPECT_LT(opened[0]["at"].get<std::int64_t>(), moved[0]["at"].get<std::int64_t>());
  EXPECT_LT(moved[0]["at"].get<std::int64_t>(), moved[1]["at"].get<std::int64_t>())
      << "two changes in the same millisecond are still ordered";
  EXPECT_NE(moved[0]["idempotency_key"], moved[1]["idempotency_key"]);

  // Merged: the PR is no longer open, so the Ticket's end shows nowhere.
  ASSERT_TRUE(Receive(Closed("github:acme/widgets:pull:42:closed", true, "bob")).outcome == IntakeOutcome::kStored);
  EXPECT_EQ(Ok(views_->GetTicket(t)).stage, Stage::kEnded);
  EXPECT_TRUE(check_runs(DeliverDue(Sent)).empty());
}

TEST_F(EnginePullsTest, WithoutCheckRunsAStageChangeEnqueuesNone) {
  TicketId t = TicketWithPull();
  ASSERT_TRUE(EngineTestPeer(*engine_).SetStage(t, Stage::kWorking, "again").ok());
  for (const ClaimedEffect& c : DeliverDue(Sent)) EXPECT_NE(c.effect.kind, "check_run");
}

}  // namespace
}  // namespace superagent::testing
