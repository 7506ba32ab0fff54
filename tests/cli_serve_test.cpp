// `superagent serve` as a person runs it: a real process, a real SQLite file, the real HTTP
// server on loopback, signals, and the log lines a person tails.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "daemon_process.h"
#include "process_running.h"
#include "serve_fixture.h"
#include "fake_coding_model.h"
#include "fake_feishu_server.h"
#include "fake_feishu_ws.h"
#include "fake_gemini_model.h"
#include "fake_github_server.h"
#include "fake_responses_model.h"
#include "github_app_keys.h"
#include "run_binary.h"
#include "superagent/json_read.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_F(ServeTest, RunsJudgesExplainsReloadsAndStopsCleanly) {
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()},
                  {{"GITHUB_TOKEN", "ghp_THISISASECRETVALUE0123456789"}});
  ASSERT_TRUE(d.started());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  EXPECT_NE(d.log().find("policy_version=1"), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("mode=observe"), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("sources github=\"off (github.repos is empty)\" feishu=\"off (feishu.enabled is false)\" panel=on"),
            std::string::npos)
      << d.log();
  EXPECT_NE(d.log().find("no Source is on: only the panel reaches the daemon"), std::string::npos) << d.log();

  httplib::Client http("127.0.0.1", port_);

  http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto page = http.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<title>superagent</title>"), std::string::npos);
  EXPECT_EQ(http.Get("/no-such-file")->status, 404);

  // A person's request arrives (as a Source would hand it over) and the daemon judges it.
  const std::string trigger = R"({"id":"github:comment:1@2026-12-02T10:00:00Z","source":"github","scope":"comments",
    "actor":"alice","human":true,"addressed":true,"text":"@agent please fix the typo in README","at":"2026-12-02T10:00:00Z",
    "threads":["github:codertocat/hello-world:issue:7"],"channel":"github:codertocat/hello-world:issue:7","meta":{"html_url":"https://github.com/o/r/issues/7#issuecomment-1"}})";
  RunOptions in;
  in.stdin_text = trigger;
  RunResult r = RunProgram(SUPERAGENT_BINARY, {"receive", "--config", Config(), "--trigger", "-"}, in);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["outcome"], "stored");
  ASSERT_TRUE(d.WaitForLine("outcome=accept")) << d.log();

  RunResult again = RunProgram(SUPERAGENT_BINARY, {"receive", "--config", Config(), "--trigger", "-"}, in);
  EXPECT_EQ(nlohmann::json::parse(again.out)["outcome"], "duplicate");

  RunResult story = RunProgram(SUPERAGENT_BINARY,
                               {"explain", "https://github.com/o/r/issues/7#issuecomment-1", "--config", Config()});
  ASSERT_EQ(story.exit_code, 0) << story.err;
  // In a person's words first (issue 24), then the record it was told from.
  EXPECT_EQ(story.out.rfind("github:comment:1@2026-12-02T10:00:00Z\n"
                            "  alice wrote on GitHub issue codertocat/hello-world#7, addressing the agent, at 2026-12-02T10:00:00.000Z.\n"
                            "  alice is in sources.github.people and addressed the agent: an explicit request.\n"
                            "  The Eval accepted it (policy version 1).\n",
                            0),
            0u)
      << story.out;
  EXPECT_NE(story.out.find("  The agent wrote back: the acknowledgement (pending)."), std::string::npos) << story.out;
  EXPECT_NE(story.out.find("    mandate    explicit via allow_listed_addressed, from alice"), std::string::npos) << story.out;
  // Issue 34: the issue's own URL (as a person copies it, here with a trailing slash) tells the
  // story of its mention, and says which message that is.
  RunResult by_issue =
      RunProgram(SUPERAGENT_BINARY, {"explain", "https://github.com/o/r/issues/7/", "--config", Config()});
  ASSERT_EQ(by_issue.exit_code, 0) << by_issue.err;
  EXPECT_EQ(by_issue.out.rfind("github:comment:1@2026-12-02T10:00:00Z\n"
                               "  (https://github.com/o/r/issues/7/ names no message of its own here: this is "
                               "https://github.com/o/r/issues/7#issuecomment-1, the discussion's newest message that "
                               "addresses the agent. Explain another by its own URL.)\n"
                               "  alice wrote on GitHub issue codertocat/hello-world#7",
                               0),
            0u)
      << by_issue.out;
  auto api = http.Get("/api/explain?q=github:comment:1@2026-12-02T10:00:00Z");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 200);
  EXPECT_EQ(nlohmann::json::parse(api->body)["ticket_created"]["mandate"]["sender"], "alice");
  EXPECT_EQ(http.Get("/api/explain?q=nope")->status, 404);

  // Policy edits: a valid one becomes version 2 on SIGHUP; an invalid one is refused loudly.
  Write("policy.yaml", std::string(kPolicy).replace(0, 13, "mode: auto"));
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLine("policy version=2")) << d.log();
  Write("policy.yaml", "mode: sometimes\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLine("policy reload failed")) << d.log();
  ASSERT_TRUE(d.WaitForLine("policy.yaml:1:")) << d.log();
  auto status = http.Get("/api/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(nlohmann::json::parse(status->body)["policy_version"], 2);
  EXPECT_EQ(nlohmann::json::parse(status->body)["mode"], "auto");

  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_NE(d.log().find("stopped"), std::string::npos);
  EXPECT_EQ(d.log().find("ghp_THISISASECRETVALUE"), std::string::npos) << "a secret reached the log";
}

TEST_F(ServeTest, BadConfigStartsNothing) {
  Write("superagent.yaml", "data_dir: data\npanel:\n  listen: nowhere\n");
  RunResult r = RunProgram(SUPERAGENT_BINARY, {"serve", "--config", Config()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("superagent.yaml:3:"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "data")) << "nothing may be created on bad input";
}

TEST_F(ServeTest, BadPolicyStartsNothing) {
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    scopes:\n      comments: { others_addressed: maybe }\n");
  RunResult r = RunProgram(SUPERAGENT_BINARY, {"serve", "--config", Config()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("policy.yaml:5:"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "data" / "superagent.db"));
}

TEST_F(ServeTest, ExplainAndReceiveWithoutADatabaseSayWhatToDo) {
  RunResult r = RunProgram(SUPERAGENT_BINARY, {"explain", "x", "--config", Config()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no database at"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "data" / "superagent.db"));
}

// The whole path as the daemon runs it: a signed webhook for a mention becomes exactly one
// acknowledgement; the Ticket gets a workspace from the git remote, the team's command executor
// fixes the file, the daemon pushes the branch and opens the PR, and the result is posted after
// the acknowledgement. A restart that sees the same delivery again (GitHub's "redeliver" button)
// answers nothing twice and opens no second PR.
TEST_F(ServeTest, GitHubMentionByWebhookIsWorkedOnAndAnsweredOnceAcrossARestart) {
  FakeGitHub github(SystemClock());
  const fs::path origin =
      PrepareFixRepo(github, "cat > task.json\nsed -i 's/teh typo/the typo/' README.md\n"
                             "echo '{\"stage\":\"ready\",\"summary\":\"Fixed the typo in README.\",\"question\":null,"
                             "\"pr\":{\"title\":\"Fix the typo\",\"body\":\"Fixes #1.\"}}'\n");
  const auto env = GitHubEnv();
  const std::string body = MentionBody(github);
  auto deliver = [&](const std::string& signature) { return Deliver(body, signature); };
  auto bodies = [&] {
    std::vector<std::string> out;
    auto lock = github.Lock();
    for (const json& c : github.comments) out.push_back(c["body"]);
    return out;
  };
  const std::string comments = github.repo_path() + "/issues/1/comments";
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    // Until its first round learns the login a delivery is accepted with 202 and taken later;
    // here it is taken within the request.
    ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();
    EXPECT_EQ(deliver("sha256=0000"), 401);
    EXPECT_EQ(deliver(github::WebhookSignature("hook-secret", body)), 200);
    ASSERT_TRUE(d.WaitForCount("worker turn ended", 1)) << d.log();
    ASSERT_TRUE(d.WaitForCount("pull request opened", 1)) << d.log();
    ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    EXPECT_NE(d.log().find("github identity login=superagent-bot"), std::string::npos) << d.log();
    // The worker ran sandboxed (issue 19), and its Ticket was still pushed and got its PR.
    EXPECT_NE(d.log().find("sandbox mode=bwrap"), std::string::npos) << d.log();
    EXPECT_EQ(d.log().find("ghp_THISISASECRETVALUE"), std::string::npos) << "a secret reached the log";
    EXPECT_EQ(d.log().find("hook-secret"), std::string::npos) << "a secret reached the log";
  }
  ASSERT_EQ(github.Count("POST", comments), 2);
  auto said = bodies();
  EXPECT_NE(said[0].find("fix the typo"), std::string::npos) << said[0];  // the acknowledgement first
  EXPECT_NE(said[1].find("Fixed the typo in README."), std::string::npos) << said[1];
  ASSERT_EQ(github.pulls.size(), 1u);
  const std::string branch = TicketOneBranch(github);
  std::string pushed;
  {
    FILE* p = ::popen(("git -C " + origin.string() + " show " + branch + ":README.md").c_str(), "r");
    char buf[256];
    while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) pushed += buf;
    if (p != nullptr) ::pclose(p);
  }
  EXPECT_EQ(pushed, "There is the typo.\n");
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    EXPECT_EQ(deliver(github::WebhookSignature("hook-secret", body)), 200);
    ASSERT_TRUE(d.WaitForLine("outcome=duplicate")) << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    EXPECT_EQ(d.log().find("worker turn"), std::string::npos) << "a finished Ticket ran again:\n" << d.log();
  }
  EXPECT_EQ(github.Count("POST", comments), 2);
  EXPECT_EQ(github.pulls.size(), 1u);
}

// Issue 33, item 3: a worker that prints the secrets it can reach (here a variable execution.env
// passes it, as a coding CLI's key is) and a token it found publishes only the marker — in the
// result comment, the PR's title and body, the panel's transcript and Ticket views, and the log —
// and the daemon says it did (a warning line, /metrics, a Needs-you card).
TEST_F(ServeTest, AWorkerThatPrintsSecretsPublishesOnlyTheMarker) {
  FakeGitHub github(SystemClock());
  const std::string secret = "merge-token-value-0123456789";  // no token shape: only a known value catches it
  const std::string found = "gh" "p_aB3dE5gH7jK9mN1pQ2sT4vW6yZ8aB3dE5gH7j";  // a shape the daemon never knew
  github_extra_ = "  merge_token_env: SUPERAGENT_TEST_MERGE_TOKEN\n";
  PrepareFixRepo(github,
                 "cat > task.json\nsed -i 's/teh typo/the typo/' README.md\n"
                 "G=gh; G=\"${G}p_aB3dE5gH7jK9mN1pQ2sT4vW6yZ8aB3dE5gH7j\"\n"
                 "env | grep SUPERAGENT_TEST >&2; echo \"found $G\" >&2\n"
                 "echo \"{\\\"stage\\\":\\\"ready\\\",\\\"summary\\\":\\\"Fixed. env: $SUPERAGENT_TEST_MERGE_TOKEN and $G 中文🙂\\\","
                 "\\\"question\\\":null,\\\"pr\\\":{\\\"title\\\":\\\"Fix the typo $G\\\",\\\"body\\\":\\\"Fixes #1. "
                 "$SUPERAGENT_TEST_MERGE_TOKEN\\\"}}\"\n",
                 "  env: [SUPERAGENT_TEST_MERGE_TOKEN]\n");
  auto env = GitHubEnv();
  env.emplace_back("SUPERAGENT_TEST_MERGE_TOKEN", secret);
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();
  const std::string body = MentionBody(github);
  ASSERT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(d.WaitForCount("pull request opened", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();

  // GitHub received the marker, never a value: every request body the fake saw.
  bool marked = false;
  for (const auto& l : github.log()) {
    EXPECT_EQ(l.body.find(secret), std::string::npos) << l.method << " " << l.target << ": " << l.body;
    EXPECT_EQ(l.body.find(found), std::string::npos) << l.method << " " << l.target << ": " << l.body;
    marked = marked || l.body.find("[REDACTED]") != std::string::npos;
  }
  EXPECT_TRUE(marked) << "the worker's report was not published at all";
  {
    auto lock = github.Lock();
    ASSERT_EQ(github.pulls.size(), 1u);
    const json& pr = github.pulls.begin()->second;
    EXPECT_NE(pr["title"].get<std::string>().find("Fix the typo [REDACTED]"), std::string::npos) << pr["title"];
    EXPECT_NE(pr["body"].get<std::string>().find("Fixes #1. [REDACTED]"), std::string::npos) << pr["body"];
    ASSERT_EQ(github.comments.size(), 2u);
    const std::string result = github.comments[1]["body"];
    EXPECT_NE(result.find("Fixed. env: [REDACTED] and [REDACTED] 中文🙂"), std::string::npos) << result;
  }

  // The panel: the Ticket (its transcript holds the command's stderr and its report), the session,
  // Needs-you's card, /metrics.
  httplib::Client panel("127.0.0.1", port_);
  panel.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  for (const char* route : {"/api/tickets/1", "/api/intercom/sessions/session-1", "/api/tickets"}) {
    auto r = panel.Get(route);
    ASSERT_TRUE(r) << route;
    ASSERT_EQ(r->status, 200) << route << ": " << r->body;
    EXPECT_EQ(r->body.find(secret), std::string::npos) << route << ": " << r->body;
    EXPECT_EQ(r->body.find(found), std::string::npos) << route << ": " << r->body;
    EXPECT_FALSE(json::parse(r->body, nullptr, false).is_discarded()) << route << " answered JSON";
  }
  auto ticket = panel.Get("/api/tickets/1");
  ASSERT_TRUE(ticket);
  EXPECT_NE(ticket->body.find("[REDACTED]"), std::string::npos) << "the transcript was not shown: " << ticket->body;
  auto needs = panel.Get("/api/needs");
  ASSERT_TRUE(needs);
  const json card = json::parse(needs->body)["secrets"];
  ASSERT_TRUE(card.is_object()) << needs->body;
  EXPECT_GE(card["count"].get<int>(), 2);
  EXPECT_EQ(needs->body.find(secret), std::string::npos);
  auto metrics = panel.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("superagent_secrets_redacted_total{path=\"outbox\"}"), std::string::npos) << metrics->body;
  EXPECT_EQ(metrics->body.find("superagent_secrets_redacted_total{path=\"outbox\"} 0"), std::string::npos)
      << metrics->body;

  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  // The log: each occasion said where, never what.
  EXPECT_EQ(d.log().find(secret), std::string::npos) << d.log();
  EXPECT_EQ(d.log().find(found), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("secret redacted path=outbox where=\"open_pull_request"), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("secret redacted path=outbox where=\"post_message"), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("secret redacted path=panel where=\"GET /api/tickets/1\""), std::string::npos) << d.log();
}

// Issue 22, run as a team would: the Ticket's result links its PR and the PR links the issue; CI
// failing on the PR's branch (a webhook) gives the worker one more turn; the PR merged (a webhook)
// ends the Ticket with that reason, and nothing more is said.
TEST_F(ServeTest, ATicketFollowsItsPullRequestThroughFailingCiUntilItIsMerged) {
  FakeGitHub github(SystemClock());
  PrepareFixRepo(github, "cat > task.json\nsed -i 's/teh typo/the typo/' README.md\n"
                         "echo '{\"stage\":\"ready\",\"summary\":\"Fixed the typo in README.\",\"question\":null,"
                         "\"pr\":{\"title\":\"Fix the typo\",\"body\":\"修正拼写 ✍️\"}}'\n");
  const std::string comments = github.repo_path() + "/issues/1/comments";
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, GitHubEnv());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();
  ASSERT_EQ(Deliver(MentionBody(github), github::WebhookSignature("hook-secret", MentionBody(github))), 200);
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=1 number=100", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  std::string result, pr_body;
  {
    auto lock = github.Lock();
    ASSERT_EQ(github.comments.size(), 2u);
    result = github.comments[1]["body"];
    pr_body = github.pulls.at(100)["body"];
  }
  EXPECT_NE(result.find("Fixed the typo in README.\n\nPull request: https://github.com/" + github.repo + "/pull/100"),
            std::string::npos) << result;
  EXPECT_NE(pr_body.find("修正拼写 ✍️\n\nRequested in https://github.com/" + github.repo + "/issues/1#issuecomment-492700400"),
            std::string::npos) << pr_body;

  // CI fails on the PR's branch: the worker gets a turn to fix it.
  ASSERT_EQ(DeliverEvent("check_run", "ci-1", FailedCheckOnTicketOne("0123456789abcdef0123456789abcdef01234567", TicketOneBranch(github))), 200);
  ASSERT_TRUE(d.WaitForCount("ci failed on a ticket's pull request ticket=1 number=100 attempt=1/2", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("worker turn ended", 2)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 3)) << d.log();

  // A person merges it: the Ticket ends, and nothing more is said.
  json merged = WebhookExample("pull_request", "closed");
  merged["number"] = 100;
  merged["pull_request"]["number"] = 100;
  merged["pull_request"]["merged"] = true;
  merged["pull_request"]["merged_by"] = merged["sender"];
  merged["pull_request"]["closed_at"] = "2026-12-05T06:10:00Z";
  merged["pull_request"]["head"]["ref"] = TicketOneBranch(github);
  ASSERT_EQ(DeliverEvent("pull_request", "merge-1", merged), 200);
  const std::string merger = merged["sender"]["login"];
  ASSERT_TRUE(d.WaitForLine("ticket ended id=1 reason=\"pull request #100 merged by " + merger + "\"")) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_EQ(github.Count("POST", comments), 3) << "the acknowledgement and two results; the merge says nothing";
  EXPECT_EQ(github.pulls.size(), 1u);
}

// Issue 25, as a team runs it: the daemon signs in as a GitHub App (no personal token anywhere),
// on github.com's paths and under a GitHub Enterprise Server's /api/v3. A mention by webhook is
// acknowledged once by team-agent[bot]; the work's PR gets a check run that follows the Ticket:
// ready, at work again when CI fails on it, ready again — linking the panel's Ticket.
class ServeAppTest : public ServeTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(ServeAppTest, AMentionIsAnsweredByTheAppAndItsPullRequestShowsTheTicketsStage) {
  FakeGitHub github(SystemClock());
  TestKey key;
  github.prefix = GetParam();
  github.UseApp(key.key);
  github_extra_ = "  auth: app\n  app_id: \"12345\"\n";
  panel_extra_ = "  public_url: https://agent.example.com/\n";
  PrepareFixRepo(github, "cat > task.json\nsed -i 's/teh typo/the typo/' README.md\n"
                         "echo '{\"stage\":\"ready\",\"summary\":\"Fixed the typo in README.\",\"question\":null,"
                         "\"pr\":{\"title\":\"Fix the typo\",\"body\":\"Fixes #1.\"}}'\n");
  const std::vector<std::pair<std::string, std::string>> env = {{"GITHUB_APP_PRIVATE_KEY", key.pem},
                                                                {"GITHUB_WEBHOOK_SECRET", "hook-secret"}};
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"] = github.MakeComment(492700400, 1, "Codertocat", "@team-agent please fix the typo in README",
                                          SystemClock()->NowMs());
  const std::string comments = GetParam() + github.repo_path() + "/issues/1/comments";
  auto check_runs = [&] {
    std::vector<json> out;
    auto lock = github.Lock();
    for (const json& r : github.check_runs)
      if (r.value("name", "") == "superagent") out.push_back(r);
    return out;
  };
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=team-agent[bot]", 1)) << d.log();
  ASSERT_EQ(DeliverEvent("issue_comment", "d-1", payload), 200);
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=1", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github check run shown ticket=1", 1)) << d.log();
  auto runs = check_runs();
  ASSERT_EQ(runs.size(), 1u);
  const std::int64_t number = github.pulls.begin()->first;
  EXPECT_EQ(runs[0]["head_sha"], FakeGitHub::HeadSha(number));
  EXPECT_EQ(runs[0]["conclusion"], "success");
  EXPECT_EQ(runs[0]["output"]["title"], "Ticket #1 is ready for review");
  EXPECT_EQ(runs[0]["details_url"], "https://agent.example.com/#ticket-1");

  // CI fails on the PR's head: the Ticket works again (a check run in progress), then is ready.
  ASSERT_EQ(DeliverEvent("check_run", "ci-1", FailedCheckOnTicketOne(FakeGitHub::HeadSha(number), TicketOneBranch(github))), 200);
  ASSERT_TRUE(d.WaitForCount("worker turn ended", 2)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 3)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github check run shown ticket=1", 3)) << d.log();
  // Its own check run, delivered back by GitHub's webhook, is not CI news.
  json own = WebhookExample("check_run", "completed");
  own["check_run"] = check_runs().back();
  own["check_run"]["completed_at"] = "2026-12-05T06:20:00Z";
  own["check_run"]["check_suite"] = {{"head_branch", TicketOneBranch(github)}};
  EXPECT_EQ(DeliverEvent("check_run", "own-1", own), 202);
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();

  runs = check_runs();
  ASSERT_EQ(runs.size(), 2u) << "a finished check run is not reopened: the new turn has its own";
  EXPECT_EQ(runs[1]["conclusion"], "success");
  EXPECT_EQ(runs[1]["output"]["title"], "Ticket #1 is ready for review");
  EXPECT_EQ(github.Count("POST", comments), 3) << "the acknowledgement and two results, each once";
  {
    auto lock = github.Lock();
    for (const json& c : github.comments) EXPECT_EQ(c["user"]["login"], "team-agent[bot]");
  }
  EXPECT_EQ(github.Count("GET", GetParam() + "/notifications"), 0);
  EXPECT_EQ(github.Count("GET", GetParam() + "/user"), 0);
  for (const auto& l : github.log()) EXPECT_EQ(l.target.rfind(GetParam() + "/", 0), 0u) << l.target;
  EXPECT_EQ(d.log().find("ghs_installation"), std::string::npos) << "a token reached the log";
  EXPECT_EQ(d.log().find("PRIVATE KEY"), std::string::npos) << "the key reached the log";
}

