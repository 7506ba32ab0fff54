// The store with other processes on it, as a team would use it: `superagent receive` and
// `superagent explain` beside a running daemon, a second `serve` on the same data_dir, the
// modes of the files it creates, and a damaged database file at start. Real processes, a real
// SQLite file, the real HTTP server on loopback.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "daemon_process.h"
#include "run_binary.h"
#include "serve_fixture.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string TriggerJson(int n) {
  return R"({"id":"github:comment:)" + std::to_string(n) + R"(@2026-12-02T10:00:00Z","source":"github","scope":"comments",
    "actor":"alice","human":true,"addressed":true,"text":"@agent please fix the typo in README ✍️ 请修正","at":"2026-12-02T10:00:00Z",
    "threads":["github:acme/widgets:issue:)" + std::to_string(n) + R"("],"channel":"github:acme/widgets:issue:)" + std::to_string(n) +
         R"(","meta":{"html_url":"https://github.com/o/r/issues/)" + std::to_string(n) + R"(#issuecomment-1"}})";
}

RunOptions Bounded(int timeout_ms) {
  RunOptions o;
  o.timeout_ms = timeout_ms;
  return o;
}

mode_t ModeOf(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 0;
  return st.st_mode & 0777;
}

// The serve tests' directory, policy and config (serve_fixture.h), with another process's way in.
class StoreProcessTest : public ServeTest {
 protected:
  RunResult Receive(int n) {
    RunOptions in;
    in.stdin_text = TriggerJson(n);
    return RunProgram(SUPERAGENT_BINARY, {"receive", "--config", Config(), "--trigger", "-"}, in);
  }
  // A panel command as the page sends it: same origin, with the CSRF token.
  int Stop(httplib::Client& http, int ticket) {
    auto session = http.Get("/api/session");
    if (!session) return 0;
    httplib::Headers h{{"Origin", "http://127.0.0.1:" + std::to_string(port_)},
                       {"X-CSRF-Token", json::parse(session->body)["csrf_token"].get<std::string>()}};
    auto r = http.Post(("/api/tickets/" + std::to_string(ticket) + "/stop").c_str(), h,
                       json{{"confirm", true}, {"name", "Tess"}}.dump(), "application/json");
    return r ? r->status : 0;
  }
};

// After a worker turn read its Assignment, `superagent receive` writes the file from another
// process. Before statements were reset on every path, the daemon's next write failed at once
// with "database is locked" (a stale snapshot), and so did every one after it: the new message
// was never judged and Stop answered 500. Now it judges the message and Stop works, also while
// eight `superagent explain` runs read the file at once (all of which must succeed: the busy
// timeout is in force before their first statement).
TEST_F(StoreProcessTest, DaemonKeepsWritingAfterOutsideWritersAndBesideConcurrentExplains) {
  // A worker that answers at once, on a real git remote.
  const fs::path origin = dir_ / "origin.git";
  const std::string seed = (dir_ / "seed").string();
  ASSERT_EQ(std::system(("git init -q -b master " + seed + " && cd " + seed +
                         " && printf 'There is teh typo.\\n' > README.md && git add -A"
                         " && git -c user.name=t -c user.email=t@t commit -q -m init && git clone -q --bare . " +
                         origin.string())
                            .c_str()),
            0);
  Write("fix.sh", "cat > task.json\necho '{\"stage\":\"ready\",\"summary\":\"Fixed.\",\"question\":null}'\n");
  Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                               std::to_string(port_) + "\nexecution:\n  executor: command\n  command: sh " +
                               (dir_ / "fix.sh").string() + "\n  git_remote: " + origin.string() +
                               "\n  sandbox: off\n");  // fix.sh is in the test's directory
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  RunResult first = Receive(1);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(d.WaitForLine("outcome=accept")) << d.log();
  ASSERT_TRUE(d.WaitForLine("assignment started id=1")) << d.log();  // the worker's turn read Assignment 1

  RunResult second = Receive(2);  // the outside write
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(json::parse(second.out)["outcome"], "stored");
  ASSERT_TRUE(d.WaitForCount("outcome=accept", 2)) << "the daemon could not judge the next message:\n" << d.log();
  ASSERT_TRUE(d.WaitForLine("worker turn ended ticket=1")) << d.log();

  std::vector<RunResult> explains(8);
  std::vector<std::thread> runs;
  for (int i = 0; i < 8; ++i)
    runs.emplace_back([&, i] {
      explains[i] = RunProgram(SUPERAGENT_BINARY,
                               {"explain", "https://github.com/o/r/issues/" + std::to_string(1 + i % 2) + "#issuecomment-1",
                                "--config", Config()});
    });
  RunResult third = Receive(3);  // written while the explains read
  for (auto& t : runs) t.join();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(explains[i].exit_code, 0) << "explain " << i << ": " << explains[i].err;
    EXPECT_NE(explains[i].out.find("alice"), std::string::npos) << explains[i].out;
  }
  ASSERT_EQ(third.exit_code, 0) << third.err;
  ASSERT_TRUE(d.WaitForCount("outcome=accept", 3)) << d.log();

  httplib::Client http("127.0.0.1", port_);

  http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  // 200, or 409 when the worker's turn already ended the Ticket: an answer, never a 500.
  for (int ticket : {1, 2}) {
    const int code = Stop(http, ticket);
    EXPECT_TRUE(code == 200 || code == 409) << "Stop of Ticket " << ticket << " answered " << code << "\n" << d.log();
  }
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(d.log().find("database is locked"), std::string::npos) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
}

