// cgroup v2 subtrees for process trees (SPEC §6 "process groups, cgroups v2 where available").
// A process group is escaped by setsid(); a cgroup is not, and cgroup.kill ends every member at
// once. The daemon never enables controllers, so it may keep running in its own (inner) cgroup.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace superagent::exec {

class CgroupTree {
 public:
  // Prepares "<parent>/superagent-<pid>" ("" parent = the daemon's own cgroup v2) and first
  // sweeps such directories of daemons that are gone, killing what they left. Never fails:
  // enabled() says whether it can be used, detail() where or why not.
  explicit CgroupTree(const std::string& parent);
  ~CgroupTree();

  bool enabled() const { return enabled_; }
  const std::string& detail() const { return detail_; }
  // A new empty cgroup for one process tree; its cgroup.procs path is what a process writes "0"
  // into to join. nullopt when disabled or the directory cannot be made.
  std::optional<std::string> NewGroup();
  // SIGKILLs every process in `group` (cgroup.kill, or each pid of cgroup.procs on kernels
  // before 5.14) and removes the directory once it is empty (now or at a later call).
  void KillAndRemove(const std::string& group);
  // The command line that makes a process join `procs` before it becomes `argv` (so nothing it
  // starts can run outside the cgroup, not even for a moment).
  // SIGKILLs the members of every cgroup of this tree (leaves the directories for later).
  void KillEverything();
  static std::vector<std::string> JoinThenExec(const std::string& procs, const std::vector<std::string>& argv);

 private:
  void RemoveEmpty();
  bool enabled_ = false;
  std::string root_;    // <parent>/superagent-<pid>
  std::string detail_;
  std::mutex mu_;
  std::uint64_t next_ = 0;
  std::vector<std::string> to_remove_;  // killed, not yet empty
};

// The daemon's own cgroup v2 directory ("" when there is no cgroup v2 hierarchy).
std::string OwnCgroupDir();

}  // namespace superagent::exec
