// A root daemon's worker is not root (issue 33 item 6). Before, it ran as uid 0 with its
// capabilities dropped: still the owner of every root file the sandbox shows, so it read a
// root-only file and wrote a root-owned one. Now it runs as an unprivileged uid (nobody), its
// own trees made usable by ACL entries, and git works in them. Real processes, the real
// bubblewrap sandbox; only meaningful where the tests run as root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "superagent/clock.h"
#include "superagent/process.h"
#include "superagent/sandbox.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadUidFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class SandboxWorkerUidTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "a daemon that is not root has no other uid to give its workers";
    dir_ = fs::temp_directory_path() / ("superagent-worker-uid-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ::umask(077);  // as the unit's UMask=0077: nothing of the daemon's is open to others by mode
    tree_ = dir_ / "data" / "work" / "tickets" / "ticket-1";
    outside_ = dir_ / "team-shared";
    fs::create_directories(tree_ / "src");
    fs::create_directories(outside_);
    std::ofstream(tree_ / "src" / "daemon-made.txt") << "checked out by the daemon\n";
    std::ofstream(outside_ / "root-only") << "ROOT-ONLY-CONTENT\n";
    std::ofstream(outside_ / "root-owned") << "root's\n";
    const auto readable = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read;
    fs::permissions(outside_ / "root-owned", readable);
    // Open to every uid by mode: only the files' own modes and owners stand in the way.
    fs::permissions(outside_, readable | fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec);
    ASSERT_EQ(std::system(("git -C " + tree_.string() + " init -q -b main && git -C " + tree_.string() +
                           " add -A && git -C " + tree_.string() + " -c user.name=d -c user.email=d@d commit -q -m base")
                              .c_str()),
              0);
    policy_.enabled = true;
    policy_.network = false;
    policy_.state_dir = (dir_ / "data" / "work" / "sandbox").string();
    // The worktree read-write; a directory of the team's shown too, read-write and read-only.
    scope_ = {"ticket-1", {tree_.string(), outside_.string()}, {}};
  }
  void TearDown() override {
    ::umask(022);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  exec::RunResult Run(const std::string& command) {
    exec::PosixRunnerOptions ro;
    ro.cgroup_parent = "off";
    ro.sandbox = policy_;
    auto runner = exec::MakePosixProcessRunner(ro);
    exec::ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", command};
    spec.cwd = tree_.string();
    spec.worker = scope_;
    spec.output_dir = (dir_ / "out").string();
    auto r = exec::RunToCompletion(*runner, spec, SystemClock(), exec::RealSleeper(), 60'000, 5);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : exec::RunResult{};
  }

  fs::path dir_, tree_, outside_;
  exec::SandboxPolicy policy_;
  exec::WorkerScope scope_;
};

TEST_F(SandboxWorkerUidTest, ARootDaemonsWorkerIsNobodyAndCannotTouchRootsFiles) {
  const auto r = Run("echo \"uid=$(id -u) gid=$(id -g) groups=$(id -G)\"; grep -E 'Cap(Eff|Bnd)' /proc/self/status; "
                     "cat " + (outside_ / "root-only").string() + " 2>&1; "
                     "echo appended >> " + (outside_ / "root-owned").string() + " 2>&1 || echo append-refused; "
                     "echo new > " + (outside_ / "planted").string() + " 2>&1 || echo create-refused; "
                     "echo end");
  EXPECT_THAT(r.out, HasSubstr("uid=65534 gid=65534 groups=65534\n")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"));
  EXPECT_THAT(r.out, HasSubstr("root-only: Permission denied"));
  EXPECT_THAT(r.out, Not(HasSubstr("ROOT-ONLY-CONTENT")));
  EXPECT_THAT(r.out, HasSubstr("append-refused"));
  EXPECT_THAT(r.out, HasSubstr("create-refused"));
  EXPECT_THAT(r.out, HasSubstr("end\n"));
  EXPECT_EQ(ReadUidFile(outside_ / "root-owned"), "root's\n");
  EXPECT_FALSE(fs::exists(outside_ / "planted"));
}

// Its own tree stays its to work in: it edits what the daemon checked out, creates files and
// directories, runs git (which would refuse a repository owned by another uid); on the host the
// daemon's files keep their owner and mode, and what the worker made is the worker uid's (the
// daemon, root, reads and commits it all).
TEST_F(SandboxWorkerUidTest, ItsOwnTreeStaysWritableAndGitWorksInIt) {
  const auto r = Run("echo edited >> src/daemon-made.txt && mkdir -p new/deeper && echo made > new/deeper/by-worker.txt && "
                     "echo home > \"$HOME/h\" && echo tmp > /tmp/t && "
                     "git status --short && git -c user.name=w -c user.email=w@w commit -q --allow-empty -m w 2>&1; "
                     "echo git-exit=$?");
  EXPECT_THAT(r.out, HasSubstr("?? new/")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr(" M src/daemon-made.txt")) << r.out << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("dubious ownership")));
  EXPECT_EQ(ReadUidFile(tree_ / "src" / "daemon-made.txt"), "checked out by the daemon\nedited\n");
  struct stat st {};
  ASSERT_EQ(::stat((tree_ / "src" / "daemon-made.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "the daemon's file keeps its owner";
  ASSERT_EQ(::stat((tree_ / "new" / "deeper" / "by-worker.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u) << "what the worker made is the worker uid's";
  EXPECT_EQ(ReadUidFile(tree_ / "new" / "deeper" / "by-worker.txt"), "made\n");
  // The daemon's own git (root, outside the sandbox) still takes the tree as its own.
  const std::string status = [&] {
    std::string out;
    FILE* p = ::popen(("git -C " + tree_.string() + " status --short 2>&1").c_str(), "r");
    char buf[256];
    while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    if (p != nullptr) ::pclose(p);
    return out;
  }();
  EXPECT_THAT(status, HasSubstr("?? new/"));
  // A link the worker plants in its tree is never followed by the grant: the file it points at
  // (a root-only one the sandbox shows) gets no ACL entry and stays unreadable.
  char before[256];
  const ssize_t acl_before = ::getxattr((outside_ / "root-only").c_str(), "system.posix_acl_access", before, sizeof before);
  const auto planted = Run("ln -s " + (outside_ / "root-only").string() + " link && ln -s " + outside_.string() +
                           " dir-link && echo planted");
  EXPECT_THAT(planted.out, HasSubstr("planted"));
  const auto again = Run("cat link 2>&1; cat dir-link/root-only 2>&1");  // the grant ran again first
  EXPECT_THAT(again.out, Not(HasSubstr("ROOT-ONLY-CONTENT")));
  EXPECT_THAT(again.out, HasSubstr("Permission denied"));
  char after[256];
  EXPECT_EQ(::getxattr((outside_ / "root-only").c_str(), "system.posix_acl_access", after, sizeof after), acl_before);
}

TEST(SandboxWorkerUidArgvTest, TheArgvSwitchesToTheWorkerUidAndGitIsToldTheTreeIsSafe) {
  exec::SandboxPolicy p;
  p.enabled = true;
  const auto a = exec::SandboxArgv(p, {"t", {}, {}}, "/h", "/t", "/w", {"make"});
  const auto env = exec::WorkerEnv(p, {}, "/h", "/t", {{"GIT_CONFIG_COUNT", "1"}, {"GIT_CONFIG_KEY_0", "a.b"}});
  auto has = [](const std::vector<std::string>& v, std::vector<std::string> seq) {
    return std::search(v.begin(), v.end(), seq.begin(), seq.end()) != v.end();
  };
  if (::geteuid() != 0) {
    EXPECT_FALSE(exec::WorkerIds(p).has_value());
    EXPECT_TRUE(has(a, {"--chdir", "/w", "--", "make"}));
    EXPECT_FALSE(has(env, {"GIT_CONFIG_COUNT=2"}));
    return;
  }
  const auto ids = exec::WorkerIds(p);
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(ids->first, 65534);
  EXPECT_EQ(ids->second, 65534);
  // bwrap makes a mount point's missing parents 0700 root: they are opened so nobody can walk
  // to its HOME; a mount point itself, and what lies below a shown directory, are the host's.
  const auto deep = exec::SandboxArgv(p, {"t", {}, {"/usr/share"}}, "/srv/state/t/home", "/t", "/w", {"make"});
  EXPECT_TRUE(has(deep, {"--chmod", "0755", "/srv/state/t"}));
  EXPECT_TRUE(has(deep, {"--chmod", "0755", "/srv"}));
  EXPECT_FALSE(has(deep, {"--chmod", "0755", "/srv/state/t/home"}));
  EXPECT_FALSE(has(deep, {"--chmod", "0755", "/usr"}));
  EXPECT_TRUE(has(a, {"--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"}));
  EXPECT_TRUE(has(a, {"--chdir", "/w", "--", "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                      "--inh-caps=-all", "--bounding-set=-all", "--", "make"}));
  // A caller's git settings are kept; safe.directory is appended after them.
  EXPECT_TRUE(has(env, {"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_KEY_1=safe.directory"}));
  EXPECT_TRUE(has(env, {"GIT_CONFIG_VALUE_1=*"}));
  // Off, nothing changes uid.
  p.enabled = false;
  EXPECT_FALSE(exec::WorkerIds(p).has_value());
}

}  // namespace
}  // namespace superagent::testing
