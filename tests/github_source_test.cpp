// The GitHub Source end to end against the loopback fake: the real HTTP client, real SQLite, real Engine,
// a FakeClock and a sleeper that advances it (nothing here sleeps). Scenarios of issue 3.
#include <gmock/gmock.h>
#include <sqlite3.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine_fixture.h"
#include "fake_github_server.h"
#include "superagent/effects.h"
#include "superagent/github.h"
#include "sources/github/channel.h"
#include "sources/github/normalize.h"
#include "superagent/metrics.h"
#include "result_ok.h"

namespace superagent::github {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;
using superagent::testing::FakeGitHub;
using superagent::testing::ScriptedAssessor;
using superagent::testing::WebhookExample;

constexpr const char* kSourceRepo = "Codertocat/Hello-World";
// Where the repository's Source keeps its cursors and read paths' health (issue 37).
constexpr const char* kSourceName = "github:codertocat/hello-world";
constexpr const char* kSecret = "webhook-s3cret";

class GitHubSourceTest : public superagent::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    Open(superagent::testing::MakePolicy("observe", "people: [alice, bob]=>people: [alice, bob, Codertocat]"));
    t0_ = clock_.NowMs();
    fake_ = std::make_unique<FakeGitHub>(&clock_);
    http_ = MakeHttpClient("superagent-test");
    ClientOptions co;
    co.api_url = fake_->url();
    co.token = "test-token";
    client_ = std::make_unique<Client>(http_.get(), &clock_, [this](TimeMs ms) {
      sleeps_.push_back(ms);
      clock_.Advance(ms);
    }, co);
    options_.repo = kSourceRepo;
    options_.webhook_secret = kSecret;
    // The first round starts a minute back, so data written just before it (at t0 + seconds) is
    // read; in production the first start reads from now on.
    options_.first_run_lookback_ms = 60'000;
    NewSource();
    // Issue #1 and its author, as recorded by GitHub; only the times are moved to the test's now.
    json issue = WebhookExample("issue_comment", "created")["issue"];
    issue["updated_at"] = fake_->Iso(t0_);
    fake_->issues[1] = issue;
    json issue2 = issue;
    issue2["number"] = 2;
    issue2["id"] = 444500042;
    issue2["url"] = "https://api.github.com/repos/Codertocat/Hello-World/issues/2";
    issue2["html_url"] = "https://github.com/Codertocat/Hello-World/issues/2";
    fake_->issues[2] = issue2;
    channel_ = std::make_unique<GitHubChannel>(client_.get(), kSourceRepo);
  }
  void TearDown() override {
    source_.reset();
    channel_.reset();
    client_.reset();
    fake_.reset();
    EngineTest::TearDown();
  }

  void NewSource() {
    source_.reset();
    source_ = std::make_unique<Source>(engine_.get(), views_.get(), client_.get(), &clock_, options_);
  }

  // A mention of the agent by Codertocat on `number`, written at t0 + `offset_ms`, with its notification.
  json Mention(std::int64_t id, std::int64_t number, TimeMs offset_ms, const std::string& text = "") {
    json c = fake_->MakeComment(id, number, "Codertocat",
                                text.empty() ? "@superagent-bot please fix the typo in README" : text, t0_ + offset_ms);
    fake_->comments.push_back(c);
    fake_->notifications.push_back(fake_->MakeNotification(std::to_string(number), number, false, t0_ + offset_ms));
    return c;
  }
  static std::string CommentId(const json& c) {
    return "github:comment:" + std::to_string(c["id"].get<std::int64_t>()) + "@" + c["updated_at"].get<std::string>();
  }
  std::map<std::string, std::string> Cursors() { return views_->SourceCursors(kSourceName).value(); }
  json Cursor(const std::string& name) {
    auto c = Cursors();
    return c.count(name) ? json::parse(c[name]) : json();
  }
  std::optional<SourceHealth> Health(const std::string& path) {
    for (const SourceHealth& h : Ok(views_->SourcesHealth()))
      if (h.source == kSourceName && h.path == path) return h;
    return std::nullopt;
  }
  // Refused deliveries name no repository anyone can trust: their health is the platform's.
  std::optional<SourceHealth> RefusalHealth() {
    for (const SourceHealth& h : Ok(views_->SourcesHealth()))
      if (h.source == "github" && h.path == "webhook") return h;
    return std::nullopt;
  }
  std::vector<FakeGitHub::Logged> Requests() { return fake_->log(); }
  // Ends Ticket `t`'s first turn (the accept's Assignment) as `stage` reports, as a worker would.
  void EndFirstTurn(TicketId t, Stage stage) {
    std::int64_t pending = 0;
    for (const Assignment& a : Ok(views_->Assignments(t)))
      if (a.state == "pending") pending = a.id;
    ASSERT_NE(pending, 0);
    WorkspaceRecord w{t, (dir_ / "work").string(), "superagent/ticket-1", "origin/main", clock_.NowMs(), std::nullopt};
    ASSERT_TRUE(engine_->BeginTurn(pending, "builtin", w).ok());
    TurnEnd end;
    end.assignment = pending;
    end.reported = stage;
    end.summary = "The model API timed out.";
    ASSERT_TRUE(engine_->FinishTurn(end).ok());
    ASSERT_EQ(views_->GetTicket(t)->stage, stage);
  }
  int PendingInputs(TicketId t) {
    int n = 0;
    for (const TicketInput& in : Ok(views_->TicketInputs(t))) n += in.state == "pending";
    return n;
  }

  TimeMs t0_ = 0;
  std::unique_ptr<FakeGitHub> fake_;
  std::unique_ptr<HttpClient> http_;
  std::vector<TimeMs> sleeps_;
  std::unique_ptr<Client> client_;
  SourceOptions options_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<GitHubChannel> channel_;
};

