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

}  // namespace
}  // namespace superagent::exec
