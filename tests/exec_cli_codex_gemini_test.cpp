// The Codex and Gemini CLI executors against the real CLIs (tests/node_modules, pinned in
// tests/package.json) and loopback fakes of their model APIs: a Ticket's turn runs the CLI in
// the Ticket's sandboxed worktree, the CLI edits README.md with its own tools and runs
// `git diff --stat`, its report becomes the Ticket's result and PR; a follow-up resumes the
// CLI's own session; a dead model (500, 401) blocks the turn with the reason within its time
// limit; a command outside the allow-list is refused; Stop kills the CLI's whole tree. Plus the
// adapters' line parsers against hostile output.
#include <chrono>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "exec/cli_adapter.h"
#include "exec_fixture.h"
#include "superagent/views.h"
#include "result_ok.h"
#include "fake_gemini_model.h"
#include "fake_responses_model.h"
#include "superagent/sandbox.h"
#include "superagent/text.h"
#include "superagent/worker.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace fs = std::filesystem;

fs::path NodeModules() { return fs::path(SUPERAGENT_SOURCE_DIR) / "tests" / "node_modules"; }

class CliCodexGeminiTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    if (!fs::exists(NodeModules() / ".bin" / "codex") || !fs::exists(NodeModules() / ".bin" / "gemini"))
      GTEST_SKIP() << "run `npm ci` in tests/ (the coding CLIs are test dependencies)";
    // The sandbox on, as the daemon runs workers, where this host can.
    exec::PosixRunnerOptions ro;
    ro.sandbox.state_dir = (dir_ / "work" / "sandbox").string();
    ro.sandbox.enabled = exec::ProbeSandbox(ro.sandbox).supported;
    sandboxed_ = ro.sandbox.enabled;
    UseRunner(ro);
  }

  exec::CliExecutorOptions Options(const std::string& cli, const std::string& base_url, const std::string& key,
                                   const std::string& model) {
    exec::CliExecutorOptions o;
    o.cli = cli;
    o.binary = (NodeModules() / ".bin" / (cli == "codex" ? "codex" : "gemini")).string();
    o.readable = {NodeModules().string()};
    o.base_url = base_url;
    o.api_key = key;
    o.model = model;
    o.turn_ms = 120'000;
    return o;
  }

  // The CLI's turn times itself on the real clock (the CLI runs in real time); the scheduler
  // keeps the stepping one.
  std::unique_ptr<exec::Executor> Executor(exec::CliExecutorOptions o) {
    auto e = exec::MakeCliExecutor(std::move(o), engine_.get(), views_.get(), services_.get(), SystemClock(),
                                   [](TimeMs ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); });
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(*e) : nullptr;
  }

  // Runs the Ticket's queued turn to its end; returns its wall time in ms.
  long RunTurn(exec::Scheduler& s) {
    const auto start = std::chrono::steady_clock::now();
    auto started = s.Tick();
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    s.WaitForTurns();
    EXPECT_TRUE(s.Tick().ok());
    const long ms = static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
    std::printf("[ turn took %ld ms, sandbox %s ]\n", ms, sandboxed_ ? "on" : "off");
    return ms;
  }

  std::vector<SessionEvent> Events(TicketId id) {
    auto session = Ok(views_->SessionForTicket(id));
    return session ? Ok(views_->SessionEvents(session->id)) : std::vector<SessionEvent>{};
  }
  int Count(const std::vector<SessionEvent>& events, const std::string& kind) {
    int n = 0;
    for (const SessionEvent& e : events) n += e.kind == kind;
    return n;
  }
  std::string Readme(TicketId id) { return ReadText(dir_ / "work" / "tickets" / ("ticket-" + std::to_string(id)) / "README.md"); }
  std::string LastResult(TicketId id) {
    auto receipts = Ok(views_->Receipts(id));
    return receipts.empty() ? "" : receipts.back().body;
  }
  // Why the Ticket is blocked, as the panel's card says it: the cause itself (issue 34), where a
  // CLI's own words go — never into the discussion.
  std::string Why(TicketId id) {
    auto views = Ok(Views::Open((dir_ / "superagent.db").string()));
    return Ok(views->Detail(id)).row.stage_reason;
  }

  // The whole story for one CLI: edit, report, transcript, usage; then a follow-up that resumes.
  template <typename Fake>
  void WorksAndResumes(const std::string& cli, Fake& fake) {
    const TicketId id = AcceptedTicket("c1");
    auto executor = Executor(Options(cli, fake.base_url(), fake.key(), fake.model()));
    ASSERT_NE(executor, nullptr);
    auto scheduler = MakeScheduler(executor.get());
    RunTurn(*scheduler);
    EXPECT_TRUE(fake.problems().empty()) << ::testing::PrintToString(fake.problems());
    auto t = views_->GetTicket(id);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->stage, Stage::kReady) << LastResult(id);
    EXPECT_THAT(LastResult(id), HasSubstr("Fixed the typo"));
    EXPECT_EQ(OnOrigin("superagent/ticket-" + std::to_string(id), "README.md"), "Hello\nThere is the typo.\n");
    auto events = Events(id);
    EXPECT_GE(Count(events, "assistant"), 3);
    EXPECT_GE(Count(events, "tool_result"), 3);
    EXPECT_GE(Count(events, "command"), 2);  // git diff --stat and the CLI's own run
    EXPECT_EQ(Count(events, "cli_session"), 1);
    EXPECT_EQ(Count(events, "report"), 1);
    std::string first_session;
    for (const SessionEvent& e : events)
      if (e.kind == "cli_session") first_session = e.body.value("id", "");
    EXPECT_FALSE(first_session.empty());
    bool diff_seen = false;
    for (const SessionEvent& e : events)
      if (e.kind == "command" && e.body.value("command", "").find("git diff --stat") != std::string::npos)
        diff_seen = diff_seen || e.body.dump().find("README.md") != std::string::npos;
    EXPECT_TRUE(diff_seen);
    auto usage = Ok(views_->TokenUsage(id));
    EXPECT_GT(usage.value("prompt_tokens", 0), 0) << usage.dump();
    EXPECT_GT(usage.value("completion_tokens", 0), 0) << usage.dump();

    // A person's follow-up: the same CLI session continues (the fake sees the earlier history).
    Receive(Comment("c2", "alice", false, "FOLLOW-UP-7f3a: anything else to fix?"));
    RunTurn(*scheduler);
    EXPECT_TRUE(fake.problems().empty()) << ::testing::PrintToString(fake.problems());
    EXPECT_TRUE(fake.followup_saw_history()) << "the follow-up did not carry the first turn's history";
    EXPECT_THAT(LastResult(id), HasSubstr("Follow-up answered"));
    events = Events(id);
    EXPECT_EQ(Count(events, "cli_session"), 1) << "the resumed session is the same one";
  }

  // A dead model: the turn ends blocked with the reason, within `limit_ms`.
  template <typename Fake>
  void DeadModelBlocks(const std::string& cli, Fake& fake, const std::string& reason, long limit_ms) {
    const TicketId id = AcceptedTicket("c1");
    auto o = Options(cli, fake.base_url(), fake.key(), fake.model());
    o.turn_ms = limit_ms;
    auto executor = Executor(o);
    ASSERT_NE(executor, nullptr);
    auto scheduler = MakeScheduler(executor.get());
    const long took = RunTurn(*scheduler);
    EXPECT_LT(took, limit_ms + 10'000);
    EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
    EXPECT_THAT(Why(id), HasSubstr(reason));
    EXPECT_THAT(LastResult(id), HasSubstr("Reply here and I will try again"));
    EXPECT_TRUE(fake.problems().empty()) << ::testing::PrintToString(fake.problems());
    EXPECT_EQ(Readme(id), "Hello\nThere is teh typo.\n");
  }

 public:
  template <typename Fake>
  void StopKillsWith(const std::string& cli, Fake& fake, int port) {
    const TicketId id = AcceptedTicket("c1");
    auto executor = Executor(Options(cli, fake.base_url(), fake.key(), fake.model()));
    ASSERT_NE(executor, nullptr);
    auto scheduler = MakeScheduler(executor.get());
    ASSERT_EQ(*scheduler->Tick(), 1);
    ASSERT_TRUE(Eventually([&] { return Listening(port); }, 60'000)) << "the CLI never ran the listener";
    const auto stop = std::chrono::steady_clock::now();
    ASSERT_TRUE(engine_->StopTicket(id, "alice").ok());
    ASSERT_TRUE(scheduler->Tick().ok());
    scheduler->WaitForTurns();
    EXPECT_TRUE(Eventually([&] { return !Listening(port); }, 5'000)) << "the CLI's grandchild survived the Stop";
    EXPECT_LT(std::chrono::steady_clock::now() - stop, std::chrono::seconds(5));
    EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kEnded);
  }

  bool sandboxed_ = false;
};

TEST_F(CliCodexGeminiTest, CodexEditsTheWorktreeReportsReadyAndAFollowUpResumesItsSession) {
  FakeResponsesModel fake({});
  WorksAndResumes("codex", fake);
  EXPECT_TRUE(fake.offered_apply_patch()) << "a known model slug gets apply_patch";
}

TEST_F(CliCodexGeminiTest, GeminiEditsTheWorktreeReportsReadyAndAFollowUpResumesItsSession) {
  FakeGeminiModel fake({});
  WorksAndResumes("gemini-cli", fake);
}

TEST_F(CliCodexGeminiTest, CodexWithADeadModelBlocksWithTheReason) {
  FakeCliScript s500;
  s500.mode = FakeCliScript::Mode::kFail500;
  {
    FakeResponsesModel fake(s500);
    DeadModelBlocks("codex", fake, "codex", 40'000);
  }
}

TEST_F(CliCodexGeminiTest, CodexWithAWrongKeyBlocksWithTheReason) {
  FakeCliScript s401;
  s401.mode = FakeCliScript::Mode::kFail401;
  FakeResponsesModel fake(s401);
  DeadModelBlocks("codex", fake, "401", 40'000);
}

TEST_F(CliCodexGeminiTest, GeminiWithADeadModelBlocksWithTheReason) {
  FakeCliScript s500;
  s500.mode = FakeCliScript::Mode::kFail500;
  FakeGeminiModel fake(s500);
  DeadModelBlocks("gemini-cli", fake, "500", 30'000);
}

TEST_F(CliCodexGeminiTest, GeminiWithAWrongKeyBlocksWithTheReason) {
  FakeCliScript s401;
  s401.mode = FakeCliScript::Mode::kFail401;
  FakeGeminiModel fake(s401);
  DeadModelBlocks("gemini-cli", fake, "API key not valid", 30'000);
}

TEST_F(CliCodexGeminiTest, GeminiRefusesACommandOutsideTheAllowListAndTheTranscriptShowsIt) {
  FakeCliScript s;
  s.outside_command = "touch outside.txt";
  FakeGeminiModel fake(s);
  const TicketId id = AcceptedTicket("c1");
  auto o = Options("gemini-cli", fake.base_url(), fake.key(), fake.model());
  o.allowed_commands = {"git diff"};
  auto executor = Executor(o);
  ASSERT_NE(executor, nullptr);
  auto scheduler = MakeScheduler(executor.get());
  RunTurn(*scheduler);
  EXPECT_TRUE(fake.problems().empty()) << ::testing::PrintToString(fake.problems());
  EXPECT_FALSE(fs::exists(dir_ / "work" / "tickets" / ("ticket-" + std::to_string(id)) / "outside.txt"));
  bool refused = false;
  for (const SessionEvent& e : Events(id))
    if (e.kind == "tool_result" && e.body.value("content", "").rfind("refused:", 0) == 0) refused = true;
  EXPECT_TRUE(refused);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady);  // the rest of the work went on
}

TEST_F(CliCodexGeminiTest, CodexRefusesToStartWithAnAllowListItCannotHonour) {
  FakeResponsesModel fake({});
  const TicketId id = AcceptedTicket("c1");
  auto o = Options("codex", fake.base_url(), fake.key(), fake.model());
  o.allowed_commands = {"git diff"};
  auto executor = Executor(o);
  ASSERT_NE(executor, nullptr);
  auto scheduler = MakeScheduler(executor.get());
  RunTurn(*scheduler);
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked);
  EXPECT_THAT(LastResult(id), HasSubstr("allowed_commands cannot be honoured"));
  EXPECT_EQ(fake.requests(), 0);
}

// Stop during a shell command: the CLI and the grandchild it started die at once.
template <typename Fake>
void StopKills(CliCodexGeminiTest* t, const std::string& cli) {
  const int port = FreePort();
  FakeCliScript s;
  s.outside_command = ListenerCommand(port);  // a grandchild that would outlive a careless kill
  Fake fake(s);
  t->StopKillsWith(cli, fake, port);
}

TEST_F(CliCodexGeminiTest, StopKillsTheCliAndItsChildren) { StopKills<FakeGeminiModel>(this, "gemini-cli"); }

TEST_F(CliCodexGeminiTest, StopKillsCodexAndItsChildren) { StopKills<FakeResponsesModel>(this, "codex"); }

// A decision needed: one structured question, the Ticket waits for the person who asked.
TEST_F(CliCodexGeminiTest, BothAskOneQuestionWhenADecisionIsNeeded) {
  const std::string question = "改 README 还是 docs/README？ Which one should change?";
  FakeCliScript s;
  s.final_text = "I need a decision.\n```superagent-report\n" +
                 json({{"stage", "waiting_for_person"}, {"summary", "Two READMEs could be meant."}, {"question", question}})
                     .dump() +
                 "\n```";
  {
    FakeResponsesModel codex(s);
    const TicketId id = AcceptedTicket("q1", 1);
    auto executor = Executor(Options("codex", codex.base_url(), codex.key(), codex.model()));
    ASSERT_NE(executor, nullptr);
    auto scheduler = MakeScheduler(executor.get());
    RunTurn(*scheduler);
    EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kWaitingForPerson) << LastResult(id);
    EXPECT_THAT(LastResult(id), HasSubstr(question));
  }
  {
    FakeGeminiModel gemini(s);
    const TicketId id = AcceptedTicket("q2", 2);
    auto executor = Executor(Options("gemini-cli", gemini.base_url(), gemini.key(), gemini.model()));
    ASSERT_NE(executor, nullptr);
    auto scheduler = MakeScheduler(executor.get());
    RunTurn(*scheduler);
    EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kWaitingForPerson) << LastResult(id);
    EXPECT_THAT(LastResult(id), HasSubstr(question));
  }
}

// --- the line parsers against whatever a CLI (or the text it read) may print ------------------

std::vector<json> HostileLines() {
  std::string huge(300'000, 'x');
  std::string zh;
  for (int i = 0; i < 2000; ++i) zh += "汉字😀";
  std::vector<json> lines = {
      json::object(),
      {{"type", 42}},
      {{"type", nullptr}},
      {{"type", json::array({1, 2})}},
      {{"type", "thread.started"}, {"thread_id", 7}},
      {{"type", "thread.started"}, {"thread_id", "会话-😀"}},
      {{"type", "item.started"}},
      {{"type", "item.started"}, {"item", "not an object"}},
      {{"type", "item.completed"}, {"item", {{"type", "agent_message"}, {"text", 5}}}},
      {{"type", "item.completed"}, {"item", {{"type", "agent_message"}, {"text", zh}}}},
      {{"type", "item.completed"}, {"item", {{"type", "command_execution"}, {"command", json::array()}, {"exit_code", "x"}}}},
      {{"type", "item.completed"},
       {"item", {{"type", "command_execution"}, {"id", "a.b.c"}, {"command", "/bin/bash -lc '" + zh + "'"},
                 {"aggregated_output", huge}, {"exit_code", 1}, {"status", "declined"}}}},
      {{"type", "item.started"}, {"item", {{"type", "file_change"}, {"id", ""}, {"changes", "nope"}}}},
      {{"type", "item.completed"}, {"item", {{"type", "file_change"}, {"changes", json::array({1, "x", {{"path", 3}}})}}}},
      {{"type", "item.completed"}, {"item", {{"type", "mcp_tool_call"}, {"id", "m"}, {"arguments", huge}}}},
      {{"type", "turn.completed"}, {"usage", "lots"}},
      {{"type", "turn.completed"}, {"usage", {{"input_tokens", "12"}, {"output_tokens", -5}, {"cached_input_tokens", 1e300}}}},
      {{"type", "error"}},
      {{"type", "turn.failed"}, {"error", {{"message", zh}}}},
      {{"type", "init"}, {"session_id", json::object()}, {"model", 3}},
      {{"type", "message"}, {"role", "assistant"}, {"content", zh}, {"delta", "yes"}},
      {{"type", "message"}, {"role", "assistant"}, {"content", json::array()}, {"delta", true}},
      {{"type", "tool_use"}},
      {{"type", "tool_use"}, {"tool_id", "t1"}, {"tool_name", "run_shell_command"}, {"parameters", "rm -rf /"}},
      {{"type", "tool_result"}, {"tool_id", "t1"}, {"status", "error"}, {"error", "policy_violation"}},
      {{"type", "tool_result"}, {"tool_id", "unknown"}, {"status", "error"}, {"error", {{"type", "policy_violation"}}}},
      {{"type", "tool_result"}, {"tool_id", 5}, {"output", huge}},
      {{"type", "result"}, {"status", 1}, {"stats", {{"models", {{"m", "x"}, {"n", {{"total_tokens", "9"}}}}}}}},
      {{"type", "result"}, {"status", "success"}, {"stats", {{"input_tokens", 10}, {"output_tokens", 2}, {"total_tokens", 12}}}},
  };
  return lines;
}

TEST(CliAdapterLines, CodexAndGeminiParsersTakeAnythingWithoutThrowing) {
  for (auto make : {exec::MakeCodexAdapter, exec::MakeGeminiCliAdapter}) {
    auto adapter = make();
    exec::CliProgress p;
    for (const json& line : HostileLines()) {
      EXPECT_NO_THROW(adapter->OnLine(line, &p)) << adapter->name() << " " << text::Cut(line.dump(), 200);
      // The executor takes events and usage after every batch; they must be storable JSON.
      for (auto& [kind, body] : p.events) EXPECT_NO_THROW((void)body.dump()) << kind;
      p.events.clear();
      p.usage.clear();
    }
    EXPECT_NO_THROW(adapter->OnExit(3, &p));
    EXPECT_TRUE(p.state.is_object());
    // A broken state from a previous line must not break the next either.
    p.state = "garbage";
    for (const json& line : HostileLines()) EXPECT_NO_THROW(adapter->OnLine(line, &p)) << adapter->name();
  }
}

TEST(CliAdapterLines, CodexReadsItsStream) {
  auto a = exec::MakeCodexAdapter();
  exec::CliProgress p;
  for (const char* l : {
           R"({"type":"thread.started","thread_id":"01a2-thread"})",
           R"({"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'git diff --stat'","aggregated_output":"","exit_code":null,"status":"in_progress"}})",
           R"({"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/bash -lc 'git diff --stat'","aggregated_output":" README.md | 2 +-\n","exit_code":0,"status":"completed"}})",
           R"({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"完成 ✅"}})",
           R"({"type":"turn.completed","usage":{"input_tokens":4000,"cached_input_tokens":800,"output_tokens":200}})"})
    a->OnLine(json::parse(l), &p);
  EXPECT_EQ(p.session_id, "01a2-thread");
  EXPECT_TRUE(p.finished);
  EXPECT_FALSE(p.failed);
  EXPECT_EQ(p.final_text, "完成 ✅");
  ASSERT_EQ(p.usage.size(), 1u);
  EXPECT_EQ(p.usage[0]["prompt_tokens"], 4000);
  EXPECT_EQ(p.usage[0]["completion_tokens"], 200);
  EXPECT_EQ(p.usage[0]["cache_hit_tokens"], 800);
  ASSERT_EQ(p.events.size(), 4u);  // the call, its result, the command, the message
  EXPECT_EQ(p.events[0].second["tool_calls"][0]["arguments"], R"({"command":"git diff --stat"})");
  EXPECT_EQ(p.events[2].first, "command");
  EXPECT_EQ(p.events[2].second["exit_code"], 0);

  exec::CliProgress f;
  a->OnLine(json::parse(R"({"type":"error","message":"unexpected status 401 Unauthorized"})"), &f);
  a->OnLine(json::parse(R"({"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}})"), &f);
  EXPECT_TRUE(f.failed);
  EXPECT_EQ(f.error, "unexpected status 401 Unauthorized");
}

TEST(CliAdapterLines, GeminiAccumulatesDeltasAndCountsARefusal) {
  auto a = exec::MakeGeminiCliAdapter();
  exec::CliProgress p;
  for (const char* l : {
           R"({"type":"init","session_id":"s-1","model":"gemini-2.5-pro"})",
           R"({"type":"message","role":"user","content":"do it"})",
           R"({"type":"message","role":"assistant","content":"Let me ","delta":true})",
           R"({"type":"message","role":"assistant","content":"look.","delta":true})",
           R"({"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"curl x"}})",
           R"({"type":"tool_result","tool_id":"t1","status":"error","output":"Tool execution denied by policy.","error":{"type":"policy_violation","message":"Tool execution denied by policy."}})",
           R"({"type":"message","role":"assistant","content":"Done ","delta":true})",
           R"({"type":"message","role":"assistant","content":"🎉","delta":true})",
           R"({"type":"result","status":"success","stats":{"total_tokens":12,"input_tokens":10,"output_tokens":2,"cached":4,"models":{"gemini-2.5-pro":{"total_tokens":12,"input_tokens":10,"output_tokens":2,"cached":4}}}})"})
    a->OnLine(json::parse(l), &p);
  EXPECT_EQ(p.session_id, "s-1");
  EXPECT_EQ(p.final_text, "Done 🎉");
  EXPECT_TRUE(p.finished);
  EXPECT_FALSE(p.failed);
  ASSERT_EQ(p.refused.size(), 1u);
  EXPECT_EQ(p.refused[0], "curl x");
  ASSERT_EQ(p.usage.size(), 1u);
  EXPECT_EQ(p.usage[0]["model"], "gemini-2.5-pro");
  EXPECT_EQ(p.usage[0]["cache_hit_tokens"], 4);
  ASSERT_GE(p.events.size(), 3u);
  EXPECT_EQ(p.events[0].second["content"], "Let me look.");
  EXPECT_EQ(p.events[1].second["content"], "refused: Tool execution denied by policy.");
}

}  // namespace
}  // namespace superagent::testing
