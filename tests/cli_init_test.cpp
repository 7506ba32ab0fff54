// `superagent init` as a new team runs it (issue 24): the real binary, flags only (no terminal),
// against a loopback GitHub; the files it writes read back through the daemon's own loaders.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/config.h"
#include "fake_github_server.h"
#include "run_binary.h"
#include "superagent/policy.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using nlohmann::json;

class InitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sa-init-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static json Collaborator(const std::string& login, bool push, bool admin = false, const std::string& type = "User") {
    return {{"login", login},
            {"id", 1},
            {"type", type},
            {"site_admin", false},
            {"role_name", admin ? "admin" : push ? "write" : "read"},
            {"permissions", {{"admin", admin}, {"maintain", false}, {"push", push || admin}, {"triage", push}, {"pull", true}}}};
  }
  RunResult Init(std::vector<std::string> args, const std::string& token = "ghp_INITTEST0123456789") {
    // A local remote that does not exist: doctor's git check must not reach github.com.
    args.insert(args.begin(), {"init", "--dir", (dir_ / "etc").string(), "--yes", "--git-remote",
                               (dir_ / "no-origin.git").string()});
    RunOptions o;
    o.env_set = {{"GITHUB_TOKEN", token}};
    if (token.empty()) o.env_unset = {"GITHUB_TOKEN"};
    o.env_unset.push_back("DEEPSEEK_API_KEY");
    return RunBinary(args, o);
  }
  std::string Read(const std::string& name) {
    std::ifstream in(dir_ / "etc" / name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

TEST_F(InitTest, WritesACheckedConfigAndAnObservePolicyAllowingTheRepositorysWriters) {
  FakeGitHub github(SystemClock());
  github.Script("GET", github.repo_path() + "/collaborators",
                {200, {}, json::array({Collaborator("alice", true), Collaborator("bob", false, true),
                                       Collaborator("carol", false), Collaborator("dependabot", true, false, "Bot"),
                                       Collaborator("superagent-bot", true), Collaborator("evil\"\n: x", true)})
                              .dump()});
  RunResult r = Init({"--repo", github.repo, "--github-api-url", github.url(), "--model-url", "http://127.0.0.1:9",
                      "--model", "深度求索-chat \"v3\"\n# not a comment", "--data-dir", "data"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("people: 2; init allowed the collaborators with write access to " + github.repo));
  EXPECT_THAT(r.out, HasSubstr("ok: config ")) << "init ran check";
  EXPECT_THAT(r.out, HasSubstr("github.token")) << "init ran doctor";
  EXPECT_THAT(r.out, HasSubstr("next: "));
  EXPECT_EQ(r.out.find("ghp_INITTEST"), std::string::npos) << "the token is never printed";

  std::vector<Problem> problems;
  auto config = LoadConfigFile((dir_ / "etc" / "superagent.yaml").string(), &problems);
  ASSERT_TRUE(config) << (problems.empty() ? "" : problems[0].ToString());
  EXPECT_EQ(config->github.repo, github.repo);
  EXPECT_EQ(config->github.api_url, github.url());
  EXPECT_EQ(config->llm.assessment_model, "深度求索-chat \"v3\"\n# not a comment") << "a value never changes the YAML's shape";
  EXPECT_EQ(config->policy_file, (dir_ / "etc" / "policy.yaml").string());
  EXPECT_EQ(config->data_dir, (dir_ / "etc" / "data").string());
  auto policy = LoadPolicyFile(config->policy_file, &problems);
  ASSERT_TRUE(policy) << (problems.empty() ? "" : problems[0].ToString());
  EXPECT_EQ(policy->mode, Mode::kObserve);
  EXPECT_EQ(policy->sources.at("github").people, (std::vector<std::string>{"alice", "bob"}))
      << "write access only; no bot, not the agent itself, no login GitHub cannot have";
  EXPECT_THAT(Read("superagent.yaml"), HasSubstr("# No secret goes in this file"));
  EXPECT_EQ(Read("superagent.yaml").find("ghp_"), std::string::npos);

  // The files are the daemon's: `check` agrees, and a second init keeps them.
  EXPECT_EQ(RunBinary({"check", "--config", (dir_ / "etc" / "superagent.yaml").string()}).exit_code, 0);
  const std::string before = Read("policy.yaml");
  RunResult again = Init({"--repo", "other/repo"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("exists; nothing was written (--force replaces it)"));
  EXPECT_EQ(Read("policy.yaml"), before);
}

TEST_F(InitTest, WithoutATokenThatMayListCollaboratorsThePolicyStartsEmptyAndSaysWhy) {
  FakeGitHub github(SystemClock());
  github.Script("GET", github.repo_path() + "/collaborators",
                {403, {}, R"({"message":"Must have push access to view repository collaborators."})"});
  RunResult r = Init({"--repo", github.repo, "--github-api-url", github.url(), "--model-url", "http://127.0.0.1:9"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(Read("policy.yaml"), HasSubstr("# init could not list the collaborators of " + github.repo + " with the token (HTTP 403"));
  EXPECT_THAT(Read("policy.yaml"), HasSubstr("people: []"));

  fs::remove_all(dir_ / "etc");
  RunResult unset = Init({"--repo", github.repo, "--github-api-url", github.url(), "--model-url", "http://127.0.0.1:9"}, "");
  ASSERT_EQ(unset.exit_code, 0) << unset.out << unset.err;
  EXPECT_THAT(Read("policy.yaml"), HasSubstr("# init found the variable GITHUB_TOKEN unset"));
  EXPECT_THAT(unset.out, HasSubstr("fix what doctor says failed"));

  fs::remove_all(dir_ / "etc");
  RunResult none = Init({"--model-url", "http://127.0.0.1:9"});
  ASSERT_EQ(none.exit_code, 0) << none.out << none.err;
  EXPECT_EQ(Read("policy.yaml").find("sources:"), std::string::npos) << "no repository, no people to list";
}

TEST_F(InitTest, ABadValueIsRefusedPreciselyAndWritesNothing) {
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--repo", "no-slash"}, "--repo: expected owner/name, got \"no-slash\""},
           {{"--repo", "a/b/c"}, "--repo: expected owner/name"},
           {{"--repo", "仓库/名"}, "--repo: expected owner/name"},
           {{"--model-key-env", "MY KEY"}, "--model-key-env: expected an environment variable's NAME"},
           {{"--github-token-env", "ghp_abc-123"}, "--github-token-env: expected an environment variable's NAME"},
           {{"--model-url", "api.deepseek.com"}, "--model-url: expected an http(s) URL"},
           {{"--model", ""}, "--model: a model name is required"},
           {{"--listen", "8080"}, "--listen: expected host:port"},
           {{"--repo"}, "--repo needs a value"},
           {{"--colour"}, "unexpected argument '--colour'"}}) {
    RunResult r = Init(args);
    EXPECT_EQ(r.exit_code, 2) << says;
    EXPECT_THAT(r.err, HasSubstr(says));
    EXPECT_FALSE(fs::exists(dir_ / "etc" / "superagent.yaml")) << says;
  }
  EXPECT_EQ(RunBinary({"init", "--help"}).exit_code, 0);
}

}  // namespace
}  // namespace superagent::testing
