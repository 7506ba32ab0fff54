// The first hour of a new team (issue 24), as the README tells it, in a real Chromium: a daemon
// started with nothing set up shows Set-up cards; `superagent init` writes the two files; the
// daemon restarted on them is calm; alice's mention on the loopback GitHub is acknowledged once,
// the worker's question is answered in place in the panel, and the result is posted. Each step's
// screenshot is saved (SCREENSHOT_DIR). GitHub and the model are loopback fakes; the worker is
// the team's command (python3), the git origin a local bare repository.
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon_process.h"
#include "fake_chat_server.h"
#include "fake_github_server.h"
#include "run_binary.h"
#include "superagent/github.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

std::string OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((fs::path(d) / name).c_str(), X_OK) == 0) return (fs::path(d) / name).string();
  return "";
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FirstHourTest, FromNothingSetUpToAnAnsweredMentionInChromium) {
  const std::string node = OnPath("node");
  const fs::path tests_dir = fs::path(SUPERAGENT_SOURCE_DIR) / "tests";
  const char* chromium_env = std::getenv("CHROMIUM");
  const std::string chromium = chromium_env ? chromium_env : "/usr/bin/chromium";
  ASSERT_FALSE(node.empty()) << "node is not installed: `cmake/dev.sh test` installs nodejs and npm";
  ASSERT_TRUE(fs::exists(tests_dir / "node_modules" / "playwright-core")) << "run `npm ci` in tests/";
  ASSERT_TRUE(fs::exists(chromium)) << chromium << " is missing";
  const fs::path dir = fs::temp_directory_path() / ("sa-first-hour-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "team");
  const char* shots_env = std::getenv("SUPERAGENT_SCREENSHOT_DIR");
  const std::string shots = shots_env ? shots_env : "/tmp/superagent-panel-screenshots";

  // The world outside: GitHub (alice may write to the repository), the model, the git origin.
  FakeGitHub github(SystemClock());
  github.Script("GET", github.repo_path() + "/collaborators",
                {200, {}, json::array({{{"login", "alice"}, {"type", "User"}, {"permissions", {{"push", true}, {"admin", false}}}},
                                       {{"login", "superagent-bot"}, {"type", "User"}, {"permissions", {{"push", true}}}}})
                              .dump()},
                -1);
  github.issues[1] = WebhookExample("issue_comment", "created")["issue"];
  FakeChatServer model;
  model.Push(model.Decide(FakeChatServer::DecideArgs("accept", {}, "please fix the typo in README",
                                                     "I'll fix the typo in the README.")));
  const fs::path origin = dir / "origin.git";
  const std::string seed = (dir / "seed").string();
  ASSERT_EQ(std::system(("git init -q -b master " + seed + " && cd " + seed +
                         " && printf 'There is teh typo.\\n' > README.md && git add -A && git -c user.name=t -c user.email=t@t "
                         "commit -q -m init && git clone -q --bare . " + origin.string() + " >/dev/null 2>&1")
                            .c_str()),
            0);
  // The team's coding CLI: asks which README first, then says it is done.
  const fs::path worker = dir / "worker.py";
  std::ofstream(worker) << R"PY(import json, sys
t = json.load(sys.stdin)
if not [f for f in t.get("follow_ups", []) if f.get("kind") == "answer"]:
    print(json.dumps({"stage": "waiting_for_person", "summary": "Two READMEs have that typo.",
                      "question": "Which README should I fix?", "options": ["README.md", "docs/README.md"],
                      "free_text": False}))
else:
    print(json.dumps({"stage": "ready", "summary": "Fixed the typo in README.md.", "question": None}))
)PY";

  // 1. Started on nothing but where to listen: the panel says what is not set up.
  const int port = FreeLoopbackPort();
  const fs::path bare = dir / "bare.yaml";
  std::ofstream(bare) << "data_dir: bare-data\npanel:\n  listen: 127.0.0.1:" << port << "\n";
  const std::vector<std::pair<std::string, std::string>> secrets = {
      {"GITHUB_TOKEN", "ghp_FIRSTHOUR0123456789"}, {"DEEPSEEK_API_KEY", "sk-test-0123456789abcdef"},
      {"GITHUB_WEBHOOK_SECRET", "hook-secret"}};
  auto run_node = [&](const std::string& phase, const fs::path& config) {
    RunOptions o;
    o.timeout_ms = 50'000;
    o.cwd = tests_dir.string();
    o.env_set = {{"PHASE", phase},
                 {"PANEL_URL", "http://127.0.0.1:" + std::to_string(port) + "/"},
                 {"SUPERAGENT_BIN", SUPERAGENT_BINARY},
                 {"SUPERAGENT_CONFIG", config.string()},
                 {"SCREENSHOT_DIR", shots},
                 {"CHROMIUM", chromium},
                 {"MENTION_BODY", (dir / "mention.json").string()},
                 {"MENTION_SIGNATURE", ReadFile(dir / "mention.sig")}};
    return RunProgram(node, {"--test", "--test-reporter=spec", "browser/first_hour.test.mjs"}, o);
  };
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", bare.string()}, {{"DEEPSEEK_API_KEY", ""}});
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("no Source is on: only the panel reaches the daemon"));
    RunResult r = run_node("setup", bare);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n--- daemon log ---\n" << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
  }

  // 2. `superagent init` writes the two files, as the README says (flags, so no terminal).
  RunOptions init;
  init.env_set = {secrets[0]};
  RunResult written = RunBinary({"init", "--dir", (dir / "team").string(), "--yes", "--repo", github.repo,
                                 "--github-api-url", github.url(), "--model-url", model.base_url(), "--git-remote",
                                 origin.string(), "--data-dir", "data", "--listen", "127.0.0.1:" + std::to_string(port)},
                                init);
  ASSERT_EQ(written.exit_code, 0) << written.out << written.err;
  EXPECT_THAT(written.out, HasSubstr("people: 1; init allowed the collaborators with write access"));
  // The team picks its coding CLI (init leaves the built-in agent): its executor block.
  const fs::path config = dir / "team" / "superagent.yaml";
  std::string yaml = ReadFile(config);
  const std::size_t at = yaml.find("execution:\n");
  ASSERT_NE(at, std::string::npos) << yaml;
  yaml.insert(at + 11, "  executor: command\n  command: python3 " + worker.string() + "\n  sandbox: off\n");
  std::ofstream(config) << yaml;
  ASSERT_EQ(RunBinary({"check", "--config", config.string()}).exit_code, 0);

  // 3. Restarted on them, with the secrets in its environment: a mention, answered.
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"] = github.MakeComment(492700401, 1, "alice", "@superagent-bot please fix the typo in README 🙏",
                                          SystemClock()->NowMs());
  payload["sender"]["login"] = "alice";
  std::ofstream(dir / "mention.json") << payload.dump();
  std::ofstream(dir / "mention.sig") << github::WebhookSignature("hook-secret", payload.dump());
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", config.string()}, secrets);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("sources github=" + github.repo));
    RunResult r = run_node("work", config);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n--- daemon log ---\n" << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    EXPECT_EQ(d.log().find("ghp_FIRSTHOUR"), std::string::npos) << "a secret reached the log";
  }
  // On GitHub: one acknowledgement, the question, who answered it in the panel, one result —
  // each posted once, where alice asked.
  std::vector<std::string> posted;
  for (const auto& l : github.log())
    if (l.method == "POST" && l.target == github.repo_path() + "/issues/1/comments" && l.status == 201)
      posted.push_back(json::parse(l.body, nullptr, false).value("body", ""));
  ASSERT_EQ(posted.size(), 4u) << ::testing::PrintToString(posted);
  EXPECT_THAT(posted[0], HasSubstr("I'll fix the typo in the README."));
  EXPECT_THAT(posted[1], HasSubstr("Which README should I fix?"));
  EXPECT_THAT(posted[2], HasSubstr("Tess answered in the panel: README.md"));
  EXPECT_THAT(posted[3], HasSubstr("Fixed the typo in README.md."));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace superagent::testing
