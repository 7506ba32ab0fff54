// Seeded state for the panel's tests: a real store with questions waiting, a blocked Ticket, an
// ended one, an observe-mode would_accept Decision, a system problem and Source health — made
// through the real Engine, the way the daemon's loops would make them.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "app/wiring.h"
#include "engine_fixture.h"
#include "run_binary.h"
#include "superagent/panel.h"

namespace superagent::testing {

// The panel token the panel tests start their servers with (a daemon makes its own in
// data_dir/panel.token); clients that stand for a person send it as a Bearer token.
inline constexpr char kPanelTestToken[] = "5a1e0c3b9f8d7e6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a";

struct PanelSeed {
  TicketId question_old = 0;   // waiting, asked first: a choice question
  TicketId question_new = 0;   // waiting, asked later: free text
  TicketId blocked = 0;
  TicketId ended = 0;
  std::string would_accept_trigger = "gh:comment:typo-heading";
};

// The policy the seeded store was made under (also written as the daemon's policy.yaml).
inline std::string PanelPolicyYaml() {
  std::string yaml = kBasePolicy;
  yaml.replace(yaml.find("MODE"), 4, "observe");
  return yaml;
}

class PanelSeedTest : public EngineTest {
 protected:
  // Time in the seeded rows: an hour before now, so "ago" texts look like a real day.
  void StartClockAnHourAgo() {
    clock_.Set(SystemClock()->NowMs() - 3'600'000);
  }

  TicketId Accept(const std::string& id, int issue, const std::string& text) {
    Receive(Comment(id, "alice", true, text, issue));
    Assessment a = ScriptedAssessor::Accept();
    a.scope = text.substr(text.find(' ') + 1);
    a.acknowledgement = "On it: " + a.scope;
    assessor_.answers.push_back(a);
    EXPECT_EQ(Drain(), 1);
    auto story = ExplainNow(id);
    if (!story.ok() || !story->contains("ticket_created")) {
      ADD_FAILURE() << "no ticket for " << id;
      return 0;
    }
    return (*story)["ticket_created"]["id"].get<TicketId>();
  }

