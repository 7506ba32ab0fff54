// The GitHub Source and Channel acting as a GitHub App (issue 25), against the loopback fake in
// its App mode — on github.com's paths and under GitHub Enterprise Server's /api/v3 prefix: the
// identity "<slug>[bot]", mentions without notifications (webhook first, polling as the safety
// net), installation tokens renewed before expiry and after a 401 without a lost or doubled
// message, and the check run that shows a Ticket's stage on its pull request. The real HTTP client, real
// SQLite, a FakeClock; nothing sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine_fixture.h"
#include "fake_github_server.h"
#include "github_app_keys.h"
#include "result_ok.h"
#include "superagent/effects.h"
#include "superagent/github.h"
#include "sources/github/channel.h"
#include "superagent/github_app.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

constexpr const char* kSecret = "app-webhook-s3cret";

class GitHubAppTest : public EngineTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    options_.check_runs = true;
    options_.panel_url = "https://agent.example.com";
    EngineTest::SetUp();
    Open(MakePolicy("observe", "people: [alice, bob]=>people: [alice, bob, Codertocat]"));
    t0_ = clock_.NowMs();
    fake_ = std::make_unique<FakeGitHub>(&clock_);
    fake_->prefix = GetParam();
    fake_->UseApp(key_.key);
    fake_->issues[1] = WebhookExample("issue_comment", "created")["issue"];
    fake_->issues[2] = fake_->issues[1];
    fake_->issues[2]["number"] = 2;
    http_ = MakeHttpClient("superagent-test");
    github::AppAuthOptions a;
    a.api_url = fake_->api_url();
    a.app_id = "12345";
    a.private_key_pem = key_.pem;
    a.repo = fake_->repo;  // the installation is found, as with github.app_installation_id empty
    tokens_ = std::make_shared<github::InstallationTokens>(http_.get(), &clock_, a);
    github::ClientOptions co;
    co.api_url = fake_->api_url();
    co.token_source = [t = tokens_] { return t->Token(); };
    co.token_rejected = [t = tokens_] { t->Invalidate(); };
    client_ = std::make_unique<github::Client>(http_.get(), &clock_, [this](TimeMs ms) { clock_.Advance(ms); }, co);
    github::SourceOptions so;
    so.repo = fake_->repo;
    so.webhook_secret = kSecret;
    so.first_run_lookback_ms = 60'000;
    so.identity = [t = tokens_] { return t->BotLogin(); };
    so.read_notifications = false;
    so.tracked_pulls = [this] {
      std::vector<github::TrackedPull> out;
      for (const TicketPull& p : Ok(views_->TrackedPulls())) out.push_back({p.ticket, p.repo, p.number, p.head_branch});
      return out;
    };
    source_ = std::make_unique<github::Source>(engine_.get(), views_.get(), client_.get(), &clock_, so);
    github::ChannelOptions ch;
    ch.install_id = Ok(views_->InstallId());
    channel_ = std::make_unique<github::GitHubChannel>(client_.get(), fake_->repo, ch);
  }
  void TearDown() override {
    source_.reset();
    channel_.reset();
    client_.reset();
    tokens_.reset();
    fake_.reset();
    EngineTest::TearDown();
  }
  // Codertocat's comment `id` on issue `number` mentioning the App, written at t0 + `offset_ms`.
  json Mention(std::int64_t id, TimeMs offset_ms, std::int64_t number = 1) {
    json c = fake_->MakeComment(id, number, "Codertocat", "@team-agent 请修复 README 里的错字 please fix the typo in README",
                                t0_ + offset_ms);
    auto lock = fake_->Lock();
    fake_->comments.push_back(c);
    return c;
  }
  static std::string CommentId(const json& c) {
    return "github:comment:" + std::to_string(c["id"].get<std::int64_t>()) + "@" + c["updated_at"].get<std::string>();
  }
  github::WebhookReply DeliverComment(const json& comment, const std::string& delivery) {
    json payload = WebhookExample("issue_comment", "created");
    payload["comment"] = comment;
    const std::string body = payload.dump();
    return source_->HandleWebhook({"issue_comment", delivery, github::WebhookSignature(kSecret, body), body});
  }
  // Runs the outbox until nothing more is due; returns how many Effects it performed.
  int Flush() {
    EffectsLoop loop(engine_.get(), {channel_.get()}, &clock_, {}, 7);
    int total = 0;
    for (int i = 0; i < 10; ++i) {
      auto n = loop.RunOnce();
      EXPECT_TRUE(n.ok()) << n.status().ToString();
      if (!n.ok() || *n == 0) break;
      total += *n;
    }
    return total;
  }
  std::string Under(const std::string& path) const { return GetParam() + path; }
  std::string Comments(int number = 1) const {
    return Under("/repos/" + fake_->repo + "/issues/" + std::to_string(number) + "/comments");
  }
  std::vector<json> CheckRuns() {
    auto lock = fake_->Lock();
    std::vector<json> out;
    for (const json& r : fake_->check_runs)
      if (r.value("name", "") == github::kCheckRunName) out.push_back(r);
    return out;
  }

  TestKey key_;
  TimeMs t0_ = 0;
  std::unique_ptr<FakeGitHub> fake_;
  std::unique_ptr<HttpClient> http_;
  std::shared_ptr<github::InstallationTokens> tokens_;
  std::unique_ptr<github::Client> client_;
  std::unique_ptr<github::Source> source_;
  std::unique_ptr<github::GitHubChannel> channel_;
};

