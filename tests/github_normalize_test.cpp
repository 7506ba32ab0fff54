// Normalization of real GitHub payloads (@octokit/webhooks-examples) into Triggers, and the
// mention rules that decide `addressed`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_github_server.h"
#include "superagent/github.h"

namespace superagent::github {
namespace {

using ::testing::HasSubstr;
using superagent::testing::WebhookExample;

const NormalizeContext kCtx{"Codertocat/Hello-World", "superagent-bot"};

TEST(GitHubNormalizeTest, IssueCommentFromARealPayload) {
  nlohmann::json p = WebhookExample("issue_comment", "created");
  Normalized n = NormalizeIssueComment(p["comment"], kCtx, p["issue"].contains("pull_request"));
  ASSERT_EQ(n.kind, Normalized::Kind::kTrigger) << n.why;
  const Trigger& t = n.trigger;
  EXPECT_EQ(t.id, "github:comment:492700400@2019-05-15T15:20:21Z");
  EXPECT_EQ(t.source, "github");
  EXPECT_EQ(t.scope, "comments");
  EXPECT_EQ(t.actor, "Codertocat");
  EXPECT_TRUE(t.human);
  EXPECT_FALSE(t.addressed);
  EXPECT_EQ(t.text, "You are totally right! I'll get this fixed right away.");
  EXPECT_EQ(t.threads, (std::vector<std::string>{"github:issue:1"}));
  EXPECT_EQ(t.channel, "github:issue:1");
  EXPECT_EQ(t.meta["html_url"], "https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400");
  EXPECT_EQ(TriggerUrl(t), "https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400");
  TimeMs at = 0;
  ASSERT_TRUE(ParseTime("2019-05-15T15:20:21Z", &at));
  EXPECT_EQ(t.at, at);
}

TEST(GitHubNormalizeTest, EditedCommentIsANewVersion) {
  nlohmann::json created = WebhookExample("issue_comment", "created")["comment"];
  nlohmann::json edited = WebhookExample("issue_comment", "edited")["comment"];
  Normalized a = NormalizeIssueComment(created, kCtx), b = NormalizeIssueComment(edited, kCtx);
  ASSERT_EQ(a.kind, Normalized::Kind::kTrigger);
  ASSERT_EQ(b.kind, Normalized::Kind::kTrigger);
  EXPECT_EQ(b.trigger.id, "github:comment:492700400@2019-05-15T15:20:22Z");
  EXPECT_NE(a.trigger.id, b.trigger.id);
}

TEST(GitHubNormalizeTest, MentionMakesItAddressedAndOwnCommentsAreMarked) {
  nlohmann::json c = WebhookExample("issue_comment", "created")["comment"];
  c["body"] = "@superagent-bot please fix the typo in README";
  EXPECT_TRUE(NormalizeIssueComment(c, kCtx).trigger.addressed);
  c["user"]["login"] = "superagent-bot";
  Normalized own = NormalizeIssueComment(c, kCtx);
  EXPECT_EQ(own.trigger.meta["own"], true);
  c["user"]["login"] = "dependabot[bot]";
  c["user"]["type"] = "Bot";
  EXPECT_FALSE(NormalizeIssueComment(c, kCtx).trigger.human);
}

TEST(GitHubNormalizeTest, ReviewCommentCarriesPathLineAndHunk) {
  nlohmann::json p = WebhookExample("pull_request_review_comment", "created", 1);
  Normalized n = NormalizeReviewComment(p["comment"], kCtx);
  ASSERT_EQ(n.kind, Normalized::Kind::kTrigger) << n.why;
  const Trigger& t = n.trigger;
  EXPECT_EQ(t.id, "github:review_comment:284312630@" + IsoSeconds([&] {
                    TimeMs x = 0;
                    ParseTime(p["comment"]["updated_at"].get<std::string>(), &x);
                    return x;
                  }()));
  EXPECT_EQ(t.threads, (std::vector<std::string>{"github:pull:2:review:284312630", "github:pull:2"}));
  EXPECT_EQ(t.channel, "github:pull:2:review:284312630");
  EXPECT_THAT(t.text, HasSubstr("README.md:265"));
  EXPECT_THAT(t.text, HasSubstr("@@ -1 +1 @@\n-# Hello-World"));
  EXPECT_THAT(t.text, HasSubstr("Maybe you should use more emoji on this line."));
  EXPECT_EQ(t.meta["path"], "README.md");
  EXPECT_EQ(t.meta["line"], 265);
}

TEST(GitHubNormalizeTest, ReplyJoinsTheTopCommentsThread) {
  nlohmann::json c = WebhookExample("pull_request_review_comment", "created", 1)["comment"];
  c["id"] = 999;
  c["in_reply_to_id"] = 284312630;
  Normalized n = NormalizeReviewComment(c, kCtx);
  ASSERT_EQ(n.kind, Normalized::Kind::kTrigger);
  EXPECT_EQ(n.trigger.channel, "github:pull:2:review:284312630");
}

TEST(GitHubNormalizeTest, LongHunksKeepTheirHeaderAndTail) {
  nlohmann::json c = WebhookExample("pull_request_review_comment", "created", 1)["comment"];
  std::string hunk = "@@ -1,40 +1,40 @@";
  for (int i = 1; i <= 40; ++i) hunk += "\n line " + std::to_string(i);
  c["diff_hunk"] = hunk;
  Normalized n = NormalizeReviewComment(c, kCtx);
  EXPECT_THAT(n.trigger.text, HasSubstr("@@ -1,40 +1,40 @@\n…\n line 30"));
  EXPECT_THAT(n.trigger.text, HasSubstr(" line 40\n```"));
  EXPECT_THAT(n.trigger.text, ::testing::Not(HasSubstr(" line 29\n")));
}

TEST(GitHubNormalizeTest, ReviewsFromRealPayloads) {
  nlohmann::json p = WebhookExample("pull_request_review", "submitted");
  // The recorded review is a "commented" review without text: its inline comments speak for it.
  EXPECT_EQ(NormalizeReview(p["review"], kCtx, p["pull_request"]["number"]).kind, Normalized::Kind::kSkip);
  nlohmann::json r = p["review"];
  r["state"] = "changes_requested";
  r["body"] = "@superagent-bot please split this function";
  Normalized n = NormalizeReview(r, kCtx, p["pull_request"]["number"]);
  ASSERT_EQ(n.kind, Normalized::Kind::kTrigger) << n.why;
  EXPECT_EQ(n.trigger.id, "github:review:237895671@2019-05-15T15:20:38Z");
  EXPECT_EQ(n.trigger.threads, (std::vector<std::string>{"github:pull:2"}));
  EXPECT_TRUE(n.trigger.addressed);
  EXPECT_THAT(n.trigger.text, HasSubstr("changes_requested"));
  r["state"] = "PENDING";
  EXPECT_EQ(NormalizeReview(r, kCtx, 2).kind, Normalized::Kind::kSkip);
}

TEST(GitHubNormalizeTest, IssuesAndPullRequestsFromRealPayloads) {
  nlohmann::json issue = WebhookExample("issues", "opened")["issue"];
  Normalized a = NormalizeIssue(issue, kCtx);
  ASSERT_EQ(a.kind, Normalized::Kind::kTrigger) << a.why;
  EXPECT_EQ(a.trigger.scope, "issues");
  EXPECT_EQ(a.trigger.threads, (std::vector<std::string>{"github:issue:1"}));
  EXPECT_EQ(a.trigger.id.rfind("github:issue:1@", 0), 0u);
  EXPECT_THAT(a.trigger.text, HasSubstr("Spelling error in the README file"));
  EXPECT_FALSE(a.trigger.addressed);
  // The same text from another path (another event's copy of the issue) is the same Trigger.
  nlohmann::json labeled = WebhookExample("issues", "labeled")["issue"];
  labeled["body"] = issue["body"];
  labeled["title"] = issue["title"];
  EXPECT_EQ(NormalizeIssue(labeled, kCtx).trigger.id, a.trigger.id);
  // An edited body is a new version; assigning the bot addresses it.
  issue["body"] = "Please fix it.";
  issue["assignees"] = nlohmann::json::array({{{"login", "superagent-bot"}}});
  Normalized b = NormalizeIssue(issue, kCtx);
  EXPECT_NE(b.trigger.id, a.trigger.id);
  EXPECT_TRUE(b.trigger.addressed);

  nlohmann::json pr = WebhookExample("pull_request", "review_requested")["pull_request"];
  pr["requested_reviewers"] = nlohmann::json::array({{{"login", "superagent-bot"}, {"type", "User"}}});
  Normalized c = NormalizeIssue(pr, kCtx, true);
  ASSERT_EQ(c.kind, Normalized::Kind::kTrigger) << c.why;
  EXPECT_EQ(c.trigger.scope, "pulls");
  EXPECT_EQ(c.trigger.threads, (std::vector<std::string>{"github:pull:2"}));
  EXPECT_TRUE(c.trigger.addressed);
  EXPECT_EQ(c.trigger.meta["head_ref"], "changes");
}

TEST(GitHubNormalizeTest, DefaultBranchCiFromRealPayloads) {
  nlohmann::json p = WebhookExample("workflow_run", "completed", 1);
  Normalized n = NormalizeWorkflowRun(p["workflow_run"], kCtx, p["repository"]["default_branch"]);
  ASSERT_EQ(n.kind, Normalized::Kind::kTrigger) << n.why;
  EXPECT_EQ(n.trigger.id, "github:ci:run:289782451@1");
  EXPECT_EQ(n.trigger.scope, "ci");
  EXPECT_FALSE(n.trigger.actor.has_value());
  EXPECT_FALSE(n.trigger.human);
  EXPECT_FALSE(n.trigger.addressed);
  EXPECT_EQ(n.trigger.threads, (std::vector<std::string>{"github:ci:master"}));
  EXPECT_EQ(n.trigger.channel, "github:commit:3484a3fb816e0859fd6e1cea078d76385ff50625");
  EXPECT_THAT(n.trigger.text, HasSubstr("finished: success"));
  EXPECT_EQ(NormalizeWorkflowRun(p["workflow_run"], kCtx, "main").kind, Normalized::Kind::kSkip);
  EXPECT_EQ(NormalizeWorkflowRun(WebhookExample("workflow_run", "requested")["workflow_run"], kCtx, "master").kind,
            Normalized::Kind::kSkip);

  // check_run example 1 is GitHub Actions' (read as its workflow run instead); 2 is another app's.
  nlohmann::json actions = WebhookExample("check_run", "completed", 0);
  EXPECT_EQ(NormalizeCheckRun(actions["check_run"], kCtx, "changes").kind, Normalized::Kind::kSkip);
  nlohmann::json other = WebhookExample("check_run", "completed", 1);
  Normalized c = NormalizeCheckRun(other["check_run"], kCtx, "changes");
  ASSERT_EQ(c.kind, Normalized::Kind::kTrigger) << c.why;
  EXPECT_EQ(c.trigger.id, "github:ci:check:128620228@2019-05-15T15:21:12Z");
  EXPECT_EQ(NormalizeCheckRun(other["check_run"], kCtx, other["repository"]["default_branch"]).kind,
            Normalized::Kind::kSkip);  // "changes" is not the default branch "master"
}

TEST(GitHubNormalizeTest, MalformedItemsAreReportedNotThrown) {
  EXPECT_EQ(NormalizeIssueComment(nlohmann::json::object(), kCtx).kind, Normalized::Kind::kMalformed);
  nlohmann::json c = WebhookExample("issue_comment", "created")["comment"];
  c["updated_at"] = "yesterday";
  Normalized n = NormalizeIssueComment(c, kCtx);
  EXPECT_EQ(n.kind, Normalized::Kind::kMalformed);
  EXPECT_THAT(n.why, HasSubstr("updated_at"));
  c = WebhookExample("issue_comment", "created")["comment"];
  c["body"] = 42;
  EXPECT_EQ(NormalizeIssueComment(c, kCtx).kind, Normalized::Kind::kMalformed);
  EXPECT_EQ(NormalizeReviewComment(nlohmann::json::array(), kCtx).kind, Normalized::Kind::kMalformed);
  EXPECT_EQ(NormalizeIssue("nope", kCtx).kind, Normalized::Kind::kMalformed);
  EXPECT_EQ(NormalizeWorkflowRun({{"id", 1}}, kCtx, "main").kind, Normalized::Kind::kMalformed);
}

TEST(GitHubMentionTest, CountsRealMentionsOnly) {
  const std::string bot = "superagent-bot";
  EXPECT_TRUE(Mentions("@superagent-bot fix it", bot));
  EXPECT_TRUE(Mentions("hey @SuperAgent-Bot, fix it.", bot));
  EXPECT_TRUE(Mentions("(@superagent-bot)", bot));
  EXPECT_TRUE(Mentions("line one\n@superagent-bot", bot));
  EXPECT_FALSE(Mentions("@superagent-bot2 fix it", bot));
  EXPECT_FALSE(Mentions("@superagent-bot-old fix it", bot));
  EXPECT_FALSE(Mentions("mail me@superagent-bot please", bot));
  EXPECT_FALSE(Mentions("@superagent", bot));
  EXPECT_FALSE(Mentions("`@superagent-bot` is our agent", bot));
  EXPECT_FALSE(Mentions("``x @superagent-bot y``", bot));
  EXPECT_FALSE(Mentions("> @superagent-bot fix it\n\nI disagree", bot));
  EXPECT_FALSE(Mentions("```\n@superagent-bot\n```", bot));
  EXPECT_TRUE(Mentions("```\ncode\n```\n@superagent-bot after the fence", bot));
  EXPECT_FALSE(Mentions("<!-- @superagent-bot -->", bot));
  EXPECT_FALSE(Mentions("@org/superagent-bot", bot));
  EXPECT_FALSE(Mentions("@superagent-bot/team", bot));
  EXPECT_TRUE(Mentions("@my-app please", "my-app[bot]"));
  EXPECT_FALSE(Mentions("@anyone", ""));
}

TEST(GitHubDiscussionTest, ThreadKeys) {
  auto d = DiscussionOf("github:pull:7:review:99");
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->pull);
  EXPECT_EQ(d->number, 7);
  EXPECT_EQ(d->Key(), "pull:7");
  EXPECT_EQ(DiscussionOf("github:issue:12")->Thread(), "github:issue:12");
  EXPECT_FALSE(DiscussionOf("github:ci:main").has_value());
  EXPECT_FALSE(DiscussionOf("github:issue:x").has_value());
  EXPECT_FALSE(DiscussionOf("feishu:chat:oc_1").has_value());
}

}  // namespace
}  // namespace superagent::github
