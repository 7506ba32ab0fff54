// Operating the daemon as a team box does: systemd's notify socket (readiness, watchdog, reload,
// stop), /metrics on the running panel, `policy simulate` and `doctor` as real processes against
// real files and loopback fakes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/un.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "app/doctor.h"
#include "app/systemd.h"
#include "daemon_process.h"
#include "fake_chat_server.h"
#include "fake_coding_model.h"
#include "fake_gemini_model.h"
#include "fake_responses_model.h"
#include "fake_feishu_server.h"
#include "fake_github_server.h"
#include "github_app_keys.h"
#include "run_binary.h"
#include "superagent/engine.h"
#include "superagent/eval.h"
#include "superagent/github.h"
#include "superagent/http.h"
#include "superagent/process.h"
#include "superagent/sandbox.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

// The service manager's end of NOTIFY_SOCKET: an AF_UNIX datagram socket.
class NotifySocket {
 public:
  explicit NotifySocket(const fs::path& path) : path_(path.string()) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    ::unlink(path_.c_str());
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~NotifySocket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  bool bound() const { return bound_; }
  // Reads datagrams until one contains `needle` (true) or `timeout_ms` passes (false).
  bool WaitFor(const std::string& needle, int timeout_ms = 20'000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::string msg(buf, static_cast<size_t>(n));
      received_ += msg + "\n--\n";
      if (msg.find(needle) != std::string::npos) return true;
    }
  }
  const std::string& received() const { return received_; }

 private:
  std::string path_, received_;
  int fd_ = -1;
  bool bound_ = false;
};

// The abstract-namespace address ("@name") systemd uses in containers, and the refusals.
TEST(ServiceManagerNotifyTest, DeliversToAnAbstractSocketAndRefusesAddressesItCannotUse) {
  const std::string name = "superagent-notify-test-" + std::to_string(::getpid());
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size())),
            0);
  ASSERT_TRUE(app::NotifySocketAddress("@" + name, "READY=1\nSTATUS=serving"));
  char buf[256];
  ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  ::close(fd);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "READY=1\nSTATUS=serving");

  EXPECT_FALSE(app::NotifySocketAddress("@" + name, "READY=1")) << "nobody listens any more";
  EXPECT_FALSE(app::NotifySocketAddress("", "READY=1"));
  EXPECT_FALSE(app::NotifySocketAddress("relative.sock", "READY=1"));
  EXPECT_FALSE(app::NotifySocketAddress("/" + std::string(200, 'x'), "READY=1")) << "longer than sun_path";
}

TEST(ServiceManagerNotifyTest, TheWatchdogIsOursOnlyWhenItsIntervalAndPidSaySo) {
  EXPECT_EQ(app::WatchdogKeepAliveIntervalFrom("20000000", nullptr, 42).count(), 10'000);
  EXPECT_EQ(app::WatchdogKeepAliveIntervalFrom("20000000", "42", 42).count(), 10'000);
  EXPECT_EQ(app::WatchdogKeepAliveIntervalFrom("1", nullptr, 42).count(), 1) << "never a busy loop";
  EXPECT_EQ(app::WatchdogKeepAliveIntervalFrom("20000000", "41", 42).count(), 0) << "a parent's watchdog";
  EXPECT_EQ(app::WatchdogKeepAliveIntervalFrom("20000000", "x", 42).count(), 0);
  EXPECT_EQ(app::WatchdogKeepAliveIntervalFrom(nullptr, nullptr, 42).count(), 0);
  EXPECT_EQ(app::WatchdogKeepAliveIntervalFrom("0", nullptr, 42).count(), 0);
  EXPECT_EQ(app::WatchdogKeepAliveIntervalFrom("-5", nullptr, 42).count(), 0);
  EXPECT_EQ(app::WatchdogKeepAliveIntervalFrom("20s", nullptr, 42).count(), 0);
}

class OpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("superagent-ops-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    port_ = FreeLoopbackPort();
    Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [alice]\n");
    WriteConfig("");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  void WriteConfig(const std::string& extra) {
    Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                                 std::to_string(port_) + "\nllm:\n  api_key_env: SUPERAGENT_OPS_TEST_MODEL_KEY\n" + extra);
  }
  std::string Config() const { return (dir_ / "superagent.yaml").string(); }

  fs::path dir_;
  int port_ = 0;
};

TEST_F(OpsTest, TellsSystemdWhenReadyKeepsTheWatchdogFedAndSaysWhenReloadingAndStopping) {
  // sun_path holds 108 bytes: a short name, not one under the (long) test directory.
  const fs::path socket_path = fs::temp_directory_path() / ("sa-notify-" + std::to_string(::getpid()) + ".sock");
  NotifySocket notify(socket_path);
  ASSERT_TRUE(notify.bound());
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()},
                  {{"NOTIFY_SOCKET", socket_path.string()},
                   {"WATCHDOG_USEC", "200000"},
                   {"GITHUB_TOKEN", "ghp_THISISASECRETVALUE0123456789"}});
  ASSERT_TRUE(d.started());
  // On failure, what the daemon logged says why (read only then: the test needs no log line).
  ASSERT_TRUE(notify.WaitFor("READY=1")) << notify.received() << d.WaitForLine("\x01", 1000) << d.log();
  EXPECT_THAT(notify.received(), HasSubstr("STATUS=serving on 127.0.0.1:"));
  // Readiness means the panel answers.
  httplib::Client http("127.0.0.1", port_);
  http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  ASSERT_TRUE(notify.WaitFor("WATCHDOG=1")) << notify.received();
  ASSERT_TRUE(notify.WaitFor("WATCHDOG=1")) << "keep-alives must repeat" << notify.received();

  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->body, HasSubstr("superagent_policy_version 1\n"));
  EXPECT_THAT(metrics->body, HasSubstr("superagent_info{version=\"" SUPERAGENT_VERSION "\",mode=\"observe\"} 1\n"));

  Write("policy.yaml", "mode: auto\nsources:\n  github:\n    people: [alice]\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(notify.WaitFor("RELOADING=1")) << notify.received();
  ASSERT_TRUE(notify.WaitFor("READY=1")) << notify.received();
  EXPECT_THAT(notify.received(), HasSubstr("STATUS=policy version 2"));
  d.Signal(SIGTERM);
  ASSERT_TRUE(notify.WaitFor("STOPPING=1")) << notify.received();
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("shutting down signal=SIGTERM"));
  EXPECT_THAT(d.log(), Not(HasSubstr("ghp_THISISASECRETVALUE"))) << "a secret reached the log";
}

TEST_F(OpsTest, WithoutSystemdNothingIsSentAndServeRunsTheSame) {
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, {{"WATCHDOG_USEC", "200000"}});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  d.Signal(SIGINT);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("stopped"));
}

// A shutdown can wait on something slow (here a GitHub request that hangs); a second stop signal
// ends the daemon at once, saying so, as systemd's stop timeout or a person's second Ctrl-C
// expect.
// A GitHub that hangs must not hold `systemctl stop`: the poll request in flight is abandoned
// and the shutdown completes while GitHub still holds it.
TEST_F(OpsTest, AStopAbandonsAPollRequestGitHubHolds) {
  FakeGitHub github(SystemClock());
  github.Hold("GET", "/notifications");
  // A local remote that does not exist: tests never reach the network (without it the daemon
  // would clone https://github.com/<repo>, and a clone left running after the daemon's immediate
  // exit wrote into the test's directory while it was being removed).
  WriteConfig("github:\n  api_url: " + github.url() + "\n  repo: " + github.repo + "\nexecution:\n  git_remote: " +
              (dir_ / "no-origin.git").string() + "\n");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, {{"GITHUB_TOKEN", "ghp_OPSTEST0123456789"}});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(github.WaitUntilHolding()) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_THAT(d.log(), HasSubstr(" info stopped"));
  EXPECT_TRUE(github.Holding()) << "the daemon stopped only because GitHub answered";
  // The stop's doing is not GitHub's failure: nothing is recorded against the path.
  EXPECT_THAT(d.log(), HasSubstr("info github read abandoned at shutdown path="));
  EXPECT_THAT(d.log(), Not(HasSubstr("source read failed")));
  github.Release();
}

