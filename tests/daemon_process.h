// A long-running child process for tests of `superagent serve`: start it, read its stderr line by
// line until an expected log line appears (event-driven: poll on the pipe, never sleep), signal
// it, and collect its exit status.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace superagent::testing {

// The panel token the daemon made in `data_dir` (data_dir/panel.token), for a client that stands
// for a person logged in to the panel; "" when there is none yet.
inline std::string PanelTokenIn(const std::string& data_dir) {
  std::string token;
  int fd = ::open((data_dir + "/panel.token").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return token;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) token.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  return token;
}

class DaemonProcess {
 public:
  DaemonProcess(const std::string& program, const std::vector<std::string>& args,
                const std::vector<std::pair<std::string, std::string>>& env = {}) {
    std::vector<std::string> argv_s{program};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    for (auto& [k, v] : env) env_s.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    int err[2];
    if (pipe2(err, O_CLOEXEC) != 0) return;
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
    fd_ = err[0];
  }
  ~DaemonProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (fd_ >= 0) ::close(fd_);
  }

  // Reads stderr until a line containing `needle` arrives (returns true) or the process closes
  // stderr or `timeout_ms` passes (returns false). Everything read is kept in log().
  bool WaitForLine(const std::string& needle, int timeout_ms = 20'000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      if (log_.find(needle, scanned_) != std::string::npos) {
        scanned_ = log_.find(needle, scanned_) + needle.size();
        return true;
      }
      if (fd_ < 0) return false;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) {
        ::close(fd_);
        fd_ = -1;
      } else {
        log_.append(buf, static_cast<size_t>(n));
      }
    }
  }

  // Reads stderr until `needle` has appeared `count` times in the whole log, in any order with
  // other lines (false on exit or timeout).
  bool WaitForCount(const std::string& needle, int count, int timeout_ms = 20'000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      int n = 0;
      for (auto at = log_.find(needle); at != std::string::npos; at = log_.find(needle, at + needle.size())) ++n;
      if (n >= count) return true;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (fd_ < 0 || left.count() <= 0) return false;
      WaitForLine("\x01more\x01", static_cast<int>(std::min<long>(left.count(), 50)));
    }
  }

  void Signal(int sig) { kill(pid_, sig); }

  // Waits for exit, draining stderr; returns the exit code (128+N when killed by signal N).
  int Wait() {
    while (fd_ >= 0) WaitForLine("\x01never\x01", 30'000);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  const std::string& log() const { return log_; }
  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }  // the process exec'd: the daemon, or a wrapper that execs it

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  std::string log_;
  size_t scanned_ = 0;
};

// A loopback port that was free a moment ago (bound with port 0, then released).
inline int FreeLoopbackPort() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(s);
  return ntohs(addr.sin_port);
}

}  // namespace superagent::testing
