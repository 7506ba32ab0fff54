#include "app/config.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/logging.h"
#include "app/wiring.h"
#include "superagent/host_port.h"
#include "config_yaml.h"

namespace superagent {
namespace {

using superagent::testing::YamlFor;

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kConfigTestdata = std::string(SUPERAGENT_SOURCE_DIR) + "/tests/testdata/config";

std::string Dump(const std::vector<Problem>& problems) {
  std::string out;
  for (const Problem& p : problems) out += p.ToString() + "\n";
  return out;
}

// Parses `yaml` as "superagent.yaml" and returns the problems (empty when it parsed).
std::vector<Problem> ProblemsOf(const std::string& yaml) {
  std::vector<Problem> problems;
  std::optional<Config> c = ParseConfig(yaml, "superagent.yaml", &problems);
  EXPECT_EQ(c.has_value(), problems.empty()) << "a config is returned exactly when there are no problems";
  return problems;
}

// The one problem `yaml` has; fails the test when there is not exactly one.
Problem OnlyProblem(const std::string& yaml) {
  std::vector<Problem> problems = ProblemsOf(yaml);
  EXPECT_EQ(problems.size(), 1u) << Dump(problems);
  return problems.empty() ? Problem{} : problems[0];
}

Config ParseOk(const std::string& yaml, const std::string& file = "superagent.yaml") {
  std::vector<Problem> problems;
  std::optional<Config> c = ParseConfig(yaml, file, &problems);
  EXPECT_TRUE(c.has_value()) << Dump(problems);
  return c.value_or(Config{});
}

// A fresh directory under $TMPDIR, removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "superagent-config-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
    EXPECT_FALSE(path_.empty());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::string path_;
};

// ---- defaults (config_options_test.cpp holds the table's rows and the example to them) ----

TEST(ConfigTest, DefaultsMatchTheSpec) {
  Config c = DefaultConfig();
  EXPECT_EQ(c.data_dir, "./superagent-data");
  EXPECT_EQ(c.policy_file, "");
  EXPECT_EQ(c.panel.listen, "127.0.0.1:8080");
  EXPECT_EQ(c.log.level, "info");
  EXPECT_EQ(c.github.api_url, "https://api.github.com");
  EXPECT_EQ(c.github.repo, "");
  EXPECT_EQ(c.github.token_env, "GITHUB_TOKEN");
  EXPECT_EQ(c.llm.base_url, "https://api.deepseek.com");
  EXPECT_EQ(c.llm.api_key_env, "DEEPSEEK_API_KEY");
  EXPECT_EQ(c.llm.assessment_model, "deepseek-chat");
  EXPECT_EQ(c.llm.execution_model, "");
  EXPECT_EQ(c.llm.EffectiveExecutionModel(), "deepseek-chat");
  EXPECT_EQ(c.execution.slots, 3);
  EXPECT_EQ(c.eval.timeout_seconds, 120);
  EXPECT_EQ(c.eval.max_attempts, 3);
  EXPECT_EQ(c.quarantine.after, 5);
  EXPECT_EQ(c.source_file, "");
}

TEST(ConfigTest, EmptyDocumentTakesEveryDefault) {
  Config c = ParseOk("# nothing but a comment\n");
  Config expected = DefaultConfig();
  // The default data_dir is relative too, so it lands next to the file ("./" normalized away).
  expected.data_dir = "superagent-data";
  EXPECT_EQ(ConfigToJson(c), ConfigToJson(expected));
  EXPECT_EQ(c.source_file, "superagent.yaml");
}

TEST(ConfigTest, MissingKeysInASectionKeepTheirDefaults) {
  Config c = ParseOk("github:\n  repo: acme/widgets\nllm:\n  execution_model: big\n");
  EXPECT_EQ(c.github.repo, "acme/widgets");
  EXPECT_EQ(c.github.api_url, "https://api.github.com");
  EXPECT_EQ(c.github.token_env, "GITHUB_TOKEN");
  EXPECT_EQ(c.llm.EffectiveExecutionModel(), "big");
  EXPECT_EQ(c.llm.assessment_model, "deepseek-chat");
  EXPECT_EQ(c.execution.slots, 3);
}

TEST(ConfigTest, EmptySectionMeansDefaults) {
  Config c = ParseOk("panel:\nexecution: ~\n");
  EXPECT_EQ(c.panel.listen, "127.0.0.1:8080");
  EXPECT_EQ(c.execution.slots, 3);
}

TEST(ConfigTest, EveryIntegerKeyHoldsItsBoundsFromTheTable) {
  for (const ConfigKey& k : ConfigKeys()) {
    if (k.type != ConfigKey::Type::kInt) continue;
    const std::string name(k.name);
    EXPECT_TRUE(ProblemsOf(YamlFor(name, std::to_string(k.min))).empty()) << name;
    EXPECT_TRUE(ProblemsOf(YamlFor(name, std::to_string(k.max))).empty()) << name;
    for (int out : {k.min - 1, k.max + 1}) {
      Problem p = OnlyProblem(YamlFor(name, std::to_string(out)));
      EXPECT_EQ(p.message, name + ": must be between " + std::to_string(k.min) + " and " + std::to_string(k.max) +
                               " (got " + std::to_string(out) + ")");
    }
  }
}

TEST(ConfigTest, EveryKeyWithChoicesRefusesAnythingElse) {
  int keys = 0;
  for (const ConfigKey& k : ConfigKeys()) {
    // A list row's one word (github.repos: installation) is no choice among values.
    if (k.choices.empty() || k.type == ConfigKey::Type::kStringList) continue;
    ++keys;
    Problem p = OnlyProblem(YamlFor(k.name, "nonsense"));
    EXPECT_THAT(p.message, HasSubstr(std::string(k.name) + ": must be "));
    for (std::string_view choice : k.choices) EXPECT_THAT(p.message, HasSubstr(std::string(choice)));
    EXPECT_THAT(p.message, HasSubstr("(got \"nonsense\")"));
  }
  EXPECT_EQ(keys, 8) << "log.level, github.auth, github.pull_request_origin, feishu.realtime, execution.executor, "
                        ".cgroups, .sandbox, .placement";
}

TEST(ConfigTest, LogLevelsAreTheLoggersLevels) {
  for (const ConfigKey& k : ConfigKeys()) {
    if (k.name != "log.level") continue;
    for (std::string_view level : k.choices) {
      spdlog::level::level_enum parsed;
      EXPECT_TRUE(app::ParseLogLevel(level, &parsed)) << level;
    }
  }
}

TEST(ConfigTest, SecretEnvNamesAreTheEnvKeysOfTheTable) {
  Config c = DefaultConfig();
  c.panel.token_env = "PANEL_PASSWORD";
  c.github.token_env = "";  // an empty name is no variable
  std::set<std::string> keys;
  for (const auto& [key, name] : SecretEnvNames(c)) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"panel.token_env", "github.webhook_secret_env", "github.app_private_key_env",
                                         "feishu.app_id_env",
                                         "feishu.app_secret_env", "feishu.encrypt_key_env",
                                         "feishu.verification_token_env", "llm.api_key_env"}));
}

