// Issue 37, as a team runs it: one `superagent serve` for three repositories of the loopback
// GitHub. A mention in each is acknowledged in place, worked in that repository's own code and
// answered with a pull request there; two PRs numbered alike in two repositories stay apart;
// CI failing on one PR reaches its Ticket; and a store written when the daemon served one
// repository keeps its Tickets once it serves three.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon_process.h"
#include "fake_feishu_server.h"
#include "fake_feishu_ws.h"
#include "fake_github_server.h"
#include "github_app_keys.h"
#include "run_binary.h"
#include "serve_fixture.h"

namespace superagent::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The team's fix: the README of its own repository and of each other one its Ticket may change.
constexpr char kFix[] =
    "cat > task.json\nsed -i 's/teh typo/the typo/' README.md\n"
    "for f in .superagent-repos/*/*/README.md; do [ -f \"$f\" ] && sed -i 's/teh typo/the typo/' \"$f\"; done\n"
    "echo '{\"stage\":\"ready\",\"summary\":\"Fixed the typo in README.\",\"question\":null,"
    "\"pr\":{\"title\":\"Fix the typo\",\"body\":\"修正拼写 ✍️\"}}'\n";

class ManyReposServeTest : public ServeTest {
 protected:
  // A bare origin at <dir>/<owner>/<name>.git (the `{repo}` of execution.git_remote) whose README
  // names its repository, with the team's fix.sh; and issue 1 on the fake.
  void MakeOrigin(FakeGitHub& github) {
    github.issues[1] = WebhookExample("issue_comment", "created")["issue"];
    github.repo_info = {{"full_name", github.repo}, {"default_branch", "master"}};
    const fs::path seed = dir_ / ("seed-" + std::to_string(seeds_++));
    fs::create_directories(seed);
    std::ofstream(seed / "fix.sh") << kFix;
    std::ofstream(seed / "README.md") << github.repo << ": There is teh typo.\n";
    const fs::path origin = dir_ / (github.repo + ".git");
    fs::create_directories(origin.parent_path());
    ASSERT_EQ(std::system(("cd " + seed.string() + " && git init -q -b master . && git add -A"
                           " && git -c user.name=t -c user.email=t@t commit -q -m init && git clone -q --bare . " +
                           origin.string())
                              .c_str()),
              0);
  }
  void WriteConfig(FakeGitHub& home, const std::vector<FakeGitHub*>& all) {
    std::string repos;
    for (FakeGitHub* g : all) repos += "    - " + g->repo + "\n";
    Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n");
    Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                                 std::to_string(port_) + "\ngithub:\n  api_url: " + home.api_url() + "\n  repos:\n" + repos +
                                 "execution:\n" + executor_ + "  git_remote: " + (dir_ / "{repo}.git").string() + "\n");
  }
  // Codertocat's mention of the agent on issue 1 of `github`'s repository, as GitHub delivers it.
  json Mention(FakeGitHub& github, std::int64_t comment_id) {
    json payload = WebhookExample("issue_comment", "created");
    payload["comment"] = github.MakeComment(comment_id, 1, "Codertocat", "@superagent-bot please fix the typo in README",
                                            SystemClock()->NowMs());
    payload["repository"]["full_name"] = github.repo;
    payload["repository"]["name"] = github.repo.substr(github.repo.find('/') + 1);
    return payload;
  }
  // What the pushed branch `branch` of `repo`'s origin says in its README.
  std::string PushedReadme(const std::string& repo, const std::string& branch) {
    const std::string out = (dir_ / "readme.out").string();
    const std::string cmd = "git -C " + (dir_ / (repo + ".git")).string() + " show " + branch + ":README.md > " + out;
    if (std::system(cmd.c_str()) != 0) return "";
    std::ifstream in(out);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  static std::string PullBranch(FakeGitHub& github, std::int64_t number) {
    auto lock = github.Lock();
    auto it = github.pulls.find(number);
    return it == github.pulls.end() ? "" : it->second["head"]["ref"].get<std::string>();
  }
  int seeds_ = 0;
};