// A second daemon on the same data_dir would answer every message twice and race the first for
// its Tickets: it exits non-zero naming the pid that holds the directory, and the first keeps
// serving. CLI commands that go through the store still work beside it.
TEST_F(StoreProcessTest, ASecondServeOnTheSameDataDirIsRefusedNamingTheHolder) {
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  std::string holder;
  std::ifstream(dir_ / "data" / "superagent.lock") >> holder;
  ASSERT_FALSE(holder.empty());

  const int other_port = FreeLoopbackPort();
  Write("second.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                           std::to_string(other_port) + "\n");
  RunResult second = RunProgram(SUPERAGENT_BINARY, {"serve", "--config", (dir_ / "second.yaml").string()},
                                Bounded(20'000));
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("pid " + holder), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("data_dir"), std::string::npos) << second.err;

  RunResult r = Receive(1);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(d.WaitForLine("outcome=accept")) << d.log();
  httplib::Client http("127.0.0.1", port_);
  http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();

  // Once the first one is gone, the directory is free again.
  DaemonProcess again(SUPERAGENT_BINARY, {"serve", "--config", Config()});
  ASSERT_TRUE(again.WaitForLine("ready")) << again.log();
  again.Signal(SIGTERM);
  EXPECT_EQ(again.Wait(), 0) << again.log();
}

// Under umask 000, what serve creates is still private: data_dir 0700, the database (which holds
// the transcripts) and its -wal/-shm 0600; a data_dir left wider is narrowed at start.
TEST_F(StoreProcessTest, DataDirAndDatabaseArePrivateUnderUmaskZero) {
  fs::create_directories(dir_ / "data");
  ASSERT_EQ(::chmod((dir_ / "data").c_str(), 0777), 0);
  const mode_t old = ::umask(0);
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()});
  ::umask(old);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_EQ(Receive(1).exit_code, 0);
  ASSERT_TRUE(d.WaitForLine("outcome=accept")) << d.log();
  EXPECT_EQ(ModeOf(dir_ / "data"), 0700u);
  EXPECT_EQ(ModeOf(dir_ / "data" / "superagent.db"), 0600u);
  EXPECT_EQ(ModeOf(dir_ / "data" / "superagent.db-wal"), 0600u);
  EXPECT_EQ(ModeOf(dir_ / "data" / "superagent.db-shm"), 0600u);
  EXPECT_EQ(ModeOf(dir_ / "data" / "superagent.lock"), 0600u);
  EXPECT_EQ(ModeOf(dir_ / "data" / "panel.token"), 0600u);  // the panel's credential (issue 19)
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_EQ(d.log().find(PanelTokenIn((dir_ / "data").string())), std::string::npos) << "the token is never logged";
}