TEST(ConfigTest, GoodFixtureReadsEveryValue) {
  std::vector<Problem> problems;
  std::optional<Config> c = LoadConfigFile(kConfigTestdata + "/good.yaml", &problems);
  ASSERT_TRUE(c.has_value()) << Dump(problems);
  EXPECT_EQ(c->data_dir, "/var/lib/superagent");
  EXPECT_EQ(c->policy_file, "");
  EXPECT_EQ(c->panel.listen, "[::1]:9090");
  EXPECT_EQ(c->log.level, "debug");
  EXPECT_EQ(c->github.repo, "acme/widgets");
  EXPECT_EQ(c->github.token_env, "ACME_GITHUB_TOKEN");
  EXPECT_EQ(c->llm.base_url, "http://127.0.0.1:11434/v1");
  EXPECT_EQ(c->llm.api_key_env, "ACME_LLM_KEY");
  EXPECT_EQ(c->llm.assessment_model, "small-model");
  EXPECT_EQ(c->llm.EffectiveExecutionModel(), "large-model");
  EXPECT_EQ(c->execution.slots, 5);
  EXPECT_EQ(c->eval.timeout_seconds, 60);
  EXPECT_EQ(c->eval.max_attempts, 2);
  EXPECT_EQ(c->source_file, kConfigTestdata + "/good.yaml");
}

// ---- one validation problem each, at its exact place ----

TEST(ConfigTest, ListenWithoutPortIsAProblemAtTheValue) {
  Problem p = OnlyProblem("panel:\n  listen: localhost\n");
  EXPECT_EQ(p.file, "superagent.yaml");
  EXPECT_EQ(p.line, 2);
  EXPECT_EQ(p.column, 11);
  EXPECT_THAT(p.message, HasSubstr("panel.listen"));
  EXPECT_THAT(p.message, HasSubstr("host:port"));
  EXPECT_EQ(p.ToString().rfind("superagent.yaml:2:11: panel.listen: ", 0), 0u) << p.ToString();
}

TEST(ConfigTest, ListenPortMustBe1To65535) {
  EXPECT_EQ(OnlyProblem("panel: {listen: \"127.0.0.1:0\"}\n").line, 1);
  EXPECT_EQ(OnlyProblem("\npanel:\n  listen: 127.0.0.1:65536\n").line, 3);
  EXPECT_EQ(OnlyProblem("panel:\n  listen: \":8080\"\n").line, 2);
  EXPECT_EQ(ParseOk("panel:\n  listen: 0.0.0.0:65535\n  token_env: PANEL_TOKEN\n").panel.listen, "0.0.0.0:65535");
  EXPECT_EQ(ParseOk("panel:\n  listen: localhost:1\n").panel.listen, "localhost:1");
}

