// The panel's HTTP API on a real httplib server on loopback, over a real store: reads, commands,
// every refusal (precise, and changing nothing), live updates, and no secret in any response.
#include <stdlib.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>

#include "app/wiring.h"
#include "panel/guard.h"
#include "panel/needs.h"
#include "panel_fixture.h"
#include "superagent/panel.h"
#include "superagent/secret_filter.h"
#include "superagent/views.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class PanelApiTest : public PanelSeedTest {
 protected:
  void SetUp() override {
    PanelSeedTest::SetUp();
    StartClockAnHourAgo();
    seed_ = Seed();
  }
  void TearDown() override {
    StopServer();
    PanelSeedTest::TearDown();
  }

  // Starts the panel with `config` (listen is replaced by the bound port's address).
  Status StartServer(Config config = Config{}, std::function<std::optional<SlotsView>()> slots = nullptr) {
    server_ = std::make_unique<httplib::Server>();
    panel::PanelContext ctx = app::PanelContextFor(config);
    ctx.engine = engine_.get();
    ctx.views = views_.get();
    ctx.token = kPanelTestToken;
    ctx.poll_ms = 50;
    ctx.slots = std::move(slots);
    ctx.secrets = secrets_;
    // The seed's Needs-you without the Set-up cards an empty Config adds; those have their own tests.
    if (!with_setup_) ctx.setup.clear();
    ctx.live_setup = live_setup_;
    ctx.policy_on_disk = [this] { return policy_on_disk_; };
    ctx.reload_policy = [this] {
      ++reloads_;
      return reload_result_;
    };
    auto panel = panel::InstallRoutes(*server_, ctx);
    if (!panel.ok()) return panel.status();
    panel_ = std::move(*panel);
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    client_ = NewClient();
    client_->set_bearer_token_auth(kPanelTestToken);  // a person, logged in
    return Status::Ok();
  }
  // A client with no credential: any process on this host (a worker) that has not the token.
  std::unique_ptr<httplib::Client> NewClient() {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(5, 0);
    return c;
  }
  void StopServer() {
    if (panel_) panel_->Stop();
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    panel_.reset();
    server_.reset();
  }

  json GetJson(const std::string& path, int expect = 200) {
    auto r = client_->Get(path.c_str());
    EXPECT_TRUE(r) << path;
    if (!r) return json();
    EXPECT_EQ(r->status, expect) << path << ": " << r->body;
    return json::parse(r->body, nullptr, false);
  }

  std::string Csrf() { return GetJson("/api/session")["csrf_token"].get<std::string>(); }

  // A command as the page sends it; `edit` changes the headers to try a refusal.
  httplib::Result Post(const std::string& path, const json& body, httplib::Headers headers = {}, bool with_csrf = true,
                       const std::string& content_type = "application/json") {
    if (with_csrf) headers.emplace("X-CSRF-Token", Csrf());
    headers.emplace("Origin", "http://127.0.0.1:" + std::to_string(port_));
    return client_->Post(path.c_str(), headers, body.dump(), content_type.c_str());
  }

  // One GET, as a logged-in person, from a panel of its own over another store (`engine` and the
  // database at `db`); the parsed answer, null when it was not a 200.
  json GetFromFreshPanel(Engine* engine, const std::string& db, const Config& config, const std::string& path) {
    auto views = Views::Open(db);
    EXPECT_TRUE(views.ok());
    if (!views.ok()) return json();
    httplib::Server server;
    panel::PanelContext ctx = app::PanelContextFor(config);
    ctx.engine = engine;
    ctx.views = views->get();
    ctx.token = kPanelTestToken;
    auto panel = panel::InstallRoutes(server, ctx);
    EXPECT_TRUE(panel.ok());
    if (!panel.ok()) return json();
    const int port = server.bind_to_any_port("127.0.0.1");
    std::thread t([&] { server.listen_after_bind(); });
    httplib::Client c("127.0.0.1", port);
    c.set_bearer_token_auth(kPanelTestToken);
    auto r = c.Get(path.c_str());
    (*panel)->Stop();
    server.stop();
    t.join();
    EXPECT_TRUE(r) << path;
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
    return r->status == 200 ? json::parse(r->body, nullptr, false) : json();
  }

  std::size_t CommandCount() { return GetJson("/api/commands")["commands"].size(); }

  PanelSeed seed_;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<panel::Panel> panel_;
  std::unique_ptr<httplib::Client> client_;
  std::thread thread_;
  int port_ = 0;
  int reloads_ = 0;
  panel::PolicyReloadResult reload_result_;
  std::optional<panel::PolicyReloadResult> policy_on_disk_;
  bool with_setup_ = false;
  std::function<std::vector<panel::SetupGap>()> live_setup_;  // as the daemon sets it
  SecretFilter* secrets_ = nullptr;  // the outbound filter the panel is given, when a test sets one
};

// ---------------------------------------------------------------------------------------------
// Reads

TEST_F(PanelApiTest, NeedsYouListsQuestionsOldestFirstThenDecisionsThenProblems) {
  ASSERT_TRUE(StartServer().ok());
  json needs = GetJson("/api/needs");
  ASSERT_EQ(needs["questions"].size(), 2u);
  EXPECT_EQ(needs["questions"][0]["id"], seed_.question_old);
  EXPECT_EQ(needs["questions"][0]["question"]["question"], "Which link should CONTRIBUTING.md point to?");
  EXPECT_EQ(needs["questions"][0]["question"]["form"]["options"][1], "the wiki page");
  EXPECT_EQ(needs["questions"][1]["id"], seed_.question_new);
  ASSERT_EQ(needs["decisions"].size(), 1u);
  EXPECT_EQ(needs["decisions"][0]["id"], seed_.blocked);
  EXPECT_EQ(needs["decisions"][0]["stoppable"], true);
  // Issue 24: a card carries what a person needs to act: why it is blocked, and the request itself.
  EXPECT_EQ(needs["decisions"][0]["stage_reason"], "the CI badge URL needs a token nobody gave");
  EXPECT_EQ(needs["decisions"][0]["request_quote"], "@agent please update the CI badge in README");
  EXPECT_TRUE(needs["decisions"][0]["request"]["url"].is_string());
  ASSERT_EQ(needs["problems"].size(), 1u);
  EXPECT_EQ(needs["problems"][0]["cause"], "feishu");
  EXPECT_EQ(needs["problems"][0]["title"], "Feishu: reading backfill failing");
  EXPECT_EQ(needs["problems"][0]["last_error"], "feishu backfill: HTTP 503 from open.feishu.cn");
  ASSERT_EQ(needs["problems"][0]["paths"].size(), 1u);
  EXPECT_EQ(needs["problems"][0]["paths"][0]["kind"], "source:feishu:backfill");
  EXPECT_EQ(needs["setup"], json::array());
  EXPECT_TRUE(needs["policy_file"].is_null());
  EXPECT_EQ(needs["count"], 5);
}

// Issue 24: one outage is one card. GitHub's failing read paths and deliveries fold into one
// "GitHub unavailable" card that says what to check and lists the paths; another cause keeps
// its own card.
// Issue 33: every JSON view passes the outbound filter — here a Ticket's stage reason quoting a
// key and a token, in the Ticket's view, the list and Needs-you — also when the client accepts
// gzip (the filter runs before httplib compresses); then Needs-you has one card and /metrics
// counts it.
TEST_F(PanelApiTest, ASecretInAnyViewIsShownAsTheMarkerAndNeedsYouSaysSo) {
  SecretFilter secrets(&clock_);
  secrets.Learn("llm.api_key_env", "model-key-0123456789");
  secrets_ = &secrets;
  const std::string token = "gh" + std::string("p_") + "aB3dE5gH7jK9mN1pQ2sT4vW6yZ8aB3dE5gH7j";
  ASSERT_TRUE(EngineTestPeer(*engine_).SetStage(seed_.blocked, Stage::kWorking, "tried again").ok());
  ASSERT_TRUE(EngineTestPeer(*engine_).SetStage(seed_.blocked, Stage::kBlocked,
                                "the log said KEY=model-key-0123456789 and " + token + " 中文").ok());
  ASSERT_TRUE(StartServer().ok());
  client_->set_default_headers({{"Accept-Encoding", "gzip, deflate"}});
  for (const std::string& path : std::vector<std::string>{"/api/tickets/" + std::to_string(seed_.blocked), "/api/tickets", "/api/needs"}) {
    auto r = client_->Get(path.c_str());
    ASSERT_TRUE(r) << path;
    ASSERT_EQ(r->status, 200) << path << ": " << r->body;
    EXPECT_EQ(r->body.find("model-key-0123456789"), std::string::npos) << path << ": " << r->body;
    EXPECT_EQ(r->body.find(token), std::string::npos) << path << ": " << r->body;
    EXPECT_NE(r->body.find("KEY=[REDACTED] and [REDACTED] 中文"), std::string::npos) << path << ": " << r->body;
  }
  const json card = GetJson("/api/needs")["secrets"];
  ASSERT_TRUE(card.is_object());
  EXPECT_EQ(card["count"], 3);
  EXPECT_EQ(card["path"], "panel");
  EXPECT_EQ(card["where"], "GET /api/needs");
  EXPECT_THAT(card["what"].get<std::string>(), HasSubstr("llm.api_key_env, ghp_ token"));
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("superagent_secrets_redacted_total{path=\"panel\"} 4"));
  EXPECT_THAT(metrics->body, HasSubstr("superagent_secrets_redacted_total{path=\"outbox\"} 0"));
}

