// GitHubChannel against the loopback fake: what it posts, where, and how it never posts twice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_github_server.h"
#include "superagent/github.h"

namespace superagent::github {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using superagent::testing::FakeGitHub;
using superagent::testing::WebhookExample;

class GitHubChannelTest : public ::testing::Test {
 protected:
  GitHubChannelTest() : fake_(&clock_), http_(MakeCurlHttpClient("superagent-test")) {
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
  EXPECT_TRUE(channel_->Handles("github:issue:1"));
  EXPECT_TRUE(channel_->Handles("github:pull:2:review:3"));
  EXPECT_FALSE(channel_->Handles("feishu:chat:oc_1"));
}

TEST_F(GitHubChannelTest, PostsWithTheFirstLineAndTheHiddenMarker) {
  Delivery d = channel_->Perform(Message("ack:ticket:1", "github:issue:1", "I'll fix the typo in README."), false);
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
  ASSERT_EQ(channel_->Perform(Message("ack:ticket:1", "github:issue:1", "On it."), false).outcome,
            Delivery::Outcome::kDone);
  const std::string first_id = std::to_string(fake_.comments[0]["id"].get<std::int64_t>());
  clock_.Advance(30'000);
  Delivery again = channel_->Perform(Message("ack:ticket:1", "github:issue:1", "On it."), true);
  EXPECT_EQ(again.outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(again.external_id, first_id);
  EXPECT_EQ(Posts(), 1);
  EXPECT_EQ(fake_.comments.size(), 1u);
}

TEST_F(GitHubChannelTest, OutcomeUnknownWithoutTheMarkerPostsOnce) {
  // Another message's marker does not count.
  fake_.comments.push_back(fake_.MakeComment(7, 1, "superagent-bot", MessageText("x", "ack:ticket:9"), clock_.NowMs()));
  Delivery d = channel_->Perform(Message("ack:ticket:1", "github:issue:1", "On it."), true);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(Posts(), 1);
}

TEST_F(GitHubChannelTest, AResponseLostAfterTheWriteIsFoundOnTheNextAttempt) {
  // GitHub wrote the comment, but the answer never came back whole (a gateway error after the write).
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments", {502, {}, R"({"message":"Bad Gateway"})"});
  fake_.comments.push_back(fake_.MakeComment(55, 1, "superagent-bot", MessageText("On it.", "ack:ticket:1"), clock_.NowMs()));
  Delivery first = channel_->Perform(Message("ack:ticket:1", "github:issue:1", "On it."), false);
  EXPECT_EQ(first.outcome, Delivery::Outcome::kRetry);
  Delivery second = channel_->Perform(Message("ack:ticket:1", "github:issue:1", "On it."), true);
  EXPECT_EQ(second.outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(second.external_id, "55");
  EXPECT_EQ(Posts(), 1);
}

TEST_F(GitHubChannelTest, GoneRetryAndFailedFromGitHubsAnswers) {
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments", {410, {}, R"({"message":"Gone"})"});
  EXPECT_EQ(channel_->Perform(Message("a", "github:issue:1", "x"), false).outcome, Delivery::Outcome::kTargetGone);
  EXPECT_EQ(channel_->Perform(Message("b", "github:issue:404", "x"), false).outcome, Delivery::Outcome::kTargetGone);
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments", {503, {}, R"({"message":"Unavailable"})"});
  EXPECT_EQ(channel_->Perform(Message("c", "github:issue:1", "x"), false).outcome, Delivery::Outcome::kRetry);
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments",
               {429, {{"Retry-After", "45"}}, R"({"message":"secondary rate limit"})"});
  Delivery limited = channel_->Perform(Message("d", "github:issue:1", "x"), false);
  EXPECT_EQ(limited.outcome, Delivery::Outcome::kRetry);
  EXPECT_EQ(limited.retry_after_ms, 45'000);
  clock_.Advance(46'000);
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments",
               {422, {}, R"({"message":"Validation Failed","errors":[{"resource":"IssueComment","code":"custom","message":"Body is too long"}]})"});
  Delivery invalid = channel_->Perform(Message("e", "github:issue:1", "x"), false);
  EXPECT_EQ(invalid.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(invalid.error, HasSubstr("Body is too long"));
  EXPECT_EQ(channel_->Perform(Message("f", "github:ci:main", "x"), false).outcome, Delivery::Outcome::kFailed);
}

TEST_F(GitHubChannelTest, RepliesToAReviewThreadAndCommentsOnACommit) {
  Delivery d = channel_->Perform(Message("r1", "github:pull:2:review:284312630", "Done in the next push."), false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  EXPECT_EQ(fake_.Count("POST", "/repos/Codertocat/Hello-World/pulls/2/comments/284312630/replies"), 1);
  // After a crash the reply is found among the PR's review comments.
  EXPECT_EQ(channel_->Perform(Message("r1", "github:pull:2:review:284312630", "Done in the next push."), true).outcome,
            Delivery::Outcome::kDone);
  EXPECT_EQ(Posts(), 1);
  Delivery c = channel_->Perform(Message("c1", "github:commit:3484a3fb816e0859fd6e1cea078d76385ff50625", "CI failed"), false);
  EXPECT_EQ(c.outcome, Delivery::Outcome::kDone) << c.error;
  EXPECT_EQ(fake_.Count("POST", "/repos/Codertocat/Hello-World/commits/3484a3fb816e0859fd6e1cea078d76385ff50625/comments"), 1);
}

TEST_F(GitHubChannelTest, Reactions) {
  Effect e;
  e.kind = "add_reaction";
  e.payload = {{"channel", "github:issue:1"}, {"idempotency_key", "react:1"}, {"target", "issue_comment"},
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
  e.payload = {{"channel", "github:issue:1"}, {"idempotency_key", "pr:ticket:1"}, {"head", "superagent/ticket-1"},
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

TEST_F(GitHubChannelTest, UnknownKindsFail) {
  Effect e;
  e.kind = "merge";
  EXPECT_EQ(channel_->Perform(e, false).outcome, Delivery::Outcome::kFailed);
}

}  // namespace
}  // namespace superagent::github