TEST(ConfigTest, SlotsMustBe1To64) {
  Problem zero = OnlyProblem("execution:\n  slots: 0\n");
  EXPECT_EQ(zero.line, 2);
  EXPECT_EQ(zero.column, 10);
  EXPECT_THAT(zero.message, HasSubstr("execution.slots: must be between 1 and 64 (got 0)"));
  EXPECT_EQ(OnlyProblem("execution:\n  slots: 65\n").line, 2);
  EXPECT_EQ(ParseOk("execution:\n  slots: 64\n").execution.slots, 64);
  EXPECT_EQ(ParseOk("execution:\n  slots: 1\n").execution.slots, 1);
}

TEST(ConfigTest, ExecutorIsBuiltinOrACommandThatIsGiven) {
  Problem bad = OnlyProblem("execution:\n  executor: claude\n");
  EXPECT_EQ(bad.line, 2);
  EXPECT_EQ(bad.column, 13);
  EXPECT_THAT(bad.message, HasSubstr("execution.executor: must be one of builtin, command, claude-code, codex, "
                                     "gemini-cli, qwen-code (got \"claude\")"));
  // A coding CLI's block: its own keys, checked like every other; switching is one key.
  Config cli = ParseOk("execution:\n  executor: qwen-code\n  qwen_code:\n    model: deepseek-chat\n"
                       "    api_key_env: DEEPSEEK_API_KEY\n    base_url: https://api.deepseek.com\n"
                       "    allowed_commands: [\"git diff\", \"npm test\"]\n    turn_seconds: 600\n");
  ASSERT_NE(cli.execution.ChosenCli(), nullptr);
  EXPECT_EQ(cli.execution.ChosenCli(), &cli.execution.qwen_code);
  EXPECT_EQ(cli.execution.qwen_code.allowed_commands, (std::vector<std::string>{"git diff", "npm test"}));
  EXPECT_EQ(cli.execution.qwen_code.turn_seconds, 600);
  EXPECT_THAT(OnlyProblem("execution:\n  qwen_code:\n    turn_seconds: 5\n").message, HasSubstr("turn_seconds"));
  EXPECT_THAT(OnlyProblem("execution:\n  qwen_code:\n    api_key_env: sk-abc123\n").message, HasSubstr("api_key_env"));
  EXPECT_THAT(OnlyProblem("execution:\n  qwen_code:\n    allowed_commands: git diff\n").message,
              HasSubstr("must be a list of strings"));
  EXPECT_THAT(OnlyProblem("execution:\n  executor: codex\n  codex:\n    allowed_commands: [\"git diff\"]\n").message,
              HasSubstr("Codex has no per-command allow-list"));
  Problem missing = OnlyProblem("execution:\n  slots: 2\n  executor: command\n");
  EXPECT_EQ(missing.line, 3);
  EXPECT_THAT(missing.message, HasSubstr("execution.executor: command needs execution.command"));
  Config c = ParseOk("execution:\n  executor: command\n  command: my-cli --json\n  git_remote: /srv/repo.git\n"
                     "  prepare: make-worktree {dir}\n");
  EXPECT_EQ(c.execution.executor, "command");
  EXPECT_EQ(c.execution.command, "my-cli --json");
  EXPECT_EQ(c.execution.git_remote, "/srv/repo.git");
  EXPECT_EQ(c.execution.prepare, "make-worktree {dir}");
  EXPECT_EQ(DefaultConfig().execution.executor, "builtin");
}

// Issue 36: turns placed on workers need the listener and a coding CLI; the rule names its line.
TEST(ConfigTest, PlacementOnWorkersNeedsTheirListenerAndACodingCli) {
  EXPECT_EQ(DefaultConfig().execution.placement, "local");
  EXPECT_EQ(DefaultConfig().workers.listen, "");
  EXPECT_EQ(DefaultConfig().workers.lease_seconds, 30);
  Problem no_listener = OnlyProblem("execution:\n  executor: claude-code\n  placement: remote\n");
  EXPECT_EQ(no_listener.line, 3);
  EXPECT_THAT(no_listener.message, HasSubstr("execution.placement: remote needs workers.listen"));
  Problem builtin = OnlyProblem("execution:\n  placement: any\nworkers:\n  listen: 0.0.0.0:8790\n");
  EXPECT_EQ(builtin.line, 2);
  EXPECT_THAT(builtin.message, HasSubstr("runs a coding CLI on the workers"));
  EXPECT_THAT(builtin.message, HasSubstr("not builtin"));
  EXPECT_THAT(OnlyProblem("workers:\n  listen: nowhere\n").message, HasSubstr("workers.listen"));
  EXPECT_THAT(OnlyProblem("workers:\n  join_token_env: tok-abc123-pasted\n").message, HasSubstr("join_token_env"));
  EXPECT_THAT(OnlyProblem("execution:\n  placement: 远程\n").message, HasSubstr("(got \"远程\")"));
  Config c = ParseOk("execution:\n  executor: codex\n  placement: any\nworkers:\n  listen: 0.0.0.0:8790\n"
                     "  join_token_env: SA_JOIN\n  lease_seconds: 10\n  max_turns: 4\n");
  EXPECT_EQ(c.execution.placement, "any");
  EXPECT_EQ(c.workers.listen, "0.0.0.0:8790");
  EXPECT_EQ(c.workers.join_token_env, "SA_JOIN");
  EXPECT_EQ(c.workers.lease_seconds, 10);
  EXPECT_EQ(c.workers.max_turns, 4);
}

