// The worker sandbox: built environments and bubblewrap argv (superagent/sandbox.h). bwrap, not
// a home-made container: it is what Flatpak uses and Debian ships it.
#include "superagent/sandbox.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>

#include "superagent/process.h"

namespace superagent::exec {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// Locale, terminal and time zone: what makes output readable and timestamps right; none of them
// can carry a credential a deployment would set.
bool Allowed(const std::string& name) {
  return name == "PATH" || name == "LANG" || name == "LANGUAGE" || name == "TERM" || name == "TZ" ||
         name.rfind("LC_", 0) == 0;
}

std::vector<std::string> Flatten(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::map<std::string, std::string> AllowedOf(const std::map<std::string, std::string>& daemon_env) {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : daemon_env)
    if (Allowed(k)) env[k] = v;
  if (!env.count("PATH") || env["PATH"].empty()) env["PATH"] = kDefaultPath;
  return env;
}

// True when `path` is `dir` or below it (both absolute and normal).
bool Below(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

std::string Normal(const std::string& p) {
  std::error_code ec;
  return fs::absolute(p, ec).lexically_normal().string();
}

}  // namespace

std::vector<std::string> DaemonCommandEnv(const std::map<std::string, std::string>& daemon_env,
                                          const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> env = AllowedOf(daemon_env);
  if (auto h = daemon_env.find("HOME"); h != daemon_env.end()) env["HOME"] = h->second;
  for (const auto& [k, v] : extra) env[k] = v;
  return Flatten(env);
}

std::vector<std::string> WorkerEnv(const SandboxPolicy& policy, const std::map<std::string, std::string>& daemon_env,
                                   const std::string& home, const std::string& tmp,
                                   const std::vector<std::pair<std::string, std::string>>& extra) {
  std::map<std::string, std::string> env = AllowedOf(daemon_env);
  env["HOME"] = home;
  // Inside the sandbox the private temp directory is also /tmp; outside it only has its path.
  env["TMPDIR"] = policy.enabled ? "/tmp" : tmp;
  for (const std::string& name : policy.pass_env)
    if (auto it = daemon_env.find(name); it != daemon_env.end()) env[name] = it->second;
  for (const auto& [k, v] : extra) env[k] = v;
  return Flatten(env);
}

std::pair<std::string, std::string> ScopeDirs(const SandboxPolicy& policy, const WorkerScope& scope) {
  std::string name;
  for (char c : scope.name)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (name.empty() || name == "." || name == "..") name = "default";
  std::error_code ec;
  const fs::path base = policy.state_dir.empty()
                            ? fs::temp_directory_path(ec) / ("superagent-workers-" + std::to_string(::getuid()))
                            : fs::path(policy.state_dir);
  const fs::path dir = fs::path(Normal(base.string())) / name;
  return {(dir / "home").string(), (dir / "tmp").string()};
}

std::vector<std::string> SandboxArgv(const SandboxPolicy& policy, const WorkerScope& scope, const std::string& home,
                                     const std::string& tmp, const std::string& cwd,
                                     const std::vector<std::string>& argv) {
  std::vector<std::string> a = {policy.bwrap,
                                // Dies with the bwrap that starts it (so with the group kill);
                                // a pid namespace of its own: the daemon's /proc/<pid>/environ
                                // and every other process are out of sight, and the namespace
                                // (with whatever left the process group) goes with its first
                                // process.
                                "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                                // No controlling terminal: TIOCSTI cannot type into the daemon's.
                                "--new-session"};
  // Run by root, bwrap keeps every capability inside unless told (a root worker could then mknod
  // a disk and mount it); unprivileged, it has none to drop.
  if (::geteuid() == 0) a.insert(a.end(), {"--cap-drop", "ALL"});
  if (!policy.network) a.push_back("--unshare-net");
  std::error_code ec;
  // The system, read-only. Merged-/usr hosts have /bin etc. as symlinks into /usr: kept so.
  std::vector<std::string> shown;
  auto ro = [&](const std::string& p) {
    if (!fs::exists(p, ec)) return;
    a.insert(a.end(), {"--ro-bind", p, p});
    shown.push_back(p);
  };
  ro("/usr");
  for (const char* p : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    if (fs::is_symlink(p, ec)) a.insert(a.end(), {"--symlink", fs::read_symlink(p, ec).string(), p});
    else ro(p);
  }
  ro("/etc");
  ro("/opt");
  // A resolv.conf that points into /run (systemd-resolved) must resolve inside too.
  if (policy.network && fs::is_symlink("/etc/resolv.conf", ec)) {
    const fs::path real = fs::canonical("/etc/resolv.conf", ec);
    if (!ec && !Below(real.string(), "/etc") && !Below(real.string(), "/usr"))
      a.insert(a.end(), {"--ro-bind", real.parent_path().string(), real.parent_path().string()});
  }
  // What must not be seen below the shown system directories.
  for (const std::string& h : policy.hidden) {
    if (h.empty()) continue;
    const std::string p = Normal(h);
    bool under = false;
    for (const std::string& s : shown) under |= Below(p, s) && p != s;
    if (!under || !fs::exists(p, ec)) continue;
    if (fs::is_directory(p, ec)) a.insert(a.end(), {"--tmpfs", p});
    else a.insert(a.end(), {"--ro-bind", "/dev/null", p});
  }
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev"});
  // The private temp directory at /tmp too, so tools that ignore TMPDIR stay private; mount
  // points of the directories below that are made inside it (empty directories).
  a.insert(a.end(), {"--bind", tmp, "/tmp", "--bind", home, home});
  for (const std::string& r : scope.readable)
    if (fs::exists(r, ec)) a.insert(a.end(), {"--ro-bind", r, r});
  // After the read-only ones: a worktree's own git directory lies below the shared clone.
  for (const std::string& w : scope.writable)
    if (fs::exists(w, ec)) a.insert(a.end(), {"--bind", w, w});
  a.insert(a.end(), {"--chdir", cwd.empty() ? home : cwd, "--"});
  a.insert(a.end(), argv.begin(), argv.end());
  return a;
}

std::string SandboxFix() {
  return "install bubblewrap (apt-get install bubblewrap); where it is installed but cannot create namespaces "
         "(a container without them, kernel.unprivileged_userns_clone=0, or AppArmor's "
         "kernel.apparmor_restrict_unprivileged_userns=1 for a service user), run the daemon where it can, or "
         "set execution.sandbox: off to run workers WITHOUT a sandbox";
}

SandboxSupport ProbeSandbox(const SandboxPolicy& policy_in) {
  SandboxPolicy policy = policy_in;
  policy.enabled = true;
  SandboxSupport s;
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec) / ("superagent-sandbox-probe-" + std::to_string(::getpid()));
  fs::create_directories(dir / "home", ec);
  fs::create_directories(dir / "tmp", ec);
  WorkerScope scope;
  scope.writable = {(dir / "home").string()};
  const auto argv = SandboxArgv(policy, scope, (dir / "home").string(), (dir / "tmp").string(), "", {"true"});
  std::string cmd;
  for (const auto& w : argv) cmd += ShellQuote(w) + " ";
  cmd += "2>&1 </dev/null";
  std::string out;
  int status = -1;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[512];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    status = ::pclose(f);
  }
  fs::remove_all(dir, ec);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (status == 0) {
    s.supported = true;
    s.detail = policy.bwrap + " starts commands in namespaces of their own" +
               std::string(policy.network ? "" : " (network too)");
    return s;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    s.detail = policy.bwrap + " is not installed";
  else
    s.detail = policy.bwrap + " cannot start a sandbox here" + (out.empty() ? std::string() : ": " + out.substr(0, 300));
  return s;
}

Result<SandboxDecision> DecideSandbox(const std::string& mode, const SandboxSupport& support) {
  SandboxDecision d;
  if (mode != "on" && mode != "off") return Status::InvalidArgument("execution.sandbox: must be on or off (got \"" + mode + "\")");
  if (mode == "off") {
    d.detail = "execution.sandbox: off — worker commands run WITHOUT a sandbox: they can read data_dir (the "
               "database, every Ticket's worktree), the config and the daemon's processes";
    return d;
  }
  if (support.supported) {
    d.enabled = true;
    d.detail = "bubblewrap (execution.sandbox: " + mode + "): " + support.detail;
    return d;
  }
  // Issue 19: a host that cannot sandbox never runs workers unsandboxed by default; a person
  // must say so with `off`.
  return Status::InvalidArgument("execution.sandbox: on, but this host cannot sandbox: " + support.detail + "; " +
                                 SandboxFix());
}

}  // namespace superagent::exec
