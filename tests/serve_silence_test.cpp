// Issue 34's silences, each through `superagent serve` as a team runs it — a real process, the
// real git remote, the loopback GitHub and model — ending with the requester hearing something
// true or a card on the panel naming it. (The first hour after `init` and the model that cannot
// be reached are in cli_serve_test.cpp.)
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "daemon_process.h"
#include "fake_chat_server.h"
#include "fake_github_server.h"
#include "run_binary.h"
#include "serve_fixture.h"
#include "superagent/text.h"

namespace superagent::testing {
namespace {

using nlohmann::json;

class ServeSilenceTest : public ServeTest {
 protected:
  std::vector<std::string> Said(FakeGitHub& github) {
    std::vector<std::string> out;
    auto lock = github.Lock();
    for (const json& c : github.comments) out.push_back(c["body"]);
    return out;
  }
  // The panel as the page calls it: the panel token, and for commands the origin and CSRF token.
  httplib::Client Panel() {
    httplib::Client http("127.0.0.1", port_);
    http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
    return http;
  }
  httplib::Headers CommandHeaders(httplib::Client& http) {
    const std::string csrf = json::parse(http.Get("/api/session")->body)["csrf_token"];
    return {{"X-CSRF-Token", csrf}, {"Origin", "http://127.0.0.1:" + std::to_string(port_)}};
  }
  // The blocked Ticket `id` on the Needs-you page, or null.
  json BlockedCard(httplib::Client& http, int id) {
    auto res = http.Get("/api/needs");
    if (!res || res->status != 200) return nullptr;
    const json needs = json::parse(res->body);  // named: a temporary would dangle in the loop
    for (const json& c : needs["decisions"])
      if (c["id"] == id) return c;
    return nullptr;
  }
};

// "A long Chinese acknowledgement means no reply at all", and "a Ticket stalls and nobody is
// told": the model's acknowledgement is over 320 words (each CJK character one; GitHub's limit is
// 200, a chat's 100), twice, and its first turn answers in plain text, without a report. The
// acknowledgement goes out cut at a word with an ellipsis; the turn's end is said to the requester in the daemon's words;
// the panel's blocked card names the cause and its Retry gives the Ticket a turn that reports.
TEST_F(ServeSilenceTest, ALongChineseAcknowledgementIsCutAndATurnWithoutAReportIsToldAndRetriedFromThePanel) {
  FakeGitHub github(SystemClock());
  FakeChatServer model("sk-THISISAMODELKEY0123456789");
  executor_ = "  executor: builtin\n";
  PrepareFixRepo(github, "", "llm:\n  base_url: " + model.base_url() +
                                 "\n  api_key_env: DEEPSEEK_API_KEY\n  assessment_model: deepseek-chat\n  max_retries: 0\n");
  std::string ack;
  while (text::CountWords(ack) < 320) ack += "我会修复README里的错字并检查其他拼写。";
  // Asked once for a shorter one, the model answers as long again: that one is cut, not refused.
  model.Push(model.Decide(FakeChatServer::DecideArgs("accept", {}, "please fix the typo in README", ack)));
  model.Push(model.Decide(FakeChatServer::DecideArgs("accept", {}, "please fix the typo in README", ack)));
  model.Push(model.Text("我看了一下 README，这个错字应该很好修。"));  // no report: the turn just ends
  auto env = GitHubEnv();
  env.emplace_back("DEEPSEEK_API_KEY", model.api_key());
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=", 1)) << d.log();
  const std::string body = MentionBody(github);
  ASSERT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();

  std::vector<std::string> said = Said(github);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_NE(said[0].find("我会修复README里的错字"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("\u2026"), std::string::npos) << "cut, and marked so: " << said[0];
  EXPECT_TRUE(text::IsValid(said[0])) << "cut inside a character";
  EXPECT_NE(d.log().find("acknowledgement cut words="), std::string::npos) << d.log();
  EXPECT_EQ(model.pending_replies(), 0u) << "the model was asked for a shorter one once, no more";
  EXPECT_NE(said[1].find("My last turn on this ended without a result."), std::string::npos) << said[1];
  EXPECT_NE(said[1].find("Reply here and I will try again"), std::string::npos) << said[1];

  httplib::Client http = Panel();
  const json card = BlockedCard(http, 1);
  ASSERT_TRUE(card.is_object()) << http.Get("/api/needs")->body;
  EXPECT_EQ(card["stage_reason"], "turn ended without a report") << card.dump(2);

  // Retry, as the card's button sends it; the turn it starts reports.
  model.Push(model.ToolCalls({{"report", R"({"stage":"ready","summary":"看过了：README 里没有要改的错字。"})"}}));
  EXPECT_EQ(http.Post("/api/tickets/1/retry", httplib::Headers{}, "{}", "application/json")->status, 403);
  auto retried = http.Post("/api/tickets/1/retry", CommandHeaders(http), json{{"name", "Tess"}}.dump(), "application/json");
  ASSERT_TRUE(retried);
  ASSERT_EQ(retried->status, 200) << retried->body;
  ASSERT_TRUE(d.WaitForCount("github message posted", 3)) << d.log();
  said = Said(github);
  EXPECT_NE(said.back().find("看过了"), std::string::npos) << said.back();
  EXPECT_TRUE(BlockedCard(http, 1).is_null()) << "the card is gone once the Ticket is no longer blocked";
  EXPECT_TRUE(model.problems().empty()) << model.problems().front();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
}

// "A failing command executor is posted raw" and "a blocked card hides its cause": the team's
// command fails with stderr naming a host path. The discussion hears the daemon's words; the
// card's why carries the cause, stderr included.
TEST_F(ServeSilenceTest, AFailingCommandIsToldInTheDaemonsWordsAndItsCardCarriesTheCause) {
  FakeGitHub github(SystemClock());
  PrepareFixRepo(github, "cat > /dev/null\necho \"$PWD/.cache/tool: permission denied (uid $(id -u))\" >&2\nexit 2\n");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, GitHubEnv());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=", 1)) << d.log();
  const std::string body = MentionBody(github);
  ASSERT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();

  const std::vector<std::string> said = Said(github);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_NE(said[1].find("The command exited with code 2."), std::string::npos) << said[1];
  EXPECT_NE(said[1].find("Reply here and I will try again"), std::string::npos) << said[1];
  EXPECT_EQ(said[1].find("permission denied"), std::string::npos) << "raw stderr reached the discussion: " << said[1];
  EXPECT_EQ(said[1].find(dir_.string()), std::string::npos) << "a host path reached the discussion: " << said[1];

  httplib::Client http = Panel();
  const json card = BlockedCard(http, 1);
  ASSERT_TRUE(card.is_object()) << http.Get("/api/needs")->body;
  const std::string why = card["stage_reason"];
  EXPECT_NE(why.find("reported blocked: The command exited with code 2."), std::string::npos) << why;
  EXPECT_NE(why.find(".cache/tool: permission denied"), std::string::npos) << "the card hides the cause: " << why;
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
}

// "A bare approval of the Ticket's PR starts a new turn and posts another result": an approval
// with no words, delivered by webhook on the Ticket's own pull request, is context for the
// Ticket — no turn, no message, no commit making the approval stale.
TEST_F(ServeSilenceTest, ABareApprovalOfTheTicketsPullRequestStartsNoTurnAndSaysNothing) {
  FakeGitHub github(SystemClock());
  const serve_fs::path origin =
      PrepareFixRepo(github, "cat > task.json\nsed -i 's/teh typo/the typo/' README.md\n"
                             "echo '{\"stage\":\"ready\",\"summary\":\"Fixed the typo in README.\",\"question\":null,"
                             "\"pr\":{\"title\":\"Fix the typo\",\"body\":\"Fixes #1.\"}}'\n");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, GitHubEnv());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=", 1)) << d.log();
  const std::string body = MentionBody(github);
  ASSERT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(d.WaitForCount("pull request opened", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  const std::string branch = TicketOneBranch(github);
  auto head = [&] {
    RunResult r = RunProgram("/usr/bin/git", {"-C", origin.string(), "rev-parse", branch});
    return r.out;
  };
  const std::string head_before = head();

  json review = WebhookExample("pull_request_review", "submitted");
  {
    auto lock = github.Lock();
    const auto& [number, pr] = *github.pulls.begin();
    review["pull_request"]["number"] = number;
    review["pull_request"]["head"]["ref"] = pr["head"]["ref"];
    review["pull_request"]["head"]["sha"] = pr["head"]["sha"];
    review["review"]["pull_request_url"] = "https://api.github.com/repos/" + github.repo + "/pulls/" + std::to_string(number);
    review["review"]["commit_id"] = pr["head"]["sha"];
  }
  review["review"]["state"] = "approved";
  review["review"]["body"] = nullptr;
  review["review"]["user"]["login"] = "Codertocat";
  review["review"]["id"] = 80001;
  ASSERT_EQ(DeliverEvent("pull_request_review", "rv-1", review), 200);
  ASSERT_TRUE(d.WaitForLine("trigger stored id=github:review:80001")) << d.log();
  std::smatch id;
  const std::string log = d.log();
  ASSERT_TRUE(std::regex_search(log, id, std::regex("trigger stored id=(github:review:80001\\S*)"))) << log;
  // Intake decided in the delivery's own transaction: context for the Ticket, no turn owed.
  RunResult story = RunBinary({"explain", id[1].str(), "--config", Config()});
  EXPECT_NE(story.out.find("It reached Ticket 1 as a message on its discussion, as context: it started no turn"),
            std::string::npos)
      << story.out << story.err << d.log();

  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  std::size_t turns = 0;
  for (std::size_t at = d.log().find("assignment started"); at != std::string::npos; at = d.log().find("assignment started", at + 1))
    ++turns;
  EXPECT_EQ(turns, 1u) << "the approval started a turn:\n" << d.log();
  EXPECT_EQ(head(), head_before) << "a commit made the approval stale";
}

}  // namespace
}  // namespace superagent::testing