  PanelSeed Seed() {
    PanelSeed s;
    s.question_old = Accept("gh:comment:1001", 11, "@agent please fix the broken link in CONTRIBUTING.md");
    clock_.Advance(60'000);
    s.question_new = Accept("gh:comment:1002", 12, "@agent please tidy the release notes for 0.3");
    clock_.Advance(60'000);
    s.blocked = Accept("gh:comment:1003", 13, "@agent please update the CI badge in README");
    clock_.Advance(60'000);
    s.ended = Accept("gh:comment:1004", 14, "@agent please fix the typo in docs/intro.md");
    clock_.Advance(60'000);

    HumanAction choice;
    choice.thread = "github:acme/widgets:issue:11";
    choice.actor = "alice";
    choice.question = "Which link should CONTRIBUTING.md point to?";
    choice.form = {{"options", {"docs/setup.md", "the wiki page"}}};
    EXPECT_TRUE(EngineTestPeer(*engine_).AskPerson(s.question_old, choice, "ask:11").ok());
    clock_.Advance(60'000);
    HumanAction text;
    text.thread = "github:acme/widgets:issue:12";
    text.actor = "alice";
    text.question = "Should the release notes mention the dropped Python 3.8 support?";
    EXPECT_TRUE(EngineTestPeer(*engine_).AskPerson(s.question_new, text, "ask:12").ok());
    clock_.Advance(60'000);
    EXPECT_TRUE(EngineTestPeer(*engine_).SetStage(s.blocked, Stage::kBlocked, "the CI badge URL needs a token nobody gave").ok());
    EXPECT_TRUE(EngineTestPeer(*engine_).EndTicket(s.ended, "result delivered").ok());
    clock_.Advance(60'000);

    // Observe mode: an inferred message the assessment would accept is only recorded.
    Receive(Comment(s.would_accept_trigger, "alice", false, "the README heading says 'Instalation'", 15));
    Assessment wa = ScriptedAssessor::Accept(true, "says 'Instalation'");
    wa.scope = "Fix the spelling of 'Installation' in the README heading";
    assessor_.answers.push_back(wa);
    EXPECT_EQ(Drain(), 1);

    // Health: one path fine with skipped items and a cursor, one failing for good.
    SourceUpdate ok;
    ok.source = "github";
    ok.path = "notifications";
    ok.set_cursors = {{"notifications", "2026-12-02T10:00:00Z"}, {"issue:11", "{\"since\":\"2026-12-02T09:59:55Z\"}"}};
    ok.skipped = 2;
    EXPECT_TRUE(engine_->UpdateSource(ok).ok());
    SourceUpdate bad;
    bad.source = "feishu";
    bad.path = "backfill";
    bad.ok = false;
    bad.error = "HTTP 503 from open.feishu.cn";
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(engine_->UpdateSource(bad).ok());
    return s;
  }
};

// The seeded store behind a real panel on loopback, and a client that is a person with the panel
// token: GET as JSON, POST a command as the page sends it (same origin, the CSRF token).
class PanelServerTest : public PanelSeedTest {
 protected:
  void TearDown() override {
    StopServer();
    PanelSeedTest::TearDown();
  }
  // Starts the panel on the seeded store; `adjust` sets what a test's context needs beyond it.
  void StartServer(const std::function<void(panel::PanelContext&)>& adjust = {}) {
    server_ = std::make_unique<httplib::Server>();
    panel::PanelContext ctx = app::PanelContextFor(Config{});
    ctx.setup.clear();  // an empty Config's Set-up cards have their own tests
    ctx.engine = engine_.get();
    ctx.views = views_.get();
    ctx.token = kPanelTestToken;
    ctx.poll_ms = 50;
    ctx.clock = &clock_;
    if (adjust) adjust(ctx);
    auto panel = panel::InstallRoutes(*server_, ctx);
    ASSERT_TRUE(panel.ok()) << panel.status().ToString();
    panel_ = std::move(*panel);
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(5, 0);
    client_->set_bearer_token_auth(kPanelTestToken);
  }
  void StopServer() {
    if (panel_) panel_->Stop();
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    panel_.reset();
    server_.reset();
  }
  // Runs tests/browser/`script` under node against this panel — headless Chromium through
  // playwright-core — with PANEL_URL, LOGIN_URL, SCREENSHOT_DIR and CHROMIUM set, and `env` added.
  // A missing node, playwright-core or Chromium fails the test (cmake/dev.sh test installs them).
  RunResult RunBrowserScript(const std::string& script, const std::vector<std::pair<std::string, std::string>>& env = {}) {
    RunResult missing;
    missing.exit_code = -1;
    const std::string node = app::FindProgram("node");
    const std::filesystem::path tests_dir = std::filesystem::path(SUPERAGENT_SOURCE_DIR) / "tests";
    const char* chromium_env = std::getenv("CHROMIUM");
    const std::string chromium = chromium_env ? chromium_env : "/usr/bin/chromium";
    if (node.empty()) missing.err = "node is not installed: `cmake/dev.sh test` installs nodejs and npm";
    else if (!std::filesystem::exists(tests_dir / "node_modules" / "playwright-core")) missing.err = "run `npm ci` in tests/";
    else if (!std::filesystem::exists(chromium)) missing.err = chromium + " is missing";
    if (!missing.err.empty()) {
      ADD_FAILURE() << missing.err;
      return missing;
    }
    const char* shots_env = std::getenv("SUPERAGENT_SCREENSHOT_DIR");
    const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/";
    RunOptions options;
    options.timeout_ms = 55'000;
    options.cwd = tests_dir.string();
    options.env_set = {
        {"PANEL_URL", url},
        {"LOGIN_URL", url + "login?token=" + kPanelTestToken},
        {"SCREENSHOT_DIR", shots_env ? shots_env : "/tmp/superagent-panel-screenshots"},
        {"CHROMIUM", chromium},
    };
    options.env_set.insert(options.env_set.end(), env.begin(), env.end());
    return RunProgram(node, {"--test", "--test-reporter=spec", "browser/" + script}, options);
  }
  nlohmann::json GetJson(const std::string& path) {
    auto r = client_->Get(path.c_str());
    EXPECT_TRUE(r) << path;
    if (!r) return nlohmann::json();
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
    return nlohmann::json::parse(r->body, nullptr, false);
  }
  // A command as the page sends it: same origin, the CSRF token unless `with_csrf` is false.
  httplib::Result Post(const std::string& path, const nlohmann::json& body, bool with_csrf = true) {
    httplib::Headers headers{{"Origin", "http://127.0.0.1:" + std::to_string(port_)}};
    if (with_csrf) headers.emplace("X-CSRF-Token", GetJson("/api/session")["csrf_token"].get<std::string>());
    return client_->Post(path.c_str(), headers, body.dump(), "application/json");
  }
  nlohmann::json Commands() { return GetJson("/api/commands")["commands"]; }

  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<panel::Panel> panel_;
  std::unique_ptr<httplib::Client> client_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace superagent::testing
