// GitHubChannel against the loopback fake: what it posts, where, and how it never posts twice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_github_server.h"
#include "superagent/github.h"
#include "sources/github/channel.h"
#include "superagent/text.h"

namespace superagent::github {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using superagent::testing::FakeGitHub;
using superagent::testing::WebhookExample;

class GitHubChannelTest : public ::testing::Test {
 protected:
  GitHubChannelTest() : fake_(&clock_), http_(MakeHttpClient("superagent-test")) {
    ClientOptions o;
    o.api_url = fake_.url();
    o.token = "t";
    client_ = std::make_unique<Client>(http_.get(), &clock_, [this](TimeMs ms) { clock_.Advance(ms); }, o);
    channel_ = std::make_unique<GitHubChannel>(client_.get(), "Codertocat/Hello-World");
    fake_.issues[1] = WebhookExample("issue_comment", "created")["issue"];
  }

  Effect Message(const std::string& receipt_id, const std::string& channel, const std::string& body) {
    Effect e;
    e.id = 1;
    e.kind = "post_message";
    Receipt r;
    r.id = receipt_id;
    r.thread = channel;
    r.channel = channel;
    r.kind = MessageKind::kAcknowledgement;
    r.body = body;
    r.status = "pending";
    r.created_at = clock_.NowMs();
    e.receipt = r;
    return e;
  }
  int Posts() { return fake_.Count("POST", "/repos/"); }

