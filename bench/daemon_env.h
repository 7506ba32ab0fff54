// The real daemon on loopback for the benchmarks: a scratch directory with superagent.yaml and
// policy.yaml, and the `serve` process. Unlike tests/daemon_process.h, a reader thread drains
// stderr all the time into a file, so a daemon logging thousands of lines never blocks on a
// full pipe while the benchmark is busy elsewhere.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_common.h"
#include "daemon_process.h"  // FreeLoopbackPort

extern char** environ;

namespace superagent::bench {

struct DaemonSetup {
  std::string policy = "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n";
  std::string extra_config;  // more YAML appended to superagent.yaml
  std::vector<std::pair<std::string, std::string>> env;
};

// An `execution:` section whose git remote is a local bare repository made in `dir`, and whose
// executor is a command that reports ready at once: accepted Tickets do real (tiny) work without
// the daemon ever reaching github.com, and no worker asks the fake model for anything.
inline std::string LocalExecutionConfig(const ScratchDir& dir) {
  const std::string seed = dir / "seed", origin = dir / "origin.git";
  const std::string cmd = "git init -q -b master " + seed + " && cd " + seed +
                          " && echo hello > README.md && git add -A && git -c user.name=b -c user.email=b@b"
                          " commit -q -m init && git clone -q --bare . " + origin;
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cannot make the local git origin\n");
  return "execution:\n  git_remote: " + origin +
         "\n  executor: command\n  command: \"cat >/dev/null; echo '{\\\"stage\\\":\\\"ready\\\",\\\"summary\\\":"
         "\\\"Done.\\\",\\\"question\\\":null,\\\"pr\\\":null}'\"\n";
}

class BenchDaemon {
 public:
  BenchDaemon(const ScratchDir& dir, const DaemonSetup& setup, std::string data_dir = "")
      : config_(dir / "superagent.yaml"), log_path_(dir / "daemon.log") {
    data_dir_ = data_dir.empty() ? dir / "data" : data_dir;
    port_ = testing::FreeLoopbackPort();
    std::ofstream(dir / "policy.yaml") << setup.policy;
    std::ofstream(config_) << "data_dir: " << data_dir_ << "\npolicy_file: " << (dir / "policy.yaml")
                           << "\npanel:\n  listen: 127.0.0.1:" << port_ << "\nlog:\n  level: " << (std::getenv("BENCH_LOG_LEVEL") ? std::getenv("BENCH_LOG_LEVEL") : "info") << "\n"
                           << setup.extra_config;
    env_ = setup.env;
  }
  ~BenchDaemon() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
  }

  // Starts `serve`; returns the seconds from just before exec to the "ready" line (< 0: failed).
  double Start(double timeout_s = 60) {
    seen_ready_ = false;
    closed_ = false;
    std::vector<std::string> argv_s{SUPERAGENT_BINARY, "serve", "--config", config_};
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    for (auto& [k, v] : env_) env_s.push_back(k + "=" + v);
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    int err[2];
    if (pipe2(err, O_CLOEXEC) != 0) return -1;
    const double t0 = NowSeconds();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(err[1], STDERR_FILENO);
      int devnull = ::open("/dev/null", O_RDWR);
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    ::close(err[1]);
    exited_ = false;
    reader_ = std::thread([this, fd = err[0]] { Read(fd); });
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return seen_ready_ || closed_; }) ||
        !seen_ready_)
      return -1;
    return ready_at_ - t0;
  }
  // SIGTERM, then the exit code (128+N when killed by signal N).
  int Stop() {
    kill(pid_, SIGTERM);
    return Wait();
  }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  const std::string& data_dir() const { return data_dir_; }
  const std::string& log_path() const { return log_path_; }

 private:
  int Wait() {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exited_ = true;
    if (reader_.joinable()) reader_.join();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  void Read(int fd) {
    std::ofstream out(log_path_, std::ios::app);
    std::string pending;
    char buf[8192];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      const double at = NowSeconds();
      out.write(buf, n);
      if (!seen_ready_) {
        pending.append(buf, static_cast<std::size_t>(n));
        if (pending.find("ready") != std::string::npos) {
          std::lock_guard<std::mutex> lock(mu_);
          seen_ready_ = true;
          ready_at_ = at;
          cv_.notify_all();
        }
      }
    }
    ::close(fd);
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

  std::string config_, log_path_, data_dir_;
  int port_ = 0;
  std::vector<std::pair<std::string, std::string>> env_;
  pid_t pid_ = -1;
  bool exited_ = true;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool seen_ready_ = false, closed_ = false;
  double ready_at_ = 0;
};

}  // namespace superagent::bench
