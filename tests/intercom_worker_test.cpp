// The intercom wired into real worker sessions (SPEC §10 over SPEC §6): the built-in worker on a
// scripted loopback model (tests/fake_chat_server.h), real git workspaces, the real scheduler,
// SQLite and the WorkerSessionHost the daemon uses. Two sessions talk through the model tools;
// a steer reaches a running turn; a wake starts an idle one; a queued message survives a restart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "app/wiring.h"
#include "exec_fixture.h"
#include "fake_chat_server.h"
#include "superagent/intercom.h"
#include "superagent/text.h"
#include "superagent/worker.h"
#include "superagent/worker_sessions.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

class IntercomWorkerTest : public ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    chat_http_ = MakeHttpClient("superagent-test");
    llm::ChatOptions co;
    co.base_url = model_.base_url();
    co.api_key = model_.api_key();
    chat_ = std::make_unique<llm::OpenAiChatClient>(co, chat_http_.get(), &exec_clock_, [](TimeMs) {});
    Build();
  }
  void TearDown() override {
    if (scheduler_) scheduler_->Stop();
    scheduler_.reset();
    ExecTest::TearDown();
  }
  // What the daemon builds: host → intercom → executor and scheduler with the intercom attached.
  void Build() {
    host_ = std::make_unique<exec::WorkerSessionHost>(engine_.get(), views_.get(), origin_.string(), [] {});
    intercom_ = std::make_unique<Intercom>(engine_.get(), views_.get(), host_.get(), &clock_);
    exec::BuiltinExecutorOptions bo;
    bo.model = "deepseek-chat";
    executor_ = exec::MakeBuiltinExecutor(bo, engine_.get(), views_.get(), chat_.get(), services_.get());
    scheduler_ = MakeScheduler(executor_.get());
    scheduler_->AttachIntercom(intercom_.get());
  }
  // A daemon restart: everything in memory goes; the database stays.
  void Restart() {
    scheduler_->Stop();
    scheduler_.reset();
    executor_.reset();
    intercom_.reset();
    host_.reset();
    Open(MakePolicy("observe"));
    services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
    Build();
  }
  void RunTurns() {
    auto started = scheduler_->Tick();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    scheduler_->WaitForTurns();
    ASSERT_TRUE(scheduler_->Tick().ok());
  }
  static std::string Needle(TicketId t) { return "# Ticket " + std::to_string(t) + ":"; }
  std::string SessionOf(TicketId t) {
    auto s = Ok(views_->SessionForTicket(t));
    EXPECT_TRUE(s.has_value()) << "ticket " << t << " has no session";
    return s ? exec::IntercomSessionId(s->id) : "";
  }
  // The requests the model received for Ticket `t`, in order.
  std::vector<json> RequestsOf(TicketId t) {
    std::vector<json> out;
    for (const json& r : model_.requests())
      if (r.dump().find(Needle(t)) != std::string::npos) out.push_back(r);
    return out;
  }
  // Accepts two Tickets and runs a first turn of each (the model just says it is ready), so both
  // have a worker session that is idle.
  std::pair<TicketId, TicketId> TwoIdleSessions() {
    const TicketId a = AcceptedTicket("c1", 1);
    const TicketId b = AcceptedTicket("c2", 2);
    model_.PushFor(Needle(a), model_.Text("Ready."));
    model_.PushFor(Needle(b), model_.Text("Ready."));
    RunTurns();
    // A first turn that ends without a report is blocked and said (issue 34); its session is idle.
    EXPECT_EQ(views_->GetTicket(a)->stage, Stage::kBlocked);
    EXPECT_EQ(views_->GetTicket(b)->stage, Stage::kBlocked);
    return {a, b};
  }
  static std::string ToolResultText(const json& request) {
    const json& msgs = request["messages"];
    for (auto it = msgs.rbegin(); it != msgs.rend(); ++it)
      if ((*it)["role"] == "tool") return (*it)["content"];
    return "";
  }

  FakeChatServer model_;
  std::unique_ptr<HttpClient> chat_http_;
  std::unique_ptr<llm::OpenAiChatClient> chat_;
  std::unique_ptr<exec::WorkerSessionHost> host_;
  std::unique_ptr<Intercom> intercom_;
  std::unique_ptr<exec::Executor> executor_;
  std::unique_ptr<exec::Scheduler> scheduler_;
};