TEST_F(PanelApiTest, OnePlatformOutageIsOneCardListingItsFailingPaths) {
  for (const char* path : {"issues", "comments", "ci"}) {
    SourceUpdate bad;
    bad.source = "github";
    bad.path = path;
    bad.ok = false;
    bad.error = std::string("500 Server Error on ") + path + " — 服务器错误";
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(engine_->UpdateSource(bad).ok());
    clock_.Advance(1'000);
  }
  ASSERT_TRUE(StartServer().ok());
  json needs = GetJson("/api/needs");
  ASSERT_EQ(needs["problems"].size(), 2u) << needs["problems"].dump(2);
  EXPECT_EQ(needs["problems"][0]["cause"], "feishu") << "the older cause first";
  const json github = needs["problems"][1];
  EXPECT_EQ(github["cause"], "github");
  EXPECT_EQ(github["title"], "GitHub unavailable: 3 paths failing");
  EXPECT_EQ(github["failures"], 3);
  EXPECT_THAT(github["last_error"].get<std::string>(), HasSubstr("500 Server Error on ci"));
  EXPECT_THAT(github["check"].get<std::string>(), HasSubstr("github.token_env"));
  ASSERT_EQ(github["paths"].size(), 3u);
  EXPECT_EQ(github["paths"][0]["kind"], "source:github:issues");
  EXPECT_EQ(github["paths"][0]["label"], "reading issues");
  EXPECT_EQ(needs["count"], 6) << "the seed's four cards of other causes (its would_accept's verdict card among them), Feishu's, and GitHub's";

  // One path recovers: the card stays for the two still failing.
  SourceUpdate fine;
  fine.source = "github";
  fine.path = "issues";
  ASSERT_TRUE(engine_->UpdateSource(fine).ok());
  needs = GetJson("/api/needs");
  EXPECT_EQ(needs["problems"][1]["title"], "GitHub unavailable: 2 paths failing");
}

// Issue 24: the panel says what is not set up, one card per piece, with the key that fixes it;
// a configured Source that has never answered is a Set-up card (its problems fold into it) until
// its first successful read.
TEST_F(PanelApiTest, WhatIsNotSetUpIsACardPerPieceUntilItWorks) {
  ASSERT_EQ(::setenv("SA_TEST_GH_TOKEN", "ghp_SETUPCARDSECRET", 1), 0);
  Config config;
  config.github.repo = "octo/仓库";
  config.github.token_env = "SA_TEST_GH_TOKEN";
  config.llm.api_key_env = "SA_TEST_UNSET_MODEL_KEY";
  ::unsetenv("SA_TEST_UNSET_MODEL_KEY");
  with_setup_ = true;
  ASSERT_TRUE(StartServer(config).ok());
  json needs = GetJson("/api/needs");
  std::vector<std::string> pieces;
  for (const json& c : needs["setup"]) pieces.push_back(c["piece"]);
  EXPECT_EQ(pieces, std::vector<std::string>{"model"}) << "GitHub has read before (the seed's notifications)";
  EXPECT_THAT(needs["setup"][0]["fix"].get<std::string>(), HasSubstr("SA_TEST_UNSET_MODEL_KEY="));
  EXPECT_EQ(needs["count"], 6);
  StopServer();

  // A fresh store whose GitHub has only ever failed: the first contact card, with the error, and
  // no separate GitHub problem.
  const std::string fresh = (dir_ / "fresh").string();
  std::filesystem::create_directories(fresh);
  auto engine = Engine::Open(fresh + "/superagent.db", &clock_, MakePolicy("observe"), "test", options_);
  ASSERT_TRUE(engine.ok());
  SourceUpdate bad;
  bad.source = "github";
  bad.path = "notifications";
  bad.ok = false;
  bad.error = "401 Bad credentials";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*engine)->UpdateSource(bad).ok());
  needs = GetFromFreshPanel(engine->get(), fresh + "/superagent.db", config, "/api/needs");
  ASSERT_EQ(needs["setup"].size(), 2u) << needs.dump(2);
  EXPECT_EQ(needs["setup"][0]["piece"], "github");
  EXPECT_EQ(needs["setup"][0]["what"], "GitHub has not answered since the daemon started.");
  EXPECT_EQ(needs["setup"][0]["last_error"], "401 Bad credentials");
  EXPECT_EQ(needs["setup"][0]["path"], "notifications");
  EXPECT_EQ(needs["problems"], json::array()) << "GitHub's problem is the Set-up card's";
  EXPECT_EQ(needs["count"], 2);
  EXPECT_EQ(needs.dump().find("ghp_SETUPCARDSECRET"), std::string::npos);
  ::unsetenv("SA_TEST_GH_TOKEN");
}

// Issue 34: a Source that nobody may ask is a Set-up card, read from the policy in force at each
// request, so it comes and goes with a reload — the cheapest honest way to keep it in sync.
TEST_F(PanelApiTest, NobodyMayAskIsACardThatFollowsThePolicyInForce) {
  Config config;
  config.github.repo = "octo/widgets";
  config.policy_file = (dir_ / "policy.yaml").string();
  std::ofstream(config.policy_file) << "mode: observe\nsources:\n  github:\n    people: []\n";
  const app::RunMode mode;
  live_setup_ = [&] { return app::PolicySetupGapsFor(config, engine_->CurrentPolicy(), mode); };
  ASSERT_TRUE(engine_->ApplyPolicy(MakePolicy("observe", "people: [alice, bob]=>people: []"), config.policy_file).ok());
  ASSERT_TRUE(StartServer(config).ok());
  json needs = GetJson("/api/needs");
  ASSERT_EQ(needs["setup"].size(), 1u) << needs.dump(2);
  EXPECT_EQ(needs["setup"][0]["piece"], "github.people");
  EXPECT_THAT(needs["setup"][0]["what"].get<std::string>(), HasSubstr("Nobody may ask for work yet on GitHub (octo/widgets)"));
  EXPECT_EQ(needs["setup"][0]["fix"],
            "Add the GitHub logins of the people who may ask to sources.github.people in " + config.policy_file +
                " (e.g. people: [alice, bob]). The key is at " + config.policy_file +
                ":4. The daemon reloads the file when it is saved; no restart is needed.");
  EXPECT_EQ(needs["count"], 6) << "the seed's five cards and this one";
  // The test policy's Feishu has people, but Feishu is off here: no card for it.
  ASSERT_TRUE(engine_->ApplyPolicy(MakePolicy("observe"), config.policy_file).ok());
  needs = GetJson("/api/needs");
  EXPECT_EQ(needs["setup"], json::array());
  EXPECT_EQ(needs["count"], 5);
  // A row that takes anyone's mention as explicit lets people ask, though nobody is listed.
  ASSERT_TRUE(engine_->ApplyPolicy(MakePolicy("observe",
                                              "people: [alice, bob]\n    bots: [\"dependabot[bot]\"]\n    scopes:\n"
                                              "      issues: { receive_all: false }=>people: []\n    scopes:\n"
                                              "      issues: { receive_all: false, others_addressed: explicit }"),
                                   config.policy_file)
                  .ok());
  EXPECT_EQ(GetJson("/api/needs")["setup"], json::array());
  ASSERT_TRUE(engine_->ApplyPolicy(MakePolicy("observe", "people: [alice, bob]=>people: []"), config.policy_file).ok());
  EXPECT_EQ(GetJson("/api/needs")["setup"].size(), 1u) << "and back, with the next version";
}

// Issue 34: the Set-up cards said `systemctl restart` to a daemon started by cmake/dev.sh. The
// hint follows how it runs, from the environment handed in (never read inside the logic).
TEST(SetupGaps, TheRestartHintIsTheOneForHowTheDaemonRuns) {
  ::unsetenv("SA_TEST_UNSET_A");
  Config config;
  config.llm.api_key_env = "SA_TEST_UNSET_A";
  auto model_fix = [&](const app::RunMode& mode) {
    for (const panel::SetupGap& g : app::SetupGapsFor(config, mode))
      if (g.piece == "model") return g.fix;
    return std::string();
  };
  const app::RunMode systemd =
      app::RunModeFrom({{"INVOCATION_ID", "5f0e"}}, "0::/system.slice/team-agent.service\n", "/etc/superagent/superagent.yaml");
  EXPECT_EQ(systemd.kind, app::RunMode::Kind::kSystemd);
  EXPECT_EQ(systemd.unit, "team-agent.service");
  EXPECT_THAT(model_fix(systemd), HasSubstr("Set SA_TEST_UNSET_A=<a key for https://api.deepseek.com> in "
                                            "/etc/superagent/secrets.env or a credential file"));
  EXPECT_THAT(model_fix(systemd), HasSubstr("Then restart it: sudo systemctl restart team-agent.service."));
  EXPECT_EQ(app::RunModeFrom({{"INVOCATION_ID", "5f0e"}}, "0::/user.slice/session-3.scope\n", "").unit,
            "superagent.service");

  const app::RunMode dev = app::RunModeFrom({{"SUPERAGENT_STARTED_BY", "dev.sh"}}, "0::/\n", "config/superagent.yaml");
  EXPECT_EQ(dev.kind, app::RunMode::Kind::kDevSh);
  EXPECT_THAT(model_fix(dev), HasSubstr("in the shell that starts the daemon (export it there)"));
  EXPECT_THAT(model_fix(dev), HasSubstr("Then restart it: stop it with Ctrl-C and run cmake/dev.sh run --config "
                                        "config/superagent.yaml."));
  EXPECT_THAT(model_fix(dev), Not(HasSubstr("systemctl")));

  const app::RunMode terminal = app::RunModeFrom({{"SUPERAGENT_STARTED_BY", ""}, {"INVOCATION_ID", ""}}, "", "");
  EXPECT_EQ(terminal.kind, app::RunMode::Kind::kTerminal);
  EXPECT_EQ(app::RestartHint(terminal), "Then restart it: stop it with Ctrl-C and start `superagent serve` again.");
  EXPECT_THAT(model_fix(terminal), Not(HasSubstr("systemctl")));
}