INSTANTIATE_TEST_SUITE_P(ApiUrls, ServeAppTest, ::testing::Values("", "/api/v3"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param.empty() ? "github_com" : "ghes"; });

// Issue 23 (SPEC §12: one Ticket linked across a GitHub discussion and a Feishu thread), as a team
// runs it: a person asks in a Feishu topic; the work's PR opens on GitHub and says only that it
// was asked for in a Feishu chat; the result is posted once in the topic, with the PR's link; a
// review comment on the PR reaches the same Ticket, whose next result goes to the topic again.
TEST_F(ServeTest, WorkAskedForInAFeishuTopicGetsItsPullRequestOnGitHubAndStaysOneTicket) {
  FakeGitHub github(SystemClock());
  // The long connection's fake outlives the REST fake, whose handler asks it for the endpoint.
  FakeFeishuWs ws;
  FakeFeishu feishu(SystemClock());
  feishu.topic_mode_chats.insert("oc_team");
  feishu.ws_endpoint_fn = [&ws] { return ws.EndpointAnswer(); };
  PrepareFixRepo(github,
                 "cat > task.json\nsed -i 's/teh typo/the typo/' README.md\n"
                 "echo '{\"stage\":\"ready\",\"summary\":\"Fixed the typo in README.\",\"question\":null,"
                 "\"pr\":{\"title\":\"Fix the typo\",\"body\":\"Fixes the typo.\"}}'\n",
                 "feishu:\n  enabled: true\n  api_url: " + feishu.url() +
                     "\n  app_id_env: SA_TEST_FEISHU_APP_ID\n  app_secret_env: SA_TEST_FEISHU_APP_SECRET\n"
                     "  realtime: long_connection\n  poll_interval_seconds: 3600\n");
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n  feishu:\n    people: [ou_alice]\n"
                       "    scopes:\n      \"chat:oc_team\": { receive_all: false }\n");
  auto env = GitHubEnv();
  env.emplace_back("SA_TEST_FEISHU_APP_ID", feishu.app_id);
  env.emplace_back("SA_TEST_FEISHU_APP_SECRET", feishu.app_secret);
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(ws.WaitFor([&] { return ws.connections == 1; })) << d.log();
  ASSERT_TRUE(d.WaitForCount("feishu identity open_id=", 1)) << d.log();

  const json ask = FakeFeishu::Item("om_ask", "oc_team", "ou_alice", "@_user_1 请修复 README 里的错别字 🙏",
                                    SystemClock()->NowMs(), "omt_ask", "",
                                    json::array({FakeFeishu::HistoryMention("@_user_1", feishu.bot_open_id, "superagent")}));
  {
    auto lock = feishu.Lock();
    feishu.messages.push_back(ask);
  }
  ws.SendEvent(FakeFeishu::EventFor(ask, "group", "ev-ask"), 1);
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=1 number=100", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("feishu message sent", 2)) << d.log();
  std::string pr_body;
  {
    auto lock = github.Lock();
    pr_body = github.pulls.at(100)["body"];
    EXPECT_TRUE(github.comments.empty()) << "nothing of this work is said on GitHub but the PR";
  }
  EXPECT_NE(pr_body.find("Fixes the typo.\n\nRequested in a Feishu chat."), std::string::npos) << pr_body;
  EXPECT_EQ(pr_body.find("错别字"), std::string::npos) << "the chat's words stay in the chat";
  auto results = [&] {
    std::vector<json> out;
    auto lock = feishu.Lock();
    for (const json& m : feishu.sent) {
      const std::string text = json::parse(m["body"]["content"].get<std::string>()).value("text", "");
      if (text.find("Pull request: ") != std::string::npos) out.push_back(m);
    }
    return out;
  };
  auto first = results();
  ASSERT_EQ(first.size(), 1u) << "the result, once";
  EXPECT_EQ(first[0]["thread_id"], "omt_ask") << "in the topic where it was asked";
  EXPECT_NE(first[0]["body"]["content"].get<std::string>().find("https://github.com/" + github.repo + "/pull/100"),
            std::string::npos);

  // A reviewer comments on the PR: the same Ticket receives it and answers in the topic.
  json review = WebhookExample("pull_request_review_comment", "created", 1);
  review["comment"]["id"] = 88001;
  review["comment"]["user"]["login"] = "Codertocat";
  review["comment"]["body"] = "Please also fix the second typo.";
  // Written now, after the request (an older message would only be context for a later turn).
  review["comment"]["created_at"] = review["comment"]["updated_at"] = FormatTime(SystemClock()->NowMs());
  review["comment"]["pull_request_url"] = "https://api.github.com/repos/" + github.repo + "/pulls/100";
  review["comment"]["html_url"] = "https://github.com/" + github.repo + "/pull/100#discussion_r88001";
  review["pull_request"]["number"] = 100;
  ASSERT_EQ(DeliverEvent("pull_request_review_comment", "review-1", review), 200);
  ASSERT_TRUE(d.WaitForCount("worker turn ended", 2)) << d.log();
  ASSERT_TRUE(d.WaitForCount("feishu message sent", 3)) << d.log();
  json story = json::parse(RunProgram(SUPERAGENT_BINARY, {"explain", "https://github.com/" + github.repo +
                                                                         "/pull/100#discussion_r88001", "--config",
                                                                     Config(), "--json"})
                               .out,
                           nullptr, false);
  ASSERT_TRUE(story.is_object()) << d.log();
  ASSERT_EQ(story["tickets_reached"].size(), 1u) << story.dump();
  EXPECT_EQ(story["tickets_reached"][0]["ticket"], 1);
  EXPECT_EQ(results().size(), 2u) << "the next result goes to the topic too";
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  auto lock = github.Lock();
  EXPECT_EQ(github.pulls.size(), 1u);
  EXPECT_TRUE(github.comments.empty());
}

