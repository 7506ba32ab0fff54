// The worker sandbox: built environments and bubblewrap argv (superagent/sandbox.h). bwrap, not
// a home-made container: it is what Flatpak uses and Debian ships it.
#include "superagent/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

// The host's directories a sandbox shows read-only, in the order SandboxArgv mounts them; the one
// list SandboxHides reads too, so a check of what a worker sees cannot drift from the sandbox.
const std::vector<std::string>& SystemDirs() {
  static const std::vector<std::string> kDirs = {"/usr",  "/bin",   "/sbin", "/lib", "/lib32",
                                                 "/lib64", "/libx32", "/etc", "/opt"};
  return kDirs;
}

// Merged-/usr hosts make these links into /usr: shown as the same links inside.
bool LinkedIntoUsr(const std::string& p) { return p != "/usr" && p != "/etc" && p != "/opt"; }

// ---- POSIX ACLs, written as the kernel reads them (linux/posix_acl_xattr.h) ----

constexpr std::uint16_t kAclUserObj = 0x01, kAclUser = 0x02, kAclGroupObj = 0x04, kAclMask = 0x10, kAclOther = 0x20;
constexpr std::uint32_t kAclNoId = 0xffffffffu;

void AppendLe(std::string* out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// An ACL that keeps the owner, group and other bits of `mode` and gives `uid` `perm`, with the
// mask that lets it through.
std::string AclFor(mode_t mode, std::uint32_t uid, std::uint16_t perm) {
  const std::uint16_t owner = (mode >> 6) & 7, group = (mode >> 3) & 7, other = mode & 7;
  std::string out;
  AppendLe(&out, 2, 4);  // POSIX_ACL_XATTR_VERSION
  const std::uint64_t entries[][3] = {{kAclUserObj, owner, kAclNoId},   {kAclUser, perm, uid},
                                      {kAclGroupObj, group, kAclNoId},  {kAclMask, static_cast<std::uint16_t>(group | perm), kAclNoId},
                                      {kAclOther, other, kAclNoId}};
  for (const auto& e : entries) {
    AppendLe(&out, e[0], 2);
    AppendLe(&out, e[1], 2);
    AppendLe(&out, e[2], 4);
  }
  return out;
}

// Sets xattr `name` to `value` on `fd` unless it already is that (most of a tree, from the
// second command on). O_PATH descriptors take xattrs only through their /proc/self/fd link.
bool SetAcl(int fd, bool o_path, const char* name, const std::string& value, int* err) {
  char have[128];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = o_path ? ::getxattr(link.c_str(), name, have, sizeof have) : ::fgetxattr(fd, name, have, sizeof have);
  if (n == static_cast<ssize_t>(value.size()) && std::memcmp(have, value.data(), value.size()) == 0) return true;
  const int rc = o_path ? ::setxattr(link.c_str(), name, value.data(), value.size(), 0)
                        : ::fsetxattr(fd, name, value.data(), value.size(), 0);
  if (rc != 0) *err = errno;
  return rc == 0;
}

struct Grant {
  std::uint32_t uid;
  bool write;
  dev_t dev;
  int err = 0;          // the first failure's errno
  std::string where;    // … and its path
};

// Grants below the directory open at `dirfd` (whose path is `path`), `depth` levels deep at most.
// Only through descriptors, each name opened relative to its directory with O_NOFOLLOW: a
// worker that swaps a directory for a link while this runs gets its link skipped, not followed.
void GrantBelow(Grant& g, int dirfd, const std::string& path, int depth) {
  const std::uint16_t dir_perm = g.write ? 7 : 5;
  struct stat st {};
  if (::fstat(dirfd, &st) != 0) return;
  int err = 0;
  if (!SetAcl(dirfd, false, "system.posix_acl_access", AclFor(st.st_mode, g.uid, dir_perm), &err) ||
      !SetAcl(dirfd, false, "system.posix_acl_default", AclFor(0700 | (st.st_mode & 077), g.uid, dir_perm), &err)) {
    if (g.err == 0) g.err = err, g.where = path;
    return;
  }
  if (depth <= 0) return;
  const int listfd = ::dup(dirfd);
  DIR* d = listfd >= 0 ? ::fdopendir(listfd) : nullptr;
  if (d == nullptr) {
    if (listfd >= 0) ::close(listfd);
    return;
  }
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat cst {};
    if (::fstatat(dirfd, name.c_str(), &cst, AT_SYMLINK_NOFOLLOW) != 0 || cst.st_dev != g.dev) continue;
    if (S_ISDIR(cst.st_mode)) {
      const int sub = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) continue;
      GrantBelow(g, sub, path + "/" + name, depth - 1);
      ::close(sub);
    } else if (S_ISREG(cst.st_mode) && cst.st_uid != g.uid) {
      const int f = ::openat(dirfd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (f < 0) continue;
      struct stat fst {};
      // rw (and x where the owner has it) for a file of a tree it may write; r (x) otherwise.
      if (::fstat(f, &fst) == 0 && S_ISREG(fst.st_mode)) {
        const std::uint16_t perm = static_cast<std::uint16_t>((g.write ? 6 : 4) | ((fst.st_mode >> 6) & 1));
        if (!SetAcl(f, true, "system.posix_acl_access", AclFor(fst.st_mode, g.uid, perm), &err) && g.err == 0)
          g.err = err, g.where = path + "/" + name;
      }
      ::close(f);
    }
  }
  ::closedir(d);
}

}  // namespace

