// `superagent init` as a new team runs it (issue 24): the real binary, flags only (no terminal),
// against a loopback GitHub; the files it writes read back through the daemon's own loaders.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/config.h"
#include "app/init.h"
#include "fake_github_server.h"
#include "run_binary.h"
#include "superagent/policy.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

// Runs the superagent binary on a terminal, as a person at a shell does: a pseudo-terminal is its
// stdin, stdout and stderr (so `init` asks its questions). `typed` is what the person types, all of
// it at once (the terminal's line discipline hands it over a line at a time); "\x04" at the start of
// a line is Ctrl-D, the end of input. Returns the exit status and everything the terminal showed
// (the echo of what was typed included) in `out`.
RunResult RunOnTerminal(const std::vector<std::string>& args, const std::string& typed, const RunOptions& options) {
  RunResult result;
  std::vector<std::string> argv_s = {SUPERAGENT_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = run_binary_internal::BuildEnv(options);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) {
    result.err = "forkpty failed";
    return result;
  }
  if (pid == 0) {
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  (void)!::write(master, typed.data(), typed.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO: the program exited and closed the terminal
    result.out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(master);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

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

// Issue 37: several repositories, as names and URLs; each one's writers may ask; a repository
// the token cannot list is named, and the others' writers are still allowed.
TEST_F(InitTest, SeveralRepositoriesAreWrittenAsGithubReposAndEachOnesWritersMayAsk) {
  FakeGitHub github(SystemClock()), api(SystemClock()), web(SystemClock());
  api.repo = "acme/api";
  web.repo = "acme/web";
  github.other_repositories = {{api.repo, &api}, {web.repo, &web}};
  github.Script("GET", github.repo_path() + "/collaborators", {200, {}, json::array({Collaborator("alice", true)}).dump()});
  api.Script("GET", "/repos/acme/api/collaborators",
             {200, {}, json::array({Collaborator("bob", true), Collaborator("alice", false, true)}).dump()});
  web.Script("GET", "/repos/acme/web/collaborators", {403, {}, R"({"message":"Must have push access"})"});
  RunResult r = Init({"--repo", github.repo + ", https://github.com/acme/api/issues/3 acme/web,ACME/API",
                      "--github-api-url", github.url(), "--model-url", "http://127.0.0.1:9"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<Problem> problems;
  auto config = LoadConfigFile((dir_ / "etc" / "superagent.yaml").string(), &problems);
  ASSERT_TRUE(config) << (problems.empty() ? "" : problems[0].ToString());
  EXPECT_EQ(config->github.repos, (std::vector<std::string>{github.repo, "acme/api", "acme/web"})) << "a repeat dropped";
  EXPECT_EQ(config->github.repo, github.repo) << "the first is the home repository";
  auto policy = LoadPolicyFile(config->policy_file, &problems);
  ASSERT_TRUE(policy) << (problems.empty() ? "" : problems[0].ToString());
  EXPECT_EQ(policy->sources.at("github").people, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_THAT(Read("policy.yaml"), HasSubstr("could not list those of acme/web"));
  EXPECT_EQ(RunBinary({"check", "--config", (dir_ / "etc" / "superagent.yaml").string()}).exit_code, 0);

  // A wrong one among them is named by its place, and nothing is written.
  RunResult bad = Init({"--repo", "acme/api, 不是/仓库", "--force"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("--repo: the 2nd repository: "));
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
           {{"--repo", "no-slash"}, "--repo: expected owner/name (e.g. octo-org/widgets) or the repository's GitHub URL, "
                                    "got \"no-slash\""},
           {{"--repo", "a/b/c"}, "--repo: expected owner/name"},
           {{"--repo", "仓库/名"}, "--repo: expected owner/name"},
           {{"--model-key-env", "MY KEY"}, "--model-key-env: expected an environment variable's NAME"},
           {{"--github-token-env", "ghp_abc-123"}, "--github-token-env: that looks like a secret itself; give the NAME"},
           {{"--github-token-env", "GITHUB-TOKEN"}, "--github-token-env: expected an environment variable's NAME"},
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

// Issue 34: `init --people` names who may ask; every wrong login is named, with what is wrong
// with it, and nothing is written.
TEST_F(InitTest, PeopleAreGivenWithAFlagAndEachWrongLoginIsNamed) {
  FakeGitHub github(SystemClock());
  RunResult r = Init({"--repo", github.repo, "--github-api-url", github.url(), "--model-url", "http://127.0.0.1:9",
                      "--people", " @bob, alice，carol  dave,alice"},
                     "");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("people: 4; init allowed the people given with --people"));
  EXPECT_THAT(r.out, Not(HasSubstr("Nobody may ask")));
  std::vector<Problem> problems;
  auto policy = LoadPolicyFile((dir_ / "etc" / "policy.yaml").string(), &problems);
  ASSERT_TRUE(policy);
  EXPECT_EQ(policy->sources.at("github").people, (std::vector<std::string>{"alice", "bob", "carol", "dave"}))
      << "a leading @, commas typed in Chinese, blanks and repeats";

  fs::remove_all(dir_ / "etc");
  const std::string huge(1000, 'a');
  for (const auto& [people, says] : std::vector<std::pair<std::string, std::string>>{
           {"王五", "--people: the 1st login is not a GitHub login: \"王五\" has \"王\", which GitHub logins cannot "
                    "have (only letters A-Z, digits and hyphens)"},
           {"alice,🚀", "--people: the 2nd login is not a GitHub login: \"🚀\" has \"🚀\""},
           {"alice bob,ca\xff\xfel", "--people: the 3rd login is not a GitHub login: \"ca\xEF\xBF\xBD\xEF\xBF\xBDl\" is not valid UTF-8 text"},
           {"alice,,bob", "--people: the 2nd login is empty (two commas in a row, or one at an end?)"},
           {"alice,", "--people: the 2nd login is empty"},
           {"", "--people: no login given"},
           {"  ", "--people: no login given"},
           {"alice," + huge, "--people: the 2nd login is not a GitHub login: \"" + std::string(39, 'a') +
                                 "…\" has 1000 characters; GitHub logins have at most 39"},
           {"-alice", "--people: the 1st login is not a GitHub login: \"-alice\" starts with a hyphen"},
           {"alice;bob", "--people: the 1st login is not a GitHub login: \"alice;bob\" has \";\""},
           {"a_b", "\"a_b\" has \"_\""}}) {
    RunResult bad = Init({"--repo", github.repo, "--model-url", "http://127.0.0.1:9", "--people", people}, "");
    EXPECT_EQ(bad.exit_code, 2) << says;
    EXPECT_THAT(bad.err, HasSubstr(says));
    EXPECT_LT(bad.err.size(), 3000u) << "a huge login is quoted cut, not whole";
    EXPECT_FALSE(fs::exists(dir_ / "etc" / "policy.yaml")) << says;
  }
  EXPECT_EQ(app::GitHubLoginProblem(std::string(39, 'z')), "");
  EXPECT_EQ(app::GitHubLoginProblem("a-"), "") << "old accounts end in a hyphen";
}

// Issue 34: the README's order (init, then export the token) used to end deaf without a word.
// Now init's last lines say so with the key and file, check warns, and doctor fails.
TEST_F(InitTest, ASetUpThatLetsNobodyAskSaysSoLast) {
  FakeGitHub github(SystemClock());
  RunResult r = Init({"--repo", github.repo, "--github-api-url", github.url(), "--model-url", "http://127.0.0.1:9"}, "");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string policy = (dir_ / "etc" / "policy.yaml").string();
  const std::string last = r.out.substr(r.out.rfind("\nnext: "));
  EXPECT_THAT(last, HasSubstr("\n\nNobody may ask for work yet: sources.github.people in " + policy +
                              " is empty, so every @-mention of the agent on " + github.repo + " will be ignored."));
  EXPECT_THAT(last, HasSubstr("--people alice,bob"));
  EXPECT_THAT(r.out, HasSubstr("warning: Nobody may ask for work yet on GitHub (" + github.repo + ")")) << "check";
  EXPECT_THAT(r.out, HasSubstr("The key is at " + policy + ":")) << "check names the line";
  EXPECT_THAT(r.out, HasSubstr("policy.people          FAILED  Nobody may ask for work yet on GitHub")) << "doctor";
  EXPECT_THAT(Read("policy.yaml"), HasSubstr("NOBODY may ask for work"));
}

// Issue 34: a pasted URL is the repository; one that is not GitHub's says what to give instead.
TEST_F(InitTest, APastedGitHubUrlIsTheRepository) {
  FakeGitHub github(SystemClock());
  for (const std::string& url : {"https://github.com/" + github.repo, "https://github.com/" + github.repo + ".git",
                                 "https://github.com/" + github.repo + "/issues/5#issuecomment-1",
                                 "git@github.com:" + github.repo + ".git", "github.com/" + github.repo + "/"}) {
    fs::remove_all(dir_ / "etc");
    RunResult r = Init({"--repo", url, "--github-api-url", github.url(), "--model-url", "http://127.0.0.1:9",
                        "--people", "alice"},
                       "");
    ASSERT_EQ(r.exit_code, 0) << url << r.out << r.err;
    EXPECT_THAT(Read("superagent.yaml"), HasSubstr("repo: \"" + github.repo + "\"")) << url;
  }
  fs::remove_all(dir_ / "etc");
  RunResult other = Init({"--repo", "https://gitlab.com/o/r"}, "");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_THAT(other.err, HasSubstr("--repo: expected owner/name or a github.com URL, got \"https://gitlab.com/o/r\": "
                                   "for GitHub Enterprise give owner/name and --github-api-url https://gitlab.com/api/v3"));
  RunResult none = Init({"--repo", "https://github.com/only-owner"}, "");
  EXPECT_THAT(none.err, HasSubstr("the URL names no repository"));
}

// Issue 34: on a terminal each answer is checked when given — a pasted URL taken as owner/name,
// a bad answer said and asked again — and the people who may ask are asked for.
TEST_F(InitTest, OnATerminalEachAnswerIsCheckedWhenItIsGiven) {
  FakeGitHub github(SystemClock());
  RunOptions o;
  o.env_unset = {"GITHUB_TOKEN", "DEEPSEEK_API_KEY"};
  const std::vector<std::string> flags = {"init", "--dir", (dir_ / "etc").string(), "--github-api-url", github.url(),
                                          "--model-url", "http://127.0.0.1:9", "--git-remote",
                                          (dir_ / "no-origin.git").string()};
  RunResult r = RunOnTerminal(flags,
                              "仓库\n"                                               // repo: refused
                              "https://github.com/" + github.repo + ".git\n"       // repo: a pasted URL
                              "\n"                                                  // token variable: default
                              "\n\n"                                                // models: defaults
                              "sk-0123456789abcdef0123\n"                           // a key, not its variable
                              "\n"                                                  // model key variable: default
                              "alice, 王五\n"                                        // people: refused
                              "alice @bob\n",                                        // people
                              o);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("  not taken: expected owner/name (e.g. octo-org/widgets) or the repository's GitHub "
                               "URL, got \"仓库\""));
  EXPECT_THAT(r.out, HasSubstr("  not taken: that looks like a secret itself"));
  EXPECT_THAT(r.out, HasSubstr("init found the variable GITHUB_TOKEN unset, so it could not read the collaborators"));
  EXPECT_THAT(r.out, HasSubstr("  not taken: the 2nd login is not a GitHub login: \"王五\" has \"王\""));
  EXPECT_THAT(r.out, HasSubstr("people: 2; init allowed the people given when it asked"));
  EXPECT_THAT(r.out, Not(HasSubstr("Nobody may ask")));
  EXPECT_THAT(Read("superagent.yaml"), HasSubstr("repo: \"" + github.repo + "\""));
  EXPECT_THAT(Read("superagent.yaml"), HasSubstr("api_key_env: \"DEEPSEEK_API_KEY\""));
  std::vector<Problem> problems;
  auto policy = LoadPolicyFile((dir_ / "etc" / "policy.yaml").string(), &problems);
  ASSERT_TRUE(policy);
  EXPECT_EQ(policy->sources.at("github").people, (std::vector<std::string>{"alice", "bob"}));

  // Input that ends after a refused answer stops there, with that answer's problem: not after
  // the sixth question, and nothing written.
  fs::remove_all(dir_ / "etc");
  RunResult ended = RunOnTerminal(flags, "https://gitlab.com/o/r\n\x04", o);
  EXPECT_EQ(ended.exit_code, 2) << ended.out;
  EXPECT_THAT(ended.out, HasSubstr("init: --repo: expected owner/name or a github.com URL, got "
                                   "\"https://gitlab.com/o/r\": for GitHub Enterprise give owner/name and "
                                   "--github-api-url https://gitlab.com/api/v3 (and the input ended)"));
  EXPECT_THAT(ended.out, Not(HasSubstr("Variable that will hold the GitHub token"))) << "no further question";
  EXPECT_FALSE(fs::exists(dir_ / "etc" / "superagent.yaml"));

  // Input that ends with nothing refused keeps the defaults: nobody may ask, and init says so.
  RunResult quiet = RunOnTerminal({"init", "--dir", (dir_ / "etc").string(), "--repo", github.repo,
                                   "--github-api-url", github.url(), "--model-url", "http://127.0.0.1:9",
                                   "--git-remote", (dir_ / "no-origin.git").string()},
                                  "\n\n\n\n\x04", o);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.out;
  EXPECT_THAT(quiet.out, HasSubstr("GitHub logins who may ask the agent for work"));
  EXPECT_THAT(quiet.out, HasSubstr("Nobody may ask for work yet: sources.github.people in"));
}

// The question loop itself, in-process: the answer's check may rewrite it; end of input after a
// refused answer returns that problem at once instead of asking forever.
TEST(InitAsk, ReAsksABadAnswerAndStopsAtTheEndOfInput) {
  std::string repo;
  std::istringstream in("a/b/c\nhttps://github.com/octo-org/widgets/\n");
  std::ostringstream out;
  EXPECT_EQ(app::AskUntilValid(in, out, "Repository", &repo, app::InitRepoProblem), "");
  EXPECT_EQ(repo, "octo-org/widgets");
  EXPECT_EQ(out.str(), "Repository []:   not taken: expected owner/name (e.g. octo-org/widgets) or the repository's "
                       "GitHub URL, got \"a/b/c\"\nRepository []: ");

  std::istringstream bad("owner/名字\n");
  std::string kept = "o/r";
  EXPECT_EQ(app::AskUntilValid(bad, out, "Repository", &kept, app::InitRepoProblem),
            "expected owner/name, got \"owner/名字\": the name has \"名\", which GitHub does not allow (letters, "
            "digits, '-', '.', '_')");
  EXPECT_EQ(kept, "o/r") << "a refused answer changes nothing";
  std::istringstream empty("");
  EXPECT_EQ(app::AskUntilValid(empty, out, "Repository", &kept, app::InitRepoProblem), "");
  EXPECT_EQ(kept, "o/r") << "end of input keeps the default";
}

}  // namespace
}  // namespace superagent::testing
