// The model gateway with the REAL coding CLIs (tests/node_modules), one per wire format: Claude
// Code (Anthropic Messages), Qwen Code (OpenAI Chat), Codex (OpenAI Responses), Gemini CLI. Each
// runs a Ticket's turn in its sandbox as the daemon runs it — its "key" a per-turn pass, its base
// URL the gateway — against a loopback fake of its API that accepts only the real key. The CLI is
// started through a wrapper that looks for the real key where a worker could find it: its own
// environment, every process's environment and command line under /proc, its HOME, /tmp and the
// worktree (before the CLI starts and after it ends). The key is in none; the pass is (the
// control that the search looks in the right places). The turn still edits, commits and pushes,
// and its usage is what the gateway counted. A second turn with a tiny budget is stopped by the
// gateway's refusal and asks the budget question instead of reporting a failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "exec_fixture.h"
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
using nlohmann::json;
namespace fs = std::filesystem;

// Every real key here starts with this: what the wrapper searches for.
const char* kKeyPrefix = "sk-gw-real-";
const std::string kGatewayKey = std::string(kKeyPrefix) + "5a17e0c3d9";

// The fake API of one CLI, behind one face.
struct FakeApi {
  std::function<std::string()> base_url;
  std::function<std::vector<std::string>()> problems;
  std::string model;
  std::shared_ptr<void> keep;
};

struct GatewayCliCase {
  std::string cli;
  std::string program;
};
void PrintTo(const GatewayCliCase& c, std::ostream* os) { *os << c.cli; }

FakeApi MakeFake(const std::string& cli) {
  FakeApi f;
  if (cli == "claude-code" || cli == "qwen-code") {
    const auto wire = cli == "claude-code" ? FakeCodingModel::Wire::kAnthropic : FakeCodingModel::Wire::kOpenAiChat;
    f.model = cli == "claude-code" ? "claude-sonnet-4-5" : "qwen3-coder-plus";
    auto m = std::make_shared<FakeCodingModel>(wire, kGatewayKey, f.model, CodingScript{.old_text = "teh typo", .new_text = "the typo"});
    f.base_url = [m] { return m->base_url(); };
    f.problems = [m] { return m->problems(); };
    f.keep = m;
  } else if (cli == "codex") {
    auto m = std::make_shared<FakeResponsesModel>(FakeCliScript{}, "gpt-5.5", kGatewayKey);
    f.model = m->model();
    f.base_url = [m] { return m->base_url(); };
    f.problems = [m] { return m->problems(); };
    f.keep = m;
  } else {
    auto m = std::make_shared<FakeGeminiModel>(FakeCliScript{}, "gemini-2.5-pro", kGatewayKey);
    f.model = m->model();
    f.base_url = [m] { return m->base_url(); };
    f.problems = [m] { return m->problems(); };
    f.keep = m;
  }
  return f;
}

