// Runs the real `superagent` binary: exit codes and output are the interface people and
// scripts use, so they are tested from outside the process.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_binary.h"

namespace superagent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing::RunBinary;
using testing::RunOptions;
using testing::RunResult;

const std::string kTestdata = std::string(SUPERAGENT_SOURCE_DIR) + "/tests/testdata/config";

std::string Describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

// ---- top level ----

// `superagent worker` (issue 36) refuses what it cannot run before it joins anything: a file
// without the daemon's address, no join token, a host with none of the CLIs it names.
TEST(CliTest, AWorkerRefusesWhatItCannotRunAndSaysWhy) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("superagent-cli-worker-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string yaml = (dir / "worker.yaml").string();
  std::ofstream(yaml) << "daemon_url: http://127.0.0.1:1\nwork_dir: " << (dir / "work").string()
                      << "\nexecutors:\n  codex: {binary: /nonexistent/codex}\n";
  RunOptions with_token;
  with_token.env_set = {{"SUPERAGENT_JOIN_TOKEN", "join-0123"}};
  RunResult none = RunBinary({"worker", "--config", yaml}, with_token);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("executors.codex: its program is not found here; not offered"));
  EXPECT_THAT(none.err, HasSubstr("none of the executors' programs is installed here"));
  RunOptions without_token;
  without_token.env_unset = {"SUPERAGENT_JOIN_TOKEN"};
  RunResult no_token = RunBinary({"worker", "--config", yaml}, without_token);
  EXPECT_EQ(no_token.exit_code, 2);
  EXPECT_THAT(no_token.err, HasSubstr("SUPERAGENT_JOIN_TOKEN (join_token_env) holds no join token"));
  std::ofstream(yaml) << "work_dir: relative\nslots: 0\nsandbox: maybe\nexecutors:\n  cursor: {}\n";
  RunResult bad = RunBinary({"worker", "--config", yaml}, with_token);
  EXPECT_EQ(bad.exit_code, 2);
  for (const char* says : {":1: work_dir: an absolute directory", ":2: slots: 1 to 64", ":3: sandbox: expected on or off",
                           "executors.cursor: not a coding CLI", "daemon_url: required"})
    EXPECT_THAT(bad.err, HasSubstr(says)) << bad.err;
  EXPECT_EQ(RunBinary({"worker"}).exit_code, 2);
  std::filesystem::remove_all(dir);
}

