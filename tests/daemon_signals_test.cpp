// Daemon::Run's signal handling, in-process: real signals sent to the thread running Run (with
// them blocked there, as serve blocks them in every thread), a real store and a real policy file.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "app/daemon.h"
#include "daemon_process.h"
#include "superagent/engine.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;

class DaemonSignalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("superagent-signals-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Write("mode: observe\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& policy) { std::ofstream(dir_ / "policy.yaml") << policy; }

  Config MakeConfig() {
    Config c;
    c.data_dir = (dir_ / "data").string();
    c.policy_file = (dir_ / "policy.yaml").string();
    c.panel.listen = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
    c.llm.api_key_env = "SUPERAGENT_TEST_UNSET_KEY";
    return c;
  }

  fs::path dir_;
};

// Runs `daemon.Run()` on a thread that blocks the daemon's signals, as serve does.
std::thread RunBlocked(app::Daemon& daemon) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);  // inherited by the new thread
  std::thread t([&daemon] { daemon.Run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return t;
}

TEST_F(DaemonSignalTest, SighupReloadsThePolicyAndSigtermReturns) {
  app::Daemon daemon(MakeConfig());
  ASSERT_TRUE(daemon.Start().ok());
  std::thread run = RunBlocked(daemon);
  Write("mode: auto\n");
  // Both are pending on the thread before it looks; sigtimedwait takes the lower number (SIGHUP)
  // first, so the reload happens before Run returns, with no waiting on time.
  pthread_kill(run.native_handle(), SIGHUP);
  pthread_kill(run.native_handle(), SIGTERM);
  run.join();
  daemon.Shutdown();

  auto engine = Engine::OpenExisting((dir_ / "data" / "superagent.db").string(), SystemClock());
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_EQ((*engine)->PolicyVersion(), 2);
  EXPECT_EQ((*engine)->CurrentPolicy().mode, Mode::kAuto);
}

TEST_F(DaemonSignalTest, AnInvalidPolicyOnSighupKeepsTheRunningVersion) {
  app::Daemon daemon(MakeConfig());
  ASSERT_TRUE(daemon.Start().ok());
  Write("mode: sometimes\n");
  EXPECT_TRUE(daemon.HandleSignal(SIGHUP));
  EXPECT_FALSE(daemon.HandleSignal(SIGINT));
  EXPECT_TRUE(daemon.HandleSignal(SIGUSR1));  // not ours: ignored
  daemon.Shutdown();
  auto engine = Engine::OpenExisting((dir_ / "data" / "superagent.db").string(), SystemClock());
  ASSERT_TRUE(engine.ok());
  EXPECT_EQ((*engine)->PolicyVersion(), 1);
  EXPECT_EQ((*engine)->CurrentPolicy().mode, Mode::kObserve);
}

}  // namespace
}  // namespace superagent::testing