std::optional<std::pair<int, int>> WorkerIds(const SandboxPolicy& policy) {
  if (!policy.enabled || ::geteuid() != 0) return std::nullopt;
  return std::make_pair(policy.root_worker_uid, policy.root_worker_gid);
}

Status GrantWorkerAccess(const SandboxPolicy& policy, const WorkerScope& scope, const std::string& home,
                         const std::string& tmp) {
  const auto ids = WorkerIds(policy);
  if (!ids) return Status::Ok();
  std::vector<std::pair<std::string, bool>> roots;  // {directory, writable}
  for (const std::string& p : {home, tmp}) roots.emplace_back(p, true);
  // Only what the daemon keeps (data_dir/work: the clone, the worktrees): a directory of the
  // team's that a scope shows (a local origin) keeps its permissions as they are.
  const std::string kept = policy.state_dir.empty() ? "" : fs::path(Normal(policy.state_dir)).parent_path().string();
  auto ours = [&](const std::string& p) { return kept.empty() || Below(Normal(p), kept); };
  for (const std::string& p : scope.writable)
    if (ours(p)) roots.emplace_back(p, true);
  for (const std::string& p : scope.readable)
    if (ours(p)) roots.emplace_back(p, false);
  for (const auto& [root, write] : roots) {
    const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;  // not there (yet): not shown either
    struct stat st {};
    ::fstat(fd, &st);
    Grant g{static_cast<std::uint32_t>(ids->first), write, st.st_dev};
    GrantBelow(g, fd, root, 128);
    ::close(fd);
    if (g.err != 0)
      return Status::IoError("cannot let the worker uid " + std::to_string(ids->first) + " use " + g.where + ": " +
                             std::strerror(g.err) +
                             (g.err == EOPNOTSUPP ? std::string("; a daemon run as root gives its workers an "
                                                                "unprivileged uid and needs POSIX ACLs on data_dir's "
                                                                "file system (mount it with acl), or run the daemon as "
                                                                "a service user (docs/007)")
                                                  : std::string()));
  }
  return Status::Ok();
}

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
  if (WorkerIds(policy)) {
    // Command-line scope config (GIT_CONFIG_COUNT), which git honours for safe.directory; a
    // count already there (a caller's settings) is extended, not replaced.
    int n = 0;
    if (auto it = env.find("GIT_CONFIG_COUNT"); it != env.end()) {
      for (char c : it->second) n = (c >= '0' && c <= '9' && n < 1000) ? n * 10 + (c - '0') : n;
    }
    env["GIT_CONFIG_KEY_" + std::to_string(n)] = "safe.directory";
    env["GIT_CONFIG_VALUE_" + std::to_string(n)] = "*";
    env["GIT_CONFIG_COUNT"] = std::to_string(n + 1);
  }
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