// The acknowledgement being posted is not abandoned (the Effects loop finishes what it sends):
// while GitHub holds it the shutdown waits, and a second SIGTERM exits at once.
TEST_F(OpsTest, ASecondStopSignalExitsAtOnceWhileTheShutdownWaits) {
  FakeGitHub github(SystemClock());
  github.issues[1] = WebhookExample("issue_comment", "created")["issue"];
  github.Hold("POST", github.repo_path() + "/issues/1/comments");
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n");
  // A local remote that does not exist: tests never reach the network (without it the daemon
  // would clone https://github.com/<repo>, and a clone left running after the daemon's immediate
  // exit wrote into the test's directory while it was being removed).
  WriteConfig("github:\n  api_url: " + github.url() + "\n  repo: " + github.repo + "\nexecution:\n  git_remote: " +
              (dir_ / "no-origin.git").string() + "\n");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()},
                  {{"GITHUB_TOKEN", "ghp_OPSTEST0123456789"}, {"GITHUB_WEBHOOK_SECRET", "hook-secret"}});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  // Before its first round learns the login, the daemon accepts a delivery with 202 and takes it
  // later; this test wants it taken within the request.
  ASSERT_TRUE(d.WaitForCount("github identity login=", 1)) << d.log();
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"] = github.MakeComment(492700400, 1, "Codertocat", "@superagent-bot please fix the typo",
                                          SystemClock()->NowMs());
  const std::string body = payload.dump();
  httplib::Client http("127.0.0.1", port_);
  http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  auto res = http.Post("/hooks/github",
                       {{"X-GitHub-Event", "issue_comment"}, {"X-GitHub-Delivery", "72d3162e"},
                        {"X-Hub-Signature-256", github::WebhookSignature("hook-secret", body)}},
                       body, "application/json");
  ASSERT_TRUE(res && res->status == 200) << d.log();
  ASSERT_TRUE(github.WaitUntilHolding()) << d.log();
  d.Signal(SIGTERM);
  ASSERT_TRUE(d.WaitForLine("shutting down signal=SIGTERM")) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 1) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("second stop signal: exiting at once signal=SIGTERM"));
  EXPECT_THAT(d.log(), Not(HasSubstr(" info stopped"))) << "the graceful shutdown did not wait";
  github.Release();
}

// Processes of process group `pgid` that are not zombies, from /proc/<pid>/stat.
int LiveMembers(int pgid) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    int ppid = 0, pgrp = 0;
    rest >> state >> ppid >> pgrp;
    if (pgrp == pgid && state != 'Z') ++n;
  }
  return n;
}