// Issue 18, run as a person runs the daemon: a worker command that prints 1000 Chinese
// characters and a byte that is not UTF-8, then fails with Chinese on stderr, used to abort the
// daemon (a byte cut inside a character; json type_error.316 uncaught in the turn thread) — and
// again at every start, since the interrupted turn resumed. Now the turn ends blocked, the text
// reaches the store, the panel and GitHub, and the daemon keeps serving, before and after a restart.
// Issue 20: a turn's end — its PR action, its result and its stage — is one transaction, so a
// daemon killed at any point of the work either finished all of it (nothing is redone) or none
// (the restarted turn posts the one result). Six SIGKILLs land at random but reproducible
// moments (a seeded generator) while the worker runs; then the daemon is left to finish.
TEST_F(ServeTest, ADaemonKilledAtRandomPointsOfTheWorkPostsExactlyOneResult) {
  FakeGitHub github(SystemClock());
  // Slow enough for kills to land before, during and after the fix; an after of 50 so the
  // crash-loop guard (which sets a turn aside after 5 kills in a row) stays out of this test.
  PrepareFixRepo(github,
                 "cat > task.json\nsleep 0.2\nsed -i 's/teh typo/the typo/' README.md\nsleep 0.2\n"
                 "echo '{\"stage\":\"ready\",\"summary\":\"Fixed the typo in README.\",\"question\":null,"
                 "\"pr\":{\"title\":\"Fix the typo\",\"body\":\"Fixes #1.\"}}'\n",
                 "quarantine:\n  after: 50\n");
  const auto env = GitHubEnv();
  const std::string body = MentionBody(github);
  auto said = [&](const std::string& words) {
    int n = 0;
    auto lock = github.Lock();
    for (const json& c : github.comments) n += c["body"].get<std::string>().find(words) != std::string::npos;
    return n;
  };
  // Four kills land inside a turn — a random 0–350 ms after it starts, while the worker's
  // command (0.4 s of sleeps) runs or the turn's end is being recorded — and two anywhere in the
  // next 1.5 s: after the result, before or while it is delivered.
  std::mt19937 random(20);
  std::uniform_int_distribution<int> in_turn_ms(0, 350), anywhere_ms(0, 1'500);
  std::vector<int> kills;
  int resumed = 0;  // starts that found a turn the last kill interrupted
  for (int round = 0; round < 6 && said("Fixed the typo in README.") == 0; ++round) {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    if (round == 0) {
      ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();
      ASSERT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
    }
    if (round < 4) {
      // A restart resumes the interrupted turn before it says "ready": any order.
      ASSERT_TRUE(d.WaitForCount("assignment started", 1)) << d.log();
      kills.push_back(in_turn_ms(random));
    } else {
      kills.push_back(anywhere_ms(random));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kills.back()));  // the kill point, not a wait
    d.Signal(SIGKILL);
    d.Wait();
    resumed += d.log().find("work resumed after restart") != std::string::npos;
  }
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (said("Fixed the typo in README.") == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(said("Fixed the typo in README."), 1) << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
  }
  {
    // One more start has nothing left to do: no interrupted turn, no follow-up.
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    EXPECT_NE(d.log().find("resumed=0"), std::string::npos) << d.log();
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    EXPECT_EQ(d.log().find("worker turn"), std::string::npos) << d.log();
  }
  std::string points;
  for (int k : kills) points += std::to_string(k) + " ";
  EXPECT_EQ(said("Fixed the typo in README."), 1) << "kills at ms: " << points;
  {
    auto lock = github.Lock();
    EXPECT_EQ(github.comments.size(), 2u) << "the acknowledgement and the result, once each";
  }
  EXPECT_EQ(github.pulls.size(), 1u) << "kills at ms: " << points;
  EXPECT_GE(resumed, 1) << "no kill landed inside a turn; kills at ms: " << points;
}

