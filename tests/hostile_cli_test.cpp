// A hostile worker per coding CLI (issue 33, "Done when"): each of the four real CLIs, driven by
// its loopback model through the model gateway, runs one shell step that tries everything a
// worker can leave behind for the daemon's privileged side — a nested repository with a clean
// filter, hooks, config naming programs (core.sshCommand, diff.external, core.pager,
// core.fsmonitor, an include and an includeIf of a file in the tree), a link out of the tree, a
// change to .github/workflows the request did not ask for — and prints its environment and the
// secret paths it can name. Then it reports `ready` with a PR.
//
// No program of the worker's may run outside its sandbox (each would leave a marker in the test's
// directory, which the sandbox does not show); nothing is pushed; the Ticket is blocked with the
// reason; the model key is in no published text and no transcript; and the Ticket's pass is dead.
// The sandbox-level attacks behind this are hostile_commits_test.cpp's, executor by executor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "app/config.h"
#include "app/wiring.h"
#include "exec_fixture.h"
#include "superagent/views.h"
#include "fake_coding_model.h"
#include "fake_gemini_model.h"
#include "fake_github_server.h"
#include "fake_responses_model.h"
#include "result_ok.h"
#include "superagent/http.h"
#include "superagent/model_gateway.h"
#include "superagent/sandbox.h"
#include "superagent/worker.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kHostileKey = "sk-hostile-cli-real-key-4f2a9d";

struct HostileCliCase {
  std::string cli, program;
};
void PrintTo(const HostileCliCase& c, std::ostream* os) { *os << c.cli; }

class HostileCliTest : public ExecTest, public ::testing::WithParamInterface<HostileCliCase> {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    if (!fs::exists(NodeModulesDir() + "/.bin/" + GetParam().program)) GTEST_SKIP() << "run npm ci in tests/";
    // The daemon's own sandbox policy, with the test's directory as its data_dir (hidden inside).
    Config config;
    config.data_dir = dir_.string();
    exec::PosixRunnerOptions ro;
    ro.sandbox = app::SandboxPolicyFor(config);
    auto decision = exec::DecideSandbox("on", exec::ProbeSandbox(ro.sandbox));
    if (!decision.ok()) GTEST_SKIP() << "this suite needs a host that can sandbox: " << decision.status().ToString();
    ro.sandbox.enabled = decision->enabled;
    UseRunner(ro);
    marker_ = (dir_ / "PWNED").string();
    http_ = MakeHttpClient("superagent-test");
  }
  void TearDown() override {
    gateway_.reset();
    ExecTest::TearDown();
  }

  // The worker's one shell step: every attack, then its environment and the secret paths.
  std::string Attack() const {
    const std::string evil = "\"$HOME/evil.sh\"";
    return "git init -q sub && git -C sub config filter.x.clean \"sh -c 'touch " + marker_ + "; cat'\" && "
           "printf '* filter=x\\n' > sub/.gitattributes && echo one > sub/f && "
           "git -C sub -c user.name=w -c user.email=w@w add -A && "
           "git -C sub -c user.name=w -c user.email=w@w commit -q -m x && echo two > sub/f && "
           "printf '#!/bin/sh\\ntouch " + marker_ + "\\ncat\\n' > " + evil + " && chmod +x " + evil + " && "
           "for h in pre-commit post-commit commit-msg reference-transaction pre-push; do cp " + evil +
           " .git/hooks/$h; done && "
           "for k in core.sshCommand diff.external core.pager core.fsmonitor; do git config $k " + evil + "; done && "
           "printf '[core]\\n\\tfsmonitor = %s\\n' " + evil + " > included.cfg && "
           "git config include.path \"$PWD/included.cfg\" && git config includeIf.gitdir:/.path \"$PWD/included.cfg\" && "
           "ln -s /etc/passwd leak && mkdir -p .github/workflows && printf 'on: push\\n' > .github/workflows/ci.yml && "
           "env; cat /proc/1/environ /run/credentials/*/* /etc/superagent/secrets.env 2>&1; true";
  }

  // The transcript's tool results, for a failure's message.
  std::string ToolResults(TicketId id) {
    std::string out;
    auto session = Ok(views_->SessionForTicket(id));
    if (session)
      for (const SessionEvent& e : Ok(views_->SessionEvents(session->id)))
        if (e.kind == "tool_result" || e.kind == "command") out += e.body.dump().substr(0, 600) + "\n";
    return out;
  }
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

  std::string marker_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<exec::ModelGateway> gateway_;
};

