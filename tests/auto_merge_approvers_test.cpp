// Issue 33, item 5: a merge needs people with write access. The GitHub channel's auto-merge
// against the loopback GitHub with its collaborator permission API (the real HTTP client, real JSON
// shapes): a stranger's approval never merges, a writer's does; the agent's and the author's
// never count; a permission API that fails, hangs or lies never merges; the named approver and a
// UI change; and, through the Integration with a real Engine, one question per login per round.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "engine_fixture.h"
#include "fake_github_server.h"
#include "superagent/github.h"
#include "sources/github/channel.h"

namespace superagent::github {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using nlohmann::json;
using superagent::testing::FakeGitHub;

const std::string kHead = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const std::string kRepo = "Codertocat/Hello-World";

class AutoMergeApproversTest : public superagent::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    fake_ = std::make_unique<FakeGitHub>(&clock_);
    http_ = MakeHttpClient("superagent-test");
    client_ = NewClient("t");
    merge_client_ = NewClient("merge-token");
    fake_->permissions = {{"alice", "write"}, {"bob", "admin"}, {"maya", "maintain"}, {"rita", "read"},
                          {"tom", "triage"}, {"octo-dev", "write"}, {"superagent-bot", "write"}};
    // PR #7, opened by the agent for Ticket 3, small, approved by alice on its head.
    AddPull(7, {fake_->MakeReview("alice", "APPROVED", kHead)});
    channel_ = std::make_unique<GitHubChannel>(client_.get(), kRepo, Options());
  }
  void TearDown() override {
    channel_.reset();
    integration_.reset();
    fake_.reset();
    EngineTest::TearDown();
  }

  std::unique_ptr<Client> NewClient(const std::string& token, long timeout_ms = 30'000) {
    ClientOptions o;
    o.api_url = fake_->url();
    o.token = token;
    o.timeout_ms = timeout_ms;
    return std::make_unique<Client>(http_.get(), &clock_, [this](TimeMs ms) { clock_.Advance(ms); }, o);
  }
  ChannelOptions Options() {
    ChannelOptions co;
    co.merge_client = merge_client_.get();
    co.agent_login = [] { return std::string("superagent-bot"); };
    co.ui_path = [](const std::string& path) { return path.rfind("web/", 0) == 0 || path.find(".css") != std::string::npos; };
    return co;
  }
  void AddPull(std::int64_t number, std::vector<json> reviews, const std::string& marker_id = "pr:ticket:3",
               const std::string& author = "superagent-bot") {
    auto lock = fake_->Lock();
    fake_->pulls[number] = fake_->MakePull(number, author, MessageText("Fixes #1.", marker_id), kHead, 3, 1);
    fake_->reviews[number] = std::move(reviews);
  }
  void SetReviews(std::vector<json> reviews, std::int64_t number = 7) {
    auto lock = fake_->Lock();
    fake_->reviews[number] = std::move(reviews);
  }
  json Review(const std::string& login) { return fake_->MakeReview(login, "APPROVED", kHead); }

  Effect Merge(json overrides = json::object(), std::int64_t number = 7) {
    Effect e;
    e.id = 11;
    e.kind = "merge_pull_request";
    e.payload = {{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "merge:ticket:3:" + kHead}, {"ticket", 3},
                 {"number", number}, {"head_sha", kHead}};
    for (const auto& [k, v] : overrides.items()) e.payload[k] = v;
    return e;
  }
  int MergeCalls(std::int64_t number = 7) {
    return fake_->Count("PUT", "/repos/" + kRepo + "/pulls/" + std::to_string(number) + "/merge");
  }
  // Performs the merge and expects a refusal containing `why`, with nothing merged.
  void ExpectRefused(const std::string& why, json overrides = json::object()) {
    Delivery d = channel_->Perform(Merge(overrides), false);
    EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed) << d.error;
    EXPECT_THAT(d.error, StartsWith("auto-merge refused: "));
    EXPECT_THAT(d.error, HasSubstr(why));
    EXPECT_EQ(MergeCalls(), 0);
    EXPECT_FALSE(fake_->pulls[7].value("merged", false));
  }
  void ExpectMerged(json overrides = json::object()) {
    Delivery d = channel_->Perform(Merge(overrides), false);
    EXPECT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
    EXPECT_EQ(MergeCalls(), 1);
  }

  std::unique_ptr<FakeGitHub> fake_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<Client> client_, merge_client_;
  std::unique_ptr<GitHubChannel> channel_;
  std::unique_ptr<Integration> integration_;
};

TEST_F(AutoMergeApproversTest, AStrangersApprovalDoesNotMerge) {
  // On a public repository GitHub answers "read" for anyone; on a private one "none".
  SetReviews({Review("mallory")});
  ExpectRefused("has 0 approvals by people with write access other than its author and the agent; 1 required; "
                "not counted: mallory (read)");
  EXPECT_EQ(fake_->PermissionRequests("mallory"), 1);
  fake_->private_repo = true;
  ExpectRefused("not counted: mallory (none)");
}

