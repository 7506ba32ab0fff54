// The daemon's process against another process of its own user (issue 33 item 6): it is
// non-dumpable, so its /proc/<pid>/environ (and mem, maps, ptrace) are closed to a same-uid
// process — a worker command that got out of its sandbox, a shell of the service user. Only a
// process with CAP_SYS_PTRACE (root) still reads it. The real binary, run as `nobody` when the
// test is root, so that the reader and the daemon really share a uid that is not root.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon_process.h"
#include "run_binary.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kSetpriv = "/usr/bin/setpriv";

// argv that runs `argv` as nobody when this test is root (as itself otherwise).
std::vector<std::string> AsTheServiceUser(std::vector<std::string> argv) {
  if (::geteuid() != 0) return argv;
  argv.insert(argv.begin(), {kSetpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  return argv;
}

TEST(DaemonHardeningTest, AnotherProcessOfTheDaemonsUserCannotReadItsEnvironment) {
  if (::geteuid() == 0 && !fs::exists(kSetpriv)) GTEST_SKIP() << "needs setpriv (util-linux) to become nobody";
  const fs::path dir = fs::temp_directory_path() / ("superagent-hardening-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "data");
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown((dir / "data").c_str(), 65534, 65534), 0);
  }
  const int port = FreeLoopbackPort();
  std::ofstream(dir / "superagent.yaml") << "data_dir: data\npanel:\n  listen: 127.0.0.1:" << port
                                         << "\nexecution:\n  sandbox: off\n";
  const auto argv = AsTheServiceUser({SUPERAGENT_BINARY, "serve", "--config", (dir / "superagent.yaml").string()});
  // A variable no config names stays in the environment: what a same-uid reader would get.
  DaemonProcess d(argv[0], std::vector<std::string>(argv.begin() + 1, argv.end()),
                  {{"SUPERAGENT_HARDENING_MARKER", "visible-to-whoever-reads-environ"}});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  const std::string proc = "/proc/" + std::to_string(d.pid());
  const auto reader = AsTheServiceUser(
      {"/bin/sh", "-c", "id -u; tr '\\0' ' ' < " + proc + "/cmdline; echo; cat " + proc + "/environ 2>&1; echo; "
                        "cat " + proc + "/maps 2>&1 | head -c 200"});
  RunResult r = RunProgram(reader[0], std::vector<std::string>(reader.begin() + 1, reader.end()));
  // The same process, the same user: its command line is there to read, its environment is not.
  EXPECT_THAT(r.out, HasSubstr((::geteuid() == 0 ? "65534" : std::to_string(::geteuid())) + "\n"));
  EXPECT_THAT(r.out, HasSubstr("serve --config")) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr(proc + "/environ: Permission denied")) << r.out;
  EXPECT_THAT(r.out, HasSubstr(proc + "/maps: Permission denied")) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("visible-to-whoever-reads-environ")));
  // The daemon is still a normal process to itself and to root (systemd, a person debugging).
  if (::geteuid() == 0) {
    std::ifstream in(proc + "/environ", std::ios::binary);
    const std::string env(std::istreambuf_iterator<char>(in), {});
    EXPECT_THAT(env, HasSubstr("visible-to-whoever-reads-environ"));
  }
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace superagent::testing
