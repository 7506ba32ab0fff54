// Runs a program the way a person or systemd would — fork/exec, no shell — and captures its
// stdout, stderr and exit status. CLI tests use it on the real `superagent` binary.
//
//   RunResult r = RunBinary({"check", "--config", path});
//   EXPECT_EQ(r.exit_code, 0) << r.err;
//
// Self-contained (POSIX + the standard library only) so any test can include it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace superagent::testing {

struct RunResult {
  int exit_code = -1;  // the exit status; 128 + N when killed by signal N; -1 when it never ran
  std::string out;     // everything written to stdout
  std::string err;     // everything written to stderr (and why it never ran, if so)
};

struct RunOptions {
  std::string stdin_text;                                    // written to stdin, which is then closed
  std::vector<std::pair<std::string, std::string>> env_set;  // added to / overriding the inherited environment
  std::vector<std::string> env_unset;                        // removed from the inherited environment
  std::string cwd;                                           // working directory; empty = inherit
  int timeout_ms = 60'000;                                   // then the child is killed (SIGKILL)
};

namespace run_binary_internal {

inline void CloseFd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

// Builds "NAME=value" strings: the inherited environment minus unset/overridden names, plus env_set.
inline std::vector<std::string> BuildEnv(const RunOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool drop = false;
    for (const auto& u : options.env_unset) drop |= (u == name);
    for (const auto& s : options.env_set) drop |= (s.first == name);
    if (!drop) env.push_back(std::move(entry));
  }
  for (const auto& s : options.env_set) env.push_back(s.first + "=" + s.second);
  return env;
}

// Writes to a pipe whose reader may already have exited without letting SIGPIPE kill the test:
// the signal is blocked for this thread, and a pending one is consumed before unblocking.
inline ssize_t WriteNoSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  ssize_t n = ::write(fd, data, size);
  int saved = errno;
  if (n < 0 && saved == EPIPE) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved;
  return n;
}

}  // namespace run_binary_internal

// Runs `program` (a path; no PATH search) with `args` (not including argv[0]).
inline RunResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                            const RunOptions& options = {}) {
  using run_binary_internal::CloseFd;
  RunResult result;

  // Everything the child needs is prepared before fork(): after it only async-signal-safe calls.
  std::vector<std::string> argv_storage;
  argv_storage.push_back(program);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage = run_binary_internal::BuildEnv(options);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  // O_CLOEXEC so a child spawned concurrently from another thread does not inherit our ends.
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = std::string("RunProgram: pipe2: ") + std::strerror(errno);
    for (int* fd : {&in_pipe[0], &in_pipe[1], &out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1]}) CloseFd(fd);
    return result;
  }

  pid_t pid = fork();
  if (pid < 0) {
    result.err = std::string("RunProgram: fork: ") + std::strerror(errno);
    for (int* fd : {&in_pipe[0], &in_pipe[1], &out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1]}) CloseFd(fd);
    return result;
  }
  if (pid == 0) {
    // Child: dup2 clears O_CLOEXEC on 0/1/2; every other pipe end closes at exec.
    if (dup2(in_pipe[0], STDIN_FILENO) < 0 || dup2(out_pipe[1], STDOUT_FILENO) < 0 ||
        dup2(err_pipe[1], STDERR_FILENO) < 0) {
      _exit(127);
    }
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) {
      static const char kMsg[] = "RunProgram: chdir failed\n";
      (void)!::write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
      _exit(127);
    }
    execve(argv[0], argv.data(), envp.data());
    static const char kMsg[] = "RunProgram: execve failed\n";
    (void)!::write(STDERR_FILENO, kMsg, sizeof(kMsg) - 1);
    _exit(127);
  }

  CloseFd(&in_pipe[0]);
  CloseFd(&out_pipe[1]);
  CloseFd(&err_pipe[1]);
  for (int fd : {in_pipe[1], out_pipe[0], err_pipe[0]}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);

  size_t written = 0;
  if (options.stdin_text.empty()) CloseFd(&in_pipe[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.timeout_ms);
  bool timed_out = false;

  // One loop drains stdout and stderr while feeding stdin, so neither side can fill a pipe
  // and wait forever on the other.
  while (out_pipe[0] >= 0 || err_pipe[0] >= 0 || in_pipe[1] >= 0) {
    struct pollfd fds[3];
    int* owners[3];
    nfds_t n = 0;
    if (in_pipe[1] >= 0) {
      fds[n] = {in_pipe[1], POLLOUT, 0};
      owners[n++] = &in_pipe[1];
    }
    if (out_pipe[0] >= 0) {
      fds[n] = {out_pipe[0], POLLIN, 0};
      owners[n++] = &out_pipe[0];
    }
    if (err_pipe[0] >= 0) {
      fds[n] = {err_pipe[0], POLLIN, 0};
      owners[n++] = &err_pipe[0];
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int ready = poll(fds, n, static_cast<int>(left.count()));
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      int* fd = owners[i];
      if (fd == &in_pipe[1]) {
        ssize_t w = run_binary_internal::WriteNoSigpipe(*fd, options.stdin_text.data() + written,
                                                        options.stdin_text.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        // Done, or the child closed its stdin (EPIPE): either way stop feeding it.
        if (written == options.stdin_text.size() || (w < 0 && errno != EAGAIN && errno != EINTR)) CloseFd(fd);
        continue;
      }
      char buf[8192];
      ssize_t r = ::read(*fd, buf, sizeof(buf));
      if (r > 0) {
        (fd == &out_pipe[0] ? result.out : result.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        CloseFd(fd);
      }
    }
  }
  if (timed_out) kill(pid, SIGKILL);
  for (int* fd : {&in_pipe[1], &out_pipe[0], &err_pipe[0]}) CloseFd(fd);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  if (timed_out) result.err += "\nRunProgram: timed out after " + std::to_string(options.timeout_ms) + " ms; killed";
  return result;
}

#ifdef SUPERAGENT_BINARY
// Runs the `superagent` binary built alongside the tests.
inline RunResult RunBinary(const std::vector<std::string>& args, std::string stdin_text = "") {
  RunOptions options;
  options.stdin_text = std::move(stdin_text);
  return RunProgram(SUPERAGENT_BINARY, args, options);
}

inline RunResult RunBinary(const std::vector<std::string>& args, const RunOptions& options) {
  return RunProgram(SUPERAGENT_BINARY, args, options);
}
#endif

}  // namespace superagent::testing