// The last resort of a daemon that exits at once: every tree its workers started is killed.
TEST(ProcessRunnerTest, KillAllEndsEveryTreeStillRunning) {
  auto runner = exec::MakePosixProcessRunner();
  std::vector<std::unique_ptr<exec::Process>> trees;
  for (int i = 0; i < 3; ++i) {
    exec::ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", "sleep 600 & sleep 600 & wait"};
    auto p = runner->Spawn(spec);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    trees.push_back(std::move(*p));
  }
  runner->KillAll();
  for (auto& t : trees) {
    std::optional<int> code;
    for (int i = 0; i < 2000 && !(code = t->Poll()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(code.has_value()) << "a tree survived KillAll";
    EXPECT_EQ(*code, 128 + SIGKILL);
    // Its children were killed too (a zombie waiting for init to reap it is dead).
    bool gone = false;
    for (int i = 0; i < 2000 && !(gone = LiveMembers(t->pid()) == 0); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(gone) << "a child of the tree survived";
  }
}

// A store with one recorded accept (alice asked, explicitly), made by the real Engine.
void RecordAnAccept(const fs::path& data_dir) {
  fs::create_directories(data_dir);
  std::vector<Problem> problems;
  auto policy = ParsePolicy("mode: observe\nsources:\n  github:\n    people: [alice]\n", "policy.yaml", &problems);
  ASSERT_TRUE(policy);
  auto engine = Engine::Open((data_dir / "superagent.db").string(), SystemClock(), *policy, "policy.yaml");
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  Trigger t;
  t.id = "github:comment:77@2026-12-02T10:00:00Z";
  t.source = "github";
  t.scope = "comments";
  t.actor = "alice";
  t.human = true;
  t.addressed = true;
  t.text = "@agent please fix the typo in README";
  t.at = SystemClock()->NowMs();
  t.threads = {"github:codertocat/hello-world:issue:7"};
  t.channel = "github:codertocat/hello-world:issue:7";
  t.meta = {{"html_url", "https://github.com/o/r/issues/7#issuecomment-77"}};
  ASSERT_TRUE((*engine)->Receive(t, "test").ok());
  NoModelAssessor assessor;
  auto ran = RunOneEval(**engine, assessor);
  ASSERT_TRUE(ran.ok() && *ran);
}

TEST_F(OpsTest, PolicySimulateShowsWhatACandidateWouldChange) {
  RecordAnAccept(dir_ / "data");
  Write("candidate.yaml", "mode: observe\nsources:\n  github:\n    people: [bob]\n");
  RunResult r = RunProgram(SUPERAGENT_BINARY, {"policy", "simulate", "--config", Config(), "--policy",
                                               (dir_ / "candidate.yaml").string(), "--since", "1d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 decision(s) since"));
  EXPECT_THAT(r.out, HasSubstr("same: 0  changed: 1  needs a model assessment: 0"));
  EXPECT_THAT(r.out, HasSubstr("github:comment:77@2026-12-02T10:00:00Z accept -> ignore"));
  EXPECT_THAT(r.out, HasSubstr("url   https://github.com/o/r/issues/7#issuecomment-77"));

  RunResult same = RunProgram(SUPERAGENT_BINARY, {"policy", "simulate", "--config", Config(), "--policy",
                                                  (dir_ / "policy.yaml").string(), "--json"});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  auto j = nlohmann::json::parse(same.out);
  EXPECT_EQ(j["decisions"], 1);
  EXPECT_EQ(j["same"], 1);
  EXPECT_TRUE(j["differences"].empty());
}

TEST_F(OpsTest, PolicySimulateRefusesBadInputPrecisely) {
  Write("candidate.yaml", "mode: sometimes\n");
  RunResult bad_policy = RunProgram(SUPERAGENT_BINARY, {"policy", "simulate", "--config", Config(), "--policy",
                                                        (dir_ / "candidate.yaml").string()});
  EXPECT_EQ(bad_policy.exit_code, 2);
  EXPECT_THAT(bad_policy.err, HasSubstr("candidate.yaml:1:"));
  RunResult bad_since = RunProgram(SUPERAGENT_BINARY, {"policy", "simulate", "--config", Config(), "--policy",
                                                       (dir_ / "policy.yaml").string(), "--since", "a week"});
  EXPECT_EQ(bad_since.exit_code, 2);
  EXPECT_THAT(bad_since.err, HasSubstr("--since must be a number and a unit"));
  RunResult no_db = RunProgram(SUPERAGENT_BINARY, {"policy", "simulate", "--config", Config(), "--policy",
                                                   (dir_ / "policy.yaml").string()});
  EXPECT_EQ(no_db.exit_code, 1);
  EXPECT_THAT(no_db.err, HasSubstr("no database at"));
  EXPECT_FALSE(fs::exists(dir_ / "data" / "superagent.db")) << "a simulation creates nothing";
  RunResult usage = RunProgram(SUPERAGENT_BINARY, {"policy", "edit"});
  EXPECT_EQ(usage.exit_code, 2);
}

// --- doctor ---

class DoctorTest : public OpsTest {
 protected:
  void SetUp() override {
    OpsTest::SetUp();
    setenv("SUPERAGENT_DOCTOR_GH", "ghp_DOCTORSECRET0123456789abcdef", 1);
    setenv("SUPERAGENT_DOCTOR_HOOK", "hook-secret", 1);
    setenv("SUPERAGENT_DOCTOR_MODEL", chat_.api_key().c_str(), 1);
    // The workers' git remote: a real repository with a default branch, reached without a network.
    const std::string seed = (dir_ / "seed").string();
    RunResult made = RunProgram("/bin/sh", {"-c", "git init -q -b main " + seed + " && cd " + seed +
                                                      " && echo hi > README.md && git add -A && git -c user.name=t"
                                                      " -c user.email=t@t commit -q -m init && git clone -q --bare . " +
                                                      (dir_ / "remote.git").string()});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  void TearDown() override {
    unsetenv("SUPERAGENT_DOCTOR_GH");
    unsetenv("SUPERAGENT_DOCTOR_HOOK");
    unsetenv("SUPERAGENT_DOCTOR_MODEL");
    OpsTest::TearDown();
  }
  superagent::Config Healthy() {
    superagent::Config c;
    c.data_dir = (dir_ / "data").string();
    c.github.api_url = github_.url();
    c.github.repo = github_.repo;
    c.github.token_env = "SUPERAGENT_DOCTOR_GH";
    c.github.webhook_secret_env = "SUPERAGENT_DOCTOR_HOOK";
    c.llm.base_url = chat_.base_url();
    c.llm.api_key_env = "SUPERAGENT_DOCTOR_MODEL";
    c.execution.git_remote = (dir_ / "remote.git").string();
    return c;
  }
  std::map<std::string, app::DoctorCheck> Run(const superagent::Config& c) {
    std::map<std::string, app::DoctorCheck> out;
    for (auto& check : app::RunDoctor(c, *http_)) out[check.name] = check;
    return out;
  }

  FakeGitHub github_{SystemClock()};
  FakeChatServer chat_;
  std::unique_ptr<HttpClient> http_ = MakeHttpClient("superagent-test");
};

using R = app::DoctorCheck::Result;

TEST_F(DoctorTest, AHealthyDeploymentPassesEveryCheck) {
  auto checks = Run(Healthy());
  for (const char* name : {"policy", "data_dir", "sqlite", "github.token", "github.notifications", "github.repo",
                           "github.webhook_secret", "model", "git", "git.remote", "git.prepare"})
    EXPECT_EQ(checks[name].result, R::kOk) << name << ": " << checks[name].detail;
  EXPECT_THAT(checks["git.prepare"].detail, HasSubstr("git made a workspace of origin/main"));
  EXPECT_NE(checks["containment"].result, R::kFailed) << "process groups always work";
  // This host (and CI, as root) can sandbox workers: bubblewrap is installed (issue 19).
  EXPECT_EQ(checks["sandbox"].result, R::kOk) << checks["sandbox"].detail << " / " << checks["sandbox"].fix;
  EXPECT_THAT(checks["sandbox"].detail, HasSubstr("worker commands run in bubblewrap"));
  EXPECT_FALSE(fs::exists(fs::temp_directory_path() / ("superagent-doctor-" + std::to_string(::getpid()))))
      << "the scratch workspace is left behind";
  EXPECT_THAT(checks["github.token"].detail, HasSubstr("acts as superagent-bot"));
  EXPECT_EQ(checks["feishu"].result, R::kSkipped);
  EXPECT_EQ(checks["feishu"].detail, "no Feishu configured");
  EXPECT_TRUE(chat_.problems().empty());
}

// Issue 37: every repository of github.repos is read with the same token, each on its own line;
// one the token cannot see fails with the words that fix it, the others still pass.
TEST_F(DoctorTest, EachRepositoryServedIsCheckedOnItsOwnLine) {
  FakeGitHub api(SystemClock());
  api.repo = "acme/api";
  api.repo_info = {{"full_name", "acme/api"}, {"default_branch", "main"}};
  github_.other_repositories = {{api.repo, &api}};
  superagent::Config c = Healthy();
  c.github.repos = {github_.repo, "acme/api", "acme/secret"};
  github_.Script("GET", "/repos/acme/secret", {404, {}, R"({"message":"Not Found"})"}, -1);
  auto checks = Run(c);
  EXPECT_EQ(checks["github.repo"].result, R::kOk) << checks["github.repo"].detail;
  EXPECT_EQ(checks["github.repos[1]"].result, R::kOk) << checks["github.repos[1]"].detail;
  EXPECT_EQ(checks["github.repos[1]"].detail, "acme/api readable");
  EXPECT_EQ(checks["github.repos[2]"].result, R::kFailed);
  EXPECT_THAT(checks["github.repos[2]"].detail, HasSubstr("GET /repos/acme/secret: "));
  EXPECT_THAT(checks["github.repos[2]"].fix, HasSubstr("check acme/secret (owner/name) in github.repos"));
  EXPECT_EQ(api.Count("GET", "/repos/acme/api"), 1) << "asked of acme/api itself";
}

// Issue 37: github.repos: installation — doctor finds the installation by its id and says what it
// serves; an id that is no installation of the App fails with where to read the right one.
TEST_F(DoctorTest, AnInstallationsRepositoriesAreListedByDoctor) {
  TestKey key;
  FakeGitHub api(SystemClock(), false);
  api.repo = "acme/api";
  github_.UseApp(key.key);
  github_.other_repositories = {{api.repo, &api}};
  setenv("SUPERAGENT_DOCTOR_APP_KEY", key.pem.c_str(), 1);
  superagent::Config c = Healthy();
  c.github.repo.clear();
  c.github.repos.clear();
  c.github.installation = true;
  c.github.auth = "app";
  c.github.app_id = "12345";
  c.github.app_installation_id = "42";
  c.github.app_private_key_env = "SUPERAGENT_DOCTOR_APP_KEY";
  c.execution.git_remote.clear();
  auto checks = Run(c);
  for (const char* name : {"github.app", "github.installation", "github.token", "github.repos"})
    EXPECT_EQ(checks[name].result, R::kOk) << name << ": " << checks[name].detail << " / " << checks[name].fix;
  EXPECT_THAT(checks["github.installation"].detail, HasSubstr("installation 42 (github.repos: installation)"));
  EXPECT_EQ(checks["github.repos"].detail, "the installation serves 2 repositories: Codertocat/Hello-World, acme/api");
  EXPECT_EQ(checks["git.remote"].result, R::kSkipped) << checks["git.remote"].detail;
  EXPECT_EQ(github_.Count("GET", "/app/installations/42"), 1);

  github_.not_installed = {github_.repo, api.repo};
  checks = Run(c);
  EXPECT_EQ(checks["github.repos"].result, R::kFailed);
  EXPECT_THAT(checks["github.repos"].fix, HasSubstr("Repository access"));

  c.github.app_installation_id = "7";
  checks = Run(c);
  unsetenv("SUPERAGENT_DOCTOR_APP_KEY");
  EXPECT_EQ(checks["github.installation"].result, R::kFailed);
  EXPECT_THAT(checks["github.installation"].detail, HasSubstr("the App has no installation 7"));
  EXPECT_THAT(checks["github.installation"].fix, HasSubstr("github.app_installation_id"));
}

// The chosen coding CLI (issue 21): the real Claude Code from tests/node_modules, its version, and
// a one-token call to a loopback Anthropic API; then each thing a team gets wrong, with a fix.
TEST_F(DoctorTest, TheChosenCodingCliIsCheckedEndToEnd) {
  FakeCodingModel model(FakeCodingModel::Wire::kAnthropic, "sk-doctor-cli", "claude-sonnet-4-5");
  setenv("SUPERAGENT_DOCTOR_CLI", "sk-doctor-cli", 1);
  superagent::Config c = Healthy();
  c.execution.executor = "claude-code";
  c.execution.claude_code.binary = NodeModulesDir() + "/.bin/claude";
  c.execution.claude_code.model = "claude-sonnet-4-5";
  c.execution.claude_code.api_key_env = "SUPERAGENT_DOCTOR_CLI";
  c.execution.claude_code.base_url = model.base_url();
  auto checks = Run(c);
  EXPECT_EQ(checks["cli"].result, R::kOk) << checks["cli"].detail;
  EXPECT_THAT(checks["cli"].detail, HasSubstr("Claude Code"));  // `claude --version` names itself
  EXPECT_EQ(checks["cli.model"].result, R::kOk) << checks["cli.model"].detail;
  EXPECT_EQ(model.calls(), 1);

  setenv("SUPERAGENT_DOCTOR_CLI", "sk-wrong", 1);
  checks = Run(c);
  EXPECT_EQ(checks["cli.model"].result, R::kFailed);
  EXPECT_THAT(checks["cli.model"].detail, HasSubstr("401"));
  EXPECT_THAT(checks["cli.model"].fix, HasSubstr("SUPERAGENT_DOCTOR_CLI"));

  unsetenv("SUPERAGENT_DOCTOR_CLI");
  checks = Run(c);
  EXPECT_EQ(checks["cli.model"].result, R::kFailed);
  EXPECT_THAT(checks["cli.model"].detail, HasSubstr("is not set"));

  c.execution.claude_code.binary = "no-such-claude-程序";
  checks = Run(c);
  EXPECT_EQ(checks["cli"].result, R::kFailed);
  EXPECT_THAT(checks["cli"].fix, HasSubstr("npm install -g @anthropic-ai/claude-code"));
  EXPECT_EQ(checks["cli.model"].result, R::kSkipped);

  // builtin: no CLI lines at all.
  checks = Run(Healthy());
  EXPECT_EQ(checks.count("cli"), 0u);
}

// The one-token call speaks each CLI's own wire format: Responses for Codex, Gemini's REST API,
// OpenAI chat for Qwen Code — each against a fake that checks the key and the model.
TEST_F(DoctorTest, EachCodingCliIsCheckedInItsOwnWireFormat) {
  FakeResponsesModel codex(FakeCliScript{});
  FakeGeminiModel gemini(FakeCliScript{});
  FakeCodingModel qwen(FakeCodingModel::Wire::kOpenAiChat, "sk-doctor-qwen", "qwen3-coder-plus");
  struct Case {
    std::string executor, binary, model, key, base_url;
    superagent::Config::CodingCli superagent::Config::Execution::*block;
  };
  const std::vector<Case> cases = {
      {"codex", "codex", "gpt-5.5", "sk-codex-test-1234", codex.base_url(), &superagent::Config::Execution::codex},
      {"gemini-cli", "gemini", "gemini-2.5-pro", "gk-gemini-test-5678", gemini.base_url(),
       &superagent::Config::Execution::gemini_cli},
      {"qwen-code", "qwen", "qwen3-coder-plus", "sk-doctor-qwen", qwen.base_url(), &superagent::Config::Execution::qwen_code},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.executor);
    setenv("SUPERAGENT_DOCTOR_CLI", c.key.c_str(), 1);
    superagent::Config config = Healthy();
    config.execution.executor = c.executor;
    superagent::Config::CodingCli& cli = config.execution.*(c.block);
    cli.binary = NodeModulesDir() + "/.bin/" + c.binary;
    cli.model = c.model;
    cli.api_key_env = "SUPERAGENT_DOCTOR_CLI";
    cli.base_url = c.base_url;
    auto checks = Run(config);
    EXPECT_EQ(checks["cli"].result, R::kOk) << checks["cli"].detail;
    EXPECT_EQ(checks["cli.model"].result, R::kOk) << checks["cli.model"].detail;
    setenv("SUPERAGENT_DOCTOR_CLI", "wrong-key", 1);
    checks = Run(config);
    EXPECT_EQ(checks["cli.model"].result, R::kFailed) << checks["cli.model"].detail;
  }
  unsetenv("SUPERAGENT_DOCTOR_CLI");
  EXPECT_GE(codex.requests(), 2);
  EXPECT_GE(qwen.calls(), 2);
}

TEST_F(DoctorTest, EachCommonMistakeFailsWithAFix) {
  github_.Script("GET", "/user", {401, {}, R"({"message":"Bad credentials"})"});
  auto checks = Run(Healthy());
  EXPECT_EQ(checks["github.token"].result, R::kFailed);
  EXPECT_THAT(checks["github.token"].detail, HasSubstr("HTTP 401: Bad credentials"));
  EXPECT_THAT(checks["github.token"].fix, HasSubstr("wrong or expired"));
  EXPECT_EQ(checks["github.repo"].result, R::kSkipped) << "reported once, not three times";

  // A fine-grained token: accepted, but notifications are forbidden.
  github_.Script("GET", "/notifications", {403, {}, R"({"message":"Resource not accessible by personal access token"})"});
  checks = Run(Healthy());
  EXPECT_EQ(checks["github.token"].result, R::kOk);
  EXPECT_EQ(checks["github.notifications"].result, R::kFailed);
  EXPECT_THAT(checks["github.notifications"].fix, HasSubstr("classic token"));

  superagent::Config c = Healthy();
  c.github.bot_login = "someone-else";
  c.github.repo = "Codertocat/Nope";
  c.llm.assessment_model = "gpt-9";
  Write("not-a-dir", "");
  c.data_dir = (dir_ / "not-a-dir" / "data").string();
  unsetenv("SUPERAGENT_DOCTOR_HOOK");
  checks = Run(c);
  EXPECT_EQ(checks["github.token"].result, R::kFailed);
  EXPECT_THAT(checks["github.token"].fix, HasSubstr("set github.bot_login to superagent-bot"));
  EXPECT_EQ(checks["github.repo"].result, R::kFailed);
  EXPECT_EQ(checks["model"].result, R::kFailed);
  EXPECT_THAT(checks["model"].detail, HasSubstr("does not offer gpt-9 (it offers: deepseek-chat, deepseek-reasoner)"));
  EXPECT_EQ(checks["data_dir"].result, R::kFailed);
  EXPECT_EQ(checks["github.webhook_secret"].result, R::kSkipped);

  c = Healthy();
  c.execution.git_remote = (dir_ / "no-such-remote.git").string();
  checks = Run(c);
  EXPECT_EQ(checks["git.remote"].result, R::kFailed);
  EXPECT_THAT(checks["git.remote"].detail, HasSubstr("no-such-remote.git"));
  EXPECT_THAT(checks["git.remote"].fix, HasSubstr("check the URL in execution.git_remote"));
  EXPECT_EQ(checks["git.prepare"].result, R::kSkipped) << "reported once";

  // A remote with nothing in it: readable, but no workspace can be made from it.
  ASSERT_EQ(RunProgram("/usr/bin/git", {"init", "--quiet", "--bare", (dir_ / "empty.git").string()}).exit_code, 0);
  c.execution.git_remote = (dir_ / "empty.git").string();
  checks = Run(c);
  EXPECT_EQ(checks["git.remote"].result, R::kOk);
  EXPECT_EQ(checks["git.prepare"].result, R::kFailed) << checks["git.prepare"].detail;
  EXPECT_THAT(checks["git.prepare"].fix, HasSubstr("default branch with at least one commit"));

  // The team's own prepare command, failing: its words are shown.
  c.execution.git_remote = (dir_ / "remote.git").string();
  c.execution.prepare = "echo 'no space left on device' >&2; exit 1";
  checks = Run(c);
  EXPECT_EQ(checks["git.prepare"].result, R::kFailed);
  EXPECT_THAT(checks["git.prepare"].detail, HasSubstr("no space left on device"));
  EXPECT_THAT(checks["git.prepare"].fix, HasSubstr("run execution.prepare by hand"));

  setenv("SUPERAGENT_DOCTOR_MODEL", "sk-wrong", 1);
  checks = Run(Healthy());
  EXPECT_EQ(checks["model"].result, R::kFailed);
  EXPECT_THAT(checks["model"].fix, HasSubstr("is refused"));
}

// Issue 25: a GitHub App is checked as the daemon will use it — its key, GET /app, its
// installation's permissions, an installation token — and each mistake names its fix.
TEST_F(DoctorTest, AGitHubAppIsCheckedKeyAppInstallationAndTokenEachWithAFix) {
  TestKey key;
  github_.prefix = "/api/v3";  // and on a GitHub Enterprise Server
  github_.UseApp(key.key);
  setenv("SUPERAGENT_DOCTOR_APP_KEY", key.pem.c_str(), 1);
  superagent::Config c = Healthy();
  c.github.api_url = github_.api_url();
  c.github.auth = "app";
  c.github.app_id = "12345";
  c.github.app_private_key_env = "SUPERAGENT_DOCTOR_APP_KEY";
  auto checks = Run(c);
  for (const char* name : {"github.app", "github.installation", "github.token", "github.repo"})
    EXPECT_EQ(checks[name].result, R::kOk) << name << ": " << checks[name].detail << " / " << checks[name].fix;
  EXPECT_THAT(checks["github.app"].detail, HasSubstr("writes as team-agent[bot] and is mentioned as @team-agent"));
  EXPECT_THAT(checks["github.installation"].detail, HasSubstr("installation 42"));
  EXPECT_EQ(checks["github.notifications"].result, R::kSkipped);
  EXPECT_EQ(github_.Count("GET", "/api/v3/notifications"), 0);
  // Without Administration: read the App cannot see branch protection: said, with how to let it.
  EXPECT_EQ(checks["github.branch_protection"].result, R::kWarning);
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("cannot tell whether master is protected"));
  EXPECT_THAT(checks["github.branch_protection"].fix, HasSubstr("\"Administration: read\""));

  // The installation lacks two permissions and an event: both named, with where to grant them.
  {
    auto lock = github_.Lock();
    github_.app->permissions.erase("checks");
    github_.app->permissions["contents"] = "read";
    github_.app->events = {"issues", "issue_comment"};
  }
  checks = Run(c);
  EXPECT_EQ(checks["github.installation"].result, R::kFailed);
  EXPECT_THAT(checks["github.installation"].detail, HasSubstr("lacks the permissions contents: write, checks: write"));
  EXPECT_THAT(checks["github.installation"].fix, HasSubstr("Permissions & events"));

  // Another App's key: GitHub cannot verify the JWT.
  TestKey other;
  setenv("SUPERAGENT_DOCTOR_APP_KEY", other.pem.c_str(), 1);
  checks = Run(c);
  EXPECT_EQ(checks["github.app"].result, R::kFailed);
  EXPECT_THAT(checks["github.app"].fix, HasSubstr("current private key"));
  EXPECT_EQ(checks["github.installation"].result, R::kSkipped) << "reported once";

  // No key at all, or not a key: said by name, never quoted.
  setenv("SUPERAGENT_DOCTOR_APP_KEY", "ghp_notakey 秘密", 1);
  checks = Run(c);
  EXPECT_EQ(checks["github.app"].result, R::kFailed);
  EXPECT_THAT(checks["github.app"].detail, HasSubstr("not an RSA private key"));
  EXPECT_EQ(checks["github.app"].detail.find("秘密"), std::string::npos);
  unsetenv("SUPERAGENT_DOCTOR_APP_KEY");
  checks = Run(c);
  EXPECT_THAT(checks["github.app"].detail, HasSubstr("SUPERAGENT_DOCTOR_APP_KEY is not set"));

  // Installed elsewhere: the repository is not among the installation's.
  setenv("SUPERAGENT_DOCTOR_APP_KEY", key.pem.c_str(), 1);
  c.github.repo = "Codertocat/Elsewhere";
  checks = Run(c);
  unsetenv("SUPERAGENT_DOCTOR_APP_KEY");
  EXPECT_EQ(checks["github.app"].result, R::kOk);
  EXPECT_EQ(checks["github.installation"].result, R::kFailed);
  EXPECT_THAT(checks["github.installation"].fix, HasSubstr("Install App"));
}

TEST_F(DoctorTest, ChecksThatCannotApplyAreSkippedNotFailed) {
  superagent::Config c;
  c.data_dir = (dir_ / "data").string();
  c.llm.api_key_env = "SUPERAGENT_DOCTOR_UNSET";
  auto checks = Run(c);
  for (const char* name : {"github.token", "github.notifications", "github.repo", "github.webhook_secret", "feishu", "model"})
    EXPECT_EQ(checks[name].result, R::kSkipped) << name;
  EXPECT_TRUE(github_.log().empty()) << "nothing to ask GitHub without a repository";
}

// Seed 004 / issue 33: approvals mean something only when GitHub requires them on the default
// branch and dismisses them on a new push. doctor says which of that holds: a warning with the
// fix, a failure once a rule lets the daemon auto-merge, and "cannot tell" — never "unprotected" —
// when the token may not read the protection.
TEST_F(DoctorTest, TheDefaultBranchsProtectionIsReported) {
  const std::string protection = "/repos/" + github_.repo + "/branches/master/protection";
  superagent::Config c = Healthy();
  auto checks = Run(c);
  EXPECT_EQ(checks["github.branch_protection"].result, R::kWarning) << checks["github.branch_protection"].detail;
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("master is not protected"));
  EXPECT_THAT(checks["github.branch_protection"].fix, HasSubstr("Dismiss stale pull request approvals"));
  EXPECT_EQ(github_.Count("GET", protection), 1) << "asked with the agent's token";

  // Protected, with reviews that survive a new push: still a warning, saying so.
  github_.protections["master"] = github_.MakeProtection("master", false);
  checks = Run(c);
  EXPECT_EQ(checks["github.branch_protection"].result, R::kWarning);
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("keeps approvals after a new push"));
  github_.protections["master"] = github_.MakeProtection("master", true, 0);
  checks = Run(c);
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("requires no pull request review"));

  // The token may not read protection (no admin rights): "cannot tell", not "unprotected".
  github_.Script("GET", protection, {403, {}, R"({"message":"Must have admin rights to Repository."})"});
  checks = Run(c);
  EXPECT_EQ(checks["github.branch_protection"].result, R::kWarning);
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("cannot tell whether master is protected"));
  EXPECT_THAT(checks["github.branch_protection"].detail, Not(HasSubstr("not protected")));
  // A bare 404 may be GitHub hiding protection from the token: not "unprotected" either.
  github_.Script("GET", protection, {404, {}, R"({"message":"Not Found"})"});
  checks = Run(c);
  EXPECT_EQ(checks["github.branch_protection"].result, R::kWarning);
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("cannot tell whether master is protected"));
  // An answer of the wrong shape is not believed either way.
  github_.Script("GET", protection, {200, {}, R"(["dismiss_stale_reviews", true])"});
  checks = Run(c);
  EXPECT_EQ(checks["github.branch_protection"].result, R::kWarning);
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("the answer is not an object"));
  github_.Script("GET", protection,
                 {200, {}, R"({"required_pull_request_reviews": {"dismiss_stale_reviews": "true"}})"});
  checks = Run(c);
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("dismiss_stale_reviews is \"true\""));

  // Fully protected: ok.
  github_.protections["master"] = github_.MakeProtection("master", true, 1);
  checks = Run(c);
  EXPECT_EQ(checks["github.branch_protection"].result, R::kOk) << checks["github.branch_protection"].detail;
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("dismisses stale approvals"));

  // With a rule that auto-merges, a gap fails: the daemon's own guard would be all that is left.
  Write("merge-policy.yaml", "rules:\n  - name: wording\n    when: typos\n    approver: alice\n"
                             "    auto_merge: { enabled: true }\n");
  c.policy_file = (dir_ / "merge-policy.yaml").string();
  checks = Run(c);
  EXPECT_EQ(checks["github.branch_protection"].result, R::kOk);
  github_.protections.erase("master");
  checks = Run(c);
  EXPECT_EQ(checks["github.branch_protection"].result, R::kFailed);
  EXPECT_THAT(checks["github.branch_protection"].detail,
              HasSubstr("auto-merge is on (rule wording): auto-merge is unsafe without it"));
  EXPECT_THAT(checks["github.branch_protection"].fix, HasSubstr("turn auto_merge off"));
  // … but a token that cannot look is not a failure: it says to check by hand.
  github_.Script("GET", protection, {403, {}, R"({"message":"Resource not accessible by integration"})"});
  checks = Run(c);
  EXPECT_EQ(checks["github.branch_protection"].result, R::kWarning);
  EXPECT_THAT(checks["github.branch_protection"].detail, HasSubstr("check it by hand"));
}

