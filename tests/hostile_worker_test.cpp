// A hostile worker (issue 19): commands a model chose after reading strangers' text try to take
// the daemon's secrets and data — through the built-in worker's shell, the command executor and
// the prepare command alike — and fail at each, while a normal Ticket still builds, runs its
// tests and is pushed. Real processes, the real bubblewrap sandbox, loopback only.
//
// "The daemon" here is this test process: its environment gets planted secrets whose variable
// names the config's *_env keys hold, its data_dir is the test's directory (the database,
// another Ticket's worktree), and a config directory holds a secrets file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <httplib.h>

#include "app/config.h"
#include "app/wiring.h"
#include "daemon_process.h"
#include "exec_fixture.h"
#include "fake_chat_server.h"
#include "run_binary.h"
#include "superagent/exec.h"
#include "superagent/panel.h"
#include "superagent/sandbox.h"
#include "superagent/views.h"
#include "superagent/worker.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

// Secrets as a deployment has them: variable NAME (held by a *_env key) and value.
const std::vector<std::pair<std::string, std::string>> kSecrets = {
    {"SUPERAGENT_HOSTILE_GH", "ghp_HOSTILEgithubTOKEN0123456789abcdef"},
    {"SUPERAGENT_HOSTILE_HOOK", "hook-secret-HOSTILE-4711"},
    {"SUPERAGENT_HOSTILE_LLM", "sk-HOSTILEmodelKEY0123456789"},
    {"SUPERAGENT_HOSTILE_PANEL", "panel-password-HOSTILE-密码"},
    {"SUPERAGENT_HOSTILE_FEISHU", "feishuSECRET-HOSTILE-0123"},
};