TEST(ConfigTest, WrongTypesAreProblems) {
  Problem slots = OnlyProblem("execution:\n  slots: three\n");
  EXPECT_EQ(slots.line, 2);
  EXPECT_THAT(slots.message, HasSubstr("execution.slots: must be an integer (got \"three\")"));
  EXPECT_THAT(OnlyProblem("execution:\n  slots: 2.5\n").message, HasSubstr("must be an integer"));
  Problem dir = OnlyProblem("data_dir: [a, b]\n");
  EXPECT_EQ(dir.line, 1);
  EXPECT_EQ(dir.column, 11);
  EXPECT_THAT(dir.message, HasSubstr("data_dir: must be a string"));
  Problem section = OnlyProblem("github: acme/widgets\n");
  EXPECT_EQ(section.line, 1);
  EXPECT_THAT(section.message, HasSubstr("github: must be a mapping"));
  EXPECT_THAT(OnlyProblem("- a\n- b\n").message, HasSubstr("the top level: must be a mapping"));
}

TEST(ConfigTest, RepoIsEmptyOrOwnerSlashName) {
  Problem p = OnlyProblem("github:\n  repo: widgets\n");
  EXPECT_EQ(p.line, 2);
  EXPECT_EQ(p.column, 9);
  EXPECT_THAT(p.message, HasSubstr("github.repo: must be empty or \"owner/name\" (got \"widgets\")"));
  EXPECT_EQ(OnlyProblem("github:\n  repo: https://github.com/acme/widgets\n").line, 2);
  EXPECT_EQ(OnlyProblem("github:\n  repo: acme/\n").line, 2);
  EXPECT_EQ(ParseOk("github:\n  repo: my-org/my_repo.js\n").github.repo, "my-org/my_repo.js");
  EXPECT_EQ(ParseOk("github:\n  repo: \"\"\n").github.repo, "");
  EXPECT_EQ(ParseOk("github:\n  repo:\n").github.repo, "");
}

// Issue 37: github.repos lists the repositories; github.repo is a list of one.
TEST(ConfigTest, ReposListTheRepositoriesAndRepoIsAListOfOne) {
  Config one = ParseOk("github:\n  repo: acme/widgets\n");
  EXPECT_EQ(one.github.repos, std::vector<std::string>{"acme/widgets"});
  Config many = ParseOk("github:\n  repos: [acme/api, Acme/Web]\n");
  EXPECT_EQ(many.github.repos, (std::vector<std::string>{"acme/api", "Acme/Web"}));
  EXPECT_EQ(many.github.repo, "acme/api") << "the first is the home repository";
  EXPECT_TRUE(ParseOk("github:\n  repos: []\n").github.repos.empty());

  Problem both = OnlyProblem("github:\n  repo: acme/api\n  repos: [acme/web]\n");
  EXPECT_EQ(both.line, 2);
  EXPECT_THAT(both.message, HasSubstr("github.repo and github.repos are both set"));
  for (const char* bad : {"github:\n  repos: [acme/api, 阿克米/接口]\n", "github:\n  repos: [\"acme/api:issue\"]\n",
                          "github:\n  repos: [\"\"]\n", "github:\n  repos: [acme/api, ACME/API]\n",
                          "github:\n  repos: [\"acme/\\xff\"]\n"}) {
    Problem p = OnlyProblem(bad);
    EXPECT_EQ(p.line, 2) << bad;
    EXPECT_THAT(p.message, HasSubstr("github.repos: ")) << bad;
  }
  EXPECT_THAT(OnlyProblem("github:\n  repos: [acme/api, ACME/API]\n").message, HasSubstr("listed twice"));
  EXPECT_EQ(OnlyProblem("github:\n  repos: acme/api\n").line, 2) << "a list, not a name";
}