// Issue 19: the real daemon commands only for people. A process on this host without the token
// (a worker) gets 401 for reads and commands alike; `superagent panel-url` prints a link that logs
// a browser in; the token survives a restart, so the link does too.
TEST_F(StoreProcessTest, ThePanelAnswersOnlyTheTokenAndPanelUrlLogsABrowserIn) {
  std::string token;
  for (int start = 0; start < 2; ++start) {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()});
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    ASSERT_EQ(Receive(start + 1).exit_code, 0);
    ASSERT_TRUE(d.WaitForLine("outcome=accept")) << d.log();
    if (start == 0) token = PanelTokenIn((dir_ / "data").string());
    ASSERT_EQ(token.size(), 64u);
    EXPECT_EQ(PanelTokenIn((dir_ / "data").string()), token) << "a restart keeps the token";

    httplib::Client worker("127.0.0.1", port_);
    EXPECT_EQ(worker.Get("/api/status")->status, 401);
    EXPECT_EQ(worker.Get("/api/tickets/1")->status, 401);
    httplib::Headers page{{"Origin", "http://127.0.0.1:" + std::to_string(port_)}};
    auto stop = worker.Post("/api/tickets/1/stop", page, json{{"confirm", true}}.dump(), "application/json");
    ASSERT_TRUE(stop);
    EXPECT_EQ(stop->status, 401);
    EXPECT_EQ(worker.Get("/healthz")->status, 200);

    RunResult url = RunProgram(SUPERAGENT_BINARY, {"panel-url", "--config", Config()}, RunOptions{});
    ASSERT_EQ(url.exit_code, 0) << url.err;
    const std::string prefix = "http://127.0.0.1:" + std::to_string(port_);
    ASSERT_EQ(url.out, prefix + "/login?token=" + token + "\n");
    httplib::Client browser("127.0.0.1", port_);
    auto login = browser.Get(url.out.substr(prefix.size(), url.out.size() - prefix.size() - 1).c_str());
    ASSERT_TRUE(login);
    ASSERT_EQ(login->status, 303);
    const std::string cookie = login->get_header_value("Set-Cookie").substr(0, login->get_header_value("Set-Cookie").find(';'));
    auto status = browser.Get("/api/status", {{"Cookie", cookie}});
    ASSERT_TRUE(status);
    EXPECT_EQ(status->status, 200);
    EXPECT_EQ(d.log().find(token), std::string::npos) << "the token is never logged (stderr is not a terminal here)";
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
  }
}

// A damaged page in the database is noticed at start: serve refuses with a message that says
// what is wrong and what to do, rather than acting on rows it may misread; doctor says so too.
TEST_F(StoreProcessTest, ServeRefusesADamagedDatabaseAndDoctorReportsIt) {
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()});
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    for (int i = 1; i <= 3; ++i) ASSERT_EQ(Receive(i).exit_code, 0);
    ASSERT_TRUE(d.WaitForCount("outcome=accept", 3)) << d.log();
    d.Signal(SIGTERM);
    ASSERT_EQ(d.Wait(), 0) << d.log();
  }
  const fs::path db = dir_ / "data" / "superagent.db";
  ASSERT_FALSE(fs::exists(dir_ / "data" / "superagent.db-wal") && fs::file_size(dir_ / "data" / "superagent.db-wal") > 0)
      << "the WAL was not checkpointed at shutdown";
  const auto size = fs::file_size(db);
  ASSERT_GT(size, 8u * 4096u);
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2 / 4096 * 4096));
    std::string junk(4096, '\xA5');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  RunResult serve = RunProgram(SUPERAGENT_BINARY, {"serve", "--config", Config()}, Bounded(20'000));
  EXPECT_NE(serve.exit_code, 0);
  EXPECT_NE(serve.err.find("damaged"), std::string::npos) << serve.err;
  EXPECT_NE(serve.err.find(".recover"), std::string::npos) << serve.err;
  RunResult doctor = RunProgram(SUPERAGENT_BINARY, {"doctor", "--config", Config()}, Bounded(30'000));
  EXPECT_NE(doctor.exit_code, 0) << doctor.out;
  EXPECT_NE((doctor.out + doctor.err).find("damaged"), std::string::npos) << doctor.out << doctor.err;
}

// A read that fails is an error, never "no rows": with a table dropped by another process,
// `explain` says the store failed instead of telling a story in which no Eval ever judged it.
TEST_F(StoreProcessTest, ExplainOnABrokenStoreFailsInsteadOfTellingAShorterStory) {
  if (std::system("command -v sqlite3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no sqlite3 shell installed";
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()});
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    ASSERT_EQ(Receive(1).exit_code, 0);
    ASSERT_TRUE(d.WaitForLine("outcome=accept")) << d.log();
    d.Signal(SIGTERM);
    ASSERT_EQ(d.Wait(), 0) << d.log();
  }
  const std::vector<std::string> explain = {"explain", "https://github.com/o/r/issues/1#issuecomment-1", "--config",
                                            Config()};
  RunResult whole = RunProgram(SUPERAGENT_BINARY, explain);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ASSERT_EQ(std::system(("sqlite3 " + (dir_ / "data" / "superagent.db").string() + " 'DROP TABLE eval_triggers'").c_str()), 0);
  RunResult broken = RunProgram(SUPERAGENT_BINARY, explain);
  EXPECT_NE(broken.exit_code, 0) << broken.out;
  EXPECT_NE(broken.err.find("eval_triggers"), std::string::npos) << broken.err;
}

}  // namespace
}  // namespace superagent::testing