TEST_F(DoctorTest, TheCommandPrintsEveryCheckAndExitsNonZeroOnAFailure) {
  WriteConfig("github:\n  api_url: " + github_.url() + "\n  repo: " + github_.repo +
              "\n  token_env: SUPERAGENT_DOCTOR_GH\n  webhook_secret_env: SUPERAGENT_DOCTOR_HOOK\n"
              "execution:\n  git_remote: " + (dir_ / "remote.git").string() + "\n");
  RunResult ok = RunProgram(SUPERAGENT_BINARY, {"doctor", "--config", Config()});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("github.token           ok      accepted; the agent acts as superagent-bot"));
  EXPECT_THAT(ok.out, HasSubstr("feishu                 skipped no Feishu configured"));
  EXPECT_THAT(ok.out, HasSubstr("no problems found"));
  EXPECT_THAT(ok.out + ok.err, Not(HasSubstr("ghp_DOCTORSECRET"))) << "a secret was printed";
  EXPECT_EQ(ok.err, "") << "the report alone: no log line of the wiring it reuses interleaves with it (issue 24)";

  github_.Script("GET", "/repos/" + github_.repo, {404, {}, R"({"message":"Not Found"})"});
  RunResult bad = RunProgram(SUPERAGENT_BINARY, {"doctor", "--config", Config()});
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr("github.repo            FAILED  GET /repos/Codertocat/Hello-World: HTTP 404: Not Found"));
  EXPECT_THAT(bad.out, HasSubstr("    fix: check github.repo (owner/name)"));
  EXPECT_THAT(bad.out, HasSubstr("1 check(s) failed"));

  Write("superagent.yaml", "panel:\n  listen: nowhere\n");
  RunResult invalid = RunProgram(SUPERAGENT_BINARY, {"doctor", "--config", Config()});
  EXPECT_EQ(invalid.exit_code, 2);
  EXPECT_THAT(invalid.out, HasSubstr("superagent.yaml:2:"));
}

