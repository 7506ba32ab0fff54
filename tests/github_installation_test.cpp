// github.repos: installation (issue 37): a GitHub App's installation lists the repositories the
// daemon serves, at the first step and every kInstallationListMs; its installation_repositories
// and installation webhooks (GitHub's recorded payloads) change them at once. The Integration
// against the loopback fake holding three repositories, a real store, a FakeClock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>

#include "engine_fixture.h"
#include "fake_github_server.h"
#include "result_ok.h"
#include "superagent/github.h"
#include "superagent/views.h"

namespace superagent::github {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using superagent::testing::FakeGitHub;
using superagent::testing::WebhookExample;

constexpr const char* kSecret = "install-hook-secret";
constexpr std::int64_t kInstallation = 957387;  // the recorded payloads' installation

class GitHubInstallationTest : public superagent::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    Open(superagent::testing::MakePolicy("observe", "people: [alice, bob]=>people: [alice, bob, Codertocat]"));
    home_ = std::make_unique<FakeGitHub>(&clock_);
    web_ = std::make_unique<FakeGitHub>(&clock_, /*listen=*/false);
    docs_ = std::make_unique<FakeGitHub>(&clock_, /*listen=*/false);
    home_->repo = "acme/api";
    web_->repo = "acme/web";
    docs_->repo = "acme/docs";
    home_->other_repositories = {{web_->repo, web_.get()}, {docs_->repo, docs_.get()}};
    home_->not_installed = {"acme/docs"};
    for (FakeGitHub* g : {home_.get(), web_.get(), docs_.get()}) {
      g->repo_info = {{"full_name", g->repo}, {"default_branch", "main"}};
      g->issues[1] = WebhookExample("issue_comment", "created")["issue"];
      g->on_request = [this, g](const FakeGitHub::Logged& l) {
        std::lock_guard<std::mutex> lock(mu_);
        sent_.push_back(g->repo + " " + l.method + " " + l.target);
      };
    }
    IntegrationOptions o;
    o.client.api_url = home_->url();
    o.client.token_source = []() -> Result<std::string> { return std::string("ghs_installation_test"); };
    o.source.identity = []() -> Result<std::string> { return std::string("team-agent[bot]"); };
    o.source.read_notifications = false;  // an App has none
    o.source.webhook_secret = kSecret;
    o.installation = true;
    o.installation_id = kInstallation;
    o.loop_wait = &wait_;
    integration_ = Ok(Integration::Create(std::move(o), engine_.get(), views_.get(), &clock_));
  }
  void TearDown() override {
    integration_.reset();
    home_.reset();
    web_.reset();
    docs_.reset();
    EngineTest::TearDown();
  }
  int Count(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const std::string& s : sent_) n += s.rfind(prefix, 0) == 0;
    return n;
  }
  // A signed delivery of the recorded `event`/`action` example, `edit`ed first.
  WebhookReply Deliver(const std::string& event, const std::string& action, const std::function<void(json&)>& edit,
                       int nth = 0) {
    json payload = WebhookExample(event, action, nth);
    payload["installation"]["id"] = kInstallation;
    edit(payload);
    WebhookRequest w{event, "d-" + std::to_string(++deliveries_), "", payload.dump()};
    w.signature = WebhookSignature(kSecret, w.body);
    return integration_->HandleWebhook(w);
  }
  static json Names(std::initializer_list<const char*> names) {
    json out = json::array();
    for (const char* n : names) out.push_back({{"id", 1}, {"full_name", n}, {"name", n}, {"private", true}});
    return out;
  }

  superagent::testing::ClockLoopWait wait_{&clock_};
  std::unique_ptr<FakeGitHub> home_, web_, docs_;
  std::unique_ptr<Integration> integration_;
  std::mutex mu_;
  std::vector<std::string> sent_;
  int deliveries_ = 0;
};

