// GitHub App identity (issue 25): the App's JWT as GitHub verifies it (RS256, checked by the
// loopback fake with the public key alone), installation tokens fetched, reused, refreshed before
// expiry and after a 401, the App's login and the permissions the daemon needs — under GitHub
// Enterprise Server's /api/v3 prefix too.
#include <atomic>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fake_github_server.h"
#include "github_app_keys.h"
#include "superagent/clock.h"
#include "superagent/github_app.h"
#include "superagent/http.h"
#include "superagent/secret_filter.h"

namespace superagent::testing {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AppClock : public Clock {
 public:
  TimeMs NowMs() const override { return now; }
  std::atomic<TimeMs> now{1'764'900'000'000};
};

class AppAuthTest : public ::testing::TestWithParam<std::string> {
 protected:
  AppAuthTest() {
    fake_.repo = "octo/hello";
    fake_.prefix = GetParamOr("");
    fake_.UseApp(key_.key);
  }
  static std::string GetParamOr(const std::string& fallback) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return info != nullptr && info->value_param() != nullptr ? GetParam() : fallback;
  }
  github::AppAuthOptions Options() {
    github::AppAuthOptions o;
    o.api_url = fake_.api_url();
    o.app_id = "12345";
    o.private_key_pem = key_.pem;
    o.installation_id = 42;
    return o;
  }
  TestKey key_;
  AppClock clock_;
  FakeGitHub fake_{&clock_};
  std::unique_ptr<HttpClient> http_ = MakeHttpClient("superagent-test");
};

TEST_P(AppAuthTest, AJwtGitHubVerifiesBuysATokenThatIsReusedAndRefreshedBeforeItExpires) {
  auto installation = github::ReadInstallation(http_.get(), Options(), "octo/hello", clock_.NowMs());
  ASSERT_TRUE(installation.ok()) << installation.status().ToString() << " " << fake_.last_refusal;
  EXPECT_EQ(installation->id, 42);
  EXPECT_TRUE(github::MissingAppPermissions(installation->permissions).empty());
  EXPECT_EQ(github::ReadInstallation(http_.get(), Options(), "octo/other", clock_.NowMs()).status().code(),
            Status::Code::kNotFound);

  github::InstallationTokens tokens(http_.get(), &clock_, Options());
  auto first = tokens.Token();
  ASSERT_TRUE(first.ok()) << first.status().ToString() << " " << fake_.last_refusal;
  EXPECT_EQ(*first, "ghs_installation1");
  clock_.now += 50 * 60'000;  // ten minutes left: still good
  EXPECT_EQ(*tokens.Token(), "ghs_installation1");
  EXPECT_EQ(fake_.tokens_issued, 1) << "a token is reused while it has time left";
  clock_.now += 6 * 60'000;  // four minutes left: replaced before it can expire mid-request
  EXPECT_EQ(*tokens.Token(), "ghs_installation2");
  tokens.Invalidate();  // GitHub answered 401 to it (revoked, or the App's permissions changed)
  EXPECT_EQ(*tokens.Token(), "ghs_installation3");
  EXPECT_EQ(tokens.exchanges(), 3);
  for (const auto& l : fake_.log()) EXPECT_EQ(l.target.rfind(GetParam() + "/", 0), 0u) << l.target;
}

TEST_P(AppAuthTest, TheInstallationIsFoundFromTheRepositoryAndTheLoginIsTheSlugsBot) {
  github::AppAuthOptions o = Options();
  o.installation_id = 0;
  o.repo = "octo/hello";
  github::InstallationTokens tokens(http_.get(), &clock_, o);
  auto token = tokens.Token();
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(fake_.Count("GET", GetParam() + "/repos/octo/hello/installation"), 1);
  EXPECT_EQ(fake_.Count("POST", GetParam() + "/app/installations/42/access_tokens"), 1);
  auto login = tokens.BotLogin();
  ASSERT_TRUE(login.ok()) << login.status().ToString();
  EXPECT_EQ(*login, "team-agent[bot]");
  EXPECT_EQ(*tokens.BotLogin(), "team-agent[bot]");
  EXPECT_EQ(fake_.Count("GET", GetParam() + "/app"), 1) << "the login is asked once";
  tokens.Invalidate();
  ASSERT_TRUE(tokens.Token().ok());
  EXPECT_EQ(fake_.Count("GET", GetParam() + "/repos/octo/hello/installation"), 1) << "the id found is kept";
}

// Issue 33: the outbound filter knows each installation token from the moment it is issued (a
// worker or a peer that prints one publishes the marker), and forgets only the oldest.
TEST_F(AppAuthTest, EachIssuedTokenIsLearntByTheOutboundFilterAsItIsIssued) {
  SecretFilter filter(&clock_);
  github::AppAuthOptions o = Options();
  o.secrets = &filter;
  github::InstallationTokens tokens(http_.get(), &clock_, o);
  EXPECT_EQ(filter.Redact("t=ghs_installation1"), "t=ghs_installation1");  // not issued yet
  ASSERT_TRUE(tokens.Token().ok()) << fake_.last_refusal;
  EXPECT_EQ(filter.Redact("t=ghs_installation1."), "t=[REDACTED].");
  tokens.Invalidate();
  ASSERT_EQ(*tokens.Token(), "ghs_installation2");
  EXPECT_EQ(filter.Redact("ghs_installation1 ghs_installation2"), "[REDACTED] [REDACTED]");
  for (int i = 0; i < 5; ++i) {
    tokens.Invalidate();
    ASSERT_TRUE(tokens.Token().ok());
  }
  EXPECT_EQ(filter.known_values(), 4u) << "the newest four are kept; the filter does not grow by one an hour forever";
  EXPECT_EQ(filter.Redact("ghs_installation7"), "[REDACTED]");
  EXPECT_EQ(filter.Redact("ghs_installation1"), "ghs_installation1");
}

