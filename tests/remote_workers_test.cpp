// Issue 36, end to end: a real `superagent serve` with execution.placement: remote, and real
// `superagent worker` processes, each in a network namespace of its own whose one reachable
// address is the daemon's worker listener (tests/netns_worker.sh: an empty loopback and a bridge
// the test holds the host half of). The workers run the real Claude Code in their own bubblewrap
// sandboxes against the loopback model API, reached only through the daemon's gateway; real git
// carries the code both ways. The test cuts a worker's network by stopping its bridge, kills one
// with SIGKILL, and presses Stop in the panel: every Ticket still ends with one result.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_coding_model.h"
#include "process_running.h"
#include "run_binary.h"
#include "serve_fixture.h"
#include "superagent/github.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using nlohmann::json;

constexpr char kRemoteJoinToken[] = "join-0123456789abcdef0123456789abcdef";
constexpr char kRemoteModelKey[] = "sk-remote-model-key-7f3a9c";
constexpr char kRemoteGitHubToken[] = "ghp_THISISASECRETVALUE0123456789";

bool RemoteNetnsSupported() { return std::system("unshare --net true >/dev/null 2>&1") == 0; }


bool RemoteWaitFor(const std::function<bool()>& done, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// Where `needle` occurs in the memory of process `pid` (its readable mappings), as root reads it.
bool RemoteMemoryHolds(pid_t pid, const std::string& needle) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  const int mem = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (mem < 0) return false;
  bool found = false;
  std::string line;
  while (!found && std::getline(maps, line)) {
    unsigned long long from = 0, to = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &from, &to, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar]") != std::string::npos || to - from > (512ull << 20)) continue;
    std::string region(static_cast<std::size_t>(to - from), '\0');
    const ssize_t n = ::pread(mem, region.data(), region.size(), static_cast<off_t>(from));
    if (n > 0) found = std::string_view(region.data(), static_cast<std::size_t>(n)).find(needle) != std::string_view::npos;
  }
  ::close(mem);
  return found;
}

class RemoteWorkersTest : public ServeTest {
 protected:
  struct WorkerHost {
    std::string name;
    fs::path dir;
    std::string socket;
    std::unique_ptr<DaemonProcess> bridge;  // the host half: the worker's only way to the daemon
    std::unique_ptr<DaemonProcess> worker;
  };

  void SetUp() override {
    ServeTest::SetUp();
    if (::geteuid() != 0 || !RemoteNetnsSupported())
      GTEST_SKIP() << "a network namespace per worker needs root (CI runs as root)";
    claude_ = NodeModulesDir() + "/.bin/claude";
    if (!fs::exists(claude_)) GTEST_SKIP() << claude_ << " is missing: run `cmake/dev.sh test` (npm ci in tests/)";
    workers_port_ = FreeLoopbackPort();
  }
  void TearDown() override {
    for (auto& w : hosts_) {
      w->worker.reset();
      w->bridge.reset();
      ::unlink(w->socket.c_str());
    }
    ServeTest::TearDown();
  }