  FakeClock clock_;
  FakeGitHub fake_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<GitHubChannel> channel_;
};

TEST_F(GitHubChannelTest, HandlesGitHubChannelsOnly) {
  EXPECT_TRUE(channel_->Handles("github:codertocat/hello-world:issue:1"));
  EXPECT_TRUE(channel_->Handles("github:codertocat/hello-world:pull:2:review:3"));
  EXPECT_FALSE(channel_->Handles("feishu:chat:oc_1"));
}

TEST_F(GitHubChannelTest, PostsWithTheFirstLineAndTheHiddenMarker) {
  Delivery d = channel_->Perform(Message("ack:ticket:1", "github:codertocat/hello-world:issue:1", "I'll fix the typo in README."), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  ASSERT_EQ(fake_.comments.size(), 1u);
  const std::string body = fake_.comments[0]["body"];
  EXPECT_EQ(d.external_id, std::to_string(fake_.comments[0]["id"].get<std::int64_t>()));
  EXPECT_EQ(body, "This is by an automated agent, not a human\n\nI'll fix the typo in README.\n\n"
                  "<!-- superagent-receipt: ack:ticket:1 -->");
  EXPECT_EQ(Posts(), 1);
  auto log = fake_.log();
  EXPECT_EQ(log.back().target, "/repos/Codertocat/Hello-World/issues/1/comments");
}

TEST_F(GitHubChannelTest, OutcomeUnknownWithTheMarkerPresentDoesNotPostAgain) {
  ASSERT_EQ(channel_->Perform(Message("ack:ticket:1", "github:codertocat/hello-world:issue:1", "On it."), false).outcome,
            Delivery::Outcome::kDone);
  const std::string first_id = std::to_string(fake_.comments[0]["id"].get<std::int64_t>());
  clock_.Advance(30'000);
  Delivery again = channel_->Perform(Message("ack:ticket:1", "github:codertocat/hello-world:issue:1", "On it."), true);
  EXPECT_EQ(again.outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(again.external_id, first_id);
  EXPECT_EQ(Posts(), 1);
  EXPECT_EQ(fake_.comments.size(), 1u);
}

TEST_F(GitHubChannelTest, OutcomeUnknownWithoutTheMarkerPostsOnce) {
  // Another message's marker does not count.
  fake_.comments.push_back(fake_.MakeComment(7, 1, "superagent-bot", MessageText("x", "ack:ticket:9"), clock_.NowMs()));
  Delivery d = channel_->Perform(Message("ack:ticket:1", "github:codertocat/hello-world:issue:1", "On it."), true);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(Posts(), 1);
}

// Issue 23: the marker carries the install id, so another install's message for the same receipt
// id on the same issue (a second deployment, or this one before its data_dir was reset) is not
// taken for this one's earlier delivery.
TEST_F(GitHubChannelTest, AnotherInstallsMarkerForTheSameReceiptIsNotOurs) {
  ChannelOptions mine;
  mine.install_id = "0123456789abcdef0123456789abcdef";
  GitHubChannel channel(client_.get(), "Codertocat/Hello-World", mine);
  fake_.comments.push_back(
      fake_.MakeComment(7, 1, "superagent-bot", MessageText("旧的", "fedcba987654/ack:ticket:1"), clock_.NowMs()));
  fake_.comments.push_back(fake_.MakeComment(8, 1, "superagent-bot", MessageText("older", "ack:ticket:1"), clock_.NowMs()));
  Delivery d = channel.Perform(Message("ack:ticket:1", "github:codertocat/hello-world:issue:1", "On it."), true);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(Posts(), 1) << "neither marker is this install's";
  EXPECT_THAT(fake_.comments.back()["body"].get<std::string>(),
              HasSubstr("<!-- superagent-receipt: 0123456789ab/ack:ticket:1 -->"));
  // Its own marker is found on a retry.
  clock_.Advance(30'000);
  Delivery again = channel.Perform(Message("ack:ticket:1", "github:codertocat/hello-world:issue:1", "On it."), true);
  EXPECT_EQ(again.external_id, d.external_id);
  EXPECT_EQ(Posts(), 1);
}

TEST_F(GitHubChannelTest, AResponseLostAfterTheWriteIsFoundOnTheNextAttempt) {
  // GitHub wrote the comment, but the answer never came back whole (a gateway error after the write).
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments", {502, {}, R"({"message":"Bad Gateway"})"});
  fake_.comments.push_back(fake_.MakeComment(55, 1, "superagent-bot", MessageText("On it.", "ack:ticket:1"), clock_.NowMs()));
  Delivery first = channel_->Perform(Message("ack:ticket:1", "github:codertocat/hello-world:issue:1", "On it."), false);
  EXPECT_EQ(first.outcome, Delivery::Outcome::kRetry);
  Delivery second = channel_->Perform(Message("ack:ticket:1", "github:codertocat/hello-world:issue:1", "On it."), true);
  EXPECT_EQ(second.outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(second.external_id, "55");
  EXPECT_EQ(Posts(), 1);
}

TEST_F(GitHubChannelTest, GoneRetryAndFailedFromGitHubsAnswers) {
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments", {410, {}, R"({"message":"Gone"})"});
  EXPECT_EQ(channel_->Perform(Message("a", "github:codertocat/hello-world:issue:1", "x"), false).outcome, Delivery::Outcome::kTargetGone);
  EXPECT_EQ(channel_->Perform(Message("b", "github:codertocat/hello-world:issue:404", "x"), false).outcome, Delivery::Outcome::kTargetGone);
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments", {503, {}, R"({"message":"Unavailable"})"});
  EXPECT_EQ(channel_->Perform(Message("c", "github:codertocat/hello-world:issue:1", "x"), false).outcome, Delivery::Outcome::kRetry);
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments",
               {429, {{"Retry-After", "45"}}, R"({"message":"secondary rate limit"})"});
  Delivery limited = channel_->Perform(Message("d", "github:codertocat/hello-world:issue:1", "x"), false);
  EXPECT_EQ(limited.outcome, Delivery::Outcome::kRetry);
  EXPECT_EQ(limited.retry_after_ms, 45'000);
  clock_.Advance(46'000);
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments",
               {422, {}, R"({"message":"Validation Failed","errors":[{"resource":"IssueComment","code":"custom","message":"Body is too long"}]})"});
  Delivery invalid = channel_->Perform(Message("e", "github:codertocat/hello-world:issue:1", "x"), false);
  EXPECT_EQ(invalid.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(invalid.error, HasSubstr("Body is too long"));
  EXPECT_EQ(channel_->Perform(Message("f", "github:codertocat/hello-world:ci:main", "x"), false).outcome, Delivery::Outcome::kFailed);
}

TEST_F(GitHubChannelTest, RepliesToAReviewThreadAndCommentsOnACommit) {
  Delivery d = channel_->Perform(Message("r1", "github:codertocat/hello-world:pull:2:review:284312630", "Done in the next push."), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(fake_.Count("POST", "/repos/Codertocat/Hello-World/pulls/2/comments/284312630/replies"), 1);
  // After a crash the reply is found among the PR's review comments.
  EXPECT_EQ(channel_->Perform(Message("r1", "github:codertocat/hello-world:pull:2:review:284312630", "Done in the next push."), true).outcome,
            Delivery::Outcome::kDone);
  EXPECT_EQ(Posts(), 1);
  Delivery c = channel_->Perform(Message("c1", "github:codertocat/hello-world:commit:3484a3fb816e0859fd6e1cea078d76385ff50625", "CI failed"), false);
  EXPECT_EQ(c.outcome, Delivery::Outcome::kDone) << c.error;
  EXPECT_EQ(fake_.Count("POST", "/repos/Codertocat/Hello-World/commits/3484a3fb816e0859fd6e1cea078d76385ff50625/comments"), 1);
}

TEST_F(GitHubChannelTest, Reactions) {
  Effect e;
  e.kind = "add_reaction";
  e.payload = {{"channel", "github:codertocat/hello-world:issue:1"}, {"idempotency_key", "react:1"}, {"target", "issue_comment"},
               {"comment_id", 492700400}, {"content", "eyes"}};
  EXPECT_EQ(channel_->Perform(e, false).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(fake_.Count("POST", "/repos/Codertocat/Hello-World/issues/comments/492700400/reactions"), 1);
  e.payload["target"] = "issue";
  EXPECT_EQ(channel_->Perform(e, false).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(fake_.Count("POST", "/repos/Codertocat/Hello-World/issues/1/reactions"), 1);
  e.payload["content"] = "thumbs";
  EXPECT_EQ(channel_->Perform(e, false).outcome, Delivery::Outcome::kFailed);
}

TEST_F(GitHubChannelTest, OpensAPullRequestOnceEvenAfterACrash) {
  Effect e;
  e.id = 9;
  e.kind = "open_pull_request";
  e.payload = {{"channel", "github:codertocat/hello-world:issue:1"}, {"idempotency_key", "pr:ticket:1"}, {"head", "superagent/ticket-1"},
               {"base", "master"}, {"title", "Fix the typo in README"}, {"body", "Fixes #1."}, {"draft", true}};
  Delivery d = channel_->Perform(e, false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  ASSERT_EQ(fake_.pulls.size(), 1u);
  const json& pr = fake_.pulls.begin()->second;
  EXPECT_EQ(d.external_id, std::to_string(pr["number"].get<std::int64_t>()));
  EXPECT_EQ(pr["draft"], true);
  EXPECT_EQ(pr["body"].get<std::string>().rfind(kAutomatedFirstLine, 0), 0u);
  EXPECT_THAT(pr["body"].get<std::string>(), HasSubstr(ReceiptMarker("pr:ticket:1")));
  // Unknown outcome: found by its head and marker, not opened again.
  EXPECT_EQ(channel_->Perform(e, true).external_id, d.external_id);
  // Even without the marker check, GitHub's "already exists" answer is taken as done.
  EXPECT_EQ(channel_->Perform(e, false).external_id, d.external_id);
  EXPECT_EQ(fake_.pulls.size(), 1u);
  EXPECT_EQ(fake_.Count("POST", "/repos/Codertocat/Hello-World/pulls"), 2);
}

// Issue 23: the PR says where the work was asked for as much as github.pull_request_origin allows:
// a GitHub discussion's link; for a chat only its platform (a chat has no link a reviewer could
// open, and its words stay in the chat); "source" never links; "none" says nothing.
TEST_F(GitHubChannelTest, APullRequestSaysWhereItWasAskedForAsConfiguredAndNeverAChatsWords) {
  struct Case {
    std::string mode, via, url, want;
  };
  const std::vector<Case> cases = {
      {"link", "github", "https://github.com/o/r/issues/1#issuecomment-9", "Requested in https://github.com/o/r/issues/1#issuecomment-9"},
      {"link", "feishu", "", "Requested in a Feishu chat."},
      {"source", "github", "https://github.com/o/r/issues/1", "Requested in a GitHub discussion."},
      {"source", "panel", "", "Requested in the superagent panel."},
      {"none", "feishu", "", ""},
  };
  int n = 0;
  for (const Case& c : cases) {
    ChannelOptions o;
    o.pull_request_origin = c.mode;
    GitHubChannel channel(client_.get(), "Codertocat/Hello-World", o);
    Effect e;
    e.id = 20 + n;
    e.kind = "open_pull_request";
    e.payload = {{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "pr:ticket:" + std::to_string(20 + n)},
                 {"head", "superagent/ticket-" + std::to_string(20 + n)}, {"base", "master"}, {"title", "修正拼写"},
                 {"body", "Fixes the typo."}, {"requested_via", c.via}};
    if (!c.url.empty()) e.payload["discussion_url"] = c.url;
    ++n;
    Delivery d = channel.Perform(e, false);
    ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
    std::string body;
    for (const auto& [number, pr] : fake_.pulls)
      if (pr["head"]["ref"] == e.payload["head"]) body = pr["body"].get<std::string>();
    ASSERT_FALSE(body.empty()) << c.mode << " " << c.via;
    if (c.want.empty()) {
      EXPECT_EQ(body.find("Requested in"), std::string::npos) << body;
    } else {
      EXPECT_THAT(body, HasSubstr("Fixes the typo.\n\n" + c.want)) << c.mode << " " << c.via;
    }
    if (c.mode == "source") {
      EXPECT_EQ(body.find("https://"), std::string::npos) << body;
    }
  }
}

TEST_F(GitHubChannelTest, RequestsTheRulesApproverAsReviewerOfTheNewPullRequest) {
  Effect e;
  e.id = 9;
  e.kind = "open_pull_request";
  e.payload = {{"channel", "github:codertocat/hello-world:issue:1"}, {"idempotency_key", "pr:ticket:1"}, {"head", "superagent/ticket-1"},
               {"base", "master"}, {"title", "Fix the typo"}, {"reviewers", {"alice", "张伟"}}};
  Delivery d = channel_->Perform(e, false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  const std::string path = "/repos/Codertocat/Hello-World/pulls/" + d.external_id + "/requested_reviewers";
  ASSERT_EQ(fake_.Count("POST", path), 1);
  EXPECT_EQ(json::parse(fake_.log().back().body), (json{{"reviewers", {"alice", "张伟"}}}));
  const json& pr = fake_.pulls.begin()->second;
  ASSERT_EQ(pr["requested_reviewers"].size(), 2u);
  EXPECT_EQ(pr["requested_reviewers"][1]["login"], "张伟");
}

TEST_F(GitHubChannelTest, ARefusedReviewerRequestDoesNotFailThePullRequest) {
  fake_.collaborators = {"alice"};
  Effect e;
  e.id = 9;
  e.kind = "open_pull_request";
  e.payload = {{"channel", "github:codertocat/hello-world:issue:1"}, {"idempotency_key", "pr:ticket:1"}, {"head", "superagent/ticket-1"},
               {"base", "master"}, {"title", "Fix the typo"}, {"reviewers", {"not-a-collaborator"}}};
  Delivery d = channel_->Perform(e, false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(fake_.pulls.size(), 1u);
  EXPECT_EQ(fake_.log().back().status, 422) << "GitHub refused the request, and the PR still stands";
  // Wrong types: the logins that are strings are asked; a non-list asks nobody; nothing fails.
  fake_.pulls.clear();
  e.payload["reviewers"] = {"alice", 5, nullptr, ""};
  d = channel_->Perform(e, false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(json::parse(fake_.log().back().body), (json{{"reviewers", {"alice"}}}));
  fake_.pulls.clear();
  fake_.ClearLog();
  e.payload["reviewers"] = "alice";
  EXPECT_EQ(channel_->Perform(e, false).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(fake_.Count("POST", "/repos/Codertocat/Hello-World/pulls/"), 0) << "no requested_reviewers call";
}

// --- merge_pull_request: the auto-merge guard through the channel, against the fake.

const std::string kChannelHead = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const std::string kOlder = "34c5c7793cb3b279e22454cb6750c80560547b3a";

class GitHubMergeTest : public GitHubChannelTest {
 protected:
  GitHubMergeTest() {
    ClientOptions o;
    o.api_url = fake_.url();
    o.token = "merge-token";
    merge_client_ = std::make_unique<Client>(http_.get(), &clock_, [this](TimeMs ms) { clock_.Advance(ms); }, o);
    channel_ = std::make_unique<GitHubChannel>(client_.get(), "Codertocat/Hello-World", Options());
    // Who has write access (issue 33): alice writes, bob administers; anyone else reads (public).
    fake_.permissions = {{"alice", "write"}, {"bob", "admin"}, {"zhang-wei", "maintain"}};
    // PR #7, opened by the agent for Ticket 3, small, approved by alice on its head.
    fake_.pulls[7] = fake_.MakePull(7, "superagent-bot", MessageText("Fixes #1.", "pr:ticket:3"), kChannelHead, 3, 1);
    fake_.reviews[7] = {fake_.MakeReview("alice", "APPROVED", kChannelHead)};
  }

  Effect Merge(json overrides = json::object()) {
    Effect e;
    e.id = 11;
    e.kind = "merge_pull_request";
    e.payload = {{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "merge:ticket:3:" + kChannelHead}, {"ticket", 3},
                 {"number", 7}, {"head_sha", kChannelHead}, {"max_changed_lines", 200}, {"required_approvals", 1},
                 {"approver", ""}};
    for (const auto& [k, v] : overrides.items()) e.payload[k] = v;
    return e;
  }
  int MergeCalls() { return fake_.Count("PUT", "/repos/Codertocat/Hello-World/pulls/7/merge"); }
  // The merge account, and the agent's login as the Source learns it.
  ChannelOptions Options() {
    ChannelOptions co;
    co.merge_client = merge_client_.get();
    co.agent_login = [] { return std::string("superagent-bot"); };
    return co;
  }

  std::unique_ptr<Client> merge_client_;
};

TEST_F(GitHubMergeTest, MergesWithTheMergeAccountPinnedToTheApprovedHead) {
  Delivery d = channel_->Perform(Merge(), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  ASSERT_EQ(MergeCalls(), 1);
  FakeGitHub::Logged put;
  for (const auto& l : fake_.log())
    if (l.method == "PUT") put = l;
  EXPECT_EQ(put.request_headers["authorization"], "Bearer merge-token") << "never the agent's token";
  EXPECT_EQ(json::parse(put.body), (json{{"sha", kChannelHead}, {"merge_method", "squash"}}));
  for (const auto& l : fake_.log()) {
    if (l.method == "GET") {
      EXPECT_EQ(l.request_headers.at("authorization"), "Bearer t") << "reads use the agent's";
    }
  }
  EXPECT_TRUE(fake_.pulls[7]["merged"].get<bool>());
  EXPECT_EQ(d.external_id, fake_.pulls[7]["merge_commit_sha"]);
  // Delivered again (a crash before it was recorded): already merged is done, no second merge.
  Delivery again = channel_->Perform(Merge(), true);
  EXPECT_EQ(again.outcome, Delivery::Outcome::kDone) << again.error;
  EXPECT_EQ(again.external_id, d.external_id);
  EXPECT_EQ(MergeCalls(), 1);
}

TEST_F(GitHubMergeTest, EachRefusalIsFinalAndChangesNothing) {
  struct Case {
    std::string name;
    std::function<void(json& pr, std::vector<json>& reviews)> change;
    json payload;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"closed", [](json& pr, auto&) { pr["state"] = "closed"; }, {}, "the pull request is not open"},
      {"draft", [](json& pr, auto&) { pr["draft"] = true; }, {}, "the pull request is a draft"},
      {"another Ticket's", [](json& pr, auto&) { pr["body"] = MessageText("Fixes #1.", "pr:ticket:4"); }, {},
       "the pull request was not opened for this Ticket"},
      {"a person's", [](json& pr, auto&) { pr["body"] = "My own PR"; pr["user"]["login"] = "alice"; }, {},
       "the pull request was not opened for this Ticket"},
      {"new push", [](json& pr, auto&) { pr["head"]["sha"] = kOlder; }, {}, "a new version was pushed"},
      {"too large", [](json& pr, auto&) { pr["additions"] = 150; pr["deletions"] = 50; }, {},
       "the change is too large to merge without a person: 150 additions + 50 deletions, the limit is under 200"},
      {"a team's lower limit", [](auto&, auto&) {}, {{"max_changed_lines", 4}}, "the limit is under 4"},
      {"no approval", [](auto&, std::vector<json>& r) { r.clear(); }, {}, "has 0 approvals"},
      {"approval of an older commit", [&](auto&, std::vector<json>& r) { r[0]["commit_id"] = kOlder; }, {},
       "has 0 approvals"},
      {"changes requested after approving",
       [&](auto&, std::vector<json>& r) { r.push_back(fake_.MakeReview("alice", "CHANGES_REQUESTED", kChannelHead)); }, {},
       "has 0 approvals"},
      {"a bot's approval", [&](auto&, std::vector<json>& r) { r = {fake_.MakeReview("helper", "APPROVED", kChannelHead, true)}; },
       {}, "has 0 approvals"},
      {"the author's approval",
       [&](auto&, std::vector<json>& r) { r = {fake_.MakeReview("superagent-bot", "APPROVED", kChannelHead)}; }, {},
       "has 0 approvals"},
      {"two needed", [](auto&, auto&) {}, {{"required_approvals", 2}},
       "has 1 approval by people with write access other than its author and the agent; 2 required"},
      {"approver missing", [](auto&, auto&) {}, {{"approver", "bob"}}, "the rule's approver bob has not approved"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json pr = fake_.MakePull(7, "superagent-bot", MessageText("Fixes #1.", "pr:ticket:3"), kChannelHead, 3, 1);
    std::vector<json> reviews = {fake_.MakeReview("alice", "APPROVED", kChannelHead)};
    c.change(pr, reviews);
    {
      auto lock = fake_.Lock();
      fake_.pulls[7] = pr;
      fake_.reviews[7] = reviews;
    }
    Delivery d = channel_->Perform(Merge(c.payload.is_null() ? json::object() : c.payload), false);
    EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
    EXPECT_THAT(d.error, ::testing::StartsWith("auto-merge refused: "));
    EXPECT_THAT(d.error, HasSubstr(c.error));
    EXPECT_EQ(MergeCalls(), 0);
    EXPECT_EQ(fake_.Count("POST", "/"), 0);
    EXPECT_EQ(fake_.pulls[7], pr) << "the pull request is as it was";
  }
}

TEST_F(GitHubMergeTest, WithoutAMergeAccountItRefusesBeforeAskingGitHub) {
  channel_ = std::make_unique<GitHubChannel>(client_.get(), "Codertocat/Hello-World");
  Delivery d = channel_->Perform(Merge(), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_EQ(d.error,
            "auto-merge needs a merge account: set github.merge_token_env (the agent account never merges by default)");
  EXPECT_TRUE(fake_.log().empty());
  EXPECT_FALSE(fake_.pulls[7]["merged"].get<bool>());
}

TEST_F(GitHubMergeTest, MergeAsAgentUsesTheAgentsToken) {
  ChannelOptions co = Options();
  co.merge_client = nullptr;
  co.merge_as_agent = true;
  channel_ = std::make_unique<GitHubChannel>(client_.get(), "Codertocat/Hello-World", co);
  ASSERT_EQ(channel_->Perform(Merge(), false).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(fake_.log().back().method, "PUT");
  EXPECT_EQ(fake_.log().back().request_headers["authorization"], "Bearer t");
}

TEST_F(GitHubMergeTest, GitHubsOwnRefusalsAreFailedWithItsWords) {
  // A push between the guard's read and the merge: GitHub answers 409 for the pinned sha.
  fake_.Script("PUT", "/repos/Codertocat/Hello-World/pulls/7/merge",
               {409, {}, R"({"message":"Head branch was modified. Review and try the merge again.","documentation_url":"https://docs.github.com/rest/pulls/pulls#merge-a-pull-request"})"});
  Delivery moved = channel_->Perform(Merge(), false);
  EXPECT_EQ(moved.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(moved.error, HasSubstr("Head branch was modified"));
  fake_.Script("PUT", "/repos/Codertocat/Hello-World/pulls/7/merge",
               {405, {}, R"({"message":"Required status check \"build\" is failing."})"});
  Delivery blocked = channel_->Perform(Merge(), false);
  EXPECT_EQ(blocked.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(blocked.error, HasSubstr("Required status check"));
  EXPECT_FALSE(fake_.pulls[7]["merged"].get<bool>());
  // A vanished pull request is gone; a GitHub outage is retried.
  EXPECT_EQ(channel_->Perform(Merge({{"number", 404}}), false).outcome, Delivery::Outcome::kTargetGone);
  fake_.Script("GET", "/repos/Codertocat/Hello-World/pulls/7", {503, {}, R"({"message":"Unavailable"})"}, 2);
  EXPECT_EQ(channel_->Perform(Merge(), false).outcome, Delivery::Outcome::kRetry);
}

TEST_F(GitHubMergeTest, APayloadOfTheWrongShapeIsRefusedBeforeAnyRequest) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"ticket", "3"}}, "merge_pull_request: field \"ticket\": expected integer, got string"},
      {{{"number", nullptr}}, "merge_pull_request: field \"number\": expected integer, got null"},
      {{{"head_sha", 12}}, "merge_pull_request: field \"head_sha\": expected string, got integer"},
      {{{"approver", {"bob"}}}, "merge_pull_request: field \"approver\": expected string, got array"},
      {{{"max_changed_lines", 201}}, "merge_pull_request: max_changed_lines must be from 1 to 200"},
      {{{"max_changed_lines", 0}}, "merge_pull_request: max_changed_lines must be from 1 to 200"},
      {{{"required_approvals", 11}}, "merge_pull_request: required_approvals must be from 1 to 10"},
      {{{"number", -7}}, "merge_pull_request: ticket and number must be positive"},
  };
  for (const auto& [overrides, error] : cases) {
    Delivery d = channel_->Perform(Merge(overrides), false);
    EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed) << overrides.dump();
    EXPECT_EQ(d.error, error);
  }
  Effect not_object = Merge();
  not_object.payload = json::array();
  EXPECT_EQ(channel_->Perform(not_object, false).outcome, Delivery::Outcome::kFailed);
  EXPECT_TRUE(fake_.log().empty());
}

TEST_F(GitHubMergeTest, ReadsEveryPageOfThreeHundredReviews) {
  // 300 reviews over three pages; alice approved early and asked for changes on the last page.
  std::vector<json> reviews;
  for (int i = 0; i < 300; ++i)
    reviews.push_back(fake_.MakeReview("reviewer-" + std::to_string(i % 40), "COMMENTED", kChannelHead));
  reviews[10] = fake_.MakeReview("alice", "APPROVED", kChannelHead);
  reviews[290] = fake_.MakeReview("alice", "CHANGES_REQUESTED", kChannelHead);
  fake_.reviews[7] = reviews;
  Delivery d = channel_->Perform(Merge(), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("has 0 approvals"));
  EXPECT_EQ(fake_.Count("GET", "/repos/Codertocat/Hello-World/pulls/7/reviews"), 4) << "three full pages, one empty";
  EXPECT_EQ(MergeCalls(), 0);
  // The approver approves the head on a fourth page: merged. The three earlier pages are
  // unchanged (304 from the cache): the new page is still read.
  fake_.reviews[7].push_back(fake_.MakeReview("zhang-wei", "APPROVED", kChannelHead));
  Delivery ok = channel_->Perform(Merge({{"approver", "Zhang-Wei"}}), false);
  EXPECT_EQ(ok.outcome, Delivery::Outcome::kDone) << ok.error;
  EXPECT_EQ(MergeCalls(), 1);
}

TEST_F(GitHubMergeTest, HostileReviewListsNeverMerge) {
  // Wrong types where GitHub promises objects: none of them approves anything.
  fake_.reviews[7] = {json(42), json("APPROVED"), json{{"user", nullptr}, {"state", "APPROVED"}, {"commit_id", kChannelHead}},
                      json{{"user", {{"login", {"alice"}}}}, {"state", "APPROVED"}, {"commit_id", kChannelHead}},
                      json{{"user", {{"login", "mallory"}}}, {"state", "APPROVED"}, {"commit_id", {kChannelHead}}}};
  Delivery d = channel_->Perform(Merge(), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("has 0 approvals"));
  // A reviews answer that is not a list, and a pull request with a wrong type, are refusals too.
  fake_.Script("GET", "/repos/Codertocat/Hello-World/pulls/7/reviews", {200, {}, R"({"reviews":[]})"});
  d = channel_->Perform(Merge(), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("page 1 is not a list"));
  fake_.pulls[7]["additions"] = "3";
  fake_.reviews[7] = {fake_.MakeReview("alice", "APPROVED", kChannelHead)};
  d = channel_->Perform(Merge(), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("field \"additions\": expected integer, got string"));
  EXPECT_EQ(MergeCalls(), 0);
}

// --- pull_key: a Ticket's change across repositories opens one PR per repository, each with the
// key "pr:ticket:<N>:<owner/name>"; the merge names which one it must find.

TEST_F(GitHubMergeTest, APullKeyNamesTheOpeningTheGuardLooksFor) {
  {
    auto lock = fake_.Lock();
    fake_.pulls[7]["body"] = MessageText("Part of Ticket 5's change.", "pr:ticket:5:acme/web");
  }
  Delivery without = channel_->Perform(Merge({{"ticket", 5}}), false);
  EXPECT_EQ(without.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(without.error, HasSubstr("the pull request was not opened for this Ticket"));
  // Another repository's key of the same Ticket is not this PR's either.
  Delivery other = channel_->Perform(Merge({{"ticket", 5}, {"pull_key", "pr:ticket:5:acme/api"}}), false);
  EXPECT_EQ(other.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(other.error, HasSubstr("the pull request was not opened for this Ticket"));
  EXPECT_EQ(MergeCalls(), 0);
  // null is no key: as without one.
  EXPECT_THAT(channel_->Perform(Merge({{"ticket", 5}, {"pull_key", nullptr}}), false).error,
              HasSubstr("not opened for this Ticket"));
  Delivery d = channel_->Perform(Merge({{"ticket", 5}, {"pull_key", "pr:ticket:5:acme/web"}}), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(MergeCalls(), 1);
  EXPECT_TRUE(fake_.pulls[7]["merged"].get<bool>());
}

TEST_F(GitHubMergeTest, APullKeyCarriesTheInstallsDigitsLikeEveryMarker) {
  ChannelOptions co = Options();
  co.install_id = "0123456789abcdef0123456789abcdef";
  channel_ = std::make_unique<GitHubChannel>(client_.get(), "Codertocat/Hello-World", co);
  {
    auto lock = fake_.Lock();
    fake_.pulls[7]["body"] = MessageText("Part of it.", "pr:ticket:5:acme/web");  // no install: not ours
  }
  EXPECT_EQ(channel_->Perform(Merge({{"ticket", 5}, {"pull_key", "pr:ticket:5:acme/web"}}), false).outcome,
            Delivery::Outcome::kFailed);
  {
    auto lock = fake_.Lock();
    fake_.pulls[7]["body"] = MessageText("Part of it.", "0123456789ab/pr:ticket:5:acme/web");
  }
  Delivery d = channel_->Perform(Merge({{"ticket", 5}, {"pull_key", "pr:ticket:5:acme/web"}}), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(MergeCalls(), 1);
}

TEST_F(GitHubMergeTest, ABadPullKeyIsRefusedBeforeAnyRequest) {
  const std::string too_long = "pr:ticket:3:" + std::string(189, 'x');  // 201 bytes
  auto refused = [](const std::string& key) {
    return "merge_pull_request: pull_key must be \"pr:ticket:3\" or start with \"pr:ticket:3:\", at most 200 bytes; "
           "it is \"" + text::Cut(key, 60) + "\" (" + std::to_string(key.size()) + " bytes)";
  };
  const std::vector<std::pair<json, std::string>> cases = {
      {"", refused("")},
      {"merge:ticket:3", refused("merge:ticket:3")},
      {"ack:ticket:3", refused("ack:ticket:3")},
      {too_long, refused(too_long)},
      {"pr:ticket:4:acme/web", refused("pr:ticket:4:acme/web")},  // another Ticket's pull request
      {"pr:ticket:30", refused("pr:ticket:30")},
      {"pr:ticket:3x", refused("pr:ticket:3x")},
      {42, "merge_pull_request: field \"pull_key\": expected string, got integer"},
      {json::array({"pr:ticket:3"}), "merge_pull_request: field \"pull_key\": expected string, got array"},
  };
  for (const auto& [key, error] : cases) {
    Delivery d = channel_->Perform(Merge({{"pull_key", key}}), false);
    EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed) << key.dump();
    EXPECT_EQ(d.error, error);
  }
  EXPECT_TRUE(fake_.log().empty());
  // 200 bytes is allowed: the guard runs (and finds no such opening).
  Delivery at_limit = channel_->Perform(Merge({{"pull_key", too_long.substr(0, 200)}}), false);
  EXPECT_THAT(at_limit.error, HasSubstr("not opened for this Ticket"));
  EXPECT_EQ(MergeCalls(), 0);
}

// --- check_only: the whole guard, as a merge would run it, without the merge (one change across
// repositories merges only when every one of its pull requests would).

TEST_F(GitHubMergeTest, ACheckRunsEveryStepOfTheGuardButNeverMerges) {
  ChannelOptions co = Options();
  co.ui_path = [](const std::string& path) { return path.rfind("web/", 0) == 0; };
  channel_ = std::make_unique<GitHubChannel>(client_.get(), "Codertocat/Hello-World", co);
  fake_.pull_files[7] = {fake_.MakePullFile("src/main.cpp")};
  Delivery d = channel_->Perform(Merge({{"check_only", true}}), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(d.external_id, kChannelHead) << "the head the guard passed";
  EXPECT_EQ(MergeCalls(), 0);
  EXPECT_FALSE(fake_.pulls[7]["merged"].get<bool>());
  EXPECT_EQ(fake_.Count("GET", "/repos/Codertocat/Hello-World/pulls/7/reviews"), 1);
  EXPECT_EQ(fake_.Count("GET", "/repos/Codertocat/Hello-World/pulls/7/files"), 1);
  EXPECT_EQ(fake_.PermissionRequests("alice"), 1);
  for (const auto& l : fake_.log()) EXPECT_EQ(l.method, "GET") << l.target;
  // The same guard: a UI file without the rule's approver is refused by the check too.
  fake_.pull_files[7].push_back(fake_.MakePullFile("web/app.css"));
  Delivery ui = channel_->Perform(Merge({{"check_only", true}}), false);
  EXPECT_EQ(ui.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(ui.error, ::testing::StartsWith("auto-merge refused: "));
  // check_only false is a merge.
  fake_.pull_files[7].pop_back();
  Delivery merged = channel_->Perform(Merge({{"check_only", false}}), false);
  EXPECT_EQ(merged.outcome, Delivery::Outcome::kDone) << merged.error;
  EXPECT_EQ(MergeCalls(), 1);
}

TEST_F(GitHubMergeTest, ACheckThatTheGuardRefusesFails) {
  fake_.reviews[7].clear();
  Delivery d = channel_->Perform(Merge({{"check_only", true}}), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, ::testing::StartsWith("auto-merge refused: "));
  EXPECT_THAT(d.error, HasSubstr("has 0 approvals"));
  // A head that moved since the approved one named is refused as a merge would be.
  fake_.reviews[7] = {fake_.MakeReview("alice", "APPROVED", kChannelHead)};
  Delivery moved = channel_->Perform(Merge({{"check_only", true}, {"head_sha", kOlder}}), false);
  EXPECT_EQ(moved.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(moved.error, HasSubstr("a new version was pushed"));
  // Still needs a merge account: a check that passes says the merge could happen.
  channel_ = std::make_unique<GitHubChannel>(client_.get(), "Codertocat/Hello-World");
  fake_.ClearLog();
  Delivery no_account = channel_->Perform(Merge({{"check_only", true}}), false);
  EXPECT_EQ(no_account.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(no_account.error, HasSubstr("auto-merge needs a merge account"));
  EXPECT_TRUE(fake_.log().empty());
  EXPECT_EQ(MergeCalls(), 0);
}

TEST_F(GitHubMergeTest, ACheckWithoutAHeadExpectsTheCurrentOne) {
  Effect absent = Merge({{"check_only", true}});
  absent.payload.erase("head_sha");
  Delivery d = channel_->Perform(absent, false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(d.external_id, kChannelHead);
  Delivery empty = channel_->Perform(Merge({{"check_only", true}, {"head_sha", ""}}), false);
  ASSERT_EQ(empty.outcome, Delivery::Outcome::kDone) << empty.error;
  EXPECT_EQ(empty.external_id, kChannelHead);
  // A push since the approval: the approval is of an older commit than the current head.
  {
    auto lock = fake_.Lock();
    fake_.pulls[7]["head"]["sha"] = kOlder;
  }
  Delivery pushed = channel_->Perform(absent, false);
  EXPECT_EQ(pushed.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(pushed.error, HasSubstr("has 0 approvals"));
  EXPECT_EQ(MergeCalls(), 0);
  // A merge still names its head.
  fake_.ClearLog();
  Effect merge = Merge();
  merge.payload.erase("head_sha");
  Delivery refused = channel_->Perform(merge, false);
  EXPECT_EQ(refused.outcome, Delivery::Outcome::kFailed);
  EXPECT_EQ(refused.error, "merge_pull_request: field \"head_sha\": missing");
  EXPECT_TRUE(fake_.log().empty());
}

TEST_F(GitHubMergeTest, ACheckOfAMergedPullRequestIsDoneWithItsHead) {
  ASSERT_EQ(channel_->Perform(Merge(), false).outcome, Delivery::Outcome::kDone);
  Delivery d = channel_->Perform(Merge({{"check_only", true}}), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(d.external_id, kChannelHead) << "not the merge commit";
  EXPECT_EQ(MergeCalls(), 1);
}

TEST_F(GitHubMergeTest, ACheckOnlyOfTheWrongTypeIsRefusedBeforeAnyRequest) {
  const std::vector<std::pair<json, std::string>> cases = {
      {"yes", "merge_pull_request: field \"check_only\": expected boolean, got string"},
      {1, "merge_pull_request: field \"check_only\": expected boolean, got integer"},
      {json::object(), "merge_pull_request: field \"check_only\": expected boolean, got object"},
  };
  for (const auto& [value, error] : cases) {
    Delivery d = channel_->Perform(Merge({{"check_only", value}}), false);
    EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed) << value.dump();
    EXPECT_EQ(d.error, error);
  }
  // With check_only a head_sha of the wrong type is still wrong.
  EXPECT_EQ(channel_->Perform(Merge({{"check_only", true}, {"head_sha", 7}}), false).error,
            "merge_pull_request: field \"head_sha\": expected string, got integer");
  EXPECT_TRUE(fake_.log().empty());
}

TEST_F(GitHubChannelTest, UnknownKindsFail) {
  Effect e;
  e.kind = "merge";
  EXPECT_EQ(channel_->Perform(e, false).outcome, Delivery::Outcome::kFailed);
  // A near miss of a kind it performs is not taken for it.
  e.kind = "link_pull_request";
  e.payload = {{"channel", "github:codertocat/hello-world"}, {"ticket", 5}, {"number", 7},
               {"links", {{{"repo", "acme/web"}, {"number", 3}}}}};
  Delivery d = channel_->Perform(e, false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_EQ(d.error, "the GitHub channel does not perform \"link_pull_request\"");
  EXPECT_TRUE(fake_.log().empty());
}

}  // namespace
}  // namespace superagent::github
