// The daemon's secrets from systemd credentials (issue 33 item 6): $CREDENTIALS_DIRECTORY/<NAME>
// before the environment, every unusable credential file refused by name (never by content),
// doctor saying where each secret came from, and serve keeping none of them in its environment.
// Real files, the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <httplib.h>

#include "app/config.h"
#include "app/secrets.h"
#include "daemon_process.h"
#include "run_binary.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("superagent-credentials-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    creds_ = dir_ / "credentials";
    fs::create_directories(creds_);
    ::setenv("CREDENTIALS_DIRECTORY", creds_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("CREDENTIALS_DIRECTORY");
    for (const char* n : {"SUPERAGENT_CRED_A", "SUPERAGENT_CRED_B", "SUPERAGENT_CRED_C"}) ::unsetenv(n);
    app::ForgetLoadedSecrets();
    fs::remove_all(dir_);
  }
  void Put(const std::string& name, const std::string& content) {
    std::ofstream(creds_ / name, std::ios::binary) << content;
  }
  fs::path dir_, creds_;
};

TEST_F(CredentialsTest, ASecretIsReadFromTheFileNamedByItsVariable) {
  Put("SUPERAGENT_CRED_A", "ghp_FROMCREDENTIAL密码🔑\n");
  auto v = app::ReadSecret("SUPERAGENT_CRED_A");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->value, "ghp_FROMCREDENTIAL密码🔑");
  EXPECT_EQ(v->origin, (creds_ / "SUPERAGENT_CRED_A").string());
  EXPECT_EQ(ResolveSecret("SUPERAGENT_CRED_A"), "ghp_FROMCREDENTIAL密码🔑");
  // One trailing newline is the editor's; a second one, and inner ones (a PEM key), are content.
  Put("SUPERAGENT_CRED_A", "-----BEGIN KEY-----\nabc\n-----END KEY-----\n\n");
  EXPECT_EQ(app::ReadSecret("SUPERAGENT_CRED_A")->value, "-----BEGIN KEY-----\nabc\n-----END KEY-----\n");
  Put("SUPERAGENT_CRED_A", "windows\r\n");
  EXPECT_EQ(app::ReadSecret("SUPERAGENT_CRED_A")->value, "windows");
  Put("SUPERAGENT_CRED_A", "no newline");
  EXPECT_EQ(app::ReadSecret("SUPERAGENT_CRED_A")->value, "no newline");
}

TEST_F(CredentialsTest, TheCredentialFileWinsOverTheEnvironmentWhichIsTheFallback) {
  ::setenv("SUPERAGENT_CRED_A", "from-environment", 1);
  Put("SUPERAGENT_CRED_A", "from-credential\n");
  EXPECT_EQ(app::ReadSecret("SUPERAGENT_CRED_A")->value, "from-credential");
  fs::remove(creds_ / "SUPERAGENT_CRED_A");
  auto v = app::ReadSecret("SUPERAGENT_CRED_A");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, "from-environment");
  EXPECT_EQ(v->origin, "environment");
  // Without $CREDENTIALS_DIRECTORY (any host without systemd) only the environment counts.
  Put("SUPERAGENT_CRED_A", "from-credential\n");
  ::unsetenv("CREDENTIALS_DIRECTORY");
  EXPECT_EQ(app::ReadSecret("SUPERAGENT_CRED_A")->value, "from-environment");
  // Nowhere: unset, not an error (each secret's own check says whether it is needed).
  ::unsetenv("SUPERAGENT_CRED_A");
  v = app::ReadSecret("SUPERAGENT_CRED_A");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, "");
  EXPECT_EQ(v->origin, "");
  EXPECT_EQ(app::DescribeOrigin(v->origin), "unset");
  // A name that is no variable name never becomes a path.
  ::setenv("CREDENTIALS_DIRECTORY", creds_.c_str(), 1);
  fs::create_directories(dir_ / "escape");
  std::ofstream(dir_ / "escape" / "X") << "outside\n";
  EXPECT_EQ(app::ReadSecret("../escape/X")->value, "");
}