// Issue 24: a policy file saved on disk that is not in force is a Needs-you card with its
// problems as file:line:col, and goes when the file is fixed.
TEST_F(PanelApiTest, APolicyFileOnDiskThatIsNotInForceIsACard) {
  panel::PolicyReloadResult bad;
  bad.version = 1;
  bad.origin = "/etc/superagent/policy.yaml";
  bad.problems = {"/etc/superagent/policy.yaml:3:9: mode: must be one of off, observe, auto (got \"自动\")"};
  policy_on_disk_ = bad;
  ASSERT_TRUE(StartServer().ok());
  json needs = GetJson("/api/needs");
  ASSERT_TRUE(needs["policy_file"].is_object());
  EXPECT_EQ(needs["policy_file"]["what"],
            "/etc/superagent/policy.yaml has 1 problem: version 1 stays in force, and the next start of the daemon "
            "will refuse the file.");
  EXPECT_EQ(needs["policy_file"]["problems"][0], bad.problems[0]);
  EXPECT_EQ(needs["count"], 6);
  policy_on_disk_.reset();
  needs = GetJson("/api/needs");
  EXPECT_TRUE(needs["policy_file"].is_null());
  EXPECT_EQ(needs["count"], 5);
}

// Issue 24: the panel's explain names the key that would change the verdict and, as the CLI
// does, the line of the policy file in force where it is written.
TEST_F(PanelApiTest, ExplainSaysWhereInThePolicyFileTheKeyIs) {
  const std::string fresh = (dir_ / "explained").string();
  std::filesystem::create_directories(fresh);
  const std::string policy_file = fresh + "/policy.yaml";
  std::string yaml = kBasePolicy;
  yaml.replace(yaml.find("MODE"), 4, "observe");
  std::ofstream(policy_file) << yaml;
  auto engine = Engine::Open(fresh + "/superagent.db", &clock_, MakePolicy("observe"), policy_file, options_);
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE((*engine)->Receive(Comment("gh:comment:666", "mallory", true, "@agent 合并吧 🚀"), "test").ok());
  ASSERT_TRUE(RunOneEval(**engine, assessor_).ok());
  const json story =
      GetFromFreshPanel(engine->get(), fresh + "/superagent.db", Config{}, "/api/explain?q=gh:comment:666");
  EXPECT_EQ(story["change"]["key"], "sources.github.people");
  EXPECT_EQ(story["change"]["where"], "The key is at " + policy_file + ":5.");
  EXPECT_EQ(story["told"].back(), story["change"]["where"]);
}

// A platform the daemon has no Channel for is not an outage: the card says what is off.
TEST(ProblemCards, AMissingChannelIsNotCalledAnOutage) {
  SystemProblem p{"effect:post_message:github", "post_message on github failing: no channel is configured for github", 4,
                  1000, 2000};
  json cards = panel::ProblemCardsJson({p}, {});
  ASSERT_EQ(cards.size(), 1u);
  EXPECT_EQ(cards[0]["title"], "GitHub: sending post_message failing");
  EXPECT_THAT(cards[0]["check"].get<std::string>(), HasSubstr("This daemon does not talk to GitHub"));
  EXPECT_EQ(panel::ProblemCardsJson({p}, {"github"}), json::array()) << "folded into a Set-up card";
  EXPECT_EQ(panel::ProblemCause("unexpected:the eval runner"), "unexpected:the eval runner");
  EXPECT_EQ(panel::ProblemCause("source:feishu:threads"), "feishu");
  EXPECT_EQ(panel::ProblemCause("source:github:acme/web:issues"), "github:acme/web");
  EXPECT_EQ(panel::ProblemCause("source:github:notifications"), "github");
  EXPECT_EQ(panel::ProblemCause("source:github:团队/仓库:issues"), "github") << "no repository's name";
}

// Issue 37: a repository the token lost is one card of its own, saying what to look at; many
// repositories failing together are GitHub failing, one card that counts them.
TEST(ProblemCards, AFailingRepositoryIsOneCardAndManyAreOneOutage) {
  auto problem = [](const std::string& repo, const std::string& path, TimeMs at) {
    return SystemProblem{"source:github:" + repo + ":" + path, "GET /repos/" + repo + ": 404 Not Found", 3, at, at + 10};
  };
  std::vector<SystemProblem> one = {problem("acme/web", "issues", 1000), problem("acme/web", "comments", 1001),
                                    problem("acme/web", "ci", 1002)};
  json cards = panel::ProblemCardsJson(one, {});
  ASSERT_EQ(cards.size(), 1u) << cards.dump(2);
  EXPECT_EQ(cards[0]["cause"], "github:acme/web");
  EXPECT_EQ(cards[0]["title"], "GitHub acme/web: 3 paths failing");
  EXPECT_THAT(cards[0]["check"].get<std::string>(), HasSubstr("can the token (or the App's installation) still see acme/web"));
  EXPECT_EQ(cards[0]["paths"].size(), 3u);
  one.push_back(problem("acme/api", "ci", 1003));
  cards = panel::ProblemCardsJson(one, {});
  ASSERT_EQ(cards.size(), 2u);
  EXPECT_EQ(cards[1]["title"], "GitHub acme/api: reading ci failing");

  std::vector<SystemProblem> outage;
  for (int i = 0; i < 200; ++i) outage.push_back(problem("acme/service-" + std::to_string(i), "issues", 1000 + i));
  outage.push_back({"source:github:notifications", "GET /notifications: 502 Bad Gateway", 3, 900, 2000});
  cards = panel::ProblemCardsJson(outage, {});
  ASSERT_EQ(cards.size(), 1u) << "one outage, one card";
  EXPECT_EQ(cards[0]["cause"], "github");
  EXPECT_EQ(cards[0]["title"], "GitHub unavailable: 200 repositories failing");
  EXPECT_EQ(cards[0]["paths"].size(), 201u);
  EXPECT_THAT(cards[0]["check"].get<std::string>(), HasSubstr("githubstatus.com"));
  EXPECT_EQ(panel::ProblemCardsJson(outage, {"github"}), json::array()) << "folded into a Set-up card";
  EXPECT_EQ(panel::ProblemCardsJson(one, {"github"}), json::array());
}

// The Set-up cards for a config, as the daemon builds them at start (issue 24).
TEST(SetupGaps, EachMissingPieceNamesTheKeyThatFixesIt) {
  ::unsetenv("SA_TEST_UNSET_A");
  ::unsetenv("SA_TEST_UNSET_B");
  Config empty;
  empty.llm.api_key_env = "SA_TEST_UNSET_A";
  std::vector<std::string> pieces;
  for (const panel::SetupGap& g : app::SetupGapsFor(empty)) pieces.push_back(g.piece);
  EXPECT_EQ(pieces, (std::vector<std::string>{"sources", "model", "execution"}));
  EXPECT_THAT(app::SetupGapsFor(empty)[0].fix, HasSubstr("superagent init"));

  Config github;
  github.github.repo = "o/r";
  github.github.token_env = "SA_TEST_UNSET_B";
  github.llm.api_key_env = "SA_TEST_UNSET_A";
  github.feishu.enabled = true;
  github.feishu.app_id_env = "SA_TEST_UNSET_A";
  github.feishu.app_secret_env = "SA_TEST_UNSET_B";
  auto gaps = app::SetupGapsFor(github);
  ASSERT_EQ(gaps.size(), 3u);
  EXPECT_EQ(gaps[0].piece, "github");
  EXPECT_EQ(gaps[0].what, "GitHub has no token: the variable SA_TEST_UNSET_B is unset or empty, so nothing of o/r can be read.");
  EXPECT_FALSE(gaps[0].until_first_contact);
  EXPECT_EQ(gaps[1].piece, "feishu");
  EXPECT_EQ(gaps[1].what, "Feishu has no app: SA_TEST_UNSET_A and SA_TEST_UNSET_B are unset or empty, so no chat can be "
                          "read or answered.");
  EXPECT_EQ(gaps[2].piece, "model");
  EXPECT_EQ(gaps[2].what.substr(gaps[2].what.find(';')), "; the built-in agent cannot work either, so accepted Tickets are blocked.")
      << "the default executor needs the model too";
  github.execution.executor = "command";
  EXPECT_EQ(app::SetupGapsFor(github)[2].what.find("built-in"), std::string::npos);
}

// Issue 18: when the store cannot be read, Needs-you says so (503 with the reason) instead of
// "Nothing needs you", and /metrics fails the scrape instead of reporting zeros.
TEST_F(PanelApiTest, AStoreThatCannotBeReadIsA503NotAnEmptyPage) {
  ASSERT_TRUE(StartServer().ok());
  ASSERT_EQ(GetJson("/api/needs")["count"], 5);
  sqlite3* outside = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "superagent.db").string().c_str(), &outside), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(outside, "DROP TABLE system_problems;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(outside);
  json needs = GetJson("/api/needs", 503);
  EXPECT_THAT(needs["error"].get<std::string>(), HasSubstr("the store could not be read (needs)"));
  EXPECT_THAT(needs["error"].get<std::string>(), HasSubstr("system_problems"));
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 503) << metrics->body;
  EXPECT_EQ(GetJson("/api/status", 200)["mode"], "observe") << "what still reads is still served";
}

