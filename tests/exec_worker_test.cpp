// Worker turns end to end: a Ticket gets a workspace (git worktree of a real origin), the
// executor edits, verifies and reports, the daemon pushes the branch and the PR and the result
// leave through the outbox to a loopback GitHub — after the acknowledgement.
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "exec_fixture.h"
#include "fake_chat_server.h"
#include "fake_github_server.h"
#include "superagent/effects.h"
#include "superagent/github.h"
#include "superagent/text.h"
#include "superagent/worker.h"
#include "result_ok.h"
#include "superagent/views.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;

class ExecWorkerTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    github_ = std::make_unique<FakeGitHub>(&clock_);
    github_->issues[1] = WebhookExample("issue_comment", "created")["issue"];
    // The repository of the engine fixture's comments, and of the exec fixture's workspaces.
    github_->repo = "acme/widgets";
    github_->repo_info = {{"full_name", "acme/widgets"}, {"default_branch", "main"}};
    http_ = MakeHttpClient("superagent-test");
    github::ClientOptions o;
    o.api_url = github_->url();
    o.token = "t";
    client_ = std::make_unique<github::Client>(http_.get(), &clock_, [this](TimeMs ms) { clock_.Advance(ms); }, o);
    channel_ = std::make_unique<github::GitHubChannel>(client_.get(), "acme/widgets");
    effects_ = std::make_unique<EffectsLoop>(engine_.get(), std::vector<Channel*>{channel_.get()}, &clock_);
  }

  // Delivers every due message and action.
  void Deliver() {
    for (int i = 0; i < 10; ++i) {
      auto n = effects_->RunOnce();
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      if (*n == 0) return;
    }
  }

  // Runs the Ticket's queued turn to its end.
  void RunTurns(exec::Scheduler& s) {
    auto started = s.Tick();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    s.WaitForTurns();
    ASSERT_TRUE(s.Tick().ok());
  }

  std::vector<std::string> CommentBodies() {
    std::vector<std::string> out;
    auto lock = github_->Lock();
    for (const json& c : github_->comments) out.push_back(c["body"]);
    return out;
  }

  std::unique_ptr<FakeGitHub> github_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<github::Client> client_;
  std::unique_ptr<github::GitHubChannel> channel_;
  std::unique_ptr<EffectsLoop> effects_;
};

TEST_F(ExecWorkerTest, TheCommandExecutorFixesPushesAndOpensThePullRequestAfterTheAcknowledgement) {
  const TicketId id = AcceptedTicket("c1");
  const std::string task_file = (dir_ / "task.json").string();
  auto executor = exec::MakeCommandExecutor(
      {"cat > " + task_file + " && sed -i 's/teh typo/the typo/' README.md && ./test.sh && echo working... && "
       "echo '{\"stage\":\"ready\",\"summary\":\"Fixed the typo in README.\",\"question\":null,"
       "\"pr\":{\"title\":\"Fix the typo in README\",\"body\":\"Fixes #1.\"}}'"},
      engine_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  // The task on stdin.
  json task = json::parse(ReadText(task_file));
  EXPECT_EQ(task["ticket"], id);
  EXPECT_EQ(task["request"], "@agent please fix the typo in README");
  EXPECT_EQ(task["branch"], "superagent/ticket-" + std::to_string(id));
  EXPECT_EQ(task["base"], "origin/main");
  EXPECT_EQ(task["mandate"]["scope"], "Fix the typo in README");
  EXPECT_EQ(task["mandate"]["sender"], "alice");
  EXPECT_EQ(task["mandate"]["strength"], "explicit");
  EXPECT_EQ(task["mandate"]["matched_rules"], json::array());  // an explicit request matches no rule
  EXPECT_EQ(task["first_run"], true);
  EXPECT_TRUE(std::filesystem::exists(task["directory"].get<std::string>() + "/README.md"));

  // The daemon committed and pushed the branch.
  EXPECT_EQ(OnOrigin("superagent/ticket-" + std::to_string(id), "README.md"), "Hello\nThere is the typo.\n");
  EXPECT_EQ(OnOrigin("main", "README.md"), "Hello\nThere is teh typo.\n");
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
  auto assignments = Ok(views_->Assignments(id));
  ASSERT_EQ(assignments.size(), 1u);
  EXPECT_EQ(assignments[0].executor, "command");
  EXPECT_EQ(assignments[0].state, "ended");
  EXPECT_TRUE(assignments[0].started_at.has_value());

  Deliver();
  ASSERT_EQ(github_->pulls.size(), 1u);
  const json pr = github_->pulls.begin()->second;
  EXPECT_EQ(pr["head"]["ref"], "superagent/ticket-" + std::to_string(id));
  EXPECT_EQ(pr["base"]["ref"], "main");
  EXPECT_EQ(pr["title"], "Fix the typo in README");
  auto bodies = CommentBodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_THAT(bodies[0], HasSubstr("I'll fix the typo in README."));  // the acknowledgement first
  EXPECT_THAT(bodies[1], HasSubstr("Fixed the typo in README."));

  // The run is in the transcript.
  auto session = Ok(views_->SessionForTicket(id));
  ASSERT_TRUE(session.has_value());
  EXPECT_EQ(session->status, "idle");
  auto events = Ok(views_->SessionEvents(session->id));
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].kind, "input");
  EXPECT_EQ(events[1].kind, "command");
  EXPECT_EQ(events[1].body["exit_code"], 0);
  EXPECT_EQ(events[2].kind, "report");
}