// Every way a credential file can be unusable: the message names the credential and its file and
// says what is wrong; it never carries the content.
TEST_F(CredentialsTest, AnUnusableCredentialFileIsAnErrorNamingItNeverItsContent) {
  const std::string name = "SUPERAGENT_CRED_B";
  const std::string path = (creds_ / name).string();
  auto error_of = [&] {
    auto v = app::ReadSecret(name);
    EXPECT_FALSE(v.ok()) << "accepted: " << (v.ok() ? v->value.substr(0, 40) : "");
    return v.ok() ? std::string() : v.status().message();
  };
  auto expect = [&](const std::string& content, const std::string& why) {
    fs::remove_all(path);
    Put(name, content);
    const std::string m = error_of();
    EXPECT_THAT(m, AllOf(HasSubstr("credential " + name + " (" + path + ")"), HasSubstr(why))) << m;
    if (content.size() > 6) {
      EXPECT_THAT(m, Not(HasSubstr(content.substr(0, 6))));
    }
  };
  ::setenv(name.c_str(), "env-fallback-not-used", 1);  // a broken credential does not fall back
  expect("", "empty");
  expect("\n", "empty");
  expect("sk-SECRETPART\xff\xfe\x80 rest", "not valid UTF-8");
  expect(std::string("sk-SECRETPART\0tail", 18), "NUL byte");
  expect("sk-SECRETPART" + std::string(app::kMaxCredentialBytes, 'x'), "larger than 65536 bytes");
  // Exactly the limit is fine (with its newline dropped).
  fs::remove_all(path);
  Put(name, std::string(app::kMaxCredentialBytes - 1, 'k') + "\n");
  EXPECT_EQ(app::ReadSecret(name)->value.size(), app::kMaxCredentialBytes - 1);
  // A directory, a FIFO, a link to nothing (the file is missing).
  fs::remove_all(path);
  fs::create_directories(path);
  EXPECT_THAT(error_of(), HasSubstr("not a regular file"));
  fs::remove_all(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_THAT(error_of(), HasSubstr("not a regular file"));
  fs::remove_all(path);
  fs::create_symlink(dir_ / "gone", path);
  EXPECT_THAT(error_of(), AllOf(HasSubstr(path), HasSubstr("cannot read: No such file or directory")));
  fs::remove_all(path);
  // $CREDENTIALS_DIRECTORY itself missing.
  ::setenv("CREDENTIALS_DIRECTORY", (dir_ / "nowhere").c_str(), 1);
  EXPECT_THAT(error_of(), HasSubstr("CREDENTIALS_DIRECTORY=" + (dir_ / "nowhere").string() + ": No such file or directory"));
}

// Unreadable: a file the reading user may not open. Root reads every file, so here the reader is
// a child that became `nobody` (as a service user would be).
TEST_F(CredentialsTest, AnUnreadableCredentialFileIsAnErrorNamingIt) {
  Put("SUPERAGENT_CRED_C", "sk-UNREADABLE\n");
  ASSERT_EQ(::chmod((creds_ / "SUPERAGENT_CRED_C").c_str(), 0000), 0);
  ::chmod(dir_.c_str(), 0755);
  ::chmod(creds_.c_str(), 0755);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) _exit(3);
    auto v = app::ReadSecret("SUPERAGENT_CRED_C");
    const std::string out = v.ok() ? "OK " + v->value : v.status().message();
    (void)!::write(p[1], out.data(), out.size());
    _exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_THAT(out, AllOf(HasSubstr("credential SUPERAGENT_CRED_C (" + (creds_ / "SUPERAGENT_CRED_C").string() + ")"),
                         HasSubstr("cannot read: Permission denied")));
  EXPECT_THAT(out, Not(HasSubstr("UNREADABLE")));
}