std::string SandboxHides(const SandboxPolicy& policy, const std::string& path) {
  std::error_code ec;
  // What a path names inside is what it names outside only where both walks stay in shown
  // directories: a link out of them (/usr/local/bin/x -> /home/me/x) leads nowhere inside.
  std::vector<std::string> walks = {Normal(path)};
  const fs::path real = fs::canonical(path, ec);
  if (!ec && real.string() != walks.front()) walks.push_back(real.string());
  for (const std::string& p : walks) {
    bool shown = false;
    for (const std::string& d : SystemDirs()) shown |= fs::exists(d, ec) && Below(p, d);
    if (!shown)
      return p + " is outside the directories the sandbox shows (the Ticket's own directory, and " +
             "/usr, /bin, /lib, /etc and /opt read-only)";
    for (const std::string& h : policy.hidden)
      if (!h.empty() && Below(p, Normal(h)))
        return p + " is below " + Normal(h) + ", which the sandbox hides from workers";
  }
  return "";
}

std::vector<std::string> SandboxArgv(const SandboxPolicy& policy, const WorkerScope& scope, const std::string& home,
                                     const std::string& tmp, const std::string& cwd,
                                     const std::vector<std::string>& argv) {
  const auto ids = WorkerIds(policy);
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
  // a disk and mount it); unprivileged, it has none to drop. A root daemon's worker keeps only
  // what setpriv needs to become the worker uid (below), which empties every set.
  if (ids) {
    a.insert(a.end(), {"--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add",
                       "CAP_SETPCAP"});
  } else if (::geteuid() == 0) {
    a.insert(a.end(), {"--cap-drop", "ALL"});
  }
  if (!policy.network) a.push_back("--unshare-net");
  std::error_code ec;
  // The system, read-only. Merged-/usr hosts have /bin etc. as symlinks into /usr: kept so.
  std::vector<std::string> shown;
  auto ro = [&](const std::string& p) {
    if (!fs::exists(p, ec)) return;
    a.insert(a.end(), {"--ro-bind", p, p});
    shown.push_back(p);
  };
  for (const std::string& p : SystemDirs()) {
    if (LinkedIntoUsr(p) && fs::is_symlink(p, ec)) a.insert(a.end(), {"--symlink", fs::read_symlink(p, ec).string(), p});
    else ro(p);
  }
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
  // A root daemon's worker (another uid) must walk to its directories by their full paths, but
  // bwrap makes every mount point's missing parents 0700 root: those are opened up. Only those:
  // anything at or below a mounted directory is the host's own (the private /tmp aside, where
  // bwrap made them too).
  if (ids) {
    std::vector<std::string> dests = {"/tmp", home};
    for (const std::string& r : scope.readable) dests.push_back(Normal(r));
    for (const std::string& w : scope.writable) dests.push_back(Normal(w));
    std::vector<std::string> mounted = shown;
    mounted.insert(mounted.end(), dests.begin(), dests.end());
    mounted.insert(mounted.end(), {"/proc", "/dev"});
    std::set<std::string> opened;
    for (const std::string& d : dests) {
      for (fs::path p = fs::path(d).parent_path(); p.has_relative_path(); p = p.parent_path()) {
        const std::string s = p.string();
        bool host = false;
        for (const std::string& m : mounted) host |= s == m || (m != "/tmp" && Below(s, m));
        if (!host && opened.insert(s).second) a.insert(a.end(), {"--chmod", "0755", s});
      }
    }
  }
  a.insert(a.end(), {"--chdir", cwd.empty() ? home : cwd, "--"});
  // Not a user namespace: one made by root maps the worker onto root (bwrap maps the sandbox's
  // uid to its caller's), which leaves it the owner of every root file. A real unprivileged uid
  // does not; bwrap still sets no_new_privs, so nothing setuid gives it back.
  if (ids)
    a.insert(a.end(), {fs::exists("/usr/bin/setpriv", ec) ? "/usr/bin/setpriv" : "setpriv",
                       "--reuid=" + std::to_string(ids->first), "--regid=" + std::to_string(ids->second),
                       "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"});
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