TEST_F(PanelApiTest, StatusSaysModePolicySlotsSourcesAndCursors) {
  Config config;
  config.execution.slots = 5;
  ASSERT_TRUE(StartServer(config).ok());
  json s = GetJson("/api/status");
  EXPECT_EQ(s["mode"], "observe");
  EXPECT_EQ(s["policy_version"], 1);
  EXPECT_EQ(s["policy"]["origin"], "test-policy.yaml");
  EXPECT_TRUE(s["policy"]["since"].is_string());
  EXPECT_EQ(s["slots"]["configured"], 5);
  EXPECT_EQ(s["slots"]["reserved_for_people"], 1);
  EXPECT_EQ(s["slots"]["in_use"], 0);
  EXPECT_EQ(s["slots"]["execution_running"], false);
  EXPECT_EQ(s["tickets"]["waiting_for_person"], 2);
  EXPECT_EQ(s["would_accept"], 1);
  ASSERT_EQ(s["sources"].size(), 2u);
  EXPECT_EQ(s["sources"][0]["source"], "feishu");
  EXPECT_EQ(s["sources"][0]["consecutive_failures"], 3);
  EXPECT_EQ(s["sources"][0]["last_error"], "HTTP 503 from open.feishu.cn");
  EXPECT_EQ(s["sources"][1]["skipped_items"], 2);
  EXPECT_TRUE(s["sources"][1]["last_success_at"].is_string());
  ASSERT_EQ(s["cursors"].size(), 2u);
  EXPECT_EQ(s["cursors"][1]["name"], "notifications");
}

// With execution running, the slots are the scheduler's live view: a Ticket whose background
// jobs hold a slot counts, and the reserved slot shows when a person's message is using it.
TEST_F(PanelApiTest, StatusShowsTheSchedulersLiveSlots) {
  Config config;
  config.execution.slots = 2;
  ASSERT_TRUE(StartServer(config, [] {
                SlotsView v;
                v.worker_slots = 2;
                v.worker_used = 2;
                v.reserved_used = true;
                return std::optional<SlotsView>(v);
              }).ok());
  json s = GetJson("/api/status");
  EXPECT_EQ(s["slots"]["execution_running"], true);
  EXPECT_EQ(s["slots"]["in_use"], 2);
  EXPECT_EQ(s["slots"]["reserved_in_use"], true);
}

TEST_F(PanelApiTest, HistoryFiltersByStageAndShowsATicketsWholeStory) {
  ASSERT_TRUE(StartServer().ok());
  json all = GetJson("/api/tickets");
  ASSERT_EQ(all["tickets"].size(), 4u);
  EXPECT_EQ(all["tickets"][0]["id"], seed_.ended);  // newest first
  json ended = GetJson("/api/tickets?stage=ended");
  ASSERT_EQ(ended["tickets"].size(), 1u);
  EXPECT_EQ(ended["tickets"][0]["end_reason"], "result delivered");
  EXPECT_EQ(GetJson("/api/tickets?stage=sleeping", 400)["error"],
            "stage must be one of working, idle, waiting_for_person, ready, blocked, ended");
  json page = GetJson("/api/tickets?limit=2&before=" + std::to_string(seed_.blocked));
  ASSERT_EQ(page["tickets"].size(), 2u);
  EXPECT_EQ(page["tickets"][0]["id"], seed_.question_new);

  json d = GetJson("/api/tickets/" + std::to_string(seed_.question_old));
  EXPECT_EQ(d["stage"], "waiting_for_person");
  EXPECT_EQ(d["mandate"]["strength"], "explicit");
  EXPECT_EQ(d["mandate"]["sender"], "alice");
  EXPECT_EQ(d["mandate"]["status"], "active");
  EXPECT_EQ(d["request"]["text"], "@agent please fix the broken link in CONTRIBUTING.md");
  EXPECT_EQ(d["request"]["url"], "https://github.com/o/r/issues/11#gh:comment:1001");
  EXPECT_EQ(d["threads"], json::array({"github:acme/widgets:issue:11"})) << "every place it is discussed";
  ASSERT_EQ(d["decisions"].size(), 1u);
  EXPECT_EQ(d["decisions"][0]["outcome"], "accept");
  EXPECT_EQ(d["decisions"][0]["triggers"][0]["gate"]["reason"], "allow_listed_addressed");
  ASSERT_EQ(d["assignments"].size(), 1u);
  ASSERT_EQ(d["messages"].size(), 2u);  // the acknowledgement, then the question
  EXPECT_EQ(d["messages"][0]["kind"], "acknowledgement");
  EXPECT_EQ(d["messages"][1]["kind"], "attention");
  // Transcript in time order: accepted, the request, the ack, the question, the stage change.
  std::vector<std::string> types;
  for (const json& e : d["transcript"]) types.push_back(e["type"].get<std::string>() + ":" + e["kind"].get<std::string>());
  EXPECT_EQ(types, (std::vector<std::string>{"input:trigger", "sent:acknowledgement", "stage:idle", "sent:attention",
                                             "stage:waiting_for_person"}));
  EXPECT_EQ(GetJson("/api/tickets/999", 404)["error"], "ticket 999 does not exist");
}

TEST_F(PanelApiTest, ObserveReviewShowsEvidenceAndMatchedRules) {
  ASSERT_TRUE(StartServer().ok());
  json o = GetJson("/api/observe");
  EXPECT_EQ(o["mode"], "observe");
  ASSERT_EQ(o["decisions"].size(), 1u);
  const json& d = o["decisions"][0];
  EXPECT_EQ(d["would_accept"], true);
  EXPECT_EQ(d["outcome"], "ignore");
  EXPECT_EQ(d["matched_rules"], json::array({"wording"}));
  EXPECT_EQ(d["assessment"]["evidence"], "says 'Instalation'");
  ASSERT_EQ(d["triggers"].size(), 1u);
  EXPECT_EQ(d["triggers"][0]["id"], seed_.would_accept_trigger);
  EXPECT_EQ(d["triggers"][0]["gate"]["strength"], "inferred");
}