TEST_F(ServeTest, ChineseOutputOfAFailingWorkerCommandNeitherCrashesTheDaemonNorLoopsAcrossARestart) {
  FakeGitHub github(SystemClock());
  github.issues[1] = WebhookExample("issue_comment", "created")["issue"];
  const fs::path origin = dir_ / "origin.git";
  const std::string seed = (dir_ / "seed").string();
  ASSERT_EQ(std::system(("git init -q -b master " + seed + " && cd " + seed +
                         " && printf 'There is teh typo.\\n' > README.md && git add -A"
                         " && git -c user.name=t -c user.email=t@t commit -q -m init && git clone -q --bare . " +
                         origin.string())
                            .c_str()),
            0);
  std::string zh;
  for (int i = 0; i < 1000; ++i) zh += "汉";
  Write("zh.txt", zh + "\n");
  const std::string zh_file = (dir_ / "zh.txt").string();
  Write("fail.sh", "cat > /dev/null\ncat " + zh_file + "\nprintf '\\377 not utf-8\\n'\necho 第一步完成 >&2\ncat " +
                       zh_file + " >&2\necho 测试失败：断言错误 >&2\nexit 1\n");
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n");
  Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                               std::to_string(port_) + "\ngithub:\n  api_url: " + github.url() + "\n  repo: " +
                               github.repo + "\nexecution:\n  executor: command\n  command: sh " +
                               (dir_ / "fail.sh").string() + "\n  git_remote: " + origin.string() +
                               "\n  sandbox: off\n");  // fail.sh reads the test's directory
  const std::vector<std::pair<std::string, std::string>> env = {
      {"GITHUB_TOKEN", "ghp_THISISASECRETVALUE0123456789"}, {"GITHUB_WEBHOOK_SECRET", "hook-secret"}};
  json payload = WebhookExample("issue_comment", "created");
  payload["comment"] = github.MakeComment(492700400, 1, "Codertocat", "@superagent-bot 请修复 README 里的错别字",
                                          SystemClock()->NowMs());
  const std::string body = payload.dump();
  auto serving = [&] {
    httplib::Client http("127.0.0.1", port_);
    http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
    auto res = http.Get("/healthz");
    return res && res->status == 200;
  };
  auto panel = [&](const std::string& path) {
    httplib::Client http("127.0.0.1", port_);
    http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
    auto res = http.Get(path);
    return res && res->status == 200 ? res->body : "HTTP " + std::to_string(res ? res->status : 0);
  };
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    // Before the first round learns the bot's login a delivery waits (202): deliver after it.
    ASSERT_TRUE(d.WaitForCount("github identity login=", 1)) << d.log();
    httplib::Client http("127.0.0.1", port_);
    http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
    auto res = http.Post("/hooks/github",
                         {{"X-GitHub-Event", "issue_comment"}, {"X-GitHub-Delivery", "zh-1"},
                          {"X-Hub-Signature-256", github::WebhookSignature("hook-secret", body)}},
                         body, "application/json");
    ASSERT_TRUE(res && res->status == 200);
    ASSERT_TRUE(d.WaitForCount("worker turn ended", 1)) << d.log();
    ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
    EXPECT_TRUE(serving()) << d.log();
    // The panel shows what the command said: the result message and the transcript.
    json ticket = json::parse(panel("/api/tickets/1"), nullptr, false);
    ASSERT_FALSE(ticket.is_discarded()) << panel("/api/tickets/1");
    EXPECT_EQ(ticket["stage"], "blocked") << ticket.dump();
    EXPECT_NE(ticket.dump().find("测试失败：断言错误"), std::string::npos) << ticket.dump();
    const std::string session = panel("/api/intercom/sessions/session-1");
    EXPECT_NE(session.find(zh.substr(0, 300)), std::string::npos) << session.substr(0, 500);
    EXPECT_NE(session.find("\xEF\xBF\xBD not utf-8"), std::string::npos) << "the bad byte is shown as U+FFFD";
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
  }
  {
    auto lock = github.Lock();
    ASSERT_EQ(github.comments.size(), 2u);
    const std::string result = github.comments[1]["body"];
    EXPECT_NE(result.find("exited with code 1"), std::string::npos) << result;
    // Issue 34: the discussion hears the daemon's words and what to do; the command's stderr
    // (a worker's output, with host paths) stays on the panel, where the ticket above showed it.
    EXPECT_EQ(result.find("测试失败"), std::string::npos) << result;
    EXPECT_EQ(result.find(zh_file), std::string::npos) << result;
    EXPECT_NE(result.find("Reply here and I will try again"), std::string::npos) << result;
  }
  {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    EXPECT_TRUE(serving()) << d.log();
    EXPECT_NE(panel("/api/tickets/1").find("测试失败"), std::string::npos);
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    EXPECT_EQ(d.log().find("worker turn"), std::string::npos) << "the ended turn ran again:\n" << d.log();
  }
  EXPECT_EQ(github.Count("POST", github.repo_path() + "/issues/1/comments"), 2);
}

