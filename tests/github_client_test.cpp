// The GitHub REST client against the loopback fake: recorded pagination, redirects and errors
// from @octokit/fixtures; conditional requests; primary and secondary rate limits; retries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_github_server.h"
#include "superagent/github.h"
#include "sources/github/source_internal.h"

namespace superagent::github {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using superagent::testing::FakeGitHub;
using superagent::testing::OctokitScenario;

class GitHubClientTest : public ::testing::Test {
 protected:
  GitHubClientTest() : fake_(&clock_), http_(MakeHttpClient("superagent-test")) {
    ClientOptions o;
    o.api_url = fake_.url();
    o.token = "ghp_test_token_never_logged";
    client_ = std::make_unique<Client>(http_.get(), &clock_, [this](TimeMs ms) {
      sleeps_.push_back(ms);
      clock_.Advance(ms);
    }, o);
  }

  FakeClock clock_;
  FakeGitHub fake_;
  std::unique_ptr<HttpClient> http_;
  std::vector<TimeMs> sleeps_;
  std::unique_ptr<Client> client_;
};

TEST_F(GitHubClientTest, SendsAuthVersionAndUserAgent) {
  ApiResponse r = client_->Get("/user");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body["login"], "superagent-bot");
  auto log = fake_.log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].request_headers["authorization"], "Bearer ghp_test_token_never_logged");
  EXPECT_EQ(log[0].request_headers["accept"], "application/vnd.github+json");
  EXPECT_EQ(log[0].request_headers["x-github-api-version"], "2022-11-28");
  EXPECT_EQ(log[0].request_headers["user-agent"], "superagent");
}

TEST_F(GitHubClientTest, FollowsRecordedLinkPagination) {
  // Recorded: 5 pages of 3, 3, 3, 3, 1 issues; the next links switch to /repositories/1000/….
  fake_.Replay(OctokitScenario("paginate-issues"));
  ApiResponse r = client_->GetAll("/repos/octokit-fixture-org/paginate-issues/issues?per_page=3");
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(r.body.is_array());
  EXPECT_EQ(r.body.size(), 13u);
  EXPECT_EQ(r.body[0]["number"], 13);
  EXPECT_EQ(fake_.Count("GET", "/repositories/1000/issues"), 4);
  EXPECT_EQ(r.next_url, "");
  EXPECT_FALSE(r.not_modified);
}

TEST_F(GitHubClientTest, RecordedEtagMakesTheSecondReadA304FromTheCache) {
  fake_.Replay(OctokitScenario("paginate-issues"));
  ASSERT_TRUE(client_->GetAll("/repos/octokit-fixture-org/paginate-issues/issues?per_page=3").ok());
  fake_.ClearLog();
  ApiResponse again = client_->GetAll("/repos/octokit-fixture-org/paginate-issues/issues?per_page=3");
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_TRUE(again.not_modified);
  EXPECT_EQ(again.body.size(), 13u);  // the cached pages, Link chain included
  auto log = fake_.log();
  ASSERT_EQ(log.size(), 5u);
  for (const auto& l : log) {
    EXPECT_EQ(l.status, 304) << l.target;
    ASSERT_TRUE(l.request_headers.count("if-none-match")) << l.target;
    EXPECT_EQ(l.request_headers.at("if-none-match"), "\"00000000000000000000000000000000\"");
  }
  EXPECT_EQ(client_->Budget().not_modified, 5);
}

TEST_F(GitHubClientTest, FollowsRecordedRedirectOfARenamedRepository) {
  fake_.Replay(OctokitScenario("rename-repository"));
  ApiResponse r = client_->Get("/repos/octokit-fixture-org/rename-repository");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(fake_.Count("GET", "/repositories/1000"), 1);
}

TEST_F(GitHubClientTest, RecordedValidationErrorIsAnErrorWithGitHubsWords) {
  fake_.Replay(OctokitScenario("errors"));
  ApiResponse r = client_->Send("POST", "/repos/octokit-fixture-org/errors/labels", {{"name", "foo"}, {"color", "invalid"}});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, 422);
  EXPECT_THAT(r.error, HasSubstr("Validation Failed"));
  EXPECT_THAT(r.error, HasSubstr("Label color invalid"));
  EXPECT_THAT(r.error, Not(HasSubstr("ghp_")));
}