TEST_F(GitHubInstallationTest, TheInstallationsRepositoriesAreListedAtTheFirstStepAndEachIsRead) {
  EXPECT_TRUE(integration_->Repositories().empty()) << "nothing is served before the installation says what";
  EXPECT_EQ(integration_->source(), nullptr);
  integration_->RunDue();
  EXPECT_EQ(Count("acme/api GET /installation/repositories"), 1);
  EXPECT_THAT(integration_->Repositories(), ElementsAre("acme/api", "acme/web"));
  EXPECT_EQ(Count("acme/api GET /repos/acme/api/issues?state=all"), 1);
  EXPECT_EQ(Count("acme/web GET /repos/acme/web/issues?state=all"), 1);
  EXPECT_EQ(Count("acme/docs "), 0) << "not in the installation";
  std::optional<SourceHealth> health;
  for (const SourceHealth& h : Ok(views_->SourcesHealth()))
    if (h.source == "github" && h.path == "installation") health = h;
  ASSERT_TRUE(health);
  EXPECT_EQ(health->consecutive_failures, 0);
}

TEST_F(GitHubInstallationTest, AnAddedRepositoryIsServedAtOnceAndARemovedOneIsNoLongerRead) {
  integration_->RunDue();
  home_->not_installed.clear();
  WebhookReply added = Deliver("installation_repositories", "added",
                               [](json& p) { p["repositories_added"] = Names({"acme/docs"}); });
  EXPECT_EQ(added.status, 200) << added.message;
  EXPECT_THAT(integration_->Repositories(), ElementsAre("acme/api", "acme/web", "acme/docs"));
  // A mention there is taken at once, before its first round: the agent's login is the account's,
  // learnt by another repository's round.
  json mention = WebhookExample("issue_comment", "created");
  mention["comment"] = docs_->MakeComment(9001, 1, "Codertocat", "@team-agent please fix the typo", clock_.NowMs());
  mention["repository"]["full_name"] = "acme/docs";
  WebhookRequest w{"issue_comment", "m-1", "", mention.dump()};
  w.signature = WebhookSignature(kSecret, w.body);
  WebhookReply taken = integration_->HandleWebhook(w);
  EXPECT_EQ(taken.status, 200) << taken.message;
  integration_->RunDue();
  EXPECT_EQ(Count("acme/docs GET /repos/acme/docs/issues?state=all"), 1) << "read at the next step";

  home_->not_installed = {"acme/web"};
  WebhookReply removed = Deliver("installation_repositories", "removed",
                                 [](json& p) { p["repositories_removed"] = Names({"acme/web"}); });
  EXPECT_EQ(removed.status, 200);
  EXPECT_THAT(integration_->Repositories(), ElementsAre("acme/api", "acme/docs"));
  EXPECT_FALSE(Ok(views_->SourceCursors("github:acme/web")).count("reading")) << "the panel no longer lists it";
  EXPECT_TRUE(Ok(views_->SourceCursors("github:acme/docs")).count("reading"));
  const int web_reads = Count("acme/web ");
  for (int i = 0; i < 30; ++i) clock_.Advance(integration_->RunDue());
  EXPECT_EQ(Count("acme/web "), web_reads) << "a removed repository is not read";
  EXPECT_GT(Count("acme/docs GET /repos/acme/docs/issues?state=all"), 1);
  // Its deliveries and its messages are no longer the daemon's to take or write.
  json other = mention;
  other["repository"]["full_name"] = "acme/web";
  WebhookRequest w2{"issue_comment", "m-2", "", other.dump()};
  w2.signature = WebhookSignature(kSecret, w2.body);
  EXPECT_EQ(integration_->HandleWebhook(w2).status, 202);
  Effect e;
  e.kind = "add_reaction";
  e.payload = {{"channel", "github:acme/web:issue:1"}, {"idempotency_key", "r-1"}, {"content", "eyes"}, {"target", "issue"}};
  Delivery d = integration_->Perform(e, false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, ::testing::HasSubstr("no configured repository serves github:acme/web:issue:1"));
}

TEST_F(GitHubInstallationTest, ALostEventIsMadeUpByTheNextListing) {
  integration_->RunDue();
  home_->not_installed = {"acme/api"};  // docs added, api removed, and GitHub's deliveries lost
  clock_.Advance(kInstallationListMs - 1);
  integration_->RunDue();
  EXPECT_THAT(integration_->Repositories(), ElementsAre("acme/api", "acme/web")) << "not yet listed again";
  clock_.Advance(1);
  integration_->RunDue();
  EXPECT_THAT(integration_->Repositories(), ElementsAre("acme/web", "acme/docs"));
  EXPECT_GE(Count("acme/api GET /installation/repositories"), 2);
}