// Issue 34, through `serve`: the model that reads requests cannot be reached. The requester is
// told, in the daemon's words, once the attempts are spent; `explain` says so; nothing raw (the
// model's address, the transport's error) reaches the discussion.
TEST_F(ServeTest, ARequestTheModelCannotReadIsAnsweredWithWhyNot) {
  FakeGitHub github(SystemClock());
  PrepareFixRepo(github, "cat > /dev/null\necho '{\"stage\":\"ready\",\"summary\":\"done\"}'\n",
                 "llm:\n  base_url: http://127.0.0.1:" + std::to_string(FreeLoopbackPort()) +
                     "/v1\n  api_key_env: DEEPSEEK_API_KEY\n  assessment_model: deepseek-chat\n  max_retries: 0\n"
                     "eval:\n  max_attempts: 1\n");
  auto env = GitHubEnv();
  env.emplace_back("DEEPSEEK_API_KEY", "sk-THISISAMODELKEY0123456789");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=", 1)) << d.log();
  const std::string body = MentionBody(github);
  ASSERT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(d.WaitForLine("request not taken, told")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 1)) << d.log();
  {
    auto lock = github.Lock();
    ASSERT_EQ(github.comments.size(), 1u);
    const std::string said = github.comments[0]["body"];
    EXPECT_NE(said.find("I could not take this request"), std::string::npos) << said;
    EXPECT_NE(said.find("Mention me here again"), std::string::npos) << said;
    EXPECT_EQ(said.find("127.0.0.1"), std::string::npos) << said;
  }
  RunResult explained = RunBinary({"explain", "https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400",
                                   "--config", Config()});
  EXPECT_NE(explained.out.find("answered"), std::string::npos) << explained.out << explained.err;
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
}

// Issue 34, the first hour exactly as the README says it, with the token exported only after
// `init`: init cannot list the repository's writers and writes `people: []`. The first mention is
// then not met with silence on the panel: Needs-you says nobody may ask yet (with the key), counts
// the mention on the "not allowed to ask" card, and `explain` says why it stayed silent.
TEST_F(ServeTest, TheFirstHourWithTheTokenExportedAfterInitEndsInACardNotSilence) {
  FakeGitHub github(SystemClock());
  github.issues[1] = WebhookExample("issue_comment", "created")["issue"];
  const TimeMs now = SystemClock()->NowMs() + 2'000;  // after the daemon's first cursor (whole seconds)
  github.comments.push_back(github.MakeComment(492700400, 1, "Codertocat", "@superagent-bot 请修复 README 里的错字 🙏", now));
  github.notifications = {github.MakeNotification("10", 1, false, now)};
  const fs::path etc = dir_ / "etc";
  RunOptions init;
  init.env_unset = {"GITHUB_TOKEN", "DEEPSEEK_API_KEY"};
  RunResult made = RunBinary({"init", "--dir", etc.string(), "--yes", "--repo", github.repo, "--github-api-url", github.url(),
                              "--model-url", "http://127.0.0.1:9", "--model", "deepseek-chat", "--model-key-env",
                              "DEEPSEEK_API_KEY", "--git-remote", (dir_ / "no-origin.git").string(), "--data-dir", "data",
                              "--listen", "127.0.0.1:" + std::to_string(port_)},
                             init);
  ASSERT_TRUE(fs::exists(etc / "policy.yaml")) << made.out << made.err;
  EXPECT_NE((made.out + made.err).find("Nobody may ask for work yet"), std::string::npos) << made.out << made.err;

  const std::string config = (etc / "superagent.yaml").string();
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", config}, {{"GITHUB_TOKEN", "ghp_THISISASECRETVALUE0123456789"}});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForLine("trigger stored id=github:comment:492700400")) << d.log();
  ASSERT_TRUE(d.WaitForLine("decision eval=")) << d.log();
  httplib::Client http("127.0.0.1", port_);
  http.set_bearer_token_auth(PanelTokenIn((etc / "data").string()));
  auto res = http.Get("/api/needs");
  ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
  const json needs = json::parse(res->body);
  bool deaf_card = false;
  for (const json& c : needs["setup"]) deaf_card |= c["piece"] == "github.people";
  EXPECT_TRUE(deaf_card) << needs.dump(2);
  ASSERT_TRUE(needs["not_allowed"].is_object()) << needs.dump(2);
  EXPECT_NE(needs["not_allowed"]["what"].get<std::string>().find("Codertocat \u00d71"), std::string::npos)
      << needs.dump(2);
  RunResult explained = RunBinary(
      {"explain", "https://github.com/" + github.repo + "/issues/1#issuecomment-492700400", "--config", config});
  EXPECT_NE(explained.out.find("silent"), std::string::npos) << explained.out << explained.err << d.log();
  EXPECT_EQ(github.Count("POST", github.repo_path() + "/issues/1/comments"), 0) << "silent in the discussion by default";
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
}