INSTANTIATE_TEST_SUITE_P(ApiUrls, AppAuthTest, ::testing::Values("", "/api/v3"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param.empty() ? "github_com" : "ghes"; });

TEST_F(AppAuthTest, AWrongKeyOrAnUnknownInstallationIsRefusedSayingWhyAndNeverQuotingTheKey) {
  github::AppAuthOptions bad = Options();
  bad.private_key_pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEnotakey\n-----END RSA PRIVATE KEY-----\n";
  auto jwt = github::AppJwt(bad.app_id, bad.private_key_pem, clock_.NowMs());
  ASSERT_FALSE(jwt.ok());
  EXPECT_THAT(jwt.status().message(), HasSubstr("not an RSA private key in PEM"));
  EXPECT_THAT(jwt.status().message(), ::testing::Not(HasSubstr("MIIE")));
  EXPECT_FALSE(github::AppJwt("", key_.pem, clock_.NowMs()).ok());

  TestKey other;  // a key GitHub does not know: the signature does not verify
  github::AppAuthOptions stranger = Options();
  stranger.private_key_pem = other.pem;
  auto refused = github::InstallationTokens(http_.get(), &clock_, stranger).Token();
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("was refused: HTTP 401"));
  EXPECT_EQ(fake_.last_refusal, "bad signature");
  EXPECT_FALSE(github::InstallationTokens(http_.get(), &clock_, stranger).BotLogin().ok());

  github::AppAuthOptions elsewhere = Options();
  elsewhere.installation_id = 7;
  auto missing = github::InstallationTokens(http_.get(), &clock_, elsewhere).Token();
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("installation 7 was refused: HTTP 404: Not Found"));
}

TEST_F(AppAuthTest, AnAppThatLiesAboutItsSlugOrTokenIsRefusedNotBelieved) {
  // A slug that is no login (a GitHub that lies, or a proxy answering in its place).
  fake_.Script("GET", "/app", {200, {}, R"({"slug": "evil bot\n@everyone", "name": "x"})"});
  EXPECT_FALSE(github::InstallationTokens(http_.get(), &clock_, Options()).BotLogin().ok());
  fake_.Script("GET", "/app", {200, {}, R"({"slug": ["team-agent"]})"});
  EXPECT_FALSE(github::InstallationTokens(http_.get(), &clock_, Options()).BotLogin().ok());
  fake_.Script("GET", "/app", {200, {}, R"({"slug": "代理"})"});
  EXPECT_FALSE(github::InstallationTokens(http_.get(), &clock_, Options()).BotLogin().ok());
  // A token answer without a usable token or expiry.
  for (const char* body : {R"({"token": 7, "expires_at": "2026-01-01T00:00:00Z"})", R"({"token": "ghs_x"})",
                           R"({"token": "", "expires_at": "2026-01-01T00:00:00Z"})", "not json", "[]"}) {
    fake_.Script("POST", "/app/installations/42/access_tokens", {201, {}, body});
    auto t = github::InstallationTokens(http_.get(), &clock_, Options()).Token();
    ASSERT_FALSE(t.ok()) << body;
    EXPECT_THAT(t.status().message(), HasSubstr("no token or no expires_at")) << body;
  }
}

TEST(AppPermissions, NamesWhatTheInstallationLacksInTheDaemonsOrder) {
  EXPECT_THAT(github::MissingAppPermissions(json::object()),
              ElementsAre("issues: write", "pull_requests: write", "contents: write", "checks: write", "metadata: read"));
  EXPECT_THAT(github::MissingAppPermissions({{"issues", "read"}, {"pull_requests", "write"}, {"contents", "write"},
                                             {"checks", "admin"}, {"metadata", "read"}}),
              ElementsAre("issues: write"));
  EXPECT_THAT(github::MissingAppPermissions({{"issues", 2}, {"pull_requests", "write"}, {"contents", "write"},
                                             {"checks", "write"}, {"metadata", "write"}}),
              ElementsAre("issues: write"));
  EXPECT_TRUE(github::MissingAppPermissions(json::array()).size() == 5);
}

TEST(WebUrlOf, GitHubComAndEnterpriseServer) {
  EXPECT_EQ(github::WebUrlOf("https://api.github.com"), "https://github.com");
  EXPECT_EQ(github::WebUrlOf("https://api.github.com/"), "https://github.com");
  EXPECT_EQ(github::WebUrlOf("https://ghe.example.com/api/v3"), "https://ghe.example.com");
  EXPECT_EQ(github::WebUrlOf("https://ghe.example.com/api/v3/"), "https://ghe.example.com");
  EXPECT_EQ(github::WebUrlOf("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
}

}  // namespace
}  // namespace superagent::testing
