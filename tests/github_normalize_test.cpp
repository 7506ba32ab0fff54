// Normalization of real GitHub payloads (@octokit/webhooks-examples) into Triggers, and the
// mention rules that decide `addressed`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_github_server.h"
#include "superagent/github.h"
#include "sources/github/normalize.h"
#include "superagent/text.h"

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
  EXPECT_EQ(t.threads, (std::vector<std::string>{"github:codertocat/hello-world:issue:1"}));
  EXPECT_EQ(t.channel, "github:codertocat/hello-world:issue:1");
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
  EXPECT_EQ(t.threads, (std::vector<std::string>{"github:codertocat/hello-world:pull:2:review:284312630", "github:codertocat/hello-world:pull:2"}));
  EXPECT_EQ(t.channel, "github:codertocat/hello-world:pull:2:review:284312630");
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
  EXPECT_EQ(n.trigger.channel, "github:codertocat/hello-world:pull:2:review:284312630");
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
  EXPECT_EQ(n.trigger.threads, (std::vector<std::string>{"github:codertocat/hello-world:pull:2"}));
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
  EXPECT_EQ(a.trigger.threads, (std::vector<std::string>{"github:codertocat/hello-world:issue:1"}));
  EXPECT_EQ(a.trigger.id.rfind("github:codertocat/hello-world:issue:1@", 0), 0u);
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
  EXPECT_EQ(c.trigger.threads, (std::vector<std::string>{"github:codertocat/hello-world:pull:2"}));
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
  EXPECT_EQ(n.trigger.threads, (std::vector<std::string>{"github:codertocat/hello-world:ci:master"}));
  EXPECT_EQ(n.trigger.channel, "github:codertocat/hello-world:commit:3484a3fb816e0859fd6e1cea078d76385ff50625");
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

  // Issue 25: the daemon's own check run (its App's slug, or its external_id) is never CI news —
  // known even before GitHub has stamped it completed.
  nlohmann::json own = other["check_run"];
  own["external_id"] = "superagent-ticket-4@17";
  own.erase("completed_at");
  // Another App copying the daemon's external ids is still CI: it cannot hide its result.
  own["app"] = {{"slug", "buildkite"}};
  EXPECT_EQ(NormalizeCheckRun(own, kCtx, "changes").kind, Normalized::Kind::kMalformed) << "no completed_at: judged as CI";
  own.erase("app");  // an answer naming no App: the external_id says it is the agent's
  Normalized skipped = NormalizeCheckRun(own, kCtx, "changes");
  EXPECT_EQ(skipped.kind, Normalized::Kind::kSkip);
  EXPECT_THAT(skipped.why, HasSubstr("the agent's own check run"));
  NormalizeContext app_ctx = kCtx;
  app_ctx.bot_login = "Team-Agent[bot]";
  nlohmann::json by_app = other["check_run"];
  by_app["app"]["slug"] = "team-agent";
  EXPECT_EQ(NormalizeCheckRun(by_app, app_ctx, "changes").kind, Normalized::Kind::kSkip);
  by_app["app"]["slug"] = "team-agent-ci";  // another App's run on the same head is CI
  EXPECT_EQ(NormalizeCheckRun(by_app, app_ctx, "changes").kind, Normalized::Kind::kTrigger);
  by_app["external_id"] = 42;  // a wrong type is no claim of being ours
  EXPECT_EQ(NormalizeCheckRun(by_app, app_ctx, "changes").kind, Normalized::Kind::kTrigger);
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

// A merged pull request as GitHub sends it: the recorded "closed" example (closed unmerged by
// Codertocat) with the fields a merge sets.
nlohmann::json MergedPayload() {
  nlohmann::json p = WebhookExample("pull_request", "closed");
  p["pull_request"]["merged"] = true;
  p["pull_request"]["merged_at"] = p["pull_request"]["closed_at"];
  p["pull_request"]["merged_by"] = {{"login", "octocat"}, {"id", 583231}, {"type", "User"}};
  return p;
}