TEST_F(ManyReposServeTest, MentionsInThreeRepositoriesAreWorkedAndAnsweredEachInItsOwn) {
  FakeGitHub home(SystemClock()), api(SystemClock()), web(SystemClock());
  api.repo = "acme/api";
  web.repo = "acme/Web";  // configured as GitHub shows it; the webhook below says "acme/web"
  home.other_repositories = {{api.repo, &api}, {web.repo, &web}};
  for (FakeGitHub* g : {&home, &api, &web}) MakeOrigin(*g);
  WriteConfig(home, {&home, &api, &web});

  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, GitHubEnv());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  EXPECT_NE(d.log().find("sources github=Codertocat/Hello-World,acme/api,acme/Web"), std::string::npos) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();

  // acme/api first: Ticket 1, its PR #100 there.
  ASSERT_EQ(DeliverEvent("issue_comment", "api-1", Mention(api, 5001)), 200);
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=1 number=100", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  // acme/web, named in lower case by its webhook: Ticket 2, also PR #100 — in its own repository.
  json web_mention = Mention(web, 5002);
  web_mention["repository"]["full_name"] = "acme/web";
  ASSERT_EQ(DeliverEvent("issue_comment", "web-1", web_mention), 200);
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=2 number=100", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 4)) << d.log();
  // The home repository: Ticket 3.
  ASSERT_EQ(DeliverEvent("issue_comment", "home-1", Mention(home, 5003)), 200);
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=3 number=100", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 6)) << d.log();

  // Each answered in place: an acknowledgement and a result naming its own PR.
  for (FakeGitHub* g : {&home, &api, &web}) {
    auto lock = g->Lock();
    ASSERT_EQ(g->comments.size(), 2u) << g->repo;
    ASSERT_EQ(g->pulls.size(), 1u) << g->repo;
    const std::string result = g->comments[1]["body"];
    EXPECT_NE(result.find("Pull request: https://github.com/" + g->repo + "/pull/100"), std::string::npos)
        << g->repo << ": " << result;
  }
  // … and worked in its own code: each origin got a branch whose README is that repository's, fixed.
  for (FakeGitHub* g : {&home, &api, &web}) {
    const std::string branch = PullBranch(*g, 100);
    ASSERT_FALSE(branch.empty()) << g->repo;
    EXPECT_EQ(PushedReadme(g->repo, branch), g->repo + ": There is the typo.\n") << g->repo;
  }
  // A delivery for a repository not served is taken by nobody.
  json stranger = Mention(api, 5004);
  stranger["repository"]["full_name"] = "acme/secret";
  EXPECT_EQ(DeliverEvent("issue_comment", "stranger-1", stranger), 202);
  // Odd or hostile deliveries to the router: each is answered, none is taken, nothing stops.
  json chinese = Mention(api, 5005);
  chinese["repository"]["full_name"] = "阿克米/接口😀";
  EXPECT_EQ(DeliverEvent("issue_comment", "zh-1", chinese), 202);
  json huge = Mention(api, 5006);
  huge["repository"]["full_name"] = "acme/" + std::string(1 << 20, 'a');
  EXPECT_EQ(DeliverEvent("issue_comment", "huge-1", huge), 202);
  json number = Mention(api, 5007);
  number["repository"]["full_name"] = 5;
  EXPECT_EQ(DeliverEvent("issue_comment", "type-1", number), 400) << "the wrong type is named, by the home Source";
  const std::string not_utf8 = "{\"repository\":{\"full_name\":\"acme/api\xff\xfe\"}}";
  EXPECT_EQ(Deliver(not_utf8, github::WebhookSignature("hook-secret", not_utf8)), 400);
  EXPECT_EQ(Deliver(Mention(api, 5008).dump(), "sha256=0000"), 401) << "unsigned is refused before any routing";

  // CI fails on acme/api's PR: Ticket 1 hears it (and Ticket 2, whose PR has the same number in
  // acme/web, does not).
  json check = FailedCheckOnTicketOne("0123456789abcdef0123456789abcdef01234567", PullBranch(api, 100));
  check["repository"]["full_name"] = "acme/api";
  ASSERT_EQ(DeliverEvent("check_run", "ci-1", check), 200);
  ASSERT_TRUE(d.WaitForCount("ci failed on a ticket's pull request ticket=1 number=100 attempt=1/2", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("worker turn ended", 4)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 7)) << d.log();
  {
    // /metrics counts each repository's Tickets apart (the repo label).
    httplib::Client http("127.0.0.1", port_);
    http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
    auto metrics = http.Get("/metrics");
    ASSERT_TRUE(metrics && metrics->status == 200);
    for (const char* repo : {"acme/api", "acme/web", "codertocat/hello-world"})
      EXPECT_NE(metrics->body.find(std::string("outcome=\"pr_open\",repo=\"") + repo + "\"} 1"), std::string::npos)
          << repo << "\n" << metrics->body.substr(0, 4000);
  }
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();

  EXPECT_EQ(d.log().find("ticket=2 number=100 attempt"), std::string::npos) << d.log();
  EXPECT_EQ(api.Count("POST", "/repos/acme/api/issues/1/comments"), 3) << "acknowledgement, result, the fix's result";
  EXPECT_EQ(web.Count("POST", "/repos/acme/Web/issues/1/comments"), 2);
  EXPECT_EQ(home.Count("POST", home.repo_path() + "/issues/1/comments"), 2);
  EXPECT_EQ(home.Count("GET", "/user"), 1) << "one identity for every repository";
  std::size_t said = 0;
  for (std::size_t at = d.log().find("github identity login="); at != std::string::npos;
       at = d.log().find("github identity login=", at + 1))
    ++said;
  EXPECT_EQ(said, 1u) << "said once for the account, not per repository";
  EXPECT_EQ(api.Count("GET", "/user") + web.Count("GET", "/user"), 0);
}