// serve's start: every secret the config names is read once and kept; the environment's copies
// are gone (a variable execution.env passes to workers on purpose stays); a broken credential
// names its config key.
TEST_F(CredentialsTest, LoadingKeepsTheSecretsAndScrubsTheEnvironment) {
  Config c = DefaultConfig();
  c.github.token_env = "SUPERAGENT_CRED_A";
  c.llm.api_key_env = "SUPERAGENT_CRED_B";
  c.panel.token_env = "SUPERAGENT_CRED_C";
  c.execution.env = {"SUPERAGENT_CRED_C"};
  // The other *_env keys keep their defaults (GITHUB_WEBHOOK_SECRET, …): whatever this process
  // has under those names is scrubbed too, and put back after.
  std::vector<std::pair<std::string, std::string>> saved;
  for (const auto& [key, name] : SecretEnvNames(c))
    if (const char* v = std::getenv(name.c_str()); v != nullptr && name.rfind("SUPERAGENT_CRED_", 0) != 0)
      saved.emplace_back(name, v);
  Put("SUPERAGENT_CRED_A", "ghp_CRED\n");
  ::setenv("SUPERAGENT_CRED_A", "ghp_ENV_SHADOWED", 1);
  ::setenv("SUPERAGENT_CRED_B", "sk-ENVONLY", 1);
  ::setenv("SUPERAGENT_CRED_C", "passed-on-purpose", 1);
  auto loaded = app::LoadSecrets(c, /*scrub=*/true);
  for (const auto& [name, value] : saved) ::setenv(name.c_str(), value.c_str(), 1);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  std::map<std::string, std::string> from;
  for (const auto& o : *loaded) from[o.key] = o.name + " " + app::DescribeOrigin(o.origin);
  EXPECT_EQ(from["github.token_env"], "SUPERAGENT_CRED_A credential file " + (creds_ / "SUPERAGENT_CRED_A").string());
  EXPECT_EQ(from["llm.api_key_env"], "SUPERAGENT_CRED_B environment");
  EXPECT_EQ(from["panel.token_env"], "SUPERAGENT_CRED_C environment");
  EXPECT_EQ(std::getenv("SUPERAGENT_CRED_A"), nullptr);
  EXPECT_EQ(std::getenv("SUPERAGENT_CRED_B"), nullptr);
  EXPECT_STREQ(std::getenv("SUPERAGENT_CRED_C"), "passed-on-purpose");
  // What the modules are given comes from what was read, though the environment is empty now
  // and the file changes.
  Put("SUPERAGENT_CRED_A", "ghp_CHANGED\n");
  EXPECT_EQ(ResolveSecret("SUPERAGENT_CRED_A"), "ghp_CRED");
  EXPECT_EQ(ResolveSecret("SUPERAGENT_CRED_B"), "sk-ENVONLY");
  // A broken one stops the load, named by its key.
  Put("SUPERAGENT_CRED_B", "");
  auto bad = app::LoadSecrets(c, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("llm.api_key_env: credential SUPERAGENT_CRED_B ("));
  EXPECT_THAT(bad.status().message(), HasSubstr("empty"));
}

class CredentialsServeTest : public CredentialsTest {
 protected:
  std::string WriteConfig(int port, const std::string& extra = "") {
    const std::string config = (dir_ / "superagent.yaml").string();
    std::ofstream(config) << "data_dir: data\npanel:\n  listen: 127.0.0.1:" << port
                          << "\n  token_env: SUPERAGENT_CRED_A\nllm:\n  api_key_env: SUPERAGENT_CRED_B\n"
                          << "execution:\n  sandbox: off\n" << extra;
    return config;
  }
};