TEST(GitHubNormalizeTest, ClosedPullRequestFromTheRecordedPayload) {
  nlohmann::json p = WebhookExample("pull_request", "closed");
  std::optional<Normalized> n = NormalizeWebhook("pull_request", p, kCtx);
  ASSERT_TRUE(n.has_value());
  ASSERT_EQ(n->kind, Normalized::Kind::kTrigger) << n->why;
  const Trigger& t = n->trigger;
  EXPECT_EQ(t.id, "github:codertocat/hello-world:pull:2:closed@2019-05-15T15:21:18Z");
  EXPECT_EQ(t.scope, "pulls");
  EXPECT_EQ(t.actor, "Codertocat");  // the sender: who pressed "Close"
  EXPECT_TRUE(t.human);
  EXPECT_FALSE(t.addressed);
  EXPECT_EQ(t.text, "Pull request #2 was closed by Codertocat.\nUpdate the README with new information.");
  EXPECT_EQ(t.threads, (std::vector<std::string>{"github:codertocat/hello-world:pull:2"}));
  EXPECT_EQ(t.channel, "github:codertocat/hello-world:pull:2");
  EXPECT_EQ(t.meta["type"], "pull_request_closed");
  EXPECT_EQ(t.meta["number"], 2);
  EXPECT_EQ(t.meta["merged"], false);
  EXPECT_EQ(t.meta["merged_by"], "");
  EXPECT_EQ(t.meta["html_url"], "https://github.com/Codertocat/Hello-World/pull/2");
  TimeMs at = 0;
  ASSERT_TRUE(ParseTime("2019-05-15T15:21:18Z", &at));
  EXPECT_EQ(t.at, at);
  // The thread key is the one the PR's own text is filed under.
  EXPECT_EQ(t.threads, NormalizeIssue(p["pull_request"], kCtx, true).trigger.threads);
}

TEST(GitHubNormalizeTest, MergedPullRequestNamesWhoMergedItWithTheSameId) {
  nlohmann::json p = MergedPayload();
  p["sender"]["login"] = "someone-else";  // the merger is merged_by, whoever the sender was
  std::optional<Normalized> n = NormalizeWebhook("pull_request", p, kCtx);
  ASSERT_TRUE(n.has_value());
  ASSERT_EQ(n->kind, Normalized::Kind::kTrigger) << n->why;
  EXPECT_EQ(n->trigger.id, "github:codertocat/hello-world:pull:2:closed@2019-05-15T15:21:18Z");
  EXPECT_EQ(n->trigger.actor, "octocat");
  EXPECT_EQ(n->trigger.text, "Pull request #2 was merged by octocat.\nUpdate the README with new information.");
  EXPECT_EQ(n->trigger.meta["merged"], true);
  EXPECT_EQ(n->trigger.meta["merged_by"], "octocat");
  // Polled, the same pull request (no sender) is the same Trigger.
  Normalized polled = NormalizePullClosed(p["pull_request"], kCtx);
  ASSERT_EQ(polled.kind, Normalized::Kind::kTrigger);
  EXPECT_EQ(polled.trigger.id, n->trigger.id);
  EXPECT_EQ(polled.trigger.actor, "octocat");

  // Bots and the agent itself follow the rules every Trigger follows.
  p["pull_request"]["merged_by"] = {{"login", "mergify[bot]"}, {"type", "Bot"}};
  EXPECT_FALSE(NormalizePullClosed(p["pull_request"], kCtx).trigger.human);
  p["pull_request"]["merged_by"] = {{"login", "SuperAgent-Bot"}, {"type", "User"}};
  EXPECT_EQ(NormalizePullClosed(p["pull_request"], kCtx).trigger.meta["own"], true);
  // merged_by null (GitHub leaves it out of some answers): the sender merged it.
  p["pull_request"]["merged_by"] = nullptr;
  p["sender"]["login"] = "Codertocat";
  EXPECT_EQ(NormalizeWebhook("pull_request", p, kCtx)->trigger.meta["merged_by"], "Codertocat");
  // Nobody named at all (polled, closed_by unknown): no actor, and the text does not invent one.
  nlohmann::json closed = WebhookExample("pull_request", "closed")["pull_request"];
  Normalized anon = NormalizePullClosed(closed, kCtx);
  ASSERT_EQ(anon.kind, Normalized::Kind::kTrigger);
  EXPECT_FALSE(anon.trigger.actor.has_value());
  EXPECT_FALSE(anon.trigger.human);
  EXPECT_EQ(anon.trigger.text, "Pull request #2 was closed.\nUpdate the README with new information.");
}

