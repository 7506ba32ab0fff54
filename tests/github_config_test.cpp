// The github.* config keys the GitHub Source adds, and how app/ turns them into its Options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "app/config.h"
#include "app/wiring.h"
#include "github_app_keys.h"
#include "superagent/github.h"
#include "superagent/workspace.h"

namespace superagent {
namespace {

using ::testing::HasSubstr;

Config Ok(const std::string& yaml) {
  std::vector<Problem> problems;
  auto c = ParseConfig(yaml, "superagent.yaml", &problems);
  EXPECT_TRUE(c.has_value()) << (problems.empty() ? "" : problems[0].ToString());
  return c ? *c : DefaultConfig();
}

Problem OneProblem(const std::string& yaml) {
  std::vector<Problem> problems;
  auto c = ParseConfig(yaml, "superagent.yaml", &problems);
  EXPECT_FALSE(c.has_value());
  EXPECT_EQ(problems.size(), 1u);
  return problems.empty() ? Problem{} : problems[0];
}

TEST(GitHubConfigTest, Defaults) {
  Config c = DefaultConfig();
  EXPECT_EQ(c.github.webhook_secret_env, "GITHUB_WEBHOOK_SECRET");
  EXPECT_EQ(c.github.bot_login, "");
  EXPECT_EQ(c.github.poll_interval_seconds, 60);
  EXPECT_TRUE(c.github.read.issues);
  EXPECT_TRUE(c.github.read.pulls);
  EXPECT_TRUE(c.github.read.comments);
  EXPECT_TRUE(c.github.read.ci);
  nlohmann::json j = ConfigToJson(c);
  EXPECT_EQ(j["github"]["read"]["ci"], true);
  EXPECT_EQ(j["github"]["poll_interval_seconds"], 60);
}

TEST(GitHubConfigTest, ReadsEveryKey) {
  Config c = Ok(
      "github:\n"
      "  repo: acme/widgets\n"
      "  webhook_secret_env: ACME_HOOK_SECRET\n"
      "  bot_login: acme-agent\n"
      "  poll_interval_seconds: 120\n"
      "  read:\n"
      "    issues: false\n"
      "    pulls: true\n"
      "    comments: false\n"
      "    ci: false\n");
  EXPECT_EQ(c.github.webhook_secret_env, "ACME_HOOK_SECRET");
  EXPECT_EQ(c.github.bot_login, "acme-agent");
  EXPECT_EQ(c.github.poll_interval_seconds, 120);
  EXPECT_FALSE(c.github.read.issues);
  EXPECT_TRUE(c.github.read.pulls);
  EXPECT_FALSE(c.github.read.comments);
  EXPECT_FALSE(c.github.read.ci);
  EXPECT_EQ(Ok("github:\n  bot_login: my-app[bot]\n").github.bot_login, "my-app[bot]");
}

TEST(GitHubConfigTest, ProblemsPointAtTheValue) {
  Problem fast = OneProblem("github:\n  poll_interval_seconds: 10\n");
  EXPECT_EQ(fast.line, 2);
  EXPECT_THAT(fast.message, HasSubstr("github.poll_interval_seconds: must be between 60 and 3600"));
  Problem yes = OneProblem("github:\n  read:\n    ci: yes\n");
  EXPECT_EQ(yes.line, 3);
  EXPECT_THAT(yes.message, HasSubstr("github.read.ci: must be true or false (got \"yes\")"));
  EXPECT_THAT(OneProblem("github:\n  read:\n    prs: true\n").message, HasSubstr("github.read.prs: unknown key"));
  EXPECT_THAT(OneProblem("github:\n  bot_login: \"@agent\"\n").message, HasSubstr("github.bot_login: must be empty or a GitHub login"));
  EXPECT_THAT(OneProblem("github:\n  bot_login: -agent\n").message, HasSubstr("github.bot_login"));
  Problem secret = OneProblem("github:\n  webhook_secret_env: ghp_0123456789abcdef\n");
  EXPECT_THAT(secret.message, HasSubstr("looks like a secret"));
  EXPECT_THAT(secret.message, ::testing::Not(HasSubstr("ghp_0123456789abcdef")));
}

TEST(GitHubConfigTest, SourceOptionsResolveTheSecretFromTheEnvironment) {
  ASSERT_EQ(setenv("SUPERAGENT_TEST_HOOK_SECRET", "shh", 1), 0);
  Config c = Ok("github:\n  repo: acme/widgets\n  webhook_secret_env: SUPERAGENT_TEST_HOOK_SECRET\n"
                "  poll_interval_seconds: 90\n  read:\n    ci: false\n");
  github::SourceOptions o = app::GitHubSourceOptionsFor(c);
  unsetenv("SUPERAGENT_TEST_HOOK_SECRET");
  EXPECT_EQ(o.repo, "acme/widgets");
  EXPECT_EQ(o.webhook_secret, "shh");
  EXPECT_EQ(o.poll_interval_ms, 90'000);
  EXPECT_FALSE(o.read_ci);
  EXPECT_TRUE(o.read_comments);
}

TEST(GitHubConfigTest, IntegrationNeedsARepositoryAndAToken) {
  FakeClock clock;
  Config c = DefaultConfig();
  auto none = app::MakeGitHub(c, nullptr, nullptr, &clock);
  EXPECT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("github.repo"));
  c.github.repo = "acme/widgets";
  c.github.token_env = "SUPERAGENT_TEST_UNSET_TOKEN";
  unsetenv("SUPERAGENT_TEST_UNSET_TOKEN");
  auto no_token = app::MakeGitHub(c, nullptr, nullptr, &clock);
  EXPECT_FALSE(no_token.ok());
  EXPECT_THAT(no_token.status().message(), HasSubstr("SUPERAGENT_TEST_UNSET_TOKEN"));
  ASSERT_EQ(setenv("SUPERAGENT_TEST_UNSET_TOKEN", "ghp_x", 1), 0);
  auto ok = app::MakeGitHub(c, nullptr, nullptr, &clock);
  unsetenv("SUPERAGENT_TEST_UNSET_TOKEN");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE((*ok)->channel()->Handles("github:acme/widgets:issue:1"));
}

// Issue 25: github.auth: app and its keys, and what the daemon builds from them.
TEST(GitHubConfigTest, AppAuthNeedsItsIdAndTheReadsThatReplaceNotifications) {
  Config c = Ok("github:\n  repo: acme/widgets\n  auth: app\n  app_id: \"12345\"\n  app_installation_id: \"42\"\n"
                "  app_private_key_env: ACME_APP_KEY\npanel:\n  public_url: https://agent.example.com\n");
  EXPECT_EQ(c.github.auth, "app");
  EXPECT_EQ(c.github.app_id, "12345");
  EXPECT_EQ(c.github.app_installation_id, "42");
  EXPECT_EQ(c.github.app_private_key_env, "ACME_APP_KEY");
  EXPECT_EQ(c.panel.public_url, "https://agent.example.com");
  EXPECT_EQ(DefaultConfig().github.auth, "token");
  EXPECT_EQ(DefaultConfig().github.app_private_key_env, "GITHUB_APP_PRIVATE_KEY");
  EXPECT_THAT(OneProblem("github:\n  auth: oauth\n").message, HasSubstr("github.auth"));
  EXPECT_THAT(OneProblem("github:\n  app_id: twelve\n").message, HasSubstr("github.app_id"));
  EXPECT_THAT(OneProblem("github:\n  app_installation_id: \"-1\"\n").message, HasSubstr("github.app_installation_id"));
  EXPECT_THAT(OneProblem("github:\n  app_id: \"١٢٣\"\n").message, HasSubstr("github.app_id"));  // Arabic-Indic digits
  EXPECT_THAT(OneProblem("panel:\n  public_url: agent.example.com\n").message, HasSubstr("panel.public_url"));
  Problem no_id = OneProblem("github:\n  repo: acme/widgets\n  auth: app\n");
  EXPECT_EQ(no_id.line, 3);
  EXPECT_THAT(no_id.message, HasSubstr("github.auth: app needs github.app_id"));
  EXPECT_THAT(OneProblem("github:\n  repo: acme/widgets\n  auth: app\n  app_id: \"1\"\n  read:\n    comments: false\n").message,
              HasSubstr("needs github.read.issues and github.read.comments"));
}

TEST(GitHubConfigTest, AnAppIntegrationNeedsAKeyThatSignsAndReadsNoNotifications) {
  FakeClock clock;
  Config c = Ok("github:\n  repo: acme/widgets\n  auth: app\n  app_id: \"12345\"\n"
                "  app_private_key_env: SUPERAGENT_TEST_APP_KEY\n");
  unsetenv("SUPERAGENT_TEST_APP_KEY");
  unsetenv("GITHUB_TOKEN");
  auto missing = app::MakeGitHub(c, nullptr, nullptr, &clock);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("SUPERAGENT_TEST_APP_KEY is not set"));
  ASSERT_EQ(setenv("SUPERAGENT_TEST_APP_KEY", "-----BEGIN RSA PRIVATE KEY-----\nnot a key 密钥\n-----END RSA PRIVATE KEY-----\n", 1), 0);
  auto garbage = app::MakeGitHubApp(c, &clock);
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr("not an RSA private key in PEM"));
  EXPECT_THAT(garbage.status().message(), ::testing::Not(HasSubstr("密钥")));
  testing::TestKey key;
  ASSERT_EQ(setenv("SUPERAGENT_TEST_APP_KEY", key.pem.c_str(), 1), 0);
  auto made = app::MakeGitHubApp(c, &clock);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  ASSERT_NE(*made, nullptr);
  // The same key on one line, its line breaks written "\n", as fits an EnvironmentFile line.
  std::string one_line;
  for (char ch : key.pem) one_line += ch == '\n' ? std::string("\\n") : std::string(1, ch);
  ASSERT_EQ(setenv("SUPERAGENT_TEST_APP_KEY", one_line.c_str(), 1), 0);
  EXPECT_EQ(app::GitHubAppPrivateKey(c), key.pem);
  EXPECT_TRUE(app::MakeGitHubApp(c, &clock).ok());
  auto integration = app::MakeGitHub(c, nullptr, nullptr, &clock, nullptr, *made);
  unsetenv("SUPERAGENT_TEST_APP_KEY");
  ASSERT_TRUE(integration.ok()) << integration.status().ToString();
  EXPECT_FALSE((*integration)->source()->options().read_notifications);
  EXPECT_TRUE(static_cast<bool>((*integration)->source()->options().identity));
  c.github.auth = "token";
  EXPECT_EQ(*app::MakeGitHubApp(c, &clock), nullptr) << "a token install has no App";
}