  // PrepareFixRepo's daemon, with Claude Code's turns placed on the workers.
  fs::path Prepare(FakeGitHub& github, const std::string& model_url, const std::string& workers_extra = "") {
    const fs::path origin = PrepareFixRepo(github, "exit 1\n",
                                           "workers:\n  listen: 127.0.0.1:" + std::to_string(workers_port_) +
                                               "\n  join_token_env: SA_JOIN\n  lease_seconds: 5\n" + workers_extra);
    std::ifstream in(dir_ / "superagent.yaml");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string command_executor = "executor: command\n  command: sh fix.sh";
    EXPECT_NE(config.find(command_executor), std::string::npos);
    config.replace(config.find(command_executor), command_executor.size(),
                   "executor: claude-code\n  placement: remote\n  claude_code:\n    binary: " + claude_ +
                       "\n    model: claude-sonnet-4-5\n    api_key_env: SA_REMOTE_MODEL_KEY\n    base_url: " + model_url +
                       "\n    turn_seconds: 120");
    Write("superagent.yaml", config);
    return origin;
  }
  // `superagent serve` on the prepared config, once it is ready and knows its GitHub identity
  // (served_ok_ says whether it got there).
  std::unique_ptr<DaemonProcess> Serve() {
    auto d = std::make_unique<DaemonProcess>(SUPERAGENT_BINARY, std::vector<std::string>{"serve", "--config", Config()},
                                             DaemonEnv());
    served_ok_ = d->WaitForLine("ready") && d->WaitForCount("github identity login=superagent-bot", 1);
    return d;
  }
  std::vector<std::pair<std::string, std::string>> DaemonEnv() {
    return {{"GITHUB_TOKEN", kRemoteGitHubToken},
            {"GITHUB_WEBHOOK_SECRET", "hook-secret"},
            {"SA_REMOTE_MODEL_KEY", kRemoteModelKey},
            {"SA_JOIN", kRemoteJoinToken}};
  }

