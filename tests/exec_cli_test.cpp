// The coding-CLI executors (issue 21) with the REAL CLIs from tests/node_modules (Claude Code and
// Qwen Code here), run headless in a Ticket's git worktree — in the bubblewrap sandbox where the
// host can run it — against a loopback model API that speaks their wire format. Only the model is
// replaced, at the network boundary. The CLIs run in real time, so these tests use the real clock;
// each turn takes a few seconds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "exec/cli_adapter.h"
#include "exec_fixture.h"
#include "superagent/views.h"
#include "result_ok.h"
#include "fake_coding_model.h"
#include "fake_github_server.h"
#include "superagent/sandbox.h"
#include "superagent/worker.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace fs = std::filesystem;

const char* kKey = "sk-cli-test-0123456789";

struct CliCase {
  std::string cli;      // executor name
  std::string program;  // in tests/node_modules/.bin
  FakeCodingModel::Wire wire;
  std::string model;
};

// gtest names the case by its CLI instead of dumping its bytes.
void PrintTo(const CliCase& c, std::ostream* os) { *os << c.cli; }

class ExecCliTest : public ExecTest, public ::testing::WithParamInterface<CliCase> {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    binary_ = NodeModulesDir() + "/.bin/" + GetParam().program;
    ASSERT_TRUE(fs::exists(binary_)) << binary_ << " is missing: run `cmake/dev.sh test` (npm ci in tests/)";
    // The daemon's runner as it runs in production: workers sandboxed where the host allows.
    exec::PosixRunnerOptions ro;
    ro.sandbox.state_dir = (dir_ / "work" / "sandbox").string();
    ro.sandbox.hidden = {(dir_ / "db").string()};
    sandboxed_ = exec::ProbeSandbox(ro.sandbox).supported;
    ro.sandbox.enabled = sandboxed_;
    UseRunner(ro);
  }

  exec::CliExecutorOptions Options(const FakeCodingModel& model) {
    exec::CliExecutorOptions o;
    o.cli = GetParam().cli;
    o.binary = binary_;
    o.model = GetParam().model;
    o.api_key = kKey;
    o.base_url = model.base_url();
    o.readable = {NodeModulesDir()};
    o.turn_ms = 120'000;
    return o;
  }

  // The executor on the real clock: a real CLI takes real seconds.
  std::unique_ptr<exec::Executor> Executor(exec::CliExecutorOptions o) {
    auto e = exec::MakeCliExecutor(std::move(o), engine_.get(), views_.get(), services_.get(), SystemClock(), exec::RealSleeper());
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(*e) : nullptr;
  }

  void RunTurns(exec::Scheduler& s) {
    auto started = s.Tick();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    s.WaitForTurns();
    ASSERT_TRUE(s.Tick().ok());
  }

  std::vector<SessionEvent> Transcript(TicketId id) {
    auto session = Ok(views_->SessionForTicket(id));
    if (!session) return {};
    return Ok(views_->SessionEvents(session->id));
  }

  // The last message the Ticket enqueued (its result, or why it is blocked).
  std::string ResultText(TicketId id) {
    auto receipts = Ok(views_->Receipts(id));
    return receipts.empty() ? "" : receipts.back().body;
  }

  // Whether a process whose command line holds `needle` runs (pgrep -f from a shell would match
  // that shell, whose own command line holds the pattern).
  static bool Running(const std::string& needle) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmdline = ReadText(entry.path() / "cmdline");
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      if (cmdline.find(needle) != std::string::npos) return true;
    }
    return false;
  }

  static std::string Kinds(const std::vector<SessionEvent>& events) {
    std::string s;
    for (const SessionEvent& e : events) s += e.kind + " ";
    return s;
  }

  std::string binary_;
  bool sandboxed_ = false;
};

