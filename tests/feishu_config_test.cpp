// The feishu.* config keys and how they become the Integration (credentials from the environment).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app/config.h"
#include "app/wiring.h"
#include "superagent/feishu.h"
#include "run_binary.h"

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
  EXPECT_THAT(problems[0].message, HasSubstr("feishu.realtime: must be long_connection or callback (got \"polling\")"));
  EXPECT_THAT(problems[1].ToString(), HasSubstr("superagent.yaml:3:"));
  EXPECT_EQ(problems[2].line, 4);
}

TEST(FeishuConfigTest, IntegrationNeedsToBeEnabledAndCredentials) {
  Config c = DefaultConfig();
  FakeClock clock;
  auto off = app::MakeFeishu(c, nullptr, nullptr, &clock);
  EXPECT_FALSE(off.ok());
  c.feishu.enabled = true;
  c.feishu.app_id_env = "SUPERAGENT_TEST_FEISHU_ID";
  c.feishu.app_secret_env = "SUPERAGENT_TEST_FEISHU_SECRET";
  unsetenv("SUPERAGENT_TEST_FEISHU_ID");
  auto missing = app::MakeFeishu(c, nullptr, nullptr, &clock);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("SUPERAGENT_TEST_FEISHU_ID"));
  ASSERT_EQ(setenv("SUPERAGENT_TEST_FEISHU_ID", "cli_a1b2c3d4e5f60718", 1), 0);
  ASSERT_EQ(setenv("SUPERAGENT_TEST_FEISHU_SECRET", "s", 1), 0);
  c.feishu.realtime = "callback";
  auto ok = app::MakeFeishu(c, nullptr, nullptr, &clock);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE((*ok)->channel()->Handles("feishu:chat:oc_1"));
  unsetenv("SUPERAGENT_TEST_FEISHU_ID");
  unsetenv("SUPERAGENT_TEST_FEISHU_SECRET");
}

// `superagent check` names every Feishu variable the config needs and is not set, with what
// serve does without it; the callback's secrets only matter in callback mode.
TEST(FeishuConfigTest, CheckNamesEachMissingFeishuVariable) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "superagent-feishu-check-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::filesystem::path dir = tmpl;
  const std::string file = (dir / "superagent.yaml").string();
  auto write = [&](const std::string& realtime) {
    std::ofstream(file) << "feishu:\n  enabled: true\n  app_id_env: SA_CHECK_FEISHU_ID\n"
                           "  app_secret_env: SA_CHECK_FEISHU_SECRET\n  encrypt_key_env: SA_CHECK_FEISHU_KEY\n"
                           "  verification_token_env: SA_CHECK_FEISHU_VTOKEN\n  realtime: "
                        << realtime << "\n";
  };
  const std::vector<std::string> all = {"SA_CHECK_FEISHU_ID", "SA_CHECK_FEISHU_SECRET", "SA_CHECK_FEISHU_KEY",
                                        "SA_CHECK_FEISHU_VTOKEN"};
  testing::RunOptions none;
  none.env_unset = all;

  write("long_connection");
  testing::RunResult r = testing::RunBinary({"check", "--config", file}, none);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;  // the service's environment may differ from this one
  EXPECT_THAT(r.out, HasSubstr("note: environment variable SA_CHECK_FEISHU_ID (feishu.app_id_env) is not set here; "
                               "serve will not start without it\n"));
  EXPECT_THAT(r.out, HasSubstr("note: environment variable SA_CHECK_FEISHU_SECRET (feishu.app_secret_env) is not set"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("SA_CHECK_FEISHU_KEY"))) << "the long connection needs no callback secret";
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("SA_CHECK_FEISHU_VTOKEN")));

  write("callback");
  testing::RunOptions some;
  some.env_unset = {"SA_CHECK_FEISHU_KEY", "SA_CHECK_FEISHU_VTOKEN"};
  some.env_set = {{"SA_CHECK_FEISHU_ID", "cli_a1b2c3d4e5f60718"}, {"SA_CHECK_FEISHU_SECRET", "s3cret-value"}};
  r = testing::RunBinary({"check", "--config", file}, some);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("SA_CHECK_FEISHU_ID"))) << "a set variable is not mentioned";
  EXPECT_THAT(r.out, HasSubstr("note: environment variable SA_CHECK_FEISHU_KEY (feishu.encrypt_key_env) is not set "
                               "here; serve will refuse every callback at /hooks/feishu (401) without it\n"));
  EXPECT_THAT(r.out, HasSubstr("note: environment variable SA_CHECK_FEISHU_VTOKEN (feishu.verification_token_env) is "
                               "not set here; callbacks will be accepted without a verification token check\n"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("s3cret-value")));

  std::ofstream(file) << "feishu:\n  enabled: false\n  app_id_env: SA_CHECK_FEISHU_ID\n";
  r = testing::RunBinary({"check", "--config", file}, none);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("feishu."))) << "a disabled Source needs nothing";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace superagent