TEST(GitHubConfigTest, GitIsAuthenticatedOnlyToTheGitHubTheApiUrlNames) {
  Config c = Ok("github:\n  repo: acme/widgets\n  api_url: https://ghe.example.com/api/v3\n  token_env: SUPERAGENT_TEST_GHE_TOKEN\n");
  EXPECT_EQ(app::EffectiveGitRemote(c), "https://ghe.example.com/acme/widgets.git");
  ASSERT_EQ(setenv("SUPERAGENT_TEST_GHE_TOKEN", "ghp_ghe", 1), 0);
  exec::WorkspaceOptions wo = app::WorkspaceOptionsFor(c, "/tmp/unused");
  unsetenv("SUPERAGENT_TEST_GHE_TOKEN");
  ASSERT_EQ(wo.git_env.size(), 3u);
  EXPECT_EQ(wo.git_env[1].second, "http.https://ghe.example.com/.extraHeader");
  // The same token is never sent to another host, nor over plain http.
  EXPECT_TRUE(exec::GitAuthEnv("https://github.com/acme/widgets.git", "t", "https://ghe.example.com").empty());
  EXPECT_TRUE(exec::GitAuthEnv("https://ghe.example.com.evil.net/acme/w.git", "t", "https://ghe.example.com").empty());
  EXPECT_TRUE(exec::GitAuthEnv("http://ghe.example.com/acme/w.git", "t", "http://ghe.example.com").empty());
  EXPECT_EQ(exec::GitAuthEnv("https://github.com/acme/widgets.git", "t").size(), 3u);
}

TEST(GitHubConfigTest, AnAppsGitPushAsksForAFreshInstallationTokenEachTime) {
  FakeClock clock;
  testing::TestKey key;
  ASSERT_EQ(setenv("SUPERAGENT_TEST_APP_KEY", key.pem.c_str(), 1), 0);
  Config c = Ok("github:\n  repo: acme/widgets\n  auth: app\n  app_id: \"12345\"\n"
                "  app_private_key_env: SUPERAGENT_TEST_APP_KEY\n  api_url: http://127.0.0.1:1\n");
  auto made = app::MakeGitHubApp(c, &clock);
  unsetenv("SUPERAGENT_TEST_APP_KEY");
  ASSERT_TRUE(made.ok());
  exec::WorkspaceOptions wo = app::WorkspaceOptionsFor(c, "/tmp/unused", *made);
  EXPECT_TRUE(wo.git_env.empty()) << "no fixed token";
  ASSERT_TRUE(static_cast<bool>(wo.git_env_source));
  auto env = wo.git_env_source();  // nobody answers on port 1: the push fails unrun, saying why
  ASSERT_FALSE(env.ok());
  EXPECT_THAT(env.status().message(), HasSubstr("installation"));
}

}  // namespace
}  // namespace superagent