TEST_P(ExecCliTest, TheRealCliEditsTheWorktreeAndTheDaemonPushesTheBranch) {
  FakeCodingModel model(GetParam().wire, kKey, GetParam().model, {.old_text = "teh typo", .new_text = "the typo"});
  const TicketId id = AcceptedTicket("c1");
  auto executor = Executor(Options(model));
  ASSERT_NE(executor, nullptr);
  EXPECT_EQ(executor->name(), GetParam().cli);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  EXPECT_THAT(model.problems(), ::testing::IsEmpty());
  EXPECT_EQ(model.tool_calls_made(), 3) << "read, edit, shell";
  auto ticket = views_->GetTicket(id);
  ASSERT_TRUE(ticket.ok());
  EXPECT_EQ(ticket->stage, Stage::kReady) << ResultText(id);
  // The CLI's own edit tool changed the worktree; the daemon committed and pushed it.
  EXPECT_EQ(OnOrigin("superagent/ticket-" + std::to_string(id), "README.md"), "Hello\nThere is the typo.\n");
  EXPECT_EQ(OnOrigin("main", "README.md"), "Hello\nThere is teh typo.\n");
  EXPECT_EQ(Ok(views_->Assignments(id)).back().executor, GetParam().cli);

  // The transcript shows the CLI's work like the builtin worker's: the prompt, its tool calls and
  // their results, the shell command's output, and the report.
  auto events = Transcript(id);
  const std::string kinds = Kinds(events);
  EXPECT_THAT(kinds, HasSubstr("input"));
  EXPECT_THAT(kinds, HasSubstr("assistant"));
  EXPECT_THAT(kinds, HasSubstr("tool_result"));
  EXPECT_THAT(kinds, HasSubstr("cli_session"));
  EXPECT_THAT(kinds, HasSubstr("report"));
  bool saw_diff = false, saw_call = false;
  for (const SessionEvent& e : events) {
    if (e.kind == "tool_result" && e.body.value("content", "").find("README.md") != std::string::npos) saw_diff = true;
    if (e.kind == "assistant" && e.body.contains("tool_calls")) saw_call = true;
  }
  EXPECT_TRUE(saw_call);
  EXPECT_TRUE(saw_diff) << "git diff --stat names the file";
  // The prompt went in as an argument; the request is fenced as data after the Mandate.
  const std::string prompt = events.front().body.value("content", "");
  ASSERT_THAT(prompt, HasSubstr("## Mandate"));
  ASSERT_THAT(prompt, HasSubstr("## Original request"));  // else find() is npos and any order "holds"
  EXPECT_LT(prompt.find("## Mandate"), prompt.find("## Original request"));
  EXPECT_THAT(prompt, HasSubstr("superagent-report"));
  // Token usage reached token_usage.
  json usage = Ok(views_->TokenUsage(id));
  EXPECT_GT(usage.value("prompt_tokens", 0), 0) << usage.dump();
  EXPECT_GT(usage.value("completion_tokens", 0), 0) << usage.dump();
  // The CLI's state stayed in the private HOME, not in the worktree.
  auto ws = Ok(views_->WorkspaceFor(id));
  ASSERT_TRUE(ws.has_value());
  // (The repository is the worker's: a root daemon's worker uid owns it, hence safe.directory.)
  EXPECT_EQ(Sh("git -c safe.directory='*' -C " + ws->dir + " status --porcelain"), "");
}

TEST_P(ExecCliTest, AFollowUpResumesTheSameCliSession) {
  FakeCodingModel model(GetParam().wire, kKey, GetParam().model, {.old_text = "teh typo", .new_text = "the typo"});
  const TicketId id = AcceptedTicket("c1");
  auto executor = Executor(Options(model));
  ASSERT_NE(executor, nullptr);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  ASSERT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
  std::string first_session;
  for (const SessionEvent& e : Transcript(id))
    if (e.kind == "cli_session") first_session = e.body.value("id", "");
  ASSERT_FALSE(first_session.empty());

  Receive(Comment("c2", "alice", true, "@agent FOLLOW-UP: is anything else needed?", 1));
  RunTurns(*scheduler);

  EXPECT_THAT(model.problems(), ::testing::IsEmpty());
  EXPECT_TRUE(model.saw_resumed_followup()) << "the second turn's request carried the first turn's history";
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);
  // The resumed turn's command line named the first session.
  bool resumed = false;
  for (const SessionEvent& e : Transcript(id))
    if (e.kind == "command" && e.body.value("command", "").find(first_session) != std::string::npos) resumed = true;
  EXPECT_TRUE(resumed);
}