// A request naming two repositories: one Ticket, one pull request in each, each naming the other,
// one result naming both; CI failing on the other repository's pull request reaches the Ticket.
TEST_F(ManyReposServeTest, ARequestNamingTwoRepositoriesIsOneTicketWithTwoLinkedPullRequests) {
  FakeGitHub home(SystemClock()), api(SystemClock()), web(SystemClock());
  api.repo = "acme/api";
  web.repo = "acme/web";
  home.other_repositories = {{api.repo, &api}, {web.repo, &web}};
  for (FakeGitHub* g : {&home, &api, &web}) MakeOrigin(*g);
  WriteConfig(home, {&home, &api, &web});
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, GitHubEnv());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();

  // Asked on acme/web's issue, naming acme/api first: the Mandate lists acme/api, then acme/web.
  json ask = WebhookExample("issue_comment", "created");
  ask["comment"] = web.MakeComment(7001, 1, "Codertocat",
                                   "@superagent-bot fix the typo in acme/api first, then here in acme/web too 谢谢",
                                   SystemClock()->NowMs());
  ask["repository"]["full_name"] = web.repo;
  ask["repository"]["name"] = "web";
  ASSERT_EQ(DeliverEvent("issue_comment", "two-1", ask), 200);
  ASSERT_TRUE(d.WaitForCount("github pull request links updated", 2)) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();

  {
    auto lock = web.Lock();
    ASSERT_EQ(web.comments.size(), 2u);
    EXPECT_NE(web.comments[0]["body"].get<std::string>().find("(in acme/api, acme/web)"), std::string::npos)
        << "the acknowledgement says where: " << web.comments[0]["body"];
    const std::string result = web.comments[1]["body"];
    EXPECT_NE(result.find("Pull request in acme/api: https://github.com/acme/api/pull/100"), std::string::npos) << result;
    EXPECT_NE(result.find("Pull request in acme/web: https://github.com/acme/web/pull/100"), std::string::npos) << result;
  }
  EXPECT_EQ(api.Count("POST", "/repos/acme/api/issues/1/comments"), 0) << "one discussion, one answer";
  EXPECT_EQ(home.Count("POST", home.repo_path() + "/pulls"), 0) << "a repository not named is not touched";
  // One Ticket, one branch name, a pull request in each repository, each naming the other.
  for (FakeGitHub* g : {&api, &web}) {
    auto lock = g->Lock();
    ASSERT_EQ(g->pulls.size(), 1u) << g->repo;
    const std::string body = g->pulls[100]["body"];
    const std::string other = g == &api ? "acme/web#100" : "acme/api#100";
    EXPECT_NE(body.find("**One change across repositories** (Ticket #1)"), std::string::npos) << body;
    EXPECT_NE(body.find("- " + other), std::string::npos) << g->repo << ": " << body;
    EXPECT_NE(body.find("修正拼写 ✍️"), std::string::npos) << "the worker's own words kept";
  }
  const std::string branch = PullBranch(web, 100);
  EXPECT_EQ(PullBranch(api, 100), branch);
  EXPECT_EQ(PushedReadme("acme/api", branch), "acme/api: There is the typo.\n");
  EXPECT_EQ(PushedReadme("acme/web", branch), "acme/web: There is the typo.\n");

  // CI fails on acme/api's pull request: the Ticket (asked for on acme/web) hears it.
  json check = FailedCheckOnTicketOne("0123456789abcdef0123456789abcdef01234567", branch);
  check["repository"]["full_name"] = "acme/api";
  ASSERT_EQ(DeliverEvent("check_run", "ci-two", check), 200);
  ASSERT_TRUE(d.WaitForCount("ci failed on a ticket's pull request ticket=1 number=100 attempt=1/2", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("worker turn ended", 2)) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_EQ(d.log().find("ticket=2"), std::string::npos) << "one Ticket: " << d.log();
  // explain says what the Mandate may change, in merge order.
  const RunResult story =
      RunProgram(SUPERAGENT_BINARY, {"explain", "--config", Config(), "https://github.com/acme/web/issues/1#issuecomment-7001"});
  ASSERT_EQ(story.exit_code, 0) << story.err;
  EXPECT_NE(story.out.find("may change"), std::string::npos) << story.out;
  EXPECT_NE(story.out.find("acme/api → acme/web"), std::string::npos) << story.out;
}

