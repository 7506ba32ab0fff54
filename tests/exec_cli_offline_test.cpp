// "Offline" proven, not assumed (issue 21): each of the four real coding CLIs (tests/node_modules)
// does a scripted turn in the bubblewrap sandbox with a network namespace of its own
// (SandboxPolicy.network = false: bwrap --unshare-net, only an empty loopback inside), where the
// only thing reachable is the loopback fake of its model API.
//
// How the fake is reached: the fake listens on the host's 127.0.0.1:<port>, which the sandbox's
// loopback is not. The host half of a bridge (tests/offline_bridge.py, started by the test)
// accepts on a unix socket in a directory the sandbox shows read-only (connect() on a socket
// needs no write access to its mount) and forwards to that port. The CLI's `binary` is a wrapper
// (tests/offline_cli_wrapper.sh) in the same directory: inside the sandbox it first probes the
// network (the negative control: an outside address is unreachable, and the host's fake is NOT
// reachable at its own address), then starts the sandbox half of the bridge on the sandbox's
// 127.0.0.1:<port>, then runs the real CLI — under strace, recording every connect(), where strace
// runs. So the CLI is configured with the fake's usual base URL and reaches it only through the
// bridge; anything else it tried shows in the trace.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "exec_fixture.h"
#include "result_ok.h"
#include "fake_coding_model.h"
#include "fake_gemini_model.h"
#include "fake_responses_model.h"
#include "superagent/process.h"
#include "superagent/sandbox.h"
#include "superagent/worker.h"

extern char** environ;

namespace superagent::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const char* kOfflineClaudeKey = "sk-cli-offline-0123456789";

fs::path TestsDir() { return fs::path(SUPERAGENT_SOURCE_DIR) / "tests"; }
std::string OfflineNodeModules() { return (TestsDir() / "node_modules").string(); }

// The port of a fake's base URL, http://127.0.0.1:<port>[/v1].
int PortOf(const std::string& base_url) {
  const std::string host = "127.0.0.1:";
  const std::size_t at = base_url.find(host);
  return at == std::string::npos ? 0 : std::atoi(base_url.c_str() + at + host.size());
}

class ExecCliOfflineTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    // The daemon's runner with execution.network off: workers in a network namespace of their own.
    exec::PosixRunnerOptions ro;
    ro.sandbox.state_dir = (dir_ / "work" / "sandbox").string();
    ro.sandbox.hidden = {(dir_ / "db").string()};
    ro.sandbox.network = false;
    const exec::SandboxSupport support = exec::ProbeSandbox(ro.sandbox);
    if (!support.supported)
      GTEST_SKIP() << "this host cannot sandbox with a network namespace of its own, so offline cannot be proven here: "
                   << support.detail;
    ro.sandbox.enabled = true;
    UseRunner(ro);

    // A short directory: a unix socket's path may not exceed 107 bytes.
    std::string tmpl = (fs::temp_directory_path() / "sa-offline-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    bridge_dir_ = tmpl;
    // Shown to the worker, which a root daemon runs as nobody (issue 33): readable by all, as a
    // CLI's install directory is.
    fs::permissions(bridge_dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                     fs::perms::others_read | fs::perms::others_exec);
    for (const char* f : {"offline_bridge.py", "offline_cli_wrapper.sh"})
      fs::copy_file(TestsDir() / f, bridge_dir_ / f, fs::copy_options::overwrite_existing);
    fs::permissions(bridge_dir_ / "offline_cli_wrapper.sh", fs::perms::owner_all | fs::perms::group_read |
                                                                 fs::perms::group_exec | fs::perms::others_read |
                                                                 fs::perms::others_exec);
  }

  void TearDown() override {
    if (host_bridge_ > 0) {
      ::kill(host_bridge_, SIGTERM);
      int status = 0;
      ::waitpid(host_bridge_, &status, 0);
    }
    std::error_code ec;
    if (!bridge_dir_.empty()) fs::remove_all(bridge_dir_, ec);
    ExecTest::TearDown();
  }

  static std::string Python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

  // The host half of the bridge: model.sock -> 127.0.0.1:port.
  void StartHostBridge(int port) {
    const std::string script = (bridge_dir_ / "offline_bridge.py").string(), sock = (bridge_dir_ / "model.sock").string(),
                      log = (bridge_dir_ / "host-bridge.log").string(), port_s = std::to_string(port);
    const std::string python = Python();
    std::vector<std::string> args = {python, script, "unix-listen", sock, port_s, log};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(::posix_spawnp(&host_bridge_, python.c_str(), nullptr, nullptr, argv.data(), environ), 0);
    ASSERT_TRUE(Eventually([&] { return fs::exists(sock); }, 10'000)) << "the host half of the bridge did not start";
  }

  // The wrapper's settings: the real CLI and the fake's port.
  void WriteWrapperEnv(const std::string& program, int port) {
    std::ofstream f(bridge_dir_ / "offline.env");
    f << "REAL_CLI=" << exec::ShellQuote(OfflineNodeModules() + "/.bin/" + program) << "\nPORT=" << port << "\n";
  }

  // What the wrapper recorded inside the sandbox: <private TMPDIR of the Ticket's scope>/superagent-offline.
  fs::path Recorded() {
    std::error_code ec;
    for (const auto& scope : fs::directory_iterator(dir_ / "work" / "sandbox", ec))
      if (fs::exists(scope.path() / "tmp" / "superagent-offline")) return scope.path() / "tmp" / "superagent-offline";
    return {};
  }

  std::string LastResult(TicketId id) {
    auto receipts = Ok(views_->Receipts(id));
    return receipts.empty() ? "" : receipts.back().body;
  }

  // One scripted turn of `cli` against `fake`, offline; checks the work and the proof.
  template <typename Fake>
  void OfflineTurn(const std::string& cli, const std::string& program, const Fake& fake, const std::string& key,
                   const std::string& model) {
    ASSERT_TRUE(fs::exists(OfflineNodeModules() + "/.bin/" + program))
        << program << " is missing: run `cmake/dev.sh test` (npm ci in tests/)";
    const int port = PortOf(fake.base_url());
    ASSERT_GT(port, 0) << fake.base_url();
    StartHostBridge(port);
    WriteWrapperEnv(program, port);
    const TicketId id = AcceptedTicket("c1");

    exec::CliExecutorOptions o;
    o.cli = cli;
    o.binary = (bridge_dir_ / "offline_cli_wrapper.sh").string();
    o.model = model;
    o.api_key = key;
    o.base_url = fake.base_url();  // the fake's usual address: inside, the bridge answers there
    o.readable = {OfflineNodeModules(), bridge_dir_.string()};
    o.turn_ms = 120'000;
    auto made = exec::MakeCliExecutor(o, engine_.get(), views_.get(), services_.get(), SystemClock(), exec::RealSleeper());
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    auto scheduler = MakeScheduler(made->get());

    const auto start = std::chrono::steady_clock::now();
    auto started = scheduler->Tick();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    scheduler->WaitForTurns();
    ASSERT_TRUE(scheduler->Tick().ok());
    const long ms = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());

    // The work: done through the bridge only.
    EXPECT_THAT(fake.problems(), ::testing::IsEmpty());
    auto ticket = views_->GetTicket(id);
    ASSERT_TRUE(ticket.ok());
    EXPECT_EQ(ticket->stage, Stage::kReady) << LastResult(id);
    EXPECT_EQ(OnOrigin("superagent/ticket-" + std::to_string(id), "README.md"), "Hello\nThere is the typo.\n");
    const std::string bridged = ReadText(bridge_dir_ / "host-bridge.log");
    EXPECT_THAT(bridged, ::testing::HasSubstr("connection 1")) << "the model was reached, but not through the bridge";

    // The proof that the namespace is real (the negative control), from inside the very sandbox
    // the CLI ran in: only a loopback, an outside address unreachable, and the fake — listening
    // on the host's loopback at this moment — not reachable at its own address.
    const fs::path rec = Recorded();
    ASSERT_FALSE(rec.empty()) << "the wrapper recorded nothing: did it run?";
    const std::string probe_text = ReadText(rec / "probe.json");
    const json probe = json::parse(probe_text, nullptr, false);
    ASSERT_TRUE(probe.is_object()) << probe_text;
    EXPECT_EQ(probe.value("interfaces", json()), json::array({"lo"})) << probe_text;
    EXPECT_EQ(probe.value("outside", ""), "ENETUNREACH") << probe_text;
    EXPECT_EQ(probe.value("host_fake", ""), "ECONNREFUSED") << probe_text;
    EXPECT_TRUE(Listening(port)) << "on the host the fake is reachable at 127.0.0.1:" << port;
    EXPECT_THAT(probe.value("dns", ""), ::testing::HasSubstr("gaierror")) << probe_text;

    // Optional: what else the CLI tried to reach (connect() calls to anything but its model).
    std::string tried, unix_tried;
    int model_connects = 0;
    if (fs::exists(rec / "connect.trace")) {
      std::ifstream trace(rec / "connect.trace");
      // connect(5, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}, 16) = -1 ENETUNREACH (…)
      // and the AF_INET6 form with inet_pton(AF_INET6, "::1", …); with -f a call may be split
      // into "<unfinished ...>" and "<... connect resumed>": the first half names the address.
      const std::regex inet(R"re(connect\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\((\d+)\).*?(?:inet_addr|inet_pton)\([^"]*"([^"]+)")re");
      const std::regex unix_socket(R"re(connect\(\d+, \{sa_family=AF_UNIX, sun_path="([^"]*)")re");
      std::map<std::string, int> local;  // unix sockets it tried (none crosses into the host but the bridge's)
      for (std::string line; std::getline(trace, line);) {
        std::smatch m;
        if (std::regex_search(line, m, unix_socket)) {
          const std::size_t eq = line.rfind(") = ");
          ++local[m[1].str() + " (" + (eq == std::string::npos ? std::string("unfinished") : line.substr(eq + 4)) + ")"];
          continue;
        }
        if (!std::regex_search(line, m, inet)) continue;
        if (m[2] == "127.0.0.1" && m[1] == std::to_string(port)) {
          ++model_connects;
          continue;
        }
        const std::size_t eq = line.rfind(") = ");
        tried += "  " + m[2].str() + " port " + m[1].str() + ": " +
                 (eq == std::string::npos ? std::string("(unfinished)") : line.substr(eq + 4)) + "\n";
      }
      EXPECT_GT(model_connects, 0) << "the trace saw no connection to the model: is it complete?";
      for (const auto& [what, n] : local) unix_tried += "  unix " + what + " x" + std::to_string(n) + "\n";
    } else {
      tried = "  (not traced: " + ReadText(rec / "connect.trace.missing") + ")\n";
    }
    std::printf("[ %s offline: turn took %ld ms; %d connection(s) to the model; other network connect() attempts:%s;"
                " local sockets tried:%s ]\n",
                cli.c_str(), ms, model_connects, tried.empty() ? " none" : ("\n" + tried).c_str(),
                unix_tried.empty() ? " none" : ("\n" + unix_tried).c_str());
    RecordProperty("offline_turn_ms", std::to_string(ms));
    RecordProperty("outside_connect_attempts", tried.empty() ? "none" : tried);
  }

  fs::path bridge_dir_;
  pid_t host_bridge_ = 0;
};