TEST_F(PanelApiTest, ExplainAndTheRestOfTheReadRoutes) {
  ASSERT_TRUE(StartServer().ok());
  json story = GetJson("/api/explain?q=https://github.com/o/r/issues/11%23gh:comment:1001");
  EXPECT_THAT(story["summary"].get<std::string>(), HasSubstr("created Ticket"));
  EXPECT_THAT(GetJson("/api/explain?q=nope", 404)["error"].get<std::string>(), HasSubstr("was ever received"));
  EXPECT_EQ(GetJson("/api/explain", 400)["error"], "parameter q (a trigger id or message URL) is required");
  EXPECT_EQ(GetJson("/api/nothing-here", 404)["error"], "no such API route: /api/nothing-here");
  auto page = client_->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_THAT(page->body, HasSubstr("<title>superagent</title>"));
  EXPECT_EQ(page->get_header_value("X-Frame-Options"), "DENY");
  EXPECT_THAT(page->get_header_value("Content-Security-Policy"), HasSubstr("frame-ancestors 'none'"));
  EXPECT_EQ(client_->Get("/panel.js")->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(client_->Get("/healthz")->body, "ok\n");
  json session = GetJson("/api/session");
  EXPECT_EQ(session["auth"], "token");  // the generated panel token, not a fixed password
  EXPECT_TRUE(session["user"].is_null());
  EXPECT_EQ(session["csrf_token"].get<std::string>().size(), 64u);
}

// ---------------------------------------------------------------------------------------------
// Commands

TEST_F(PanelApiTest, StopIsAConfirmedCommandRecordedAsAHumanStop) {
  ASSERT_TRUE(StartServer().ok());
  const std::string path = "/api/tickets/" + std::to_string(seed_.blocked) + "/stop";
  auto unconfirmed = Post(path, {{"name", "Tess"}});
  ASSERT_TRUE(unconfirmed);
  EXPECT_EQ(unconfirmed->status, 400);
  EXPECT_EQ(GetJson("/api/tickets/" + std::to_string(seed_.blocked))["stage"], "blocked");

  auto r = Post(path, {{"confirm", true}, {"name", "Tess"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["by"], "Tess (panel)");
  json d = GetJson("/api/tickets/" + std::to_string(seed_.blocked));
  EXPECT_EQ(d["stage"], "ended");
  EXPECT_EQ(d["end_reason"], "stopped by Tess (panel)");
  EXPECT_EQ(d["mandate"]["status"], "withdrawn");
  EXPECT_EQ(d["mandate"]["ended"]["by"], "Tess (panel)");
  EXPECT_EQ(d["stoppable"], false);
  ASSERT_EQ(d["commands"].size(), 1u);
  EXPECT_EQ(d["commands"][0]["command"], "stop");
  EXPECT_EQ(d["commands"][0]["who"], "Tess (panel)");
  EXPECT_TRUE(d["commands"][0]["at"].is_string());

  auto again = Post(path, {{"confirm", true}});
  EXPECT_EQ(again->status, 409);
  EXPECT_THAT(again->body, HasSubstr("already stopped"));
  EXPECT_EQ(Post("/api/tickets/999/stop", {{"confirm", true}})->status, 404);
  EXPECT_EQ(CommandCount(), 1u);
}

// A type-confused command body used to throw inside the handler (value("confirm", false) on a
// string): 500 with the exception's text in a header. Now it is 400 naming the field, and
// nothing changes.
TEST_F(PanelApiTest, ATypeConfusedCommandBodyIs400WithTheFieldNamedAndChangesNothing) {
  ASSERT_TRUE(StartServer().ok());
  const std::string path = "/api/tickets/" + std::to_string(seed_.blocked) + "/stop";
  struct Case {
    json body;
    const char* says;
  };
  for (const Case& c : {Case{{{"confirm", "yes"}}, R"(field \"confirm\": expected boolean, got string)"},
                        Case{{{"confirm", 1}}, R"(field \"confirm\": expected boolean, got integer)"},
                        Case{{{"confirm", {{"really", true}}}}, "expected boolean, got object"},
                        Case{{{"confirm", json::array({true})}}, "expected boolean, got array"}}) {
    auto r = Post(path, c.body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << c.body.dump() << ": " << r->body;
    EXPECT_THAT(r->body, HasSubstr(c.says));
    EXPECT_FALSE(r->has_header("EXCEPTION_WHAT")) << r->get_header_value("EXCEPTION_WHAT");
  }
  for (const std::string raw : {"[1]", "\"stop\"", "{\"confirm\":", "{\"confirm\": tru}"}) {
    auto r = client_->Post(path.c_str(), {{"X-CSRF-Token", Csrf()}, {"Origin", "http://127.0.0.1:" + std::to_string(port_)}},
                           raw, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << raw;
    EXPECT_THAT(r->body, HasSubstr("the body: ")) << r->body;
  }
  EXPECT_EQ(GetJson("/api/tickets/" + std::to_string(seed_.blocked))["stage"], "blocked");
  EXPECT_EQ(CommandCount(), 0u);
  // A name of another type is no name (the request's address stands in); the stop goes through.
  auto r = Post(path, {{"confirm", true}, {"name", {{"first", "Tess"}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["by"], "panel user at 127.0.0.1");
}

// What a handler throws (a fault of ours) is a generic 500: the text stays in the log, the
// response carries no EXCEPTION_WHAT header, and the server goes on serving.
TEST_F(PanelApiTest, AHandlerThatThrowsIsAGeneric500AndTheServerGoesOn) {
  ASSERT_TRUE(StartServer(Config{}, []() -> std::optional<SlotsView> {
                throw std::runtime_error("secret detail at /home/tess/.config");
              }).ok());
  auto r = client_->Get("/api/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_FALSE(r->has_header("EXCEPTION_WHAT")) << r->get_header_value("EXCEPTION_WHAT");
  EXPECT_EQ(r->body.find("secret detail"), std::string::npos) << r->body;
  EXPECT_THAT(r->body, HasSubstr("internal error"));
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  auto again = client_->Get("/api/needs");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}

TEST_F(PanelApiTest, AnsweringResumesTheWaitingTicket) {
  ASSERT_TRUE(StartServer().ok());
  const std::string path = "/api/tickets/" + std::to_string(seed_.question_old) + "/answer";
  EXPECT_EQ(Post(path, {{"answer", "   "}})->status, 400);
  auto r = Post(path, {{"answer", "docs/setup.md"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["by"], "panel user at 127.0.0.1");
  json d = GetJson("/api/tickets/" + std::to_string(seed_.question_old));
  EXPECT_EQ(d["stage"], "idle");
  EXPECT_EQ(d["assignments"].size(), 2u);  // a new Assignment to resume
  const json& transcript = d["transcript"];
  auto answer = std::find_if(transcript.begin(), transcript.end(), [](const json& e) { return e["kind"] == "answer" && e["type"] == "input"; });
  ASSERT_NE(answer, transcript.end()) << transcript.dump();
  EXPECT_EQ((*answer)["text"], "panel user at 127.0.0.1 chose 1. docs/setup.md") << "the answer reads as words, not JSON";
  // The discussion is told, in one line, what was answered and by whom.
  auto told = std::find_if(transcript.begin(), transcript.end(), [](const json& e) { return e["type"] == "sent" && e["kind"] == "answer"; });
  ASSERT_NE(told, transcript.end()) << transcript.dump();
  EXPECT_EQ((*told)["text"], "panel user at 127.0.0.1 answered in the panel: docs/setup.md");
  // The next question is now first in line.
  json needs = GetJson("/api/needs");
  ASSERT_EQ(needs["questions"].size(), 1u);
  EXPECT_EQ(needs["questions"][0]["id"], seed_.question_new);

  auto twice = Post(path, {{"answer", "again"}});
  EXPECT_EQ(twice->status, 409);
  EXPECT_THAT(twice->body, HasSubstr("is not waiting for an answer"));
  EXPECT_EQ(CommandCount(), 1u);
}

// The panel's question form sends {"option": n} for a choice and {"text": ...} for words; what the
// form does not take is refused with the daemon's precise reason, and changes nothing.
TEST_F(PanelApiTest, AnAnswerFromTheFormIsAnOptionOrWordsAndAWrongOneIsRefusedPrecisely) {
  ASSERT_TRUE(StartServer().ok());
  const std::string old_path = "/api/tickets/" + std::to_string(seed_.question_old) + "/answer";
  const std::pair<json, std::string> refusals[] = {
      {json{{"option", "2"}}, "answer.option: must be a number from 1 to 2"},
      {json{{"option", 3}}, "answer.option: must be a number from 1 to 2"},
      {json{{"option", -1}}, "answer.option: must be a number from 1 to 2"},
      {json{{"option", 1e30}}, "answer.option: must be a number from 1 to 2"},
      {json{{"text", 5}}, "answer.text: must be a string"},
      {json{{"text", "   "}}, "the answer is empty"},
      {json{{"choice", 1}}, "the answer must have \"option\" or \"text\""},
      {json::array({1}), "the answer must be text or {\"option\": n} or {\"text\": \"...\"}"},
  };
  for (const auto& [answer, why] : refusals) {
    auto r = Post(old_path, {{"answer", answer}, {"name", "Tess"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << answer.dump();
    EXPECT_EQ(json::parse(r->body)["error"], why) << answer.dump();
  }
  EXPECT_EQ(GetJson("/api/tickets/" + std::to_string(seed_.question_old))["stage"], "waiting_for_person");
  EXPECT_EQ(CommandCount(), 0u);

  auto chose = Post(old_path, {{"answer", {{"option", 2}}}, {"name", "Tess"}});
  ASSERT_EQ(chose->status, 200) << chose->body;
  json d = GetJson("/api/tickets/" + std::to_string(seed_.question_old));
  auto answer = std::find_if(d["transcript"].begin(), d["transcript"].end(), [](const json& e) { return e["kind"] == "answer" && e["type"] == "input"; });
  ASSERT_NE(answer, d["transcript"].end());
  EXPECT_EQ((*answer)["text"], "Tess (panel) chose 2. the wiki page");

  // A free-text question takes words, Chinese and emoji as they are.
  const std::string new_path = "/api/tickets/" + std::to_string(seed_.question_new) + "/answer";
  auto words = Post(new_path, {{"answer", {{"text", "是的，请写上 🐍 3.8 不再支持"}}}, {"name", "Tess"}});
  ASSERT_EQ(words->status, 200) << words->body;
  d = GetJson("/api/tickets/" + std::to_string(seed_.question_new));
  answer = std::find_if(d["transcript"].begin(), d["transcript"].end(), [](const json& e) { return e["kind"] == "answer" && e["type"] == "input"; });
  ASSERT_NE(answer, d["transcript"].end());
  EXPECT_EQ((*answer)["text"], "Tess (panel) answered: 是的，请写上 🐍 3.8 不再支持");
}

TEST_F(PanelApiTest, ReloadPolicyShowsTheValidationResultAndIsRecorded) {
  ASSERT_TRUE(StartServer().ok());
  reload_result_.valid = false;
  reload_result_.version = 1;
  reload_result_.origin = "/etc/superagent/policy.yaml";
  reload_result_.problems = {"/etc/superagent/policy.yaml:1:7: mode: must be one of off, observe, auto (got \"fast\")"};
  auto bad = Post("/api/policy/reload", {{"name", "Tess"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 422);
  json b = json::parse(bad->body);
  EXPECT_EQ(b["valid"], false);
  EXPECT_EQ(b["problems"][0], reload_result_.problems[0]);
  reload_result_ = {};
  reload_result_.valid = true;
  reload_result_.changed = true;
  reload_result_.version = 2;
  auto good = Post("/api/policy/reload", json::object());
  EXPECT_EQ(good->status, 200);
  EXPECT_EQ(json::parse(good->body)["version"], 2);
  EXPECT_EQ(reloads_, 2);
  json commands = GetJson("/api/commands")["commands"];
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[1]["command"], "reload_policy");
  EXPECT_EQ(commands[1]["who"], "Tess (panel)");
  EXPECT_EQ(commands[1]["detail"]["valid"], false);
}

// ---------------------------------------------------------------------------------------------
// Refusals: each precise, each changing nothing.

TEST_F(PanelApiTest, CommandsWithoutTheCsrfTokenOrFromAnotherOriginAreRefused) {
  ASSERT_TRUE(StartServer().ok());
  const std::string path = "/api/tickets/" + std::to_string(seed_.blocked) + "/stop";
  const json body = {{"confirm", true}};

  auto no_token = Post(path, body, {}, /*with_csrf=*/false);
  EXPECT_EQ(no_token->status, 403);
  EXPECT_THAT(no_token->body, HasSubstr("missing or stale CSRF token"));

  auto wrong_token = Post(path, body, {{"X-CSRF-Token", std::string(64, 'a')}}, false);
  EXPECT_EQ(wrong_token->status, 403);

  httplib::Headers evil{{"X-CSRF-Token", Csrf()}, {"Origin", "http://evil.example"}};
  auto cross = client_->Post(path.c_str(), evil, body.dump(), "application/json");
  EXPECT_EQ(cross->status, 403);
  EXPECT_THAT(cross->body, HasSubstr("Origin http://evil.example is not http://127.0.0.1:"));

  auto site = Post(path, body, {{"Sec-Fetch-Site", "cross-site"}});
  EXPECT_EQ(site->status, 403);
  EXPECT_THAT(site->body, HasSubstr("Sec-Fetch-Site: cross-site"));

  auto form = Post(path, body, {}, true, "application/x-www-form-urlencoded");
  EXPECT_EQ(form->status, 415);

  auto not_object = client_->Post(path.c_str(), {{"X-CSRF-Token", Csrf()}}, "[1]", "application/json");
  EXPECT_EQ(not_object->status, 400);

  EXPECT_EQ(GetJson("/api/tickets/" + std::to_string(seed_.blocked))["stage"], "blocked");
  EXPECT_EQ(GetJson("/api/tickets/" + std::to_string(seed_.blocked))["mandate"]["status"], "active");
  EXPECT_EQ(CommandCount(), 0u);
  EXPECT_EQ(reloads_, 0);
}

TEST_F(PanelApiTest, WithoutAPasswordOnlyLoopbackHostNamesAreAnswered) {
  ASSERT_TRUE(StartServer().ok());
  // A page whose DNS name was rebound to 127.0.0.1 sends its own name as Host.
  httplib::Headers rebound{{"Host", "evil.example:" + std::to_string(port_)}};
  auto read = client_->Get("/api/status", rebound);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 403);
  EXPECT_THAT(read->body, HasSubstr("answers only requests to 127.0.0.1 or localhost"));
  httplib::Headers command = rebound;
  command.emplace("X-CSRF-Token", Csrf());
  command.emplace("Origin", "http://evil.example:" + std::to_string(port_));
  auto stop = client_->Post(("/api/tickets/" + std::to_string(seed_.blocked) + "/stop").c_str(), command,
                            json{{"confirm", true}}.dump(), "application/json");
  EXPECT_EQ(stop->status, 403);
  EXPECT_EQ(GetJson("/api/tickets/" + std::to_string(seed_.blocked))["stage"], "blocked");
  EXPECT_EQ(client_->Get("/api/status", {{"Host", "localhost:" + std::to_string(port_)}})->status, 200);
}

TEST_F(PanelApiTest, WithATokenEveryRequestNeedsItAndTheUserNameIsWhoActed) {
  ASSERT_EQ(setenv("SUPERAGENT_TEST_PANEL_TOKEN", "correct-horse-battery-staple", 1), 0);
  Config config;
  config.panel.token_env = "SUPERAGENT_TEST_PANEL_TOKEN";
  ASSERT_TRUE(StartServer(config).ok());
  unsetenv("SUPERAGENT_TEST_PANEL_TOKEN");

  client_ = NewClient();
  auto anonymous = client_->Get("/api/status");
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_THAT(anonymous->get_header_value("WWW-Authenticate"), HasSubstr("Basic realm="));
  EXPECT_EQ(client_->Get("/")->status, 200);  // the page's own files hold no data; its reads ask
  EXPECT_EQ(client_->Get("/healthz")->status, 200);  // for probes; says nothing
  client_->set_basic_auth("tess", "wrong");
  EXPECT_EQ(client_->Get("/api/status")->status, 401);
  // The generated token does not work when a fixed password replaces it.
  httplib::Client generated("127.0.0.1", port_);
  generated.set_bearer_token_auth(kPanelTestToken);
  EXPECT_EQ(generated.Get("/api/status")->status, 401);
  httplib::Client bearer("127.0.0.1", port_);
  bearer.set_bearer_token_auth("correct-horse-battery-staple");
  EXPECT_EQ(bearer.Get("/api/status")->status, 200);

  client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
  client_->set_basic_auth("tess", "correct-horse-battery-staple");
  json session = GetJson("/api/session");
  EXPECT_EQ(session["auth"], "password");
  EXPECT_EQ(session["user"], "tess");
  // With a password, any Host is answered (a reverse proxy may use its own name).
  EXPECT_EQ(client_->Get("/api/status", {{"Host", "agent.example.com"}})->status, 200);
  auto r = Post("/api/tickets/" + std::to_string(seed_.blocked) + "/stop", {{"confirm", true}, {"name", "mallory"}});
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["by"], "tess (panel)");  // the authenticated name wins
}

// ---------------------------------------------------------------------------------------------
// The panel token (issue 19): no ambient authority on loopback.

// A token of the same length as the real one, wrong only in its last character.
std::string NearlyTheToken() {
  std::string t = kPanelTestToken;
  t.back() = t.back() == '0' ? '1' : '0';
  return t;
}

TEST_F(PanelApiTest, AProcessWithoutTheTokenCanNeitherReadNorCommand) {
  ASSERT_TRUE(StartServer().ok());
  auto anon = NewClient();  // a worker on this host: loopback, no token
  const std::string ticket = "/api/tickets/" + std::to_string(seed_.blocked);
  // Reads are closed too: they hold every Ticket's request, transcript and questions, which the
  // sandbox hides from a worker; an open loopback read would hand them back.
  for (const std::string path : {"/api/session", "/api/status", "/api/needs", "/api/tickets", ticket.c_str(), "/api/observe",
                                 "/api/commands", "/api/explain?q=gh:comment:1001", "/api/events", "/api/intercom",
                                 "/metrics", "/api/nothing"}) {
    auto r = anon->Get(path.c_str());
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_THAT(r->body, HasSubstr("superagent panel-url")) << path;
    EXPECT_EQ(r->body.find("csrf"), std::string::npos) << path;
    EXPECT_TRUE(r->get_header_value("WWW-Authenticate").empty()) << "no browser password prompt for the generated token";
  }
  // Open: the page's own files (no data), probes, and the login link itself.
  EXPECT_EQ(anon->Get("/")->status, 200);
  EXPECT_EQ(anon->Get("/panel.js")->status, 200);
  EXPECT_EQ(anon->Get("/healthz")->status, 200);
  // A wrong token, of the right length or not, as Bearer, Basic or cookie: 401.
  for (const std::string& wrong : {NearlyTheToken(), std::string("x"), std::string(kPanelTestToken) + "0"}) {
    httplib::Client c("127.0.0.1", port_);
    c.set_bearer_token_auth(wrong);
    EXPECT_EQ(c.Get("/api/status")->status, 401) << wrong;
    EXPECT_EQ(anon->Get("/api/status", {{"Cookie", "superagent_panel_" + std::to_string(port_) + "=" + wrong}})->status, 401);
  }
  httplib::Client basic("127.0.0.1", port_);
  basic.set_basic_auth("tess", NearlyTheToken());
  EXPECT_EQ(basic.Get("/api/status")->status, 401);
  // The token itself is not the cookie: a login cookie holds a digest of it.
  EXPECT_EQ(anon->Get("/api/status", {{"Cookie", std::string("superagent_panel=") + kPanelTestToken}})->status, 401);
  // Nothing changed on the way.
  EXPECT_EQ(GetJson(ticket)["stage"], "blocked");
  EXPECT_EQ(CommandCount(), 0u);
}

TEST_F(PanelApiTest, TheLoginLinkSetsAStrictHttpOnlyCookieThatReadsAndCommands) {
  ASSERT_TRUE(StartServer().ok());
  auto browser = NewClient();  // follows no redirect: the test reads each answer
  auto wrong = browser->Get(("/login?token=" + NearlyTheToken()).c_str());
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_THAT(wrong->body, HasSubstr("superagent panel-url"));
  EXPECT_FALSE(wrong->has_header("Set-Cookie"));
  EXPECT_EQ(browser->Get("/login")->status, 401);

  auto login = browser->Get((std::string("/login?token=") + kPanelTestToken).c_str());
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 303);
  EXPECT_EQ(login->get_header_value("Location"), "/");
  const std::string set_cookie = login->get_header_value("Set-Cookie");
  EXPECT_THAT(set_cookie, ::testing::StartsWith("superagent_panel_" + std::to_string(port_) + "="));
  EXPECT_THAT(set_cookie, HasSubstr("; HttpOnly"));
  EXPECT_THAT(set_cookie, HasSubstr("; SameSite=Strict"));
  EXPECT_THAT(set_cookie, HasSubstr("; Path=/"));
  EXPECT_EQ(set_cookie.find(kPanelTestToken), std::string::npos) << "the cookie is not the token";
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));

  httplib::Headers logged_in{{"Cookie", cookie}};
  EXPECT_EQ(browser->Get("/api/status", logged_in)->status, 200);
  auto session = browser->Get("/api/session", logged_in);
  ASSERT_EQ(session->status, 200);
  const std::string csrf = json::parse(session->body)["csrf_token"];
  EXPECT_EQ(session->body.find(kPanelTestToken), std::string::npos);
  const std::string stop = "/api/tickets/" + std::to_string(seed_.blocked) + "/stop";
  const std::string origin = "http://127.0.0.1:" + std::to_string(port_);
  // The cookie does not replace the CSRF and Origin checks.
  httplib::Headers no_csrf{{"Cookie", cookie}, {"Origin", origin}};
  EXPECT_EQ(browser->Post(stop.c_str(), no_csrf, json{{"confirm", true}}.dump(), "application/json")->status, 403);
  httplib::Headers cross{{"Cookie", cookie}, {"Origin", "http://evil.example"}, {"X-CSRF-Token", csrf}};
  EXPECT_EQ(browser->Post(stop.c_str(), cross, json{{"confirm", true}}.dump(), "application/json")->status, 403);
  EXPECT_EQ(GetJson("/api/tickets/" + std::to_string(seed_.blocked))["stage"], "blocked");
  httplib::Headers page{{"Cookie", cookie}, {"Origin", origin}, {"X-CSRF-Token", csrf}};
  auto stopped = browser->Post(stop.c_str(), page, json{{"confirm", true}, {"name", "Tess 测试"}}.dump(), "application/json");
  ASSERT_EQ(stopped->status, 200) << stopped->body;
  EXPECT_EQ(json::parse(stopped->body)["by"], "Tess 测试 (panel)");
  EXPECT_EQ(GetJson("/api/tickets/" + std::to_string(seed_.blocked))["stage"], "ended");
}

TEST_F(PanelApiTest, ANonLoopbackPanelWithoutAPasswordDoesNotStart) {
  Config config;
  config.panel.listen = "0.0.0.0:8080";
  Status s = StartServer(config);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("is not a loopback address: set panel.token_env"));
  config.panel.token_env = "SUPERAGENT_TEST_UNSET_VARIABLE";
  unsetenv("SUPERAGENT_TEST_UNSET_VARIABLE");
  s = StartServer(config);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("SUPERAGENT_TEST_UNSET_VARIABLE, which is unset or empty"));
}

TEST_F(PanelApiTest, NoSecretInAnyResponse) {
  const std::string secrets[] = {"ghp_PANELTESTSECRET0123456789abcdef", "sk-paneltestsecret0123456789", "hunter2-panel-pass"};
  ASSERT_EQ(setenv("SUPERAGENT_TEST_GH", secrets[0].c_str(), 1), 0);
  ASSERT_EQ(setenv("SUPERAGENT_TEST_LLM", secrets[1].c_str(), 1), 0);
  ASSERT_EQ(setenv("SUPERAGENT_TEST_PANEL", secrets[2].c_str(), 1), 0);
  Config config;
  config.github.token_env = "SUPERAGENT_TEST_GH";
  config.llm.api_key_env = "SUPERAGENT_TEST_LLM";
  config.panel.token_env = "SUPERAGENT_TEST_PANEL";
  ASSERT_TRUE(StartServer(config).ok());
  client_ = NewClient();
  client_->set_basic_auth("tess", secrets[2]);
  std::string everything;
  for (std::string path : {"/api/session", "/api/status", "/api/needs", "/api/tickets", "/api/observe", "/api/commands",
                           "/api/explain?q=gh:comment:1001", "/", "/panel.js", "/api/nothing"}) {
    auto r = client_->Get(path.c_str());
    ASSERT_TRUE(r) << path;
    everything += r->body;
    for (const auto& [k, v] : r->headers) everything += k + ": " + v + "\n";
  }
  for (TicketId id : {seed_.question_old, seed_.blocked, seed_.ended})
    everything += client_->Get(("/api/tickets/" + std::to_string(id)).c_str())->body;
  everything += Post("/api/tickets/" + std::to_string(seed_.blocked) + "/stop", {{"confirm", true}})->body;
  for (const std::string& secret : secrets) EXPECT_EQ(everything.find(secret), std::string::npos) << secret;
  unsetenv("SUPERAGENT_TEST_GH");
  unsetenv("SUPERAGENT_TEST_LLM");
  unsetenv("SUPERAGENT_TEST_PANEL");
}

// ---------------------------------------------------------------------------------------------
// Live updates

TEST_F(PanelApiTest, EventsStreamSaysHelloThenChangeWhenTheStoreChangesAndEndsOnStop) {
  ASSERT_TRUE(StartServer().ok());
  std::mutex mu;
  std::condition_variable cv;
  std::string received;
  bool ended = false;
  std::thread reader([&] {
    httplib::Client c("127.0.0.1", port_);
    c.set_bearer_token_auth(kPanelTestToken);
    c.set_read_timeout(10, 0);
    c.Get("/api/events", [&](const char* data, size_t len) {
      std::lock_guard<std::mutex> lock(mu);
      received.append(data, len);
      cv.notify_all();
      return true;
    });
    std::lock_guard<std::mutex> lock(mu);
    ended = true;
    cv.notify_all();
  });
  auto wait_for = [&](const std::string& what) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return received.find(what) != std::string::npos; });
  };
  ASSERT_TRUE(wait_for("event: hello")) << received;
  EXPECT_EQ(received.find("event: change"), std::string::npos);
  Receive(Comment("gh:comment:live", "alice", true, "@agent one more thing", 21));  // another connection commits
  ASSERT_TRUE(wait_for("event: change")) << received;

  StopServer();  // Panel::Stop ends the stream, so the server stops at once
  {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return ended; }));
  }
  reader.join();
}

TEST_F(PanelApiTest, TooManyStreamsAreRefusedSoPagesFallBackToPolling) {
  ASSERT_TRUE(StartServer().ok());
  std::vector<std::thread> readers;
  std::mutex mu;
  std::condition_variable cv;
  int hellos = 0;
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&] {
      httplib::Client c("127.0.0.1", port_);
      c.set_bearer_token_auth(kPanelTestToken);
      c.Get("/api/events", [&](const char* data, size_t len) {
        if (std::string(data, len).find("hello") != std::string::npos) {
          std::lock_guard<std::mutex> lock(mu);
          ++hellos;
          cv.notify_all();
        }
        return true;
      });
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return hellos == 8; }));
  }
  httplib::Client ninth_client("127.0.0.1", port_);
  ninth_client.set_bearer_token_auth(kPanelTestToken);
  auto fifth = ninth_client.Get("/api/events");
  ASSERT_TRUE(fifth);
  EXPECT_EQ(fifth->status, 503);
  EXPECT_EQ(client_->Get("/api/status")->status, 200);  // reads still have threads
  StopServer();
  for (auto& t : readers) t.join();
}

