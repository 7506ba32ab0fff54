// cgroup v2 trees. Every step may fail on hosts that do not delegate cgroups (containers, a
// service without Delegate=yes); each failure turns containment back into process groups only,
// with the reason kept for the log and `doctor`.
#include "exec/cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace superagent::exec {

namespace fs = std::filesystem;

namespace {

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

std::vector<int> Pids(const std::string& group) {
  std::ifstream in(group + "/cgroup.procs");
  std::vector<int> pids;
  for (int pid; in >> pid;) pids.push_back(pid);
  return pids;
}

void KillMembers(const std::string& group) {
  if (fs::exists(group + "/cgroup.kill") && WriteFile(group + "/cgroup.kill", "1")) return;
  // Before cgroup.kill (Linux 5.14) a member may fork while we read; a few passes catch those.
  for (int pass = 0; pass < 5; ++pass) {
    std::vector<int> pids = Pids(group);
    if (pids.empty()) return;
    for (int pid : pids) ::kill(pid, SIGKILL);
  }
}

// SIGKILL is delivered at once but the members exit a moment later; the directory can only go
// then (zombies do not count). Bounded: a member stuck in the kernel keeps it for a later sweep.
bool KillAndRmdir(const std::string& group) {
  KillMembers(group);
  for (int i = 0; i < 500; ++i) {
    if (::rmdir(group.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// "superagent-<pid>" of a daemon that no longer runs.
bool Abandoned(const std::string& name) {
  const std::string prefix = "superagent-";
  if (name.rfind(prefix, 0) != 0) return false;
  const std::string digits = name.substr(prefix.size());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  const int pid = std::stoi(digits);
  return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

std::string OwnCgroupDir() {
  std::string mount;
  std::ifstream mi("/proc/self/mountinfo");
  for (std::string line; std::getline(mi, line);) {
    // "... <mount point> <options> ... - cgroup2 <source> <super options>"
    auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string f;
    for (int i = 0; i < 5 && fields >> f; ++i) {
    }
    mount = f;
    break;
  }
  if (mount.empty()) return "";
  std::ifstream cg("/proc/self/cgroup");
  for (std::string line; std::getline(cg, line);)
    if (line.rfind("0::", 0) == 0) return mount + (line.size() > 3 && line.substr(3) != "/" ? line.substr(3) : "");
  return "";
}

CgroupTree::CgroupTree(const std::string& parent_in) {
  const std::string parent = parent_in.empty() ? OwnCgroupDir() : parent_in;
  if (parent.empty()) {
    detail_ = "no cgroup v2 hierarchy is mounted";
    return;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    if (!entry.is_directory() || !Abandoned(entry.path().filename().string())) continue;
    for (const auto& job : fs::directory_iterator(entry.path(), ec))
      if (job.is_directory()) KillAndRmdir(job.path().string());
    ::rmdir(entry.path().c_str());
  }
  root_ = parent + "/superagent-" + std::to_string(::getpid());
  if (::mkdir(root_.c_str(), 0755) != 0 && errno != EEXIST) {
    detail_ = "cannot create a cgroup in " + parent + ": " + std::strerror(errno) +
              " (run as root or under systemd with Delegate=yes)";
    return;
  }
  // Prove a process can join one, as every spawned command will.
  auto probe = NewGroup();
  if (!probe) {
    detail_ = "cannot create a cgroup in " + root_ + ": " + std::strerror(errno);
    ::rmdir(root_.c_str());
    return;
  }
  const int rc = std::system(("{ echo 0 > '" + *probe + "/cgroup.procs'; } 2>/dev/null && exit 0; exit 1").c_str());
  ::rmdir(probe->c_str());
  if (rc != 0) {
    detail_ = "cannot move processes into " + root_ + " (no write access to cgroup.procs)";
    ::rmdir(root_.c_str());
    return;
  }
  enabled_ = true;
  detail_ = root_;
}

CgroupTree::~CgroupTree() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& g : to_remove_) KillAndRmdir(g);
  ::rmdir(root_.c_str());
}

std::optional<std::string> CgroupTree::NewGroup() {
  std::lock_guard<std::mutex> lock(mu_);
  if (root_.empty()) return std::nullopt;
  const std::string g = root_ + "/job-" + std::to_string(++next_);
  if (::mkdir(g.c_str(), 0755) != 0) return std::nullopt;
  return g;
}

void CgroupTree::KillAndRemove(const std::string& group) {
  const bool removed = KillAndRmdir(group);
  std::lock_guard<std::mutex> lock(mu_);
  if (!removed) to_remove_.push_back(group);
  RemoveEmpty();
}

void CgroupTree::KillEverything() {
  std::error_code ec;
  for (const auto& job : fs::directory_iterator(root_, ec))
    if (job.is_directory()) KillMembers(job.path().string());
}

void CgroupTree::RemoveEmpty() {
  // A killed member stays until its parent reaps it, so a directory may stay busy a moment.
  std::vector<std::string> busy;
  for (const std::string& g : to_remove_)
    if (::rmdir(g.c_str()) != 0 && errno == EBUSY) busy.push_back(g);
  to_remove_ = std::move(busy);
}

std::vector<std::string> CgroupTree::JoinThenExec(const std::string& procs, const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"/bin/sh", "-c", "{ echo 0 > \"$0\"; } 2>/dev/null; exec \"$@\"", procs};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace superagent::exec