// feishu.chat_repos, as a team uses it: a chat bound to two repositories asks which one a request
// naming none is about, once, and works in the one its asker chose.
TEST_F(ManyReposServeTest, AChatOfTwoRepositoriesAsksWhichAndWorksInTheOneChosen) {
  FakeGitHub home(SystemClock()), api(SystemClock()), web(SystemClock());
  api.repo = "acme/api";
  web.repo = "acme/web";
  home.other_repositories = {{api.repo, &api}, {web.repo, &web}};
  for (FakeGitHub* g : {&home, &api, &web}) MakeOrigin(*g);
  FakeFeishuWs ws;
  FakeFeishu feishu(SystemClock());
  feishu.topic_mode_chats.insert("oc_team");
  feishu.ws_endpoint_fn = [&ws] { return ws.EndpointAnswer(); };
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n  feishu:\n    people: [ou_alice]\n"
                       "    scopes:\n      \"chat:oc_team\": { receive_all: false }\n");
  Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" + std::to_string(port_) +
                               "\ngithub:\n  api_url: " + home.api_url() + "\n  repos: [" + home.repo +
                               ", acme/api, acme/web]\nfeishu:\n  enabled: true\n  api_url: " + feishu.url() +
                               "\n  app_id_env: SA_TEST_FEISHU_APP_ID\n  app_secret_env: SA_TEST_FEISHU_APP_SECRET\n"
                               "  realtime: long_connection\n  poll_interval_seconds: 3600\n  chat_repos:\n"
                               "    oc_team: [acme/api, acme/web]\nexecution:\n" + executor_ + "  git_remote: " +
                               (dir_ / "{repo}.git").string() + "\n");
  auto env = GitHubEnv();
  env.emplace_back("SA_TEST_FEISHU_APP_ID", feishu.app_id);
  env.emplace_back("SA_TEST_FEISHU_APP_SECRET", feishu.app_secret);
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, env);
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(ws.WaitFor([&] { return ws.connections == 1; })) << d.log();
  ASSERT_TRUE(d.WaitForCount("feishu identity open_id=", 1)) << d.log();
  auto say = [&](const std::string& id, const std::string& text, bool mention, const std::string& event) {
    const json item = FakeFeishu::Item(id, "oc_team", "ou_alice", text, SystemClock()->NowMs(), "omt_ask", "",
                                       mention ? json::array({FakeFeishu::HistoryMention("@_user_1", feishu.bot_open_id,
                                                                                         "superagent")})
                                               : json::array());
    {
      auto lock = feishu.Lock();
      feishu.messages.push_back(item);
    }
    ws.SendEvent(FakeFeishu::EventFor(item, "group", event), 1);
  };
  say("om_ask", "@_user_1 请修复 README 里的错别字 🙏", true, "ev-ask");
  ASSERT_TRUE(d.WaitForLine("repository asked ticket=1 repos=acme/api,acme/web")) << d.log();
  ASSERT_TRUE(d.WaitForCount("feishu message sent", 1)) << d.log();
  {
    auto lock = feishu.Lock();
    ASSERT_EQ(feishu.sent.size(), 1u) << "one message: the question";
    const std::string question = feishu.sent[0].dump();
    EXPECT_NE(question.find("Which repository is this about?"), std::string::npos) << question;
    EXPECT_NE(question.find("acme/web"), std::string::npos) << question;
  }
  EXPECT_EQ(d.log().find("worker turn"), std::string::npos) << "no work before the answer";

  say("om_two", "2", false, "ev-two");
  ASSERT_TRUE(d.WaitForLine("repository chosen ticket=1 repo=acme/web by=ou_alice")) << d.log();
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=1 number=100", 1)) << d.log();
  ASSERT_TRUE(d.WaitForCount("feishu message sent", 2)) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  {
    auto lock = web.Lock();
    ASSERT_EQ(web.pulls.size(), 1u) << "worked in the repository chosen";
  }
  EXPECT_EQ(PushedReadme("acme/web", PullBranch(web, 100)), "acme/web: There is the typo.\n");
  EXPECT_EQ(api.Count("POST", "/repos/acme/api/pulls"), 0);
  EXPECT_EQ(home.Count("POST", home.repo_path() + "/pulls"), 0);
}

