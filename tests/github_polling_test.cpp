// Polling that scales with repositories (issue 37): the account's notifications read once for
// every repository, quiet repositories read less often, one pace and one hourly budget for all.
// The Integration's loop step (RunDue) against the loopback fake holding three repositories, a
// real store and Engine, and a FakeClock the loop's waits move (nothing here sleeps).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "engine_fixture.h"
#include "fake_github_server.h"
#include "panel/metrics_gather.h"
#include "result_ok.h"
#include "superagent/github.h"
#include "superagent/views.h"

namespace superagent::github {
namespace {

using nlohmann::json;
using superagent::testing::FakeGitHub;
using superagent::testing::WebhookExample;

constexpr const char* kHookSecret = "poll-hook-secret";

TEST(ReadIntervalTest, DoublesWithEachQuietRoundUpToTheQuietIntervalAndIsTheBaseWhilePeopleWait) {
  EXPECT_EQ(ReadIntervalMs(60'000, 600'000, false, 0), 60'000);
  EXPECT_EQ(ReadIntervalMs(60'000, 600'000, false, 1), 120'000);
  EXPECT_EQ(ReadIntervalMs(60'000, 600'000, false, 3), 480'000);
  EXPECT_EQ(ReadIntervalMs(60'000, 600'000, false, 4), 600'000);
  EXPECT_EQ(ReadIntervalMs(60'000, 600'000, false, 62), 600'000) << "no overflow however long it was quiet";
  EXPECT_EQ(ReadIntervalMs(60'000, 600'000, true, 9), 60'000);
  EXPECT_EQ(ReadIntervalMs(120'000, 60'000, false, 5), 120'000) << "never less often than the base… nor more";
  EXPECT_EQ(ReadIntervalMs(60'000, 600'000, false, -3), 60'000);
}

class GitHubPollingTest : public superagent::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    Open(superagent::testing::MakePolicy("observe", "people: [alice, bob]=>people: [alice, bob, Codertocat]"));
    t0_ = clock_.NowMs();
    home_ = std::make_unique<FakeGitHub>(&clock_);
    web_ = std::make_unique<FakeGitHub>(&clock_);
    docs_ = std::make_unique<FakeGitHub>(&clock_);
    home_->repo = "acme/api";
    web_->repo = "acme/web";
    docs_->repo = "acme/docs";
    home_->other_repositories = {{web_->repo, web_.get()}, {docs_->repo, docs_.get()}};
    for (FakeGitHub* g : {home_.get(), web_.get(), docs_.get()}) {
      g->repo_info = {{"full_name", g->repo}, {"default_branch", "master"}};
      json issue = WebhookExample("issue_comment", "created")["issue"];
      issue["updated_at"] = g->Iso(t0_ - 86'400'000);
      g->issues[1] = issue;
      g->on_request = [this, g](const FakeGitHub::Logged& l) {
        std::lock_guard<std::mutex> lock(mu_);
        sent_.push_back({clock_.NowMs(), g->repo, l.method + " " + l.target, l.status});
      };
    }
    options_.client.api_url = home_->url();
    options_.client.token = "ghp_polling_test";
    options_.source.webhook_secret = kHookSecret;
    options_.source.first_run_lookback_ms = 60'000;
    options_.repos = {"acme/api", "acme/web", "acme/docs"};
    options_.loop_wait = &wait_;
    options_.source.tracked_pulls = [this]() -> Result<std::vector<TrackedPull>> {
      std::lock_guard<std::mutex> lock(mu_);
      return tracked_;
    };
  }
  void TearDown() override {
    integration_.reset();
    home_.reset();
    web_.reset();
    docs_.reset();
    EngineTest::TearDown();
  }
  void Make() {
    integration_.reset();
    integration_ = Ok(Integration::Create(options_, engine_.get(), views_.get(), &clock_));
  }
  // RunDue, then the clock moved to when it says the next step is due.
  void Step() { clock_.Advance(integration_->RunDue()); }
  RepositoryReading Reading(const std::string& repo) {
    for (const RepositoryReading& r : integration_->Readings())
      if (r.repo == repo) return r;
    ADD_FAILURE() << "no reading for " << repo;
    return {};
  }
  struct Sent {
    TimeMs at;
    std::string repo, request;
    int status;
  };
  // Requests whose target starts with `prefix` (any repository's fake), from index `from` on.
  int Count(const std::string& prefix, std::size_t from = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (std::size_t i = from; i < sent_.size(); ++i) n += sent_[i].request.rfind(prefix, 0) == 0;
    return n;
  }
  // Requests exactly `request` ("GET /repos/acme/web/pulls/1").
  int Exactly(const std::string& request) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const Sent& s : sent_) n += s.request == request;
    return n;
  }
  std::size_t Mark() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_.size();
  }
  // Codertocat mentions the agent on issue 1 of `g`'s repository, and the account is notified.
  void Mention(FakeGitHub& g, std::int64_t id) {
    auto lock = g.Lock();
    g.comments.push_back(g.MakeComment(id, 1, "Codertocat", "@superagent-bot 请修一下 README 里的错字 ✍️", clock_.NowMs()));
    auto home_lock = &g == home_.get() ? std::unique_lock<std::mutex>() : home_->Lock();
    home_->notifications.push_back(g.MakeNotification(std::to_string(id), 1, false, clock_.NowMs()));
  }

  TimeMs t0_ = 0;
  superagent::testing::ClockLoopWait wait_{&clock_};
  std::unique_ptr<FakeGitHub> home_, web_, docs_;
  IntegrationOptions options_;
  std::unique_ptr<Integration> integration_;
  std::mutex mu_;
  std::vector<Sent> sent_;
  std::vector<TrackedPull> tracked_;
};

TEST_F(GitHubPollingTest, OneNotificationsReadServesEveryRepositoryAndEachDiscussionIsReadInItsOwn) {
  Make();
  Step();
  EXPECT_EQ(Count("GET /notifications"), 1) << "one read for three repositories";
  for (const char* repo : {"acme/api", "acme/web", "acme/docs"})
    EXPECT_EQ(Count(std::string("GET /repos/") + repo + "/issues?state=all"), 1) << repo << ": its first round";

  const std::size_t mark = Mark();
  const TimeMs said_at = clock_.NowMs();
  Mention(*web_, 7001);
  Step();
  EXPECT_EQ(Count("GET /notifications", mark), 1);
  EXPECT_EQ(Count("GET /repos/acme/web/issues/1/comments", mark), 1) << "the notified discussion, from its own cursor";
  EXPECT_EQ(Count("GET /repos/acme/api/issues/1", mark), 0) << "the other repositories' issue 1 is not theirs";
  EXPECT_EQ(Count("GET /repos/acme/docs/issues/1", mark), 0);
  TriggerRecord trigger = Ok(views_->GetTrigger("github:comment:7001@" + web_->Iso(said_at)));
  EXPECT_EQ(trigger.trigger.threads.front(), "github:acme/web:issue:1");
  EXPECT_EQ(Reading("acme/web").why, "active");
  // The account's cursor is the platform's; the discussion's is its repository's.
  auto platform = Ok(views_->SourceCursors("github"));
  EXPECT_TRUE(platform.count("notifications"));
  EXPECT_TRUE(platform.count("rate"));
  EXPECT_TRUE(Ok(views_->SourceCursors("github:acme/web")).count("issue:1"));
  EXPECT_FALSE(Ok(views_->SourceCursors("github:acme/api")).count("issue:1"));
}

TEST_F(GitHubPollingTest, AQuietRepositoryIsReadLessOftenAndOneWithATicketsPullRequestEveryRound) {
  tracked_ = {{1, "acme/api", 1, "superagent/ticket-1"}};
  Make();
  std::map<std::string, std::vector<TimeMs>> rounds;
  std::map<std::string, TimeMs> last;
  while (clock_.NowMs() - t0_ < 40 * 60'000) {
    Step();
    for (const RepositoryReading& r : integration_->Readings())
      if (r.last_at != last[r.repo]) rounds[r.repo].push_back(last[r.repo] = r.last_at);
  }
  auto gaps = [&](const std::string& repo) {
    std::vector<TimeMs> out;
    for (std::size_t i = 1; i < rounds[repo].size(); ++i) out.push_back((rounds[repo][i] - rounds[repo][i - 1]) / 1000);
    return out;
  };
  // acme/web: each quiet round doubles the wait, up to the quiet interval.
  EXPECT_THAT(gaps("acme/web"), ::testing::ElementsAre(120, 240, 480, 600, 600));
  EXPECT_EQ(Reading("acme/web").why, "quiet");
  EXPECT_EQ(Reading("acme/web").interval_ms, 600'000);
  // acme/api has a Ticket's pull request: someone waits, so every round.
  for (TimeMs gap : gaps("acme/api")) EXPECT_EQ(gap, 60);
  EXPECT_GE(rounds["acme/api"].size(), 40u);
  EXPECT_EQ(Reading("acme/api").why, "people wait");
  // Once the answers are cached, a quiet repository's reads are free 304s: GitHub counts none.
  std::lock_guard<std::mutex> lock(mu_);
  int counted = 0, free = 0;
  for (const Sent& s : sent_) {
    if (s.repo != "acme/web" || s.at < t0_ + 10 * 60'000) continue;
    (s.status == 304 ? free : counted) += 1;
  }
  EXPECT_EQ(counted, 0);
  EXPECT_GT(free, 0);
  // The reading is kept as the repository's cursor, for the panel and the next start.
  json saved = json::parse(Ok(views_->SourceCursors("github:acme/web")).at("reading"));
  EXPECT_EQ(saved["why"], "quiet");
  EXPECT_EQ(saved["interval_ms"], 600'000);
}

TEST_F(GitHubPollingTest, AMentionOrAWebhookMakesAQuietRepositoryActiveAgain) {
  Make();
  while (clock_.NowMs() - t0_ < 20 * 60'000) Step();
  ASSERT_EQ(Reading("acme/docs").interval_ms, 600'000);
  // A webhook for acme/docs: taken, and its next round comes within the base interval.
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"] = docs_->MakeComment(8001, 1, "Codertocat", "@superagent-bot please look", clock_.NowMs());
  payload["repository"]["full_name"] = "acme/docs";
  WebhookRequest w{"issue_comment", "d-1", "", payload.dump()};
  w.signature = WebhookSignature(kHookSecret, w.body);
  EXPECT_EQ(integration_->HandleWebhook(w).status, 200);
  EXPECT_LE(Reading("acme/docs").next_at, clock_.NowMs() + 60'000);
  EXPECT_EQ(Reading("acme/docs").quiet_rounds, 0);
  // A notification for acme/web does as much for it.
  ASSERT_EQ(Reading("acme/web").interval_ms, 600'000);
  Mention(*web_, 8002);
  clock_.Advance(60'000);
  integration_->RunDue();
  EXPECT_EQ(Reading("acme/web").quiet_rounds, 0);
  EXPECT_LE(Reading("acme/web").next_at, clock_.NowMs() + 60'000);
}

TEST_F(GitHubPollingTest, WithNeitherNotificationsNorWebhooksEveryRepositoryIsReadEveryRound) {
  options_.source.read_notifications = false;
  options_.source.webhook_secret.clear();
  Make();
  while (clock_.NowMs() - t0_ < 10 * 60'000) Step();
  EXPECT_EQ(Count("GET /notifications"), 0);
  for (const RepositoryReading& r : integration_->Readings()) EXPECT_EQ(r.interval_ms, 60'000) << r.repo;
  EXPECT_GE(Count("GET /repos/acme/docs/issues?state=all"), 10);
}

TEST_F(GitHubPollingTest, TheHoursBudgetStopsRepoWideReadsButNotWhatPeopleWaitFor) {
  // GET /user, /notifications and acme/api's six listings (issues, comments, review comments,
  // the repository, its runs and check runs): the budget is spent once acme/api was read.
  options_.source.request_budget_per_hour = 8;
  tracked_ = {{1, "acme/docs", 1, "superagent/ticket-1"}};
  {
    auto lock = docs_->Lock();
    docs_->pulls[1] = docs_->MakePull(1, "superagent-bot", "Fixes #1", "c0ffee01", 1, 1);
  }
  Make();
  integration_->RunDue();
  EXPECT_EQ(Count("GET /repos/acme/api/issues?state=all"), 1);
  EXPECT_EQ(Count("GET /repos/acme/web/"), 0) << "nothing of acme/web is awaited: it waits for the budget";
  EXPECT_EQ(Reading("acme/web").why, "budget");
  EXPECT_EQ(Reading("acme/web").quiet_rounds, 0) << "a round cut short says nothing of its quiet";
  // A Ticket's pull request is read whatever the budget says; acme/docs' listings wait.
  EXPECT_EQ(Exactly("GET /repos/acme/docs/pulls/1"), 1);
  EXPECT_EQ(Count("GET /repos/acme/docs/issues?state=all"), 0);
  EXPECT_EQ(Reading("acme/docs").why, "people wait");
  json rate = json::parse(Ok(views_->SourceCursors("github")).at("rate"));
  EXPECT_GE(rate["counted_last_hour"].get<int>(), 8);
  EXPECT_EQ(rate["budget_per_hour"], 8);
  // /metrics shows the account's rate limit as GitHub last said it.
  metrics::Snapshot snapshot = Ok(panel::GatherMetrics(*engine_, *views_, 1, 3, std::nullopt, std::nullopt, clock_.NowMs()));
  ASSERT_TRUE(snapshot.github_rate.has_value());
  EXPECT_EQ(snapshot.github_rate->limit, 5000);
  EXPECT_EQ(snapshot.github_rate->remaining, rate["remaining"].get<int>());
  EXPECT_LT(snapshot.github_rate->remaining, 5000);
  // An hour on, the counted requests have aged out and the listings are read again.
  clock_.Advance(61 * 60'000);
  integration_->RunDue();
  EXPECT_EQ(Count("GET /repos/acme/web/issues?state=all"), 1);
  EXPECT_EQ(Count("GET /repos/acme/docs/issues?state=all"), 1);
  EXPECT_EQ(Reading("acme/web").why, "quiet");
}

TEST_F(GitHubPollingTest, EveryRepositorysRequestsTogetherKeepThePace) {
  options_.max_requests_per_minute = 5;
  Make();
  integration_->RunDue();
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_GT(sent_.size(), 10u) << "the first reads of three repositories";
  for (std::size_t i = 0; i + 5 < sent_.size(); ++i)
    EXPECT_GE(sent_[i + 5].at - sent_[i].at, 60'000) << "six requests within a minute, from " << sent_[i].request;
  EXPECT_GE(sent_.back().at - sent_.front().at, 2 * 60'000);
}

// A first start, nothing stored: a delivery that came before the agent's login was known waits,
// and is taken once any repository's round learnt it — not minutes later at its own round.
TEST_F(GitHubPollingTest, ADeliveryThatWaitedForTheIdentityIsTakenOnceAnyRoundLearntIt) {
  options_.max_requests_per_minute = 5;  // the first rounds of three repositories take minutes
  Make();
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"] = docs_->MakeComment(8101, 1, "Codertocat", "@superagent-bot 请看一下 ✍️", clock_.NowMs());
  payload["repository"]["full_name"] = "acme/docs";
  WebhookRequest w{"issue_comment", "early-1", "", payload.dump()};
  w.signature = WebhookSignature(options_.source.webhook_secret, w.body);
  WebhookReply early = integration_->HandleWebhook(w);
  EXPECT_EQ(early.status, 202) << early.message;
  integration_->RunDue();
  TriggerRecord taken = Ok(views_->GetTrigger("github:comment:8101@" + docs_->Iso(t0_)));
  EXPECT_LT(taken.received_at, Reading("acme/docs").last_at) << "taken before acme/docs' own round began";
  EXPECT_GT(Reading("acme/docs").last_at - t0_, 60'000) << "the pace put that round minutes after the start";
}

TEST_F(GitHubPollingTest, ARestartReadsEveryRepositoryAtOnceThoseWithPeopleWaitingFirstAndKeepsTheQuiet) {
  Make();
  while (clock_.NowMs() - t0_ < 20 * 60'000) Step();
  tracked_ = {{1, "acme/docs", 1, "superagent/ticket-1"}};
  // acme/docs learns at its next round that someone waits on it.
  for (int i = 0; i < 20 && Reading("acme/docs").why != "people wait"; ++i) Step();
  ASSERT_EQ(Reading("acme/docs").why, "people wait");
  const int quiet = Reading("acme/web").quiet_rounds;
  ASSERT_GE(quiet, 4);
  Make();  // a restart: a new Integration over the same store
  const std::size_t mark = Mark();
  integration_->RunDue();
  EXPECT_EQ(Count("GET /repos/", mark) > 0, true);
  std::vector<std::string> order;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = mark; i < sent_.size(); ++i)
      if (sent_[i].request.find("/issues?state=all") != std::string::npos) order.push_back(sent_[i].repo);
  }
  EXPECT_THAT(order, ::testing::ElementsAre("acme/docs", "acme/api", "acme/web"));
  EXPECT_EQ(Reading("acme/web").quiet_rounds, quiet + 1) << "the quiet it had before the restart goes on";
  EXPECT_EQ(Reading("acme/web").interval_ms, 600'000);
}

TEST_F(GitHubPollingTest, AnotherRepositorysNotificationIsLeftAloneAndAFailedReadBecomesItsRepositorysRetry) {
  Make();
  Step();
  // The account is notified of a repository this daemon does not serve, of a malformed thread,
  // and of acme/web's issue 2, which GitHub fails to read.
  {
    auto lock = home_->Lock();
    json foreign = home_->MakeNotification("90", 1, false, clock_.NowMs());
    foreign["repository"]["full_name"] = "someone/else";
    json broken = home_->MakeNotification("91", 1, false, clock_.NowMs());
    broken["repository"]["full_name"] = nullptr;
    json cjk = home_->MakeNotification("92", 1, false, clock_.NowMs());
    cjk["repository"]["full_name"] = "团队/仓库";
    home_->notifications = {foreign, broken, cjk, web_->MakeNotification("93", 2, false, clock_.NowMs())};
  }
  web_->Script("GET", "/repos/acme/web/issues/2", {500, {}, R"({"message":"Server Error"})"}, 10);
  clock_.Advance(60'000);
  const std::size_t mark = Mark();
  integration_->RunDue();
  EXPECT_EQ(Count("GET /repos/someone/else", mark), 0);
  auto web = Ok(views_->SourceCursors("github:acme/web"));
  ASSERT_TRUE(web.count("retry:issue:2")) << "kept for retry by its own repository";
  // SPEC §3.3: the account's cursor still moves on.
  json global = json::parse(Ok(views_->SourceCursors("github")).at("notifications"));
  EXPECT_TRUE(global.contains("newest"));
  std::optional<SourceHealth> health;
  for (const SourceHealth& h : Ok(views_->SourcesHealth()))
    if (h.source == "github" && h.path == "notifications") health = h;
  ASSERT_TRUE(health);
  EXPECT_EQ(health->skipped_items, 2) << "the null name and the name that is no repository";
  // A failed item is someone waiting: acme/web is read every round until the item is read.
  const int tries = Count("GET /repos/acme/web/issues/2");
  for (int i = 0; i < 3; ++i) Step();
  EXPECT_EQ(Reading("acme/web").why, "people wait");
  EXPECT_EQ(Reading("acme/web").interval_ms, 60'000);
  EXPECT_GT(Count("GET /repos/acme/web/issues/2"), tries);
}

}  // namespace
}  // namespace superagent::github