// A notification page with wrong types in some items (GitHub has sent "full_name": null) used to
// end the daemon at every start: value() threw on the poller's thread, before the cursor moved, so
// each restart read the same page and died again. Now each bad item is skipped and counted, the
// good one is read, and a restart is just as calm.
TEST_F(ServeTest, WrongTypesInANotificationPageAreSkippedAndCountedAcrossARestart) {
  FakeGitHub github(SystemClock());
  github.issues[1] = WebhookExample("issue_comment", "created")["issue"];
  // A first start reads from its own start time, in GitHub's whole seconds: items stamped now
  // fell before it whenever the daemon started in the next second (1 run in 10). Two seconds
  // ahead, they are always new to it.
  const TimeMs now = SystemClock()->NowMs() + 2'000;
  github.comments.push_back(github.MakeComment(492700400, 1, "Codertocat", "@superagent-bot 请修复 README 里的错字 🙏", now));
  json full_name_null = github.MakeNotification("11", 1, false, now);
  full_name_null["repository"]["full_name"] = nullptr;
  json type_number = github.MakeNotification("12", 1, false, now);
  type_number["subject"]["type"] = 5;
  json url_array = github.MakeNotification("13", 1, false, now);
  url_array["subject"]["url"] = json::array({"x"});
  json repository_text = github.MakeNotification("14", 1, false, now);
  repository_text["repository"] = "Codertocat/Hello-World";
  github.notifications = {full_name_null, type_number, github.MakeNotification("10", 1, false, now), url_array,
                          repository_text};
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n");
  Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                               std::to_string(port_) + "\ngithub:\n  api_url: " + github.url() + "\n  repo: " +
                               github.repo + "\nexecution:\n  git_remote: " + (dir_ / "no-origin.git").string() + "\n");
  const std::vector<std::pair<std::string, std::string>> env = {{"GITHUB_TOKEN", "ghp_THISISASECRETVALUE0123456789"}};
  std::string last_status;  // for the failure message
  auto notifications_health = [&]() -> json {
    httplib::Client http("127.0.0.1", port_);
    http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
    auto res = http.Get("/api/status");
    if (!res || res->status != 200) return json();
    last_status = res->body;
    const json status = json::parse(res->body, nullptr, false);  // named: a temporary would dangle in the loop
    if (!status.is_object() || !status.contains("sources")) return json();
    for (const json& h : status["sources"])
      if (h["source"] == "github" && h["path"] == "notifications") return h;  // the account's: one for every repository
    return json();
  };
  for (int start = 0; start < 2; ++start) {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    const int polls = github.Count("GET", "/notifications");
    for (int n = 0; n < 4000 && github.Count("GET", "/notifications") == polls; ++n)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (start == 0) {
      ASSERT_TRUE(d.WaitForLine("trigger stored id=github:comment:492700400")) << d.log();
      EXPECT_TRUE(d.WaitForCount("github notification skipped", 4)) << d.log();
      EXPECT_NE(d.log().find(R"(github notification skipped id=11 reason="field "repository.full_name": )"
                             R"(expected string, got null")"),
                std::string::npos)
          << d.log();
      json health;
      for (int n = 0; n < 400 && json_read::IntOr(health = notifications_health(), "skipped_items") < 4; ++n)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_EQ(json_read::IntOr(health, "skipped_items"), 4) << last_status;
    }
    // Serving still, after the page was read.
    httplib::Client http("127.0.0.1", port_);
    http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
    auto healthz = http.Get("/healthz");
    ASSERT_TRUE(healthz) << d.log();
    EXPECT_EQ(healthz->status, 200);
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    EXPECT_EQ(d.log().find("terminate"), std::string::npos) << d.log();
  }
}

// log.level debug adds the detail a person needs to see whether the daemon talks to GitHub at
// all (each HTTP exchange, without its query or headers); info stays one line per event. Neither
// ever shows the token.
TEST_F(ServeTest, DebugLevelAddsEachHttpExchangeAndInfoDoesNot) {
  FakeGitHub github(SystemClock());
  const std::vector<std::pair<std::string, std::string>> env = {{"GITHUB_TOKEN", "ghp_THISISASECRETVALUE0123456789"}};
  std::string logs[2];
  const char* levels[2] = {"debug", "info"};
  for (int i = 0; i < 2; ++i) {
    github.ClearLog();
    Write("superagent.yaml", std::string("data_dir: data") + std::to_string(i) +
                                 "\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" + std::to_string(port_) +
                                 "\nlog:\n  level: " + levels[i] + "\ngithub:\n  api_url: " + github.url() +
                                 "\n  repo: " + github.repo + "\nexecution:\n  git_remote: " +
                                 (dir_ / "no-origin.git").string() + "\n");
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    // The first polling round has read the notifications (and the daemon has logged it, if at all).
    for (int n = 0; n < 4000 && github.Count("GET", "/notifications") == 0; ++n)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_GT(github.Count("GET", "/notifications"), 0) << d.log();
    if (i == 0) {
      ASSERT_TRUE(d.WaitForCount("http GET " + github.url() + "/notifications status=", 1)) << d.log();
      // The account's notifications are read before any repository's round (issue 37), whose
      // first request asks who the agent is: wait for that too, not only for the first.
      ASSERT_TRUE(d.WaitForCount("http GET " + github.url() + "/user status=", 1)) << d.log();
    }
    d.Signal(SIGTERM);
    EXPECT_EQ(d.Wait(), 0) << d.log();
    logs[i] = d.log();
  }
  EXPECT_NE(logs[0].find("debug http GET " + github.url() + "/user status=200"), std::string::npos) << logs[0];
  EXPECT_EQ(logs[0].find("?"), std::string::npos) << "a query (which may hold a ticket) reached the log";
  EXPECT_EQ(logs[1].find("http GET"), std::string::npos) << logs[1];
  for (const std::string& log : logs) {
    EXPECT_EQ(log.find("ghp_THISISASECRETVALUE"), std::string::npos) << "a secret reached the log";
    EXPECT_EQ(log.find("Authorization"), std::string::npos);
  }
}

// Issue 18's crash loop, with the real binary: a message whose send never returns is in flight
// each time the daemon is killed (SIGKILL, as the kernel's OOM killer or an abort would). After
// five such deaths in a row the next start sets it aside instead of sending it again, serves,
// shows it in Needs-you and in explain, and a Retry from the panel (with its CSRF token) sends it.
TEST_F(ServeTest, AMessageInFlightDuringFiveKillsIsSetAsideAtTheNextStartAndRetriedFromThePanel) {
  FakeGitHub github(SystemClock());
  github.issues[7] = WebhookExample("issue_comment", "created")["issue"];
  const std::string comments = github.repo_path() + "/issues/7/comments";
  github.Hold("POST", comments);
  Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                               std::to_string(port_) + "\ngithub:\n  api_url: " + github.url() + "\n  repo: " +
                               github.repo + "\n  bot_login: superagent-bot\nexecution:\n  git_remote: " +
                               (dir_ / "no-such-origin.git").string() + "\n");
  const std::vector<std::pair<std::string, std::string>> env = {{"GITHUB_TOKEN", "ghp_THISISASECRETVALUE0123456789"}};
  const std::string trigger = R"({"id":"github:comment:1@2026-12-02T10:00:00Z","source":"github","scope":"comments",
    "actor":"alice","human":true,"addressed":true,"text":"@agent 请修复 README 的错别字 😀","at":"2026-12-02T10:00:00Z",
    "threads":["github:codertocat/hello-world:issue:7"],"channel":"github:codertocat/hello-world:issue:7","meta":{"html_url":"https://github.com/o/r/issues/7#issuecomment-1"}})";
  for (int death = 1; death <= 5; ++death) {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
    if (death == 1) {
      RunOptions in;
      in.stdin_text = trigger;
      RunResult r = RunProgram(SUPERAGENT_BINARY, {"receive", "--config", Config(), "--trigger", "-"}, in);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    } else {
      EXPECT_NE(d.log().find("did not stop cleanly"), std::string::npos) << d.log();
    }
    ASSERT_TRUE(github.WaitUntilHoldingAtLeast(death)) << "the acknowledgement was not sent, death " << death << "\n"
                                                       << d.log();
    d.Signal(SIGKILL);
    d.Wait();
  }
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  EXPECT_NE(d.log().find("set aside kind=effect"), std::string::npos) << d.log();
  httplib::Client http("127.0.0.1", port_);
  http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  EXPECT_EQ(http.Get("/healthz")->status, 200);
  // The Ticket's turn (its workspace cannot be prepared) may have been running at each kill too;
  // then it is set aside as well, which is right. The message must be.
  json needs = json::parse(http.Get("/api/needs")->body);
  json card;
  for (const json& c : needs["set_aside"])
    if (c["kind"] == "effect") card = c;
  ASSERT_TRUE(card.is_object()) << needs.dump();
  EXPECT_NE(card["reason"].get<std::string>().find("in flight during 5 abnormal exits"), std::string::npos);
  RunResult story = RunProgram(SUPERAGENT_BINARY, {"explain", "github:comment:1@2026-12-02T10:00:00Z", "--config", Config()});
  ASSERT_EQ(story.exit_code, 0) << story.err;
  EXPECT_NE(story.out.find("set aside"), std::string::npos) << story.out;

  github.Release();  // GitHub answers again; a person retries
  const std::string csrf = json::parse(http.Get("/api/session")->body)["csrf_token"];
  httplib::Headers headers{{"X-CSRF-Token", csrf}, {"Origin", "http://127.0.0.1:" + std::to_string(port_)}};
  const json retry = {{"kind", "effect"}, {"item", card["item"]}};
  EXPECT_EQ(http.Post("/api/set-aside/retry", httplib::Headers{}, retry.dump(), "application/json")->status, 403);
  auto ok = http.Post("/api/set-aside/retry", headers, retry.dump(), "application/json");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  ASSERT_TRUE(d.WaitForLine("message sent receipt=ack:ticket:1")) << d.log();
  const json needs_now = json::parse(http.Get("/api/needs")->body);  // named: a temporary would dangle in the loop
  for (const json& c : needs_now["set_aside"]) EXPECT_NE(c["kind"], "effect");
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
}