// A policy row of one repository decides there and only there, and explain says which row.
TEST_F(ManyReposServeTest, ARepositorysOwnPolicyRowsAdmitThereAndExplainNamesThem) {
  FakeGitHub home(SystemClock()), web(SystemClock());
  web.repo = "acme/web";
  home.other_repositories = {{web.repo, &web}};
  for (FakeGitHub* g : {&home, &web}) MakeOrigin(*g);
  WriteConfig(home, {&home, &web});
  // Codertocat may ask in every repository but acme/web, whose own table lists only a maintainer
  // there; its mode is its own too.
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [Codertocat]\nrepos:\n  acme/web:\n"
                       "    mode: auto\n    sources:\n      github:\n        people: [web-maintainer]\n");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()}, GitHubEnv());
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  ASSERT_TRUE(d.WaitForCount("github identity login=superagent-bot", 1)) << d.log();
  ASSERT_EQ(DeliverEvent("issue_comment", "web-1", Mention(web, 6001)), 200);
  ASSERT_TRUE(d.WaitForLine("thread=github:acme/web:issue:1 outcome=ignore")) << d.log();
  ASSERT_EQ(DeliverEvent("issue_comment", "home-1", Mention(home, 6002)), 200);
  ASSERT_TRUE(d.WaitForCount("pull request linked ticket=1 number=100", 1)) << d.log();
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  const RunResult story = RunProgram(SUPERAGENT_BINARY, {"explain", "--config", Config(), "https://github.com/acme/web/issues/1#issuecomment-6001"});
  ASSERT_EQ(story.exit_code, 0) << story.err;
  EXPECT_NE(story.out.find("Codertocat wrote on GitHub issue acme/web#1"), std::string::npos) << story.out;
  EXPECT_NE(story.out.find("Codertocat is not in repos.\"acme/web\".sources.github.people"), std::string::npos) << story.out;
  EXPECT_NE(story.out.find("To change that: repos.\"acme/web\".sources.github.people — add Codertocat."), std::string::npos)
      << story.out;
  EXPECT_EQ(web.Count("POST", "/repos/acme/web/issues/1/comments"), 0) << "an ignored mention is not answered";
  EXPECT_EQ(home.Count("POST", home.repo_path() + "/issues/1/comments"), 2);
}