  // A worker host: its bridge to the daemon, then `superagent worker` in its own namespace.
  // With `ca_file`, the worker reaches the daemon over HTTPS and trusts that CA.
  WorkerHost* StartWorker(const std::string& name, const std::string& ca_file = "") {
    auto w = std::make_unique<WorkerHost>();
    w->name = name;
    w->dir = dir_ / name;
    fs::create_directories(w->dir);
    w->socket = "/tmp/sa-wk-" + std::to_string(::getpid()) + "-" + name + ".sock";
    ::unlink(w->socket.c_str());
    w->bridge = std::make_unique<DaemonProcess>(
        "/usr/bin/python3", std::vector<std::string>{(fs::path(SUPERAGENT_SOURCE_DIR) / "tests/offline_bridge.py").string(),
                                                     "unix-listen", w->socket, std::to_string(workers_port_),
                                                     (w->dir / "bridge.log").string()});
    EXPECT_TRUE(RemoteWaitFor([&] { return fs::exists(w->socket); }, 10'000)) << "the bridge did not listen";
    std::ofstream(w->dir / "worker.yaml") << "daemon_url: " << (ca_file.empty() ? "http" : "https")
                                          << "://127.0.0.1:" << workers_port_ << "\n"
                                          << (ca_file.empty() ? "" : "ca_file: " + ca_file + "\n")
                                          << "join_token_env: SA_JOIN\nname: " << name << "\nslots: 1\n"
                                          << "work_dir: " << (w->dir / "work").string() << "\n"
                                          << "sandbox: on\nexecutors:\n  claude-code:\n    binary: " << claude_ << "\n";
    w->worker = std::make_unique<DaemonProcess>(
        "/usr/bin/unshare",
        std::vector<std::string>{"--net", (fs::path(SUPERAGENT_SOURCE_DIR) / "tests/netns_worker.sh").string(),
                                 std::to_string(workers_port_), w->socket, SUPERAGENT_BINARY, "worker", "--config",
                                 (w->dir / "worker.yaml").string()},
        std::vector<std::pair<std::string, std::string>>{{"SA_JOIN", kRemoteJoinToken}});
    EXPECT_TRUE(w->worker->WaitForLine("worker joined the daemon worker=" + name)) << w->worker->log();
    hosts_.push_back(std::move(w));
    return hosts_.back().get();
  }

  std::vector<std::string> Comments(FakeGitHub& github) {
    std::vector<std::string> out;
    auto lock = github.Lock();
    for (const json& c : github.comments) out.push_back(c["body"]);
    return out;
  }
  static int Count(const std::string& log, const std::string& needle) {
    int n = 0;
    for (auto at = log.find(needle); at != std::string::npos; at = log.find(needle, at + needle.size())) ++n;
    return n;
  }
  std::string Sql(const std::string& query) {
    std::string out;
    FILE* p = ::popen(("sqlite3 -readonly " + (dir_ / "data/superagent.db").string() + " \"" + query + "\"").c_str(), "r");
    char buf[512];
    while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    if (p != nullptr) ::pclose(p);
    return out;
  }
  std::string Pushed(const fs::path& origin, const std::string& branch) {
    std::string out;
    FILE* p = ::popen(("git -C " + origin.string() + " show " + branch + ":README.md").c_str(), "r");
    char buf[256];
    while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    if (p != nullptr) ::pclose(p);
    return out;
  }
  // Whether any regular file below `root` holds `needle`.
  static std::string FileHolding(const fs::path& root, const std::string& needle) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec || !it->is_regular_file(ec) || it->is_symlink(ec)) continue;
      std::ifstream f(it->path(), std::ios::binary);
      std::string body((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (body.find(needle) != std::string::npos) return it->path().string();
    }
    return "";
  }

  std::string claude_;
  int workers_port_ = 0;
  bool served_ok_ = false;
  std::vector<std::unique_ptr<WorkerHost>> hosts_;
};

// A mention is worked on a worker elsewhere: acknowledged, the CLI's edit made there, the
// commits verified and pushed here, the PR opened, one result posted. The transcript streamed
// back as it came; the worker host ends with neither the model key nor the GitHub token anywhere.
TEST_F(RemoteWorkersTest, AMentionIsWorkedOnARemoteWorkerEndToEndAndNoSecretReachesIt) {
  FakeCodingModel fake(FakeCodingModel::Wire::kAnthropic, kRemoteModelKey, "claude-sonnet-4-5",
                       CodingScript{.old_text = "teh typo", .new_text = "the typo"});
  FakeGitHub github(SystemClock());
  const fs::path origin = Prepare(github, fake.base_url());
  const std::string body = MentionBody(github);
  auto served = Serve();
  DaemonProcess& d = *served;
  ASSERT_TRUE(served_ok_) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("placement=remote"));
  WorkerHost* a = StartWorker("worker-a");
  WorkerHost* b = StartWorker("worker-b");
  EXPECT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(d.WaitForCount("pull request opened", 1, 120'000)) << d.log() << a->worker->log() << b->worker->log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  EXPECT_EQ(Count(d.log(), "remote turn leased"), 1) << d.log();
  EXPECT_EQ(Count(d.log(), "remote turn taken ticket=1 worker=worker-"), 1) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("attempts=1 report=ready"));
  WorkerHost* ran = d.log().find("remote turn taken ticket=1 worker=worker-a") != std::string::npos ? a : b;
  EXPECT_TRUE(ran->worker->WaitForLine("worker turn returned ticket=1")) << ran->worker->log();
  EXPECT_THAT(ran->worker->log(), HasSubstr("accepted=true"));
  EXPECT_TRUE(fake.problems().empty()) << fake.problems().front();

  // The transcript: the prompt the daemon made, what the CLI said and ran, the report.
  const std::string kinds = Sql("select kind from session_events order by id");
  EXPECT_EQ(Count(kinds, "input"), 1) << kinds;
  EXPECT_GE(Count(kinds, "assistant"), 2) << kinds;
  EXPECT_GE(Count(kinds, "command"), 1) << kinds;
  EXPECT_EQ(Count(kinds, "report"), 1) << kinds;
  EXPECT_THAT(Sql("select body from session_events where kind='input'"), HasSubstr("the current working directory"));

  // No secret of the daemon's on the worker hosts: environment, files, the worker's memory.
  for (const auto& w : hosts_) {
    const pid_t pid = w->worker->pid();
    std::ifstream env("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
    const std::string environ_text((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    EXPECT_FALSE(environ_text.empty()) << "the test could not read " << w->name << "'s environment";
    for (const char* secret : {kRemoteModelKey, kRemoteGitHubToken}) {
      EXPECT_EQ(environ_text.find(secret), std::string::npos) << w->name;
      EXPECT_EQ(FileHolding(w->dir, secret), "") << w->name;
      EXPECT_FALSE(RemoteMemoryHolds(pid, secret)) << w->name << "'s memory holds a secret of the daemon's";
    }
  }
  // The negative control: the scan finds what is there (the worker's own name, its join token).
  EXPECT_TRUE(RemoteMemoryHolds(a->worker->pid(), "worker-a"));

  for (auto& w : hosts_) {
    w->worker->Signal(SIGTERM);
    EXPECT_EQ(w->worker->Wait(), 0) << w->worker->log();
  }
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  const std::vector<std::string> said = Comments(github);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_THAT(said[0], HasSubstr("fix the typo"));
  ASSERT_EQ(github.pulls.size(), 1u);
  EXPECT_EQ(Pushed(origin, TicketOneBranch(github)), "There is the typo.\n");
  EXPECT_EQ(d.log().find(kRemoteModelKey), std::string::npos) << "the model key reached the log";
}

// The listener speaks HTTPS with a certificate of a private CA: the worker, told that CA, joins
// and works the turn, and the CLI in its sandbox reaches the model through the daemon over HTTPS
// too (NODE_EXTRA_CA_CERTS). A worker not told the CA cannot even join.
TEST_F(RemoteWorkersTest, AWorkerReachesTheDaemonOverHttpsWithAPrivateCa) {
  const fs::path tls = dir_ / "tls";
  fs::create_directories(tls);
  const std::string cert = (tls / "cert.pem").string(), key = (tls / "key.pem").string();
  ASSERT_EQ(std::system(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + key +
                         " -out " + cert + " -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
                         ">/dev/null 2>&1").c_str()),
            0)
      << "openssl (a dependency of ca-certificates) made no certificate";
  ::chmod(tls.c_str(), 0755);
  ::chmod(cert.c_str(), 0644);
  FakeCodingModel fake(FakeCodingModel::Wire::kAnthropic, kRemoteModelKey, "claude-sonnet-4-5",
                       CodingScript{.old_text = "teh typo", .new_text = "the typo"});
  FakeGitHub github(SystemClock());
  const fs::path origin = Prepare(github, fake.base_url(), "  tls_cert_file: " + cert + "\n  tls_key_file: " + key + "\n");
  const std::string body = MentionBody(github);
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, DaemonEnv());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("tls=on"));
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();

  // Without the CA: the handshake fails, and the worker says why.
  {
    const fs::path yaml = dir_ / "untrusting.yaml";
    std::ofstream(yaml) << "daemon_url: https://127.0.0.1:" << workers_port_
                        << "\njoin_token_env: SA_JOIN\nname: untrusting\nwork_dir: " << (dir_ / "untrusting").string()
                        << "\nexecutors:\n  claude-code: {binary: " << claude_ << "}\n";
    RunResult r = RunProgram(SUPERAGENT_BINARY, {"doctor", "--worker", yaml.string()},
                             RunOptions{.env_set = {{"SA_JOIN", kRemoteJoinToken}}});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("daemon                 FAILED")) << r.out;
    EXPECT_THAT(r.out, HasSubstr("certificate")) << r.out;
  }