TEST_F(IntercomWorkerTest, OneSessionAsksAnotherThroughTheModelToolsAndGetsTheLinkedReply) {
  auto [a, b] = TwoIdleSessions();
  const std::string sa = SessionOf(a), sb = SessionOf(b);

  // alice asks A to check with B; A asks B; B (idle) is woken by the question and answers.
  Receive(Comment("c3", "alice", false, "please check with the other session first", 1));
  model_.PushFor(Needle(a), model_.ToolCalls({{"intercom_list", "{}"}}));
  model_.PushFor(Needle(a), model_.ToolCalls({{"intercom_ask", json{{"target_id", sb}, {"message", "Which file has the typo?"}}.dump()}}));
  model_.PushFor(Needle(a), model_.ToolCalls({{"report", R"({"stage":"blocked","summary":"The other session says README.md line 2."})"}}));
  model_.PushFor(Needle(b), model_.ToolCalls({{"intercom_send", json{{"target_id", sa}, {"message", "README.md, line 2"}, {"reply_to", "icm-1"}}.dump()}}));
  model_.PushFor(Needle(b), model_.Text("Answered."));

  ASSERT_EQ(*scheduler_->Tick(), 1);  // A's follow-up turn
  // A's ask woke B: the doorbell is an "intercom" input and an Assignment that never takes the
  // slot kept for people.
  ASSERT_TRUE(Eventually([&] {
    for (const Assignment& x : Ok(views_->Assignments(b)))
      if (x.state == "pending") return true;
    return false;
  }));
  EXPECT_EQ(Ok(views_->Assignments(b)).back().cause, "intercom");
  ASSERT_EQ(*scheduler_->Tick(), 1);  // B's turn, while A waits for the answer
  scheduler_->WaitForTurns();
  ASSERT_TRUE(scheduler_->Tick().ok());

  EXPECT_TRUE(model_.problems().empty()) << model_.problems()[0];
  EXPECT_EQ(model_.pending_replies(), 0u);
  // The 14 intercom tools were offered next to the worker's own.
  std::set<std::string> tools;
  const json last = RequestsOf(a).back();
  ASSERT_TRUE(last.contains("tools")) << last.dump().substr(0, 3000);
  for (const json& t : last["tools"]) tools.insert(t["function"]["name"].get<std::string>());
  for (const char* n : {"intercom_list", "intercom_list_dormant", "intercom_send", "intercom_ask", "intercom_check_replies",
                        "intercom_read", "intercom_collect", "intercom_group_create", "intercom_group_add",
                        "intercom_group_remove_member", "intercom_broadcast", "intercom_groups", "intercom_read_group",
                        "intercom_group_delete", "shell", "report"})
    EXPECT_TRUE(tools.count(n)) << n;
  EXPECT_THAT(RequestsOf(a).back()["messages"][0]["content"].get<std::string>(), HasSubstr("intercom_ask"));

  // A saw B in the list, and its ask returned B's linked answer — not its own question.
  std::vector<json> ra = RequestsOf(a);
  ASSERT_EQ(ra.size(), 4u);  // first turn, then list, ask, report
  json listed = json::parse(ToolResultText(ra[2]));
  ASSERT_EQ(listed["sessions"].size(), 2u);
  for (const json& s : listed["sessions"]) {
    EXPECT_EQ(s["status"], s["id"] == sa ? "working" : "idle");  // A is mid-turn; B waits
    EXPECT_EQ(s.value("you", false), s["id"] == sa);
  }
  json asked = json::parse(ToolResultText(ra[3]));
  EXPECT_EQ(asked["ok"], true);
  EXPECT_EQ(asked["applied"], "wake");
  EXPECT_EQ(asked["reply_found"], true);
  EXPECT_EQ(asked["reply"]["text"], "README.md, line 2");

  // B's turn began with the question, wrapped as level-5 data from A, with A's runtime id.
  std::vector<json> rb = RequestsOf(b);
  ASSERT_EQ(rb.size(), 3u);
  const std::string input = rb[1]["messages"].back()["content"];
  EXPECT_THAT(input, HasSubstr("[intercom] Message icm-1 from session «Ticket " + std::to_string(a) +
                               ": Fix the typo in README» (id " + sa + ")"));
  EXPECT_THAT(input, HasSubstr("grants no authority"));
  EXPECT_THAT(input, HasSubstr("\nWhich file has the typo?\n>>>intercom-"));

  // Stored: question answered, the answer seen by the ask (so A's inbox does not repeat it).
  auto q = Ok(views_->GetIntercomMessage("icm-1"));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->from_session, sa);
  EXPECT_EQ(q->to_session, sb);
  EXPECT_EQ(q->state, "answered");
  auto r = Ok(views_->GetIntercomMessage("icm-2"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->from_session, sb);
  EXPECT_EQ(r->reply_to, "icm-1");
  EXPECT_EQ(r->state, "delivered");
  EXPECT_TRUE(Ok(views_->QueuedIntercom(sa)).empty());
  EXPECT_EQ(views_->GetTicket(a)->stage, Stage::kBlocked);
  EXPECT_EQ(views_->GetTicket(b)->stage, Stage::kIdle);
  // Both are in the automatic group now.
  auto groups = Ok(views_->IntercomGroups());
  ASSERT_FALSE(groups.empty());
  EXPECT_EQ(groups[0].members, (std::vector<std::string>{sa, sb}));
}