class ModelGatewayCliTest : public ExecTest, public ::testing::WithParamInterface<GatewayCliCase> {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    real_cli_ = NodeModulesDir() + "/.bin/" + GetParam().program;
    if (!fs::exists(real_cli_)) GTEST_SKIP() << real_cli_ << " is missing: run `cmake/dev.sh test` (npm ci in tests/)";
    exec::PosixRunnerOptions ro;
    ro.sandbox.state_dir = (dir_ / "work" / "sandbox").string();
    ro.sandbox.hidden = {(dir_ / "db").string()};
    ro.sandbox.enabled = exec::ProbeSandbox(ro.sandbox).supported;
    UseRunner(ro);
    http_ = MakeHttpClient("superagent-test");
    // The wrapper the sandbox starts as the CLI's binary (a directory it shows read-only).
    wrapper_dir_ = dir_ / "wrapper";
    fs::create_directories(wrapper_dir_);
    const fs::path wrapper = wrapper_dir_ / "cli";
    std::ofstream(wrapper) << "#!/bin/sh\n"
                              "out=\"$PWD/.git/superagent-evidence\"\n"
                              "mkdir -p \"$out\"\n"
                              "k1='" << std::string(kKeyPrefix).substr(0, 5) << "'; k2='" << std::string(kKeyPrefix).substr(5) << "'\n"
                              "skip='( -path " << ShownDirs()[0] << " -o -path " << ShownDirs()[1] << " -o -path " << ShownDirs()[2]
                           << " ) -prune -o'\n"
                              "look() {\n"
                              "  env > \"$out/env-$1\"\n"
                              "  for p in /proc/[0-9]*; do cat \"$p/environ\" \"$p/cmdline\" 2>/dev/null | tr '\\0' '\\n'; done"
                              " > \"$out/proc-$1\"\n"
                              // The prefix is spelled in two halves, so this script is not a file that holds it.
                              // The read-only trees the sandbox shows (below /tmp when the build is there:
                              // the CLI's installation, this wrapper, the build directory holding this
                              // test's binary, which spells the prefix) are left out: $skip prunes them.
                              "  find \"$HOME\" /tmp \"$PWD\" $skip -type f -print0 2>/dev/null | xargs -0 grep -lF \"$k1$k2\" 2>/dev/null"
                              " | grep -v superagent-evidence"
                              " > \"$out/files-$1\" || true\n"
                              // The control of that search: a canary in HOME must be found by it.
                              "  echo 'sa-canary-7f3e' > \"$HOME/.superagent-canary\"\n"
                              "  find \"$HOME\" /tmp \"$PWD\" $skip -type f -print0 2>/dev/null | xargs -0 grep -lF sa-canary-7f3e 2>/dev/null"
                              " > \"$out/canary-$1\" || true\n"
                              "  rm -f \"$HOME/.superagent-canary\"\n"
                              "}\n"
                              "look before\n"
                              "'" << real_cli_ << "' \"$@\"\n"
                              "code=$?\n"
                              "look after\n"
                              "exit $code\n";
    fs::permissions(wrapper, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
    fs::permissions(wrapper_dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                      fs::perms::others_read | fs::perms::others_exec);
  }
  void TearDown() override {
    gateway_.reset();
    ExecTest::TearDown();
  }

  // The read-only directories a turn here shows (no spaces or glob characters in them: they go
  // into find's words unquoted).
  std::vector<std::string> ShownDirs() const {
    return {NodeModulesDir(), wrapper_dir_.string(), fs::path(SUPERAGENT_BINARY).parent_path().string()};
  }

  void StartGateway(const FakeApi& api, const std::string& socket_path = "") {
    exec::ModelGatewayOptions o;
    o.wire = Ok(exec::ModelWireOf(GetParam().cli));
    o.upstream = api.base_url();
    o.api_key = kGatewayKey;
    o.socket_path = socket_path;
    auto g = exec::ModelGateway::Start(o, http_.get(), engine_.get(), views_.get(), &clock_);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    gateway_ = std::move(*g);
  }

  std::unique_ptr<exec::Executor> Executor(const FakeApi& api, const std::vector<std::string>& more_readable = {},
                                           const std::string& bridge = "") {
    exec::CliExecutorOptions o;
    o.bridge_binary = bridge;
    o.cli = GetParam().cli;
    o.binary = (wrapper_dir_ / "cli").string();
    o.model = api.model;
    o.gateway = gateway_.get();
    o.readable = {NodeModulesDir(), wrapper_dir_.string()};
    o.readable.insert(o.readable.end(), more_readable.begin(), more_readable.end());
    o.turn_ms = 120'000;
    auto e = exec::MakeCliExecutor(std::move(o), engine_.get(), views_.get(), services_.get(), SystemClock(), exec::RealSleeper());
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(*e) : nullptr;
  }

  // A Ticket worked for one turn by the CLI through the gateway already started; its id.
  TicketId WorkOneTurn(const FakeApi& api, const std::vector<std::string>& more_readable = {},
                       const std::string& bridge = "") {
    const TicketId id = AcceptedTicket("g1");
    auto executor = Executor(api, more_readable, bridge);
    EXPECT_NE(executor, nullptr);
    if (executor == nullptr) return id;
    auto scheduler = MakeScheduler(executor.get());
    RunTurn(*scheduler);
    return id;
  }

  void RunTurn(exec::Scheduler& s) {
    auto started = s.Tick();
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    s.WaitForTurns();
    ASSERT_TRUE(s.Tick().ok());
  }