TEST_F(ExecWorkerTest, ACommandExitingNonZeroBlocksTheTicketWithTheStderrTail) {
  const TicketId id = AcceptedTicket("c1");
  auto executor = exec::MakeCommandExecutor({"echo 'step 1 ok' >&2; echo 'boom: tests failed' >&2; exit 3"}, engine_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  auto receipts = Ok(views_->Receipts(id));
  ASSERT_EQ(receipts.size(), 2u);
  EXPECT_EQ(receipts[1].kind, MessageKind::kResult);
  EXPECT_THAT(receipts[1].body, HasSubstr("exited with code 3"));
  // Issue 34: the stderr is the panel card's, never the discussion's.
  EXPECT_THAT(receipts[1].body, ::testing::Not(HasSubstr("boom")));
  auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
  EXPECT_THAT(Ok(views->Detail(id)).row.stage_reason, HasSubstr("step 1 ok\nboom: tests failed"));
  EXPECT_EQ(Ok(views_->OutboxCounts())["pending"], 2);  // no PR action
}

TEST_F(ExecWorkerTest, ACommandWhoseLastLineIsNoResultBlocksTheTicketSayingWhy) {
  const TicketId id = AcceptedTicket("c1");
  auto executor = exec::MakeCommandExecutor({"echo '{\"stage\":\"done\",\"summary\":\"x\"}'"}, engine_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  auto receipts = Ok(views_->Receipts(id));
  ASSERT_EQ(receipts.size(), 2u);
  EXPECT_THAT(receipts[1].body, HasSubstr("report.stage must be ready, blocked or waiting_for_person"));
}

TEST_F(ExecWorkerTest, AQuestionFromTheCommandGoesToThePersonWhoAskedAndTheirAnswerRerunsIt) {
  const TicketId id = AcceptedTicket("c1");
  const std::string log = (dir_ / "runs.log").string();
  auto executor = exec::MakeCommandExecutor(
      {"cat >> " + log + " && echo '{\"stage\":\"waiting_for_person\",\"summary\":\"Need a choice.\","
       "\"question\":\"British or American spelling?\",\"pr\":null}'"},
      engine_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  auto t = views_->GetTicket(id);
  ASSERT_EQ(t->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(t->waiting->actor, "alice");
  EXPECT_EQ(t->waiting->question, "British or American spelling?");
  EXPECT_EQ(scheduler->Slots().worker_used, 0);  // handing over releases the slot at once

  Receive(Comment("c2", "alice", false, "American, please"));
  RunTurns(*scheduler);
  std::string runs = ReadText(log);
  auto second = json::parse(runs.substr(runs.find('\n') + 1));
  EXPECT_EQ(second["first_run"], false);
  ASSERT_EQ(second["follow_ups"].size(), 1u);
  EXPECT_EQ(second["follow_ups"][0]["kind"], "answer");
  EXPECT_EQ(second["follow_ups"][0]["text"], "American, please");
  EXPECT_EQ(second["follow_ups"][0]["from"], "alice");
}

// Issue 18: 1000 Chinese characters on a worker command's stdout used to be cut by bytes inside a
// character, and storing the transcript threw json type_error.316 in the turn thread: the daemon
// aborted, and again at every start. The text is stored, valid, and the result goes out.
TEST_F(ExecWorkerTest, ACommandPrintingAThousandChineseCharactersIsStoredWholeAndItsResultPosted) {
  const TicketId id = AcceptedTicket("c1");
  std::string zh;
  for (int i = 0; i < 1000; ++i) zh += "汉";
  std::ofstream(dir_ / "zh.txt") << zh << "\n";
  auto executor = exec::MakeCommandExecutor(
      {"cat > /dev/null; cat " + (dir_ / "zh.txt").string() +
       "; printf '\\377\\376 binary\\n'; echo '{\"stage\":\"blocked\",\"summary\":\"读完了：汉字一千个。\"}'"},
      engine_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  auto session = Ok(views_->SessionForTicket(id));
  ASSERT_TRUE(session.has_value());
  auto events = Ok(views_->SessionEvents(session->id));
  ASSERT_GE(events.size(), 2u);
  ASSERT_EQ(events[1].kind, "command");
  const std::string out = events[1].body["stdout_tail"];
  EXPECT_TRUE(text::IsValid(out));
  EXPECT_LE(text::CountCodePoints(out), 2000u);
  EXPECT_THAT(out, HasSubstr(zh)) << "1000 characters fit a 2000-character tail whole";
  EXPECT_THAT(out, HasSubstr("\xEF\xBF\xBD\xEF\xBF\xBD binary")) << "invalid bytes became U+FFFD";
  Deliver();
  auto bodies = CommentBodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_THAT(bodies[1], HasSubstr("读完了：汉字一千个。"));
}

// CJK text on a failing command's stderr: the Ticket is blocked with the tail of what it said,
// cut by characters, on the panel's card; GitHub hears only the daemon's line (issue 34).
TEST_F(ExecWorkerTest, CjkOnAFailingCommandsStderrBlocksTheTicketWithItsTailOnTheCardNotInTheDiscussion) {
  const TicketId id = AcceptedTicket("c1");
  std::string line;
  for (int i = 0; i < 700; ++i) line += "错";
  std::ofstream(dir_ / "err.txt") << "第一步完成\n" << line << "\n测试失败：断言错误\n";
  auto executor = exec::MakeCommandExecutor({"cat " + (dir_ / "err.txt").string() + " >&2; exit 2"}, engine_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  auto receipts = Ok(views_->Receipts(id));
  ASSERT_EQ(receipts.size(), 2u);
  const std::string& said = receipts[1].body;
  EXPECT_TRUE(text::IsValid(said));
  EXPECT_THAT(said, HasSubstr("exited with code 2"));
  EXPECT_THAT(said, ::testing::Not(HasSubstr("测试失败")));
  auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
  const std::string why = Ok(views->Detail(id)).row.stage_reason;
  EXPECT_TRUE(text::IsValid(why));
  EXPECT_THAT(why, HasSubstr("测试失败：断言错误")) << "the tail, cut by characters";
  Deliver();
  auto bodies = CommentBodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_THAT(bodies[1], HasSubstr("exited with code 2"));
  EXPECT_THAT(bodies[1], ::testing::Not(HasSubstr("错错")));
  auto session = Ok(views_->SessionForTicket(id));
  ASSERT_TRUE(session.has_value());
  auto events = Ok(views_->SessionEvents(session->id));
  ASSERT_GE(events.size(), 2u);
  EXPECT_THAT(events[1].body["stderr_tail"].get<std::string>(), HasSubstr("测试失败"));
}

// A tool result over 16 000 bytes of multi-byte characters used to be cut by bytes (inside a
// character: the transcript could not be stored); a file that is not UTF-8 (GBK here) broke it
// the same way. Limits are characters now, and invalid bytes reach the model as U+FFFD.
TEST_F(ExecWorkerTest, ToolResultsOfMultiByteAndInvalidTextReachTheModelAndTheTranscript) {
  const TicketId id = AcceptedTicket("c1");
  std::string zh;
  for (int i = 0; i < 6000; ++i) zh += "字";  // 18 000 bytes, 6 000 characters
  std::string more;
  for (int i = 0; i < 20000; ++i) more += "多";
  FakeChatServer model;
  model.Push(model.ToolCalls({{"shell", json{{"command", "printf '%s' '" + zh + "'"}}.dump()}}));
  model.Push(model.ToolCalls({{"shell", json{{"command", "printf '\\326\\320\\316\\304 gbk'"}}.dump()}}));
  model.Push(model.ToolCalls({{"shell", json{{"command", "printf '%s' '" + more + "'; echo; echo 最后一行"}}.dump()}}));
  model.Push(model.ToolCalls({{"report", R"({"stage":"blocked","summary":"看过了。"})"}}));
  llm::ChatOptions co;
  co.base_url = model.base_url();
  co.api_key = model.api_key();
  auto chat_http = MakeHttpClient("superagent-test");
  llm::OpenAiChatClient chat(co, chat_http.get(), &exec_clock_, [](TimeMs) {});
  exec::BuiltinExecutorOptions bo;
  bo.model = "deepseek-chat";
  auto executor = exec::MakeBuiltinExecutor(bo, engine_.get(), views_.get(), &chat, services_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_TRUE(model.problems().empty()) << model.problems()[0];
  auto requests = model.requests();
  ASSERT_EQ(requests.size(), 4u);
  auto tool_text = [&](std::size_t request) { return requests[request]["messages"].back()["content"].get<std::string>(); };
  EXPECT_EQ(tool_text(1), "exit code 0\nstdout:\n" + zh + "\nstderr:\n") << "6000 characters are under the limit";
  EXPECT_EQ(tool_text(2), "exit code 0\nstdout:\n\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD gbk\nstderr:\n");
  const std::string cut = tool_text(3);
  EXPECT_LE(text::CountCodePoints(cut), 16'000u);
  EXPECT_THAT(cut, HasSubstr("characters cut"));
  EXPECT_THAT(cut, HasSubstr("最后一行")) << "the end of an output is kept";
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  auto session = Ok(views_->SessionForTicket(id));
  ASSERT_TRUE(session.has_value());
  int results = 0;
  for (const SessionEvent& e : Ok(views_->SessionEvents(session->id))) results += e.kind == "tool_result";
  EXPECT_EQ(results, 4);
}

// The model writes tool arguments; wrong ones used to end the daemon (read_file {"path": 5} threw
// json type_error on a worker thread: std::terminate). Each is now a tool error the model reads in
// its next request, and the turn goes on to its report.
TEST_F(ExecWorkerTest, WrongToolArgumentsAreToolErrorsTheModelSeesAndTheTurnGoesOn) {
  const TicketId id = AcceptedTicket("c1");
  FakeChatServer model;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"read_file", R"({"path": 5})"},
      {"read_file", R"({})"},
      {"read_file", R"([1, 2])"},
      {"read_file", R"({"path": "README.md")"},  // not JSON: cut off
      {"write_file", R"({"path": "新.txt", "content": null})"},
      {"edit_file", R"({"path": "README.md", "old_text": {"a": 1}, "new_text": "x"})"},
      {"shell", R"({"command": ["ls", "-l"]})"},
      {"job_output", R"({"job": "1"})"},
      {"job_kill", R"({"job": 99999999999})"},
      {"commit_and_push", R"({"message": 5})"},
      {"open_pull_request", R"({"title": true})"},
      {"human_action", R"({"question": 1.5})"},
      {"handback", R"({"message_id": "c1", "reason": "x", "kind": 7})"},
      {"handback", R"({"reason": "no id"})"},
      {"read_file", R"("just a string")"},
  };
  model.Push(model.ToolCalls(bad));
  model.Push(model.ToolCalls({{"report", R"({"stage":"ready","summary":"Nothing to change after all."})"}}));
  llm::ChatOptions co;
  co.base_url = model.base_url();
  co.api_key = model.api_key();
  auto chat_http = MakeHttpClient("superagent-test");
  llm::OpenAiChatClient chat(co, chat_http.get(), &exec_clock_, [](TimeMs) {});
  exec::BuiltinExecutorOptions bo;
  bo.model = "deepseek-chat";
  auto executor = exec::MakeBuiltinExecutor(bo, engine_.get(), views_.get(), &chat, services_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  EXPECT_TRUE(model.problems().empty()) << model.problems()[0];
  auto requests = model.requests();
  ASSERT_EQ(requests.size(), 2u);
  // The second request answers every call, in order, with why it was refused.
  std::vector<std::string> results;
  for (const json& m : requests[1]["messages"])
    if (m["role"] == "tool") results.push_back(m["content"]);
  ASSERT_EQ(results.size(), bad.size());
  const std::vector<std::string> expected = {
      "error: read_file: field \"path\": expected string, got integer",
      "error: read_file: field \"path\": missing",
      "error: read_file: expected a JSON object, got array",
      "error: read_file: not valid JSON",
      "error: write_file: field \"content\": expected string, got null",
      "error: edit_file: field \"old_text\": expected string, got object",
      "error: shell: field \"command\": expected string, got array",
      "error: job_output: field \"job\": expected integer, got string",
      "error: there is no job 99999999999",
      "error: commit_and_push: field \"message\": expected string, got integer",
      "error: open_pull_request: field \"title\": expected string, got boolean",
      "error: human_action: field \"question\": expected string, got number",
      "error: handback: field \"kind\": expected string, got integer",
      "error: handback: field \"message_id\": missing",
      "error: read_file: expected a JSON object, got string",
  };
  EXPECT_EQ(results, expected);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "work" / "tickets" / "新.txt"));
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);  // the turn went on to its report
}

// A repository whose AGENTS.md is a symbolic link to a file outside the worktree (here a
// "secret" beside the data; in an attack ~/.ssh/id_rsa or the config): the file never reaches the
// model; the prompt says why AGENTS.md was not read.
TEST_F(ExecWorkerTest, AnAgentsMdLinkedOutOfTheWorktreeIsNotReadIntoThePrompt) {
  const std::filesystem::path secret = dir_ / "outside-secret.txt";
  std::ofstream(secret) << "TOP-SECRET-OUTSIDE-THE-WORKTREE\n";
  const std::string clone = (dir_ / "evil-clone").string();
  Sh("git clone -q " + origin_.string() + " " + clone + " && cd " + clone + " && rm AGENTS.md && ln -s " +
     secret.string() + " AGENTS.md && git add -A && git -c user.name=t -c user.email=t@t commit -q -m link"
     " && git push -q origin main");
  const TicketId id = AcceptedTicket("c1");
  FakeChatServer model;
  model.Push(model.ToolCalls({{"read_file", R"({"path":"AGENTS.md"})"}}));
  model.Push(model.ToolCalls({{"report", R"({"stage":"ready","summary":"Nothing to do."})"}}));
  llm::ChatOptions co;
  co.base_url = model.base_url();
  co.api_key = model.api_key();
  auto chat_http = MakeHttpClient("superagent-test");
  llm::OpenAiChatClient chat(co, chat_http.get(), &exec_clock_, [](TimeMs) {});
  exec::BuiltinExecutorOptions bo;
  bo.model = "deepseek-chat";
  auto executor = exec::MakeBuiltinExecutor(bo, engine_.get(), views_.get(), &chat, services_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  auto requests = model.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(json(requests).dump().find("TOP-SECRET"), std::string::npos) << "the outside file reached the model";
  const std::string first = requests[0]["messages"][1]["content"];
  EXPECT_THAT(first, HasSubstr("## AGENTS.md of the repository\n(AGENTS.md was not read: AGENTS.md leads outside"));
  EXPECT_THAT(requests[1]["messages"].back()["content"].get<std::string>(), HasSubstr("error: AGENTS.md leads outside"));
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
}

TEST_F(ExecWorkerTest, TheBuiltinWorkerEditsTestsCommitsAndReportsReadyDrivenByTheModel) {
  const TicketId id = AcceptedTicket("c1");
  FakeChatServer model;
  model.Push(model.ToolCalls({{"read_file", R"({"path":"README.md"})"}}));
  model.Push(model.ToolCalls({{"edit_file", R"({"path":"README.md","old_text":"teh typo","new_text":"the typo"})"}}));
  model.Push(model.ToolCalls({{"shell", R"({"command":"./test.sh && echo tests passed"})"}}));
  model.Push(model.ToolCalls({{"write_file", R"({"path":"../escape.txt","content":"no"})"}}));
  model.Push(model.ToolCalls({{"commit_and_push", R"({"message":"Fix the typo in README"})"}}));
  model.Push(model.ToolCalls({{"report", R"({"stage":"ready","summary":"Fixed the typo in README; tests pass.",)"
                                         R"("pr":{"title":"Fix the typo in README","body":"Fixes #1."}})"}}));
  llm::ChatOptions co;
  co.base_url = model.base_url();
  co.api_key = model.api_key();
  auto chat_http = MakeHttpClient("superagent-test");
  llm::OpenAiChatClient chat(co, chat_http.get(), &exec_clock_, [](TimeMs) {});
  exec::BuiltinExecutorOptions bo;
  bo.model = "deepseek-chat";
  auto executor = exec::MakeBuiltinExecutor(bo, engine_.get(), views_.get(), &chat, services_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  EXPECT_TRUE(model.problems().empty()) << model.problems()[0];
  EXPECT_EQ(model.pending_replies(), 0u);
  auto requests = model.requests();
  ASSERT_EQ(requests.size(), 6u);
  // The first input: the original request, the Mandate's rules, AGENTS.md, the communication rules.
  const std::string first = requests[0]["messages"][1]["content"];
  EXPECT_THAT(first, HasSubstr("@agent please fix the typo in README"));
  EXPECT_THAT(first, HasSubstr("- scope: Fix the typo in README\n- strength: explicit"));
  EXPECT_THAT(first, HasSubstr("Run ./test.sh"));
  EXPECT_THAT(first, HasSubstr("Communication rules"));
  // Tool results the model saw.
  auto tool_text = [&](std::size_t request) { return requests[request]["messages"].back()["content"].get<std::string>(); };
  EXPECT_THAT(tool_text(1), HasSubstr("There is teh typo."));
  EXPECT_EQ(tool_text(2), "edited README.md");
  EXPECT_THAT(tool_text(3), HasSubstr("exit code 0\nstdout:\ntests passed"));
  EXPECT_THAT(tool_text(4), HasSubstr("../escape.txt leads outside the directory"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "work" / "tickets" / "escape.txt"));
  EXPECT_THAT(tool_text(5), HasSubstr("pushed superagent/ticket-" + std::to_string(id) + " (1 commits"));

  EXPECT_EQ(OnOrigin("superagent/ticket-" + std::to_string(id), "README.md"), "Hello\nThere is the typo.\n");
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
  Deliver();
  ASSERT_EQ(github_->pulls.size(), 1u);
  EXPECT_EQ(github_->pulls.begin()->second["head"]["ref"], "superagent/ticket-" + std::to_string(id));
  auto bodies = CommentBodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_THAT(bodies[0], HasSubstr("I'll fix the typo in README."));
  EXPECT_THAT(bodies[1], HasSubstr("Fixed the typo in README; tests pass."));

  // Transcript and token usage.
  auto session = Ok(views_->SessionForTicket(id));
  ASSERT_TRUE(session.has_value());
  auto events = Ok(views_->SessionEvents(session->id));
  int inputs = 0, assistant = 0, results = 0;
  for (const auto& e : events) {
    inputs += e.kind == "input";
    assistant += e.kind == "assistant";
    results += e.kind == "tool_result";
  }
  EXPECT_EQ(inputs, 1);
  EXPECT_EQ(assistant, 6);
  EXPECT_EQ(results, 6);
  auto usage = Ok(views_->TokenUsage(id));
  EXPECT_EQ(usage["calls"], 6);
  EXPECT_EQ(usage["prompt_tokens"], 6 * 1200);
  EXPECT_EQ(usage["completion_tokens"], 6 * 80);
}

// A Stop must not wait for a slow model: the call in flight is abandoned, the turn returns and
// the slot is free while the model has still not answered.
TEST_F(ExecWorkerTest, StoppingATicketAbandonsTheModelCallInFlight) {
  const TicketId id = AcceptedTicket("c1");
  FakeChatServer model;
  ChatReply held = model.ToolCalls({{"read_file", R"({"path":"README.md"})"}});
  held.hold = true;
  model.Push(held);
  llm::ChatOptions co;
  co.base_url = model.base_url();
  co.api_key = model.api_key();
  co.timeout_ms = 60'000;
  auto chat_http = MakeHttpClient("superagent-test");
  llm::OpenAiChatClient chat(co, chat_http.get(), &exec_clock_, [](TimeMs) {});
  auto executor = exec::MakeBuiltinExecutor({"deepseek-chat"}, engine_.get(), views_.get(), &chat, services_.get());
  auto scheduler = MakeScheduler(executor.get());
  ASSERT_EQ(*scheduler->Tick(), 1);
  ASSERT_TRUE(model.WaitUntilHolding());
  ASSERT_TRUE(engine_->StopTicket(id, "alice").ok());
  ASSERT_TRUE(scheduler->Tick().ok());  // sees the ended Ticket and cancels its turn
  scheduler->WaitForTurns();
  EXPECT_TRUE(model.Holding()) << "the turn ended only because the model answered";
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_EQ(scheduler->Slots().worker_used, 0);
  // Nothing was made of the abandoned call: no assistant message, no tool run.
  auto session = Ok(views_->SessionForTicket(id));
  ASSERT_TRUE(session.has_value());
  for (const SessionEvent& e : Ok(views_->SessionEvents(session->id))) EXPECT_NE(e.kind, "assistant");
  model.Release();
}

TEST_F(ExecWorkerTest, AFollowUpResumesTheBuiltinSessionFromItsTranscript) {
  const TicketId id = AcceptedTicket("c1");
  FakeChatServer model;
  model.Push(model.Text("Looking."));  // the first turn ends without a report: blocked, and said (issue 34)
  model.Push(model.ToolCalls({{"report", R"({"stage":"blocked","summary":"Which file do you mean?"})"}}));
  llm::ChatOptions co;
  co.base_url = model.base_url();
  co.api_key = model.api_key();
  auto chat_http = MakeHttpClient("superagent-test");
  llm::OpenAiChatClient chat(co, chat_http.get(), &exec_clock_, [](TimeMs) {});
  auto executor = exec::MakeBuiltinExecutor({"deepseek-chat"}, engine_.get(), views_.get(), &chat, services_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  bool told = false;
  for (const Receipt& r : Ok(views_->Receipts(id))) told |= r.body.find("ended without a result") != std::string::npos;
  EXPECT_TRUE(told) << "the requester hears that the turn gave no result";

  Receive(Comment("c2", "alice", false, "also the one in docs/"));
  RunTurns(*scheduler);
  auto requests = model.requests();
  ASSERT_EQ(requests.size(), 2u);
  const json& msgs = requests[1]["messages"];
  ASSERT_EQ(msgs.size(), 4u);  // system, first input, "Looking.", the follow-up
  EXPECT_EQ(msgs[2]["content"], "Looking.");
  EXPECT_THAT(msgs[3]["content"].get<std::string>(), HasSubstr("also the one in docs/"));
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  EXPECT_TRUE(model.problems().empty());
}

// SPEC §6: a running session takes the next input between steps. A person's follow-up that
// arrives mid-turn reaches the model at its next step, not after the turn, and starts no
// second turn.
TEST_F(ExecWorkerTest, AFollowUpDuringATurnReachesTheSessionAtItsNextStep) {
  const TicketId id = AcceptedTicket("c1");
  FakeChatServer model;
  model.Push(model.ToolCalls({{"read_file", R"({"path":"README.md"})"}}));
  model.Push(model.ToolCalls({{"report", R"({"stage":"ready","summary":"Fixed both typos."})"}}));
  std::atomic<int> seen{0};
  model.OnRequest([&](const json&) {
    if (seen++ == 0) Receive(Comment("c2", "alice", false, "also the one in docs/"));
  });
  llm::ChatOptions co;
  co.base_url = model.base_url();
  co.api_key = model.api_key();
  auto chat_http = MakeHttpClient("superagent-test");
  llm::OpenAiChatClient chat(co, chat_http.get(), &exec_clock_, [](TimeMs) {});
  auto executor = exec::MakeBuiltinExecutor({"deepseek-chat"}, engine_.get(), views_.get(), &chat, services_.get());
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  auto requests = model.requests();
  ASSERT_EQ(requests.size(), 2u);
  const json& msgs = requests[1]["messages"];
  ASSERT_EQ(msgs.size(), 5u);  // system, first input, read_file call, its result, the follow-up
  EXPECT_EQ(msgs[3]["role"], "tool");
  EXPECT_EQ(msgs[4]["role"], "user");
  EXPECT_THAT(msgs[4]["content"].get<std::string>(), HasSubstr("also the one in docs/"));
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
  ASSERT_TRUE(scheduler->Tick().ok());
  EXPECT_EQ(Ok(views_->Assignments(id)).size(), 1u) << "the follow-up was answered in the turn it arrived in";
  EXPECT_TRUE(Ok(views_->AssignmentsInState("pending")).empty());
  EXPECT_TRUE(model.problems().empty());
}

// The builtin worker on a scripted model through the real scheduler and a loopback GitHub.
class ExecWorkerFormTest : public ExecWorkerTest {
 protected:
  void SetUp() override {
    ExecWorkerTest::SetUp();
    llm::ChatOptions co;
    co.base_url = model_.base_url();
    co.api_key = model_.api_key();
    chat_http_ = MakeHttpClient("superagent-test");
    chat_ = std::make_unique<llm::OpenAiChatClient>(co, chat_http_.get(), &exec_clock_, [](TimeMs) {});
  }
  // The services with `o` (team skills, UI paths), and a builtin executor on them.
  std::unique_ptr<exec::Executor> Builtin(exec::WorkerServicesOptions o = {}) {
    services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get(), std::move(o));
    exec::BuiltinExecutorOptions bo;
    bo.model = "deepseek-chat";
    return exec::MakeBuiltinExecutor(bo, engine_.get(), views_.get(), chat_.get(), services_.get());
  }
  // The tool results the model was sent in request `i`, in order.
  std::vector<std::string> ToolResults(std::size_t i) {
    std::vector<std::string> out;
    auto requests = model_.requests();
    if (i >= requests.size()) return out;
    for (const json& m : requests[i]["messages"])
      if (m["role"] == "tool") out.push_back(m["content"]);
    return out;
  }

  FakeChatServer model_;
  std::unique_ptr<HttpClient> chat_http_;
  std::unique_ptr<llm::OpenAiChatClient> chat_;
};

// Issue 22 item 1: the worker's human_action carries options; the Ticket stores them as its form,
// the person reads them numbered on GitHub, and their "2" reaches the worker as that option.
// Every bad form is a tool error the model reads, and the question asked is the good one.
TEST_F(ExecWorkerFormTest, AHumanActionWithOptionsIsStoredPostedNumberedAndItsAnswerReadsAsTheChoice) {
  const TicketId id = AcceptedTicket("c1");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"human_action", R"({"question": "Which?", "options": "British or American"})"},
      {"human_action", R"({"question": "Which?", "options": ["British", 2]})"},
      {"human_action", R"({"question": "Which?", "options": ["1","2","3","4","5","6","7","8","9","10"]})"},
      {"human_action", R"({"question": "Which?", "options": ["British", "  "]})"},
      {"human_action", R"({"question": "Which?", "options": ["British", "british"]})"},
      {"human_action", R"({"question": "Which?", "options": ["A", "B"], "free_text": "no"})"},
      {"human_action", R"({"question": "Which?", "options": ["A", "B"], "ask": "mallory"})"},
      {"human_action", R"({"question": "", "options": ["A", "B"]})"},
  };
  model_.Push(model_.ToolCalls(bad));
  model_.Push(model_.ToolCalls({{"human_action", R"({"question": "Which spelling should the README use?",)"
                                                 R"( "options": ["British — colour 🇬🇧", "American（美式）"], "free_text": false})"}}));
  model_.Push(model_.ToolCalls({{"report", R"({"stage":"ready","summary":"Used American spelling."})"}}));
  auto executor = Builtin();
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  EXPECT_TRUE(model_.problems().empty()) << model_.problems()[0];
  const std::vector<std::string> expected = {
      "error: human_action.options: must be an array of strings",
      "error: human_action.options[1]: must be a string",
      "error: human_action.options: at most 9 options",
      "error: human_action.options[1]: is empty",
      "error: human_action.options[1]: repeats an option",
      "error: human_action.free_text: must be true or false",
      "error: human_action.ask: a question goes to the person who asked (alice); leave \"ask\" out, or name another "
      "person in the question's text",
      "error: question must be a non-empty string",
  };
  EXPECT_EQ(ToolResults(1), expected);
  auto t = views_->GetTicket(id);
  ASSERT_EQ(t->stage, Stage::kWaitingForPerson);
  EXPECT_EQ(t->waiting->actor, "alice");
  EXPECT_EQ(t->waiting->question, "Which spelling should the README use?");
  EXPECT_EQ(t->waiting->form, json({{"options", {"British — colour 🇬🇧", "American（美式）"}}, {"free_text", false}}));
  Deliver();
  auto bodies = CommentBodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_THAT(bodies[1], HasSubstr("Which spelling should the README use?\n\n1. British — colour 🇬🇧\n2. American（美式）"
                                   "\n\nReply with the number of your choice."));

  Receive(Comment("c2", "alice", false, "2"));
  RunTurns(*scheduler);
  auto requests = model_.requests();
  ASSERT_EQ(requests.size(), 3u);
  const std::string answer = requests[2]["messages"].back()["content"];
  EXPECT_THAT(answer, HasSubstr("## Answer to your question (from alice via github)\n"
                                "Your question: Which spelling should the README use?\n"
                                "They chose option 2: American（美式）\n"));
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
}

// SPEC §6 in code: a ready report of a branch that changes a UI path needs a Before and an After
// screenshot, labelled with versions, real images in the Ticket's directory. Each refusal is a
// tool error naming what is missing; the accepted screenshots are committed (even though
// .gitignore names them) and shown in the PR body.
TEST_F(ExecWorkerFormTest, AUiChangeIsReadyOnlyWithRealBeforeAndAfterScreenshotsShownInThePullRequest) {
  const TicketId id = AcceptedTicket("c1");
  const std::string branch = "superagent/ticket-" + std::to_string(id);
  const std::string pr = R"("pr": {"title": "Fix the button colour", "body": "Fixes #1."})";
  auto report = [&](const std::string& shots) {
    return R"({"stage": "ready", "summary": "Fixed the button colour.", )" + pr + R"(, "screenshots": )" + shots + "}";
  };
  const std::string good = R"J([{"label": "Before (main abc1234)", "path": "shots/before.png"},)J"
                           R"J( {"label": "After (superagent/ticket-1 def5678)", "path": "shots/after.jpg"}])J";
  model_.Push(model_.ToolCalls(
      {{"write_file", R"({"path": "web/style.css", "content": "button { color: #333; }\n"})"},
       {"shell", R"({"command": "mkdir -p shots && echo shots/ > .gitignore && echo 'not an image' > shots/fake.png"})"},
       {"report", R"({"stage": "ready", "summary": "Fixed the button colour.", )" + pr + "}"},
       {"report", report(R"J([{"label": "Before (main abc1234)", "path": "shots/fake.png"}, {"label": "After (ticket def5678)", "path": "shots/fake.png"}])J")},
       {"report", report(R"([{"label": "Before", "path": "shots/fake.png"}])")},
       {"report", report(R"J([{"label": "After (ticket def5678)", "path": "../../etc/passwd"}])J")},
       {"report", report(R"J([{"label": "Before (main abc1234)", "path": "shots/missing.png"}])J")}}));
  model_.Push(model_.ToolCalls(
      {{"shell", json{{"command", "printf '\\211PNG\\r\\n\\032\\n-before' > shots/before.png && "
                                  "printf '\\377\\330\\377\\340-after' > shots/after.jpg"}}.dump()},
       {"report", report(R"J([{"label": "Before (main abc1234)", "path": "shots/before.png"}])J")},
       {"report", report(good)}}));
  exec::WorkerServicesOptions o;  // the default UI paths: web/**, *.css, ...
  auto executor = Builtin(o);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  EXPECT_TRUE(model_.problems().empty()) << model_.problems()[0];
  auto first = ToolResults(1);
  ASSERT_EQ(first.size(), 7u);
  EXPECT_EQ(model_.requests().size(), 2u) << "the second batch ended the turn";
  EXPECT_THAT(first[2], HasSubstr("error: report not accepted: the branch changes the UI (web/style.css), so a ready "
                                  "report needs \"screenshots\" with a Before and an After"));
  EXPECT_EQ(first[3], "error: report not accepted: screenshots[0].path: shots/fake.png is not a PNG or JPEG image");
  EXPECT_THAT(first[4], HasSubstr("error: report not accepted: screenshots[0].label \"Before\" names no version"));
  EXPECT_THAT(first[5], HasSubstr("error: report not accepted: screenshots[0].path: ../../etc/passwd leads outside"));
  EXPECT_THAT(first[6], HasSubstr("error: report not accepted: screenshots[0].path: shots/missing.png"));
  std::vector<std::string> second;  // the last batch's results are in the transcript
  for (const SessionEvent& e : Ok(views_->SessionEvents(Ok(views_->SessionForTicket(id))->id)))
    if (e.kind == "tool_result") second.push_back(e.body.value("content", ""));
  ASSERT_EQ(second.size(), 10u);
  EXPECT_THAT(second[8], HasSubstr("so a ready report needs \"screenshots\" with an After"));
  EXPECT_EQ(second[9], "reported ready");

  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
  EXPECT_EQ(OnOrigin(branch, "shots/before.png"), "\x89PNG\r\n\x1a\n-before");
  EXPECT_EQ(OnOrigin(branch, "web/style.css"), "button { color: #333; }\n");
  Deliver();
  ASSERT_EQ(github_->pulls.size(), 1u);
  const std::string body = github_->pulls.begin()->second["body"];
  EXPECT_THAT(body, HasSubstr("Fixes #1.\n\n## Screenshots\n"));
  EXPECT_THAT(body, HasSubstr("![Before (main abc1234)](../blob/superagent/ticket-" + std::to_string(id) +
                              "/shots/before.png?raw=true)"));
  EXPECT_THAT(body, HasSubstr("![After (superagent/ticket-1 def5678)](../blob/superagent/ticket-" + std::to_string(id) +
                              "/shots/after.jpg?raw=true)"));
}

// A change that touches no UI path is ready without screenshots.
TEST_F(ExecWorkerFormTest, AChangeOutsideTheUiPathsIsReadyWithoutScreenshots) {
  const TicketId id = AcceptedTicket("c1");
  model_.Push(model_.ToolCalls(
      {{"edit_file", R"({"path":"README.md","old_text":"teh typo","new_text":"the typo"})"},
       {"report", R"({"stage":"ready","summary":"Fixed.","pr":{"title":"Fix the typo","body":"Fixes #1."}})"}}));
  auto executor = Builtin();
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_EQ(model_.requests().size(), 1u) << "the report was accepted at once";
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
}

// Issue 22 item 7: every worker gets the team skills' index in its system message, read each turn,
// and reads a skill's text with the `skill` tool — by a name from the index only. A skill that
// links out of the team directory, one too long, and one that is not UTF-8 never reach the model.
TEST_F(ExecWorkerFormTest, TeamSkillsAreListedEveryTurnAndReadableByNameOnly) {
  namespace fs = std::filesystem;
  const fs::path team = dir_ / "team", outside = dir_ / "outside";
  fs::create_directories(team / "skills" / "screenshots");
  fs::create_directories(outside);
  std::ofstream(team / "skills" / "release-notes.md") << "# Write release notes from merged PRs\nList each PR once.\n";
  std::ofstream(team / "skills" / "screenshots" / "SKILL.md") << "# 截图 before/after 📸\nSame viewport, same theme.\n";
  std::ofstream(outside / "evil.md") << "# evil\nOUTSIDE-SKILL-SECRET\n";
  fs::create_symlink(outside / "evil.md", team / "skills" / "evil.md");
  std::ofstream(team / "skills" / "huge.md") << "# huge\nHUGE-SKILL-" << std::string(20'000, 'z') << "\n";
  std::ofstream(team / "skills" / "binary.md") << "# binary\nBINARY-SKILL \xff\xfe\x00\x01\n";
  const TicketId id = AcceptedTicket("c1");
  model_.Push(model_.ToolCalls({{"skill", R"({"name": "screenshots"})"},
                                {"skill", R"({"name": "../../etc/passwd"})"},
                                {"skill", R"({"name": "a/b"})"},
                                {"skill", R"({"name": "evil"})"},
                                {"skill", R"({"name": "huge"})"},
                                {"skill", R"({"name": 5})"}}));
  model_.Push(model_.Text("Read them."));
  model_.Push(model_.ToolCalls({{"report", R"({"stage":"blocked","summary":"Nothing to do."})"}}));
  exec::WorkerServicesOptions o;
  o.team_dir = team.string();
  auto executor = Builtin(o);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  auto requests = model_.requests();
  ASSERT_EQ(requests.size(), 2u);
  const std::string system = requests[0]["messages"][0]["content"];
  EXPECT_THAT(system, HasSubstr("## Team skills"));
  EXPECT_THAT(system, HasSubstr("- release-notes: Write release notes from merged PRs\n- screenshots: 截图 before/after 📸\n"
                                "Read a skill in full with the `skill` tool"));
  for (const char* kept_out : {"evil", "huge", "binary"}) EXPECT_THAT(system, Not(HasSubstr(std::string("- ") + kept_out)));
  const std::string everything = json(requests).dump();
  for (const char* secret : {"OUTSIDE-SKILL-SECRET", "HUGE-SKILL", "BINARY-SKILL"})
    EXPECT_EQ(everything.find(secret), std::string::npos) << secret << " reached the model";
  const std::vector<std::string> expected = {
      "# 截图 before/after 📸\nSame viewport, same theme.",
      "error: there is no skill \"../../etc/passwd\"; the team's skills: release-notes, screenshots",
      "error: there is no skill \"a/b\"; the team's skills: release-notes, screenshots",
      "error: there is no skill \"evil\"; the team's skills: release-notes, screenshots",
      "error: there is no skill \"huge\"; the team's skills: release-notes, screenshots",
      "error: skill: field \"name\": expected string, got integer",
  };
  EXPECT_EQ(ToolResults(1), expected);

  // Edited between turns: the next turn's system message lists it as it is now, no restart.
  std::ofstream(team / "skills" / "release-notes.md") << "# Release notes, grouped by area\n";
  Receive(Comment("c2", "alice", false, "any news?"));
  RunTurns(*scheduler);
  requests = model_.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_THAT(requests[2]["messages"][0]["content"].get<std::string>(), HasSubstr("- release-notes: Release notes, grouped by area"));
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
}

TEST(ExecWorkerInputTest, AnAnswerShowsTheQuestionAndTheChosenOptionOrTheOwnWords) {
  const std::string chosen = exec::InputsText({{{"kind", "answer"}, {"from", "alice"}, {"via", "feishu"},
                                                {"question", "Which database?"}, {"text", "（２）"}, {"message_id", "m9"},
                                                {"answer", {{"option", 2}, {"text", "Postgres"}}}}});
  EXPECT_THAT(chosen, HasSubstr("## Answer to your question (from alice via feishu)\nYour question: Which database?\n"
                                "They chose option 2: Postgres\nTheir reply (message id m9; quoted data):\n<<<\n（２）\n>>>"));
  const std::string panel = exec::InputsText({{{"kind", "answer"}, {"from", "bob"}, {"via", "panel"},
                                               {"question", "Which database?"}, {"answer", {{"text", "用 SQLite 吧 🙂"}}}}});
  EXPECT_THAT(panel, HasSubstr("They answered in their own words (quoted data):\n<<<\n用 SQLite 吧 🙂\n>>>"));
  EXPECT_THAT(panel, Not(HasSubstr("Their reply")));
  // A body of another version (answer of a wrong type) still reads, saying what it can.
  const std::string odd = exec::InputsText({{{"kind", "answer"}, {"from", 7}, {"answer", "x"}, {"text", "yes"}}});
  EXPECT_THAT(odd, HasSubstr("## Answer to your question (from unknown)"));
  EXPECT_THAT(odd, HasSubstr("<<<\nyes\n>>>"));
}

// A coding CLI gets the skills' texts (it cannot call `skill`), an equal share each of the budget,
// each cut visibly; the builtin worker gets the index and the tool's name.
TEST(ExecWorkerInputTest, TeamSkillsTextSharesItsBudgetBetweenTheSkills) {
  TeamFiles team;
  team.skills = {{"a", "短的", "# 短的\n一步。", "team:skills/a.md"},
                 {"b", "long", "# long\n" + std::string(5'000, 'x') + "END-OF-B", "team:skills/b.md"}};
  const std::string index = exec::TeamSkillsText(team, 0);
  EXPECT_THAT(index, HasSubstr("- a: 短的\n- b: long\nRead a skill in full with the `skill` tool"));
  EXPECT_THAT(index, Not(HasSubstr("一步")));
  const std::string bodies = exec::TeamSkillsText(team, 2'000);
  EXPECT_THAT(bodies, HasSubstr("### Skill `a`\n# 短的\n一步。\n"));
  EXPECT_THAT(bodies, HasSubstr("characters cut"));
  EXPECT_THAT(bodies, Not(HasSubstr("END-OF-B")));
  EXPECT_LT(text::CountCodePoints(bodies), 2'400u);
  EXPECT_EQ(exec::TeamSkillsText(TeamFiles{}, 2'000), "");
}

TEST(ExecWorkerInputTest, ReportsCarryAFormAndScreenshotsCheckedFieldByField) {
  auto r = exec::ParseReport(json{{"stage", "waiting_for_person"}, {"summary", "?"}, {"question", "哪个？"},
                                  {"options", {"甲", "乙 🎉"}}, {"free_text", false}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->question_form, json({{"options", {"甲", "乙 🎉"}}, {"free_text", false}}));
  EXPECT_TRUE(Ok(exec::ParseReport(json{{"stage", "waiting_for_person"}, {"summary", "?"}, {"question", "Why?"}}))
                  .question_form.is_null());
  EXPECT_EQ(exec::ParseReport(json{{"stage", "ready"}, {"summary", "ok"}, {"options", {"a"}}}).status().message(),
            "report.options and report.free_text belong to a question (stage waiting_for_person)");
  EXPECT_EQ(exec::ParseReport(json{{"stage", "ready"}, {"summary", "ok"}, {"screenshots", {{{"label", "Before"}}}}})
                .status()
                .message(),
            "report.screenshots[0].path must be a non-empty string");
  EXPECT_EQ(exec::ParseReport(json{{"stage", "ready"}, {"summary", "ok"}, {"screenshots", "a.png"}}).status().message(),
            "report.screenshots must be an array of {\"label\", \"path\"}");
  EXPECT_TRUE(exec::MatchesUiPath(exec::WorkerServicesOptions::DefaultUiPaths(), "web/src/app.js"));
  EXPECT_TRUE(exec::MatchesUiPath(exec::WorkerServicesOptions::DefaultUiPaths(), "docs/theme/site.css"));
  EXPECT_FALSE(exec::MatchesUiPath(exec::WorkerServicesOptions::DefaultUiPaths(), "src/web.cpp"));
  EXPECT_FALSE(exec::MatchesUiPath(exec::WorkerServicesOptions::DefaultUiPaths(), "README.md"));
}

TEST(ExecWorkerInputTest, TheFirstInputCarriesTheRulesInstructionsAndLaterInputsTheirKind) {
  exec::WorkerTask t;
  t.ticket = 4;
  t.scope = "Fix spacing";
  t.request_text = "spacing is off";
  t.mandate.strength = Strength::kInferred;
  t.mandate.scope = "Fix spacing";
  t.rules = {{"visual", "Restore spacing to the existing standard."}};
  t.inputs = {{{"kind", "trigger"}, {"request", true}, {"text", "spacing is off"}},
              {{"kind", "policy_changed"}, {"policy_version", 5}, {"reasons", {"rule visual disabled"}}}};
  const std::string first = exec::FirstInputText(t);
  EXPECT_THAT(first, HasSubstr("<<<\nspacing is off\n>>>"));
  EXPECT_THAT(first, HasSubstr("- strength: inferred"));
  EXPECT_THAT(first, HasSubstr("- rule `visual`: Restore spacing to the existing standard."));
  EXPECT_THAT(first, HasSubstr("## policy-changed\nThe team's policy changed (version 5): [\"rule visual disabled\"]"));
  EXPECT_EQ(first.find("New message (trigger"), std::string::npos);  // the request is not repeated
}

TEST(ExecWorkerInputTest, ReportsAreValidatedFieldByField) {
  EXPECT_TRUE(exec::ParseReport(json{{"stage", "ready"}, {"summary", "ok"}, {"question", nullptr}, {"pr", nullptr}}).ok());
  EXPECT_THAT(exec::ParseReport(json{{"stage", "ready"}}).status().message(), HasSubstr("report.summary"));
  EXPECT_THAT(exec::ParseReport(json{{"stage", "waiting_for_person"}, {"summary", "?"}}).status().message(),
              HasSubstr("report.question is required"));
  EXPECT_THAT(exec::ParseReport(json{{"stage", "ready"}, {"summary", "ok"}, {"pr", {{"body", "x"}}}}).status().message(),
              HasSubstr("report.pr must be null or"));
  EXPECT_EQ(exec::ParseReport(json::array()).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace superagent::testing