// Issue 21, as a team runs it: `execution.executor` names a coding CLI, and a mention on GitHub
// is worked by the REAL CLI from tests/node_modules against a loopback model API — the daemon
// acknowledges, the CLI edits the worktree in its sandbox, the daemon pushes the branch, opens the
// PR and posts the result after the acknowledgement. One key switches the executor.
class ServeCliTest : public ServeTest, public ::testing::WithParamInterface<std::string> {
 protected:
  // Rewrites the config PrepareFixRepo wrote to use the CLI GetParam() from its `block`, with
  // `extra` YAML lines appended to the block.
  void UseCli(const std::string& block, const std::string& binary, const std::string& model, const std::string& base_url,
              const std::string& extra) {
    std::ifstream in(dir_ / "superagent.yaml");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string command_executor = "executor: command\n  command: sh fix.sh";
    ASSERT_NE(config.find(command_executor), std::string::npos);
    config.replace(config.find(command_executor), command_executor.size(),
                   "executor: " + GetParam() + "\n  " + block + ":\n    binary: " + NodeModulesDir() + "/.bin/" +
                       binary + "\n    model: " + model + "\n    api_key_env: SA_TEST_CLI_KEY\n    base_url: " + base_url +
                       "\n    turn_seconds: 60" + extra);
    Write("superagent.yaml", config);
  }

  // Codertocat's signed comment `id` on issue 1 saying `text`.
  std::string CommentBody(FakeGitHub& github, std::int64_t id, const std::string& text) {
    json payload = WebhookExample("issue_comment", "created");
    payload["comment"] = github.MakeComment(id, 1, "Codertocat", text, SystemClock()->NowMs());
    return payload.dump();
  }