// Issue 34: a valid policy that lets nobody ask is a deaf daemon. doctor fails it when no Source
// that is on lets anyone ask, warns when one of two does not, and names the key and its line;
// `check` says the same as a warning. A row that takes others' mentions as explicit lets people ask.
TEST_F(DoctorTest, APolicyThatLetsNobodyAskFailsWithTheKeyThatFixesIt) {
  superagent::Config c = Healthy();
  c.source_file = Config();
  c.policy_file = (dir_ / "policy.yaml").string();
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: []\n    bots: [\"dependabot[bot]\"]\n");
  auto checks = Run(c);
  EXPECT_EQ(checks["policy.people"].result, R::kFailed);
  EXPECT_EQ(checks["policy.people"].detail,
            "Nobody may ask for work yet on GitHub (" + github_.repo +
                "): sources.github.people is empty and no row of sources.github.scopes takes others' @-mentions as "
                "explicit, so every @-mention of the agent is ignored (explain says ignored:others_addressed).");
  EXPECT_EQ(checks["policy.people"].fix,
            "Add the GitHub logins of the people who may ask to sources.github.people in " + c.policy_file +
                " (e.g. people: [alice, bob]). The key is at " + c.policy_file +
                ":4. The daemon reloads the file when it is saved; no restart is needed.");

  // The embedded default policy has no sources at all: name the file to write, and restart.
  c.policy_file.clear();
  checks = Run(c);
  EXPECT_EQ(checks["policy.people"].result, R::kFailed);
  EXPECT_THAT(checks["policy.people"].detail, HasSubstr("the policy has no sources.github section"));
  EXPECT_THAT(checks["policy.people"].fix, HasSubstr("Set policy_file: policy.yaml in " + Config()));
  EXPECT_THAT(checks["policy.people"].fix, HasSubstr("Then restart the daemon."));

  // A support row where anyone may ask (but not CI's, which has no sender).
  c.policy_file = (dir_ / "policy.yaml").string();
  Write("policy.yaml", "sources:\n  github:\n    people: []\n    scopes:\n      ci: {others_unaddressed: inferred}\n");
  EXPECT_EQ(Run(c)["policy.people"].result, R::kFailed);
  Write("policy.yaml", "sources:\n  github:\n    people: []\n    scopes:\n      issues: {others_addressed: explicit}\n");
  checks = Run(c);
  EXPECT_EQ(checks["policy.people"].result, R::kOk) << checks["policy.people"].detail;
  EXPECT_THAT(checks["policy.people"].detail, HasSubstr("anyone in a row set to others_addressed: explicit"));

  // Two Sources, one deaf: a warning naming Feishu's key.
  Write("policy.yaml", "sources:\n  github:\n    people: [alice]\n");
  c.feishu.enabled = true;
  checks = Run(c);
  EXPECT_EQ(checks["policy.people"].result, R::kWarning);
  EXPECT_THAT(checks["policy.people"].detail, HasSubstr("Nobody may ask for work yet on Feishu: the policy has no "
                                                        "sources.feishu section"));
  EXPECT_THAT(checks["policy.people"].fix, HasSubstr("the Feishu open_ids (ou_…) of the people who may ask to "
                                                     "sources.feishu.people"));
  EXPECT_THAT(checks["policy.people"].fix, HasSubstr("It is not written yet: add it under the key at " + c.policy_file + ":1."));

  // `check`, as a real process: a warning with the same words, exit 0 (the files are valid).
  WriteConfig("github:\n  repo: " + github_.repo + "\n");
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: []\n");
  RunResult check = RunProgram(SUPERAGENT_BINARY, {"check", "--config", Config()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("warning: Nobody may ask for work yet on GitHub (" + github_.repo + "): "));
  EXPECT_THAT(check.out, HasSubstr("The key is at " + (dir_ / "policy.yaml").string() + ":4."));
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [\"李雷\"]\n");
  check = RunProgram(SUPERAGENT_BINARY, {"check", "--config", Config()});
  EXPECT_THAT(check.out, Not(HasSubstr("Nobody may ask"))) << "who is listed is the policy's business, not a login check";
}

// Issue 34: a command executor whose program the workers' sandbox cannot see failed every turn,
// while check and doctor passed. Now both fail it, naming the file, why, and what to do.
TEST_F(DoctorTest, ACommandExecutorsProgramTheSandboxCannotSeeFails) {
  // A program outside the directories the sandbox shows (this test's directory is under /tmp,
  // which a worker sees as its own private /tmp), and a script the command names.
  const std::string agent = (dir_ / "glue" / "our-agent").string();
  fs::create_directories(dir_ / "glue");
  Write("glue/our-agent", "#!/bin/sh\necho '{\"stage\":\"ready\",\"summary\":\"ok\"}'\n");
  fs::permissions(agent, fs::perms::owner_all);
  Write("glue/agent.py", "print('{}')\n");
  const std::string path = "/usr/local/bin:/usr/bin:/bin";
  superagent::Config c = Healthy();
  c.execution.executor = "command";
  auto problem = [&](const std::string& command, const std::string& path_env = "/usr/local/bin:/usr/bin:/bin") {
    c.execution.command = command;
    auto p = app::FindCommandProgramProblem(c, path_env);
    return p ? p->what + " | " + p->fix : std::string();
  };
  EXPECT_THAT(problem(agent + " --json"),
              HasSubstr("execution.command: the worker cannot run its program: " + agent +
                        " is outside the directories the sandbox shows (the Ticket's own directory, and /usr, /bin, "
                        "/lib, /etc and /opt read-only), so every turn would fail with \"not found\" | install it "
                        "where the sandbox shows the system (sudo install -m 0755 " + agent +
                        " /usr/local/bin/our-agent, or below /opt), or commit it to the repository"));
  EXPECT_THAT(problem("FOO=1 exec env BAR=2 '" + agent + "'"), HasSubstr("cannot run its program: " + agent))
      << "assignments, exec and env are not the program";
  EXPECT_THAT(problem("our-agent", (dir_ / "glue").string() + ":" + path),
              HasSubstr("cannot run its program: " + agent)) << "found in a PATH directory the sandbox does not show";
  EXPECT_THAT(problem("python3 " + (dir_ / "glue" / "agent.py").string()),
              HasSubstr("the worker cannot read " + (dir_ / "glue" / "agent.py").string() + ", which the command names"));
  EXPECT_THAT(problem("no-such-coding-agent --go"),
              HasSubstr("the program \"no-such-coding-agent\" is in no directory of PATH (" + path + ")"));
  EXPECT_THAT(problem("/usr/bin/no-such-coding-agent"), HasSubstr("/usr/bin/no-such-coding-agent does not exist"));
  for (const std::string& fine : {std::string("cat"), std::string("/bin/sh -c 'cat'"), std::string("./tools/agent.sh"),
                                  std::string("$HOME/bin/agent"), std::string("cd sub && ./run"),
                                  std::string("python3 /usr/lib/x.py"), std::string("cat # " + agent)})
    EXPECT_EQ(problem(fine), "") << fine;
  c.execution.sandbox = "off";
  EXPECT_EQ(problem(agent), "") << "no sandbox: the service user's view";

  // What the sandbox hides below a directory it shows (the config's, /etc/superagent, data_dir).
  exec::SandboxPolicy hiding;
  hiding.hidden = {"/usr/share"};
  EXPECT_EQ(exec::SandboxHides(hiding, "/usr/share/doc"), "/usr/share/doc is below /usr/share, which the sandbox hides from workers");
  EXPECT_EQ(exec::SandboxHides(hiding, "/usr/bin/env"), "");

  // doctor and check as the real commands: FAILED with the fix; a problem at the key's line.
  WriteConfig("github:\n  api_url: " + github_.url() + "\n  repo: " + github_.repo +
              "\n  token_env: SUPERAGENT_DOCTOR_GH\nexecution:\n  git_remote: " + (dir_ / "remote.git").string() +
              "\n  executor: command\n  command: " + agent + " --json\n");
  RunResult doctor = RunProgram(SUPERAGENT_BINARY, {"doctor", "--config", Config()});
  EXPECT_EQ(doctor.exit_code, 1) << doctor.out;
  EXPECT_THAT(doctor.out, HasSubstr("execution.command      FAILED  execution.command: the worker cannot run its program: " + agent));
  EXPECT_THAT(doctor.out, HasSubstr("    fix: install it where the sandbox shows the system"));
  RunResult check = RunProgram(SUPERAGENT_BINARY, {"check", "--config", Config()});
  EXPECT_EQ(check.exit_code, 1) << check.out;
  EXPECT_THAT(check.out, HasSubstr(Config() + ":14: execution.command: the worker cannot run its program: " + agent));
  EXPECT_THAT(check.err, HasSubstr("check: 1 problem in " + Config()));
  WriteConfig("github:\n  api_url: " + github_.url() + "\n  repo: " + github_.repo +
              "\nexecution:\n  git_remote: " + (dir_ / "remote.git").string() + "\n  executor: command\n  command: cat\n");
  check = RunProgram(SUPERAGENT_BINARY, {"check", "--config", Config()});
  EXPECT_EQ(check.exit_code, 0) << check.out;
}

// Issue 34: the daemon says at start, in a warning line and a Needs-you card, that nobody may ask
// for work; a saved policy that lists someone takes the card away. The Set-up cards' restart hint
// is the one for how the daemon runs: cmake/dev.sh, or systemd.
TEST_F(OpsTest, AServeThatNobodyMayAskSaysSoInItsLogAndPanelUntilThePolicyListsSomeone) {
  FakeGitHub github(SystemClock());
  WriteConfig("github:\n  api_url: " + github.url() + "\n  repo: " + github.repo + "\nexecution:\n  git_remote: " +
              (dir_ / "no-origin.git").string() + "\n");
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: []\n");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()},
                  {{"GITHUB_TOKEN", "ghp_OPSTEST0123456789"}, {"SUPERAGENT_STARTED_BY", "dev.sh"}});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  const std::string policy = (dir_ / "policy.yaml").string();
  EXPECT_THAT(d.log(), HasSubstr(" warning nobody may ask for work yet source=github key=sources.github.people "
                                 "policy_version=1 fix=\"Add the GitHub logins of the people who may ask to sources.github.people in " +
                                 policy + " (e.g. people: [alice, bob]). The key is at " + policy + ":4."));
  httplib::Client http("127.0.0.1", port_);
  http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  auto needs = [&] {
    auto r = http.Get("/api/needs");
    return r && r->status == 200 ? json::parse(r->body) : json();
  };
  auto card = [](const json& n, const std::string& piece) {
    for (const json& c : n["setup"])
      if (c["piece"] == piece) return c;
    return json();
  };
  json n = needs();
  ASSERT_TRUE(card(n, "github.people").is_object()) << n.dump(2);
  EXPECT_EQ(card(n, "github.people")["what"],
            "Nobody may ask for work yet on GitHub (" + github.repo +
                "): sources.github.people is empty and no row of sources.github.scopes takes others' @-mentions as "
                "explicit, so every @-mention of the agent is ignored (explain says ignored:others_addressed).");
  ASSERT_TRUE(card(n, "model").is_object()) << n.dump(2);
  EXPECT_THAT(card(n, "model")["fix"].get<std::string>(),
              HasSubstr("in the shell that starts the daemon (export it there); llm.api_key_env names the variable, "
                        "llm.base_url the endpoint. Then restart it: stop it with Ctrl-C and run cmake/dev.sh run "
                        "--config " + Config() + "."));
  EXPECT_THAT(n.dump(), Not(HasSubstr("systemctl")));

  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [alice]\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLine("policy version=2")) << d.log();
  n = needs();
  EXPECT_TRUE(card(n, "github.people").is_null()) << "the card follows the policy in force: " << n.dump(2);
  EXPECT_EQ(d.log().find("nobody may ask", d.log().find("policy version=2")), std::string::npos);
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: []\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLine("policy version=3")) << d.log();
  ASSERT_TRUE(d.WaitForLine("nobody may ask for work yet source=github key=sources.github.people policy_version=3"))
      << "said again after the reload, within the minute a repeated warning is held back";
  EXPECT_TRUE(card(needs(), "github.people").is_object());
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();

  // Under systemd (which sets INVOCATION_ID for every unit it starts): systemctl.
  DaemonProcess s(SUPERAGENT_BINARY, {"serve", "--config", Config()},
                  {{"GITHUB_TOKEN", "ghp_OPSTEST0123456789"}, {"INVOCATION_ID", "0123456789abcdef0123456789abcdef"}});
  ASSERT_TRUE(s.WaitForLine("ready")) << s.log();
  n = needs();
  EXPECT_THAT(card(n, "model")["fix"].get<std::string>(),
              HasSubstr("in /etc/superagent/secrets.env or a credential file (docs/007-operations.md, Secrets); "
                        "llm.api_key_env names the variable, llm.base_url the endpoint. Then restart it: sudo "
                        "systemctl restart "));
  EXPECT_THAT(n.dump(), Not(HasSubstr("Ctrl-C")));
  s.Signal(SIGTERM);
  EXPECT_EQ(s.Wait(), 0) << s.log();
}

