// The feishu.* config keys and how they become the Integration (credentials from the environment).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "superagent/config.h"
#include "superagent/feishu.h"

namespace superagent {
namespace {

using ::testing::HasSubstr;

TEST(FeishuConfigTest, DefaultsAndEveryKey) {
  Config d = DefaultConfig();
  EXPECT_FALSE(d.feishu.enabled);
  EXPECT_EQ(d.feishu.api_url, "https://open.feishu.cn");
  EXPECT_EQ(d.feishu.realtime, "long_connection");
  EXPECT_EQ(ConfigToJson(d)["feishu"]["app_id_env"], "FEISHU_APP_ID");
  std::vector<Problem> problems;
  auto c = ParseConfig(
      "feishu:\n"
      "  enabled: true\n"
      "  api_url: https://open.larksuite.com\n"
      "  app_id_env: LARK_APP_ID\n"
      "  app_secret_env: LARK_APP_SECRET\n"
      "  encrypt_key_env: LARK_KEY\n"
      "  verification_token_env: LARK_TOKEN\n"
      "  realtime: callback\n"
      "  poll_interval_seconds: 30\n",
      "superagent.yaml", &problems);
  ASSERT_TRUE(c) << (problems.empty() ? "" : problems[0].ToString());
  EXPECT_TRUE(c->feishu.enabled);
  EXPECT_EQ(c->feishu.api_url, "https://open.larksuite.com");
  EXPECT_EQ(c->feishu.app_secret_env, "LARK_APP_SECRET");
  EXPECT_EQ(c->feishu.realtime, "callback");
  EXPECT_EQ(c->feishu.poll_interval_seconds, 30);
}

TEST(FeishuConfigTest, ProblemsPointAtTheValue) {
  std::vector<Problem> problems;
  auto c = ParseConfig("feishu:\n  realtime: polling\n  poll_interval_seconds: 5\n  app_secret_env: \"sk-123\"\n",
                       "superagent.yaml", &problems);
  EXPECT_FALSE(c);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_THAT(problems[0].ToString(), HasSubstr("superagent.yaml:2:"));
  EXPECT_THAT(problems[0].message, HasSubstr("long_connection, callback"));
  EXPECT_THAT(problems[1].ToString(), HasSubstr("superagent.yaml:3:"));
  EXPECT_EQ(problems[2].line, 4);
}

TEST(FeishuConfigTest, IntegrationNeedsToBeEnabledAndCredentials) {
  Config c = DefaultConfig();
  FakeClock clock;
  auto off = feishu::Integration::Create(c, nullptr, &clock);
  EXPECT_FALSE(off.ok());
  c.feishu.enabled = true;
  c.feishu.app_id_env = "SUPERAGENT_TEST_FEISHU_ID";
  c.feishu.app_secret_env = "SUPERAGENT_TEST_FEISHU_SECRET";
  unsetenv("SUPERAGENT_TEST_FEISHU_ID");
  auto missing = feishu::Integration::Create(c, nullptr, &clock);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("SUPERAGENT_TEST_FEISHU_ID"));
  ASSERT_EQ(setenv("SUPERAGENT_TEST_FEISHU_ID", "cli_a1b2c3d4e5f60718", 1), 0);
  ASSERT_EQ(setenv("SUPERAGENT_TEST_FEISHU_SECRET", "s", 1), 0);
  c.feishu.realtime = "callback";
  auto ok = feishu::Integration::Create(c, nullptr, &clock);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE((*ok)->channel()->Handles("feishu:chat:oc_1"));
  unsetenv("SUPERAGENT_TEST_FEISHU_ID");
  unsetenv("SUPERAGENT_TEST_FEISHU_SECRET");
}

}  // namespace
}  // namespace superagent