TEST_P(ExecCliTest, ADeadModelEndsTheTurnBlockedWithTheReason) {
  for (int status : {500, 401}) {
    SCOPED_TRACE(status);
    FakeCodingModel model(GetParam().wire, kKey, GetParam().model, {.fail_status = status});
    const TicketId id = AcceptedTicket("dead" + std::to_string(status), status);
    auto o = Options(model);
    o.turn_ms = 20'000;
    auto executor = Executor(o);
    ASSERT_NE(executor, nullptr);
    auto scheduler = MakeScheduler(executor.get());
    const auto start = std::chrono::steady_clock::now();
    RunTurns(*scheduler);
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count();
    auto ticket = views_->GetTicket(id);
    ASSERT_TRUE(ticket.ok());
    EXPECT_EQ(ticket->stage, Stage::kBlocked);
    EXPECT_THAT(ResultText(id), HasSubstr(GetParam().cli));
    // Either the CLI gave up and said why, or (Qwen Code on a 500 keeps retrying) the time limit
    // ended it — never a "ready" made of an error text. Why is the panel card's (issue 34): the
    // discussion hears the daemon's words, not the CLI's output.
    auto views = Views::Open((dir_ / "superagent.db").string());
    ASSERT_TRUE(views.ok());
    const std::string why = Ok((*views)->Detail(id)).row.stage_reason;
    EXPECT_TRUE(why.find(std::to_string(status)) != std::string::npos || why.find("did not finish within") != std::string::npos)
        << why;
    EXPECT_THAT(ResultText(id), HasSubstr("Reply here and I will try again")) << ResultText(id);
    EXPECT_LT(seconds, 40);
    EXPECT_GT(model.calls(), 0);
    RecordProperty("dead_model_seconds_" + std::to_string(status), std::to_string(seconds));
  }
}

TEST_P(ExecCliTest, ACommandOutsideTheAllowListIsRefusedWithoutAPromptAndShown) {
  const TicketId id = AcceptedTicket("c1");
  // The marker goes in the worktree: the one place the sandboxed command could write that this
  // test sees (the sandbox's /tmp is its own, so a marker there proves nothing).
  const fs::path marker = dir_ / "work" / "tickets" / ("ticket-" + std::to_string(id)) / "refused-marker";
  FakeCodingModel model(GetParam().wire, kKey, GetParam().model,
                        {.old_text = "teh typo", .new_text = "the typo", .command = "touch '" + marker.string() + "'"});
  auto o = Options(model);
  o.allowed_commands = {"git diff", "git status"};
  auto executor = Executor(o);
  ASSERT_NE(executor, nullptr);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);

  ASSERT_TRUE(fs::exists(marker.parent_path() / "README.md")) << "no worktree: the check below would prove nothing";
  EXPECT_FALSE(fs::exists(marker)) << "a command outside the allow-list ran";
  // The turn went on after the refusal (no prompt waited for a person) and ended.
  auto ticket = views_->GetTicket(id);
  ASSERT_TRUE(ticket.ok());
  EXPECT_EQ(ticket->stage, Stage::kReady) << ResultText(id);
  EXPECT_THAT(model.problems(), ::testing::IsEmpty());
  // The refusal is in the transcript, in the CLI's words ("Permission to use Bash has been
  // denied …"; "… that permission was declined (non-interactive mode …)").
  std::string results;
  for (const SessionEvent& e : Transcript(id))
    if (e.kind == "tool_result") results += e.body.value("content", "") + "\n";
  EXPECT_THAT(results, HasSubstr(GetParam().cli == "claude-code" ? "has been denied" : "permission was declined")) << results;
}

