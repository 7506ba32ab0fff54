// POSIX processes: posix_spawn with POSIX_SPAWN_SETPGROUP so each command leads its own group,
// and, where the host allows, a cgroup v2 of its own that it joins before it execs the command;
// stdin/stdout/stderr are files so nothing blocks on a pipe a grandchild keeps open.
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "exec/cgroup.h"
#include "superagent/process.h"
#include "superagent/text.h"

extern char** environ;

namespace superagent::exec {

namespace {

namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// argv[0] as posix_spawnp would find it, so a missing program is an error before anything runs
// (with a cgroup the real spawn starts /bin/sh, which would only exit 127).
bool FindProgram(const std::string& name, const std::string& path_var) {
  auto runnable = [](const std::string& p) {
    std::error_code ec;
    return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p, ec);
  };
  if (name.find('/') != std::string::npos) return runnable(name);
  std::stringstream dirs(path_var.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_var);
  for (std::string d; std::getline(dirs, d, ':');)
    if (runnable((d.empty() ? "." : d) + "/" + name)) return true;
  return false;
}

// The process groups a runner started and has not killed yet, for KillAll. Shared with the
// processes, which may outlive nothing but are destroyed on other threads.
struct LiveGroups {
  std::mutex mu;
  std::set<pid_t> pgids;
};

class PosixProcess : public Process {
 public:
  PosixProcess(pid_t pid, std::string dir, CgroupTree* cgroups, std::string group, std::shared_ptr<LiveGroups> live)
      : pid_(pid), dir_(std::move(dir)), cgroups_(cgroups), group_(std::move(group)), live_(std::move(live)) {
    std::lock_guard<std::mutex> lock(live_->mu);
    live_->pgids.insert(pid_);
  }
  ~PosixProcess() override {
    KillGroup();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  int pid() const override { return pid_; }

  std::optional<int> Poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (exit_code_) return exit_code_;
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) exit_code_ = DecodeStatus(status);
    else if (r < 0) exit_code_ = -1;  // already reaped elsewhere: treat as gone
    return exit_code_;
  }

  std::optional<int> WaitFor(TimeMs ms) override {
    if (auto code = Poll()) return code;
    if (ms <= 0) return std::nullopt;
    // A pidfd becomes readable when the process exits (Linux 5.3). Without one (an old kernel, a
    // seccomp filter that refuses it) the caller's own polling does the waiting.
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    if (fd < 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(ms));
    ::close(fd);
    return Poll();
  }

  void KillGroup() override {
    std::lock_guard<std::mutex> lock(mu_);
    // The group outlives its leader: children may still run after the leader exited.
    ::kill(-pid_, SIGKILL);
    // The cgroup also holds what left the group (setsid) and what was forked meanwhile.
    if (cgroups_ != nullptr && !group_.empty()) {
      cgroups_->KillAndRemove(group_);
      group_.clear();
    }
    {
      std::lock_guard<std::mutex> live_lock(live_->mu);
      live_->pgids.erase(pid_);
    }
    if (!exit_code_) {
      int status = 0;
      if (waitpid(pid_, &status, 0) == pid_) exit_code_ = DecodeStatus(status);
      else exit_code_ = -1;
    }
  }

  std::string Stdout() const override { return ReadAll(dir_ + "/stdout"); }
  std::string Stderr() const override { return ReadAll(dir_ + "/stderr"); }

 private:
  pid_t pid_;
  std::string dir_;
  CgroupTree* cgroups_;  // null: process groups only
  std::string group_;    // this tree's cgroup, until killed
  std::shared_ptr<LiveGroups> live_;
  std::mutex mu_;
  std::optional<int> exit_code_;
};

class PosixRunner : public ProcessRunner {
 public:
  explicit PosixRunner(const PosixRunnerOptions& options) : nice_(options.nice), sandbox_(options.sandbox) {
    if (options.cgroup_parent == "off") {
      containment_.detail = "cgroups off by configuration";
      return;
    }
    cgroups_ = std::make_unique<CgroupTree>(options.cgroup_parent);
    containment_.cgroups = cgroups_->enabled();
    containment_.detail = cgroups_->detail();
    if (!cgroups_->enabled()) cgroups_.reset();
  }
  Containment containment() const override { return containment_; }

  void KillAll() override {
    {
      std::lock_guard<std::mutex> lock(live_->mu);
      for (pid_t pgid : live_->pgids) ::kill(-pgid, SIGKILL);
    }
    if (cgroups_) cgroups_->KillEverything();
  }