TEST(GitHubNormalizeTest, AnOpenPullRequestIsNoClosing) {
  nlohmann::json pr = WebhookExample("pull_request", "opened")["pull_request"];
  EXPECT_EQ(NormalizePullClosed(pr, kCtx).kind, Normalized::Kind::kSkip);
  // Other pull_request actions stay what they were.
  EXPECT_EQ(NormalizeWebhook("pull_request", WebhookExample("pull_request", "opened"), kCtx)->trigger.id.find(":closed"),
            std::string::npos);
  EXPECT_FALSE(NormalizeWebhook("pull_request", WebhookExample("pull_request", "labeled"), kCtx).has_value());
}

TEST(GitHubNormalizeTest, ClosedPullRequestWithWrongTypesIsMalformedNeverThrown) {
  struct Case {
    std::function<void(nlohmann::json&)> spoil;
    const char* says;
  };
  const std::vector<Case> cases = {
      {[](nlohmann::json& p) { p["pull_request"]["number"] = "2"; }, "no number"},
      {[](nlohmann::json& p) { p["pull_request"]["number"] = -2; }, "no number"},
      {[](nlohmann::json& p) { p["pull_request"]["state"] = 5; }, "no state"},
      {[](nlohmann::json& p) { p["pull_request"]["closed_at"] = 17; }, "closed_at"},
      {[](nlohmann::json& p) { p["pull_request"]["closed_at"] = "昨天"; }, "closed_at"},
      {[](nlohmann::json& p) { p["pull_request"]["closed_at"] = nullptr; }, "closed_at"},
      {[](nlohmann::json& p) { p["pull_request"]["merged"] = "yes"; }, "merged is not true or false"},
      {[](nlohmann::json& p) { p["pull_request"]["title"] = {{"text", "x"}}; }, "title is not text"},
      {[](nlohmann::json& p) {
         p["pull_request"]["merged"] = true;
         p["pull_request"]["merged_by"] = "octocat";
       },
       "merged_by is not an account"},
      {[](nlohmann::json& p) {
         p["pull_request"]["merged"] = true;
         p["pull_request"]["merged_by"] = {{"login", nullptr}};
       },
       "has no login"},
      {[](nlohmann::json& p) { p["sender"] = nlohmann::json::array({"Codertocat"}); }, "not an account"},
      {[](nlohmann::json& p) { p["sender"] = {{"login", 42}}; }, "has no login"},
      {[](nlohmann::json& p) { p["pull_request"] = "closed"; }, "no number"},
  };
  for (const Case& c : cases) {
    nlohmann::json p = WebhookExample("pull_request", "closed");
    c.spoil(p);
    std::optional<Normalized> n;
    ASSERT_NO_THROW(n = NormalizeWebhook("pull_request", p, kCtx)) << p.dump();
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(n->kind, Normalized::Kind::kMalformed) << c.says;
    EXPECT_THAT(n->why, HasSubstr(c.says));
  }
  // Any text is a title: Chinese, emoji, a megabyte, bytes that are not UTF-8.
  for (const std::string& title : {std::string("修复登录页的错别字 🎉"), std::string(1 << 20, 'x'), std::string("bad \xff\xfe")}) {
    nlohmann::json p = WebhookExample("pull_request", "closed");
    p["pull_request"]["title"] = title;
    Normalized n = NormalizePullClosed(p["pull_request"], kCtx, p["sender"]);
    ASSERT_EQ(n.kind, Normalized::Kind::kTrigger);
    EXPECT_EQ(n.trigger.text, "Pull request #2 was closed by Codertocat.\n" + title);
  }
}