TEST(ConfigTest, ReposInstallationIsTheAppsInstallationAndNeedsItsId) {
  Config c = ParseOk("github:\n  auth: app\n  app_id: \"12345\"\n  app_installation_id: \"957387\"\n  repos: installation\n");
  EXPECT_TRUE(c.github.installation);
  EXPECT_TRUE(c.github.repos.empty());
  EXPECT_TRUE(c.github.repo.empty());
  EXPECT_TRUE(c.github.On());
  EXPECT_FALSE(ParseOk("github:\n  repos: [acme/api]\n").github.installation);

  Problem token = OnlyProblem("github:\n  repos: installation\n");
  EXPECT_EQ(token.line, 2);
  EXPECT_THAT(token.message, HasSubstr("github.repos: installation needs github.auth: app"));
  Problem no_id = OnlyProblem("github:\n  auth: app\n  app_id: \"12345\"\n  repos: installation\n");
  EXPECT_EQ(no_id.line, 4);
  EXPECT_THAT(no_id.message, HasSubstr("needs github.app_installation_id"));
  Problem both = OnlyProblem("github:\n  repo: acme/api\n  auth: app\n  app_id: \"1\"\n  app_installation_id: \"2\"\n"
                             "  repos: installation\n");
  EXPECT_EQ(both.line, 2);
  EXPECT_THAT(both.message, HasSubstr("remove github.repo"));
  // Only the one word: another, or the word in another case, is refused; a list of the word
  // alone reads the same (no repository is called "installation").
  EXPECT_THAT(OnlyProblem("github:\n  repos: installations\n").message, HasSubstr("must be a list of strings or installation"));
  EXPECT_THAT(OnlyProblem("github:\n  repos: Installation\n").message, HasSubstr("must be a list of strings or installation"));
  EXPECT_THAT(OnlyProblem("github:\n  repos: [installation]\n").message, HasSubstr("installation needs github.auth: app"));
  EXPECT_THAT(OnlyProblem("github:\n  repos: [installation, acme/api]\n").message, HasSubstr("is not \"owner/name\""));
  EXPECT_THAT(OnlyProblem("github:\n  repos: 安装\n").message, HasSubstr("must be a list of strings"));
}

// feishu.chat_repos: a mapping of chat ids to one repository or a list of them.
TEST(ConfigTest, ChatReposMapsEachChatToItsRepositories) {
  Config c = ParseOk("feishu:\n  chat_repos:\n    oc_a: [acme/api, Acme/Web]\n    oc_b: acme/docs\n");
  EXPECT_EQ(c.feishu.chat_repos, (std::vector<std::string>{"oc_a acme/api", "oc_a acme/web", "oc_b acme/docs"}))
      << "in the order written, names in GitHub's lower case";
  EXPECT_EQ(ConfigToJson(c)["feishu"]["chat_repos"],
            nlohmann::json::parse(R"({"oc_a":["acme/api","acme/web"],"oc_b":["acme/docs"]})"));
  EXPECT_EQ(app::EngineOptionsFor(c).chat_repositories.at("oc_a"), (std::vector<std::string>{"acme/api", "acme/web"}));
  EXPECT_TRUE(ParseOk("feishu:\n  chat_repos:\n").feishu.chat_repos.empty());
  EXPECT_TRUE(ParseOk("feishu:\n  chat_repos: {}\n").feishu.chat_repos.empty());

  Problem list = OnlyProblem("feishu:\n  chat_repos: [acme/api]\n");
  EXPECT_EQ(list.line, 2);
  EXPECT_THAT(list.message, HasSubstr("feishu.chat_repos: must be a mapping, e.g. oc_123: [acme/api, acme/web]"));
  Problem bad = OnlyProblem("feishu:\n  chat_repos:\n    oc_a:\n      - acme/api\n      - \"../etc\"\n");
  EXPECT_EQ(bad.line, 5);
  EXPECT_THAT(bad.message, HasSubstr("feishu.chat_repos.oc_a[1]: must be a repository, \"owner/name\" (got \"../etc\")"));
  EXPECT_THAT(OnlyProblem("feishu:\n  chat_repos:\n    oc_a: [a/b, c/d, e/f, g/h, i/j, k/l]\n").message,
              HasSubstr("feishu.chat_repos.oc_a: must name 1 to 5 (got 6)"));
  EXPECT_THAT(OnlyProblem("feishu:\n  chat_repos:\n    oc_a: []\n").message, HasSubstr("must name 1 to 5 (got 0)"));
  EXPECT_THAT(OnlyProblem("feishu:\n  chat_repos:\n    oc_a: [acme/api, ACME/api]\n").message,
              HasSubstr("feishu.chat_repos.oc_a[1]: is written twice"));
  EXPECT_THAT(OnlyProblem("feishu:\n  chat_repos:\n    \"oc a\": acme/api\n").message,
              HasSubstr("keys must be plain names without spaces"));
  EXPECT_THAT(OnlyProblem("feishu:\n  chat_repos:\n    oc_a: {x: 1}\n").message,
              HasSubstr("feishu.chat_repos.oc_a: must be a repository, \"owner/name\" or a list of them"));
  EXPECT_THAT(OnlyProblem("feishu:\n  chat_repos:\n    oc_a: 接口/仓库😀\n").message, HasSubstr("must be a repository"));
}

