// Config keys of the model client and the team's prompt directory (issue 4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/config.h"

namespace superagent {
namespace {

using ::testing::HasSubstr;

std::vector<Problem> LlmConfigProblemsOf(const std::string& yaml) {
  std::vector<Problem> problems;
  ParseConfig(yaml, "/etc/superagent/superagent.yaml", &problems);
  return problems;
}

TEST(LlmConfigTest, Defaults) {
  Config c = DefaultConfig();
  EXPECT_EQ(c.llm.timeout_seconds, 60);
  EXPECT_EQ(c.llm.max_retries, 3);
  EXPECT_EQ(c.llm.max_retry_wait_seconds, 10);
  EXPECT_EQ(c.prompts.team_dir, "");
  nlohmann::json j = ConfigToJson(c);
  EXPECT_EQ(j["llm"]["timeout_seconds"], 60);
  EXPECT_EQ(j["llm"]["max_retries"], 3);
  EXPECT_EQ(j["llm"]["max_retry_wait_seconds"], 10);
  EXPECT_EQ(j["prompts"]["team_dir"], "");
}

TEST(LlmConfigTest, ValuesAreReadAndTeamDirResolvesNextToTheConfig) {
  std::vector<Problem> problems;
  auto c = ParseConfig("llm:\n  timeout_seconds: 30\n  max_retries: 0\n  max_retry_wait_seconds: 600\n"
                       "prompts:\n  team_dir: prompts\n",
                       "/etc/superagent/superagent.yaml", &problems);
  ASSERT_TRUE(c.has_value()) << (problems.empty() ? "" : problems[0].ToString());
  EXPECT_EQ(c->llm.timeout_seconds, 30);
  EXPECT_EQ(c->llm.max_retries, 0);
  EXPECT_EQ(c->llm.max_retry_wait_seconds, 600);
  EXPECT_EQ(c->prompts.team_dir, "/etc/superagent/prompts");
  c = ParseConfig("prompts:\n  team_dir: /srv/prompts\n", "/etc/superagent/superagent.yaml", &problems);
  EXPECT_EQ(c->prompts.team_dir, "/srv/prompts");
  c = ParseConfig("prompts:\n  team_dir: \"\"\n", "/etc/superagent/superagent.yaml", &problems);
  EXPECT_EQ(c->prompts.team_dir, "") << "empty stays empty: built-in sections only";
}

TEST(LlmConfigTest, BoundsAreProblemsAtTheValue) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  for (const Case& k : {Case{"llm:\n  timeout_seconds: 0\n", "llm.timeout_seconds: must be between 1 and 3600"},
                        Case{"llm:\n  max_retries: 11\n", "llm.max_retries: must be between 0 and 10"},
                        Case{"llm:\n  max_retry_wait_seconds: 0\n", "llm.max_retry_wait_seconds: must be between 1 and 600"},
                        Case{"llm:\n  max_retries: many\n", "llm.max_retries: must be an integer"},
                        Case{"prompts:\n  team_dir: [a, b]\n", "prompts.team_dir: must be a string"},
                        Case{"prompts:\n  dir: x\n", "prompts.dir: unknown key"}}) {
    SCOPED_TRACE(k.yaml);
    auto problems = LlmConfigProblemsOf(k.yaml);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_EQ(problems[0].line, 2);
    EXPECT_THAT(problems[0].message, HasSubstr(k.message));
  }
}

TEST(LlmConfigTest, GoodFixtureSetsTheNewKeys) {
  std::vector<Problem> problems;
  auto c = LoadConfigFile(std::string(SUPERAGENT_SOURCE_DIR) + "/tests/testdata/config/good.yaml", &problems);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->llm.timeout_seconds, 30);
  EXPECT_EQ(c->llm.max_retries, 5);
  EXPECT_EQ(c->llm.max_retry_wait_seconds, 20);
  EXPECT_EQ(c->prompts.team_dir, "/etc/superagent/prompts");
}

}  // namespace
}  // namespace superagent