TEST(GitHubNormalizeTest, CiOnATrackedPullRequestsHeadBranch) {
  NormalizeContext ctx = kCtx;
  ctx.tracked = {TrackedPull{7, "Codertocat/Hello-World", 2, "changes"}};
  // check_run example 2 is another app's check on "changes", the head of PR #2; default is "master".
  nlohmann::json p = WebhookExample("check_run", "completed", 1);
  std::optional<Normalized> c = NormalizeWebhook("check_run", p, ctx);
  ASSERT_TRUE(c.has_value());
  ASSERT_EQ(c->kind, Normalized::Kind::kTrigger) << c->why;
  EXPECT_EQ(c->trigger.id, "github:ci:check:128620228@2019-05-15T15:21:12Z");  // as a default-branch check
  EXPECT_EQ(c->trigger.scope, "ci");
  EXPECT_EQ(c->trigger.threads, (std::vector<std::string>{"github:codertocat/hello-world:ci:changes"}));
  EXPECT_EQ(c->trigger.channel, "github:codertocat/hello-world:commit:ec26c3e57ca3a959ca5aad62de7213c562f8c821");
  EXPECT_EQ(c->trigger.meta["pull_number"], 2);
  EXPECT_FALSE(c->trigger.actor.has_value());
  // Untracked, the same check on a non-default branch is skipped as before.
  std::optional<Normalized> untracked = NormalizeWebhook("check_run", p, kCtx);
  ASSERT_TRUE(untracked.has_value());
  EXPECT_EQ(untracked->kind, Normalized::Kind::kSkip);
  ctx.tracked = {TrackedPull{7, "Codertocat/Hello-World", 3, "other-branch"}};
  EXPECT_EQ(NormalizeWebhook("check_run", p, ctx)->kind, Normalized::Kind::kSkip);

  // A workflow run on the tracked branch (the recorded run, moved to "changes").
  ctx.tracked = {TrackedPull{7, "Codertocat/Hello-World", 2, "changes"}};
  nlohmann::json run = WebhookExample("workflow_run", "completed", 1);
  run["workflow_run"]["head_branch"] = "changes";
  run["workflow_run"]["conclusion"] = "failure";
  std::optional<Normalized> w = NormalizeWebhook("workflow_run", run, ctx);
  ASSERT_TRUE(w.has_value());
  ASSERT_EQ(w->kind, Normalized::Kind::kTrigger) << w->why;
  EXPECT_EQ(w->trigger.id, "github:ci:run:289782451@1");
  EXPECT_EQ(w->trigger.threads, (std::vector<std::string>{"github:codertocat/hello-world:ci:changes"}));
  EXPECT_THAT(w->trigger.text, HasSubstr("finished: failure"));
  EXPECT_EQ(w->trigger.meta["pull_number"], 2);
  EXPECT_EQ(NormalizeWebhook("workflow_run", run, kCtx)->kind, Normalized::Kind::kSkip);
  // Default-branch CI carries no pull number; a tracked entry with no branch matches nothing.
  nlohmann::json on_master = WebhookExample("workflow_run", "completed", 1);
  EXPECT_FALSE(NormalizeWebhook("workflow_run", on_master, ctx)->trigger.meta.contains("pull_number"));
  ctx.tracked = {TrackedPull{7, "Codertocat/Hello-World", 2, ""}, TrackedPull{8, "Codertocat/Hello-World", 0, "changes"}};
  EXPECT_EQ(NormalizeWebhook("workflow_run", run, ctx)->kind, Normalized::Kind::kSkip);
  // Wrong types in a tracked branch's run are still refused with the field.
  ctx.tracked = {TrackedPull{7, "Codertocat/Hello-World", 2, "changes"}};
  run["workflow_run"]["updated_at"] = 12;
  EXPECT_EQ(NormalizeWebhook("workflow_run", run, ctx)->kind, Normalized::Kind::kMalformed);
  run["workflow_run"]["head_branch"] = nlohmann::json::array({"changes"});
  EXPECT_EQ(NormalizeWebhook("workflow_run", run, ctx)->kind, Normalized::Kind::kMalformed);
  p["check_run"]["check_suite"]["head_branch"] = 7;
  EXPECT_NE(NormalizeWebhook("check_run", p, ctx)->kind, Normalized::Kind::kTrigger);
}