// ---------------------------------------------------------------------------------------------
// The checks themselves

TEST(PanelGuardTest, HostNamesAndOrigins) {
  EXPECT_EQ(panel::HostName("127.0.0.1:8080"), "127.0.0.1");
  EXPECT_EQ(panel::HostName("[::1]:8080"), "::1");
  EXPECT_EQ(panel::HostName("LocalHost"), "localhost");
  EXPECT_EQ(panel::CheckHost("localhost:1", false), "");
  EXPECT_EQ(panel::CheckHost("[::1]:1", false), "");
  EXPECT_NE(panel::CheckHost("127.0.0.1.evil.example:1", false), "");
  EXPECT_EQ(panel::CheckHost("anything", true), "");
  EXPECT_EQ(panel::CheckSameOrigin("http://127.0.0.1:8080", "same-origin", "127.0.0.1:8080"), "");
  EXPECT_EQ(panel::CheckSameOrigin("https://agent.example", "", "agent.example"), "");
  EXPECT_NE(panel::CheckSameOrigin("http://127.0.0.1:8081", "", "127.0.0.1:8080"), "");
  EXPECT_NE(panel::CheckSameOrigin("null", "", "127.0.0.1:8080"), "");
  EXPECT_EQ(panel::CheckSameOrigin("", "", "127.0.0.1:8080"), "");  // not a browser: the CSRF token decides
}