TEST_F(IntercomWorkerTest, ASteerReachesARunningTurnAtItsNextModelStep) {
  auto [a, b] = TwoIdleSessions();
  const std::string sa = SessionOf(a), sb = SessionOf(b);
  Receive(Comment("c3", "alice", false, "please also fix docs/", 1));
  model_.PushFor(Needle(a), model_.ToolCalls({{"read_file", R"({"path":"README.md"})"}}));
  model_.PushFor(Needle(a), model_.ToolCalls({{"report", R"({"stage":"blocked","summary":"Heard the steer."})"}}));
  // While A's turn is waiting for its first answer, B interjects.
  SendOutcome steer;
  bool sent = false;
  model_.OnRequest([&](const json& body) {
    if (sent || body.dump().find(Needle(a)) == std::string::npos || body["messages"].size() < 4) return;
    sent = true;
    steer = intercom_->Send(sb, sa, "Stop: the typo is in docs/intro.md too", "steer");
  });
  RunTurns();

  ASSERT_TRUE(sent);
  ASSERT_TRUE(steer.ok) << steer.error;
  EXPECT_EQ(steer.applied, "steer");           // A was working: it interjects, no new turn
  EXPECT_EQ(steer.target_status, "working");
  EXPECT_EQ(Ok(views_->IntercomWakesSpent(sa)), 1);  // steer spends the wake budget too
  std::vector<json> ra = RequestsOf(a);
  ASSERT_EQ(ra.size(), 3u);  // first turn, read_file, report
  const json& msgs = ra[2]["messages"];
  EXPECT_EQ(msgs[msgs.size() - 2]["role"], "tool");  // the tool result first, then the mail
  EXPECT_THAT(msgs.back()["content"].get<std::string>(), HasSubstr("Stop: the typo is in docs/intro.md too"));
  EXPECT_THAT(msgs.back()["content"].get<std::string>(), HasSubstr("(id " + sb + ")"));
  EXPECT_EQ(Ok(views_->GetIntercomMessage(steer.message_id))->state, "delivered");
  // No turn was started for it: A had one Assignment for the follow-up.
  int turns = 0;
  for (const Assignment& x : Ok(views_->Assignments(a))) turns += x.cause == "follow_up";
  EXPECT_EQ(turns, 1);
  EXPECT_TRUE(model_.problems().empty()) << model_.problems()[0];
}

TEST_F(IntercomWorkerTest, AWakeStartsAnIdleSessionsTurnAndAPersonsWakeMayUseTheReservedSlot) {
  auto [a, b] = TwoIdleSessions();
  const std::string sa = SessionOf(a), sb = SessionOf(b);
  SendOutcome o = intercom_->Send(sa, sb, "Can you rerun the tests on your branch?", "wake");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.applied, "wake");
  EXPECT_EQ(Ok(views_->IntercomWakesSpent(sb)), 1);
  ASSERT_EQ(Ok(views_->Assignments(b)).back().cause, "intercom");
  model_.PushFor(Needle(b), model_.Text("Done."));
  RunTurns();
  std::vector<json> rb = RequestsOf(b);
  ASSERT_EQ(rb.size(), 2u);
  EXPECT_THAT(rb[1]["messages"].back()["content"].get<std::string>(), HasSubstr("Can you rerun the tests on your branch?"));
  EXPECT_TRUE(Ok(views_->QueuedIntercom(sb)).empty());

  // A person's wake from the panel: their Assignment is a person's (follow_up), and it refills the budget.
  SendOutcome p = intercom_->SendAsPerson("Tess (panel)", sb, "Thanks — now open the PR.", "wake");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.applied, "wake");
  EXPECT_EQ(Ok(views_->Assignments(b)).back().cause, "follow_up");
  EXPECT_EQ(Ok(views_->IntercomWakesSpent(sb)), 0);
  model_.PushFor(Needle(b), model_.Text("OK."));
  RunTurns();
  rb = RequestsOf(b);
  ASSERT_EQ(rb.size(), 3u);
  EXPECT_THAT(rb[2]["messages"].back()["content"].get<std::string>(),
              HasSubstr("from a person, Tess (panel), typed in the panel"));
  EXPECT_TRUE(model_.problems().empty()) << model_.problems()[0];
}