// A CLI that needs a decision asks one structured question (SPEC §1): the Ticket waits for the
// person who asked, and the question — in Chinese here — is what reaches the discussion.
TEST_P(ExecCliTest, ACliThatNeedsADecisionAsksOneQuestionAndTheTicketWaits) {
  const std::string question = "改 README 还是 docs/README？ Which one should change?";
  FakeCodingModel model(GetParam().wire, kKey, GetParam().model,
                        {.old_text = "teh typo",
                         .new_text = "the typo",
                         .report = json({{"stage", "waiting_for_person"},
                                         {"summary", "Two READMEs could be meant."},
                                         {"question", question}})
                                       .dump()});
  const TicketId id = AcceptedTicket("c1");
  auto executor = Executor(Options(model));
  ASSERT_NE(executor, nullptr);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_THAT(model.problems(), ::testing::IsEmpty());
  auto ticket = views_->GetTicket(id);
  ASSERT_TRUE(ticket.ok());
  EXPECT_EQ(ticket->stage, Stage::kWaitingForPerson) << ResultText(id);
  ASSERT_TRUE(ticket->waiting.has_value());
  EXPECT_THAT(ResultText(id), HasSubstr(question));
}

// Issue 22 items 1 and 7 for a coding CLI (one is enough: the prompt and the report block are the
// executor's, not the adapter's). Its prompt carries the team skills' index and texts — not a skill
// linked out of the team directory — and its report block's options become the Ticket's form.
TEST_P(ExecCliTest, ACliSeesTheTeamSkillsAndItsQuestionsOptionsReachThePerson) {
  if (GetParam().cli != "claude-code") GTEST_SKIP() << "one CLI is enough";
  const fs::path team = dir_ / "team", outside = dir_ / "outside";
  fs::create_directories(team / "skills" / "readme-style");
  fs::create_directories(outside);
  std::ofstream(team / "skills" / "readme-style" / "SKILL.md") << "# README style\nUse American spelling; 保持简短。\n";
  std::ofstream(outside / "evil.md") << "# evil\nOUTSIDE-SKILL-SECRET\n";
  fs::create_symlink(outside / "evil.md", team / "skills" / "evil.md");
  services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get(),
                                                     exec::WorkerServicesOptions{.team_dir = team.string()});
  FakeCodingModel model(GetParam().wire, kKey, GetParam().model,
                        {.old_text = "teh typo",
                         .new_text = "the typo",
                         .report = json({{"stage", "waiting_for_person"},
                                         {"summary", "Two READMEs could be meant."},
                                         {"question", "Which file should change?"},
                                         {"options", {"README.md", "docs/README.md 📄"}},
                                         {"free_text", false}})
                                       .dump()});
  const TicketId id = AcceptedTicket("c1");
  auto executor = Executor(Options(model));
  ASSERT_NE(executor, nullptr);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_THAT(model.problems(), ::testing::IsEmpty());

  const std::string prompt = Transcript(id).front().body.value("content", "");
  EXPECT_THAT(prompt, HasSubstr("## Team skills"));
  EXPECT_THAT(prompt, HasSubstr("- readme-style: README style\n"));
  EXPECT_THAT(prompt, HasSubstr("### Skill `readme-style`\n# README style\nUse American spelling; 保持简短。"));
  ASSERT_THAT(prompt, HasSubstr("## Mandate"));
  ASSERT_THAT(prompt, HasSubstr("## Original request"));
  EXPECT_LT(prompt.find("## Mandate"), prompt.find("## Team skills"));
  EXPECT_LT(prompt.find("## Team skills"), prompt.find("## Original request"));
  EXPECT_EQ(prompt.find("OUTSIDE-SKILL-SECRET"), std::string::npos);
  EXPECT_THAT(prompt, HasSubstr("\"options\""));  // the host facts say how to give them

  auto ticket = views_->GetTicket(id);
  ASSERT_TRUE(ticket.ok());
  ASSERT_EQ(ticket->stage, Stage::kWaitingForPerson) << ResultText(id);
  EXPECT_EQ(ticket->waiting->form, json({{"options", {"README.md", "docs/README.md 📄"}}, {"free_text", false}}));
  EXPECT_THAT(ResultText(id), HasSubstr("Which file should change?\n\n1. README.md\n2. docs/README.md 📄\n\n"
                                        "Reply with the number of your choice."));
}

