// `superagent gate` end to end: the real binary, real fixture files, real exit codes.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "run_binary.h"

namespace superagent {
namespace {

using testing::RunBinary;
using testing::RunResult;

std::string Fixture(const std::string& rel) { return std::string(SUPERAGENT_SOURCE_DIR) + "/tests/testdata/" + rel; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Runs `superagent gate <args...>` (fork/exec, no shell).
RunResult Gate(std::vector<std::string> args, std::string stdin_text = "") {
  args.insert(args.begin(), "gate");
  return RunBinary(args, std::move(stdin_text));
}

// `gate --policy <fixture> --trigger <fixture>` plus `extra`.
RunResult GateOn(const std::string& policy, const std::string& trigger, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--policy", Fixture("policy/" + policy), "--trigger", Fixture("triggers/" + trigger)};
  args.insert(args.end(), extra.begin(), extra.end());
  return Gate(args);
}

TEST(GateCli, AllowListedAddressedCommentIsExplicit) {
  RunResult r = GateOn("team.yaml", "github_comment_alice_addressed.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":true,\"reason\":\"allow_listed_addressed\",\"strength\":\"explicit\"}\n");
  EXPECT_EQ(r.err, "");
}

TEST(GateCli, ExplicitStillRunsInOffMode) {
  RunResult r = GateOn("team_off.yaml", "github_comment_alice_addressed.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":true,\"reason\":\"allow_listed_addressed\",\"strength\":\"explicit\"}\n");
}

TEST(GateCli, StrangerCommentIsIgnoredUnlessFollowUp) {
  RunResult r = GateOn("team.yaml", "github_comment_stranger.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":false,\"reason\":\"ignored:others_unaddressed\",\"strength\":\"none\"}\n");

  r = GateOn("team.yaml", "github_comment_stranger.json", {"--thread-has-ticket"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":true,\"reason\":\"follow_up\",\"strength\":\"inferred\"}\n");

  r = GateOn("team_off.yaml", "github_comment_stranger.json", {"--thread-has-ticket"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":false,\"reason\":\"mode_off\",\"strength\":\"inferred\"}\n");
}

TEST(GateCli, UnconfiguredFeishuChatFallsToOtherMentions) {
  RunResult r = GateOn("team.yaml", "feishu_unconfigured_chat_mention.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":true,\"reason\":\"cell:others_addressed\",\"strength\":\"inferred\"}\n");
}

TEST(GateCli, CiAndBots) {
  RunResult r = GateOn("team.yaml", "github_ci_failure.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":false,\"reason\":\"ignored:others_unaddressed\",\"strength\":\"none\"}\n");

  r = GateOn("team.yaml", "dependabot_unaddressed_issue.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":false,\"reason\":\"bot_not_addressed\",\"strength\":\"none\"}\n");
}

TEST(GateCli, TriggerFromStdin) {
  RunResult r = Gate({"--policy", Fixture("policy/team.yaml"), "--trigger", "-"},
                    ReadFile(Fixture("triggers/github_comment_alice_addressed.json")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":true,\"reason\":\"allow_listed_addressed\",\"strength\":\"explicit\"}\n");
}

TEST(GateCli, EqualsFormOfFlags) {
  RunResult r = Gate({"--policy=" + Fixture("policy/team.yaml"),
                     "--trigger=" + Fixture("triggers/github_comment_alice_addressed.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"candidate\":true,\"reason\":\"allow_listed_addressed\",\"strength\":\"explicit\"}\n");
}

TEST(GateCli, BadTriggerFieldIsExit2NamingTheField) {
  RunResult r = GateOn("team.yaml", "bad_human.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("bad_human.json: trigger.human: must be true or false"), std::string::npos) << r.err;
}

TEST(GateCli, MalformedTriggerJsonIsExit2WithBytePosition) {
  RunResult r = GateOn("team.yaml", "malformed.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  // The missing comma before "actor" on line 5: the parser reports the byte just after that
  // unexpected string token.
  EXPECT_NE(r.err.find("malformed.json: invalid JSON at byte 83: parse error at line 5, column 9"), std::string::npos)
      << r.err;
}

TEST(GateCli, BadPolicyIsExit2WithEveryProblemAtFileLine) {
  RunResult r = GateOn("bad_cell.yaml", "github_comment_alice_addressed.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  std::string file = Fixture("policy/bad_cell.yaml");
  EXPECT_NE(r.err.find(file + ":7:56: sources.github.scopes.comments.others_addressed: must be one of explicit, "
                              "inferred, ignore (got \"sometimes\")\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(file + ":8:13: sources.github.scopes.ci.others_addressed: CI has no sender"), std::string::npos)
      << r.err;
}

TEST(GateCli, MissingFilesAreExit2) {
  RunResult r =
      Gate({"--policy", "/nonexistent/policy.yaml", "--trigger", Fixture("triggers/github_comment_alice_addressed.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/policy.yaml: cannot read policy file"), std::string::npos) << r.err;

  r = Gate({"--policy", Fixture("policy/team.yaml"), "--trigger", "/nonexistent/trigger.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/trigger.json: cannot read trigger file"), std::string::npos) << r.err;
}

TEST(GateCli, UsageErrorsAreExit2) {
  RunResult r = Gate({"--trigger", Fixture("triggers/github_comment_alice_addressed.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--policy is required"), std::string::npos) << r.err;

  r = Gate({"--policy", Fixture("policy/team.yaml")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--trigger is required"), std::string::npos) << r.err;

  r = Gate({"--policy"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--policy needs a value"), std::string::npos) << r.err;

  r = GateOn("team.yaml", "github_comment_alice_addressed.json", {"--verbose"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown argument \"--verbose\""), std::string::npos) << r.err;
}

TEST(GateCli, HelpIsExit0) {
  RunResult r = Gate({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: superagent gate --policy"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace superagent