TEST_F(ExecCliOfflineTest, ClaudeCodeWorksInANetworkNamespaceWithOnlyTheFakeReachable) {
  FakeCodingModel fake(FakeCodingModel::Wire::kAnthropic, kOfflineClaudeKey, "claude-sonnet-4-5",
                       {.old_text = "teh typo", .new_text = "the typo"});
  OfflineTurn("claude-code", "claude", fake, kOfflineClaudeKey, "claude-sonnet-4-5");
}

TEST_F(ExecCliOfflineTest, QwenCodeWorksInANetworkNamespaceWithOnlyTheFakeReachable) {
  FakeCodingModel fake(FakeCodingModel::Wire::kOpenAiChat, kOfflineClaudeKey, "qwen3-coder-plus",
                       {.old_text = "teh typo", .new_text = "the typo"});
  OfflineTurn("qwen-code", "qwen", fake, kOfflineClaudeKey, "qwen3-coder-plus");
}

TEST_F(ExecCliOfflineTest, CodexWorksInANetworkNamespaceWithOnlyTheFakeReachable) {
  FakeResponsesModel fake({});
  OfflineTurn("codex", "codex", fake, fake.key(), fake.model());
}

TEST_F(ExecCliOfflineTest, GeminiCliWorksInANetworkNamespaceWithOnlyTheFakeReachable) {
  FakeGeminiModel fake({});
  OfflineTurn("gemini-cli", "gemini", fake, fake.key(), fake.model());
}

}  // namespace
}  // namespace superagent::testing