TEST_P(GitHubAppTest, AMentionByWebhookIsAcknowledgedOnceBySlugBot) {
  clock_.Advance(1'000);
  github::RoundReport first = source_->RunOnce();  // learns who it is: GET /app, never GET /user
  EXPECT_TRUE(first.errors.empty()) << first.errors.front();
  EXPECT_EQ(source_->BotLogin(), "team-agent[bot]");
  json c = Mention(492700400, 2'000);
  github::WebhookReply w = DeliverComment(c, "d-1");
  EXPECT_EQ(w.status, 200) << w.message;
  auto rec = views_->GetTrigger(CommentId(c));
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_TRUE(rec->trigger.addressed) << "@team-agent addresses team-agent[bot]";
  EXPECT_EQ(rec->via, "webhook");
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(Flush(), 1);
  ASSERT_EQ(fake_->Count("POST", Comments()), 1);
  json posted;
  {
    auto lock = fake_->Lock();
    posted = fake_->comments.back();
  }
  EXPECT_EQ(posted["user"]["login"], "team-agent[bot]");

  // The same delivery again, and the round that reads the repository's comments: one Trigger,
  // and the App's own acknowledgement is recognised as its own.
  EXPECT_EQ(DeliverComment(c, "d-1").message, "duplicate");
  clock_.Advance(61'000);
  github::RoundReport next = source_->RunOnce();
  EXPECT_EQ(next.stored, 0);
  auto own = views_->GetTrigger(CommentId(posted));
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(own->filter_reason, "own_message");
  EXPECT_EQ(Drain(), 0);
  EXPECT_EQ(Flush(), 0);
  EXPECT_EQ(fake_->Count("POST", Comments()), 1) << "acknowledged once";
  EXPECT_EQ(fake_->Count("GET", Under("/notifications")), 0) << "an App has no notifications";
  EXPECT_EQ(fake_->Count("GET", Under("/user")), 0);
  for (const auto& l : fake_->log()) {
    EXPECT_EQ(l.target.rfind(GetParam() + "/", 0), 0u) << l.target;
    EXPECT_NE(l.status, 401) << l.target << ": " << fake_->last_refusal;
  }
}

TEST_P(GitHubAppTest, TheSameMentionIsCaughtByPollingWhenTheWebhookIsLost) {
  json c = Mention(492700401, 1'000);
  clock_.Advance(10'000);
  github::RoundReport r = source_->RunOnce();
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.stored, 1);
  EXPECT_FALSE(r.notifications_polled);
  auto rec = views_->GetTrigger(CommentId(c));
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_TRUE(rec->trigger.addressed);
  EXPECT_EQ(rec->via, "poll:comments");
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(Flush(), 1);
  EXPECT_EQ(fake_->Count("POST", Comments()), 1);
  // The webhook arrives late after all: the same Trigger, nothing more said.
  EXPECT_EQ(DeliverComment(c, "late").message, "duplicate");
  EXPECT_EQ(Drain(), 0);
  EXPECT_EQ(fake_->Count("GET", Under("/notifications")), 0);
  EXPECT_EQ(fake_->tokens_issued, 1) << "one token served every request of the round";
  // The next round reads the App's own acknowledgement; an idle round after it costs
  // conditional requests only (free 304s), and no new token.
  clock_.Advance(61'000);
  source_->RunOnce();
  clock_.Advance(61'000);
  const int before = static_cast<int>(fake_->log().size());
  source_->RunOnce();
  int answered_200 = 0;
  auto log = fake_->log();
  for (std::size_t i = before; i < log.size(); ++i)
    if (log[i].method == "GET" && log[i].status == 200 && log[i].target.find("/issues/comments") != std::string::npos)
      ++answered_200;
  EXPECT_EQ(answered_200, 0) << "an unchanged listing is a 304";
}

TEST_P(GitHubAppTest, TokensAreRenewedBeforeExpiryAndAfterA401WithoutALostOrDoubledMessage) {
  source_->RunOnce();
  auto say = [&](const std::string& id, std::int64_t number) {
    json c = Mention(std::stoll(id), 1'000, number);
    ASSERT_EQ(DeliverComment(c, "d-" + id).status, 200);
    assessor_.answers.push_back(ScriptedAssessor::Accept());
    ASSERT_EQ(Drain(), 1);
  };
  say("7001", 1);
  EXPECT_EQ(Flush(), 1);
  EXPECT_EQ(fake_->tokens_issued, 1);
  // 56 minutes on: the token has four minutes left and is replaced before use, with no 401.
  clock_.Advance(56 * 60'000);
  ASSERT_TRUE(engine_->EnqueueAction("add_reaction", json{{"channel", "github:codertocat/hello-world:issue:1"},
                                                           {"idempotency_key", "react-1"},
                                                           {"content", "eyes"},
                                                           {"target", "issue"}})
                  .ok());
  EXPECT_EQ(Flush(), 1);
  EXPECT_EQ(fake_->tokens_issued, 2);
  int refused = 0;
  for (const auto& l : fake_->log()) refused += l.status == 401;
  EXPECT_EQ(refused, 0) << "an expiring token is renewed, never used until refused";

  // GitHub revokes the token (the App's permissions changed): the comment is refused once with
  // 401, a fresh token is fetched, and the comment is posted exactly once.
  fake_->RevokeInstallationTokens();
  say("7002", 2);
  EXPECT_EQ(Flush(), 1);
  EXPECT_EQ(fake_->tokens_issued, 3);
  EXPECT_EQ(fake_->Count("POST", Comments(1)), 1);
  EXPECT_EQ(fake_->Count("POST", Comments(2)), 2) << "refused once, then posted once";
  {
    auto lock = fake_->Lock();
    int on_two = 0;
    for (const json& c : fake_->comments)
      on_two += c["user"]["login"] == "team-agent[bot]" && c["issue_url"].get<std::string>().find("/issues/2") != std::string::npos;
    EXPECT_EQ(on_two, 1) << "the acknowledgement exists once: none lost, none doubled";
  }
  refused = 0;
  for (const auto& l : fake_->log()) refused += l.status == 401;
  EXPECT_EQ(refused, 1);
}

TEST_P(GitHubAppTest, ACheckRunFollowsATicketsStagesOnItsPullRequest) {
  source_->RunOnce();
  ASSERT_EQ(DeliverComment(Mention(8001, 1'000), "d-8001").status, 200);
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId t = 1;
  // The worker's turn ends ready with a PR, as the executor reports it.
  const std::int64_t pending = PendingAssignment(t);
  ASSERT_NE(pending, 0);
  WorkspaceRecord w;
  w.ticket = t;
  w.dir = (dir_ / "work-1").string();
  w.branch = "superagent/ticket-1";
  w.base = "origin/master";
  auto begun = engine_->BeginTurn(pending, "builtin", w);
  ASSERT_TRUE(begun.ok()) << begun.status().ToString();
  TurnEnd end;
  end.assignment = begun->assignment.id;
  end.reported = Stage::kReady;
  end.summary = "Fixed the typo.";
  end.actions.emplace_back("open_pull_request", json{{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "pr:ticket:1"},
                                                     {"ticket", t}, {"head", "superagent/ticket-1"}, {"base", "master"},
                                                     {"title", "Fix the typo"}, {"body", "Fixes #1."}});
  ASSERT_TRUE(engine_->FinishTurn(end).ok());
  Flush();  // acknowledgement, PR, result, and the PR's first check run
  ASSERT_EQ(fake_->pulls.size(), 1u);
  const std::int64_t number = fake_->pulls.begin()->first;
  const std::string head = FakeGitHub::HeadSha(number);
  auto runs = CheckRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["head_sha"], head);
  EXPECT_EQ(runs[0]["status"], "completed");
  EXPECT_EQ(runs[0]["conclusion"], "success");
  EXPECT_EQ(runs[0]["output"]["title"], "Ticket #1 is ready for review");
  EXPECT_EQ(runs[0]["details_url"], "https://agent.example.com/#ticket-1");
  EXPECT_EQ(fake_->Count("POST", Under("/repos/" + fake_->repo + "/check-runs")), 1);

  // A review asks for more: the Ticket works again (a new check run in progress — a finished one
  // is not reopened), then asks a person, then is blocked.
  ASSERT_TRUE(EngineTestPeer(*engine_).SetStage(t, Stage::kWorking, "a review asked for more").ok());
  Flush();
  runs = CheckRuns();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1]["status"], "in_progress");
  EXPECT_FALSE(runs[1].contains("conclusion"));
  HumanAction ask;
  ask.thread = "github:codertocat/hello-world:issue:1";
  ask.actor = "Codertocat";
  ask.question = "Keep the British spelling? 保留英式拼写吗？";
  ASSERT_TRUE(EngineTestPeer(*engine_).AskPerson(t, ask, "ask-1").ok());
  Flush();
  runs = CheckRuns();
  ASSERT_EQ(runs.size(), 2u) << "an unfinished check run is updated in place";
  EXPECT_EQ(runs[1]["status"], "in_progress");
  EXPECT_EQ(runs[1]["output"]["title"], "Ticket #1 is waiting for Codertocat");
  EXPECT_THAT(runs[1]["output"]["summary"].get<std::string>(), HasSubstr("保留英式拼写吗"));
  ASSERT_TRUE(engine_->AnswerQuestion(t, "Codertocat", json("yes")).ok());
  ASSERT_TRUE(EngineTestPeer(*engine_).SetStage(t, Stage::kBlocked, "tests fail").ok());
  Flush();
  runs = CheckRuns();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1]["conclusion"], "action_required");
  EXPECT_EQ(runs[1]["output"]["title"], "Ticket #1 is blocked and needs a person");
  EXPECT_EQ(runs[0]["conclusion"], "success") << "the earlier commit's check run is left as it was";

  // Its own check run, read back by the CI poll on the PR's head, is never CI news for the Ticket.
  clock_.Advance(61'000);
  github::RoundReport r = source_->RunOnce();
  for (const auto& e : r.errors) ADD_FAILURE() << e;
  for (const TicketInput& in : Ok(views_->TicketInputs(t)))
    EXPECT_EQ(in.body.dump().find("check run"), std::string::npos) << in.body.dump();
}

// A retried update older than what the check run shows is not sent; GitHub's refusal of check
// runs to a non-App token is a final failure naming the permission.
TEST_P(GitHubAppTest, ALateRetryNeverShowsAnOlderStageAndARefusalSaysWhy) {
  {
    auto lock = fake_->Lock();
    fake_->pulls[5] = fake_->MakePull(5, "alice", "body", FakeGitHub::HeadSha(5), 1, 1);
  }
  auto perform = [&](const std::string& stage, std::int64_t at) {
    Effect e;
    e.kind = "check_run";
    e.payload = {{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "k" + std::to_string(at)}, {"ticket", 9},
                 {"number", 5}, {"stage", stage}, {"at", at}, {"title", "Ticket #9: " + stage}};
    return channel_->Perform(e, false);
  };
  EXPECT_EQ(perform("working", 10).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(perform("ready", 12).outcome, Delivery::Outcome::kDone);
  const int writes = fake_->Count("POST", Under("/repos/" + fake_->repo + "/check-runs")) +
                     fake_->Count("PATCH", Under("/repos/" + fake_->repo + "/check-runs"));
  EXPECT_EQ(perform("working", 11).outcome, Delivery::Outcome::kDone);  // the retry of an older one
  EXPECT_EQ(fake_->Count("POST", Under("/repos/" + fake_->repo + "/check-runs")) +
                fake_->Count("PATCH", Under("/repos/" + fake_->repo + "/check-runs")),
            writes);
  auto runs = CheckRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["conclusion"], "success");
  EXPECT_EQ(perform("no-such-stage", 13).outcome, Delivery::Outcome::kFailed);

  fake_->Script("POST", "/repos/" + fake_->repo + "/check-runs",
                {403, {}, R"({"message":"Resource not accessible by integration"})"});
  {
    auto lock = fake_->Lock();
    fake_->pulls[6] = fake_->MakePull(6, "alice", "body", FakeGitHub::HeadSha(6), 1, 1);
  }
  Effect e;
  e.kind = "check_run";
  e.payload = {{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "k6"}, {"ticket", 9}, {"number", 6}, {"stage", "ready"},
               {"at", 20}};
  Delivery d = channel_->Perform(e, false);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("checks: write"));
}

// Issue 34: new commits replace a Ticket's pull request head; the check run left on the old head
// is completed as superseded (neutral), never "in progress" forever. Another Ticket's run there is
// not touched, and a listing GitHub answers wrongly never loses the new head's run.
TEST_P(GitHubAppTest, ACheckRunOnAReplacedHeadIsCompletedAsSuperseded) {
  const std::string head1(40, 'a'), middle(40, 'b'), head2(40, 'c');
  {
    auto lock = fake_->Lock();
    fake_->pulls[5] = fake_->MakePull(5, "team-agent[bot]", "body", head1, 1, 1);
  }
  auto perform = [&](std::int64_t ticket, const std::string& stage, std::int64_t at) {
    Effect e;
    e.kind = "check_run";
    e.payload = {{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "k" + std::to_string(at)}, {"ticket", ticket},
                 {"number", 5}, {"stage", stage}, {"at", at}, {"title", "Ticket #" + std::to_string(ticket) + ": 工作中"}};
    return channel_->Perform(e, false);
  };
  auto run_on = [&](const std::string& sha, std::int64_t ticket) {
    for (const json& r : CheckRuns())
      if (r["head_sha"] == sha &&
          r["external_id"].get<std::string>().rfind("superagent-ticket-" + std::to_string(ticket) + "@", 0) == 0)
        return r;
    return json();
  };
  ASSERT_EQ(perform(9, "working", 10).outcome, Delivery::Outcome::kDone);
  ASSERT_EQ(perform(8, "working", 10).outcome, Delivery::Outcome::kDone);  // another Ticket on the same PR
  EXPECT_EQ(run_on(head1, 9)["status"], "in_progress");

  // Two commits pushed: the head moves on. A listing of the PR's commits that fails is tried again
  // before the new head's run is made, so the old one is never forgotten.
  {
    auto lock = fake_->Lock();
    fake_->pulls[5]["head"]["sha"] = head2;
    fake_->pull_commits[5] = {{{"sha", head1}}, {{"sha", middle}}, {{"sha", head2}}};
  }
  fake_->Script("GET", "/repos/" + fake_->repo + "/pulls/5/commits", {502, {}, R"({"message":"Bad Gateway"})"}, 3);
  EXPECT_EQ(perform(9, "idle", 11).outcome, Delivery::Outcome::kRetry);
  EXPECT_TRUE(run_on(head2, 9).is_null());
  Delivery d = perform(9, "idle", 11);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  const json old = run_on(head1, 9);
  EXPECT_EQ(old["status"], "completed");
  EXPECT_EQ(old["conclusion"], "neutral");
  EXPECT_EQ(old["output"]["title"], "Superseded by a newer commit");
  EXPECT_THAT(old["output"]["summary"].get<std::string>(), HasSubstr(head2.substr(0, 7)));
  EXPECT_EQ(run_on(head2, 9)["status"], "in_progress");
  EXPECT_EQ(run_on(head1, 8)["status"], "in_progress") << "another Ticket's run is its own to complete";

  // Later stages on the same head: no second look back.
  fake_->ClearLog();
  ASSERT_EQ(perform(9, "ready", 12).outcome, Delivery::Outcome::kDone);
  EXPECT_EQ(run_on(head2, 9)["conclusion"], "success");
  EXPECT_EQ(fake_->Count("GET", Under("/repos/" + fake_->repo + "/pulls/5/commits")), 0);

  // A GitHub that lies about the commits (wrong shapes, a sha that is no commit): the new head's
  // run is shown all the same.
  const std::string head3(40, 'd');
  {
    auto lock = fake_->Lock();
    fake_->pulls[5]["head"]["sha"] = head3;
  }
  for (const char* body : {R"({"commits": []})", R"([7, {"sha": 5}, {"sha": "不是提交"}, {"sha": "../../x"}])", "[]"}) {
    fake_->Script("GET", "/repos/" + fake_->repo + "/pulls/5/commits", {200, {}, body});
    Delivery shown = perform(9, "working", 13);
    EXPECT_EQ(shown.outcome, Delivery::Outcome::kDone) << body << ": " << shown.error;
  }
  EXPECT_EQ(run_on(head3, 9)["status"], "in_progress");
}

// Auto-merge is a person's act (SPEC §6): with an App, github.merge_token_env's account merges,
// never the App's installation token.
TEST_P(GitHubAppTest, AutoMergeMergesWithThePersonsTokenNeverTheApps) {
  const std::string head = FakeGitHub::HeadSha(7);
  {
    auto lock = fake_->Lock();
    fake_->personal_tokens.insert("ghp_merger");
    fake_->pulls[7] = fake_->MakePull(7, "team-agent[bot]", github::MessageText("Fixes #1.", "pr:ticket:3"), head, 3, 1);
    fake_->reviews[7] = {fake_->MakeReview("alice", "APPROVED", head)};
    fake_->permissions["alice"] = "write";
  }
  github::IntegrationOptions o;
  o.client.api_url = fake_->api_url();
  o.client.token_source = [t = tokens_] { return t->Token(); };
  o.client.token_rejected = [t = tokens_] { t->Invalidate(); };
  o.source.repo = fake_->repo;
  o.source.bot_login = "team-agent[bot]";  // the login the first round would learn
  o.merge_token = "ghp_merger";
  auto g = github::Integration::Create(std::move(o), nullptr, nullptr, &clock_);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  Effect e;
  e.kind = "merge_pull_request";
  e.payload = {{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "merge:ticket:3:" + head}, {"ticket", 3}, {"number", 7},
               {"head_sha", head}};
  Delivery d = (*g)->channel()->Perform(e, false);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone) << d.error;
  int puts = 0;
  for (const auto& l : fake_->log()) {
    if (l.method != "PUT") continue;
    ++puts;
    EXPECT_EQ(l.request_headers.at("authorization"), "Bearer ghp_merger");
  }
  EXPECT_EQ(puts, 1);
}

// A GitHub (or a proxy in its place) that lies in its answers: a head that is no commit, a listing
// of the wrong shape, external ids of the wrong type or too long to be a number. Nothing throws;
// a run is shown or the Effect fails saying why.
TEST_P(GitHubAppTest, ACheckRunSurvivesAGitHubThatLies) {
  const std::string pulls = "/repos/" + fake_->repo + "/pulls/9";
  auto perform = [&](std::int64_t at) {
    Effect e;
    e.kind = "check_run";
    e.payload = {{"channel", "github:codertocat/hello-world"}, {"idempotency_key", "k" + std::to_string(at)}, {"ticket", 9},
                 {"number", 9}, {"stage", "working"}, {"at", at}, {"title", "标题 🚧"}};
    return channel_->Perform(e, false);
  };
  fake_->Script("GET", pulls, {200, {}, R"({"head": {"sha": "不是提交"}})"});
  Delivery d = perform(1);
  EXPECT_EQ(d.outcome, Delivery::Outcome::kFailed);
  EXPECT_THAT(d.error, HasSubstr("names no head commit"));
  fake_->Script("GET", pulls, {200, {}, R"({"head": 7})"});
  EXPECT_EQ(perform(2).outcome, Delivery::Outcome::kFailed);

  const std::string head = FakeGitHub::HeadSha(9);
  {
    auto lock = fake_->Lock();
    fake_->pulls[9] = fake_->MakePull(9, "alice", "body", head, 1, 1);
  }
  const std::string listing = "/repos/" + fake_->repo + "/commits/" + head + "/check-runs";
  for (const char* body : {R"({"check_runs": "none"})", "[]",
                           R"({"check_runs": [{"external_id": 7, "id": "x"}, 3,
                               {"external_id": "superagent-ticket-9@99999999999999999999999", "id": 5}]})"}) {
    fake_->Script("GET", listing, {200, {}, body});
    Delivery shown = perform(3);
    EXPECT_EQ(shown.outcome, Delivery::Outcome::kDone) << body << ": " << shown.error;
  }
  auto runs = CheckRuns();
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.back()["output"]["title"], "标题 🚧");
}

INSTANTIATE_TEST_SUITE_P(ApiUrls, GitHubAppTest, ::testing::Values("", "/api/v3"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param.empty() ? "github_com" : "ghes"; });

}  // namespace
}  // namespace superagent::testing
