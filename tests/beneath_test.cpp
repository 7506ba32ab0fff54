// Files opened beneath a root never leave it (issue 19, part 5): the kernel's openat2 resolver
// and the fallback walk, on real directories with real symbolic links, give the same answers.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "superagent/beneath.h"

namespace superagent::beneath {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A worktree `root/tree` with a sibling `root/outside` it must never reach.
class BeneathTest : public ::testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("beneath-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()));
    tree_ = base_ / "tree";
    outside_ = base_ / "outside";
    fs::create_directories(tree_ / "docs");
    fs::create_directories(outside_);
    std::ofstream(tree_ / "docs" / "a.md") << "# inside\n";
    std::ofstream(outside_ / "secret.txt") << "SECRET-OUTSIDE\n";
  }
  void TearDown() override { fs::remove_all(base_); }

  std::string Root() const { return tree_.string(); }
  Resolver R() const { return GetParam(); }

  fs::path base_, tree_, outside_;
};

TEST_P(BeneathTest, ReadsAndWritesInsideIncludingNonAsciiNames) {
  auto a = ReadFile(Root(), "docs/a.md", R());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, "# inside\n");
  ASSERT_TRUE(WriteFile(Root(), "文档/说明 🚀.md", "你好，世界 🌏\n", R()).ok());
  EXPECT_EQ(Slurp(tree_ / "文档" / "说明 🚀.md"), "你好，世界 🌏\n");
  auto back = ReadFile(Root(), "文档/说明 🚀.md", R());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "你好，世界 🌏\n");
  // Deep new directories are made beneath the root; "." and an inner ".." are fine.
  ASSERT_TRUE(WriteFile(Root(), "new/deep/./x/../y.txt", "y", R()).ok());
  EXPECT_EQ(Slurp(tree_ / "new" / "deep" / "y.txt"), "y");
  // Replacing shortens: the old content does not linger.
  ASSERT_TRUE(WriteFile(Root(), "docs/a.md", "x", R()).ok());
  EXPECT_EQ(Slurp(tree_ / "docs" / "a.md"), "x");
}

TEST_P(BeneathTest, DotDotAndAbsolutePathsThatLeaveAreRefused) {
  for (const char* rel : {"../outside/secret.txt", "docs/../../outside/secret.txt", "/etc/passwd", "..", "docs/../.."}) {
    auto r = ReadFile(Root(), rel, R());
    ASSERT_FALSE(r.ok()) << rel;
    EXPECT_THAT(r.status().message(), HasSubstr("leads outside")) << rel;
  }
  Status w = WriteFile(Root(), "../outside/new.txt", "x", R());
  EXPECT_THAT(w.message(), HasSubstr("leads outside"));
  EXPECT_FALSE(fs::exists(outside_ / "new.txt"));
  Status abs = WriteFile(Root(), (outside_ / "abs.txt").string(), "x", R());
  EXPECT_THAT(abs.message(), HasSubstr("leads outside"));
  EXPECT_FALSE(fs::exists(outside_ / "abs.txt"));
}

TEST_P(BeneathTest, LinksPointingOutAreRefusedForReading) {
  fs::create_symlink("/etc/passwd", tree_ / "passwd");
  fs::create_symlink("../outside/secret.txt", tree_ / "relative-out");
  fs::create_symlink(outside_, tree_ / "dir-out");
  fs::create_symlink("../../outside", tree_ / "docs" / "up-out");
  for (const char* rel : {"passwd", "relative-out", "dir-out/secret.txt", "docs/up-out/secret.txt"}) {
    auto r = ReadFile(Root(), rel, R());
    ASSERT_FALSE(r.ok()) << rel;
    EXPECT_THAT(r.status().message(), HasSubstr("leads outside")) << rel;
  }
}