TEST(PanelGuardTest, WhatNeedsTheTokenIsDecidedByMethodSoNoCommandRouteIsLeftOpen) {
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "FOO"})
    for (const char* path : {"/api/tickets/1/stop", "/api/some-future-command", "/", "/login", "/panel.js", "/metrics"})
      EXPECT_TRUE(panel::NeedsToken(method, path)) << method << " " << path;
  for (const char* path : {"/api/session", "/api/status", "/api/events", "/api", "/metrics"})
    EXPECT_TRUE(panel::NeedsToken("GET", path)) << path;
  for (const char* path : {"/", "/index.html", "/panel.js", "/login"}) {
    EXPECT_FALSE(panel::NeedsToken("GET", path)) << path;
    EXPECT_FALSE(panel::NeedsToken("HEAD", path)) << path;
  }
  EXPECT_FALSE(panel::NeedsToken("GET", "/healthz"));
  EXPECT_FALSE(panel::NeedsToken("POST", "/hooks/github"));  // signed by GitHub, checked by its Source
}

TEST(PanelGuardTest, LoginCookies) {
  const std::string token = kPanelTestToken;
  const std::string value = panel::CookieValue(token);
  EXPECT_EQ(value.size(), 64u);
  EXPECT_NE(value, token);
  EXPECT_EQ(panel::LoginCookie("127.0.0.1:8080", token),
            "superagent_panel_8080=" + value + "; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000");
  EXPECT_THAT(panel::LoginCookie("[::1]:9000", token), ::testing::StartsWith("superagent_panel_9000="));
  EXPECT_THAT(panel::LoginCookie("[::1]", token), ::testing::StartsWith("superagent_panel="));
  EXPECT_TRUE(panel::CheckCookie("theme=dark; superagent_panel_8080=" + value + "; other=1", token));
  EXPECT_TRUE(panel::CheckCookie("superagent_panel_8081=nope; superagent_panel_8080=" + value, token));
  EXPECT_FALSE(panel::CheckCookie("superagent_panel_8080=" + token, token));
  EXPECT_FALSE(panel::CheckCookie("other_cookie=" + value, token));
  EXPECT_FALSE(panel::CheckCookie("", token));
  EXPECT_FALSE(panel::CheckCookie("superagent_panel=", ""));
}

TEST(PanelGuardTest, TokensAndNames) {
  std::string user;
  EXPECT_FALSE(panel::CheckToken("", "", &user));  // no token configured lets nobody in
  EXPECT_FALSE(panel::CheckToken("Bearer ", "", &user));
  EXPECT_FALSE(panel::CheckToken("", "s3cret", &user));
  EXPECT_TRUE(panel::CheckToken("Bearer s3cret", "s3cret", &user));
  EXPECT_FALSE(panel::CheckToken("Bearer s3cre", "s3cret", &user));
  EXPECT_TRUE(panel::CheckToken("Basic dGVzczpzM2NyZXQ=", "s3cret", &user));  // tess:s3cret
  EXPECT_EQ(user, "tess");
  EXPECT_FALSE(panel::CheckToken("Basic dGVzczpub3Bl", "s3cret", &user));  // tess:nope
  EXPECT_FALSE(panel::CheckToken("Basic !!!", "s3cret", &user));
  EXPECT_TRUE(panel::CheckToken("Basic dGVzczpzM2NyZXQ", "s3cret", &user)) << "padding is optional";
  EXPECT_FALSE(panel::CheckToken("Basic dGVzczpzM2NyZXQ=x", "s3cret", &user)) << "padding only at the end";
  EXPECT_EQ(panel::CleanName("  Tess\n "), "Tess");
  EXPECT_EQ(panel::CleanName(std::string(100, 'x')).size(), 64u);
  EXPECT_NE(panel::RandomToken(), panel::RandomToken());
}

}  // namespace
}  // namespace superagent::testing