TEST_F(AutoMergeApproversTest, AWritersApprovalMerges) {
  for (const char* login : {"alice", "bob", "maya"}) {
    SCOPED_TRACE(login);
    AddPull(7, {Review(login)});
    fake_->ClearLog();
    ExpectMerged();
    EXPECT_EQ(fake_->PermissionRequests(login), 1);
  }
}

TEST_F(AutoMergeApproversTest, ReadOnlyAndTriageCollaboratorsDoNotCount) {
  SetReviews({Review("rita"), Review("tom")});
  ExpectRefused("not counted: rita (read), tom (triage)");
  // A writer beside them merges; they still do not count toward two.
  SetReviews({Review("rita"), Review("tom"), Review("alice")});
  ExpectRefused("has 1 approval by people with write access", {{"required_approvals", 2}});
  ExpectMerged();
}

TEST_F(AutoMergeApproversTest, TheAgentsAndTheAuthorsApprovalsDoNotCount) {
  // The PR's author is a person with write access, and the agent (write access too) approved it.
  AddPull(7, {Review("octo-dev"), Review("SuperAgent-Bot")}, "pr:ticket:3", "octo-dev");
  ExpectRefused("has 0 approvals");
  EXPECT_EQ(fake_->PermissionRequests("octo-dev"), 0) << "the author is never asked about";
  EXPECT_EQ(fake_->PermissionRequests("SuperAgent-Bot"), 0) << "nor is the agent";
  // Until the agent's own login is known, nothing is decided: the delivery waits.
  ChannelOptions co = Options();
  co.agent_login = [] { return std::string(); };
  channel_ = std::make_unique<GitHubChannel>(client_.get(), kRepo, co);
  SetReviews({Review("alice")});
  Delivery d = channel_->Perform(Merge(), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kRetry);
  EXPECT_THAT(d.error, HasSubstr("the agent's own login is not known yet"));
  EXPECT_EQ(MergeCalls(), 0);
}

TEST_F(AutoMergeApproversTest, TheNamedApproverMustBeAWriterAmongTheApprovers) {
  SetReviews({Review("alice"), Review("rita")});
  ExpectRefused("the rule's approver rita approved the head commit ec26c3e57ca3 without write access (read)",
                {{"approver", "rita"}});
  ExpectRefused("the rule's approver bob has not approved", {{"approver", "bob"}});
  SetReviews({Review("alice"), Review("BOB")});
  ExpectMerged({{"approver", "bob"}});
}

TEST_F(AutoMergeApproversTest, AUiChangeNeedsTheNamedApprover) {
  {
    auto lock = fake_->Lock();
    fake_->pull_files[7] = {fake_->MakePullFile("src/main.cpp"), fake_->MakePullFile("web/app.css")};
  }
  ExpectRefused("the change touches the UI (web/app.css), which needs the rule's named approver, and the rule "
                "names none");
  ExpectRefused("the rule's approver bob has not approved", {{"approver", "bob"}});
  // A file moved out of a UI path is a UI change too.
  {
    auto lock = fake_->Lock();
    fake_->pull_files[7] = {fake_->MakePullFile("docs/old-style.md", "renamed", "web/style.css")};
  }
  ExpectRefused("the change touches the UI (docs/old-style.md)");
  // A file list GitHub cannot give is no answer: retried, never merged; one of the wrong shape fails.
  fake_->Script("GET", "/repos/" + kRepo + "/pulls/7/files", {502, {}, R"({"message":"Bad Gateway"})"}, 2);
  EXPECT_EQ(channel_->Perform(Merge(), false).outcome, Delivery::Outcome::kRetry);
  fake_->Script("GET", "/repos/" + kRepo + "/pulls/7/files", {200, {}, R"({"files":[]})"});
  Delivery d = channel_->Perform(Merge(), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("reading its files: page 1 is not a list"));
  fake_->Script("GET", "/repos/" + kRepo + "/pulls/7/files", {200, {}, R"([{"filename": 7}, {"status": "added"}])"});
  d = channel_->Perform(Merge(), false);
  EXPECT_THAT(d.error, HasSubstr("a file without a readable name")) << "unreadable names are taken as UI";
  EXPECT_EQ(MergeCalls(), 0);
  // The named approver approves: merged.
  SetReviews({Review("alice"), Review("bob")});
  ExpectMerged({{"approver", "bob"}});
}