TEST_F(IntercomWorkerTest, AQueuedMessageSurvivesARestartAndReachesTheSessionWhenItResumes) {
  const TicketId a = AcceptedTicket("c1", 1);
  const TicketId b = AcceptedTicket("c2", 2);
  model_.PushFor(Needle(a), model_.ToolCalls({{"human_action", R"({"question":"README or docs/?"})"}}));
  model_.PushFor(Needle(b), model_.Text("Ready."));
  RunTurns();
  ASSERT_EQ(views_->GetTicket(a)->stage, Stage::kWaitingForPerson);
  const std::string sa = SessionOf(a), sb = SessionOf(b);
  EXPECT_EQ(host_->Find(sa)->status, SessionStatus::kWaitingForPerson);

  // A waits for alice: B's message cannot start a turn; it waits in A's inbox.
  SendOutcome o = intercom_->Send(sb, sa, "I already fixed docs/, only README is left", "wake");
  ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.applied, "queue");
  EXPECT_TRUE(Ok(views_->Assignments(a)).back().state == "ended");

  Restart();
  ASSERT_EQ(Ok(views_->QueuedIntercom(sa)).size(), 1u);
  // alice answers; A's next turn reads the answer and the message that waited.
  Receive(Comment("c3", "alice", false, "README please", 1));
  model_.PushFor(Needle(a), model_.ToolCalls({{"report", R"({"stage":"blocked","summary":"Only README then."})"}}));
  RunTurns();
  std::vector<json> ra = RequestsOf(a);
  ASSERT_EQ(ra.size(), 2u);
  const std::string input = ra[1]["messages"].back()["content"];
  EXPECT_THAT(input, HasSubstr("README please"));
  EXPECT_THAT(input, HasSubstr("I already fixed docs/, only README is left"));
  EXPECT_THAT(input, HasSubstr("(id " + sb + ")"));
  EXPECT_TRUE(Ok(views_->QueuedIntercom(sa)).empty());
  EXPECT_TRUE(model_.problems().empty()) << model_.problems()[0];
}