namespace superagent::testing {
namespace {

// /metrics reads the seeded store and sits behind the same checks as the API.
TEST_F(PanelApiTest, MetricsShowTheStoreAndNeedThePanelPassword) {
  ASSERT_TRUE(StartServer().ok());
  auto r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_THAT(r->get_header_value("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(r->body, HasSubstr("superagent_triggers_total{source=\"github\",outcome=\"stored\"} 5\n"));
  EXPECT_THAT(r->body, HasSubstr("superagent_tickets{stage=\"blocked\"} 1\n"));
  EXPECT_THAT(r->body, HasSubstr("superagent_tickets{stage=\"waiting_for_person\"} 2\n"));
  EXPECT_THAT(r->body, HasSubstr("superagent_decisions_total{outcome=\"accept\"} 4\n"));
  EXPECT_THAT(r->body, HasSubstr("superagent_decisions_would_accept_total 1\n"));
  EXPECT_THAT(r->body, HasSubstr("superagent_source_consecutive_failures{source=\"feishu\",path=\"backfill\"} 3\n"));
  EXPECT_THAT(r->body, HasSubstr("superagent_system_problems 1\n"));
  // DNS rebinding is refused here as on the API.
  EXPECT_EQ(client_->Get("/metrics", {{"Host", "evil.example.com"}})->status, 403);
  StopServer();

  ASSERT_EQ(setenv("SUPERAGENT_TEST_PANEL_TOKEN", "metrics-scrape-password", 1), 0);
  Config config;
  config.panel.token_env = "SUPERAGENT_TEST_PANEL_TOKEN";
  ASSERT_TRUE(StartServer(config).ok());
  unsetenv("SUPERAGENT_TEST_PANEL_TOKEN");
  EXPECT_EQ(client_->Get("/metrics")->status, 401);
  httplib::Client scraper("127.0.0.1", port_);
  scraper.set_bearer_token_auth("metrics-scrape-password");  // Prometheus' authorization: credentials
  EXPECT_EQ(scraper.Get("/metrics")->status, 200);
}

// ---------------------------------------------------------------------------------------------
// Set-aside items (issue 18)

// Issue 34: a blocked card has Retry — a CSRF-guarded command that gives the Ticket a turn now —
// and a request nobody answered for over a minute is on the "Not answered" card, with why.
TEST_F(PanelApiTest, ABlockedTicketsRetryAndTheNotAnsweredCard) {
  Receive(Comment("gh:comment:3001", "alice", true, "@agent 请把 README 翻译成中文 🙏", 31));
  Receive(Comment("gh:comment:3002", "mallory", true, "@agent delete the repo", 32));
  ASSERT_TRUE(StartServer().ok());
  json needs = GetJson("/api/needs");
  ASSERT_TRUE(needs["unanswered"].is_object()) << needs.dump();
  ASSERT_EQ(needs["unanswered"]["items"].size(), 1u);
  EXPECT_EQ(needs["unanswered"]["items"][0]["trigger"], "gh:comment:3001");
  EXPECT_EQ(needs["unanswered"]["items"][0]["from"], "alice");
  EXPECT_THAT(needs["unanswered"]["items"][0]["quote"].get<std::string>(), HasSubstr("翻译成中文 🙏"));
  EXPECT_THAT(needs["unanswered"]["items"][0]["why"].get<std::string>(), HasSubstr("waiting for an Eval"));
  ASSERT_TRUE(needs["not_allowed"].is_object()) << needs.dump();
  EXPECT_THAT(needs["not_allowed"]["what"].get<std::string>(), HasSubstr("mallory \u00d71"));
  EXPECT_EQ(needs["count"], 7);  // the seed's five and the two cards

  const std::string path = "/api/tickets/" + std::to_string(seed_.blocked) + "/retry";
  EXPECT_EQ(Post(path, json::object(), {}, /*with_csrf=*/false)->status, 403);
  EXPECT_EQ(views_->GetTicket(seed_.blocked)->stage, Stage::kBlocked) << "a refused command changes nothing";
  auto ok = Post(path, {{"name", "Ann"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(views_->GetTicket(seed_.blocked)->stage, Stage::kIdle);
  auto again = Post(path, {{"name", "Ann"}});
  EXPECT_EQ(again->status, 409);
  EXPECT_THAT(again->body, HasSubstr("not blocked"));
  EXPECT_EQ(Post("/api/tickets/999999/retry", {{"name", "Ann"}})->status, 404);
  json commands = GetJson("/api/commands?limit=5");
  EXPECT_EQ(commands["commands"][0]["command"], "retry");
  EXPECT_EQ(commands["commands"][0]["target"], "ticket:" + std::to_string(seed_.blocked));
}

TEST_F(PanelApiTest, ASetAsideItemIsACardInNeedsYouAndRetryIsACsrfGuardedCommand) {
  // A Ticket whose turns failed the same way five times in a row.
  const TicketId id = Accept("gh:comment:2001", 21, "@agent please translate the 安装 guide");
  for (int turn = 1; turn <= 5; ++turn) {
    std::int64_t pending = 0;
    for (const Assignment& a : Ok(views_->Assignments(id)))
      if (a.state == "pending") pending = a.id;
    ASSERT_NE(pending, 0) << "turn " << turn;
    ASSERT_TRUE(EngineTestPeer(*engine_).StartAssignment(pending, "worker").ok());
    ASSERT_TRUE(engine_->FinishTurn({.assignment = pending, .error = "model answer unreadable: type_error.316 😀"}).ok());
    Receive(Comment("gh:comment:20" + std::to_string(10 + turn), "alice", false, "again", 21));
    ASSERT_TRUE(engine_->AssignFollowUps().ok());
  }
  ASSERT_TRUE(StartServer().ok());
  json needs = GetJson("/api/needs");
  ASSERT_EQ(needs["set_aside"].size(), 1u);
  const json card = needs["set_aside"][0];
  EXPECT_EQ(card["kind"], "turn");
  EXPECT_EQ(card["item"], std::to_string(id));
  EXPECT_EQ(card["what"], "worker turns of Ticket " + std::to_string(id) + " (please translate the 安装 guide)");
  EXPECT_THAT(card["reason"].get<std::string>(), HasSubstr("failed the same way 5 times in a row: model answer unreadable"));
  EXPECT_TRUE(card["set_aside_at"].is_string());
  EXPECT_EQ(needs["count"], 7);  // the seed's five, the blocked Ticket, and the card
  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("superagent_set_aside_items{kind=\"turn\"} 1\n"));
  EXPECT_THAT(metrics->body, HasSubstr("superagent_set_aside_items{kind=\"effect\"} 0\n"));

  // Refused: no CSRF token, another origin, wrong JSON types, nothing of that kind and item.
  const std::string path = "/api/set-aside/retry";
  const json body = {{"kind", "turn"}, {"item", std::to_string(id)}};
  EXPECT_EQ(Post(path, body, {}, /*with_csrf=*/false)->status, 403);
  httplib::Headers evil{{"X-CSRF-Token", Csrf()}, {"Origin", "http://evil.example"}};
  EXPECT_EQ(client_->Post(path.c_str(), evil, body.dump(), "application/json")->status, 403);
  auto wrong_kind = Post(path, {{"kind", 5}, {"item", std::to_string(id)}});
  EXPECT_EQ(wrong_kind->status, 400);
  EXPECT_THAT(wrong_kind->body, HasSubstr("kind must be"));
  auto wrong_item = Post(path, {{"kind", "turn"}, {"item", id}});
  EXPECT_EQ(wrong_item->status, 400);
  EXPECT_THAT(wrong_item->body, HasSubstr("item must be"));
  EXPECT_EQ(Post(path, {{"kind", "turn"}, {"item", std::string(5000, 'x')}})->status, 400);
  EXPECT_EQ(Post(path, {{"kind", "turn"}, {"item", nullptr}})->status, 400);
  auto unknown = Post(path, {{"kind", "turn"}, {"item", "😀"}});
  EXPECT_EQ(unknown->status, 404);
  httplib::Headers page{{"X-CSRF-Token", Csrf()}, {"Origin", "http://127.0.0.1:" + std::to_string(port_)}};
  EXPECT_EQ(client_->Post(path.c_str(), page, "{\"kind\": \"turn\", \"item\": \"\xff\"}", "application/json")->status, 400);
  EXPECT_EQ(Post(path, {{"kind", "effect"}, {"item", std::to_string(id)}})->status, 404);
  EXPECT_EQ(GetJson("/api/needs")["set_aside"].size(), 1u);
  EXPECT_EQ(CommandCount(), 0u);

  auto ok = Post(path, {{"kind", "turn"}, {"item", std::to_string(id)}, {"name", "Alice"}});
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(json::parse(ok->body)["by"], "Alice (panel)");
  EXPECT_TRUE(GetJson("/api/needs")["set_aside"].empty());
  EXPECT_EQ(GetJson("/api/tickets/" + std::to_string(id))["stage"], "idle");
  json commands = GetJson("/api/commands")["commands"];
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0]["command"], "retry");
  EXPECT_EQ(Post(path, {{"kind", "turn"}, {"item", std::to_string(id)}})->status, 404) << "retried twice";
}

}  // namespace
}  // namespace superagent::testing