// --- doctor: Feishu ---

class FeishuDoctorTest : public DoctorTest {
 protected:
  void SetUp() override {
    DoctorTest::SetUp();
    setenv("SUPERAGENT_DOCTOR_FS_ID", feishu_.app_id.c_str(), 1);
    setenv("SUPERAGENT_DOCTOR_FS_SECRET", feishu_.app_secret.c_str(), 1);
    setenv("SUPERAGENT_DOCTOR_FS_KEY", "encrypt-key-value", 1);
    Write("feishu-policy.yaml", "mode: observe\nsources:\n  feishu:\n    people: [ou_alice]\n    scopes:\n"
                                "      \"chat:oc_a\": { receive_all: true }\n      \"chat:oc_b\": { receive_all: false }\n");
    feishu_.ws_endpoint = {{"code", 0},
                           {"msg", "ok"},
                           {"data",
                            {{"URL", "wss://127.0.0.1:1/ws?device_id=d&service_id=1&ticket=SECRET-TICKET"},
                             {"ClientConfig", {{"PingInterval", 120}}}}}};
  }
  void TearDown() override {
    for (const char* n : {"SUPERAGENT_DOCTOR_FS_ID", "SUPERAGENT_DOCTOR_FS_SECRET", "SUPERAGENT_DOCTOR_FS_KEY"}) unsetenv(n);
    DoctorTest::TearDown();
  }
  superagent::Config WithFeishu() {
    superagent::Config c = Healthy();
    c.policy_file = (dir_ / "feishu-policy.yaml").string();
    c.feishu.enabled = true;
    c.feishu.api_url = feishu_.url();
    c.feishu.app_id_env = "SUPERAGENT_DOCTOR_FS_ID";
    c.feishu.app_secret_env = "SUPERAGENT_DOCTOR_FS_SECRET";
    c.feishu.encrypt_key_env = "SUPERAGENT_DOCTOR_FS_KEY";
    return c;
  }
  // Nothing doctor prints may hold a secret or the endpoint's ticket.
  void ExpectNoSecret(const std::map<std::string, app::DoctorCheck>& checks) {
    for (const auto& [name, c] : checks)
      for (const std::string& text : {c.detail, c.fix}) {
        EXPECT_THAT(text, Not(HasSubstr(feishu_.app_secret))) << name;
        EXPECT_THAT(text, Not(HasSubstr(feishu_.token))) << name;
        EXPECT_THAT(text, Not(HasSubstr("SECRET-TICKET"))) << name;
      }
  }

