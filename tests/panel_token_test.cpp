// The panel token file (issue 19, part 4): made once, 0600 whatever the umask, reused, never
// followed through a link; and `superagent panel-url` prints the login link from it.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/panel_token.h"
#include "run_binary.h"

namespace superagent::app {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::RunBinary;
using testing::RunResult;

class PanelTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("panel-token-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()) + "-数据");
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace);
  }
  void TearDown() override {
    ::umask(old_umask_);
    fs::remove_all(dir_);
  }
  mode_t Mode(const fs::path& p) {
    struct stat st;
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }

  fs::path dir_;
  mode_t old_umask_ = ::umask(022);
};

TEST_F(PanelTokenTest, MadeOnceAs0600UnderAUmaskOfZeroAndReusedAtLaterStarts) {
  ::umask(0);  // the most permissive umask a service could run with
  auto first = LoadOrCreatePanelToken(dir_.string());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->size(), 64u);  // 32 random bytes in hex
  EXPECT_EQ(first->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(Mode(dir_ / "panel.token"), 0600u);
  // No temporary file is left behind.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  EXPECT_THAT(names, ::testing::ElementsAre("panel.token"));

  auto again = LoadOrCreatePanelToken(dir_.string());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first) << "a later start reuses the token, so login links stay good";
  auto read = ReadPanelToken(dir_.string());
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, *first);

  fs::path other = dir_ / "other";
  fs::create_directories(other);
  auto second_dir = LoadOrCreatePanelToken(other.string());
  ASSERT_TRUE(second_dir.ok());
  EXPECT_NE(*second_dir, *first) << "each data_dir has its own random token";
}

TEST_F(PanelTokenTest, AWiderModeIsNarrowedAndAFileThatIsNoTokenIsRefused) {
  {
    std::ofstream(dir_ / "panel.token") << "a-fixed-token-written-by-hand-0123456789\n";
  }
  fs::permissions(dir_ / "panel.token", fs::perms::all, fs::perm_options::replace);
  auto t = LoadOrCreatePanelToken(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, "a-fixed-token-written-by-hand-0123456789");
  EXPECT_EQ(Mode(dir_ / "panel.token"), 0600u);

  std::ofstream(dir_ / "panel.token", std::ios::trunc) << "short\n";
  auto bad = LoadOrCreatePanelToken(dir_.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("does not hold a token"));
  EXPECT_THAT(bad.status().message(), HasSubstr("delete it"));
}

TEST_F(PanelTokenTest, ALinkInPlaceOfTheTokenIsNeverFollowed) {
  const fs::path outside = dir_ / "outside.txt";
  fs::create_symlink(outside, dir_ / "panel.token");  // dangling: following it would create outside.txt
  auto t = LoadOrCreatePanelToken(dir_.string());
  EXPECT_FALSE(t.ok());
  EXPECT_FALSE(fs::exists(outside));
  EXPECT_EQ(ReadPanelToken((dir_ / "none").string()).status().code(), Status::Code::kNotFound);
  EXPECT_THAT(ReadPanelToken((dir_ / "none").string()).status().message(), HasSubstr("start `superagent serve` once"));
}

TEST_F(PanelTokenTest, TheLoginLinkAndAFixedPassword) {
  EXPECT_EQ(PanelLoginUrl("127.0.0.1:8080", "abc"), "http://127.0.0.1:8080/login?token=abc");
  EXPECT_EQ(PanelLoginUrl("0.0.0.0:9000", "abc"), "http://127.0.0.1:9000/login?token=abc");
  EXPECT_EQ(PanelLoginUrl("[::1]:8080", "abc"), "http://[::1]:8080/login?token=abc");
  EXPECT_EQ(PanelLoginUrl("[::]:8080", "p&s w"), "http://[::1]:8080/login?token=p%26s%20w");
  EXPECT_EQ(PanelLoginUrl("localhost:1", "密码"), "http://localhost:1/login?token=%E5%AF%86%E7%A0%81");

  Config config;
  config.data_dir = dir_.string();
  config.panel.token_env = "SUPERAGENT_TEST_FIXED_PANEL_PASSWORD";
  ASSERT_EQ(::setenv("SUPERAGENT_TEST_FIXED_PANEL_PASSWORD", "correct horse", 1), 0);
  auto fixed = PanelCredential(config, /*create=*/true);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(*fixed, "correct horse");
  EXPECT_FALSE(fs::exists(dir_ / "panel.token")) << "a fixed password replaces the generated token";
  ::unsetenv("SUPERAGENT_TEST_FIXED_PANEL_PASSWORD");
  EXPECT_THAT(PanelCredential(config, true).status().message(), HasSubstr("which is unset or empty"));
}

TEST_F(PanelTokenTest, PanelUrlPrintsTheLinkFromTheTokenFile) {
  const fs::path config = dir_ / "superagent.yaml";
  std::ofstream(config) << "data_dir: " << dir_.string() << "\npanel:\n  listen: 127.0.0.1:18123\n";
  RunResult none = RunBinary({"panel-url", "--config", config.string()});
  EXPECT_EQ(none.exit_code, 1) << none.err;
  EXPECT_THAT(none.err, HasSubstr("start `superagent serve` once"));

  auto token = LoadOrCreatePanelToken(dir_.string());
  ASSERT_TRUE(token.ok());
  RunResult r = RunBinary({"panel-url", "--config", config.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "http://127.0.0.1:18123/login?token=" + *token + "\n");
  EXPECT_EQ(r.err, "");
  RunResult help = RunBinary({"help"});
  EXPECT_THAT(help.out, HasSubstr("\n  panel-url "));
}

}  // namespace
}  // namespace superagent::app