TEST(CliTest, VersionPrintsOurVersionAndSqlite) {
  RunResult r = RunBinary({"version"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, StartsWith(std::string("superagent ") + SUPERAGENT_VERSION + "\n"));
  EXPECT_THAT(r.out, HasSubstr("\nsqlite 3."));
}

TEST(CliTest, DashDashVersionIsVersion) {
  RunResult r = RunBinary({"--version"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, RunBinary({"version"}).out);
}

TEST(CliTest, HelpListsEverySubcommand) {
  for (const char* flag : {"--help", "-h", "help"}) {
    RunResult r = RunBinary({flag});
    EXPECT_EQ(r.exit_code, 0) << flag << "\n" << Describe(r);
    EXPECT_THAT(r.out, HasSubstr("usage: superagent <command>"));
    for (const char* command :
         {"init", "serve", "check", "gate", "receive", "explain", "doctor", "policy", "version", "help"}) {
      EXPECT_THAT(r.out, HasSubstr("\n  " + std::string(command) + " ")) << flag << " lists " << command;
    }
    EXPECT_EQ(r.err, "") << flag;
  }
}

TEST(CliTest, NoCommandIsAUsageError) {
  RunResult r = RunBinary({});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("usage: superagent"));
}

TEST(CliTest, UnknownCommandIsAUsageErrorOnStderr) {
  RunResult r = RunBinary({"frobnicate", "--config", "x.yaml"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("unknown command 'frobnicate'"));
  EXPECT_THAT(r.err, HasSubstr("usage: superagent"));
}

TEST(CliTest, SubcommandHelpExitsZero) {
  for (const char* command : {"init", "check", "doctor", "policy", "version"}) {
    RunResult r = RunBinary({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << Describe(r);
    EXPECT_THAT(r.out, HasSubstr(std::string("usage: superagent ") + command)) << command;
  }
  RunResult r = RunBinary({"help", "check"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, RunBinary({"check", "--help"}).out);
  EXPECT_EQ(RunBinary({"help", "nope"}).exit_code, 2);
}

TEST(CliTest, VersionRejectsArguments) {
  RunResult r = RunBinary({"version", "--json"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("unexpected argument '--json'"));
}

// `model-bridge` is started by the daemon inside a sandbox; bad arguments are a usage error that
// names what is wrong, and nothing listens.
TEST(CliTest, ModelBridgeRefusesBadArgumentsAsAUsageError) {
  EXPECT_EQ(RunBinary({"model-bridge"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"model-bridge", "8080"}).exit_code, 2);
  for (const std::string port : {"abc", "八〇", "0", "99999", "-1", "", "123456", "80 80"}) {
    RunResult r = RunBinary({"model-bridge", port, "/tmp/x.sock"});
    EXPECT_EQ(r.exit_code, 2) << port << "\n" << Describe(r);
    EXPECT_THAT(r.err, HasSubstr("1..65535")) << port;
  }
  RunResult r = RunBinary({"model-bridge", "8080", "/tmp/" + std::string(200, 'x') + ".sock"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("1..107 bytes"));
  r = RunBinary({"model-bridge", "8080", ""});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_EQ(RunBinary({"model-bridge", "--help"}).exit_code, 0);
}

// ---- check ----

TEST(CliTest, CheckWithoutConfigIsAUsageError) {
  RunResult r = RunBinary({"check"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("--config FILE is required"));
  EXPECT_EQ(RunBinary({"check", "--config"}).exit_code, 2);
  EXPECT_EQ(RunBinary({"check", "--config", "a.yaml", "extra"}).exit_code, 2);
}

TEST(CliTest, CheckGoodConfigWithEmbeddedPolicy) {
  const std::string file = kTestdata + "/good.yaml";
  RunResult r = RunBinary({"check", "--config", file});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("policy: embedded default (observe)\n"));
  EXPECT_THAT(r.out, HasSubstr("ok: config " + file + ", policy embedded default (mode observe, "));
}

// Issue 36: a worker listener nobody may join, or whose workers never get a turn, is said by check
// (the files stay valid: exit 0); placement on workers without a listener is a problem with its line.
TEST(CliTest, CheckSaysWhenWorkersWouldJoinForNothing) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("superagent-cli-check-workers-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "superagent.yaml").string();
  std::ofstream(file) << "data_dir: data\nworkers:\n  listen: 0.0.0.0:8790\n";
  RunResult r = RunBinary({"check", "--config", file});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("warning: workers.listen is set but workers.join_token_env is not: no worker may join"));
  EXPECT_THAT(r.out, HasSubstr("warning: workers.listen is set but execution.placement is local"));
  std::ofstream(file) << "data_dir: data\nexecution:\n  executor: codex\n  placement: remote\nworkers:\n"
                         "  listen: 0.0.0.0:8790\n  join_token_env: SA_CHECK_JOIN_UNSET\n";
  RunOptions o;
  o.env_unset = {"SA_CHECK_JOIN_UNSET"};
  r = RunBinary({"check", "--config", file}, o);
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("note: environment variable SA_CHECK_JOIN_UNSET (workers.join_token_env) is not set "
                               "here; serve will refuse every worker's join"));
  EXPECT_THAT(r.out, Not(HasSubstr("execution.placement is local")));
  std::ofstream(file) << "data_dir: data\nexecution:\n  executor: codex\n  placement: remote\n";
  r = RunBinary({"check", "--config", file});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr(file + ":4:"));
  EXPECT_THAT(r.out, HasSubstr("execution.placement: remote needs workers.listen"));
  std::filesystem::remove_all(dir);
}

TEST(CliTest, CheckAcceptsConfigEqualsForm) {
  RunResult r = RunBinary({"check", "--config=" + kTestdata + "/good.yaml"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
}

TEST(CliTest, CheckExampleConfig) {
  const std::string example = std::string(SUPERAGENT_SOURCE_DIR) + "/config/superagent.example.yaml";
  RunResult r = RunBinary({"check", "--config", example});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("ok: config "));
}

TEST(CliTest, CheckConfigNamingAPolicyReportsItsModeAndRules) {
  RunResult r = RunBinary({"check", "--config", kTestdata + "/with_policy.yaml"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("policy " + kTestdata + "/good.policy.yaml (mode auto, 1 rules)"));
}

TEST(CliTest, CheckBadConfigPrintsEveryProblemWithItsLine) {
  const std::string file = kTestdata + "/bad.yaml";
  RunResult r = RunBinary({"check", "--config", file});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr(file + ":4:11: panel.listen: "));
  EXPECT_THAT(r.out, HasSubstr(file + ":6:10: execution.slots: "));
  EXPECT_THAT(r.out, HasSubstr(file + ":8:14: github.token_env: "));
  EXPECT_THAT(r.out, Not(HasSubstr("ghp_0123456789")));  // the pasted token is never echoed
  EXPECT_THAT(r.out, Not(HasSubstr("ok:")));
}

TEST(CliTest, CheckBadPolicyCellPointsIntoThePolicyFile) {
  RunResult r = RunBinary({"check", "--config", kTestdata + "/bad_policy.yaml"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  // policy_file is relative, so it is found next to the config, and the line is the policy's.
  EXPECT_THAT(r.out, HasSubstr(kTestdata + "/bad_cell.policy.yaml:7:27: "));
  EXPECT_THAT(r.out, HasSubstr("others_addressed"));
}

TEST(CliTest, CheckMissingConfigFile) {
  RunResult r = RunBinary({"check", "--config", kTestdata + "/does-not-exist.yaml"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("does-not-exist.yaml: cannot read config file"));
}

TEST(CliTest, CheckChangesNothingOnDisk) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "superagent-cli-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::filesystem::path dir = tmpl;
  std::ofstream(dir / "superagent.yaml") << "data_dir: ./data\n";

  RunOptions options;
  options.cwd = dir.string();
  RunResult r = RunBinary({"check", "--config", "superagent.yaml"}, options);
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1) << "check created files next to the config";
  EXPECT_FALSE(std::filesystem::exists(dir / "data"));
  std::filesystem::remove_all(dir);
}

// ---- the helper itself ----

TEST(CliTest, RunBinaryFeedsStdinAndSurvivesAChildThatIgnoresIt) {
  // `version` never reads stdin; a large input must not block or kill the test with SIGPIPE.
  RunResult r = RunBinary({"version"}, std::string(1 << 20, 'x'));
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_THAT(r.out, StartsWith("superagent "));
}

TEST(CliTest, RunProgramReportsExecFailure) {
  RunResult r = testing::RunProgram("/nonexistent/superagent", {"version"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_THAT(r.err, HasSubstr("execve failed"));
}

}  // namespace
}  // namespace superagent