  FakeFeishu feishu_{SystemClock()};
};

TEST_F(FeishuDoctorTest, AWorkingFeishuAppPassesAndNamesItsBot) {
  auto checks = Run(WithFeishu());
  for (const char* name : {"policy", "feishu.token", "feishu.bot", "feishu.chat:oc_a", "feishu.chat:oc_b", "feishu.realtime"})
    EXPECT_EQ(checks[name].result, R::kOk) << name << ": " << checks[name].detail << " / " << checks[name].fix;
  EXPECT_EQ(checks.count("feishu"), 0u) << "the placeholder is gone once Feishu is enabled";
  EXPECT_THAT(checks["feishu.token"].detail, HasSubstr("tenant access token obtained for app " + feishu_.app_id));
  EXPECT_THAT(checks["feishu.bot"].detail, HasSubstr("superagent (open_id " + feishu_.bot_open_id + ")"));
  EXPECT_EQ(checks["feishu.realtime"].detail, "long connection endpoint answers");
  ExpectNoSecret(checks);
  // The history read is the cheap one: one page of one item from now, for each configured chat.
  int reads = 0;
  for (const auto& l : feishu_.log())
    if (l.path == "/open-apis/im/v1/messages") {
      ++reads;
      EXPECT_EQ(l.params.at("container_id_type"), "chat");
      EXPECT_EQ(l.params.at("page_size"), "1");
      EXPECT_TRUE(l.params.count("start_time"));
    }
  EXPECT_EQ(reads, 2);

  superagent::Config callback = WithFeishu();
  callback.feishu.realtime = "callback";
  checks = Run(callback);
  EXPECT_EQ(checks["feishu.realtime"].result, R::kOk);
  EXPECT_THAT(checks["feishu.realtime"].detail, HasSubstr("verified with SUPERAGENT_DOCTOR_FS_KEY"));

  // The command line shows the same, aligned like every other check.
  Write("superagent.yaml", "data_dir: data\npolicy_file: feishu-policy.yaml\nllm:\n  api_key_env: SUPERAGENT_OPS_UNSET\n"
                           "feishu:\n  enabled: true\n  api_url: " + feishu_.url() +
                           "\n  app_id_env: SUPERAGENT_DOCTOR_FS_ID\n  app_secret_env: SUPERAGENT_DOCTOR_FS_SECRET\n");
  RunResult out = RunProgram(SUPERAGENT_BINARY, {"doctor", "--config", Config()});
  EXPECT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_THAT(out.out, HasSubstr("feishu.bot             ok      superagent (open_id " + feishu_.bot_open_id));
  EXPECT_THAT(out.out, HasSubstr("feishu.chat:oc_a       ok      history readable"));
  EXPECT_THAT(out.out + out.err, Not(HasSubstr(feishu_.app_secret))) << "a secret was printed";
}