TEST_F(GitHubInstallationTest, AnInstallationDeletedServesNothingAndOneCreatedAgainIsListedAtOnce) {
  integration_->RunDue();
  EXPECT_EQ(Deliver("installation", "deleted", [](json&) {}).status, 200);
  EXPECT_TRUE(integration_->Repositories().empty());
  const int listings = Count("acme/api GET /installation/repositories");
  EXPECT_EQ(Deliver("installation", "created", [](json&) {}).status, 200);
  integration_->RunDue();
  EXPECT_EQ(Count("acme/api GET /installation/repositories"), listings + 1) << "listed at the next step, not in 10 min";
  EXPECT_THAT(integration_->Repositories(), ElementsAre("acme/api", "acme/web"));
}

TEST_F(GitHubInstallationTest, ForeignOrHostileInstallationDeliveriesChangeNothing) {
  integration_->RunDue();
  const std::vector<std::string> before = integration_->Repositories();
  // Another installation of the same App (the webhook URL is the App's, shared by all of them).
  WebhookReply foreign = Deliver("installation_repositories", "added", [](json& p) {
    p["installation"]["id"] = 1;
    p["repositories_added"] = Names({"acme/docs"});
  });
  EXPECT_EQ(foreign.status, 202);
  EXPECT_EQ(Deliver("installation", "deleted", [](json& p) { p["installation"]["id"] = "957387"; }).status, 202)
      << "an id of the wrong type is nobody's";
  // Names that are no repository's, of the wrong type, a list that is no list.
  WebhookReply odd = Deliver("installation_repositories", "added", [](json& p) {
    p["repositories_added"] = json::array({{{"full_name", "团队/仓库"}}, {{"full_name", "../etc"}}, {{"full_name", 7}},
                                           {{"full_name", std::string(100'000, 'a') + "/b"}}, "acme/docs", nullptr});
    p["repositories_removed"] = {{"full_name", "acme/api"}};
  });
  EXPECT_EQ(odd.status, 200);
  EXPECT_EQ(integration_->Repositories(), before);
  // Unsigned: refused before it is read.
  json payload = WebhookExample("installation", "deleted");
  payload["installation"]["id"] = kInstallation;
  WebhookRequest w{"installation", "x", "sha256=" + std::string(64, '0'), payload.dump()};
  EXPECT_EQ(integration_->HandleWebhook(w).status, 401);
  WebhookRequest broken{"installation_repositories", "y", "", "{\"action\": \"added\", \xff"};
  broken.signature = WebhookSignature(kSecret, broken.body);
  EXPECT_EQ(integration_->HandleWebhook(broken).status, 400);
  EXPECT_EQ(integration_->Repositories(), before);
}

TEST_F(GitHubInstallationTest, AListingThatFailsChangesNothingAndSaysSo) {
  integration_->RunDue();
  home_->Script("GET", "/installation/repositories", {500, {}, R"({"message":"Server Error"})"}, -1);
  clock_.Advance(kInstallationListMs);
  integration_->RunDue();
  EXPECT_THAT(integration_->Repositories(), ElementsAre("acme/api", "acme/web"));
  std::optional<SourceHealth> health;
  for (const SourceHealth& h : Ok(views_->SourcesHealth()))
    if (h.source == "github" && h.path == "installation") health = h;
  ASSERT_TRUE(health);
  EXPECT_GE(health->consecutive_failures, 1);
  EXPECT_THAT(health->last_error, ::testing::HasSubstr("500"));
}

TEST(GitHubInstallationOptionsTest, AnInstallationNeedsAnAppAndNoConfiguredList) {
  FakeClock clock;
  IntegrationOptions o;
  o.client.token = "ghp_x";
  o.installation = true;
  auto no_app = Integration::Create(o, nullptr, nullptr, &clock);
  ASSERT_FALSE(no_app.ok());
  EXPECT_THAT(no_app.status().message(), ::testing::HasSubstr("needs a GitHub App"));
  o.client.token_source = []() -> Result<std::string> { return std::string("ghs_x"); };
  o.repos = {"acme/api"};
  auto listed = Integration::Create(o, nullptr, nullptr, &clock);
  ASSERT_FALSE(listed.ok());
  EXPECT_THAT(listed.status().message(), ::testing::HasSubstr("listed, not configured"));
}

}  // namespace
}  // namespace superagent::github