TEST_P(BeneathTest, ADanglingLinkOutNeverCreatesAFileOutside) {
  const fs::path target = outside_ / "created-by-write.txt";
  fs::create_symlink(target, tree_ / "dangling");
  fs::create_symlink("../outside/relative-dangling.txt", tree_ / "dangling-rel");
  fs::create_symlink(outside_, tree_ / "dir-out");
  for (const char* rel : {"dangling", "dangling-rel", "dir-out/new.txt", "dir-out/sub/new.txt"}) {
    Status s = WriteFile(Root(), rel, "pwned", R());
    EXPECT_FALSE(s.ok()) << rel;
  }
  EXPECT_THAT(WriteFile(Root(), "dangling", "pwned", R()).message(), HasSubstr("is a symbolic link (to " + target.string()));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(outside_)) names.push_back(e.path().filename().string());
  EXPECT_THAT(names, ::testing::ElementsAre("secret.txt")) << "nothing was created outside";
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(outside_ / "relative-dangling.txt"));
  EXPECT_FALSE(fs::exists(outside_ / "new.txt"));
  EXPECT_FALSE(fs::exists(outside_ / "sub"));
  EXPECT_EQ(Slurp(outside_ / "secret.txt"), "SECRET-OUTSIDE\n");
}

TEST_P(BeneathTest, LinksThatStayInsideKeepWorking) {
  fs::create_symlink("docs/a.md", tree_ / "alias.md");
  fs::create_symlink("docs", tree_ / "d");
  fs::create_symlink("../docs/a.md", tree_ / "docs" / "self");  // climbs, but stays beneath
  for (const char* rel : {"alias.md", "d/a.md", "docs/self", "d/../docs/a.md"}) {
    auto r = ReadFile(Root(), rel, R());
    ASSERT_TRUE(r.ok()) << rel << ": " << r.status().ToString();
    EXPECT_EQ(*r, "# inside\n") << rel;
  }
  // A link to a directory inside opens as that directory.
  auto dir = Open(Root(), "d", O_RDONLY | O_DIRECTORY, 0, R());
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  ::close(*dir);
  // A directory link inside is a usable parent for writes.
  ASSERT_TRUE(WriteFile(Root(), "d/b.md", "b", R()).ok());
  EXPECT_EQ(Slurp(tree_ / "docs" / "b.md"), "b");
  // A write to the link itself is refused and names where it points.
  EXPECT_THAT(WriteFile(Root(), "alias.md", "x", R()).message(), HasSubstr("is a symbolic link (to docs/a.md)"));
  EXPECT_EQ(Slurp(tree_ / "docs" / "a.md"), "# inside\n");
}

TEST_P(BeneathTest, MissingFilesLoopsAndNonRegularFiles) {
  auto missing = ReadFile(Root(), "nope.md", R());
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  fs::create_symlink("loop-b", tree_ / "loop-a");
  fs::create_symlink("loop-a", tree_ / "loop-b");
  auto loop = ReadFile(Root(), "loop-a", R());
  ASSERT_FALSE(loop.ok());
  EXPECT_THAT(loop.status().message(), HasSubstr("symbolic link"));
  ASSERT_EQ(::mkfifo((tree_ / "fifo").c_str(), 0600), 0);
  auto fifo = ReadFile(Root(), "fifo", R());  // returns at once: never waits for a writer
  ASSERT_FALSE(fifo.ok());
  EXPECT_THAT(fifo.status().message(), HasSubstr("not a regular file"));
  auto dir = ReadFile(Root(), "docs", R());
  EXPECT_FALSE(dir.ok());
  EXPECT_FALSE(ReadFile(Root(), "", R()).ok());
  EXPECT_FALSE(ReadFile((base_ / "no-such-root").string(), "a", R()).ok());
}

INSTANTIATE_TEST_SUITE_P(BothResolvers, BeneathTest, ::testing::Values(Resolver::kAuto, Resolver::kWalk),
                         [](const ::testing::TestParamInfo<Resolver>& p) { return p.param == Resolver::kAuto ? "openat2" : "walk"; });

}  // namespace
}  // namespace superagent::beneath