TEST(GitHubNormalizeTest, ReviewCarriesItsLowerCaseStateAndTheCommitItReviewed) {
  nlohmann::json p = WebhookExample("pull_request_review", "submitted");
  p["review"]["body"] = "Looks good";
  std::optional<Normalized> n = NormalizeWebhook("pull_request_review", p, kCtx);
  ASSERT_TRUE(n.has_value());
  ASSERT_EQ(n->kind, Normalized::Kind::kTrigger) << n->why;
  EXPECT_EQ(n->trigger.meta["state"], "commented");
  EXPECT_EQ(n->trigger.meta["commit_id"], "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
  for (const auto& [rest, lower] : std::vector<std::pair<std::string, std::string>>{
           {"APPROVED", "approved"}, {"CHANGES_REQUESTED", "changes_requested"}, {"DISMISSED", "dismissed"}}) {
    nlohmann::json r = p["review"];
    r["state"] = rest;  // REST answers say it in upper case
    Normalized polled = NormalizeReview(r, kCtx, 2);
    ASSERT_EQ(polled.kind, Normalized::Kind::kTrigger) << polled.why;
    EXPECT_EQ(polled.trigger.meta["state"], lower);
    EXPECT_EQ(polled.trigger.id, n->trigger.id);
  }
  nlohmann::json r = p["review"];
  r["commit_id"] = 5;  // a wrong type loses the commit, not the review
  Normalized odd = NormalizeReview(r, kCtx, 2);
  ASSERT_EQ(odd.kind, Normalized::Kind::kTrigger);
  EXPECT_FALSE(odd.trigger.meta.contains("commit_id"));
}

// Issue 34: an approval with no words asks for nothing (it is context, and counts for auto-merge);
// a review asks for something when it requests changes or says something — in any script.
TEST(GitHubNormalizeTest, AReviewAsksForSomethingOnlyWithWordsOrRequestedChanges) {
  const nlohmann::json recorded = WebhookExample("pull_request_review", "submitted")["review"];
  auto review = [&](const std::string& state, const nlohmann::json& body) {
    nlohmann::json r = recorded;
    r["state"] = state;
    r["body"] = body;
    return NormalizeReview(r, kCtx, 2);
  };
  // Nothing to read: empty, null, spaces and newlines, ideographic and no-break spaces, a
  // zero-width space, full-width punctuation.
  for (const nlohmann::json& nothing :
       {nlohmann::json(""), nlohmann::json(nullptr), nlohmann::json(" \r\n\t "), nlohmann::json("\u3000\u00a0\u200b"),
        nlohmann::json("\uff0c\u3002")}) {
    for (const char* state : {"APPROVED", "approved", "DISMISSED"}) {
      Normalized n = review(state, nothing);
      ASSERT_EQ(n.kind, Normalized::Kind::kTrigger) << state << " " << nothing.dump() << ": " << n.why;
      EXPECT_EQ(n.trigger.meta.value("asks_nothing", false), true) << state << " " << nothing.dump();
      EXPECT_EQ(n.trigger.meta["state"], text::AsciiLower(state));  // still an approval the guard counts
    }
    // A "commented" review without words only wraps its inline comments: not taken at all.
    EXPECT_EQ(review("COMMENTED", nothing).kind, Normalized::Kind::kSkip) << nothing.dump();
    // Changes requested ask for something, even without words.
    Normalized changes = review("CHANGES_REQUESTED", nothing);
    ASSERT_EQ(changes.kind, Normalized::Kind::kTrigger);
    EXPECT_FALSE(changes.trigger.meta.contains("asks_nothing"));
  }
  // Words in any script, an emoji, even bytes that are not UTF-8: something was said.
  for (const std::string& words : {std::string("LGTM"), std::string("  好的，请合并  "), std::string("👍"),
                                   std::string("ok \xff\xfe")}) {
    for (const char* state : {"APPROVED", "COMMENTED", "DISMISSED"}) {
      Normalized n = review(state, words);
      ASSERT_EQ(n.kind, Normalized::Kind::kTrigger) << state << ": " << n.why;
      EXPECT_FALSE(n.trigger.meta.contains("asks_nothing")) << state << " " << nlohmann::json(text::Repair(words));
    }
  }
  // A huge body of spaces is still nothing; a wrongly typed body is malformed, never "nothing".
  EXPECT_EQ(review("APPROVED", std::string(1 << 20, ' ')).trigger.meta.value("asks_nothing", false), true);
  EXPECT_EQ(review("APPROVED", 42).kind, Normalized::Kind::kMalformed);
  EXPECT_EQ(review("APPROVED", nlohmann::json::array({"LGTM"})).kind, Normalized::Kind::kMalformed);
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
  auto d = DiscussionOf("github:codertocat/hello-world:pull:7:review:99");
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->pull);
  EXPECT_EQ(d->number, 7);
  EXPECT_EQ(d->Key(), "pull:7");
  EXPECT_EQ(DiscussionOf("github:codertocat/hello-world:issue:12")->Thread(), "github:codertocat/hello-world:issue:12");
  EXPECT_FALSE(DiscussionOf("github:codertocat/hello-world:ci:main").has_value());
  EXPECT_FALSE(DiscussionOf("github:codertocat/hello-world:issue:x").has_value());
  EXPECT_FALSE(DiscussionOf("feishu:chat:oc_1").has_value());
}

}  // namespace
}  // namespace superagent::github