TEST(ConfigTest, EnvKeysMustBeVariableNames) {
  Problem p = OnlyProblem("llm:\n  api_key_env: \"MY KEY\"\n");
  EXPECT_EQ(p.line, 2);
  EXPECT_EQ(p.column, 16);
  EXPECT_THAT(p.message, HasSubstr("llm.api_key_env: must be an environment variable name"));
  EXPECT_THAT(OnlyProblem("github:\n  token_env: 1TOKEN\n").message, HasSubstr("github.token_env"));
  EXPECT_THAT(OnlyProblem("github:\n  token_env: \"\"\n").message, HasSubstr("github.token_env"));
  EXPECT_EQ(ParseOk("github:\n  token_env: _ACME_TOKEN_2\n").github.token_env, "_ACME_TOKEN_2");
}

TEST(ConfigTest, SecretLookingValueIsRefusedWithoutEchoingIt) {
  const std::string token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
  Problem p = OnlyProblem("github:\n  token_env: " + token + "\n");
  EXPECT_EQ(p.line, 2);
  EXPECT_EQ(p.column, 14);
  EXPECT_THAT(p.message, HasSubstr("secrets come only from environment variables; put the variable's NAME here"));
  EXPECT_THAT(p.ToString(), Not(HasSubstr(token)));

  const std::string key = "sk-0123456789abcdef0123456789abcdef";
  Problem k = OnlyProblem("llm:\n  api_key_env: " + key + "\n");
  EXPECT_EQ(k.line, 2);
  EXPECT_THAT(k.message, HasSubstr("secrets come only from environment variables"));
  EXPECT_THAT(k.ToString(), Not(HasSubstr(key)));

  EXPECT_THAT(OnlyProblem("github:\n  token_env: github_pat_11ABCDEFG0123456789_abcdefghijklmnop\n").message,
              HasSubstr("secrets come only"));
}

TEST(ConfigTest, SecretDetection) {
  // Known credential prefixes, and long runs of letters and digits without '_' (random tokens).
  for (const char* secret : {"ghp_abc123", "gho_x", "github_pat_11AAA", "sk-abc", "xoxb-1-2", "Bearer abc",
                             "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"}) {
    EXPECT_TRUE(LooksLikeSecret(secret)) << secret;
  }
  for (const char* name : {"GITHUB_TOKEN", "DEEPSEEK_API_KEY", "ghp", "SK", "sk",
                           "MY_VERY_LONG_VARIABLE_NAME_FOR_A_KEY", "AcmeGithubToken"}) {
    EXPECT_FALSE(LooksLikeSecret(name)) << name;
  }
}

TEST(ConfigTest, EnvVarNames) {
  EXPECT_TRUE(IsEnvVarName("GITHUB_TOKEN"));
  EXPECT_TRUE(IsEnvVarName("_x9"));
  EXPECT_TRUE(IsEnvVarName("a"));
  EXPECT_FALSE(IsEnvVarName(""));
  EXPECT_FALSE(IsEnvVarName("9A"));
  EXPECT_FALSE(IsEnvVarName("A-B"));
  EXPECT_FALSE(IsEnvVarName("A B"));
  EXPECT_FALSE(IsEnvVarName("$TOKEN"));
}

TEST(ConfigTest, LogLevelIsOneOfFive) {
  for (const char* level : {"trace", "debug", "info", "warn", "error"}) {
    EXPECT_EQ(ParseOk(std::string("log:\n  level: ") + level + "\n").log.level, level);
  }
  Problem p = OnlyProblem("log:\n  level: verbose\n");
  EXPECT_EQ(p.line, 2);
  EXPECT_EQ(p.column, 10);
  EXPECT_THAT(p.message, HasSubstr("log.level: must be one of trace, debug, info, warn, error (got \"verbose\")"));
}

TEST(ConfigTest, UrlsMustBeHttp) {
  Problem p = OnlyProblem("llm:\n  base_url: api.deepseek.com\n");
  EXPECT_EQ(p.line, 2);
  EXPECT_THAT(p.message, HasSubstr("llm.base_url: must be an http:// or https:// URL"));
  EXPECT_EQ(OnlyProblem("github:\n  api_url: \"\"\n").line, 2);
}

TEST(ConfigTest, RequiredStringsMustNotBeEmpty) {
  EXPECT_THAT(OnlyProblem("data_dir: \"\"\n").message, HasSubstr("data_dir: must not be empty"));
  EXPECT_THAT(OnlyProblem("llm:\n  assessment_model:\n").message, HasSubstr("llm.assessment_model: must not be empty"));
}

