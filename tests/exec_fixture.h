// Shared set-up for execution tests: a real git origin (a bare repository in a temp dir), the
// real process runner, and a clock the exec side steps forward while it polls, so limits of
// seconds and minutes pass in milliseconds. The Engine keeps the EngineTest FakeClock.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine_fixture.h"
#include "superagent/jobs.h"
#include "superagent/process.h"
#include "superagent/scheduler.h"
#include "superagent/workspace.h"

namespace superagent::testing {

// Thread-safe: turn threads step it while polling processes.
class SteppingClock : public Clock {
 public:
  TimeMs NowMs() const override { return now_.load(); }
  void Advance(TimeMs ms) { now_ += ms; }

 private:
  std::atomic<TimeMs> now_{1'767'225'600'000};
};

// Runs a shell command for set-up; fails the test when it fails.
inline std::string Sh(const std::string& cmd) {
  std::string full = "(" + cmd + ") 2>&1";
  FILE* p = ::popen(full.c_str(), "r");
  std::string out;
  char buf[4096];
  while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  int rc = p == nullptr ? -1 : ::pclose(p);
  EXPECT_EQ(rc, 0) << cmd << "\n" << out;
  return out;
}

inline std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A free loopback TCP port (bound, then released).
inline int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline bool Listening(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// Waits (bounded) for a condition that a real process makes true; returns whether it did.
template <typename F>
bool Eventually(F f, int max_ms = 5'000) {
  for (int i = 0; i < max_ms / 5; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return f();
}

// A command that starts a grandchild listening on `port` and then waits for it.
inline std::string ListenerCommand(int port) {
  return "/usr/bin/python3 -c 'import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
         "s.bind((\"127.0.0.1\"," +
         std::to_string(port) + "))\ns.listen()\ntime.sleep(600)' & wait";
}

class ExecTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    origin_ = dir_ / "origin.git";
    const std::string seed = (dir_ / "seed").string();
    Sh("git init -q -b main " + seed + " && cd " + seed +
       " && printf 'Hello\\nThere is teh typo.\\n' > README.md && printf 'Run ./test.sh\\n' > AGENTS.md"
       " && printf '#!/bin/sh\\ngrep -q \"the typo\" README.md\\n' > test.sh && chmod +x test.sh"
       " && git add -A && git -c user.name=t -c user.email=t@t commit -q -m init && git clone -q --bare . " +
       origin_.string());
    // Workers' private HOMEs and temp directories inside the test's directory, as the daemon
    // keeps them inside data_dir.
    exec::PosixRunnerOptions ro;
    ro.sandbox.state_dir = (dir_ / "work" / "sandbox").string();
    runner_ = exec::MakePosixProcessRunner(ro);
    sleeper_ = [this](TimeMs ms) {
      exec_clock_.Advance(ms);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    };
    exec::WorkspaceOptions wo;
    wo.root = (dir_ / "work").string();
    wo.remote = origin_.string();
    wo.repo = "acme/widgets";  // the engine fixture's comments' repository
    workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
    services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
  }

  // Rebuilds the runner from `ro` (e.g. the sandbox on, as the daemon runs workers) and the
  // workspaces and services on top of it.
  void UseRunner(exec::PosixRunnerOptions ro) {
    services_.reset();
    workspaces_.reset();
    runner_ = exec::MakePosixProcessRunner(ro);
    exec::WorkspaceOptions wo;
    wo.root = (dir_ / "work").string();
    wo.remote = origin_.string();
    wo.repo = "acme/widgets";  // the engine fixture's comments' repository
    workspaces_ = std::make_unique<exec::Workspaces>(wo, runner_.get(), &exec_clock_, sleeper_);
    services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
  }

  std::unique_ptr<exec::Scheduler> MakeScheduler(exec::Executor* executor, int slots = 3) {
    exec::SchedulerOptions so;
    so.slots = slots;
    so.jobs_dir = (dir_ / "jobs").string();
    std::filesystem::create_directories(so.jobs_dir);
    return std::make_unique<exec::Scheduler>(engine_.get(), views_.get(), workspaces_.get(), executor, services_.get(),
                                             runner_.get(), &exec_clock_, sleeper_, so);
  }

  // The content of `path` on `branch` of the origin.
  std::string OnOrigin(const std::string& branch, const std::string& path) {
    return Sh("git -C " + origin_.string() + " show " + branch + ":" + path);
  }

  std::filesystem::path origin_;
  SteppingClock exec_clock_;
  std::unique_ptr<exec::ProcessRunner> runner_;
  exec::Sleeper sleeper_;
  std::unique_ptr<exec::Workspaces> workspaces_;
  std::unique_ptr<exec::WorkerServices> services_;
};

}  // namespace superagent::testing