  std::string Evidence(TicketId id, const std::string& name) {
    return ReadText(dir_ / "work" / "tickets" / ("ticket-" + std::to_string(id)) / ".git" / "superagent-evidence" / name);
  }
  // What is around the first `needle` in `text` (a failure shows where, not all of it).
  static std::string Around(const std::string& text, const std::string& needle) {
    const std::size_t at = text.find(needle);
    if (at == std::string::npos) return "(not found)";
    return text.substr(at < 120 ? 0 : at - 120, 240);
  }
  // The turn of Ticket `id` worked through the gateway (the fake accepts only the real key: no
  // problems means every call came with it), was pushed, and the wrapper found the key nowhere
  // inside — before the CLI ran and after — while it did find the pass (the control).
  void ExpectItWorkedWithNoKeyInside(const FakeApi& api, TicketId id) {
    EXPECT_TRUE(api.problems().empty()) << ::testing::PrintToString(api.problems());
    EXPECT_EQ(views_->GetTicket(id)->stage, Stage::kReady) << LastResult(id);
    EXPECT_EQ(OnOrigin("superagent/ticket-" + std::to_string(id), "README.md"), "Hello\nThere is the typo.\n");
    for (const std::string when : {"before", "after"}) {
      SCOPED_TRACE(when);
      const std::string env = Evidence(id, "env-" + when);
      const std::string proc = Evidence(id, "proc-" + when);
      ASSERT_FALSE(env.empty()) << "the wrapper did not run";
      EXPECT_EQ(env.find(kKeyPrefix), std::string::npos) << Around(env, kKeyPrefix);
      EXPECT_EQ(proc.find(kKeyPrefix), std::string::npos) << Around(proc, kKeyPrefix);
      EXPECT_EQ(Evidence(id, "files-" + when), "");
      EXPECT_NE(Evidence(id, "canary-" + when).find(".superagent-canary"), std::string::npos) << "the file search found nothing";
      EXPECT_NE(env.find("sa-pass-"), std::string::npos) << "no pass in the CLI's environment";
      EXPECT_NE(proc.find("sa-pass-"), std::string::npos) << "no pass under /proc";
    }
  }

  std::string LastResult(TicketId id) {
    auto receipts = Ok(views_->Receipts(id));
    return receipts.empty() ? "" : receipts.back().body;
  }

  std::string real_cli_;
  fs::path wrapper_dir_;
  std::unique_ptr<HttpClient> http_;
  std::unique_ptr<exec::ModelGateway> gateway_;
};

TEST_P(ModelGatewayCliTest, ATurnCompletesWithNoModelKeyAnywhereInTheSandbox) {
  FakeApi api = MakeFake(GetParam().cli);
  StartGateway(api);
  const TicketId id = WorkOneTurn(api);

  ExpectItWorkedWithNoKeyInside(api, id);
  for (const std::string when : {"before", "after"}) {
    // Its base URL is the gateway (in a variable, or Codex's command line).
    EXPECT_NE((Evidence(id, "env-" + when) + Evidence(id, "proc-" + when)).find("127.0.0.1:" + std::to_string(gateway_->port())),
              std::string::npos);
  }

  // Usage: counted by the gateway from the API's answers, once per call.
  const exec::GatewayCounts counts = gateway_->counts();
  EXPECT_GT(counts.forwarded, 0);
  EXPECT_EQ(counts.refused_pass, 0);
  const json usage = Ok(views_->TokenUsage(id));
  EXPECT_EQ(usage["calls"].get<std::int64_t>(), counts.forwarded) << usage.dump();
  EXPECT_GT(usage["prompt_tokens"].get<std::int64_t>(), 0) << usage.dump();

  // The turn's pass died with it.
  HttpRequest late;
  late.method = "POST";
  const std::map<std::string, std::string> kPath = {{"claude-code", "/v1/messages"},
                                                    {"qwen-code", "/v1/chat/completions"},
                                                    {"codex", "/v1/responses"},
                                                    {"gemini-cli", "/v1beta/models/gemini-2.5-pro:generateContent"}};
  late.url = "http://127.0.0.1:" + std::to_string(gateway_->port()) + kPath.at(GetParam().cli);
  const std::string env = Evidence(id, "env-before");
  const std::size_t at = env.find("sa-pass-");
  ASSERT_NE(at, std::string::npos);
  const std::string pass = env.substr(at, env.find('\n', at) - at);
  late.headers = {{"x-api-key", pass}, {"authorization", "Bearer " + pass}, {"x-goog-api-key", pass}};
  late.body = "{}";
  const HttpResponse r = http_->Send(late);
  EXPECT_EQ(r.status, 401) << r.body;
}