// The real daemon under a credential directory, as systemd starts it with LoadCredential=: the
// panel password is the credential's (the environment's is refused), the log says where each
// secret came from and shows no value, and /proc/<pid>/environ no longer holds the secret that
// came in the environment.
TEST_F(CredentialsServeTest, ServeTakesTheCredentialAndKeepsNoSecretInItsEnvironment) {
  const int port = FreeLoopbackPort();
  const std::string config = WriteConfig(port);
  Put("SUPERAGENT_CRED_A", "cred-password-密码\n");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", config},
                  {{"CREDENTIALS_DIRECTORY", creds_.string()},
                   {"SUPERAGENT_CRED_A", "env-password-shadowed"},
                   {"SUPERAGENT_CRED_B", "sk-ENVONLYsecret0123456789"}});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  httplib::Client http("127.0.0.1", port);
  auto with = [&](const std::string& password) {
    auto r = http.Get("/api/session", {{"Authorization", "Bearer " + password}});
    return r ? r->status : 0;
  };
  EXPECT_EQ(with("cred-password-密码"), 200);
  EXPECT_EQ(with("env-password-shadowed"), 401);
  const std::string environ_text = [&] {
    std::ifstream in("/proc/" + std::to_string(d.pid()) + "/environ", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  if (::geteuid() == 0) {  // only root reads a non-dumpable process's environ (see the test below)
    EXPECT_THAT(environ_text, HasSubstr("CREDENTIALS_DIRECTORY=")) << "read the right block";
    EXPECT_THAT(environ_text, Not(HasSubstr("sk-ENVONLYsecret0123456789")));
    EXPECT_THAT(environ_text, Not(HasSubstr("env-password-shadowed")));
  }
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_THAT(d.log(), HasSubstr("secret key=panel.token_env name=SUPERAGENT_CRED_A from=\"credential file " +
                                 (creds_ / "SUPERAGENT_CRED_A").string() + "\""));
  EXPECT_THAT(d.log(), HasSubstr("secret key=llm.api_key_env name=SUPERAGENT_CRED_B from=environment"));
  for (const char* value : {"cred-password", "env-password", "sk-ENVONLY"}) EXPECT_THAT(d.log(), Not(HasSubstr(value)));
}

TEST_F(CredentialsServeTest, ABrokenCredentialStopsServeNamingItAndDoctorSaysWhereEachSecretIsFrom) {
  const std::string config = WriteConfig(FreeLoopbackPort());
  Put("SUPERAGENT_CRED_A", "cred-password\n");
  RunOptions o;
  o.env_set = {{"CREDENTIALS_DIRECTORY", creds_.string()}, {"SUPERAGENT_CRED_B", "sk-ENVONLYsecret0123456789"}};
  o.timeout_ms = 30'000;
  RunResult r = RunBinary({"doctor", "--config", config}, o);
  EXPECT_THAT(r.out, HasSubstr("SUPERAGENT_CRED_A from credential file " + (creds_ / "SUPERAGENT_CRED_A").string()))
      << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("SUPERAGENT_CRED_B from environment"));
  EXPECT_THAT(r.out + r.err, AllOf(Not(HasSubstr("cred-password")), Not(HasSubstr("sk-ENVONLY"))));

  Put("SUPERAGENT_CRED_A", "bad\xff\xfe-cred-password\n");
  r = RunBinary({"doctor", "--config", config}, o);
  EXPECT_THAT(r.out, HasSubstr("credential SUPERAGENT_CRED_A (" + (creds_ / "SUPERAGENT_CRED_A").string() +
                               "): not valid UTF-8"))
      << r.out << r.err;
  EXPECT_NE(r.exit_code, 0);
  RunResult s = RunBinary({"serve", "--config", config}, o);
  EXPECT_EQ(s.exit_code, 1) << s.err;
  EXPECT_THAT(s.err, HasSubstr("panel.token_env: credential SUPERAGENT_CRED_A ("));
  EXPECT_THAT(s.err, HasSubstr("not valid UTF-8"));
  EXPECT_THAT(s.err, Not(HasSubstr("ready")));
  EXPECT_THAT(r.out + r.err + s.err, AllOf(Not(HasSubstr("cred-password")), Not(HasSubstr("sk-ENVONLY"))));
}

}  // namespace
}  // namespace superagent::testing