TEST_F(GitHubSourceTest, MentionBecomesOneTriggerOneAcknowledgementOneComment) {
  json c = Mention(492700400, 1, 1'000);
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(source_->BotLogin(), "superagent-bot");
  EXPECT_EQ(r.stored, 1);
  auto rec = views_->GetTrigger(CommentId(c));
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->outcome, IntakeOutcome::kStored);
  EXPECT_TRUE(rec->trigger.addressed);
  EXPECT_EQ(rec->trigger.threads.front(), "github:codertocat/hello-world:issue:1");
  // `superagent explain <url>` finds it by its address.
  auto story = ExplainNow(c["html_url"].get<std::string>());
  ASSERT_TRUE(story.ok()) << story.status().ToString();

  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  auto receipts = Ok(views_->Receipts(std::nullopt));
  ASSERT_EQ(receipts.size(), 1u);
  EXPECT_EQ(receipts[0].kind, MessageKind::kAcknowledgement);
  EXPECT_EQ(receipts[0].channel, "github:codertocat/hello-world:issue:1");

  EffectsLoop loop(engine_.get(), {channel_.get()}, &clock_, {}, 7);
  auto performed = loop.RunOnce();
  ASSERT_TRUE(performed.ok()) << performed.status().ToString();
  EXPECT_EQ(*performed, 1);
  EXPECT_EQ(fake_->Count("POST", "/repos/Codertocat/Hello-World/issues/1/comments"), 1);
  const json& posted = fake_->comments.back();
  EXPECT_EQ(posted["body"].get<std::string>().rfind(std::string(kAutomatedFirstLine) + "\n", 0), 0u);
  EXPECT_THAT(posted["body"].get<std::string>(), HasSubstr(ReceiptMarker(receipts[0].id)));
  EXPECT_EQ(Ok(views_->Receipts(std::nullopt))[0].status, "sent");

  // The next round reads the agent's own comment: stored as filtered, never a request.
  clock_.Advance(61'000);
  fake_->notifications[0]["updated_at"] = fake_->Iso(clock_.NowMs() - 1'000);
  RoundReport r2 = source_->RunOnce();
  EXPECT_EQ(r2.stored, 0);
  EXPECT_GE(r2.filtered, 1);
  auto own = views_->GetTrigger(CommentId(posted));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->outcome, IntakeOutcome::kFiltered);
  EXPECT_EQ(own->filter_reason, "own_message");
  EXPECT_EQ(Drain(), 0);
  EXPECT_EQ(Ok(views_->Receipts(std::nullopt)).size(), 1u);
}

TEST_F(GitHubSourceTest, TheSameCommentByNotificationRepoPollingAndWebhookIsOneTrigger) {
  json c = Mention(492700400, 1, 1'000);
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.stored, 1);
  EXPECT_EQ(r.duplicate, 1);  // the repo-wide comments listing read it too
  EXPECT_EQ(views_->GetTrigger(CommentId(c))->via, "poll:discussion");
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"] = c;
  std::string body = payload.dump();
  WebhookReply w = source_->HandleWebhook({"issue_comment", "d-1", WebhookSignature(kSecret, body), body});
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(w.message, "duplicate");
}

TEST_F(GitHubSourceTest, AnEditedCommentIsANewTrigger) {
  json c = Mention(492700400, 1, 1'000);
  clock_.Advance(10'000);
  source_->RunOnce();
  clock_.Advance(61'000);
  fake_->comments[0]["body"] = "@superagent-bot please fix the typo in README and CONTRIBUTING";
  fake_->comments[0]["updated_at"] = fake_->Iso(clock_.NowMs() - 2'000);
  fake_->notifications[0]["updated_at"] = fake_->Iso(clock_.NowMs() - 2'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.stored, 1);
  auto edited = views_->GetTrigger(CommentId(fake_->comments[0]));
  ASSERT_TRUE(edited.ok());
  EXPECT_NE(edited->trigger.id, CommentId(c));
  EXPECT_THAT(edited->trigger.text, HasSubstr("CONTRIBUTING"));
  EXPECT_TRUE(views_->GetTrigger(CommentId(c)).ok());
}

TEST_F(GitHubSourceTest, FailedDiscussionIsKeptOthersGoOnGlobalCursorAdvances) {
  json one = Mention(101, 1, 1'000);
  json two = Mention(102, 2, 1'000);
  fake_->Script("GET", "/repos/Codertocat/Hello-World/issues/2", {500, {}, R"({"message":"Server Error"})"}, -1);
  clock_.Advance(10'000);
  const TimeMs read_start = clock_.NowMs();
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.discussions_failed, 1);
  EXPECT_TRUE(views_->GetTrigger(CommentId(one)).ok());
  // #1 went on; #2 is a saved failed item with its read start; the global cursor moved on.
  json retry = Cursor("retry:issue:2");
  ASSERT_TRUE(retry.is_object());
  EXPECT_EQ(retry["number"], 2);
  EXPECT_EQ(retry["since"], IsoSeconds(read_start - options_.first_run_lookback_ms));  // where #2's read began
  EXPECT_EQ(retry["attempts"], 1);
  EXPECT_THAT(retry["last_error"].get<std::string>(), HasSubstr("500"));
  EXPECT_EQ(Cursor("notifications")["since"], IsoSeconds(read_start - 5'000));
  EXPECT_TRUE(Cursor("issue:1").is_object());
  EXPECT_EQ(Health("notifications")->consecutive_failures, 0);
  EXPECT_EQ(Health("discussions")->consecutive_failures, 1);
  EXPECT_THAT(Health("discussions")->last_error, HasSubstr("issue:2"));
  // The repo-wide listing already took #2's comment (the failed item is about the discussion).
  EXPECT_TRUE(views_->GetTrigger(CommentId(two)).ok());

  // Next round: the failed item first, then notifications.
  fake_->ClearScripts();
  fake_->ClearLog();
  clock_.Advance(61'000);
  RoundReport r2 = source_->RunOnce();
  EXPECT_EQ(r2.discussions_failed, 0);
  auto log = Requests();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log[0].target, "/repos/Codertocat/Hello-World/issues/2");
  std::size_t notifications_at = 0;
  for (std::size_t i = 0; i < log.size(); ++i)
    if (log[i].target.rfind("/notifications", 0) == 0) notifications_at = i;
  EXPECT_GT(notifications_at, 0u);
  EXPECT_FALSE(Cursor("retry:issue:2").is_object());
  EXPECT_TRUE(Cursor("issue:2").is_object());
  EXPECT_EQ(Health("discussions")->consecutive_failures, 0);
}

TEST_F(GitHubSourceTest, PersistentErrorsRaiseAProblemAndAreDroppedAfter24Hours) {
  Mention(102, 2, 1'000);
  fake_->Script("GET", "/repos/Codertocat/Hello-World/issues/2", {503, {}, R"({"message":"busy"})"}, -1);
  clock_.Advance(10'000);
  for (int round = 0; round < 3; ++round) {
    source_->RunOnce();
    clock_.Advance(61'000);
  }
  EXPECT_EQ(Cursor("retry:issue:2")["attempts"], 3);
  bool raised = false;
  for (const SystemProblem& p : Ok(views_->Problems(superagent::testing::EngineTest::options_.problem_threshold))) raised |= p.kind == "source:github:codertocat/hello-world:discussions";
  EXPECT_TRUE(raised);
  clock_.Advance(24LL * 3600 * 1000);
  source_->RunOnce();
  EXPECT_FALSE(Cursor("retry:issue:2").is_object());
}

TEST_F(GitHubSourceTest, GoneMarksTheDiscussionDeletedAndDropsItsRetry) {
  Mention(102, 2, 1'000);
  clock_.Advance(10'000);
  source_->RunOnce();  // the Thread github:codertocat/hello-world:issue:2 is known now
  fake_->Script("GET", "/repos/Codertocat/Hello-World/issues/2", {500, {}, R"({"message":"Server Error"})"}, -1);
  clock_.Advance(61'000);
  fake_->notifications[0]["updated_at"] = fake_->Iso(clock_.NowMs() - 1'000);
  source_->RunOnce();
  ASSERT_TRUE(Cursor("retry:issue:2").is_object());

  fake_->ClearScripts();
  fake_->Script("GET", "/repos/Codertocat/Hello-World/issues/2", {410, {}, R"({"message":"This issue was deleted"})"}, -1);
  clock_.Advance(61'000);
  source_->RunOnce();
  EXPECT_FALSE(Cursor("retry:issue:2").is_object());
  EXPECT_EQ(Cursor("issue:2")["deleted"], true);
  // The Engine knows: a message for that discussion is cancelled instead of posted.
  ASSERT_TRUE(engine_->Send({"late-reply", std::nullopt, "github:codertocat/hello-world:issue:2", MessageKind::kAnswer, "hello"}).ok());
  EffectsLoop loop(engine_.get(), {channel_.get()}, &clock_, {}, 7);
  ASSERT_TRUE(loop.RunOnce().ok());
  EXPECT_EQ(fake_->Count("POST", "/repos/"), 0);
  bool abandoned = false;
  for (const Receipt& rc : Ok(views_->Receipts(std::nullopt))) abandoned |= rc.id == "late-reply" && rc.status == "abandoned";
  EXPECT_TRUE(abandoned);
  // And it is polled no more.
  fake_->ClearLog();
  clock_.Advance(600'000);
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", "/repos/Codertocat/Hello-World/issues/2"), 0);
}

TEST_F(GitHubSourceTest, RateLimitIsWaitedAsTold) {
  Mention(101, 1, 1'000);
  fake_->Script("GET", "/notifications", {429, {{"Retry-After", "30"}}, R"({"message":"secondary rate limit"})"});
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.stored, 1);
  ASSERT_FALSE(sleeps_.empty());
  EXPECT_EQ(sleeps_[0], 30'000);
}

TEST_F(GitHubSourceTest, ExhaustedRateLimitEndsTheRoundAndDelaysTheNext) {
  Mention(101, 1, 1'000);
  const std::int64_t reset_s = (t0_ + 10'000) / 1000 + 1800;
  fake_->Script("GET", "/notifications",
                {403, {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-limit", "5000"}, {"x-ratelimit-reset", std::to_string(reset_s)}},
                 R"({"message":"API rate limit exceeded"})"});
  clock_.Advance(10'000);
  fake_->ClearLog();
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.stored, 0);
  EXPECT_TRUE(sleeps_.empty());
  EXPECT_EQ(Requests().size(), 2u);  // GET /user and the refused /notifications; nothing after
  EXPECT_GE(source_->NextDelayMs(), reset_s * 1000 - clock_.NowMs());
  EXPECT_THAT(Health("notifications")->last_error, HasSubstr("rate limited"));
}

TEST_F(GitHubSourceTest, IdleRoundsAre304sAndSpendNoRate) {
  Mention(101, 1, 1'000);
  fake_->repo_info["default_branch"] = "master";
  clock_.Advance(10'000);
  source_->RunOnce();
  clock_.Advance(61'000);
  source_->RunOnce();  // settles cursors that moved in the first round
  clock_.Advance(61'000);
  const int remaining = fake_->rate_remaining;
  fake_->ClearLog();
  RoundReport idle = source_->RunOnce();
  EXPECT_EQ(idle.stored + idle.duplicate + idle.filtered, 0);
  EXPECT_TRUE(idle.notifications_polled);
  EXPECT_FALSE(idle.notifications_changed);
  auto log = Requests();
  ASSERT_FALSE(log.empty());
  for (const auto& l : log) EXPECT_EQ(l.status, 304) << l.target;
  EXPECT_EQ(fake_->rate_remaining, remaining);
}

TEST_F(GitHubSourceTest, NotificationsAreNeverPolledFasterThanAllowed) {
  fake_->poll_interval = 120;
  clock_.Advance(10'000);
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", "/notifications"), 1);
  source_->RunOnce();
  clock_.Advance(61'000);
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", "/notifications"), 1);  // X-Poll-Interval said 120 s
  EXPECT_EQ(source_->NextDelayMs(), 120'000);
  clock_.Advance(60'000);
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", "/notifications"), 2);
}

TEST_F(GitHubSourceTest, RestartCatchesUpAtOnceWithoutReplaying) {
  json first = Mention(101, 1, 1'000);
  clock_.Advance(10'000);
  source_->RunOnce();
  // Down for an hour; a second mention arrives meanwhile.
  source_.reset();
  clock_.Advance(3'600'000);
  json second = fake_->MakeComment(103, 1, "Codertocat", "@superagent-bot and the other typo", clock_.NowMs() - 60'000);
  fake_->comments.push_back(second);
  fake_->notifications[0]["updated_at"] = second["updated_at"];
  Open(superagent::testing::MakePolicy("observe", "people: [alice, bob]=>people: [alice, bob, Codertocat]"));
  NewSource();
  fake_->ClearLog();
  RoundReport r = source_->RunOnce();
  EXPECT_TRUE(r.notifications_polled);
  EXPECT_EQ(r.stored, 1);
  EXPECT_TRUE(views_->GetTrigger(CommentId(second)).ok());
}

TEST_F(GitHubSourceTest, FollowedTicketDiscussionIsPolledEveryRound) {
  Mention(101, 1, 1'000);
  clock_.Advance(10'000);
  source_->RunOnce();
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  // A follow-up without a notification (the account's notifications were read elsewhere, say).
  clock_.Advance(61'000);
  json follow = fake_->MakeComment(104, 1, "Codertocat", "Also the second paragraph, please.", clock_.NowMs() - 1'000);
  fake_->comments.push_back(follow);
  options_.read_comments = false;
  NewSource();
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.stored, 1);
  auto rec = views_->GetTrigger(CommentId(follow));
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->outcome, IntakeOutcome::kStored);
}

// Issue 34: GitHub moves an issue's updated_at with every comment (the agent's own included) and
// label; its text read again is no new version, so an old body by someone not allowed to ask never
// starts a turn — not on an idle Ticket, not on a blocked one. Only a changed title or body is a
// new version, and one older than the request is still context.
TEST_F(GitHubSourceTest, AnIssueBodyReadAgainIsNoNewVersionAndStartsNoTurn) {
  fake_->issues[1]["user"]["login"] = "mallory";  // not on the people list
  fake_->issues[1]["title"] = "全部重写 🚀";
  fake_->issues[1]["body"] = "Rewrite everything in Rust. 全部用 Rust 重写。👩‍💻\u200f";
  fake_->issues[1]["created_at"] = fake_->Iso(t0_ - 2 * 86'400'000);
  json mention = Mention(101, 1, 1'000);
  clock_.Advance(10'000);
  RoundReport first = source_->RunOnce();
  ASSERT_TRUE(first.errors.empty()) << first.errors.front();
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId t = Ok(ExplainNow(CommentId(mention)))["ticket_created"]["id"];
  EndFirstTurn(t, Stage::kBlocked);  // nothing is owed to it now
  EffectsLoop loop(engine_.get(), {channel_.get()}, &clock_, {}, 7);
  const std::string body_id = NormalizeIssue(fake_->issues[1], NormalizeContext{kSourceRepo, "superagent-bot"}).trigger.id;

  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(loop.RunOnce().ok());  // the agent's own comments: each one moves updated_at
    clock_.Advance(61'000);
    fake_->issues[1]["updated_at"] = fake_->Iso(clock_.NowMs() - 1'000);
    fake_->issues[1]["labels"].push_back({{"name", "标签-" + std::to_string(round)}});
    fake_->notifications[0]["updated_at"] = fake_->Iso(clock_.NowMs() - 1'000);
    RoundReport r = source_->RunOnce();
    ASSERT_TRUE(r.errors.empty()) << r.errors.front();
    // The label event by webhook: not taken; assigning someone: the same text, at most once.
    json labeled = WebhookExample("issues", "labeled");
    labeled["issue"] = fake_->issues[1];
    std::string payload = labeled.dump();
    EXPECT_EQ(source_->HandleWebhook({"issues", "d-l", WebhookSignature(kSecret, payload), payload}).status, 202);
    json assigned = WebhookExample("issues", "assigned");
    assigned["issue"] = fake_->issues[1];
    payload = assigned.dump();
    WebhookReply reply = source_->HandleWebhook({"issues", "d-a", WebhookSignature(kSecret, payload), payload});
    EXPECT_EQ(reply.status, 200);
    if (round > 0) {
      EXPECT_EQ(reply.message, "duplicate");
    }
  }
  auto body = views_->GetTrigger(body_id);
  ASSERT_TRUE(body.ok()) << "the body was stored once, by the first delivery that brought it";
  EXPECT_FALSE(views_->GetTrigger(body_id + "x").ok());
  EXPECT_EQ(PendingInputs(t), 0);
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 0);
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kBlocked);

  // mallory edits the old text: a new version (the content changed), still older than the
  // request, so context for the next turn and no reason for one.
  clock_.Advance(61'000);
  fake_->issues[1]["body"] = "Rewrite everything in Rust, now. 现在就重写。";
  fake_->issues[1]["updated_at"] = fake_->Iso(clock_.NowMs() - 1'000);
  fake_->notifications[0]["updated_at"] = fake_->Iso(clock_.NowMs() - 1'000);
  RoundReport edited = source_->RunOnce();
  ASSERT_TRUE(edited.errors.empty()) << edited.errors.front();
  const std::string edited_id = NormalizeIssue(fake_->issues[1], NormalizeContext{kSourceRepo, "superagent-bot"}).trigger.id;
  EXPECT_NE(edited_id, body_id);
  ASSERT_TRUE(views_->GetTrigger(edited_id).ok());
  EXPECT_EQ(Ok(views_->TicketInputs(t)).back().state, "context");
  EXPECT_EQ(PendingInputs(t), 0);
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 0);
}

// Issue 34: an approval without words asks for nothing — by webhook or by polling it is one
// Trigger, context for the Ticket on the pull request, and no turn; an approval with words is a
// reason for one.
TEST_F(GitHubSourceTest, AnApprovalWithoutWordsStartsNoTurnFromEitherPath) {
  const std::string sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
  fake_->pulls[2] = fake_->MakePull(2, "Codertocat", "Fix the README", sha, 1, 1);
  fake_->pulls[2]["created_at"] = fake_->Iso(t0_ - 86'400'000);
  json mention = fake_->MakeComment(201, 2, "Codertocat", "@superagent-bot 请修正拼写", t0_ + 1'000, /*on_pull=*/true);
  fake_->comments.push_back(mention);
  fake_->notifications.push_back(fake_->MakeNotification("2", 2, true, t0_ + 1'000));
  clock_.Advance(10'000);
  RoundReport first = source_->RunOnce();
  ASSERT_TRUE(first.errors.empty()) << first.errors.front();
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  const TicketId t = Ok(ExplainNow(CommentId(mention)))["ticket_created"]["id"];
  EndFirstTurn(t, Stage::kReady);

  // Codertocat approves without a word, by webhook (GitHub's body: null).
  clock_.Advance(5'000);
  json payload = WebhookExample("pull_request_review", "submitted");
  payload["review"]["state"] = "approved";
  payload["review"]["body"] = nullptr;
  payload["review"]["submitted_at"] = fake_->Iso(clock_.NowMs());
  payload["review"]["commit_id"] = sha;
  const std::string body = payload.dump();
  WebhookReply w = source_->HandleWebhook({"pull_request_review", "d-r1", WebhookSignature(kSecret, body), body});
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(w.message, "stored");
  EXPECT_EQ(Ok(views_->TicketInputs(t)).back().state, "context");
  EXPECT_EQ(PendingInputs(t), 0);
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 0);

  // Polling finds the same review (upper-case state, as REST says it): the same Trigger.
  json polled = payload["review"];
  polled["state"] = "APPROVED";
  fake_->reviews[2].push_back(polled);
  clock_.Advance(61'000);
  fake_->notifications.back()["updated_at"] = fake_->Iso(clock_.NowMs() - 1'000);
  RoundReport again = source_->RunOnce();
  ASSERT_TRUE(again.errors.empty()) << again.errors.front();
  EXPECT_EQ(again.stored, 0);
  EXPECT_EQ(PendingInputs(t), 0);
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 0);
  EXPECT_EQ(views_->GetTicket(t)->stage, Stage::kReady);

  // An approval that says something is a reason for a turn.
  json worded = fake_->MakeReview("Codertocat", "APPROVED", sha);
  worded["body"] = "LGTM，但请补一个测试 🙏";
  worded["submitted_at"] = fake_->Iso(clock_.NowMs());
  fake_->reviews[2].push_back(worded);
  clock_.Advance(61'000);
  fake_->notifications.back()["updated_at"] = fake_->Iso(clock_.NowMs() - 1'000);
  RoundReport third = source_->RunOnce();
  ASSERT_TRUE(third.errors.empty()) << third.errors.front();
  EXPECT_EQ(third.stored, 1);
  EXPECT_EQ(PendingInputs(t), 1);
  EXPECT_EQ(Ok(engine_->AssignFollowUps()), 1);
}

TEST_F(GitHubSourceTest, ScopesAndOwnMessagesAreFilteredWithTheirReason) {
  options_.read_comments = false;
  options_.bot_login = "superagent-bot";  // known: a delivery before it waits for the round
  NewSource();
  json payload = WebhookExample("issue_comment", "created");
  std::string body = payload.dump();
  WebhookReply w = source_->HandleWebhook({"issue_comment", "d-2", WebhookSignature(kSecret, body), body});
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(w.message, "filtered");
  auto rec = views_->GetTrigger("github:comment:492700400@2019-05-15T15:20:21Z");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->filter_reason, "out_of_scope");

  payload["comment"]["id"] = 5;
  payload["comment"]["user"]["login"] = "superagent-bot";
  body = payload.dump();
  source_->HandleWebhook({"issue_comment", "d-3", WebhookSignature(kSecret, body), body});
  EXPECT_EQ(views_->GetTrigger("github:comment:5@2019-05-15T15:20:21Z")->filter_reason, "own_message");
}

TEST_F(GitHubSourceTest, MalformedItemsAreSkippedAndCounted) {
  json bad = fake_->MakeComment(105, 1, "Codertocat", "hello", t0_ + 1'000);
  bad["updated_at"] = "not a time";
  bad["created_at"] = fake_->Iso(t0_ + 1'000);
  fake_->comments.push_back(bad);
  fake_->comments.push_back(fake_->MakeComment(106, 1, "Codertocat", "fine", t0_ + 1'000));
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(r.stored, 1);
  EXPECT_EQ(Health("comments")->skipped_items, 1);
}

TEST_F(GitHubSourceTest, DefaultBranchCiAndNewIssuesAreRead) {
  json run = WebhookExample("workflow_run", "completed", 1)["workflow_run"];
  run["updated_at"] = fake_->Iso(t0_ + 1'000);
  fake_->workflow_runs.push_back(run);
  json opened = WebhookExample("issues", "opened")["issue"];
  opened["number"] = 3;
  opened["created_at"] = opened["updated_at"] = fake_->Iso(t0_ + 2'000);
  fake_->issues[3] = opened;
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  auto ci = views_->GetTrigger("github:ci:run:289782451@1");
  ASSERT_TRUE(ci.ok());
  EXPECT_EQ(ci->trigger.scope, "ci");
  EXPECT_EQ(ci->outcome, IntakeOutcome::kStored);
  bool issue_seen = false;
  auto story = ExplainNow("https://github.com/Codertocat/Hello-World/issues/1");
  (void)story;
  for (const char* path : {"issues", "ci", "comments", "notifications", "discussions"}) {
    auto h = Health(path);
    ASSERT_TRUE(h.has_value()) << path;
    EXPECT_EQ(h->consecutive_failures, 0) << path << ": " << h->last_error;
  }
  for (const auto& l : Requests()) issue_seen |= l.target.rfind("/repos/Codertocat/Hello-World/issues?", 0) == 0;
  EXPECT_TRUE(issue_seen);
  EXPECT_EQ(r.stored, 2);  // the CI run and the new issue #3
}

TEST_F(GitHubSourceTest, PullRequestDiscussionYieldsReviewCommentsAndReviews) {
  json pr = WebhookExample("pull_request", "opened")["pull_request"];
  pr["updated_at"] = fake_->Iso(t0_ + 1'000);
  fake_->pulls[2] = pr;
  json rc = WebhookExample("pull_request_review_comment", "created", 1)["comment"];
  rc["body"] = "@superagent-bot could you use an emoji here?";
  rc["created_at"] = rc["updated_at"] = fake_->Iso(t0_ + 1'000);
  fake_->review_comments.push_back(rc);
  json review = WebhookExample("pull_request_review", "submitted")["review"];
  review["state"] = "CHANGES_REQUESTED";
  review["body"] = "Please add a test.";
  review["submitted_at"] = fake_->Iso(t0_ + 2'000);
  fake_->reviews[2].push_back(review);
  fake_->notifications.push_back(fake_->MakeNotification("9", 2, true, t0_ + 2'000, "review_requested"));
  options_.read_comments = false;  // only the notification path reads it
  NewSource();
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  auto inline_comment = views_->GetTrigger("github:review_comment:284312630@" + fake_->Iso(t0_ + 1'000));
  ASSERT_TRUE(inline_comment.ok());
  EXPECT_EQ(inline_comment->trigger.channel, "github:codertocat/hello-world:pull:2:review:284312630");
  EXPECT_THAT(inline_comment->trigger.text, HasSubstr("README.md"));
  EXPECT_TRUE(inline_comment->trigger.addressed);
  auto rv = views_->GetTrigger("github:review:237895671@" + fake_->Iso(t0_ + 2'000));
  ASSERT_TRUE(rv.ok());
  EXPECT_EQ(rv->outcome, IntakeOutcome::kStored);  // a followed discussion, though comments are off
  EXPECT_EQ(fake_->Count("GET", "/repos/Codertocat/Hello-World/pulls/2/reviews"), 1);
  EXPECT_TRUE(Cursor("pull:2").is_object());
}

TEST_F(GitHubSourceTest, KnownDiscussionsArePolledForFourteenDaysAfterActivity) {
  Mention(101, 1, 1'000);
  clock_.Advance(10'000);
  source_->RunOnce();  // issue:1 is known now
  const std::string issue = "/repos/Codertocat/Hello-World/issues/1/comments";
  fake_->ClearLog();
  clock_.Advance(61'000);
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", issue), 0);  // read a minute ago; every 5 minutes is enough
  clock_.Advance(300'000);
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", issue), 1);
  clock_.Advance(15LL * 24 * 3600 * 1000);
  fake_->ClearLog();
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", issue), 0);  // quiet for more than 14 days
}

// SPEC §3.5: a discussion is followed for 14 days after its last activity *or its Ticket's end*.
// A Ticket that worked on a quiet issue for three weeks and then ended keeps its discussion read,
// so a "that broke something" the next week is still heard; two weeks after the end it is not.
TEST_F(GitHubSourceTest, ADiscussionIsFollowedForFourteenDaysAfterItsTicketEnds) {
  Mention(101, 1, 1'000);
  clock_.Advance(10'000);
  source_->RunOnce();
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  ASSERT_EQ(Ok(views_->OpenTicketThreads("github:")), std::vector<std::string>{"github:codertocat/hello-world:issue:1"});
  const TicketId ticket = 1;
  const std::string issue = "/repos/Codertocat/Hello-World/issues/1/comments";
  clock_.Advance(21LL * 24 * 3600 * 1000);  // three quiet weeks of work
  source_->RunOnce();
  ASSERT_TRUE(engine_->StopTicket(ticket, "alice").ok());
  fake_->ClearLog();
  clock_.Advance(6 * 60'000);
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", issue), 1) << "ended a minute ago: still followed";
  clock_.Advance(13LL * 24 * 3600 * 1000);
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", issue), 2) << "13 days after the end";
  clock_.Advance(2LL * 24 * 3600 * 1000);
  fake_->ClearLog();
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", issue), 0) << "15 days after the end and the activity";
}

// --- webhooks over the real HTTP route ---

class GitHubWebhookTest : public GitHubSourceTest {
 protected:
  void SetUp() override {
    GitHubSourceTest::SetUp();
    options_.bot_login = "superagent-bot";  // the identity is known, as from the daemon's first round on
    NewSource();
    InstallWebhookRoute(server_, source_.get());
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  void TearDown() override {
    while (!server_.is_running()) std::this_thread::yield();  // stop() is a no-op before listening starts
    server_.stop();
    thread_.join();
    GitHubSourceTest::TearDown();
  }
  HttpResponse Deliver(const std::string& event, const std::string& body, const std::string& signature) {
    HttpRequest req;
    req.method = "POST";
    req.url = "http://127.0.0.1:" + std::to_string(port_) + "/hooks/github";
    req.headers = {{"Content-Type", "application/json"}, {"X-GitHub-Event", event}, {"X-GitHub-Delivery", "72d3162e"}};
    if (!signature.empty()) req.headers.emplace_back("X-Hub-Signature-256", signature);
    req.body = body;
    return http_->Send(req);
  }
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

// Every refusal gets one answer, is counted, and reaches the store only as the next round's
// "N refused deliveries": never per delivery, never with anything the sender wrote.
TEST_F(GitHubWebhookTest, BadOrMissingSignatureIs401AndNothingIsStored) {
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"]["body"] = "@superagent-bot please fix the typo";
  const std::string body = payload.dump();
  const auto refused_before = metrics::ProcessRuntime().RefusedDeliveries()["github"];
  std::vector<HttpResponse> answers = {Deliver("issue_comment", body, WebhookSignature("wrong secret", body)),
                                       Deliver("issue_comment", body, ""),
                                       Deliver("issue_comment", body + " ", WebhookSignature(kSecret, body)),
                                       Deliver("寄件人🙂", "\xff\xfe not json", "sha256=寄件人")};
  for (const HttpResponse& a : answers) {
    EXPECT_EQ(a.status, 401);
    EXPECT_EQ(a.body, answers.front().body) << "one answer for every refusal";
  }
  EXPECT_FALSE(views_->GetTrigger("github:comment:492700400@2019-05-15T15:20:21Z").ok());
  EXPECT_EQ(metrics::ProcessRuntime().RefusedDeliveries()["github"] - refused_before, 4);
  EXPECT_FALSE(RefusalHealth().has_value()) << "a refusal wrote to the store";
  source_->RunOnce();
  ASSERT_TRUE(RefusalHealth().has_value());
  EXPECT_EQ(RefusalHealth()->consecutive_failures, 1);
  EXPECT_THAT(RefusalHealth()->last_error, HasSubstr("4 refused deliveries since the last round"));
  EXPECT_THAT(RefusalHealth()->last_error, Not(HasSubstr("72d3162e")));  // the sender's delivery id
  EXPECT_THAT(RefusalHealth()->last_error, Not(HasSubstr("寄件人")));
  source_->RunOnce();  // a round without refusals clears it
  EXPECT_EQ(RefusalHealth()->consecutive_failures, 0);
}

// Before the identity is known (a first start: nothing stored), a delivery must not wait for
// GET /user: it is accepted at once and taken by the round that learns the identity.
TEST_F(GitHubSourceTest, AWebhookBeforeTheIdentityIsKnownIsAcceptedAtOnceAndTakenByTheRound) {
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"]["body"] = "@superagent-bot please fix the typo";
  const std::string body = payload.dump();
  WebhookReply w = source_->HandleWebhook({"issue_comment", "d-1", WebhookSignature(kSecret, body), body});
  EXPECT_EQ(w.status, 202) << w.message;
  EXPECT_EQ(fake_->Count("GET", "/user"), 0) << "the request thread asked GitHub";
  EXPECT_FALSE(views_->GetTrigger("github:comment:492700400@2019-05-15T15:20:21Z").ok());
  source_->RunOnce();
  auto rec = views_->GetTrigger("github:comment:492700400@2019-05-15T15:20:21Z");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->via, "webhook");
  EXPECT_TRUE(rec->trigger.addressed);
}

// After a restart the login the last run learned serves the webhook at once; the round still
// asks GitHub and replaces it.
TEST_F(GitHubSourceTest, AfterARestartTheStoredLoginServesTheWebhookWithoutGitHub) {
  source_->RunOnce();  // learns and stores the identity
  NewSource();         // the restart
  fake_->ClearLog();
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"]["body"] = "@superagent-bot please fix the typo";
  const std::string body = payload.dump();
  WebhookReply w = source_->HandleWebhook({"issue_comment", "d-2", WebhookSignature(kSecret, body), body});
  EXPECT_EQ(w.status, 200) << w.message;
  EXPECT_EQ(fake_->Count("GET", "/user"), 0);
  auto rec = views_->GetTrigger("github:comment:492700400@2019-05-15T15:20:21Z");
  ASSERT_TRUE(rec.ok());
  EXPECT_TRUE(rec->trigger.addressed);
  source_->RunOnce();
  EXPECT_EQ(fake_->Count("GET", "/user"), 1);  // confirmed by the round
}

TEST_F(GitHubWebhookTest, GoodSignatureIsStoredWithinTheRequest) {
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"]["body"] = "@superagent-bot please fix the typo";
  const std::string body = payload.dump();
  HttpResponse res = Deliver("issue_comment", body, WebhookSignature(kSecret, body));
  EXPECT_EQ(res.status, 200) << res.body;
  auto rec = views_->GetTrigger("github:comment:492700400@2019-05-15T15:20:21Z");
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->via, "webhook");
  EXPECT_EQ(rec->outcome, IntakeOutcome::kStored);
  EXPECT_TRUE(rec->trigger.addressed);
  // The discussion is followed from now on (polling is the safety net).
  EXPECT_TRUE(Cursor("issue:1").is_object());
  ASSERT_TRUE(Health("webhook").has_value());
  EXPECT_EQ(Health("webhook")->consecutive_failures, 0);

  EXPECT_EQ(Deliver("ping", R"({"zen":"Keep it logically awesome."})",
                    WebhookSignature(kSecret, R"({"zen":"Keep it logically awesome."})"))
                .status,
            200);
  json other = payload;
  other["repository"]["full_name"] = "someone/else";
  EXPECT_EQ(Deliver("issue_comment", other.dump(), WebhookSignature(kSecret, other.dump())).status, 202);
  json star = WebhookExample("star", "created");
  EXPECT_EQ(Deliver("star", star.dump(), WebhookSignature(kSecret, star.dump())).status, 202);
}

TEST_F(GitHubWebhookTest, EveryTakenEventKindFromRealPayloads) {
  struct Case {
    const char* event;
    const char* action;
    int nth;
  };
  for (Case c : {Case{"pull_request_review_comment", "created", 1}, Case{"issues", "opened", 0},
                 Case{"pull_request", "opened", 0}, Case{"workflow_run", "completed", 1}}) {
    json p = WebhookExample(c.event, c.action, c.nth);
    if (std::string(c.event) == "workflow_run") p["repository"]["full_name"] = kSourceRepo;
    const std::string body = p.dump();
    HttpResponse res = Deliver(c.event, body, WebhookSignature(kSecret, body));
    EXPECT_EQ(res.status, 200) << c.event << ": " << res.body;
  }
}

// Signed deliveries with a field of the wrong type used to throw inside the handler: 500, with
// the exception's text in a response header. Each is now refused (4xx) or skipped (202) with the
// field named in the body, counted as a skipped item, and nothing is stored.
TEST_F(GitHubWebhookTest, WrongTypesInASignedDeliveryAreRefusedOrSkippedNeverA500) {
  struct Case {
    const char* event;
    std::function<void(json&)> spoil;
    int status;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"issue_comment", [](json& p) { p["repository"]["full_name"] = 5; }, 400,
       R"(field \"repository.full_name\": expected string, got integer)"},
      {"issue_comment", [](json& p) { p["action"] = 7; }, 400, R"(field \"action\": expected string, got integer)"},
      {"issue_comment", [](json& p) { p["action"] = json::array({"created"}); }, 400, "expected string, got array"},
      {"issue_comment", [](json& p) { p["comment"]["id"] = "492700400"; }, 202, "no integer id"},
      {"issue_comment", [](json& p) { p["comment"]["body"] = {{"text", "修复"}}; }, 202, "body is not text"},
      {"issue_comment", [](json& p) { p["comment"] = "a string"; }, 202, "no integer id"},
      {"issue_comment", [](json& p) { p["comment"]["user"] = {{"login", nullptr}}; }, 202, "user has no login"},
      {"pull_request_review", [](json& p) { p["pull_request"]["number"] = "1"; }, 202,
       R"(field \"pull_request.number\": expected integer, got string)"},
      {"workflow_run", [](json& p) { p["repository"]["default_branch"] = 5; }, 202,
       R"(field \"repository.default_branch\": expected string, got integer)"},
  };
  int skipped = 0;
  for (const Case& c : cases) {
    const char* action = std::string(c.event) == "workflow_run"    ? "completed"
                         : std::string(c.event) == "pull_request_review" ? "submitted"
                                                                         : "created";
    json p = WebhookExample(c.event, action);
    p["repository"]["full_name"] = kSourceRepo;
    c.spoil(p);
    const std::string body = p.dump();
    HttpResponse res = Deliver(c.event, body, WebhookSignature(kSecret, body));
    EXPECT_EQ(res.status, c.status) << c.event << ": " << res.body;
    EXPECT_THAT(res.body, HasSubstr(c.says)) << c.event;
    EXPECT_EQ(res.Header("EXCEPTION_WHAT"), "") << "exception text in a header: " << res.Header("EXCEPTION_WHAT");
    ++skipped;
  }
  for (const std::string& body : {std::string("[1,2]"), std::string("{\"a\":"), std::string("\"text\"")}) {
    HttpResponse res = Deliver("issue_comment", body, WebhookSignature(kSecret, body));
    EXPECT_EQ(res.status, 400) << body;
    EXPECT_THAT(res.body, HasSubstr("the body: ")) << res.body;
    ++skipped;
  }
  EXPECT_FALSE(views_->GetTriggerBySeq(1).ok()) << "a spoiled delivery was stored";
  ASSERT_TRUE(Health("webhook").has_value());
  EXPECT_EQ(Health("webhook")->skipped_items, skipped);
  EXPECT_EQ(Health("webhook")->consecutive_failures, 0);  // GitHub's mistake, not a failing path
}

TEST_F(GitHubSourceTest, NoWebhookSecretConfiguredRefusesEverything) {
  options_.webhook_secret = "";
  NewSource();
  const std::string body = WebhookExample("issue_comment", "created").dump();
  WebhookReply w = source_->HandleWebhook({"issue_comment", "d-4", WebhookSignature("", body), body});
  EXPECT_EQ(w.status, 401);
  EXPECT_FALSE(views_->GetTrigger("github:comment:492700400@2019-05-15T15:20:21Z").ok());
  source_->RunOnce();
  ASSERT_TRUE(RefusalHealth().has_value());
  EXPECT_THAT(RefusalHealth()->last_error, HasSubstr("no webhook secret"));
}

// --- the poller's own thread ---

TEST_F(GitHubSourceTest, StartPollsAtOnceAndStopReturnsPromptly) {
  Mention(101, 1, 1'000);
  clock_.Advance(10'000);
  const std::int64_t rounds_before = metrics::ProcessRuntime().Rounds()["github"].rounds;
  source_->Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake_->Count("GET", "/repos/Codertocat/Hello-World/commits/") == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  const auto stop_started = std::chrono::steady_clock::now();
  source_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, std::chrono::seconds(5));
  EXPECT_EQ(fake_->Count("GET", "/notifications"), 1);
  EXPECT_TRUE(views_->GetTrigger("github:comment:101@" + fake_->Iso(t0_ + 1'000)).ok());
  EXPECT_EQ(metrics::ProcessRuntime().Rounds()["github"].rounds - rounds_before, 1) << "the round is in /metrics";
}

// --- no double post across a crash ---

TEST_F(GitHubSourceTest, CrashBetweenPostedAndRecordedStillLeavesOneComment) {
  Mention(101, 1, 1'000);
  clock_.Advance(10'000);
  source_->RunOnce();
  assessor_.answers.push_back(ScriptedAssessor::Accept());
  ASSERT_EQ(Drain(), 1);
  // The Effects loop claims the acknowledgement and GitHub gets it …
  auto claimed = engine_->ClaimDueEffects(16);
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  Delivery d = channel_->Perform(claimed->front().effect, claimed->front().outcome_unknown);
  ASSERT_EQ(d.outcome, Delivery::Outcome::kDone);
  // … and the process dies before RecordDelivery. Restart:
  source_.reset();
  Open(superagent::testing::MakePolicy("observe", "people: [alice, bob]=>people: [alice, bob, Codertocat]"));
  clock_.Advance(5'000);
  GitHubChannel fresh(client_.get(), kSourceRepo);
  EffectsLoop loop(engine_.get(), {&fresh}, &clock_, {}, 7);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(loop.RunOnce().ok());
    clock_.Advance(400'000);
  }
  EXPECT_EQ(fake_->Count("POST", "/repos/Codertocat/Hello-World/issues/1/comments"), 1);
  auto receipts = Ok(views_->Receipts(std::nullopt));
  ASSERT_EQ(receipts.size(), 1u);
  EXPECT_EQ(receipts[0].status, "sent");
}

// Found by fuzz/github_webhook_fuzz (docs/009-fuzzing.md): a signed delivery whose repository has
// "full_name": null ended the request with a json type_error (500, the exception's text in a
// header). A null name is no repository (202); another type is a malformed delivery (400).
TEST_F(GitHubSourceTest, SignedDeliveryWithANullRepositoryNameIsNotTakenFoundByFuzzing) {
  // null reads as absent: no repository, so not the configured one.
  const std::string null_name = R"({"action":"created","repository":{"full_name":null}})";
  WebhookReply w;
  ASSERT_NO_THROW(w = source_->HandleWebhook({"issue_comment", "d-null", WebhookSignature(kSecret, null_name), null_name}));
  EXPECT_EQ(w.status, 202);
  EXPECT_THAT(w.message, HasSubstr("not the configured repository"));
  // Another type is a malformed delivery, refused naming the field.
  const std::string number_name = R"({"action":"created","repository":{"full_name":5}})";
  ASSERT_NO_THROW(w = source_->HandleWebhook({"issue_comment", "d-5", WebhookSignature(kSecret, number_name), number_name}));
  EXPECT_EQ(w.status, 400);
  EXPECT_THAT(w.message, HasSubstr("repository.full_name"));
}

// Found by fuzz/github_rest_fuzz: a notification with "full_name": null threw out of the polling
// round — at every start, since GitHub keeps answering it. It is another repository's business:
// skipped, and the round goes on to the notification after it.
TEST_F(GitHubSourceTest, NotificationWithANullRepositoryNameIsSkippedFoundByFuzzing) {
  json odd = fake_->MakeNotification("900", 1, false, t0_ + 500);
  odd["repository"]["full_name"] = nullptr;
  fake_->notifications.push_back(odd);
  Mention(101, 1, 1'000);
  clock_.Advance(10'000);
  RoundReport r;
  ASSERT_NO_THROW(r = source_->RunOnce());
  EXPECT_TRUE(r.notifications_polled);
  EXPECT_EQ(r.stored, 1) << "the mention after the odd notification is read";
}

// --- a Ticket's own pull request (issue 22): followed until it is merged or closed ---

class GitHubTrackedPullTest : public GitHubSourceTest {
 protected:
  static constexpr const char* kHeadSha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
  void SetUp() override {
    GitHubSourceTest::SetUp();
    // Nothing repo-wide: whatever arrives comes because the pull request is tracked.
    options_.read_ci = false;
    options_.read_pulls = false;
    options_.read_comments = false;
    options_.bot_login = "superagent-bot";
    options_.tracked_pulls = [this]() -> Result<std::vector<TrackedPull>> {
      ++tracked_calls_;
      if (!tracked_error_.ok()) return tracked_error_;
      return tracked_;
    };
    NewSource();
  }
  // PR #2 of the recorded payloads ("changes" → "master"), merged by octocat at t0 + 3 s.
  json MergedPull() {
    json pr = WebhookExample("pull_request", "closed")["pull_request"];
    pr["merged"] = true;
    pr["closed_at"] = pr["merged_at"] = pr["updated_at"] = fake_->Iso(t0_ + 3'000);
    pr["merged_by"] = {{"login", "octocat"}, {"id", 583231}, {"type", "User"}};
    pr["head"]["sha"] = kHeadSha;
    return pr;
  }
  json FailedRun() {
    json run = WebhookExample("workflow_run", "completed", 1)["workflow_run"];
    run["head_branch"] = "changes";
    run["head_sha"] = kHeadSha;
    run["conclusion"] = "failure";
    run["updated_at"] = fake_->Iso(t0_ + 2'000);
    return run;
  }
  json FailedCheck() {
    json check = WebhookExample("check_run", "completed", 1)["check_run"];  // another app's, on "changes"
    check["conclusion"] = "failure";
    check["completed_at"] = fake_->Iso(t0_ + 2'500);
    return check;
  }
  // Requests whose target is exactly `target` (no query).
  int Exactly(const std::string& target) {
    int n = 0;
    for (const auto& l : Requests()) n += l.method == "GET" && l.target == target;
    return n;
  }
  WebhookReply Deliver(const std::string& event, const json& payload) {
    const std::string body = payload.dump();
    return source_->HandleWebhook({event, "d-" + event, WebhookSignature(kSecret, body), body});
  }

  std::vector<TrackedPull> tracked_ = {TrackedPull{7, "Codertocat/Hello-World", 2, "changes"}};
  Status tracked_error_;  // what reading the tracked pull requests fails with (ok: it does not)
  int tracked_calls_ = 0;
};

// "A failed read is never none": when the Tickets' pull requests cannot be read, a round says so
// and reads nothing (taken for none, it would stop following them), and a CI delivery is refused
// with 503 (taken for none, a Ticket's own failed CI would be dropped); GitHub redelivers, and the
// next round reads it.
TEST_F(GitHubTrackedPullTest, ATrackedListThatCannotBeReadIsAnErrorNeverNone) {
  fake_->workflow_runs.push_back(FailedRun());
  tracked_error_ = Status::Unavailable("database is locked");
  clock_.Advance(10'000);
  fake_->ClearLog();
  RoundReport r = source_->RunOnce();
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], "tracked pull requests not read: database is locked");
  EXPECT_TRUE(Requests().empty()) << "a round that cannot know what it follows reads nothing";

  json run = WebhookExample("workflow_run", "completed", 1);
  run["repository"]["full_name"] = kSourceRepo;  // the recorded run is of another repository
  run["workflow_run"] = FailedRun();
  WebhookReply refused = Deliver("workflow_run", run);
  EXPECT_EQ(refused.status, 503) << refused.message;
  EXPECT_FALSE(views_->GetTrigger("github:ci:run:289782451@1").ok()) << "nothing stored from the refused delivery";

  tracked_error_ = Status::Ok();
  EXPECT_EQ(Deliver("workflow_run", run).status, 200);
  EXPECT_TRUE(views_->GetTrigger("github:ci:run:289782451@1").ok());
}

TEST_F(GitHubTrackedPullTest, ARoundBringsTheMergeAndTheFailedCiTheLostWebhooksWouldHave) {
  fake_->pulls[2] = MergedPull();
  fake_->workflow_runs.push_back(FailedRun());
  fake_->check_runs.push_back(FailedCheck());
  json review = WebhookExample("pull_request_review", "submitted")["review"];
  review["state"] = "APPROVED";
  review["body"] = "LGTM 👍";
  review["submitted_at"] = fake_->Iso(t0_ + 1'500);
  fake_->reviews[2].push_back(review);
  json inline_comment = WebhookExample("pull_request_review_comment", "created", 1)["comment"];
  inline_comment["created_at"] = inline_comment["updated_at"] = fake_->Iso(t0_ + 1'200);
  fake_->review_comments.push_back(inline_comment);
  clock_.Advance(10'000);

  RoundReport r = source_->RunOnce();
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(tracked_calls_, 1);
  auto closed = views_->GetTrigger("github:codertocat/hello-world:pull:2:closed@" + fake_->Iso(t0_ + 3'000));
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_EQ(closed->outcome, IntakeOutcome::kStored);  // read_pulls is off: stored because it is tracked
  EXPECT_EQ(closed->via, "poll:discussion");
  EXPECT_EQ(closed->trigger.actor, "octocat");
  EXPECT_EQ(closed->trigger.text, "Pull request #2 was merged by octocat.\nUpdate the README with new information.");
  EXPECT_EQ(closed->trigger.meta["merged"], true);
  EXPECT_EQ(closed->trigger.meta["merged_by"], "octocat");
  auto run = views_->GetTrigger("github:ci:run:289782451@1");
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->outcome, IntakeOutcome::kStored);  // read_ci is off: a Ticket's own CI is still read
  EXPECT_EQ(run->trigger.scope, "ci");
  EXPECT_EQ(run->trigger.threads, (std::vector<std::string>{"github:codertocat/hello-world:ci:changes"}));
  EXPECT_EQ(run->trigger.meta["pull_number"], 2);
  EXPECT_THAT(run->trigger.text, HasSubstr("finished: failure"));
  auto check = views_->GetTrigger("github:ci:check:128620228@" + fake_->Iso(t0_ + 2'500));
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->outcome, IntakeOutcome::kStored);
  EXPECT_EQ(check->trigger.meta["pull_number"], 2);
  auto approved = views_->GetTrigger("github:review:237895671@" + fake_->Iso(t0_ + 1'500));
  ASSERT_TRUE(approved.ok()) << approved.status().ToString();
  EXPECT_EQ(approved->trigger.meta["state"], "approved");
  EXPECT_EQ(approved->trigger.meta["commit_id"], kHeadSha);
  EXPECT_TRUE(views_->GetTrigger("github:review_comment:284312630@" + fake_->Iso(t0_ + 1'200)).ok());
  EXPECT_EQ(r.stored, 5);
  // Each thing is read once: the pull request itself (which gave the head commit), its lists, CI.
  const std::string pr = "/repos/Codertocat/Hello-World/pulls/2";
  EXPECT_EQ(Exactly(pr), 1);
  EXPECT_EQ(fake_->Count("GET", pr + "/reviews"), 1);
  EXPECT_EQ(fake_->Count("GET", pr + "/comments"), 1);
  EXPECT_EQ(fake_->Count("GET", "/repos/Codertocat/Hello-World/actions/runs?branch=changes&"), 1);
  EXPECT_EQ(fake_->Count("GET", std::string("/repos/Codertocat/Hello-World/commits/") + kHeadSha + "/check-runs"), 1);
  EXPECT_EQ(Exactly("/repos/Codertocat/Hello-World/issues/2"), 0);  // merged_by named the merger
  EXPECT_EQ(Health("pull_ci")->consecutive_failures, 0);

  clock_.Advance(61'000);
  RoundReport again = source_->RunOnce();
  EXPECT_TRUE(again.errors.empty()) << again.errors.front();
  EXPECT_EQ(tracked_calls_, 2);
  EXPECT_EQ(again.stored, 0);
  EXPECT_EQ(again.filtered, 0);
  EXPECT_FALSE(views_->GetTriggerBySeq(6).ok()) << "a second round stored something";
}

TEST_F(GitHubTrackedPullTest, AClosingWithoutAMergeNamesWhoClosedItOnce) {
  json pr = MergedPull();
  pr["merged"] = false;
  pr["merged_at"] = nullptr;
  pr["merged_by"] = nullptr;
  fake_->pulls[2] = pr;
  fake_->issues[2]["closed_by"] = {{"login", "Codertocat"}, {"type", "User"}};
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  auto closed = views_->GetTrigger("github:codertocat/hello-world:pull:2:closed@" + fake_->Iso(t0_ + 3'000));
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_EQ(closed->trigger.actor, "Codertocat");
  EXPECT_TRUE(closed->trigger.human);
  EXPECT_EQ(closed->trigger.text, "Pull request #2 was closed by Codertocat.\nUpdate the README with new information.");
  EXPECT_EQ(closed->trigger.meta["merged"], false);
  EXPECT_EQ(closed->trigger.meta["merged_by"], "");
  EXPECT_EQ(Exactly("/repos/Codertocat/Hello-World/issues/2"), 1);
  fake_->ClearLog();
  clock_.Advance(61'000);
  RoundReport again = source_->RunOnce();
  EXPECT_EQ(again.stored, 0);
  EXPECT_EQ(Exactly("/repos/Codertocat/Hello-World/issues/2"), 0);  // the cursor remembers the closing
}

TEST_F(GitHubTrackedPullTest, WebhooksTakeTheClosingAndTrackedCiAndPollingMeetsThemAsDuplicates) {
  json payload = WebhookExample("pull_request", "closed");
  payload["pull_request"] = MergedPull();
  WebhookReply w = Deliver("pull_request", payload);
  EXPECT_EQ(w.status, 200) << w.message;
  EXPECT_EQ(w.message, "stored");  // read_pulls is off and no round has read #2: tracked is enough
  EXPECT_EQ(tracked_calls_, 1);
  const std::string closed_id = "github:codertocat/hello-world:pull:2:closed@" + fake_->Iso(t0_ + 3'000);
  auto closed = views_->GetTrigger(closed_id);
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_EQ(closed->via, "webhook");
  // An untracked pull request's closing is repo-wide news: read_pulls (off here) decides.
  json other = payload;
  other["pull_request"]["number"] = 3;
  EXPECT_EQ(Deliver("pull_request", other).message, "filtered");
  EXPECT_EQ(views_->GetTrigger("github:codertocat/hello-world:pull:3:closed@" + fake_->Iso(t0_ + 3'000))->filter_reason, "out_of_scope");
  EXPECT_EQ(tracked_calls_, 2);
  // Deliveries that do not depend on it never ask.
  json comment = WebhookExample("issue_comment", "created");
  Deliver("issue_comment", comment);
  EXPECT_EQ(tracked_calls_, 2);
  EXPECT_EQ(closed->trigger.actor, "octocat");

  json check = WebhookExample("check_run", "completed", 1);
  check["check_run"] = FailedCheck();
  w = Deliver("check_run", check);
  EXPECT_EQ(w.status, 200) << w.message;
  EXPECT_EQ(w.message, "stored");  // read_ci is off, but this is the Ticket's own CI
  EXPECT_EQ(tracked_calls_, 3);
  json run = WebhookExample("workflow_run", "completed", 1);
  run["repository"]["full_name"] = kSourceRepo;  // the recorded run is of another repository
  run["workflow_run"] = FailedRun();
  w = Deliver("workflow_run", run);
  EXPECT_EQ(w.message, "stored");
  EXPECT_EQ(views_->GetTrigger("github:ci:run:289782451@1")->trigger.meta["pull_number"], 2);
  EXPECT_EQ(tracked_calls_, 4);
  // Another branch's CI is skipped as before.
  json elsewhere = run;
  elsewhere["workflow_run"]["id"] = 5;
  elsewhere["workflow_run"]["head_branch"] = "someone-elses-branch";
  w = Deliver("workflow_run", elsewhere);
  EXPECT_EQ(w.status, 202);
  EXPECT_THAT(w.message, HasSubstr("not on the default branch or a tracked pull request's head"));
  EXPECT_FALSE(views_->GetTrigger("github:ci:run:5@1").ok());

  // The polling round finds the same three: duplicates, nothing new.
  fake_->pulls[2] = MergedPull();
  fake_->workflow_runs.push_back(FailedRun());
  fake_->check_runs.push_back(FailedCheck());
  clock_.Advance(10'000);
  RoundReport r = source_->RunOnce();
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.stored, 0);
  EXPECT_EQ(r.duplicate, 3);
  EXPECT_EQ(views_->GetTrigger(closed_id)->via, "webhook");
}

TEST_F(GitHubTrackedPullTest, HostileTrackedEntriesAndAnswersNeverFailTheRoundForever) {
  tracked_ = {TrackedPull{1, "Codertocat/Hello-World", 0, ""},          TrackedPull{2, "Codertocat/Hello-World", -5, "x"},
              TrackedPull{3, "Codertocat/Hello-World", 9, "gone"},      TrackedPull{4, "Codertocat/Hello-World", 10, "分支/表情 😀+x"},
              TrackedPull{5, "Codertocat/Hello-World", 2, "changes"},   TrackedPull{6, "Codertocat/Hello-World", 2, "a-duplicate"},
              TrackedPull{7, "Codertocat/Hello-World", 11, ""}};
  fake_->Script("GET", "/repos/Codertocat/Hello-World/pulls/9", {410, {}, R"({"message":"Gone"})"}, -1);
  json pr = MergedPull();
  pr["state"] = "open";
  pr["merged"] = false;
  pr["closed_at"] = pr["merged_at"] = pr["merged_by"] = nullptr;
  fake_->pulls[2] = pr;
  json eleven = pr;
  eleven["number"] = 11;
  eleven["head"]["sha"] = 12345;  // wrong type: no head commit, so no check runs are read
  fake_->pulls[11] = eleven;
  json bad_run = FailedRun();
  bad_run["id"] = 77;
  bad_run["updated_at"] = 12;  // wrong type: skipped and counted
  fake_->workflow_runs.push_back(bad_run);
  fake_->workflow_runs.push_back(FailedRun());
  fake_->Script("GET", std::string("/repos/Codertocat/Hello-World/commits/") + kHeadSha + "/check-runs",
                {422, {}, R"({"message":"No commit found for SHA"})"}, 1);
  clock_.Advance(10'000);

  RoundReport r = source_->RunOnce();
  EXPECT_TRUE(r.errors.empty()) << json(r.errors).dump();
  EXPECT_EQ(r.stored, 1);  // the failed run on "changes"
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(Health("discussions")->consecutive_failures, 0) << Health("discussions")->last_error;
  EXPECT_EQ(Health("pull_ci")->consecutive_failures, 0) << Health("pull_ci")->last_error;
  EXPECT_EQ(Health("pull_ci")->skipped_items, 1);
  EXPECT_EQ(Cursor("pull:9")["deleted"], true);
  EXPECT_EQ(Exactly("/repos/Codertocat/Hello-World/pulls/2"), 1);  // once, though listed twice
  EXPECT_EQ(fake_->Count("GET", "/repos/Codertocat/Hello-World/actions/runs?branch=a-duplicate"), 0);
  // The branch name is sent percent-encoded, and GitHub's empty answer is no error.
  EXPECT_EQ(fake_->Count("GET", "/repos/Codertocat/Hello-World/actions/runs?branch=%E5%88%86%E6%94%AF%2F"), 1);
  EXPECT_EQ(fake_->Count("GET", "/repos/Codertocat/Hello-World/commits/12345"), 0);

  fake_->ClearLog();
  clock_.Advance(61'000);
  RoundReport again = source_->RunOnce();
  EXPECT_TRUE(again.errors.empty()) << json(again.errors).dump();
  EXPECT_EQ(Exactly("/repos/Codertocat/Hello-World/pulls/9"), 0);   // 410: never asked again
  EXPECT_EQ(Exactly("/repos/Codertocat/Hello-World/pulls/10"), 1);  // 404: asked once a round, skipped
  EXPECT_EQ(fake_->Count("GET", std::string("/repos/Codertocat/Hello-World/commits/") + kHeadSha + "/check-runs"), 1);
  EXPECT_EQ(Health("discussions")->consecutive_failures, 0);

  // A GitHub that fails (500) fails the path and keeps the cursor; the rest of the round goes on.
  const json before = Cursor("ci:pull:2");
  fake_->Script("GET", "/repos/Codertocat/Hello-World/actions/runs", {500, {}, R"({"message":"boom"})"}, -1);
  clock_.Advance(61'000);
  RoundReport failing = source_->RunOnce();
  EXPECT_FALSE(failing.errors.empty());
  EXPECT_EQ(Health("pull_ci")->consecutive_failures, 1);
  EXPECT_EQ(Cursor("ci:pull:2"), before);
}

}  // namespace
}  // namespace superagent::github

namespace superagent::github {
namespace {

// Issue 20: one webhook delivery is one write transaction — the Trigger, the webhook path's
// health and the cursor that starts following the discussion the request came from — and reads
// the Source's cursors once.
TEST_F(GitHubSourceTest, AWebhookDeliveryIsOneWriteTransaction) {
  options_.bot_login = "superagent-bot";
  NewSource();
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"] = fake_->MakeComment(777, 1, "Codertocat", "@superagent-bot 请修复 README 里的错字 🙏", t0_ + 1'000);
  const std::string body = payload.dump();
  const std::int64_t before = engine_->WriteTransactions();
  WebhookReply w = source_->HandleWebhook({"issue_comment", "d-9", WebhookSignature(kSecret, body), body});
  EXPECT_EQ(w.status, 200) << w.message;
  EXPECT_EQ(w.message, "stored");
  EXPECT_EQ(engine_->WriteTransactions() - before, 1);
  const auto cursors = views_->SourceCursors(kSourceName).value();
  EXPECT_EQ(cursors.count(Discussion{"Codertocat/Hello-World", false, 1}.Key()), 1u) << "the discussion is followed from now on";
  bool webhook_health = false;
  for (const SourceHealth& h : Ok(views_->SourcesHealth()))
    webhook_health |= h.source == kSourceName && h.path == "webhook" && h.last_success_at.has_value();
  EXPECT_TRUE(webhook_health);
  // The same delivery again: a duplicate, still one transaction (its health), nothing else.
  const std::int64_t again = engine_->WriteTransactions();
  EXPECT_EQ(source_->HandleWebhook({"issue_comment", "d-9", WebhookSignature(kSecret, body), body}).message,
            "duplicate");
  EXPECT_EQ(engine_->WriteTransactions() - again, 1);
}

// A cursor read that fails is not "nothing followed": the delivery is refused (503; the
// notifications round brings the same comment) and no follow cursor is written over the one the
// discussion already has.
TEST_F(GitHubSourceTest, AWebhookWhoseCursorsCannotBeReadIsRefusedAndOverwritesNothing) {
  options_.bot_login = "superagent-bot";
  NewSource();
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"] = fake_->MakeComment(778, 1, "Codertocat", "@superagent-bot 再看一下 🙂", t0_ + 1'000);
  std::string body = payload.dump();
  ASSERT_EQ(source_->HandleWebhook({"issue_comment", "d-10", WebhookSignature(kSecret, body), body}).status, 200);
  const std::string followed = views_->SourceCursors(kSourceName).value().at(Discussion{"Codertocat/Hello-World", false, 1}.Key());

  sqlite3* outside = nullptr;  // another process breaks the table under the daemon
  ASSERT_EQ(sqlite3_open((dir_ / "superagent.db").string().c_str(), &outside), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(outside, "ALTER TABLE source_cursors RENAME TO hidden_cursors", nullptr, nullptr, nullptr),
            SQLITE_OK);
  payload["comment"] = fake_->MakeComment(779, 1, "Codertocat", "@superagent-bot and the heading", t0_ + 2'000);
  body = payload.dump();
  WebhookReply w = source_->HandleWebhook({"issue_comment", "d-11", WebhookSignature(kSecret, body), body});
  EXPECT_EQ(w.status, 503) << w.message;
  EXPECT_FALSE(views_->SourceCursors(kSourceName).ok());
  ASSERT_EQ(sqlite3_exec(outside, "ALTER TABLE hidden_cursors RENAME TO source_cursors", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(outside);
  EXPECT_EQ(views_->SourceCursors(kSourceName).value().at(Discussion{"Codertocat/Hello-World", false, 1}.Key()), followed);
  EXPECT_FALSE(views_->GetTrigger(CommentId(payload["comment"])).ok()) << "nothing of it was stored";
}

// Issue 20: open Tickets' discussions that cannot be read are not "none": the round says so
// (a round error, counted in its health) instead of letting those discussions go unfollowed.
TEST_F(GitHubSourceTest, ARoundWhoseOpenTicketsCannotBeReadReportsItInsteadOfFollowingNone) {
  clock_.Advance(10'000);
  RoundReport first = source_->RunOnce();
  ASSERT_TRUE(first.errors.empty()) << first.errors.front();
  sqlite3* outside = nullptr;  // another process breaks the table under the daemon, then mends it
  ASSERT_EQ(sqlite3_open((dir_ / "superagent.db").string().c_str(), &outside), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(outside, "ALTER TABLE tickets RENAME TO hidden_tickets", nullptr, nullptr, nullptr), SQLITE_OK);
  clock_.Advance(120'000);
  RoundReport r = source_->RunOnce();
  ASSERT_EQ(sqlite3_exec(outside, "ALTER TABLE hidden_tickets RENAME TO tickets", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(outside);
  bool said = false;
  for (const std::string& e : r.errors) said |= e.find("open tickets' discussions not read") != std::string::npos;
  EXPECT_TRUE(said) << "errors: " << json(r.errors).dump();
  clock_.Advance(120'000);
  RoundReport mended = source_->RunOnce();
  EXPECT_TRUE(mended.errors.empty()) << mended.errors.front();
}

}  // namespace
}  // namespace superagent::github