  // Works Codertocat's mention with the CLI GetParam() whose model API is at `base_url`, then a
  // follow-up that must resume the same CLI session. With `dead`, the model refuses every call:
  // the Ticket ends blocked with the reason, and no PR is opened.
  void WorkMentionWith(const std::string& block, const std::string& binary, const std::string& model,
                       const std::string& base_url, const std::string& key, bool dead = false) {
    FakeGitHub github(SystemClock());
    const fs::path origin = PrepareFixRepo(github, "exit 1\n");
    std::ifstream in(dir_ / "superagent.yaml");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string command_executor = "executor: command\n  command: sh fix.sh";
    ASSERT_NE(config.find(command_executor), std::string::npos);
    config.replace(config.find(command_executor), command_executor.size(),
                   "executor: " + GetParam() + "\n  " + block + ":\n    binary: " + NodeModulesDir() + "/.bin/" +
                       binary + "\n    model: " + model + "\n    api_key_env: SA_TEST_CLI_KEY\n    base_url: " + base_url +
                       "\n    turn_seconds: 60");
    Write("superagent.yaml", config);
    auto env = GitHubEnv();
    env.emplace_back("SA_TEST_CLI_KEY", key);
    const std::string body = MentionBody(github);
    const std::string cli = GetParam();
    std::vector<std::string> said;
    auto comments = [&] {
      std::vector<std::string> out;
      auto lock = github.Lock();
      for (const json& c : github.comments) out.push_back(c["body"]);
      return out;
    };
    {
      DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
      ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
      ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();
      EXPECT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
      ASSERT_TRUE(d.WaitForCount("worker turn ended", 1, 120'000)) << d.log();
      ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
      EXPECT_NE(d.log().find("executor cli=" + cli), std::string::npos) << d.log();
      EXPECT_NE(d.log().find("sandbox mode=bwrap"), std::string::npos) << d.log();
      if (dead) {
        EXPECT_NE(d.log().find("coding cli ended ticket=1 cli=" + cli), std::string::npos) << d.log();
        EXPECT_NE(d.log().find("stage=blocked"), std::string::npos) << d.log();
      } else {
        ASSERT_TRUE(d.WaitForCount("pull request opened", 1)) << d.log();
        EXPECT_NE(d.log().find("coding cli ended ticket=1 cli=" + cli + " exit_code=0 stage=ready"), std::string::npos)
            << d.log();
        EXPECT_NE(d.log().find("resume=- "), std::string::npos) << d.log();  // the first turn starts a session
        // A person's follow-up on the same discussion continues the CLI's own session.
        const std::string follow = CommentBody(github, 492700401, "@superagent-bot FOLLOW-UP-7f3a: FOLLOW-UP anything else?");
        EXPECT_EQ(Deliver(follow, github::WebhookSignature("hook-secret", follow)), 200);
        ASSERT_TRUE(d.WaitForCount("worker turn ended", 2, 120'000)) << d.log();
        ASSERT_TRUE(d.WaitForCount("github message posted", 3)) << d.log();
        const std::size_t second = d.log().find("coding cli started ticket=1 cli=" + cli + " resume=",
                                                d.log().find("coding cli ended ticket=1"));
        ASSERT_NE(second, std::string::npos) << d.log();
        EXPECT_NE(d.log().substr(second, 120).find("resume="), std::string::npos);
        EXPECT_EQ(d.log().substr(second, 120).find("resume=- "), std::string::npos) << "the follow-up did not resume:\n"
                                                                                      << d.log().substr(second, 300);
      }
      d.Signal(SIGTERM);
      EXPECT_EQ(d.Wait(), 0) << d.log();
      EXPECT_EQ(d.log().find(key), std::string::npos) << "the CLI's key reached the log";
      EXPECT_EQ(d.log().find("ghp_THISISASECRETVALUE"), std::string::npos) << "a secret reached the log";
    }
    said = comments();
    ASSERT_GE(said.size(), 2u);
    EXPECT_NE(said[0].find("fix the typo"), std::string::npos) << said[0];  // the acknowledgement first
    if (dead) {
      EXPECT_NE(said[1].find(cli), std::string::npos) << said[1];  // the reason names the CLI
      EXPECT_EQ(github.pulls.size(), 0u);
      return;
    }
    ASSERT_EQ(said.size(), 3u);  // one result per piece of work: the first turn's, the follow-up's
    ASSERT_EQ(github.pulls.size(), 1u);
    const std::string branch = TicketOneBranch(github);
    std::string pushed;
    FILE* p = ::popen(("git -C " + origin.string() + " show " + branch + ":README.md").c_str(), "r");
    char buf[256];
    while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) pushed += buf;
    if (p != nullptr) ::pclose(p);
    EXPECT_EQ(pushed, "There is the typo.\n");
  }
};

TEST_P(ServeCliTest, AMentionIsWorkedByTheRealCliAndAnsweredAfterTheAcknowledgement) {
  const std::string cli = GetParam();
  if (cli == "claude-code" || cli == "qwen-code") {
    const bool claude = cli == "claude-code";
    const std::string model = claude ? "claude-sonnet-4-5" : "qwen3-coder-plus";
    FakeCodingModel fake(claude ? FakeCodingModel::Wire::kAnthropic : FakeCodingModel::Wire::kOpenAiChat, "sk-serve-cli-42",
                         model, CodingScript{.old_text = "teh typo", .new_text = "the typo"});
    WorkMentionWith(claude ? "claude_code" : "qwen_code", claude ? "claude" : "qwen", model, fake.base_url(),
                    "sk-serve-cli-42");
    EXPECT_TRUE(fake.problems().empty()) << fake.problems().front();
  } else if (cli == "codex") {
    FakeResponsesModel fake(FakeCliScript{});
    WorkMentionWith("codex", "codex", "gpt-5.5", fake.base_url(), "sk-codex-test-1234");
  } else {
    FakeGeminiModel fake(FakeCliScript{});
    WorkMentionWith("gemini_cli", "gemini", "gemini-2.5-pro", fake.base_url(), "gk-gemini-test-5678");
  }
}

TEST_P(ServeCliTest, ADeadModelEndsTheTicketBlockedWithTheReasonAndNoPullRequest) {
  const std::string cli = GetParam();
  if (cli == "claude-code" || cli == "qwen-code") {
    const bool claude = cli == "claude-code";
    const std::string model = claude ? "claude-sonnet-4-5" : "qwen3-coder-plus";
    FakeCodingModel fake(claude ? FakeCodingModel::Wire::kAnthropic : FakeCodingModel::Wire::kOpenAiChat, "sk-serve-cli-42",
                         model, CodingScript{.fail_status = 401});
    WorkMentionWith(claude ? "claude_code" : "qwen_code", claude ? "claude" : "qwen", model, fake.base_url(),
                    "sk-serve-cli-42", true);
  } else {
    FakeCliScript s;
    s.mode = FakeCliScript::Mode::kFail401;
    if (cli == "codex") {
      FakeResponsesModel fake(s);
      WorkMentionWith("codex", "codex", "gpt-5.5", fake.base_url(), "sk-codex-test-1234", true);
    } else {
      FakeGeminiModel fake(s);
      WorkMentionWith("gemini_cli", "gemini", "gemini-2.5-pro", fake.base_url(), "gk-gemini-test-5678", true);
    }
  }
}

// The fake model for GetParam(), whose shell step runs `command`.
struct CliFake {
  std::unique_ptr<FakeCodingModel> coding;
  std::unique_ptr<FakeResponsesModel> responses;
  std::unique_ptr<FakeGeminiModel> gemini;
  std::string block, binary, model, base_url, key;
};

CliFake MakeCliFake(const std::string& cli, const std::string& command) {
  CliFake f;
  if (cli == "claude-code" || cli == "qwen-code") {
    const bool claude = cli == "claude-code";
    f.model = claude ? "claude-sonnet-4-5" : "qwen3-coder-plus";
    f.key = "sk-serve-cli-42";
    f.coding = std::make_unique<FakeCodingModel>(
        claude ? FakeCodingModel::Wire::kAnthropic : FakeCodingModel::Wire::kOpenAiChat, f.key, f.model,
        CodingScript{.old_text = "teh typo", .new_text = "the typo", .command = command});
    f.block = claude ? "claude_code" : "qwen_code";
    f.binary = claude ? "claude" : "qwen";
    f.base_url = f.coding->base_url();
  } else {
    FakeCliScript s;
    s.outside_command = command;
    if (cli == "codex") {
      f.responses = std::make_unique<FakeResponsesModel>(s);
      f.block = f.binary = "codex";
      f.model = "gpt-5.5";
      f.key = "sk-codex-test-1234";
      f.base_url = f.responses->base_url();
    } else {
      f.gemini = std::make_unique<FakeGeminiModel>(s);
      f.block = "gemini_cli";
      f.binary = "gemini";
      f.model = "gemini-2.5-pro";
      f.key = "gk-gemini-test-5678";
      f.base_url = f.gemini->base_url();
    }
  }
  return f;
}


// A panel Stop, as the page sends it: the panel token, same origin, the CSRF token.
int PanelStop(int port, const std::string& data_dir, int ticket) {
  httplib::Client http("127.0.0.1", port);
  http.set_bearer_token_auth(PanelTokenIn(data_dir));
  auto session = http.Get("/api/session");
  if (!session || session->status != 200) return 0;
  httplib::Headers h{{"Origin", "http://127.0.0.1:" + std::to_string(port)},
                     {"X-CSRF-Token", json::parse(session->body)["csrf_token"].get<std::string>()}};
  auto r = http.Post(("/api/tickets/" + std::to_string(ticket) + "/stop").c_str(), h,
                     json{{"confirm", true}, {"name", "Tess"}}.dump(), "application/json");
  return r ? r->status : 0;
}

// A person presses Stop in the panel while the CLI's shell step runs: the CLI and the command it
// started die at once, and the Ticket ends.
TEST_P(ServeCliTest, AStopFromThePanelKillsTheCliAndTheCommandItStarted) {
  const std::string marker = "time.sleep(" + std::to_string(3000 + ::getpid() % 997) + ")";
  CliFake fake = MakeCliFake(GetParam(), "python3 -c 'import time; " + marker + "'");
  FakeGitHub github(SystemClock());
  PrepareFixRepo(github, "exit 1\n");
  UseCli(fake.block, fake.binary, fake.model, fake.base_url, "");
  auto env = GitHubEnv();
  env.emplace_back("SA_TEST_CLI_KEY", fake.key);
  const std::string body = MentionBody(github);
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();
  EXPECT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  bool running = false;
  for (int i = 0; i < 6000 && !(running = ProcessRunning(marker)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(running) << "the CLI never ran its shell step\n" << d.log();
  EXPECT_EQ(PanelStop(port_, (dir_ / "data").string(), 1), 200);
  ASSERT_TRUE(d.WaitForLine("to=ended")) << d.log();
  bool gone = false;
  for (int i = 0; i < 1000 && !(gone = !ProcessRunning(marker)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(gone) << "the CLI's command outlived the Stop";
  // The ended Ticket's worktree goes once its turn has let go of it.
  ASSERT_TRUE(d.WaitForLine("workspace removed ticket=1")) << d.log();
  EXPECT_EQ(d.log().find("coding cli ended"), std::string::npos) << "a stopped turn was judged:\n" << d.log();
  // The discussion says why no result will come: the acknowledgement, then one line (issue 22).
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  {
    auto lock = github.Lock();
    ASSERT_EQ(github.comments.size(), 2u);
    const std::string last = github.comments.back()["body"];
    EXPECT_NE(last.find("Stopped by Tess from the panel; nothing more will be done here."), std::string::npos) << last;
  }
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_EQ(github.pulls.size(), 0u);
}

// With an allow-list, a shell command outside it is refused without a prompt (the turn goes on
// to its report) and the session's transcript in the panel shows the refusal. Codex has no
// allow-list: a config that gives it one does not start.
TEST_P(ServeCliTest, ACommandOutsideTheAllowListIsRefusedAndThePanelTranscriptShowsIt) {
  // The marker goes in the Ticket's worktree: the one place the sandboxed command could write
  // that this test sees (the sandbox's /tmp is its own, and the test's directory is not shown).
  const fs::path worktree = dir_ / "data" / "work" / "tickets" / "ticket-1";
  const std::string outside = (worktree / "outside-marker").string();
  CliFake fake = MakeCliFake(GetParam(), "touch '" + outside + "'");
  FakeGitHub github(SystemClock());
  PrepareFixRepo(github, "exit 1\n");
  UseCli(fake.block, fake.binary, fake.model, fake.base_url, "\n    allowed_commands: [\"git diff\", \"git status\"]");
  auto env = GitHubEnv();
  env.emplace_back("SA_TEST_CLI_KEY", fake.key);
  if (GetParam() == "codex") {
    DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
    EXPECT_NE(d.Wait(), 0);
    EXPECT_NE(d.log().find("Codex has no per-command allow-list"), std::string::npos) << d.log();
    return;
  }
  const std::string body = MentionBody(github);
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();
  EXPECT_EQ(Deliver(body, github::WebhookSignature("hook-secret", body)), 200);
  ASSERT_TRUE(d.WaitForCount("worker turn ended", 1, 120'000)) << d.log();
  ASSERT_TRUE(fs::exists(worktree / "README.md")) << "no worktree: the check below would prove nothing\n" << d.log();
  EXPECT_FALSE(fs::exists(outside)) << "a command outside the allow-list ran";
  EXPECT_NE(d.log().find("stage=ready"), std::string::npos) << d.log();
  httplib::Client http("127.0.0.1", port_);
  http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
  auto session = http.Get("/api/intercom/sessions/session-1");
  ASSERT_TRUE(session) << d.log();
  ASSERT_EQ(session->status, 200) << session->body;
  const json transcript = json::parse(session->body)["transcript"];
  bool asked = false, refused = false;
  std::string results;
  for (const json& e : transcript) {
    const std::string text = e.value("text", "");
    if (e.value("kind", "") == "assistant" && e.dump().find("touch ") != std::string::npos) asked = true;
    if (e.value("kind", "") == "tool_result") {
      results += text + "\n";
      for (const char* word : {"refused", "denied", "declined"})  // each CLI's words for a refusal, not any error
        refused = refused || text.find(word) != std::string::npos;
    }
  }
  EXPECT_TRUE(asked) << session->body;
  EXPECT_TRUE(refused) << results;
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
}

INSTANTIATE_TEST_SUITE_P(RealClis, ServeCliTest, ::testing::Values("claude-code", "codex", "gemini-cli", "qwen-code"),
                         [](const auto& test) {
                           std::string n = test.param;
                           n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
                           return n;
                         });

}  // namespace
}  // namespace superagent::testing