TEST_F(GitHubClientTest, ConditionalRequestOnTheModelCostsNoRate) {
  ApiResponse first = client_->Get("/repos/Codertocat/Hello-World");
  ASSERT_TRUE(first.ok());
  const int remaining = fake_.rate_remaining;
  ApiResponse second = client_->Get("/repos/Codertocat/Hello-World");
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second.not_modified);
  EXPECT_EQ(second.body["default_branch"], "master");
  EXPECT_EQ(fake_.rate_remaining, remaining);
  EXPECT_EQ(client_->Budget().remaining, remaining);
}

TEST(GitHubClientPaceTest, AFullMinuteWaitsForItsOldestRequestAndACutSleepSendsNothing) {
  FakeClock clock;
  FakeGitHub fake(&clock);
  auto http = MakeHttpClient("superagent-test");
  ClientOptions o;
  o.api_url = fake.url();
  o.token = "ghp_test";
  o.max_requests_per_minute = 3;
  std::vector<TimeMs> sleeps;
  bool sleep_passes = true;
  Client client(http.get(), &clock, [&](TimeMs ms) {
    sleeps.push_back(ms);
    if (sleep_passes) clock.Advance(ms);
  }, o);
  // Three in the same minute leave at once, a 304 as much as a 200: GitHub's secondary limit
  // counts every request.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Get("/repos/Codertocat/Hello-World").ok());
    clock.Advance(10'000);
  }
  EXPECT_TRUE(sleeps.empty());
  // The fourth waits until the first is more than a minute old (sent at t0, now t0 + 30 s).
  ASSERT_TRUE(client.Get("/user").ok());
  ASSERT_EQ(sleeps.size(), 1u);
  EXPECT_EQ(sleeps[0], 30'001);
  EXPECT_EQ(fake.Count("GET", "/user"), 1);
  // A sleep cut short (the daemon stopping) sends nothing and says why.
  sleep_passes = false;
  ApiResponse cut = client.Get("/user");
  EXPECT_FALSE(cut.ok());
  EXPECT_THAT(cut.error, HasSubstr("not sent, its minute's requests are spent"));
  EXPECT_EQ(fake.Count("GET", "/user"), 1);
  EXPECT_EQ(client.Budget().requests, 4);
}

TEST_F(GitHubClientTest, TheHoursCountedRequestsLeaveOutThe304sAndAgeOut) {
  ASSERT_TRUE(client_->Get("/repos/Codertocat/Hello-World").ok());  // 200: counted
  ASSERT_TRUE(client_->Get("/repos/Codertocat/Hello-World").not_modified);  // 304: free
  clock_.Advance(30 * 60'000);
  ASSERT_TRUE(client_->Get("/user").ok());
  RateBudget b = client_->Budget();
  EXPECT_EQ(b.requests, 3);
  EXPECT_EQ(b.not_modified, 1);
  EXPECT_EQ(b.counted_last_hour, 2);
  clock_.Advance(31 * 60'000);  // the first is now more than an hour old
  EXPECT_EQ(client_->Budget().counted_last_hour, 1);
  clock_.Advance(60 * 60'000);
  EXPECT_EQ(client_->Budget().counted_last_hour, 0);
}

TEST_F(GitHubClientTest, RetryAfterIsWaitedAsToldThenTheRequestSucceeds) {
  fake_.Script("GET", "/user", {429, {{"Retry-After", "7"}}, R"({"message":"You have exceeded a secondary rate limit."})"});
  const TimeMs start = clock_.NowMs();
  ApiResponse r = client_->Get("/user", CallOptions{60'000, 3});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(sleeps_.size(), 1u);
  EXPECT_EQ(sleeps_[0], 7'000);
  EXPECT_EQ(clock_.NowMs() - start, 7'000);
  EXPECT_EQ(fake_.Count("GET", "/user"), 2);
}

TEST_F(GitHubClientTest, SecondaryLimitWithoutRetryAfterWaitsAMinute) {
  fake_.Script("GET", "/user", {403, {}, R"({"message":"You have exceeded a secondary rate limit. Please wait."})"});
  ApiResponse r = client_->Get("/user", CallOptions{60'000, 1});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(sleeps_.size(), 1u);
  EXPECT_EQ(sleeps_[0], 60'000);
}

TEST_F(GitHubClientTest, ExhaustedPrimaryLimitBlocksUntilResetWithoutTouchingTheNetwork) {
  const std::int64_t reset_s = clock_.NowMs() / 1000 + 600;
  fake_.Script("GET", "/user",
               {403,
                {{"x-ratelimit-remaining", "0"}, {"x-ratelimit-limit", "5000"}, {"x-ratelimit-reset", std::to_string(reset_s)}},
                R"({"message":"API rate limit exceeded for user ID 1."})"});
  ApiResponse r = client_->Get("/user", CallOptions{60'000, 3});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.rate_limited);
  EXPECT_EQ(r.retry_at, reset_s * 1000 + 1000);
  EXPECT_TRUE(sleeps_.empty());  // ten minutes is more than this call may wait
  // Until the reset nothing leaves the house.
  ApiResponse again = client_->Get("/repos/Codertocat/Hello-World", CallOptions{60'000, 3});
  EXPECT_TRUE(again.rate_limited);
  EXPECT_EQ(fake_.Count("GET", "/repos/"), 0);
  clock_.Set(reset_s * 1000 + 1000);
  EXPECT_TRUE(client_->Get("/repos/Codertocat/Hello-World").ok());
}

TEST_F(GitHubClientTest, ServerErrorsAreRetriedWithBackoffForReads) {
  fake_.Script("GET", "/user", {502, {}, R"({"message":"Server Error"})"}, 2);
  ApiResponse r = client_->Get("/user", CallOptions{0, 3});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(sleeps_, (std::vector<TimeMs>{1'000, 2'000}));
  EXPECT_EQ(fake_.Count("GET", "/user"), 3);
}

TEST_F(GitHubClientTest, ServerErrorsAreNotRetriedForWrites) {
  fake_.Script("POST", "/repos/Codertocat/Hello-World/issues/1/comments", {500, {}, R"({"message":"boom"})"});
  ApiResponse r = client_->Send("POST", "/repos/Codertocat/Hello-World/issues/1/comments", {{"body", "x"}},
                                CallOptions{0, 3});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(fake_.Count("POST", "/repos/"), 1);
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(GitHubClientTest, TransportErrorsAreErrorsWithoutTheToken) {
  ClientOptions o;
  o.api_url = "http://127.0.0.1:1";  // nothing listens there
  o.token = "ghp_secret_value_123";
  Client c(http_.get(), &clock_, [this](TimeMs ms) { clock_.Advance(ms); }, o);
  ApiResponse r = c.Get("/user", CallOptions{0, 2});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.error, HasSubstr("GET /user"));
  EXPECT_THAT(r.error, Not(HasSubstr("ghp_secret")));
}

// The token goes to github.api_url and nowhere else: a next-page link or a redirect to another
// host (a peer that lies) is not followed, and the other host hears nothing.
TEST_F(GitHubClientTest, ALinkOrRedirectToAnotherHostIsNotFollowedWithTheToken) {
  FakeGitHub elsewhere(&clock_);
  FakeGitHub::Scripted page;
  page.body = R"([{"number": 1}])";
  page.headers["Link"] = "<" + elsewhere.url() + "/repos/o/r/issues?page=2>; rel=\"next\"";
  fake_.Script("GET", "/repos/o/r/issues", page);
  ApiResponse r = client_->GetAll("/repos/o/r/issues");
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.error, HasSubstr("not github.api_url"));
  EXPECT_THAT(r.error, Not(HasSubstr("ghp_test_token")));

  FakeGitHub::Scripted moved;
  moved.status = 301;
  moved.headers["Location"] = elsewhere.url() + "/repositories/1";
  fake_.Script("GET", "/repos/o/moved", moved);
  ApiResponse m = client_->Get("/repos/o/moved");
  EXPECT_FALSE(m.ok());
  EXPECT_THAT(m.error, HasSubstr("not github.api_url"));

  ApiResponse absolute = client_->Get("file:///etc/passwd");
  EXPECT_FALSE(absolute.ok());
  EXPECT_TRUE(elsewhere.log().empty()) << "the other host was asked " << elsewhere.log().size() << " times";
}

TEST(GitHubWireTest, LinkHeaderAndDates) {
  EXPECT_EQ(NextLink(R"(<https://api.github.com/repositories/1000/issues?per_page=3&page=2>; rel="next", <https://api.github.com/repositories/1000/issues?per_page=3&page=5>; rel="last")"),
            "https://api.github.com/repositories/1000/issues?per_page=3&page=2");
  EXPECT_EQ(NextLink(R"(<https://x/?page=4>; rel="prev", <https://x/?page=1>; rel="first")"), "");
  EXPECT_EQ(NextLink(""), "");
  TimeMs t = 0;
  ASSERT_TRUE(ParseHttpDate("Tue, 10 Oct 2017 16:00:00 GMT", &t));
  EXPECT_EQ(IsoSeconds(t), "2017-10-10T16:00:00Z");
  EXPECT_FALSE(ParseHttpDate("yesterday", &t));
}

TEST(GitHubWebhookSignatureTest, MatchesGitHubsDocumentedExample) {
  // docs.github.com "Validating webhook deliveries": this secret and payload give this signature.
  EXPECT_EQ(WebhookSignature("It's a Secret to Everybody", "Hello, World!"),
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17");
  EXPECT_TRUE(VerifyWebhookSignature("It's a Secret to Everybody", "Hello, World!",
                                     "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"));
  EXPECT_FALSE(VerifyWebhookSignature("It's a Secret to Everybody", "Hello, World?",
                                      "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"));
  EXPECT_FALSE(VerifyWebhookSignature("", "Hello, World!", WebhookSignature("", "Hello, World!")));
  EXPECT_FALSE(VerifyWebhookSignature("s", "b", ""));
  // A key longer than the block is hashed first (RFC 4231 case 6).
  EXPECT_EQ(WebhookSignature(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "sha256=60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}


// Issue 25: an App's installation token is asked for before each request; a 401 to it gets one
// new token and one more try — a write included (a 401 means GitHub did nothing), so the
// comment is posted once — and a second 401 is the answer, not a loop. No token: nothing is sent.
TEST(GitHubAppClientTest, A401GetsOneFreshInstallationTokenAndTheWriteIsPostedOnce) {
  FakeClock clock;
  FakeGitHub fake(&clock);
  fake.issues[1] = superagent::testing::WebhookExample("issue_comment", "created")["issue"];
  auto http = MakeHttpClient("superagent-test");
  int generation = 1, rejected = 0;
  bool broken = false;
  ClientOptions o;
  o.api_url = fake.url();
  o.token = "ghp_ignored_in_app_mode";
  o.token_source = [&]() -> Result<std::string> {
    if (broken) return Status::Unavailable("an installation token was refused: HTTP 401");
    return "ghs_generation" + std::to_string(generation);
  };
  o.token_rejected = [&] {
    ++rejected;
    ++generation;
  };
  Client client(http.get(), &clock, [&](TimeMs ms) { clock.Advance(ms); }, o);
  const std::string path = fake.repo_path() + "/issues/1/comments";
  fake.Script("POST", path, {401, {}, R"({"message":"Bad credentials"})"});
  ApiResponse posted = client.Send("POST", path, {{"body", "修好了 ✅"}});
  ASSERT_TRUE(posted.ok()) << posted.error;
  auto log = fake.log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].request_headers["authorization"], "Bearer ghs_generation1");
  EXPECT_EQ(log[0].status, 401);
  EXPECT_EQ(log[1].request_headers["authorization"], "Bearer ghs_generation2");
  EXPECT_EQ(log[1].status, 201);
  EXPECT_EQ(rejected, 1);

  fake.ClearLog();
  fake.Script("GET", "/user", {401, {}, R"({"message":"Bad credentials"})"}, 2);
  ApiResponse refused = client.Get("/user");
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(fake.log().size(), 2u) << "one more try, not a loop";

  fake.ClearLog();
  broken = true;
  ApiResponse unsent = client.Get("/user");
  EXPECT_THAT(unsent.error, HasSubstr("not sent, no installation token: an installation token was refused"));
  EXPECT_TRUE(fake.log().empty());
  EXPECT_THAT(unsent.error, Not(HasSubstr("ghp_ignored")));
}

}  // namespace
}  // namespace superagent::github