// A CLI's final "ready" for a branch that changes a UI path, without screenshots: the turn ends
// blocked saying why, and no pull request is opened.
TEST_P(ExecCliTest, ACliReadyForAUiChangeWithoutScreenshotsEndsBlockedSayingWhy) {
  if (GetParam().cli != "claude-code") GTEST_SKIP() << "one CLI is enough";
  // This team counts Markdown as UI; the CLI edits README.md.
  services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get(),
                                                     exec::WorkerServicesOptions{.ui_paths = {"*.md"}});
  FakeCodingModel model(GetParam().wire, kKey, GetParam().model, {.old_text = "teh typo", .new_text = "the typo"});
  const TicketId id = AcceptedTicket("c1");
  auto executor = Executor(Options(model));
  ASSERT_NE(executor, nullptr);
  auto scheduler = MakeScheduler(executor.get());
  RunTurns(*scheduler);
  EXPECT_THAT(model.problems(), ::testing::IsEmpty());
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  EXPECT_THAT(ResultText(id), HasSubstr("The report was not accepted as ready: the branch changes the UI (README.md), so "
                                        "a ready report needs \"screenshots\" with a Before and an After"));
  EXPECT_EQ(Ok(views_->OutboxCounts())["pending"], 2) << "the acknowledgement and the result; no pull request";
}

