// The sandbox against the host it is deployed on (issue 33 item 6): the shipped systemd unit is
// valid, and execution.network: off works under the unit's RestrictAddressFamilies=. systemd is
// not PID 1 where these tests run, so the restriction is reproduced as systemd applies it: a
// seccomp filter that fails socket(2) with EAFNOSUPPORT for every family the unit does not list,
// built from the unit file itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "run_binary.h"
#include "superagent/sandbox.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const fs::path kUnit = fs::path(SUPERAGENT_SOURCE_DIR) / "config" / "superagent.service";

std::string ReadHostFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The value of the unit's `key=` line (the last one, as systemd reads a list it is not reset in).
std::string UnitSetting(const std::string& key) {
  std::istringstream in(ReadHostFile(kUnit));
  std::string line, value;
  while (std::getline(in, line))
    if (line.rfind(key + "=", 0) == 0) value = line.substr(key.size() + 1);
  return value;
}

// Address family numbers by the names systemd takes.
std::vector<int> Families(const std::string& list) {
  static const std::map<std::string, int> kByName = {{"AF_UNIX", AF_UNIX},       {"AF_INET", AF_INET},
                                                     {"AF_INET6", AF_INET6},     {"AF_NETLINK", AF_NETLINK},
                                                     {"AF_PACKET", AF_PACKET},   {"AF_VSOCK", AF_VSOCK}};
  std::vector<int> out;
  std::istringstream in(list);
  for (std::string name; in >> name;) {
    auto it = kByName.find(name);
    EXPECT_NE(it, kByName.end()) << "unknown family in the unit: " << name;
    if (it != kByName.end()) out.push_back(it->second);
  }
  return out;
}

// The filter systemd installs for RestrictAddressFamilies=<allowed>: socket(2) with any other
// family fails with EAFNOSUPPORT; nothing else is touched.
std::vector<sock_filter> AddressFamilyFilter(const std::vector<int>& allowed) {
#if defined(__x86_64__)
  constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
#error "add this architecture's AUDIT_ARCH"
#endif
  std::vector<sock_filter> f = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),  // the family (low word)
  };
  const auto n = static_cast<unsigned char>(allowed.size());
  for (unsigned char i = 0; i < n; ++i)
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(allowed[i]), static_cast<unsigned char>(n - i), 0));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return f;
}

// Runs `argv` under the filter for `allowed`; stdout and stderr together.
RunResult RunRestricted(const std::vector<int>& allowed, const std::vector<std::string>& argv_in) {
  std::vector<sock_filter> filter = AddressFamilyFilter(allowed);
  sock_fprog prog{static_cast<unsigned short>(filter.size()), filter.data()};
  std::vector<std::string> argv_s = argv_in;
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  RunResult r;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return r;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::dup2(p[1], 2);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
      _exit(126);
    ::execvp(argv[0], argv.data());
    _exit(127);
  }
  ::close(p[1]);
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<std::size_t>(n));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

TEST(SandboxHostTest, TheShippedUnitPassesSystemdAnalyzeVerify) {
  // verify checks that ExecStart's program exists: the binary under test stands for /usr/bin's.
  const fs::path dir = fs::temp_directory_path() / ("superagent-unit-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string unit = ReadHostFile(kUnit);
  const std::string exec = "ExecStart=/usr/bin/superagent ";
  ASSERT_NE(unit.find(exec), std::string::npos);
  unit.replace(unit.find(exec), exec.size(), "ExecStart=" + std::string(SUPERAGENT_BINARY) + " ");
  std::ofstream(dir / "superagent.service") << unit;
  std::string analyze;
  for (const char* p : {"/usr/bin/systemd-analyze", "/bin/systemd-analyze"})
    if (analyze.empty() && fs::exists(p)) analyze = p;
  ASSERT_FALSE(analyze.empty()) << "systemd-analyze is missing: apt-get install systemd (cmake/dev.sh deps)";
  RunResult r = RunProgram(analyze, {"verify", (dir / "superagent.service").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "") << "systemd warns about the unit";
  fs::remove_all(dir);
}

// execution.network: off under the unit's address families: the sandboxed command starts, has a
// working loopback of its own, and the filter is really there (a family outside the unit's list
// fails with EAFNOSUPPORT, not the EPERM a missing capability gives). Without AF_NETLINK in
// the list the same sandbox cannot start at all — what the unit shipped with before.
TEST(SandboxHostTest, NetworkOffWorksUnderTheUnitsRestrictAddressFamilies) {
  const std::string families = UnitSetting("RestrictAddressFamilies");
  ASSERT_FALSE(families.empty()) << "the unit restricts address families";
  const std::vector<int> allowed = Families(families);
  const fs::path dir = fs::temp_directory_path() / ("superagent-netoff-" + std::to_string(::getpid()));
  fs::create_directories(dir / "home");
  fs::create_directories(dir / "tmp");
  fs::create_directories(dir / "work");
  exec::SandboxPolicy p;
  p.enabled = true;
  p.network = false;
  exec::WorkerScope scope{"netoff", {(dir / "work").string()}, {}};
  const std::string script =
      "import socket, errno\n"
      "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
      "c = socket.create_connection(s.getsockname(), 2); print('LOOPBACK-UP')\n"
      "print(open('/proc/net/dev').read().count(':'), 'interfaces')\n"
      "try:\n"
      "    socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
      "except OSError as e:\n"
      "    print('AF_PACKET', errno.errorcode[e.errno])\n";
  const auto argv = exec::SandboxArgv(p, scope, (dir / "home").string(), (dir / "tmp").string(), (dir / "work").string(),
                                      {"python3", "-c", script});
  RunResult r = RunRestricted(allowed, argv);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("LOOPBACK-UP\n"));
  EXPECT_THAT(r.out, HasSubstr("\n1 interfaces\n")) << "only its own loopback: a namespace of its own";
  EXPECT_THAT(r.out, HasSubstr("AF_PACKET EAFNOSUPPORT")) << "the unit's restriction applied";

  std::vector<int> without_netlink;
  for (int f : allowed)
    if (f != AF_NETLINK) without_netlink.push_back(f);
  r = RunRestricted(without_netlink, argv);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("NETLINK")) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("LOOPBACK-UP")));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace superagent::testing