TEST_P(HostileCliTest, NothingOfTheWorkersRunsOutsideNothingIsPushedAndNoKeyIsPublished) {
  const std::string cli = GetParam().cli;
  // The CLI's model, scripted to edit, run the attack, and report ready with a PR.
  std::shared_ptr<void> keep;
  std::string upstream, model;
  if (cli == "claude-code" || cli == "qwen-code") {
    model = cli == "claude-code" ? "claude-sonnet-4-5" : "qwen3-coder-plus";
    auto m = std::make_shared<FakeCodingModel>(
        cli == "claude-code" ? FakeCodingModel::Wire::kAnthropic : FakeCodingModel::Wire::kOpenAiChat, kHostileKey, model,
        CodingScript{.old_text = "teh typo", .new_text = "the typo", .command = Attack()});
    upstream = m->base_url();
    keep = m;
  } else if (cli == "codex") {
    auto m = std::make_shared<FakeResponsesModel>(FakeCliScript{.outside_command = Attack()}, "gpt-5.5", kHostileKey);
    upstream = m->base_url();
    model = m->model();
    keep = m;
  } else {
    auto m = std::make_shared<FakeGeminiModel>(FakeCliScript{.outside_command = Attack()}, "gemini-2.5-pro", kHostileKey);
    upstream = m->base_url();
    model = m->model();
    keep = m;
  }
  exec::ModelGatewayOptions go;
  go.wire = Ok(exec::ModelWireOf(cli));
  go.upstream = upstream;
  go.api_key = kHostileKey;
  gateway_ = Ok(exec::ModelGateway::Start(go, http_.get(), engine_.get(), views_.get(), &clock_));

  const TicketId id = AcceptedTicket("h1");
  exec::CliExecutorOptions o;
  o.cli = cli;
  o.binary = NodeModulesDir() + "/.bin/" + GetParam().program;
  o.model = model;
  o.gateway = gateway_.get();
  o.readable = {NodeModulesDir()};
  o.turn_ms = 120'000;
  auto executor = Ok(exec::MakeCliExecutor(o, engine_.get(), views_.get(), services_.get(), SystemClock(), exec::RealSleeper()));
  auto scheduler = MakeScheduler(executor.get());
  ASSERT_TRUE(scheduler->Tick().ok());
  scheduler->WaitForTurns();
  ASSERT_TRUE(scheduler->Tick().ok());

  // The attack ran (the worker's own repository shows it) — the control — and nothing of it ran
  // outside the sandbox.
  const fs::path repo = dir_ / "work" / "tickets" / ("ticket-" + std::to_string(id));
  ASSERT_TRUE(fs::exists(repo / "sub" / ".gitattributes")) << "the attack did not run: " << LastResult(id) << "\n"
                                                           << ToolResults(id);
  EXPECT_TRUE(fs::is_symlink(repo / "leak"));
  EXPECT_FALSE(fs::exists(marker_)) << "a program of the worker's ran outside its sandbox";

  // Refused, said, and not pushed.
  EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kBlocked) << LastResult(id);
  EXPECT_THAT(Why(id), ::testing::AnyOf(HasSubstr("gitlink"), HasSubstr(".github/workflows"),
                                               HasSubstr("link")))
      << LastResult(id);
  EXPECT_NE(std::system(("git -C " + origin_.string() + " rev-parse -q --verify refs/heads/superagent/ticket-" +
                         std::to_string(id) + " >/dev/null 2>&1").c_str()),
            0);

  // The model key was never the worker's to print: no receipt and no transcript event holds it.
  for (const Receipt& r : Ok(views_->Receipts(id))) EXPECT_EQ(r.body.find(kHostileKey), std::string::npos) << r.body;
  auto session = Ok(views_->SessionForTicket(id));
  ASSERT_TRUE(session.has_value());
  bool env_printed = false;
  for (const SessionEvent& e : Ok(views_->SessionEvents(session->id))) {
    const std::string body = e.body.dump();
    EXPECT_EQ(body.find(kHostileKey), std::string::npos) << e.kind;
    env_printed = env_printed || body.find("sa-pass-") != std::string::npos;
  }
  EXPECT_TRUE(env_printed) << "the environment's dump (with the turn's pass) is not in the transcript";
}

INSTANTIATE_TEST_SUITE_P(Clis, HostileCliTest,
                         ::testing::Values(HostileCliCase{"claude-code", "claude"}, HostileCliCase{"qwen-code", "qwen"},
                                           HostileCliCase{"codex", "codex"}, HostileCliCase{"gemini-cli", "gemini"}),
                         [](const ::testing::TestParamInfo<HostileCliCase>& i) {
                           std::string n = i.param.cli;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace superagent::testing