// github.repos: installation, as a team with a GitHub App runs it: the daemon serves what the
// installation lists; a repository added to the installation is served from GitHub's
// installation_repositories delivery on, and one removed is answered no more.
TEST_F(ManyReposServeTest, AnInstallationsRepositoriesAreServedAsItsEventsChangeThem) {
  FakeGitHub home(SystemClock()), web(SystemClock(), false), docs(SystemClock(), false);
  TestKey key;
  home.UseApp(key.key);
  home.repo = "acme/api";
  web.repo = "acme/web";
  docs.repo = "acme/docs";
  home.other_repositories = {{web.repo, &web}, {docs.repo, &docs}};
  home.not_installed = {docs.repo};
  for (FakeGitHub* g : {&home, &web, &docs}) MakeOrigin(*g);
  Write("policy.yaml", "mode: observe\nsources:\n  github:\n    people: [Codertocat]\n");
  Write("superagent.yaml", "data_dir: data\npolicy_file: policy.yaml\npanel:\n  listen: 127.0.0.1:" +
                               std::to_string(port_) + "\ngithub:\n  api_url: " + home.api_url() +
                               "\n  auth: app\n  app_id: \"12345\"\n  app_installation_id: \"42\"\n  repos: installation\n"
                               "execution:\n" + executor_ + "  git_remote: " + (dir_ / "{repo}.git").string() + "\n");
  DaemonProcess d(SUPERAGENT_BINARY, {"serve", "--config", Config()},
                  {{"GITHUB_APP_PRIVATE_KEY", key.pem}, {"GITHUB_WEBHOOK_SECRET", "hook-secret"}});
  ASSERT_TRUE(d.WaitForLine("ready")) << d.log();
  EXPECT_NE(d.log().find("sources github=installation"), std::string::npos) << d.log();
  ASSERT_TRUE(d.WaitForLine("github repositories changed added=acme/api,acme/web removed=- served=2")) << d.log();
  ASSERT_TRUE(d.WaitForLine("github identity login=team-agent[bot]")) << d.log();
  auto mention = [&](FakeGitHub& g, std::int64_t id) {
    json m = Mention(g, id);
    m["comment"]["body"] = "@team-agent please fix the typo in README";
    m["installation"] = {{"id", 42}};
    return m;
  };
  ASSERT_EQ(DeliverEvent("issue_comment", "web-1", mention(web, 7001)), 200) << d.log();
  ASSERT_TRUE(d.WaitForCount("github message posted", 1)) << d.log();
  EXPECT_EQ(web.Count("POST", "/repos/acme/web/issues/1/comments"), 1) << "acknowledged in place";

  // acme/docs joins the installation; GitHub says so.
  json added = WebhookExample("installation_repositories", "added");
  added["installation"]["id"] = 42;
  added["repositories_added"] = json::array({{{"id", 3}, {"full_name", "acme/docs"}, {"name", "docs"}, {"private", true}}});
  {
    auto lock = home.Lock();
    home.not_installed.clear();
  }
  ASSERT_EQ(DeliverEvent("installation_repositories", "inst-1", added), 200);
  ASSERT_TRUE(d.WaitForLine("github repositories changed added=acme/docs removed=- served=3")) << d.log();
  ASSERT_EQ(DeliverEvent("issue_comment", "docs-1", mention(docs, 7002)), 200);
  ASSERT_TRUE(d.WaitForCount("github message posted", 2)) << d.log();
  EXPECT_EQ(docs.Count("POST", "/repos/acme/docs/issues/1/comments"), 1);

  // acme/web leaves it: its deliveries are no longer the daemon's.
  json removed = WebhookExample("installation_repositories", "removed");
  removed["installation"]["id"] = 42;
  removed["repositories_removed"] = json::array({{{"id", 2}, {"full_name", "acme/web"}, {"name", "web"}, {"private", true}}});
  ASSERT_EQ(DeliverEvent("installation_repositories", "inst-2", removed), 200);
  ASSERT_TRUE(d.WaitForLine("github repositories changed added=- removed=acme/web served=2")) << d.log();
  EXPECT_EQ(DeliverEvent("issue_comment", "web-2", mention(web, 7003)), 202);
  {
    httplib::Client http("127.0.0.1", port_);
    http.set_bearer_token_auth(PanelTokenIn((dir_ / "data").string()));
    auto status = http.Get("/api/status");
    ASSERT_TRUE(status && status->status == 200);
    EXPECT_EQ(json::parse(status->body)["repositories"], (json{"acme/api", "acme/docs"}));
  }
  d.Signal(SIGTERM);
  EXPECT_EQ(d.Wait(), 0) << d.log();
  EXPECT_EQ(d.log().find("PRIVATE KEY"), std::string::npos);
}

}  // namespace
}  // namespace superagent::testing
