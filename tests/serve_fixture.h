// The `superagent serve` fixture: a test directory with a config and a policy, a loopback port for
// the panel, and helpers that wire the daemon to the loopback GitHub and a real git remote.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "daemon_process.h"
#include "fake_github_server.h"

namespace superagent::testing {

namespace serve_fs = std::filesystem;

inline constexpr char kPolicy[] = R"(mode: observe
sources:
  github:
    people: [alice]
    scopes:
      comments: { receive_all: true }
rules:
  - name: wording
    when: Fix wording and typos.
    instructions: Keep the change small.
)";

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = serve_fs::temp_directory_path() / ("superagent-serve-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    serve_fs::remove_all(dir_);
    serve_fs::create_directories(dir_);
    port_ = FreeLoopbackPort();
    Write("policy.yaml", kPolicy);
    Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                                 std::to_string(port_) + "\nlog:\n  level: info\n");
  }
  void TearDown() override { serve_fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string Config() const { return (dir_ / "superagent.yaml").string(); }

  // A repository with a typo and the team's `fix.sh` (the worker's command), a policy that lets
  // Codertocat ask, and a config wiring GitHub (the fake) and the command executor; `extra` is
  // appended to the config. Returns the origin's path. The script is in the repository, as a
  // team's tools are: the worker's sandbox shows its worktree, not the test's directory.
  serve_fs::path PrepareFixRepo(FakeGitHub& github, const std::string& fix_script, const std::string& extra = "") {
    github.issues[1] = WebhookExample("issue_comment", "created")["issue"];
    const serve_fs::path origin = dir_ / "origin.git";
    const std::string seed = (dir_ / "seed").string();
    serve_fs::create_directories(seed);
    std::ofstream(serve_fs::path(seed) / "fix.sh") << fix_script;
    EXPECT_EQ(std::system(("cd " + seed + " && git init -q -b master . && printf 'There is teh typo.\\n' > README.md"
                           " && git add -A && git -c user.name=t -c user.email=t@t commit -q -m init"
                           " && git clone -q --bare . " + origin.string())
                              .c_str()),
              0);
    Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n");
    Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                                 std::to_string(port_) + "\n" + panel_extra_ + "github:\n  api_url: " + github.api_url() + "\n  repo: " +
                                 github.repo + "\n" + github_extra_ + "execution:\n" + executor_ +
                                 "  git_remote: " + origin.string() + "\n" + extra);
    return origin;
  }
  // Codertocat's signed mention of the agent on issue 1, as GitHub delivers it.
  std::string MentionBody(FakeGitHub& github) {
    nlohmann::json payload = WebhookExample("issue_comment", "created");
    payload["comment"] = github.MakeComment(492700400, 1, "Codertocat", "@superagent-bot please fix the typo in README",
                                            SystemClock()->NowMs());
    return payload.dump();
  }
  int Deliver(const std::string& body, const std::string& signature) {
    httplib::Client http("127.0.0.1", port_);
    httplib::Headers headers = {{"X-GitHub-Event", "issue_comment"}, {"X-GitHub-Delivery", "72d3162e"},
                                {"X-Hub-Signature-256", signature}};
    auto res = http.Post("/hooks/github", headers, body, "application/json");
    return res ? res->status : 0;
  }
  // A signed delivery of `event` (X-GitHub-Delivery `id`).
  int DeliverEvent(const std::string& event, const std::string& id, const nlohmann::json& payload) {
    const std::string body = payload.dump();
    httplib::Client http("127.0.0.1", port_);
    httplib::Headers headers = {{"X-GitHub-Event", event}, {"X-GitHub-Delivery", id},
                                {"X-Hub-Signature-256", github::WebhookSignature("hook-secret", body)}};
    auto res = http.Post("/hooks/github", headers, body, "application/json");
    return res ? res->status : 0;
  }
  // The branch of Ticket 1's pull request: "superagent/<install>/ticket-1" (issue 34), the
  // install id being the fresh data_dir's own.
  static std::string TicketOneBranch(FakeGitHub& github) {
    auto lock = github.Lock();
    if (github.pulls.empty()) return "";
    const std::string ref = github.pulls.begin()->second["head"]["ref"];
    EXPECT_TRUE(std::regex_match(ref, std::regex("superagent/[0-9a-f]{12}/ticket-1"))) << ref;
    return ref;
  }
  // Another CI's failed check run on Ticket 1's branch at `sha`, as its webhook carries it.
  static nlohmann::json FailedCheckOnTicketOne(const std::string& sha, const std::string& branch) {
    nlohmann::json check = WebhookExample("check_run", "completed");
    check["check_run"]["id"] = 777001;
    check["check_run"]["conclusion"] = "failure";
    check["check_run"]["head_sha"] = sha;
    check["check_run"]["completed_at"] = "2026-12-05T06:00:00Z";
    check["check_run"]["app"]["slug"] = "buildkite";
    check["check_run"]["check_suite"]["head_branch"] = branch;
    return check;
  }
  static std::vector<std::pair<std::string, std::string>> GitHubEnv() {
    return {{"GITHUB_TOKEN", "ghp_THISISASECRETVALUE0123456789"}, {"GITHUB_WEBHOOK_SECRET", "hook-secret"}};
  }

  serve_fs::path dir_;
  int port_ = 0;
  std::string github_extra_;  // lines PrepareFixRepo adds to its github: block
  std::string panel_extra_;   // … and to its panel: block
  std::string executor_ = "  executor: command\n  command: sh fix.sh\n";  // … and to its execution: block
};

}  // namespace superagent::testing
