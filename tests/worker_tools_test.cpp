// A worker's tool calls with arguments of the wrong JSON type, called directly on WorkerTools.
// Found by fuzz/worker_tools_fuzz (docs/009-fuzzing.md): `read_file {"path": 5}` ended the
// daemon (a json type_error thrown on the worker's thread). The model wrote the arguments, so a
// wrong type is a tool error the model reads and may correct — and nothing on disk changes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine_fixture.h"
#include "exec/worker_tools.h"
#include "superagent/jobs.h"
#include "superagent/process.h"

namespace superagent::exec {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class WorkerToolsTest : public superagent::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    std::filesystem::create_directories(dir_ / "ticket" / "docs");
    std::ofstream(dir_ / "ticket" / "docs" / "a.md") << "# 标题\n";
    std::filesystem::create_directories(dir_ / "jobs");
    jobs_ = std::make_unique<Jobs>(runner_.get(), &clock_, [](TimeMs) {}, (dir_ / "jobs").string());
    task_.ticket = 1;
    task_.workspace.dir = (dir_ / "ticket").string();
    task_.jobs = jobs_.get();
    tools_ = std::make_unique<WorkerTools>(task_, engine_.get(), &services_, options_);
  }
  void TearDown() override {
    tools_.reset();
    jobs_.reset();
    EngineTest::TearDown();
  }
  std::string Call(const std::string& name, const std::string& arguments) {
    ToolOutcome out;
    EXPECT_NO_THROW(out = tools_->Call({"c1", name, arguments})) << name << " " << arguments;
    EXPECT_FALSE(out.report.has_value()) << name << " " << arguments;
    return out.text;
  }

  std::unique_ptr<ProcessRunner> runner_ = MakePosixProcessRunner();
  std::unique_ptr<Jobs> jobs_;
  WorkerServices services_{nullptr, nullptr};
  BuiltinExecutorOptions options_;
  WorkerTask task_;
  std::unique_ptr<WorkerTools> tools_;
};

TEST_F(WorkerToolsTest, ArgumentsOfTheWrongTypeAreAToolErrorFoundByFuzzing) {
  const std::pair<const char*, const char*> calls[] = {
      {"read_file", R"({"path": 5})"},
      {"read_file", R"({"path": null})"},
      {"write_file", R"({"path": ["docs/a.md"], "content": "x"})"},
      {"edit_file", R"({"path": "docs/a.md", "old_text": 5, "new_text": "Title"})"},
      {"edit_file", R"({"path": "docs/a.md", "old_text": "标题", "new_text": {"t": 1}})"},
      {"handback", R"({"message_id": 5, "reason": "not mine"})"},
      {"commit_and_push", R"({"message": 5})"},
      {"open_pull_request", R"({"title": false})"},
  };
  for (const auto& [name, args] : calls) EXPECT_THAT(Call(name, args), StartsWith("error:")) << name << " " << args;
  std::ifstream in(dir_ / "ticket" / "docs" / "a.md");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "# 标题\n") << "a refused call changes nothing";
}

TEST_F(WorkerToolsTest, TheSameToolsWithTheRightTypesStillWork) {
  EXPECT_EQ(Call("read_file", R"({"path": "docs/a.md"})"), "# 标题\n");
  EXPECT_EQ(Call("edit_file", R"({"path": "docs/a.md", "old_text": "标题", "new_text": "Title"})"), "edited docs/a.md");
  EXPECT_EQ(Call("read_file", R"({"path": "docs/a.md"})"), "# Title\n");
}

// Issue 19: the file tools open beneath the Ticket's directory and never follow a link out.
TEST_F(WorkerToolsTest, FileToolsNeverFollowALinkOutOfTheTicketsDirectory) {
  namespace fs = std::filesystem;
  const fs::path ticket = dir_ / "ticket", outside = dir_ / "outside";
  fs::create_directories(outside);
  std::ofstream(outside / "secret.txt") << "OUTSIDE-SECRET";
  fs::create_symlink(outside / "created.txt", ticket / "dangling");  // dangling: its target does not exist
  fs::create_symlink("/etc/passwd", ticket / "passwd");
  fs::create_symlink(outside / "secret.txt", ticket / "secret");
  fs::create_symlink(outside, ticket / "out");

  EXPECT_THAT(Call("write_file", R"({"path": "dangling", "content": "pwned"})"),
              HasSubstr("error: dangling is a symbolic link (to " + (outside / "created.txt").string()));
  EXPECT_FALSE(fs::exists(outside / "created.txt")) << "nothing is created outside";
  EXPECT_THAT(Call("write_file", R"({"path": "out/new.txt", "content": "pwned"})"), HasSubstr("error: out/new.txt leads outside"));
  EXPECT_THAT(Call("write_file", R"({"path": "../escape.txt", "content": "pwned"})"), HasSubstr("leads outside"));
  EXPECT_FALSE(fs::exists(dir_ / "escape.txt"));
  EXPECT_FALSE(fs::exists(outside / "new.txt"));
  EXPECT_THAT(Call("read_file", R"({"path": "passwd"})"), HasSubstr("error: passwd leads outside"));
  EXPECT_THAT(Call("read_file", R"({"path": "secret"})"), HasSubstr("error: secret leads outside"));
  EXPECT_THAT(Call("read_file", R"({"path": "../outside/secret.txt"})"), HasSubstr("leads outside"));
  EXPECT_THAT(Call("read_file", R"({"path": "/etc/passwd"})"), HasSubstr("leads outside"));
  EXPECT_THAT(Call("edit_file", R"({"path": "secret", "old_text": "OUTSIDE", "new_text": "x"})"), HasSubstr("leads outside"));
  std::ifstream in(outside / "secret.txt");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), "OUTSIDE-SECRET");
}

TEST_F(WorkerToolsTest, LinksInsideAndNonAsciiNamesStillWork) {
  namespace fs = std::filesystem;
  fs::create_symlink("docs/a.md", dir_ / "ticket" / "alias.md");
  fs::create_symlink("docs", dir_ / "ticket" / "d");
  EXPECT_EQ(Call("read_file", R"({"path": "alias.md"})"), "# 标题\n");
  EXPECT_EQ(Call("write_file", R"({"path": "d/新文件 🚀.md", "content": "内容 ✅"})"), "wrote d/新文件 🚀.md");
  EXPECT_EQ(Call("read_file", R"({"path": "docs/新文件 🚀.md"})"), "内容 ✅");
  EXPECT_EQ(Call("edit_file", R"({"path": "d/新文件 🚀.md", "old_text": "内容", "new_text": "正文"})"), "edited d/新文件 🚀.md");
  EXPECT_EQ(Call("read_file", R"({"path": "docs/新文件 🚀.md"})"), "正文 ✅");
  // A write through a link, even one inside, is refused with where it points, so the model can retry.
  EXPECT_THAT(Call("write_file", R"({"path": "alias.md", "content": "x"})"), HasSubstr("is a symbolic link (to docs/a.md)"));
  EXPECT_EQ(Call("read_file", R"({"path": "docs/a.md"})"), "# 标题\n");
}

}  // namespace
}  // namespace superagent::exec