TEST(ConfigTest, GitHubMessageCapBounds) {
  EXPECT_EQ(DefaultConfig().github.message_max_chars, 65000);
  EXPECT_EQ(OnlyProblem("github:\n  message_max_chars: 999\n").line, 2);
  EXPECT_EQ(OnlyProblem("github:\n  message_max_chars: 65001\n").line, 2);
  EXPECT_EQ(ParseOk("github:\n  message_max_chars: 20000\n").github.message_max_chars, 20000);
}

TEST(ConfigTest, EvalBounds) {
  EXPECT_EQ(OnlyProblem("eval:\n  timeout_seconds: 0\n").line, 2);
  EXPECT_EQ(OnlyProblem("eval:\n  max_attempts: 0\n").line, 2);
  EXPECT_EQ(OnlyProblem("eval:\n  max_attempts: 21\n").line, 2);
  EXPECT_EQ(OnlyProblem("quarantine:\n  after: 1\n").line, 2);
  EXPECT_EQ(OnlyProblem("quarantine:\n  after: 101\n").line, 2);
  EXPECT_EQ(OnlyProblem("quarantine:\n  after: five\n").line, 2);
  EXPECT_EQ(OnlyProblem("quarantine:\n  afterwards: 5\n").line, 2);
  EXPECT_EQ(ParseOk("quarantine:\n  after: 2\n").quarantine.after, 2);
  Config c = ParseOk("eval:\n  timeout_seconds: 3600\n  max_attempts: 1\n");
  EXPECT_EQ(c.eval.timeout_seconds, 3600);
  EXPECT_EQ(c.eval.max_attempts, 1);
}

// ---- unknown and duplicate keys, syntax ----

TEST(ConfigTest, UnknownKeyIsNamedAtItsPlace) {
  Problem top = OnlyProblem("data_dir: ./d\ndatadir: ./e\n");
  EXPECT_EQ(top.line, 2);
  EXPECT_EQ(top.column, 1);
  EXPECT_THAT(top.message, HasSubstr("datadir: unknown key"));
  EXPECT_THAT(top.message, HasSubstr("data_dir"));  // lists the known keys

  Problem nested = OnlyProblem("panel:\n  listen: 127.0.0.1:8080\n  port: 8080\n");
  EXPECT_EQ(nested.line, 3);
  EXPECT_EQ(nested.column, 3);
  EXPECT_THAT(nested.message, HasSubstr("panel.port: unknown key (known keys in panel: listen, token_env, public_url)"));
}

TEST(ConfigTest, UnknownSecretKeyPointsToEnvVariables) {
  Problem p = OnlyProblem("github:\n  token: ghp_abcdef0123456789\n");
  EXPECT_EQ(p.line, 2);
  EXPECT_THAT(p.message, HasSubstr("github.token: unknown key; secrets come only from environment variables"));
  EXPECT_THAT(p.message, Not(HasSubstr("ghp_abcdef")));
}

TEST(ConfigTest, DuplicateKeyIsAProblem) {
  Problem p = OnlyProblem("execution:\n  slots: 2\n  slots: 4\n");
  EXPECT_EQ(p.line, 3);
  EXPECT_THAT(p.message, HasSubstr("execution.slots: duplicate key"));
}

TEST(ConfigTest, SyntaxErrorHasALine) {
  Problem p = OnlyProblem("panel:\n  listen: [127.0.0.1:8080\nlog: {}\n");
  EXPECT_GE(p.line, 2);
  EXPECT_THAT(p.message, HasSubstr("invalid YAML"));
}

TEST(ConfigTest, SecondDocumentIsAProblem) {
  Problem p = OnlyProblem("data_dir: ./a\n---\ndata_dir: ./b\n");
  EXPECT_THAT(p.message, HasSubstr("one YAML document"));
}

// Found by fuzz/config_fuzz: the same yaml-cpp LoadAll hang as the policy's (a stray ',').
TEST(ConfigTest, AStrayCommaIsASyntaxProblemNotAHang) {
  for (const char* yaml : {",", "data_dir: ./a\n,\n", "[x]\n,"}) {
    std::vector<Problem> problems;
    EXPECT_FALSE(ParseConfig(yaml, "superagent.yaml", &problems).has_value()) << yaml;
    ASSERT_EQ(problems.size(), 1u) << yaml;
    EXPECT_THAT(problems[0].message, HasSubstr("invalid YAML")) << yaml;
  }
}

TEST(ConfigTest, AllProblemsAreReportedTogetherInFileOrder) {
  std::vector<Problem> problems;
  std::optional<Config> c = LoadConfigFile(kConfigTestdata + "/bad.yaml", &problems);
  EXPECT_FALSE(c.has_value());
  ASSERT_EQ(problems.size(), 3u) << Dump(problems);
  const std::string f = kConfigTestdata + "/bad.yaml";
  EXPECT_EQ(problems[0].ToString().rfind(f + ":4:11: panel.listen: ", 0), 0u) << problems[0].ToString();
  EXPECT_EQ(problems[1].ToString().rfind(f + ":6:10: execution.slots: ", 0), 0u) << problems[1].ToString();
  EXPECT_EQ(problems[2].ToString().rfind(f + ":8:14: github.token_env: ", 0), 0u) << problems[2].ToString();
}