TEST_F(FeishuDoctorTest, EachFeishuMistakeFailsWithAFix) {
  unsetenv("SUPERAGENT_DOCTOR_FS_SECRET");
  auto checks = Run(WithFeishu());
  EXPECT_EQ(checks["feishu.token"].result, R::kFailed);
  EXPECT_THAT(checks["feishu.token"].detail, HasSubstr("environment variable SUPERAGENT_DOCTOR_FS_SECRET (feishu.app_secret_env) is not set"));
  EXPECT_THAT(checks["feishu.token"].fix, HasSubstr("EnvironmentFile"));
  for (const char* name : {"feishu.bot", "feishu.chats", "feishu.realtime"})
    EXPECT_EQ(checks[name].result, R::kSkipped) << name << ": reported once, not four times";
  EXPECT_TRUE(feishu_.log().empty()) << "nothing to ask Feishu without credentials";

  setenv("SUPERAGENT_DOCTOR_FS_SECRET", "not-the-secret", 1);
  checks = Run(WithFeishu());
  EXPECT_EQ(checks["feishu.token"].result, R::kFailed);
  EXPECT_THAT(checks["feishu.token"].detail, HasSubstr("code 10014"));
  EXPECT_THAT(checks["feishu.token"].fix, HasSubstr("Credentials & Basic Info"));
  EXPECT_THAT(checks["feishu.token"].detail + checks["feishu.token"].fix, Not(HasSubstr("not-the-secret")));
  EXPECT_EQ(checks["feishu.bot"].result, R::kSkipped);

  setenv("SUPERAGENT_DOCTOR_FS_SECRET", feishu_.app_secret.c_str(), 1);
  {
    auto lock = feishu_.Lock();
    feishu_.bot_activate_status = 0;
    feishu_.fail_container["oc_b"] = 400;  // the bot is not in chat B
    feishu_.ws_endpoint = {{"code", 1000040350}, {"msg", "exceed connection limit"}};
  }
  checks = Run(WithFeishu());
  EXPECT_EQ(checks["feishu.token"].result, R::kOk);
  EXPECT_EQ(checks["feishu.bot"].result, R::kFailed);
  EXPECT_THAT(checks["feishu.bot"].detail, HasSubstr("not activated (activate_status 0)"));
  EXPECT_THAT(checks["feishu.bot"].fix, HasSubstr("Bot capability"));
  EXPECT_EQ(checks["feishu.chat:oc_a"].result, R::kOk) << "one chat failing leaves the others checked";
  EXPECT_EQ(checks["feishu.chat:oc_b"].result, R::kFailed);
  EXPECT_THAT(checks["feishu.chat:oc_b"].detail, HasSubstr("HTTP 400 code 230001"));
  EXPECT_THAT(checks["feishu.chat:oc_b"].fix, HasSubstr("add the bot to chat oc_b"));
  EXPECT_EQ(checks["feishu.realtime"].result, R::kFailed);
  EXPECT_THAT(checks["feishu.realtime"].fix, HasSubstr("50 long connections per app"));
  ExpectNoSecret(checks);

  superagent::Config c = WithFeishu();
  c.feishu.realtime = "callback";
  c.feishu.encrypt_key_env = "SUPERAGENT_DOCTOR_FS_UNSET";
  c.policy_file = (dir_ / "policy.yaml").string();  // no chat rows
  checks = Run(c);
  EXPECT_EQ(checks["feishu.realtime"].result, R::kFailed);
  EXPECT_THAT(checks["feishu.realtime"].detail, HasSubstr("every callback at /hooks/feishu is refused (401)"));
  EXPECT_THAT(checks["feishu.realtime"].fix, HasSubstr("Encrypt Key"));
  EXPECT_EQ(checks["feishu.chats"].result, R::kSkipped);
  EXPECT_THAT(checks["feishu.chats"].fix, HasSubstr("chat:<chat_id>"));

  c.feishu.api_url = "http://127.0.0.1:1";  // nothing listens there
  checks = Run(c);
  EXPECT_EQ(checks["feishu.token"].result, R::kFailed);
  EXPECT_THAT(checks["feishu.token"].fix, HasSubstr("feishu.api_url (http://127.0.0.1:1)"));
}

}  // namespace
}  // namespace superagent::testing
