// Processes and shell jobs: own process groups (no orphan left listening), the 5-second move to
// the background, and time limits on the injected clock.
#include <gtest/gtest.h>

#include "exec_fixture.h"
#include "superagent/text.h"

namespace superagent::testing {
namespace {

using exec::Jobs;

class ExecProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("superagent-proc-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    exec::PosixRunnerOptions ro;
    ro.sandbox.state_dir = (dir_ / "sandbox").string();  // the shells' private HOMEs, removed with dir_
    runner_ = exec::MakePosixProcessRunner(ro);
    sleeper_ = [this](TimeMs ms) {
      clock_.Advance(ms);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    };
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  SteppingClock clock_;
  std::unique_ptr<exec::ProcessRunner> runner_;
  exec::Sleeper sleeper_;
};

TEST_F(ExecProcessTest, RunToCompletionGivesExitCodeOutputAndStdin) {
  exec::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "cat; echo oops >&2; pwd; exit 7"};
  spec.cwd = dir_.string();
  spec.stdin_text = "from stdin\n";
  auto r = exec::RunToCompletion(*runner_, spec, &clock_, sleeper_, 60'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->out, "from stdin\n" + std::filesystem::canonical(dir_).string() + "\n");
  EXPECT_EQ(r->err, "oops\n");
}

TEST_F(ExecProcessTest, AMissingProgramOrDirectoryIsAnErrorNotACrash) {
  exec::ProcessSpec spec;
  spec.argv = {"no-such-program-superagent"};
  EXPECT_EQ(runner_->Spawn(spec).status().code(), Status::Code::kIoError);
  spec.argv = {"/bin/true"};
  spec.cwd = (dir_ / "missing").string();
  auto r = runner_->Spawn(spec);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos);
}

TEST_F(ExecProcessTest, ATimeLimitOnTheInjectedClockKillsTheWholeTree) {
  const int port = FreePort();
  exec::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", ListenerCommand(port)};
  auto started = std::chrono::steady_clock::now();
  // Time passes only once the grandchild listens, so the kill is shown to reach it.
  bool listened = false;
  exec::Sleeper wait_then_step = [&](TimeMs ms) {
    if (!listened) listened = Eventually([&] { return Listening(port); });
    clock_.Advance(ms);
  };
  auto r = exec::RunToCompletion(*runner_, spec, &clock_, wait_then_step, 60'000);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(listened);
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_TRUE(Eventually([&] { return !Listening(port); }));
}

TEST_F(ExecProcessTest, ASixSecondCommandReturnsAfterFiveSecondsAsAListedJob) {
  Jobs jobs(runner_.get(), &clock_, sleeper_, dir_.string());
  const TimeMs before = clock_.NowMs();
  auto started = std::chrono::steady_clock::now();
  auto r = jobs.Run("echo begun; sleep 6; echo done", dir_.string(), "", 5'000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->background);
  EXPECT_EQ(r->job, 1);
  EXPECT_GE(clock_.NowMs() - before, 5'000);
  EXPECT_LT(clock_.NowMs() - before, 6'000);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3));  // not really waited
  auto list = jobs.List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].command, "echo begun; sleep 6; echo done");
  EXPECT_TRUE(list[0].running);
  EXPECT_EQ(jobs.RunningCount(), 1);
  EXPECT_TRUE(Eventually([&] { auto o = jobs.Output(1); return o.ok() && *o == "begun\n"; }));
  EXPECT_TRUE(jobs.Kill(1).ok());
  EXPECT_FALSE(jobs.List()[0].running);
  EXPECT_EQ(jobs.Output(2).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(jobs.Kill(2).code(), Status::Code::kNotFound);
}

TEST_F(ExecProcessTest, AQuickCommandStaysInTheForeground) {
  Jobs jobs(runner_.get(), &clock_, sleeper_, dir_.string());
  auto r = jobs.Run("echo hi; exit 3", dir_.string(), "", 5'000);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->background);
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->out, "hi\n");
  EXPECT_TRUE(jobs.List().empty());
}

TEST_F(ExecProcessTest, KillingAJobKillsItsGrandchildListeningOnAPort) {
  const int port = FreePort();
  Jobs jobs(runner_.get(), &clock_, sleeper_, dir_.string());
  auto r = jobs.Run(ListenerCommand(port), dir_.string(), "", 5'000);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->background);
  ASSERT_TRUE(Eventually([&] { return Listening(port); })) << "the grandchild never listened";
  ASSERT_TRUE(jobs.Kill(r->job).ok());
  EXPECT_TRUE(Eventually([&] { return !Listening(port); })) << "an orphan still listens on " << port;
}

TEST_F(ExecProcessTest, DestroyingTheJobsKillsEveryTree) {
  const int port = FreePort();
  {
    Jobs jobs(runner_.get(), &clock_, sleeper_, dir_.string());
    auto r = jobs.Run(ListenerCommand(port), dir_.string(), "", 5'000);
    ASSERT_TRUE(r.ok() && r->background);
    ASSERT_TRUE(Eventually([&] { return Listening(port); }));
  }
  EXPECT_TRUE(Eventually([&] { return !Listening(port); }));
}

// A grandchild that starts a session of its own (setsid) leaves the process group; only a
// cgroup still holds it. Writes its pid to `pid_file` so a test can clean up what escaped.
std::string EscapingListenerCommand(int port, const std::string& pid_file) {
  return "setsid /usr/bin/python3 -c 'import os,socket,time\nopen(\"" + pid_file +
         "\",\"w\").write(str(os.getpid()))\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
         "s.bind((\"127.0.0.1\"," + std::to_string(port) + "))\ns.listen()\ntime.sleep(600)' & wait";
}

TEST_F(ExecProcessTest, ATreeThatLeftItsProcessGroupIsStillKilledThroughItsCgroup) {
  const exec::Containment c = runner_->containment();
  if (!c.cgroups) GTEST_SKIP() << "this host gives no cgroup v2 to the tests: " << c.detail;
  const int port = FreePort();
  exec::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", EscapingListenerCommand(port, (dir_ / "pid").string())};
  spec.output_dir = dir_.string();
  auto p = runner_->Spawn(spec);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(Eventually([&] { return Listening(port); })) << "the grandchild never listened";
  const std::string pid = ReadText(dir_ / "pid");
  EXPECT_NE(Sh("ps -o sid= -p " + pid), Sh("ps -o sid= -p " + std::to_string((*p)->pid()))) << "it did not leave";
  (*p)->KillGroup();
  EXPECT_TRUE(Eventually([&] { return !Listening(port); })) << "an orphan that left its group still listens";
  // The tree's cgroup goes once it is empty, and the runner's own when the runner goes.
  runner_.reset();
  EXPECT_FALSE(std::filesystem::exists(c.detail)) << c.detail;
}

// What the cgroup is for: with process groups only, a process that called setsid() survives.
TEST_F(ExecProcessTest, WithCgroupsOffAProcessThatLeftItsGroupSurvivesTheKill) {
  auto runner = exec::MakePosixProcessRunner({"off"});
  EXPECT_FALSE(runner->containment().cgroups);
  EXPECT_EQ(runner->containment().detail, "cgroups off by configuration");
  const int port = FreePort();
  exec::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", EscapingListenerCommand(port, (dir_ / "pid").string())};
  spec.output_dir = dir_.string();
  auto p = runner->Spawn(spec);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(Eventually([&] { return Listening(port); }));
  (*p)->KillGroup();
  EXPECT_TRUE(Listening(port));
  const std::string pid = ReadText(dir_ / "pid");
  ASSERT_FALSE(pid.empty());
  ::kill(std::stoi(pid), SIGKILL);  // clean up what escaped
  EXPECT_TRUE(Eventually([&] { return !Listening(port); }));
}

// A daemon that crashed left cgroups with processes in them; the next one ends them.
TEST_F(ExecProcessTest, CgroupsLeftByADaemonThatIsGoneAreKilledAndRemoved) {
  const std::string own = exec::MakePosixProcessRunner()->containment().detail;
  if (!exec::MakePosixProcessRunner()->containment().cgroups) GTEST_SKIP() << "no cgroup v2 here: " << own;
  const std::filesystem::path parent = std::filesystem::path(own).parent_path() /
                                       ("superagent-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(parent);
  const std::filesystem::path left = parent / "superagent-4194305" / "job-1";  // above pid_max
  std::filesystem::create_directories(left);
  const int port = FreePort();
  Sh("{ echo 0 > " + (left / "cgroup.procs").string() + " && exec " + ListenerCommand(port) +
     "; } >/dev/null 2>&1 &");
  ASSERT_TRUE(Eventually([&] { return Listening(port); }));
  {
    auto runner = exec::MakePosixProcessRunner({parent.string()});
    EXPECT_TRUE(runner->containment().cgroups) << runner->containment().detail;
    EXPECT_TRUE(Eventually([&] { return !Listening(port); })) << "the crashed daemon's process still listens";
    EXPECT_TRUE(Eventually([&] { return !std::filesystem::exists(parent / "superagent-4194305"); }));
  }
  EXPECT_EQ(::rmdir(parent.c_str()), 0) << std::strerror(errno);
}

// Workers' commands run niced, and so does everything they start (nice comes before the exec).
TEST_F(ExecProcessTest, CommandsAndTheirChildrenRunAtTheConfiguredNiceness) {
  auto runner = exec::MakePosixProcessRunner({"", 7});
  exec::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "sleep 600 & echo $! > " + (dir_ / "child").string() + "; wait"};
  spec.output_dir = dir_.string();
  auto p = runner->Spawn(spec);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(Eventually([&] { return !ReadText(dir_ / "child").empty(); }));
  auto nice_of = [](const std::string& pid) {
    std::string out = Sh("ps -o ni= -p " + pid);
    return std::stoi(out);
  };
  EXPECT_EQ(nice_of(std::to_string((*p)->pid())), 7);
  EXPECT_EQ(nice_of(ReadText(dir_ / "child")), 7);
  (*p)->KillGroup();
  // A missing program is still refused before anything runs, nice or not.
  spec.argv = {"no-such-program-here"};
  auto missing = runner->Spawn(spec);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot start no-such-program-here"), std::string::npos);
}

TEST_F(ExecProcessTest, TailKeepsTheLastLines) {
  EXPECT_EQ(text::TailLines("a\nb\nc\nd\n", 2, 2000), "c\nd");
  EXPECT_EQ(text::TailLines("", 2, 2000), "");
  EXPECT_EQ(text::TailLines("abcdef", 5, 3), "\xE2\x80\xA6" "ef");
  EXPECT_EQ(exec::ShellQuote("it's"), "'it'\\''s'");
}

}  // namespace
}  // namespace superagent::testing
