// The panel as a person uses it: the real daemon on a free loopback port, over a store seeded by
// the real Engine, driven in headless Debian Chromium by tests/browser/panel.test.mjs
// (playwright-core from tests/node_modules, installed by `cmake/dev.sh test`). Screenshots go to
// $SUPERAGENT_SCREENSHOT_DIR (default /tmp/superagent-panel-screenshots).
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "daemon_process.h"
#include "fake_github_server.h"
#include "panel_fixture.h"
#include "run_binary.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;

// `name` on PATH, or "".
std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
    if (!candidate.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

class PanelBrowserTest : public PanelSeedTest {};

TEST_F(PanelBrowserTest, APersonUsesThePanelInChromium) {
  const std::string node = FindOnPath("node");
  const fs::path tests_dir = fs::path(SUPERAGENT_SOURCE_DIR) / "tests";
  const char* chromium_env = std::getenv("CHROMIUM");
  const std::string chromium = chromium_env ? chromium_env : "/usr/bin/chromium";
  ASSERT_FALSE(node.empty()) << "node is not installed: `cmake/dev.sh test` installs nodejs and npm";
  ASSERT_TRUE(fs::exists(tests_dir / "node_modules" / "playwright-core"))
      << "playwright-core is missing: run `npm ci` in tests/ (`cmake/dev.sh test` does)";
  ASSERT_TRUE(fs::exists(chromium)) << chromium << " is missing: `cmake/dev.sh deps` installs Debian's chromium";

  StartClockAnHourAgo();
  PanelSeed seed = Seed();
  // A third question, asked of bob, with Chinese and emoji options: the form must read right.
  const TicketId question_zh = Accept("gh:comment:1007", 17, "@agent 请更新安装文档的链接");
  clock_.Advance(60'000);
  HumanAction zh;
  zh.thread = "github:acme/widgets:issue:17";
  zh.actor = "bob";
  zh.question = "安装文档应该链接到哪里？Where should the install docs link to?";
  zh.form = {{"options", {"docs/安装指南.md", "维基页面 📚", "两个都要 ✅ — keep both, the guide first and the wiki page as a fallback for readers on older releases"}}};
  ASSERT_TRUE(EngineTestPeer(*engine_).AskPerson(question_zh, zh, "ask:17").ok());
  // A Ticket whose worker turns failed the same way five times in a row is set aside (issue 18):
  // a card in Needs-you with its reason and a Retry.
  const TicketId poisoned = Accept("gh:comment:1006", 16, "@agent 请把 README 的标题翻译成中文 🙏");
  for (int turn = 1; turn <= 5; ++turn) {
    for (const Assignment& a : Ok(views_->AssignmentsInState("pending"))) {
      if (a.ticket != poisoned) continue;
      ASSERT_TRUE(EngineTestPeer(*engine_).StartAssignment(a.id, "worker").ok());
      ASSERT_TRUE(engine_->FinishTurn({.assignment = a.id, .error = "model answer unreadable: type_error.316 at byte " + std::to_string(turn)}).ok());
    }
    Receive(Comment("gh:comment:1006-" + std::to_string(turn), "alice", false, "还是不行，请再试一次", 16));
    ASSERT_TRUE(engine_->AssignFollowUps().ok());
  }
  ASSERT_EQ(Ok(views_->SetAside(1000)).size(), 1u) << "the seed has no set-aside item";
  engine_.reset();  // the daemon owns the store from here on

  const int port = FreeLoopbackPort();
  const fs::path policy = dir_ / "policy.yaml";
  const fs::path config = dir_ / "superagent.yaml";
  std::ofstream(policy) << PanelPolicyYaml();
  std::ofstream(config) << "data_dir: .\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" << port << "\n";

  DaemonProcess daemon(SUPERAGENT_BINARY, {"serve", "--config", config.string()},
                       {{"GITHUB_TOKEN", "ghp_BROWSERTESTSECRET0123456789"}});
  ASSERT_TRUE(daemon.started());
  ASSERT_TRUE(daemon.WaitForLine("ready")) << daemon.log();
  EXPECT_NE(daemon.log().find("policy_version=1"), std::string::npos) << "the seeded store's version is kept";

  // A second daemon, set up and on an empty store: what a calm day looks like. It reads a
  // loopback GitHub, has a model key (no model is asked: nothing arrives) and a repository to
  // work in, and a policy that lets someone ask (issue 34: a deaf one is a card), so no Set-up
  // card shows.
  FakeGitHub github(SystemClock());
  const fs::path origin = dir_ / "origin.git";
  ASSERT_EQ(std::system(("git init -q --bare -b main " + origin.string()).c_str()), 0);
  const int empty_port = FreeLoopbackPort();
  fs::create_directories(dir_ / "empty");
  const fs::path empty_config = dir_ / "empty" / "superagent.yaml";
  std::ofstream(dir_ / "empty" / "policy.yaml") << "mode: observe\nsources:\n  github:\n    people: [alice]\n";
  std::ofstream(empty_config) << "data_dir: .\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" << empty_port
                              << "\ngithub:\n  repo: "
                              << github.repo << "\n  api_url: " << github.url() << "\nllm:\n  base_url: http://127.0.0.1:9"
                              << "\nexecution:\n  git_remote: " << origin.string() << "\n";
  DaemonProcess empty(SUPERAGENT_BINARY, {"serve", "--config", empty_config.string()},
                      {{"GITHUB_TOKEN", "ghp_CALMDAYTOKEN0123456789"}, {"DEEPSEEK_API_KEY", "sk-calm-day"}});
  ASSERT_TRUE(empty.WaitForLine("ready")) << empty.log();

  const char* shots_env = std::getenv("SUPERAGENT_SCREENSHOT_DIR");
  RunOptions options;
  options.timeout_ms = 55'000;  // within ctest's 60 s for the whole test
  options.cwd = tests_dir.string();
  options.env_set = {
      {"PANEL_URL", "http://127.0.0.1:" + std::to_string(port) + "/"},
      {"EMPTY_PANEL_URL", "http://127.0.0.1:" + std::to_string(empty_port) + "/"},
      {"EMPTY_SUPERAGENT_CONFIG", empty_config.string()},
      {"SUPERAGENT_BIN", SUPERAGENT_BINARY},
      {"SUPERAGENT_CONFIG", config.string()},
      {"PANEL_POLICY_FILE", policy.string()},
      {"PANEL_SEED", nlohmann::json{{"question_old", seed.question_old},
                                    {"question_new", seed.question_new},
                                    {"blocked", seed.blocked},
                                    {"ended", seed.ended},
                                    {"set_aside", poisoned},
                                    {"question_zh", question_zh}}
                         .dump()},
      {"SCREENSHOT_DIR", shots_env ? shots_env : "/tmp/superagent-panel-screenshots"},
      {"CHROMIUM", chromium},
  };
  RunResult r = RunProgram(node, {"--test", "--test-reporter=spec", "browser/panel.test.mjs"}, options);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n--- daemon log ---\n" << daemon.log();

  daemon.Signal(SIGTERM);
  empty.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.log();
  EXPECT_EQ(empty.Wait(), 0) << empty.log();
  // Every command is logged with who and from where.
  EXPECT_NE(daemon.log().find("panel command=answer target=ticket:" + std::to_string(seed.question_old) +
                              " by=\"Tess (panel)\" remote=127.0.0.1 result=ok"),
            std::string::npos)
      << daemon.log();
  EXPECT_NE(daemon.log().find("panel command=stop target=ticket:" + std::to_string(seed.blocked) + " by=\"Tess (panel)\""),
            std::string::npos);
  EXPECT_NE(daemon.log().find("panel command=reload_policy"), std::string::npos);
  EXPECT_EQ(daemon.log().find("ghp_BROWSERTESTSECRET"), std::string::npos) << "a secret reached the log";
}

// The communication center in Chromium: a daemon that really executes (a local git origin and
// the command executor, so nothing reaches github.com or a model), sessions opened from the panel,
// messages to them, a group broadcast, and a refused send that keeps the text.
TEST_F(PanelBrowserTest, APersonUsesTheCommunicationCenterInChromium) {
  const std::string node = FindOnPath("node");
  const fs::path tests_dir = fs::path(SUPERAGENT_SOURCE_DIR) / "tests";
  const char* chromium_env = std::getenv("CHROMIUM");
  const std::string chromium = chromium_env ? chromium_env : "/usr/bin/chromium";
  ASSERT_FALSE(node.empty()) << "node is not installed: `cmake/dev.sh test` installs nodejs and npm";
  ASSERT_TRUE(fs::exists(tests_dir / "node_modules" / "playwright-core")) << "run `npm ci` in tests/";
  ASSERT_TRUE(fs::exists(chromium)) << chromium << " is missing";
  engine_.reset();

  const fs::path origin = dir_ / "origin.git";
  const std::string seed = (dir_ / "seed").string();
  ASSERT_EQ(std::system(("git init -q -b main " + seed + " && cd " + seed +
                         " && printf 'Hello\\n' > README.md && git add -A && git -c user.name=t -c user.email=t@t commit -q -m init"
                         " && git clone -q --bare . " + origin.string() + " >/dev/null 2>&1")
                            .c_str()),
            0);
  // The team's "coding CLI": answers the person's intercom message, or says it is ready.
  const fs::path worker = dir_ / "worker.py";
  std::ofstream(worker) << R"PY(import json, sys
t = json.load(sys.stdin)
said = [f for f in t.get("follow_ups", []) if f.get("kind") == "intercom"]
if said:
    lines = said[-1]["text"].split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("<<<intercom-"))
    end = next(i for i, l in enumerate(lines) if l.startswith(">>>intercom-"))
    summary = "Heard you: " + " ".join(lines[start + 1:end])
else:
    summary = "Ready to work on: " + t["request"]
print(json.dumps({"stage": "ready", "summary": summary, "question": None, "pr": None}))
)PY";
  const int port = FreeLoopbackPort();
  const fs::path config = dir_ / "superagent.yaml";
  std::ofstream(config) << "data_dir: .\npanel:\n  listen: 127.0.0.1:" << port << "\nexecution:\n  executor: command\n"
                        << "  command: python3 " << worker.string() << "\n  git_remote: " << origin.string()
                        << "\n  sandbox: off\n";  // worker.py is in the test's directory
  DaemonProcess daemon(SUPERAGENT_BINARY, {"serve", "--config", config.string()});
  ASSERT_TRUE(daemon.started());
  ASSERT_TRUE(daemon.WaitForLine("ready")) << daemon.log();

  const char* shots_env = std::getenv("SUPERAGENT_SCREENSHOT_DIR");
  RunOptions options;
  options.timeout_ms = 55'000;
  options.cwd = tests_dir.string();
  options.env_set = {
      {"PANEL_URL", "http://127.0.0.1:" + std::to_string(port) + "/"},
      {"SUPERAGENT_BIN", SUPERAGENT_BINARY},
      {"SUPERAGENT_CONFIG", config.string()},
      {"SCREENSHOT_DIR", shots_env ? shots_env : "/tmp/superagent-panel-screenshots"},
      {"CHROMIUM", chromium},
  };
  RunResult r = RunProgram(node, {"--test", "--test-reporter=spec", "browser/intercom.test.mjs"}, options);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n--- daemon log ---\n" << daemon.log();
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(), 0) << daemon.log();
  // The person's messages are logged as theirs.
  EXPECT_NE(daemon.log().find("panel command=intercom_send target=session:session-1 by=\"Tess (panel)\""), std::string::npos)
      << daemon.log();
  EXPECT_NE(daemon.log().find("panel command=new_session target=panel by=\"Tess (panel)\""), std::string::npos);
}

}  // namespace
}  // namespace superagent::testing