  WorkerHost* a = StartWorker("worker-a", cert);
  EXPECT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(d.WaitForCount("pull request opened", 1, 120'000)) << d.log() << a->worker->log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("remote turn taken ticket=1 worker=worker-a attempts=1 report=ready"));
  EXPECT_TRUE(fake.problems().empty()) << fake.problems().front();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_EQ(Comments(github).size(), 2u);
  EXPECT_EQ(Pushed(origin, TicketOneBranch(github)), "There is the typo.\n");
}

// A worker killed mid-turn loses its lease; the turn is offered again and another worker's
// result is the one result.
TEST_F(RemoteWorkersTest, AWorkerKilledMidTurnLosesItsLeaseAndTheNextWorkerGivesTheOneResult) {
  const std::string marker = "time.sleep(3." + std::to_string(100 + ::getpid() % 800) + ")";
  FakeCodingModel fake(FakeCodingModel::Wire::kAnthropic, kRemoteModelKey, "claude-sonnet-4-5",
                       CodingScript{.old_text = "teh typo", .new_text = "the typo",
                                    .command = "python3 -c 'import time; " + marker + "'"});
  FakeGitHub github(SystemClock());
  const fs::path origin = Prepare(github, fake.base_url());
  const std::string body = MentionBody(github);
  auto served = Serve();
  DaemonProcess& d = *served;
  ASSERT_TRUE(served_ok_) << d.log();
  WorkerHost* a = StartWorker("worker-a");
  EXPECT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(RemoteWaitFor([&] { return ProcessRunning(marker); }, 60'000)) << d.log() << a->worker->log();
  a->worker->Signal(SIGKILL);
  EXPECT_EQ(a->worker->Wait(), 128 + SIGKILL);
  // Its sandbox dies with it (bwrap --die-with-parent): nothing of the turn runs on.
  EXPECT_TRUE(RemoteWaitFor([&] { return !ProcessRunning(marker); }, 10'000)) << "the killed worker's CLI lives on";
  StartWorker("worker-b");
  ASSERT_TRUE(d.WaitForLine("remote turn lease expired", 30'000)) << d.log();
  ASSERT_TRUE(d.WaitForCount("pull request opened", 1, 120'000)) << d.log() << hosts_.back()->worker->log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("remote turn taken ticket=1 worker=worker-b attempts=2"));
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_EQ(Comments(github).size(), 2u) << "one acknowledgement, one result";
  EXPECT_EQ(github.pulls.size(), 1u);
  EXPECT_EQ(Pushed(origin, TicketOneBranch(github)), "There is the typo.\n");
}

// A worker cut off from the daemon for longer than the lease: the turn goes to another worker,
// and when the network comes back the first hears its lease is lost and stops; nothing of its
// work is taken.
TEST_F(RemoteWorkersTest, AWorkerCutOffLongerThanTheLeaseIsReplacedAndItsWorkIsNotTaken) {
  const std::string marker = "time.sleep(3." + std::to_string(100 + (::getpid() + 7) % 800) + ")";
  FakeCodingModel fake(FakeCodingModel::Wire::kAnthropic, kRemoteModelKey, "claude-sonnet-4-5",
                       CodingScript{.old_text = "teh typo", .new_text = "the typo",
                                    .command = "python3 -c 'import time; " + marker + "'"});
  FakeGitHub github(SystemClock());
  Prepare(github, fake.base_url());
  const std::string body = MentionBody(github);
  auto served = Serve();
  DaemonProcess& d = *served;
  ASSERT_TRUE(served_ok_) << d.log();
  WorkerHost* a = StartWorker("worker-a");
  EXPECT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(RemoteWaitFor([&] { return ProcessRunning(marker); }, 60'000)) << d.log() << a->worker->log();
  a->bridge->Signal(SIGSTOP);  // the cut: nothing passes either way, nothing is refused either
  WorkerHost* b = StartWorker("worker-b");
  ASSERT_TRUE(d.WaitForLine("remote turn lease expired", 30'000)) << d.log();
  ASSERT_TRUE(d.WaitForCount("pull request opened", 1, 120'000)) << d.log() << b->worker->log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  a->bridge->Signal(SIGCONT);
  ASSERT_TRUE(a->worker->WaitForLine("worker turn abandoned ticket=1", 60'000)) << a->worker->log();
  EXPECT_THAT(d.log(), HasSubstr("remote turn taken ticket=1 worker=worker-b attempts=2"));
  EXPECT_EQ(Count(d.log(), "remote turn returned"), 1) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_EQ(Comments(github).size(), 2u) << "one acknowledgement, one result";
}

// The daemon is killed while a worker runs its turn: the worker cannot report to anyone; the
// restarted daemon offers the Assignment again, the worker joins again and does it, and the
// Ticket still posts one acknowledgement and one result.
TEST_F(RemoteWorkersTest, ADaemonKilledMidRemoteTurnHasItDoneOnceAfterItsRestart) {
  const std::string marker = "time.sleep(3." + std::to_string(100 + (::getpid() + 13) % 800) + ")";
  FakeCodingModel fake(FakeCodingModel::Wire::kAnthropic, kRemoteModelKey, "claude-sonnet-4-5",
                       CodingScript{.old_text = "teh typo", .new_text = "the typo",
                                    .command = "python3 -c 'import time; " + marker + "'"});
  FakeGitHub github(SystemClock());
  const fs::path origin = Prepare(github, fake.base_url());
  const std::string body = MentionBody(github);
  WorkerHost* a = nullptr;
  {
    auto served = Serve();
    DaemonProcess& d = *served;
    ASSERT_TRUE(served_ok_) << d.log();
    a = StartWorker("worker-a");
    EXPECT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
    ASSERT_TRUE(RemoteWaitFor([&] { return ProcessRunning(marker); }, 60'000)) << d.log() << a->worker->log();
    ASSERT_TRUE(d.WaitForCount("github message posted", 1)) << d.log();
    d.Signal(SIGKILL);
    EXPECT_EQ(d.Wait(), 128 + SIGKILL);
  }
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, DaemonEnv());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("resumed=1"));
  ASSERT_TRUE(d.WaitForCount("pull request opened", 1, 120'000)) << d.log() << a->worker->log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 1)) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("remote turn taken ticket=1 worker=worker-a"));
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  const std::vector<std::string> said = Comments(github);
  ASSERT_EQ(said.size(), 2u) << "one acknowledgement, one result, across the crash";
  EXPECT_THAT(said[0], HasSubstr("fix the typo"));
  EXPECT_EQ(github.pulls.size(), 1u);
  EXPECT_EQ(Pushed(origin, TicketOneBranch(github)), "There is the typo.\n");
}

// A person presses Stop in the panel while the remote CLI's shell step runs: the worker hears it
// at its next heartbeat and kills the CLI's tree; the Ticket ends with the Stop's one line.
TEST_F(RemoteWorkersTest, AStopFromThePanelKillsTheRemoteTurn) {
  const std::string marker = "time.sleep(" + std::to_string(3000 + ::getpid() % 997) + ")";
  FakeCodingModel fake(FakeCodingModel::Wire::kAnthropic, kRemoteModelKey, "claude-sonnet-4-5",
                       CodingScript{.old_text = "teh typo", .new_text = "the typo",
                                    .command = "python3 -c 'import time; " + marker + "'"});
  FakeGitHub github(SystemClock());
  Prepare(github, fake.base_url());
  const std::string body = MentionBody(github);
  auto served = Serve();
  DaemonProcess& d = *served;
  ASSERT_TRUE(served_ok_) << d.log();
  WorkerHost* a = StartWorker("worker-a");
  EXPECT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(RemoteWaitFor([&] { return ProcessRunning(marker); }, 60'000)) << d.log() << a->worker->log();

  httplib::Client http("127.0.0.1", port_);
  http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  auto session = http.Get("/api/session");
  ASSERT_TRUE(session && session->status == 200);
  httplib::Headers h{{"Origin", "http://127.0.0.1:" + std::to_string(port_)},
                     {"X-CSRF-Token", json::parse(session->body)["csrf_token"].get<std::string>()}};
  auto stop = http.Post("/api/tickets/1/stop", h, json{{"confirm", true}, {"name", "Tess"}}.dump(), "application/json");
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->status, 200) << stop->body;
  ASSERT_TRUE(d.WaitForLine("to=ended")) << d.log();
  EXPECT_TRUE(RemoteWaitFor([&] { return !ProcessRunning(marker); }, 15'000)) << "the remote CLI outlived the Stop\n"
                                                                                    << a->worker->log();
  EXPECT_TRUE(a->worker->WaitForLine("worker turn abandoned ticket=1")) << a->worker->log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  const std::vector<std::string> said = Comments(github);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_THAT(said[1], HasSubstr("Stopped by Tess from the panel"));
  EXPECT_EQ(github.pulls.size(), 0u);
}

}  // namespace
}  // namespace superagent::testing
