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

// human_action's form, called directly: bytes a fake HTTP model could not even carry (invalid
// UTF-8) are a tool error; Chinese and emoji options are a question; no report comes of a refusal.
TEST_F(WorkerToolsTest, AHumanActionFormIsCheckedBeforeItEndsTheTurn) {
  for (const std::string& args : {std::string("{\"question\": \"Which?\", \"options\": [\"A\", \"\xff\xfe\"]}"),
                                 std::string("{\"question\": \"\xc3\x28?\"}"),
                                 std::string(R"({"question": "Which?", "options": [["A"], "B"]})"),
                                 std::string(R"({"question": "Which?", "options": ["A", "B"], "free_text": 1})"),
                                 std::string(R"({"question": "Which?", "options": [")") + std::string(201, 'x') + "\"]}"})
    EXPECT_THAT(Call("human_action", args), StartsWith("error: human_action")) << args;
  task_.mandate.sender = "alice";  // "@Alice" names her: the person who asked
  ToolOutcome out = tools_->Call({"c2", "human_action", R"({"question": "用哪个？", "options": ["方案一 🚀", "方案二"],)"
                                                        R"( "ask": "@Alice"})"});
  ASSERT_TRUE(out.report.has_value()) << out.text;
  EXPECT_EQ(out.text, "question sent");
  EXPECT_EQ(out.report->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(out.report->question_form, nlohmann::json({{"options", {"方案一 🚀", "方案二"}}, {"free_text", true}}));
  // The form object of the earlier schema is read the same way.
  out = tools_->Call({"c3", "human_action", R"({"question": "Which?", "form": {"options": ["A", "B"], "free_text": false}})"});
  ASSERT_TRUE(out.report.has_value()) << out.text;
  EXPECT_EQ(out.report->question_form, nlohmann::json({{"options", {"A", "B"}}, {"free_text", false}}));
}

// The `skill` tool reads only skills the index lists; a name is never made into a path.
TEST_F(WorkerToolsTest, TheSkillToolReadsOnlyListedSkills) {
  namespace fs = std::filesystem;
  const fs::path team = dir_ / "team";
  fs::create_directories(team / "skills");
  std::ofstream(team / "skills" / "deploy.md") << "# Deploy\nRun make deploy.\n";
  std::ofstream(dir_ / "passwd.md") << "NOT-A-SKILL\n";
  services_ = WorkerServices{nullptr, nullptr, {.team_dir = team.string()}};
  EXPECT_EQ(Call("skill", R"({"name": "deploy"})"), "# Deploy\nRun make deploy.");
  for (const char* name : {"../../etc/passwd", "../passwd", "a/b", "deploy.md", "/etc/passwd", "", "DEPLOY", "部署"})
    EXPECT_EQ(Call("skill", nlohmann::json{{"name", name}}.dump()),
              "error: there is no skill \"" + std::string(name) + "\"; the team's skills: deploy")
        << name;
  services_ = WorkerServices{nullptr, nullptr};
  EXPECT_EQ(Call("skill", R"({"name": "deploy"})"), "error: there is no skill \"deploy\"; the team has written none");
}

}  // namespace
}  // namespace superagent::exec