TEST_P(ExecCliTest, StopKillsTheCliAndItsChildren) {
  // A model that never answers keeps the CLI waiting; Stop must end it at once.
  FakeCodingModel model(GetParam().wire, kKey, GetParam().model, {.old_text = "teh typo", .new_text = "the typo",
                                                                   .command = "python3 -c 'import time; time.sleep(371)'"});
  const TicketId id = AcceptedTicket("c1");
  auto o = Options(model);
  auto executor = Executor(o);
  ASSERT_NE(executor, nullptr);
  auto scheduler = MakeScheduler(executor.get());
  ASSERT_TRUE(scheduler->Tick().ok());
  // The CLI's shell step is running, a grandchild of the CLI.
  ASSERT_TRUE(Eventually([&] { return Running("time.sleep(371)"); }, 60'000));
  ASSERT_TRUE(engine_->StopTicket(id, "alice (panel)").ok());
  const auto stopped_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(scheduler->Tick().ok());  // sees the stop: cancels the turn and kills its tree
  scheduler->WaitForTurns();
  // Long before the turn's limit (120 s): the Stop ended it, not the clock.
  EXPECT_LT(std::chrono::steady_clock::now() - stopped_at, std::chrono::seconds(60));
  EXPECT_TRUE(Eventually([&] { return !Running("time.sleep(371)"); }, 5'000));
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kEnded);
}

INSTANTIATE_TEST_SUITE_P(RealClis, ExecCliTest,
                         ::testing::Values(CliCase{"claude-code", "claude", FakeCodingModel::Wire::kAnthropic, "claude-sonnet-4-5"},
                                           CliCase{"qwen-code", "qwen", FakeCodingModel::Wire::kOpenAiChat, "qwen3-coder-plus"}),
                         [](const auto& test) {
                           std::string n = test.param.cli;
                           n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
                           return n;
                         });

// The adapters read output a CLI produced after reading strangers' text: anything goes in, no
// throw comes out, and a Qwen "success" that carries an API error is a failure.
TEST(CliAdapterTest, OutputLinesOfEveryShapeAreReadWithoutThrowing) {
  const std::vector<json> lines = {
      json::object(),
      {{"type", 5}},
      {{"type", "assistant"}, {"message", "not an object"}},
      {{"type", "assistant"}, {"message", {{"content", {1, "x", nullptr, {{"type", "text"}, {"text", 7}}}}}}},
      {{"type", "assistant"},
       {"message", {{"content", {{{"type", "text"}, {"text", "修好了 🎉 \xed\xa0\x80"}}, {{"type", "tool_use"}, {"id", 3}, {"input", "x"}}}}}}},
      {{"type", "user"}, {"message", {{"content", {{{"type", "tool_result"}, {"content", {{{"type", "text"}, {"text", "输出"}}}}, {"is_error", "yes"}}}}}}},
      {{"type", "result"}, {"is_error", "true"}, {"result", 5}, {"usage", {{"input_tokens", "many"}}}, {"permission_denials", "none"}},
      {{"type", "result"}, {"session_id", std::string(100000, 'x')}, {"permission_denials", {1, {{"tool_input", 2}}}}},
  };
  for (const char* cli : {"claude-code", "qwen-code"}) {
    SCOPED_TRACE(cli);
    std::unique_ptr<exec::CliAdapter> a = std::string(cli) == "claude-code" ? exec::MakeClaudeCodeAdapter() : exec::MakeQwenCodeAdapter();
    exec::CliProgress p;
    for (const json& line : lines) EXPECT_NO_THROW(a->OnLine(line, &p)) << line.dump();
    EXPECT_TRUE(p.finished);
  }
  exec::CliProgress q;
  exec::MakeQwenCodeAdapter()->OnLine(
      {{"type", "result"}, {"subtype", "success"}, {"is_error", false}, {"result", "[API Error: 500 Internal Server Error]"}}, &q);
  EXPECT_TRUE(q.failed);
  EXPECT_THAT(q.error, HasSubstr("500"));
  exec::CliProgress c;
  exec::MakeClaudeCodeAdapter()->OnLine(
      {{"type", "result"}, {"subtype", "success"}, {"is_error", true}, {"api_error_status", 401}, {"result", "Invalid API key"}}, &c);
  EXPECT_TRUE(c.failed);
  EXPECT_THAT(c.error, HasSubstr("401"));
}

TEST(CliAdapterTest, TheAllowListBecomesTheCliOwnSyntaxAndThePromptNeverGoesOnStdin) {
  exec::CliExecutorOptions o;
  o.binary = "claude";
  o.model = "m";
  o.api_key = "secret-value";
  o.allowed_commands = {" git diff ", "", "make test"};
  exec::CliTurn turn{"do it", std::string("sess-1"), "/w"};
  auto inv = exec::MakeClaudeCodeAdapter()->Invocation(o, turn);
  const std::string argv = [&] {
    std::string s;
    for (const auto& a : inv.argv) s += a + "|";
    return s;
  }();
  EXPECT_THAT(argv, HasSubstr("Bash(git diff:*)|"));
  EXPECT_THAT(argv, HasSubstr("Bash(make test:*)|"));
  EXPECT_THAT(argv, ::testing::Not(HasSubstr("|Bash|")));
  EXPECT_THAT(argv, HasSubstr("--resume|sess-1|"));
  EXPECT_THAT(argv, ::testing::Not(HasSubstr("secret-value")));  // the key travels in the environment only
  EXPECT_THAT(argv, ::testing::Not(HasSubstr("dangerously")));   // refused as root, and too broad
  bool key = false;
  for (const auto& [k, v] : inv.env) key |= k == "ANTHROPIC_API_KEY" && v == "secret-value";
  EXPECT_TRUE(key);
  auto q = exec::MakeQwenCodeAdapter()->Invocation(o, turn);
  std::string qargv;
  for (const auto& a : q.argv) qargv += a + "|";
  EXPECT_THAT(qargv, HasSubstr("run_shell_command(git diff)|"));
  EXPECT_THAT(qargv, ::testing::Not(HasSubstr("secret-value")));
  ASSERT_EQ(q.home_files.size(), 2u);  // its settings, and the worktree as an untrusted folder
  EXPECT_EQ(q.home_files[0].first, ".qwen/settings.json");
  EXPECT_TRUE(json::parse(q.home_files[0].second).is_object());
}

TEST(CliAdapterTest, AnUnknownCliIsRefused) {
  auto e = exec::MakeCliExecutor({.cli = "copilot"}, nullptr, nullptr, nullptr, SystemClock(), exec::RealSleeper());
  EXPECT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("copilot"));
}

}  // namespace
}  // namespace superagent::testing