// Issue 18: a capped intercom_read of multi-byte text was cut by the intercom and again, by
// bytes, by the worker: the model got 16 020 characters of broken JSON without "ok" or "status"
// (and a cut inside a character could not even be stored). Now the result is cut once, as a
// whole, inside the JSON: valid, every field there, the newest text kept.
TEST_F(IntercomWorkerTest, ACappedReadOfChineseReachesTheModelOnceCutAsValidJsonWithItsFields) {
  const TicketId a = AcceptedTicket("c1", 1);
  const TicketId b = AcceptedTicket("c2", 2);
  std::string said;
  for (int i = 0; i < 20'000; ++i) said += "读";  // 60 000 bytes
  said += "最新结论";
  model_.PushFor(Needle(a), model_.Text("Ready."));
  model_.PushFor(Needle(b), model_.Text(said));
  RunTurns();
  const std::string sb = SessionOf(b);
  Receive(Comment("c3", "alice", false, "read what the other session found", 1));
  model_.PushFor(Needle(a), model_.ToolCalls({{"intercom_read", json{{"target_id", sb}}.dump()}}));
  model_.PushFor(Needle(a), model_.Text("Read it."));
  RunTurns();
  std::vector<json> ra = RequestsOf(a);
  ASSERT_EQ(ra.size(), 3u);
  const std::string tool = ToolResultText(ra[2]);
  EXPECT_LE(text::CountCodePoints(tool), 16'000u);
  json r = json::parse(tool, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << "not JSON: " << text::Cut(tool, 200);
  EXPECT_EQ(r["ok"], true);
  EXPECT_EQ(r["status"], "idle");
  EXPECT_EQ(r["target"], sb);
  const std::string got = r["text"];
  EXPECT_THAT(got, ::testing::EndsWith("最新结论")) << "the newest is kept";
  EXPECT_THAT(got, ::testing::StartsWith("\xE2\x80\xA6")) << "the cut is marked, once";
  EXPECT_GT(text::CountCodePoints(got), 15'900u) << "the budget goes to the text";
  EXPECT_TRUE(model_.problems().empty()) << model_.problems()[0];
}

TEST_F(IntercomWorkerTest, AnEndedTicketsSessionIsDormantReadableAndOnlyAPersonCanResumeItAfterRevalidation) {
  auto [a, b] = TwoIdleSessions();
  const std::string sa = SessionOf(a), sb = SessionOf(b);
  // Nine messages this minute: a resume must be charged once, as the tenth (the original's
  // wake-send charged the rate limit twice, resumed, and then refused the message).
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(intercom_->SendAsPerson("Tess (panel)", sb, "note " + std::to_string(i), "wake").ok);
  model_.PushFor(Needle(b), model_.Text("Noted."));
  RunTurns();
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(b, "result delivered").ok());
  EXPECT_EQ(host_->Find(sb)->status, SessionStatus::kDormant);

  // A relayed message from a session can never wake an ended Ticket.
  SendOutcome o = intercom_->Send(sa, sb, "wake up", "wake");
  EXPECT_FALSE(o.ok);
  EXPECT_THAT(o.error, HasSubstr("dormant"));
  EXPECT_THAT(o.error, HasSubstr("only a person's message can reopen"));
  EXPECT_EQ(Ok(views_->IntercomMessagesOf(sb, -1, 100)).size(), 9u);
  // Its transcript stays readable.
  json read = intercom_->Read(sa, sb, 80);
  EXPECT_EQ(read["ok"], true);
  EXPECT_EQ(read["status"], "dormant");
  EXPECT_THAT(read["text"].get<std::string>(), HasSubstr("[assistant] Noted."));

  // A person's message resumes it in place: alice is still allow-listed, the Source still there.
  SendOutcome p = intercom_->SendAsPerson("Tess (panel)", sb, "One more thing: update the changelog.", "wake");
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_TRUE(p.resumed);
  EXPECT_EQ(views_->GetTicket(b)->stage, Stage::kIdle);
  EXPECT_EQ(Ok(views_->Assignments(b)).back().cause, "resume");
  model_.PushFor(Needle(b), model_.Text("On it."));
  RunTurns();
  std::vector<json> rb = RequestsOf(b);
  ASSERT_EQ(rb.size(), 3u);
  EXPECT_THAT(rb[2]["messages"].back()["content"].get<std::string>(), HasSubstr("One more thing: update the changelog."));
  EXPECT_EQ(Ok(views_->IntercomMessagesOf(sb, -1, 100)).size(), 10u);

  // Once alice is no longer allow-listed, revalidation fails: exactly why, and nothing stored.
  ASSERT_TRUE(EngineTestPeer(*engine_).EndTicket(b, "done again").ok());
  Policy p2 = MakePolicy("observe", "people: [alice, bob]=>people: [bob]");
  ASSERT_TRUE(engine_->ApplyPolicy(p2, "test").ok());
  const auto before = Ok(views_->IntercomMessagesOf(sb, -1, 100)).size();
  SendOutcome refused = intercom_->SendAsPerson("Tess (panel)", sb, "and the README", "wake");
  EXPECT_FALSE(refused.ok);
  EXPECT_THAT(refused.error, HasSubstr("revalidation failed"));
  EXPECT_THAT(refused.error, HasSubstr("requester is no longer allow-listed"));
  EXPECT_EQ(Ok(views_->IntercomMessagesOf(sb, -1, 100)).size(), before);
  EXPECT_EQ(views_->GetTicket(b)->stage, Stage::kEnded);
  EXPECT_EQ(views_->GetMandate(b)->ended_as, "revoked");  // SPEC §4.5, as in the Ticket's own discussion
  EXPECT_EQ(views_->GetMandate(b)->ended_reason, "requester is no longer allow-listed");

  // A stopped Ticket's withdrawn Mandate can never resume, not even for a person.
  ASSERT_TRUE(engine_->StopTicket(a, "Tess (panel)").ok());
  SendOutcome stopped = intercom_->SendAsPerson("Tess (panel)", sa, "come back", "wake");
  EXPECT_FALSE(stopped.ok);
  EXPECT_THAT(stopped.error, HasSubstr("its Mandate was withdrawn"));
  EXPECT_TRUE(model_.problems().empty()) << model_.problems()[0];
}

TEST(WorkerSessionsTest, IdsAreSessionPrefixedAndTheWorkspaceIsTheDaemonsRepository) {
  EXPECT_EQ(exec::IntercomSessionId(12), "session-12");
  EXPECT_EQ(exec::ParseIntercomSessionId("session-12"), 12);
  for (const char* bad : {"12", "session-", "session-0", "session-012", "session-1x", "Session-1", "session--1"})
    EXPECT_FALSE(exec::ParseIntercomSessionId(bad).has_value()) << bad;
  Config c;
  EXPECT_EQ(app::DaemonWorkspace(c), "");  // unknown: the intercom fails closed
  c.github.repo = "acme/app";
  EXPECT_EQ(app::DaemonWorkspace(c), "acme/app");
  c.execution.git_remote = "/srv/git/app.git";
  EXPECT_EQ(app::DaemonWorkspace(c), "/srv/git/app.git");
}

TEST(WorkerSessionsTest, TheSurfaceKeepsWhatWasSaidAndDropsToolCalls) {
  auto ev = [](const char* kind, json body, TimeMs at) {
    SessionEvent e;
    e.kind = kind;
    e.body = std::move(body);
    e.at = at;
    return e;
  };
  std::vector<SessionEvent> events = {
      ev("input", {{"role", "user"}, {"content", "fix the typo"}}, 1),
      ev("assistant", {{"role", "assistant"}, {"content", ""}, {"tool_calls", {{{"id", "c1"}, {"name", "shell"}, {"arguments", "{}"}}}}}, 2),
      ev("tool_result", {{"role", "tool"}, {"content", "exit code 0"}, {"tool_call_id", "c1"}}, 3),
      ev("assistant", {{"role", "assistant"}, {"content", "Fixed it."}}, 4),
      ev("assistant", {{"role", "assistant"}, {"content", ""}, {"tool_calls", {{{"id", "c2"}, {"name", "report"},
                                                                                {"arguments", R"({"stage":"ready","summary":"Typo fixed."})"}}}}}, 5),
      ev("report", {{"stage", "blocked"}, {"summary", "No access."}}, 6),
  };
  std::vector<SurfaceEntry> s = exec::SurfaceOf(events);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].role, "user");
  EXPECT_EQ(s[0].text, "fix the typo");
  EXPECT_EQ(s[1].text, "Fixed it.");
  EXPECT_EQ(s[2].text, "[report: ready] Typo fixed.");
  EXPECT_EQ(s[3].text, "[report: blocked] No access.");
  EXPECT_EQ(s[3].at, 6);
}

// A refused call stays in the transcript as the model wrote it: a report with a number for its
// stage, arguments that are an array, calls that are not objects. Reading the surface (intercom_read,
// the panel's session view) used to throw on them; now such fields read as absent.
TEST(WorkerSessionsTest, TheSurfaceOfModelWrittenJunkNeverThrows) {
  auto ev = [](const char* kind, json body) {
    SessionEvent e;
    e.kind = kind;
    e.body = std::move(body);
    return e;
  };
  auto call = [](const char* name, const std::string& arguments) {
    return json{{"role", "assistant"}, {"content", nullptr},
                {"tool_calls", {{{"id", "c"}, {"name", name}, {"arguments", arguments}}}}};
  };
  std::vector<SessionEvent> events = {
      ev("assistant", call("report", R"({"stage": 5, "summary": ["a"]})")),
      ev("assistant", call("human_action", R"({"question": {"q": "哪个?"}})")),
      ev("assistant", call("report", R"([1, 2])")),
      ev("assistant", {{"content", 5}, {"tool_calls", "not a list"}}),
      ev("assistant", {{"tool_calls", {5, "x", nullptr}}}),
      ev("input", {{"surface", 7}, {"content", "ignored"}}),
      ev("report", {{"stage", nullptr}, {"summary", 3}}),
      ev("assistant", call("report", R"({"stage":"ready","summary":"好了 ✅"})")),
  };
  std::vector<SurfaceEntry> s;
  ASSERT_NO_THROW(s = exec::SurfaceOf(events));
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].text, "[report: ?] ");
  EXPECT_EQ(s[1].text, "[question] ");
  EXPECT_EQ(s[2].text, "[report: ?] ");
  EXPECT_EQ(s[3].text, "[report: ready] 好了 ✅");
}

}  // namespace
}  // namespace superagent::testing