TEST_P(ModelGatewayCliTest, TheGatewayStopsATurnAtItsBudgetAndThePersonIsAsked) {
  Open(MakePolicy("observe", "rules:=>budgets:\n  explicit: {tokens: 1}\nrules:"));
  services_ = std::make_unique<exec::WorkerServices>(engine_.get(), workspaces_.get());
  FakeApi api = MakeFake(GetParam().cli);
  StartGateway(api);
  const TicketId id = WorkOneTurn(api);

  const exec::GatewayCounts counts = gateway_->counts();
  // The first call spends the budget (a CLI may start a side call beside it); every later one is
  // refused before it reaches the API.
  EXPECT_GE(counts.forwarded, 1);
  EXPECT_LE(counts.forwarded, 2);
  EXPECT_GE(counts.refused_budget, 1);
  EXPECT_EQ(Ok(views_->TokenUsage(id))["calls"].get<std::int64_t>(), counts.forwarded);
  // The person who asked is asked whether to go on — not told the CLI failed.
  const Ticket t = Ok(views_->GetTicket(id));
  EXPECT_NE(t.stage, Stage::kBlocked) << LastResult(id);
  EXPECT_THAT(LastResult(id), HasSubstr("budget")) << LastResult(id);
  auto budget = Ok(views_->BudgetOf(id, clock_.NowMs()));
  ASSERT_TRUE(budget.has_value());
  EXPECT_EQ(budget->reached, "tokens");
}

// execution.network: off — the sandbox's own network namespace holds only an empty loopback, so
// the gateway's TCP port is out of reach; the daemon's binary, started in the sandbox as
// `model-bridge`, carries the CLI's calls to the gateway's unix socket. The turn works as with a
// network, and the key is still nowhere inside.
TEST_P(ModelGatewayCliTest, WithNoNetworkTheCliReachesTheGatewayThroughTheBridge) {
  exec::PosixRunnerOptions ro;
  ro.sandbox.state_dir = (dir_ / "work" / "sandbox").string();
  ro.sandbox.hidden = {(dir_ / "db").string()};
  ro.sandbox.network = false;
  if (!exec::ProbeSandbox(ro.sandbox).supported) GTEST_SKIP() << "no sandbox here: no network namespace to test";
  ro.sandbox.enabled = true;
  UseRunner(ro);
  // A unix socket's path has at most 107 bytes: the test's directory is too deep for one.
  char tmpl[] = "/tmp/sa-gw-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path socket_dir = tmpl;
  struct Remove {
    fs::path p;
    ~Remove() { fs::remove_all(p); }
  } remove{socket_dir};
  fs::permissions(socket_dir, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec |
                                  fs::perms::group_read | fs::perms::group_exec);
  FakeApi api = MakeFake(GetParam().cli);
  StartGateway(api, (socket_dir / "model.sock").string());
  const std::string binary = SUPERAGENT_BINARY;
  const TicketId id = WorkOneTurn(api, {socket_dir.string(), fs::path(binary).parent_path().string()}, binary);

  ExpectItWorkedWithNoKeyInside(api, id);
  EXPECT_GT(gateway_->counts().forwarded, 0);
  // The prelude's own variables are gone before the CLI starts.
  const std::string env = Evidence(id, "env-before");
  EXPECT_EQ(env.find("SUPERAGENT_BRIDGE_"), std::string::npos) << Around(env, "SUPERAGENT_BRIDGE_");
}

INSTANTIATE_TEST_SUITE_P(Clis, ModelGatewayCliTest,
                         ::testing::Values(GatewayCliCase{"claude-code", "claude"}, GatewayCliCase{"qwen-code", "qwen"},
                                           GatewayCliCase{"codex", "codex"}, GatewayCliCase{"gemini-cli", "gemini"}),
                         [](const ::testing::TestParamInfo<GatewayCliCase>& i) {
                           std::string n = i.param.cli;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace superagent::testing