TEST(ConfigTest, NullProblemsPointerIsAllowed) {
  EXPECT_FALSE(ParseConfig("execution: {slots: 0}\n", "x.yaml", nullptr).has_value());
  EXPECT_TRUE(ParseConfig("execution: {slots: 2}\n", "x.yaml", nullptr).has_value());
}

// ---- files and paths ----

TEST(ConfigTest, RelativePathsResolveAgainstTheConfigDirectory) {
  TempDir dir;
  std::string file = dir.Write("etc/superagent.yaml", "data_dir: ./data\npolicy_file: ../policy/policy.yaml\n");
  std::vector<Problem> problems;
  std::optional<Config> c = LoadConfigFile(file, &problems);
  ASSERT_TRUE(c.has_value()) << Dump(problems);
  EXPECT_EQ(c->data_dir, dir.path() + "/etc/data");
  EXPECT_EQ(c->policy_file, dir.path() + "/policy/policy.yaml");
}

TEST(ConfigTest, AbsoluteAndEmptyPathsAreKept) {
  Config c = ParseOk("data_dir: /srv/agent\npolicy_file: \"\"\n", "/etc/superagent/superagent.yaml");
  EXPECT_EQ(c.data_dir, "/srv/agent");
  EXPECT_EQ(c.policy_file, "");
  // A config named without a directory is in the working directory, like the defaults.
  EXPECT_EQ(ParseOk("data_dir: data\n", "superagent.yaml").data_dir, "data");
}

TEST(ConfigTest, UnreadableFileIsOneProblemWithoutLine) {
  TempDir dir;
  std::vector<Problem> problems;
  EXPECT_FALSE(LoadConfigFile(dir.path() + "/missing.yaml", &problems).has_value());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].line, 0);
  EXPECT_EQ(problems[0].file, dir.path() + "/missing.yaml");
  EXPECT_THAT(problems[0].message, HasSubstr("cannot read config file"));

  problems.clear();
  EXPECT_FALSE(LoadConfigFile(dir.path(), &problems).has_value());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0].message, HasSubstr("directory"));
}

TEST(ConfigTest, EmptyFileIsTheDefaults) {
  TempDir dir;
  std::vector<Problem> problems;
  std::optional<Config> c = LoadConfigFile(dir.Write("empty.yaml", ""), &problems);
  ASSERT_TRUE(c.has_value()) << Dump(problems);
  EXPECT_EQ(c->data_dir, dir.path() + "/superagent-data");
  EXPECT_EQ(c->execution.slots, 3);
}

// ---- secrets ----

TEST(ConfigTest, ResolveSecretReadsTheEnvironment) {
  ASSERT_EQ(setenv("SUPERAGENT_TEST_SECRET", "s3cr3t-value", 1), 0);
  EXPECT_EQ(ResolveSecret("SUPERAGENT_TEST_SECRET"), "s3cr3t-value");
  ASSERT_EQ(unsetenv("SUPERAGENT_TEST_SECRET"), 0);
  EXPECT_EQ(ResolveSecret("SUPERAGENT_TEST_SECRET"), "");
  EXPECT_EQ(ResolveSecret(""), "");
}

TEST(ConfigTest, JsonHoldsOnlyVariableNames) {
  ASSERT_EQ(setenv("SUPERAGENT_TEST_TOKEN", "ghp_never_shown_0123456789", 1), 0);
  Config c = ParseOk("github:\n  token_env: SUPERAGENT_TEST_TOKEN\n  repo: acme/widgets\n");
  std::string dumped = ConfigToJson(c).dump();
  unsetenv("SUPERAGENT_TEST_TOKEN");
  EXPECT_THAT(dumped, HasSubstr("\"token_env\":\"SUPERAGENT_TEST_TOKEN\""));
  EXPECT_THAT(dumped, Not(HasSubstr("ghp_never_shown")));
  EXPECT_EQ(ConfigToJson(c)["github"]["repo"], "acme/widgets");
  EXPECT_EQ(ConfigToJson(c)["execution"]["slots"], 3);
}

// ---- host:port ----

TEST(ConfigTest, SplitHostPort) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(SplitHostPort("127.0.0.1:8080", &host, &port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(SplitHostPort("[::1]:9090", &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 9090);
  ASSERT_TRUE(SplitHostPort("localhost:65535", &host, &port));
  EXPECT_EQ(port, 65535);
  for (const char* bad : {"", "8080", ":8080", "host:", "host:0", "host:65536", "host:99999999", "host:80a", "::1:80",
                          "host:+80", "a b:80"}) {
    EXPECT_FALSE(SplitHostPort(bad, &host, &port)) << bad;
  }
}

}  // namespace
}  // namespace superagent