TEST_F(AutoMergeApproversTest, APermissionApiThatFailsOrLiesNeverMerges) {
  const std::string path = "/repos/" + kRepo + "/collaborators/alice/permission";
  const std::vector<std::pair<FakeGitHub::Scripted, std::string>> cases = {
      {{500, {}, R"({"message":"Server Error"})"}, "alice (permission unknown: HTTP 500"},
      {{404, {}, R"({"message":"Not Found","documentation_url":"https://docs.github.com/rest"})"},
       "alice (permission unknown: HTTP 404"},
      {{200, {}, R"({"permission": 7, "role_name": "admin"})"}, "\"permission\" is integer"},
      {{200, {}, R"(["admin"])"}, "the answer is array"},
      {{200, {}, R"({"permission": "superuser"})"}, "unknown permission \"superuser\""},
      {{200, {}, R"({"permission": "管理员", "role_name": "管理员"})"}, "unknown permission \"管理员\""},
      {{200, {}, R"({"permission": "admin", "user": {"login": "mallory"}})"}, "the answer is about another user"},
      {{200, {}, R"({"permission": "write", "user": {"login": "alice", "permissions": {"push": false}}})"},
       "\"write\" without push"},
      {{200, {}, "not json at all"}, "permission unknown"},
  };
  for (const auto& [answer, why] : cases) {
    SCOPED_TRACE(why);
    fake_->ClearScripts();
    fake_->Script("GET", path, answer, -1);
    ExpectRefused(why);
  }
  fake_->ClearScripts();
  // The agent's token without push access: GitHub's 403, said as such.
  fake_->agent_can_push = false;
  ExpectRefused("Must have push access to view collaborator permission.");
  ExpectRefused("(the agent's token needs push access to ask)");
  fake_->agent_can_push = true;
  // A login no GitHub account can have is never put into a URL, whatever the table says.
  fake_->permissions["张伟"] = "admin";
  fake_->permissions["x/../../bob"] = "admin";
  SetReviews({Review("张伟"), Review("x/../../bob"), Review("alice\n")});
  fake_->ClearLog();
  ExpectRefused("not counted: alice\n (not a GitHub login), x/../../bob (not a GitHub login), 张伟 (not a GitHub login)");
  for (const auto& l : fake_->log()) EXPECT_EQ(l.target.find("/collaborators/"), std::string::npos) << l.target;
  ExpectRefused("has 0 approvals", {{"approver", "张伟"}});
}

TEST_F(AutoMergeApproversTest, AHangingPermissionApiIsCutByTheTimeoutAndNeverMerges) {
  client_ = NewClient("t", 300);
  channel_ = std::make_unique<GitHubChannel>(client_.get(), kRepo, Options());
  fake_->Hold("GET", "/repos/" + kRepo + "/collaborators/alice/permission");
  const auto started = std::chrono::steady_clock::now();
  Delivery d = channel_->Perform(Merge(), false);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed) << d.error;
  EXPECT_THAT(d.error, HasSubstr("alice (permission unknown: "));
  EXPECT_LT(took, std::chrono::seconds(10)) << "two attempts of 300 ms, not a wedge";
  EXPECT_EQ(MergeCalls(), 0);
  fake_->Release();
}

// Through the Integration as the daemon wires it, with a real Engine and the Source's rounds:
// within a round each login is asked once, however many approvals and pull requests; the next
// round asks again, so a permission taken away stops counting.
TEST_F(AutoMergeApproversTest, OnePermissionRequestPerLoginPerRound) {
  const std::string install = *views_->InstallId();
  const std::string marker_id = install.substr(0, 12) + "/pr:ticket:3";
  for (std::int64_t n : {7, 8, 9})
    AddPull(n, {Review("alice"), Review("bob"), Review("mallory"), Review("alice")}, marker_id);
  IntegrationOptions o;
  o.client.api_url = fake_->url();
  o.client.token = "t";
  o.source.repo = kRepo;
  o.merge_token = "merge-token";
  auto g = Integration::Create(std::move(o), engine_.get(), views_.get(), &clock_);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  integration_ = std::move(*g);
  integration_->source()->RunOnce();
  ASSERT_EQ(integration_->source()->BotLogin(), "superagent-bot");
  for (std::int64_t n : {7, 8}) {
    Delivery d = integration_->channel()->Perform(Merge({}, n), false);
    EXPECT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  }
  EXPECT_EQ(fake_->PermissionRequests("alice"), 1);
  EXPECT_EQ(fake_->PermissionRequests("bob"), 1);
  EXPECT_EQ(fake_->PermissionRequests("mallory"), 1);
  // alice loses write access, and bob approves no longer; this round still has its answers…
  {
    auto lock = fake_->Lock();
    fake_->permissions["alice"] = "read";
    fake_->reviews[9] = {Review("alice"), Review("mallory")};
  }
  // … and the next round asks again: alice's approval no longer counts.
  integration_->source()->RunOnce();
  Delivery d = integration_->channel()->Perform(Merge({}, 9), false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("not counted: alice (read), mallory (read)"));
  EXPECT_EQ(fake_->PermissionRequests("alice"), 2);
  EXPECT_EQ(MergeCalls(9), 0);
}

}  // namespace
}  // namespace superagent::github