  Result<std::unique_ptr<Process>> Spawn(const ProcessSpec& spec) override {
    if (spec.argv.empty()) return Status::InvalidArgument("no command given");
    static std::atomic<std::uint64_t> counter{0};
    fs::path base = spec.output_dir.empty() ? fs::temp_directory_path() : fs::path(spec.output_dir);
    fs::path dir = base / ("superagent-proc-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Status::IoError("cannot create " + dir.string() + ": " + ec.message());
    {
      std::ofstream in(dir / "stdin", std::ios::binary);
      in << spec.stdin_text;
      if (!in) return Status::IoError("cannot write " + (dir / "stdin").string());
    }
    if (!spec.cwd.empty() && !fs::is_directory(spec.cwd, ec))
      return Status::IoError("working directory " + spec.cwd + " does not exist");

    std::map<std::string, std::string> daemon_env;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) daemon_env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    // Built, never inherited: the daemon's environment holds its credentials (issue 19).
    std::vector<std::string> env_strings;
    std::vector<std::string> args = spec.argv;
    if (spec.worker) {
      const auto [home, tmp] = ScopeDirs(sandbox_, *spec.worker);
      fs::create_directories(home, ec);
      if (!ec) fs::create_directories(tmp, ec);
      if (ec) {
        fs::remove_all(dir, ec);
        return Status::IoError("cannot create the worker's private HOME and TMPDIR " + home + ": " + ec.message());
      }
      env_strings = WorkerEnv(sandbox_, daemon_env, home, tmp, spec.env);
      if (sandbox_.enabled) {
        // A root daemon's worker runs as an unprivileged uid (issue 33): its trees are made its own.
        if (Status s = GrantWorkerAccess(sandbox_, *spec.worker, home, tmp); !s.ok()) {
          fs::remove_all(dir, ec);
          return s;
        }
        args = SandboxArgv(sandbox_, *spec.worker, home, tmp, spec.cwd, spec.argv);
      }
    } else {
      env_strings = DaemonCommandEnv(daemon_env, spec.env);
    }
    std::string path_var;
    for (const std::string& kv : env_strings)
      if (kv.rfind("PATH=", 0) == 0) path_var = kv.substr(5);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    // In the sandbox, bwrap must be found too (the system is the same inside, read-only).
    for (const std::string& program : {spec.argv[0], args[0]}) {
      if (FindProgram(program, path_var)) continue;
      fs::remove_all(dir, ec);
      return Status::IoError("cannot start " + program + ": " + std::strerror(ENOENT));
    }
    if (nice_ > 0) args.insert(args.begin(), {"nice", "-n", std::to_string(nice_)});
    std::string group;
    if (cgroups_) {
      if (auto g = cgroups_->NewGroup()) {
        group = *g;
        args = CgroupTree::JoinThenExec(group + "/cgroup.procs", args);
      }
    }
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    const std::string in_path = (dir / "stdin").string(), out_path = (dir / "stdout").string(),
                      err_path = (dir / "stderr").string();
    posix_spawn_file_actions_addopen(&fa, 0, in_path.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    // Nothing of the daemon's (database, listening sockets) may leak into a worker's commands.
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, spec.cwd.c_str());
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    // The daemon blocks signals in its threads; a child must start with none blocked and the
    // default handlers, or it could not be stopped with SIGTERM/SIGINT.
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      fs::remove_all(dir, ec);
      if (!group.empty()) cgroups_->KillAndRemove(group);
      return Status::IoError("cannot start " + spec.argv[0] + ": " + std::strerror(rc));
    }
    return std::unique_ptr<Process>(new PosixProcess(pid, dir.string(), cgroups_.get(), group, live_));
  }

 private:
  int nice_ = 0;
  SandboxPolicy sandbox_;
  Containment containment_;
  std::unique_ptr<CgroupTree> cgroups_;  // null: process groups only
  std::shared_ptr<LiveGroups> live_ = std::make_shared<LiveGroups>();
};

}  // namespace

std::unique_ptr<ProcessRunner> MakePosixProcessRunner(PosixRunnerOptions options) {
  return std::make_unique<PosixRunner>(options);
}

Sleeper RealSleeper() {
  return [](TimeMs ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
}

namespace {
constexpr TimeMs kFirstWaitMs = 250;
}  // namespace

Result<RunResult> RunToCompletion(ProcessRunner& runner, const ProcessSpec& spec, Clock* clock, const Sleeper& sleeper,
                                  TimeMs limit_ms, TimeMs poll_ms, const std::atomic<bool>* cancel) {
  auto p = runner.Spawn(spec);
  if (!p.ok()) return p.status();
  Process& proc = **p;
  const TimeMs start = clock->NowMs();
  RunResult r;
  // Most commands run here (git in the mirror, in verified.git, a sandboxed git script) end
  // within a few hundred milliseconds: that long is waited for on the process itself, so such a
  // command costs its own time, not a poll interval rounded up (a 25 ms script polled every
  // 20 ms took 40). Longer ones are polled on the injected clock as before; a cancel is seen
  // after this first wait at the latest.
  std::optional<int> quick = proc.WaitFor(std::max<TimeMs>(poll_ms, kFirstWaitMs));
  while (true) {
    if (auto code = quick ? quick : proc.Poll()) {
      r.exit_code = *code;
      break;
    }
    if (cancel != nullptr && cancel->load()) {
      proc.KillGroup();
      r.cancelled = true;
      r.exit_code = proc.Poll().value_or(-1);
      break;
    }
    if (clock->NowMs() - start >= limit_ms) {
      proc.KillGroup();
      r.timed_out = true;
      r.exit_code = proc.Poll().value_or(-1);
      break;
    }
    sleeper(poll_ms);
  }
  // Children that outlived the leader belong to this run: none may linger.
  proc.KillGroup();
  // What a command prints is text from outside: a binary file, a GBK terminal, a cut sequence.
  r.out = spec.binary_stdout ? proc.Stdout() : text::Repair(proc.Stdout());
  r.err = text::Repair(proc.Stderr());
  return r;
}

// A thin alias: the text module cuts (by characters, the newest kept).
std::string Tail(const std::string& text, std::size_t max_lines, std::size_t max_chars) {
  return text::TailLines(text, max_lines, max_chars);
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

}  // namespace superagent::exec
