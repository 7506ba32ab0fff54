// The github.* config keys the GitHub Source adds, and how app/ turns them into its Options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "app/config.h"
#include "app/wiring.h"
#include "superagent/github.h"

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
  auto none = app::MakeGitHub(c, nullptr, &clock);
  EXPECT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("github.repo"));
  c.github.repo = "acme/widgets";
  c.github.token_env = "SUPERAGENT_TEST_UNSET_TOKEN";
  unsetenv("SUPERAGENT_TEST_UNSET_TOKEN");
  auto no_token = app::MakeGitHub(c, nullptr, &clock);
  EXPECT_FALSE(no_token.ok());
  EXPECT_THAT(no_token.status().message(), HasSubstr("SUPERAGENT_TEST_UNSET_TOKEN"));
  ASSERT_EQ(setenv("SUPERAGENT_TEST_UNSET_TOKEN", "ghp_x", 1), 0);
  auto ok = app::MakeGitHub(c, nullptr, &clock);
  unsetenv("SUPERAGENT_TEST_UNSET_TOKEN");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE((*ok)->channel()->Handles("github:issue:1"));
}

}  // namespace
}  // namespace superagent