// A loopback TCP listener of "the daemon" (the panel, say): the kernel completes connections
// into its backlog, so a client that can reach it connects.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 64);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class HostileWorkerTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    for (const auto& [name, value] : kSecrets) ASSERT_EQ(::setenv(name.c_str(), value.c_str(), 1), 0);
    config_dir_ = dir_ / "etc-superagent";
    std::filesystem::create_directories(config_dir_);
    {
      std::ofstream(config_dir_ / "secrets.env") << "SUPERAGENT_HOSTILE_GH=" << kSecrets[0].second << "\n";
      std::ofstream(config_dir_ / "superagent.yaml") << "data_dir: ..\n";
    }
    config_.data_dir = dir_.string();
    config_.source_file = (config_dir_ / "superagent.yaml").string();
    config_.github.token_env = kSecrets[0].first;
    config_.github.webhook_secret_env = kSecrets[1].first;
    config_.llm.api_key_env = kSecrets[2].first;
    config_.panel.token_env = kSecrets[3].first;
    config_.feishu.app_secret_env = kSecrets[4].first;
    config_.execution.network = false;
    // Polls advance the exec clock by their length but take a quarter of it in real time, so
    // the 5 s foreground budget is 1.25 s of real time: enough for a sandboxed command to
    // finish without ever becoming a background job here.
    sleeper_ = [this](TimeMs ms) {
      exec_clock_.Advance(ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(std::max<TimeMs>(1, ms / 4)));
    };
    MakeRunner();
    // Another Ticket's worktree, with its private work in it.
    auto other = workspaces_->Prepare(99);
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    other_dir_ = other->dir;
    std::ofstream(std::filesystem::path(other_dir_) / "NOTES.md") << "other ticket's private work\n";
  }

  void TearDown() override {
    for (const auto& [name, value] : kSecrets) ::unsetenv(name.c_str());
    ::unsetenv("SUPERAGENT_TEAM_CLI_KEY");
    ExecTest::TearDown();
  }

  // The runner, workspaces and services as the daemon wires them from config_.
  void MakeRunner(const std::string& prepare = "") {
    exec::PosixRunnerOptions ro;
    ro.sandbox = app::SandboxPolicyFor(config_);
    auto decision = exec::DecideSandbox("on", exec::ProbeSandbox(ro.sandbox));
    ASSERT_TRUE(decision.ok()) << "this suite needs a host that can sandbox: " << decision.status().ToString();
    ro.sandbox.enabled = decision->enabled;
    ro.sandbox.hidden.insert(ro.sandbox.hidden.end(), extra_hidden_.begin(), extra_hidden_.end());
    services_.reset();
    workspaces_.reset();
    runner_ = exec::MakePosixProcessRunner(ro);
    exec::WorkspaceOptions wo;
    wo.root = (dir_ / "work").string();
    wo.remote = origin_.string();
    wo.prepare = prepare;
    workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
    services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
  }

  // Every theft a worker tries, in one shell script; each section says what it got.
  std::string Attack() const {
    const std::string port = std::to_string(listener_.port());
    return "echo '== env'; env; "
           "echo '== proc'; cat /proc/" + std::to_string(::getpid()) + "/environ; "
           "echo '== db'; head -c 16 " + (dir_ / "superagent.db").string() + "; echo; "
           "echo '== other'; cat " + other_dir_ + "/NOTES.md; "
           "echo '== secrets'; cat " + (config_dir_ / "secrets.env").string() + "; "
           "echo '== config'; ls " + config_dir_.string() + "; "
           "echo '== net'; python3 -c \"import socket; socket.create_connection(('127.0.0.1', " + port +
           "), 2); print('CONNECTED')\" 2>&1 | tail -1; "
           "echo '== shadow'; cat /etc/shadow 2>/dev/null | wc -c; "
           "echo '== caps'; grep CapEff /proc/self/status; "
           // A link planted in the worktree, pointing at the daemon's database.
           "echo '== link'; ln -sf " + (dir_ / "superagent.db").string() + " stolen-link; head -c 16 stolen-link; echo; "
           // Its own push, past the daemon: to the origin straight, and through the clone's remote.
           "echo '== push'; git push -q " + origin_.string() + " HEAD:refs/heads/stolen 2>&1 | tail -1; "
           "git push -q origin HEAD:refs/heads/stolen 2>&1 | tail -1; "
           "echo '== end'";
  }

  // The host itself can do everything Attack tries, so a failure inside is the sandbox's work,
  // not a wrong path.
  void ExpectTheHostCanDoAllOfIt() {
    EXPECT_TRUE(std::filesystem::exists("/proc/" + std::to_string(::getpid()) + "/environ"));
    EXPECT_EQ(ReadText(dir_ / "superagent.db").substr(0, 15), "SQLite format 3");
    EXPECT_EQ(ReadText(std::filesystem::path(other_dir_) / "NOTES.md"), "other ticket's private work\n");
    EXPECT_THAT(ReadText(config_dir_ / "secrets.env"), HasSubstr(kSecrets[0].second));
    EXPECT_TRUE(Listening(listener_.port()));
    if (::geteuid() == 0) {
      EXPECT_FALSE(ReadText("/etc/shadow").empty());
    }
  }

  // What a worker got from Attack: nothing.
  void ExpectNothingTaken(const std::string& out) {
    ASSERT_THAT(out, HasSubstr("== end")) << "the attack did not run to its end:\n" << out;
    for (const auto& [name, value] : kSecrets) {
      EXPECT_THAT(out, Not(HasSubstr(value))) << name << " reached the worker";
      EXPECT_THAT(out, Not(HasSubstr(name + "="))) << name << " reached the worker";
    }
    EXPECT_THAT(out, HasSubstr("/proc/" + std::to_string(::getpid()) + "/environ: No such file or directory"));
    EXPECT_THAT(out, Not(HasSubstr("SQLite format")));
    EXPECT_THAT(out, HasSubstr("superagent.db' for reading: No such file or directory"));
    EXPECT_THAT(out, Not(HasSubstr("other ticket's private work")));
    EXPECT_THAT(out, HasSubstr("NOTES.md: No such file or directory"));
    EXPECT_THAT(out, HasSubstr("secrets.env: No such file or directory"));
    EXPECT_THAT(out, HasSubstr("cannot access '" + config_dir_.string() + "'"));
    EXPECT_THAT(out, Not(HasSubstr("CONNECTED")));
    EXPECT_THAT(out, HasSubstr("Error"));  // ConnectionRefusedError / OSError: unreachable
    // Password hashes stay hidden even from a worker of a daemon run as root (the files' owner).
    EXPECT_THAT(out, HasSubstr("== shadow\n0\n"));
    // Even a daemon run as root gives its workers no capability (no mount, no mknod).
    EXPECT_THAT(out, HasSubstr("CapEff:\t0000000000000000"));
    EXPECT_THAT(out, HasSubstr("cannot open 'stolen-link' for reading: No such file or directory"));
    // A push of its own reaches nothing: the origin has no such branch.
    EXPECT_NE(std::system(("git -C " + origin_.string() + " rev-parse -q --verify refs/heads/stolen >/dev/null").c_str()), 0)
        << "a worker pushed on its own:\n" << out;
  }

  std::unique_ptr<exec::Executor> Builtin(FakeChatServer& model) {
    llm::ChatOptions co;
    co.base_url = model.base_url();
    co.api_key = model.api_key();
    chat_http_ = MakeHttpClient("superagent-test");
    chat_ = std::make_unique<llm::OpenAiChatClient>(co, chat_http_.get(), &exec_clock_, [](TimeMs) {});
    exec::BuiltinExecutorOptions bo;
    bo.model = "deepseek-chat";
    return exec::MakeBuiltinExecutor(bo, engine_.get(), views_.get(), chat_.get(), services_.get());
  }

  void RunTurns(exec::Scheduler& s) {
    auto started = s.Tick();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    s.WaitForTurns();
    ASSERT_TRUE(s.Tick().ok());
  }

  static std::string ShellCall(const std::string& command) { return json{{"command", command}}.dump(); }

  Config config_;
  std::filesystem::path config_dir_;
  std::string other_dir_;
  std::vector<std::string> extra_hidden_;
  Listener listener_;
  std::unique_ptr<HttpClient> chat_http_;
  std::unique_ptr<llm::OpenAiChatClient> chat_;
};

TEST_F(HostileWorkerTest, TheBuiltinShellGetsNoSecretNoDaemonDataAndNoNetwork) {
  ExpectTheHostCanDoAllOfIt();
  AcceptedTicket("c1");
  FakeChatServer model;
  model.Push(model.ToolCalls({{"shell", ShellCall(Attack())}}));
  model.Push(model.ToolCalls({{"report", R"({"stage":"blocked","summary":"I could not take anything."})"}}));
  auto executor = Builtin(model);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  auto requests = model.requests();
  ASSERT_EQ(requests.size(), 2u);
  // What the shell printed is what the model (and the transcript, and the panel) would see.
  const std::string seen = requests[1]["messages"].back()["content"];
  EXPECT_THAT(seen, HasSubstr("exit code 0"));
  ExpectNothingTaken(seen);
}

TEST_F(HostileWorkerTest, TheCommandExecutorGetsNoSecretNoDaemonDataAndNoNetwork) {
  ExpectTheHostCanDoAllOfIt();
  const TicketId id = AcceptedTicket("c1");
  auto executor = exec::MakeCommandExecutor(
      {"(" + Attack() + ") > findings.txt 2>&1; echo '{\"stage\":\"blocked\",\"summary\":\"nothing taken\"}'"},
      engine_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  ExpectNothingTaken(ReadText(workspaces_->DirFor(id) + "/findings.txt"));
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
}

TEST_F(HostileWorkerTest, ThePrepareCommandGetsNoSecretNoDaemonDataAndNoNetwork) {
  ExpectTheHostCanDoAllOfIt();
  MakeRunner("(" + Attack() + ") > {dir}/findings.txt 2>&1");
  auto w = workspaces_->Prepare(7);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ExpectNothingTaken(ReadText(w->dir + "/findings.txt"));
  // And the workspace is there: a checkout of the origin on the Ticket's branch.
  EXPECT_EQ(ReadText(w->dir + "/README.md"), "Hello\nThere is teh typo.\n");
}

// The control of the network check above: the same attempt with execution.network: on connects,
// so "no network" is the namespace's doing.
TEST_F(HostileWorkerTest, WithTheNetworkOnTheSameCommandReachesTheListener) {
  config_.execution.network = true;
  MakeRunner();
  exec::Jobs jobs(runner_.get(), &exec_clock_, sleeper_, (dir_ / "jobs").string(), workspaces_->ScopeFor(99));
  auto r = jobs.Run(Attack(), other_dir_, "", 60'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->out, HasSubstr("CONNECTED"));
  EXPECT_THAT(r->out, Not(HasSubstr(kSecrets[0].second)));
}

// A normal Ticket in the sandbox: it writes files, runs git and python3 in its worktree, has a
// private HOME and /tmp, and the daemon commits and pushes its work.
TEST_F(HostileWorkerTest, ANormalTicketStillBuildsRunsItsTestsAndIsPushed) {
  const TicketId id = AcceptedTicket("c1");
  FakeChatServer model;
  model.Push(model.ToolCalls({{"shell", ShellCall(
      "sed -i 's/teh typo/the typo/' README.md && ./test.sh && echo built > 构建.txt && git -c core.quotePath=false status --short && "
      "python3 -c 'print(6 * 7)' && echo \"home=$HOME tmp=$TMPDIR\" && echo x > \"$HOME/.cache-me\" && "
      "echo y > /tmp/scratch && cat /tmp/scratch && git log --oneline -1 >/dev/null && echo git-log-ok")}}));
  model.Push(model.ToolCalls({{"shell", ShellCall("cat \"$HOME/.cache-me\" /tmp/scratch")}}));
  model.Push(model.ToolCalls({{"commit_and_push", R"({"message":"Fix the typo"})"}}));
  model.Push(model.ToolCalls({{"report", R"({"stage":"blocked","summary":"done"})"}}));
  auto executor = Builtin(model);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  auto requests = model.requests();
  ASSERT_EQ(requests.size(), 4u);
  auto tool_text = [&](std::size_t i) { return requests[i]["messages"].back()["content"].get<std::string>(); };
  const std::string first = tool_text(1);
  EXPECT_THAT(first, HasSubstr("exit code 0"));
  EXPECT_THAT(first, HasSubstr(" M README.md"));
  EXPECT_THAT(first, HasSubstr("构建.txt"));
  EXPECT_THAT(first, HasSubstr("\n42\n"));
  EXPECT_THAT(first, HasSubstr("git-log-ok"));
  const auto [home, tmp] = exec::ScopeDirs(app::SandboxPolicyFor(config_), workspaces_->ScopeFor(id));
  EXPECT_THAT(first, HasSubstr("home=" + home + " tmp=/tmp"));
  // HOME and /tmp persist between the Ticket's commands, and are the Ticket's own directories.
  EXPECT_THAT(tool_text(2), HasSubstr("exit code 0\nstdout:\nx\ny\n"));
  EXPECT_EQ(ReadText(tmp + "/scratch"), "y\n");
  EXPECT_THAT(tool_text(3), HasSubstr("pushed superagent/ticket-" + std::to_string(id)));
  EXPECT_EQ(OnOrigin("superagent/ticket-" + std::to_string(id), "README.md"), "Hello\nThere is the typo.\n");
  EXPECT_EQ(OnOrigin("superagent/ticket-" + std::to_string(id), "构建.txt"), "built\n");
}

// The panel from inside a worker's command (issue 19): with the network shared (the default) the
// worker reaches the real panel on loopback, but it has not the panel's password (its variable is
// not in a worker's environment) nor the token file (data_dir is hidden), so every read and every
// command — with no CSRF token or a made-up one — is refused, and nothing changes.
TEST_F(HostileWorkerTest, ThePanelRefusesAWorkerWithOrWithoutACsrfToken) {
  config_.execution.network = true;
  MakeRunner();
  const TicketId id = AcceptedTicket("c1");
  auto views = Views::Open((dir_ / "superagent.db").string());
  ASSERT_TRUE(views.ok()) << views.status().ToString();
  httplib::Server server;
  // panel.token_env names SUPERAGENT_HOSTILE_PANEL: a fixed password
  panel::PanelContext ctx = app::PanelContextFor(config_);
  ctx.engine = engine_.get();
  ctx.views = views->get();
  auto panel = panel::InstallRoutes(server, ctx);
  ASSERT_TRUE(panel.ok()) << panel.status().ToString();
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { server.listen_after_bind(); });
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  std::ofstream(std::filesystem::path(other_dir_) / "panel_attack.py")
      << "import os, urllib.request\n"
         "def call(method, path, body=None, headers={}):\n"
         "    r = urllib.request.Request('" << base << "' + path, data=body, method=method, headers=headers)\n"
         "    try:\n"
         "        with urllib.request.urlopen(r, timeout=5) as resp: return resp.status\n"
         "    except urllib.error.HTTPError as e: return e.code\n"
         "json = {'Content-Type': 'application/json', 'Origin': '" << base << "'}\n"
         "stop = '/api/tickets/" << id << "/stop'\n"
         "print('session', call('GET', '/api/session'))\n"
         "print('needs', call('GET', '/api/needs'))\n"
         "print('stop', call('POST', stop, b'{\"confirm\":true}', json))\n"
         "print('stop-csrf', call('POST', stop, b'{\"confirm\":true}', dict(json, **{'X-CSRF-Token': 'a' * 64})))\n"
         "print('stop-basic', call('POST', stop, b'{\"confirm\":true}', dict(json, Authorization='Basic d29ya2VyOg==')))\n"
         "print('password', os.environ.get('SUPERAGENT_HOSTILE_PANEL', 'unset'))\n";
  exec::Jobs jobs(runner_.get(), &exec_clock_, sleeper_, (dir_ / "jobs").string(), workspaces_->ScopeFor(99));
  auto r = jobs.Run("python3 panel_attack.py 2>&1", other_dir_, "", 60'000);
  if (panel.ok()) (*panel)->Stop();
  server.stop();
  serving.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "session 401\nneeds 401\nstop 401\nstop-csrf 401\nstop-basic 401\npassword unset\n");
  EXPECT_NE(views_->GetTicket(id)->stage, Stage::kEnded);
  EXPECT_TRUE(views_->GetMandate(id)->ended_as.empty()) << "a worker stopped a Ticket through the panel";
}

TEST_F(HostileWorkerTest, AVariableListedInExecutionEnvPassesAndNoOtherDoes) {
  ASSERT_EQ(::setenv("SUPERAGENT_TEAM_CLI_KEY", "team-cli-key-1234", 1), 0);
  config_.execution.env = {"SUPERAGENT_TEAM_CLI_KEY"};
  MakeRunner();
  exec::Jobs jobs(runner_.get(), &exec_clock_, sleeper_, (dir_ / "jobs").string(), workspaces_->ScopeFor(99));
  auto r = jobs.Run("echo \"team=$SUPERAGENT_TEAM_CLI_KEY gh=${SUPERAGENT_HOSTILE_GH:-unset}\"", other_dir_, "", 60'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "team=team-cli-key-1234 gh=unset\n");
  // Listing a secret's variable is the team's explicit choice: then it passes (and `check` warns).
  config_.execution.env = {kSecrets[2].first};
  MakeRunner();
  exec::Jobs jobs2(runner_.get(), &exec_clock_, sleeper_, (dir_ / "jobs").string(), workspaces_->ScopeFor(99));
  r = jobs2.Run("echo \"llm=$SUPERAGENT_HOSTILE_LLM team=${SUPERAGENT_TEAM_CLI_KEY:-unset}\"", other_dir_, "", 60'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "llm=" + kSecrets[2].second + " team=unset\n");
}

// Secrets below a directory the sandbox shows read-only (the secrets file below /etc) are hidden
// one by one: a file reads as empty, a directory as empty.
TEST_F(HostileWorkerTest, HiddenPathsBelowTheShownSystemAreEmptyInside) {
  ASSERT_FALSE(ReadText("/etc/hostname").empty());
  ASSERT_FALSE(std::filesystem::is_empty("/etc/default"));
  extra_hidden_ = {"/etc/hostname", "/etc/default"};
  MakeRunner();
  exec::Jobs jobs(runner_.get(), &exec_clock_, sleeper_, (dir_ / "jobs").string(), workspaces_->ScopeFor(99));
  auto r = jobs.Run("echo \"[$(cat /etc/hostname)]\"; ls -A /etc/default | wc -l; cat /etc/passwd | head -c 5", other_dir_,
                    "", 60'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "[]\n0\nroot:") << r->err;
}

// Process-tree containment inside the sandbox, with cgroups off: a grandchild that left the
// process group with setsid still dies with its job, because the sandbox's pid namespace goes
// with the bwrap the group kill reaches.
TEST_F(HostileWorkerTest, KillingASandboxedJobKillsAGrandchildThatCalledSetsid) {
  config_.execution.network = true;  // the host looks at the listener from outside
  exec::PosixRunnerOptions ro;
  ro.cgroup_parent = "off";
  ro.sandbox = app::SandboxPolicyFor(config_);
  ro.sandbox.enabled = true;
  auto runner = exec::MakePosixProcessRunner(ro);
  exec::Jobs jobs(runner.get(), &exec_clock_, sleeper_, (dir_ / "jobs").string(), workspaces_->ScopeFor(99));
  const int port = FreePort();
  auto r = jobs.Run("setsid sh -c " + exec::ShellQuote(ListenerCommand(port)) + " & wait", other_dir_, "", 0);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->background);
  ASSERT_TRUE(Eventually([&] { return Listening(port); })) << "the grandchild never listened";
  ASSERT_TRUE(jobs.Kill(r->job).ok());
  EXPECT_TRUE(Eventually([&] { return !Listening(port); })) << "the setsid grandchild outlived its job";
}

// With cgroups (root here, or systemd's Delegate=yes): the cgroup is joined before bwrap
// starts, so the sandboxed command and all it forks are in its job's cgroup, and the job's kill
// empties it.
TEST_F(HostileWorkerTest, ASandboxedCommandRunsInsideItsJobsCgroup) {
  exec::PosixRunnerOptions ro;
  ro.sandbox = app::SandboxPolicyFor(config_);
  ro.sandbox.enabled = true;
  ro.nice = 5;  // the whole wrapper chain: cgroup join, nice, bwrap
  auto runner = exec::MakePosixProcessRunner(ro);
  if (!runner->containment().cgroups) GTEST_SKIP() << "no cgroups here: " << runner->containment().detail;
  exec::Jobs jobs(runner.get(), &exec_clock_, sleeper_, (dir_ / "jobs").string(), workspaces_->ScopeFor(99));
  auto r = jobs.Run("cat /proc/self/cgroup; nice", other_dir_, "", 60'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->out, HasSubstr("/superagent-" + std::to_string(::getpid()) + "/job-")) << r->err;
  EXPECT_THAT(r->out, HasSubstr("\n5\n")) << "the niceness reaches the command inside";
}

// ---- the pieces, without processes ----

TEST(SandboxTest, AWorkersEnvironmentIsBuiltFromTheAllowList) {
  exec::SandboxPolicy p;
  p.enabled = true;
  p.pass_env = {"TEAM_KEY", "UNSET_ONE"};
  const std::map<std::string, std::string> daemon = {
      {"PATH", "/usr/bin:/bin"}, {"LANG", "zh_CN.UTF-8"}, {"LC_ALL", "C.UTF-8"}, {"TERM", "xterm"},
      {"TZ", "Asia/Shanghai"},   {"HOME", "/root"},       {"GITHUB_TOKEN", "ghp_x"}, {"TEAM_KEY", "k"},
      {"SSH_AUTH_SOCK", "/run/ssh"}, {"LD_PRELOAD", "/evil.so"}};
  const auto env = exec::WorkerEnv(p, daemon, "/w/home", "/w/tmp", {{"GIT_TERMINAL_PROMPT", "0"}});
  std::vector<std::string> expected = {"GIT_TERMINAL_PROMPT=0", "HOME=/w/home", "LANG=zh_CN.UTF-8",
                                       "LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin", "TEAM_KEY=k", "TERM=xterm",
                                       "TMPDIR=/tmp", "TZ=Asia/Shanghai"};
  // A root daemon's worker is another uid, for whose git the trees are safe (sandbox.h).
  if (::geteuid() == 0)
    expected.insert(expected.begin(), {"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*"});
  EXPECT_EQ(env, expected);
  // Unsandboxed, TMPDIR is the private directory's real path; no PATH gets a default.
  p.enabled = false;
  EXPECT_EQ(exec::WorkerEnv(p, {}, "/h", "/t", {}),
            (std::vector<std::string>{"HOME=/h", "PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=/t"}));
  // The daemon's own commands: the allow-list and its HOME, plus what the caller adds.
  EXPECT_EQ(exec::DaemonCommandEnv(daemon, {{"GIT_CONFIG_COUNT", "1"}}),
            (std::vector<std::string>{"GIT_CONFIG_COUNT=1", "HOME=/root", "LANG=zh_CN.UTF-8", "LC_ALL=C.UTF-8",
                                      "PATH=/usr/bin:/bin", "TERM=xterm", "TZ=Asia/Shanghai"}));
}

TEST(SandboxTest, TheArgvShowsTheScopeAndHidesWhatIsBelowTheSystem) {
  exec::SandboxPolicy p;
  p.enabled = true;
  p.network = false;
  p.hidden = {"/etc/passwd", "/etc/default", "/nonexistent/dir", "/var/lib/superagent"};
  exec::WorkerScope s{"ticket-3", {"/data/work/tickets/ticket-3"}, {"/data/work/repo.git"}};
  s.writable = {std::filesystem::temp_directory_path().string()};  // one that exists
  const auto a = exec::SandboxArgv(p, s, "/w/home", "/w/tmp", "/data/x", {"/bin/sh", "-c", "make"});
  auto has = [&](std::vector<std::string> seq) { return std::search(a.begin(), a.end(), seq.begin(), seq.end()) != a.end(); };
  EXPECT_EQ(a.front(), "bwrap");
  EXPECT_TRUE(has({"--die-with-parent"}));
  EXPECT_TRUE(has({"--unshare-pid"}));
  EXPECT_TRUE(has({"--new-session"}));
  EXPECT_TRUE(has({"--unshare-net"}));
  EXPECT_TRUE(has({"--ro-bind", "/usr", "/usr"}));
  EXPECT_TRUE(has({"--ro-bind", "/etc", "/etc"}));
  EXPECT_TRUE(has({"--ro-bind", "/dev/null", "/etc/passwd"}));
  EXPECT_TRUE(has({"--tmpfs", "/etc/default"}));
  EXPECT_FALSE(has({"/nonexistent/dir"}));
  EXPECT_FALSE(has({"/var/lib/superagent"})) << "not below a shown directory: invisible anyway";
  EXPECT_TRUE(has({"--proc", "/proc", "--dev", "/dev"}));
  EXPECT_TRUE(has({"--bind", "/w/tmp", "/tmp"}));
  EXPECT_TRUE(has({"--bind", s.writable[0], s.writable[0]}));
  EXPECT_FALSE(has({"/data/work/repo.git"})) << "a directory that does not exist is not shown";
  if (::geteuid() == 0) {  // a root daemon's worker becomes nobody first (sandbox_worker_uid_test.cpp)
    EXPECT_TRUE(has({"--chdir", "/data/x", "--", "/usr/bin/setpriv", "--reuid=65534"}));
  } else {
    EXPECT_TRUE(has({"--chdir", "/data/x", "--", "/bin/sh", "-c", "make"}));
  }
  EXPECT_TRUE(has({"/bin/sh", "-c", "make"}));
  // The hidden ones come after /etc is shown, or they would be covered by it.
  // (Both present first: std::find's end() would make a missing one look "later".)
  const auto etc = std::find(a.begin(), a.end(), "/etc"), passwd = std::find(a.begin(), a.end(), "/etc/passwd");
  ASSERT_NE(etc, a.end());
  ASSERT_NE(passwd, a.end());
  EXPECT_LT(etc - a.begin(), passwd - a.begin());
  p.network = true;
  EXPECT_FALSE(exec::SandboxArgv(p, s, "/h", "/t", "", {"true"}) == a);
  for (const auto& w : exec::SandboxArgv(p, s, "/h", "/t", "", {"true"})) EXPECT_NE(w, "--unshare-net");
}

TEST(SandboxTest, ScopeNamesCannotLeaveTheStateDirectory) {
  exec::SandboxPolicy p;
  p.state_dir = "/data/work/sandbox";
  EXPECT_EQ(exec::ScopeDirs(p, {"ticket-7", {}, {}}).first, "/data/work/sandbox/ticket-7/home");
  EXPECT_EQ(exec::ScopeDirs(p, {"../../etc", {}, {}}).second, "/data/work/sandbox/.._.._etc/tmp");
  EXPECT_EQ(exec::ScopeDirs(p, {"..", {}, {}}).first, "/data/work/sandbox/default/home");
}

TEST(SandboxTest, TheModeDecidesAgainstWhatTheHostSupports) {
  const exec::SandboxSupport yes{true, "bwrap works"}, no{false, "bwrap is not installed"};
  auto on_yes = exec::DecideSandbox("on", yes);
  ASSERT_TRUE(on_yes.ok());
  EXPECT_TRUE(on_yes->enabled);
  // "on" where the host cannot: the daemon refuses to start, saying how to fix it.
  auto on_no = exec::DecideSandbox("on", no);
  ASSERT_FALSE(on_no.ok());
  EXPECT_THAT(on_no.status().message(), HasSubstr("bwrap is not installed"));
  EXPECT_THAT(on_no.status().message(), HasSubstr("apt-get install bubblewrap"));
  EXPECT_THAT(on_no.status().message(), HasSubstr("set execution.sandbox: off to run workers WITHOUT a sandbox"));
  EXPECT_FALSE(exec::DecideSandbox("auto", yes).ok()) << "only on and off exist";
  auto off = exec::DecideSandbox("off", yes);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->enabled);
  EXPECT_THAT(off->detail, HasSubstr("WITHOUT a sandbox"));
}

TEST(SandboxTest, AMissingBwrapIsReportedWithTheFix) {
  exec::SandboxPolicy p;
  p.bwrap = "superagent-no-such-bwrap";
  const exec::SandboxSupport s = exec::ProbeSandbox(p);
  EXPECT_FALSE(s.supported);
  EXPECT_THAT(s.detail, HasSubstr("superagent-no-such-bwrap is not installed"));
}

// `check` warns when execution.env hands a worker a variable a *_env key names as a secret.
TEST(SandboxCheckTest, CheckWarnsWhenExecutionEnvNamesASecretsVariable) {
  const auto dir = std::filesystem::temp_directory_path() / ("superagent-sandbox-check-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "superagent.yaml").string();
  std::ofstream(path) << "llm:\n  api_key_env: ACME_LLM_KEY\nexecution:\n  sandbox: on\n  network: off\n"
                         "  env: [TEAM_CLI_KEY, ACME_LLM_KEY, GITHUB_TOKEN]\n";
  RunResult r = RunBinary({"check", "--config", path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("warning: execution.env passes ACME_LLM_KEY (the daemon's llm.api_key_env)"));
  EXPECT_THAT(r.out, HasSubstr("warning: execution.env passes GITHUB_TOKEN (the daemon's github.token_env)"));
  EXPECT_THAT(r.out, Not(HasSubstr("passes TEAM_CLI_KEY")));
  std::ofstream(path) << "execution:\n  env: [TEAM_CLI_KEY]\n";
  r = RunBinary({"check", "--config", path});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("warning:")));
  std::filesystem::remove_all(dir);
}

TEST(SandboxCheckTest, TheSandboxKeysAreParsedAndBadValuesNamed) {
  std::vector<Problem> problems;
  auto c = ParseConfig("execution:\n  sandbox: on\n  network: off\n  env: [A_KEY]\n", "x.yaml", &problems);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->execution.sandbox, "on");
  EXPECT_FALSE(c->execution.network);
  EXPECT_EQ(c->execution.env, std::vector<std::string>{"A_KEY"});
  EXPECT_EQ(DefaultConfig().execution.sandbox, "on");
  EXPECT_TRUE(DefaultConfig().execution.network);
  problems.clear();
  EXPECT_FALSE(ParseConfig("execution:\n  sandbox: maybe\n  network: sometimes\n  env: [\"not a name\", ghp_abcdef0123]\n",
                           "x.yaml", &problems)
                   .has_value());
  std::string all;
  for (const Problem& p : problems) all += p.ToString() + "\n";
  EXPECT_THAT(all, HasSubstr("execution.sandbox: must be on or off"));
  EXPECT_THAT(all, HasSubstr("execution.network: must be on or off"));
  EXPECT_THAT(all, HasSubstr("execution.env[0]: must be an environment variable name"));
  EXPECT_THAT(all, HasSubstr("execution.env[1]: this looks like a secret value"));
  EXPECT_THAT(all, Not(HasSubstr("ghp_abcdef0123")));
}

// serve on a host that cannot sandbox (here: no bwrap in PATH): `on` refuses to start with the
// fix (also when the config says nothing: on is the default); `off` starts, saying loudly that
// workers run without a sandbox.
TEST(SandboxServeTest, WhereTheHostCannotSandboxOnRefusesToStartAndOffSaysSo) {
  const auto dir = std::filesystem::temp_directory_path() / ("superagent-sandbox-serve-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "empty-bin");
  const std::string config = (dir / "superagent.yaml").string();
  auto write_config = [&](const std::string& mode) {
    std::ofstream(config) << "data_dir: data\npanel:\n  listen: 127.0.0.1:" << FreeLoopbackPort()
                          << "\nexecution:\n  executor: command\n  command: ./run.sh\n  git_remote: "
                          << (dir / "origin.git").string() << "\n  sandbox: " << mode << "\n";
  };
  // bwrap is looked up in the daemon's PATH, which has nothing in it.
  const std::string empty_path = (dir / "empty-bin").string();

  for (const std::string mode : {"on", ""}) {
    write_config(mode);
    if (mode.empty()) {  // no sandbox key at all
      std::ofstream(config) << "data_dir: data\npanel:\n  listen: 127.0.0.1:" << FreeLoopbackPort()
                            << "\nexecution:\n  executor: command\n  command: ./run.sh\n  git_remote: "
                            << (dir / "origin.git").string() << "\n";
    }
    RunOptions o;
    o.env_set = {{"PATH", empty_path}};
    o.timeout_ms = 20'000;
    RunResult on = RunBinary({"serve", "--config", config}, o);
    EXPECT_NE(on.exit_code, 0) << on.err;
    EXPECT_THAT(on.err, HasSubstr("execution.sandbox: on, but this host cannot sandbox: bwrap is not installed"));
    EXPECT_THAT(on.err, HasSubstr("apt-get install bubblewrap"));
    EXPECT_THAT(on.err, HasSubstr("set execution.sandbox: off"));
    EXPECT_THAT(on.err, Not(HasSubstr("ready")));
  }

  for (const std::string mode : {"off"}) {
    write_config(mode);
    const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", empty_path.c_str(), 1);
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", config});
    ::setenv("PATH", saved.c_str(), 1);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    EXPECT_THAT(d.log(), HasSubstr("sandbox mode=OFF")) << mode;
    EXPECT_THAT(d.log(), HasSubstr("WITHOUT a sandbox")) << mode;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace superagent::testing
