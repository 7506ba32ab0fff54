// /metrics as Prometheus itself reads it (issue 38 §4): Debian's promtool parses and lints the
// rendered text with Prometheus' own parser, and a real Prometheus server scrapes the panel of a
// seeded store with the panel's password and answers a query for a Ticket's outcome series.
//
// Both programs come with Debian's prometheus package (cmake/dev.sh deps). Without them the
// tests skip on a developer's machine, but fail in CI (CI set), where a skip would hide a gap.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "app/wiring.h"
#include "exec_fixture.h"  // FreePort
#include "panel_fixture.h"
#include "run_binary.h"
#include "superagent/metrics.h"
#include "superagent/process.h"

namespace superagent::testing {
namespace {

using nlohmann::json;

// Whether this run is CI's, where every tool the suite needs must be installed.
bool PrometheusTestsInCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0';
}

// A Snapshot with every family the daemon can show, the optional ones included, and label values
// Prometheus' parser must read back: Chinese, a quote, a backslash, a newline.
metrics::Snapshot PrometheusLintSnapshot() {
  metrics::Snapshot s;
  s.version = "0.1.0";
  s.policy_version = 2;
  s.mode = "auto";
  s.triggers[{"github", "stored"}] = 7;
  s.triggers[{"feishu", "filtered"}] = 1;
  s.decisions = {{"accept", 3}, {"ignore", 4}};
  s.tickets = {{"working", 1}, {"ended", 2}};
  s.slots_configured = 2;
  s.reserved_slot_busy = false;
  SourceHealth h;
  h.source = "feishu";
  h.path = "chat \"研发\\群\"\nline two";
  h.last_success_at = 1'764'670'000'000;
  s.sources = {h};
  s.rounds["github"] = {3, 0, 1.5, 0.5};
  s.github_rate = metrics::RateLimit{5000, 4990, 1'764'673'600'000};
  s.model_tokens["worker"] = {2, 3000, 400, 1000};
  s.webhook_refused = {{"github", 0}, {"feishu", 1}};
  s.secrets_redacted = {{"outbox", 1}};
  s.gateway_refused = {{"budget", 1}};
  s.worker_pool = metrics::Snapshot::WorkerPool{{{"codex", 1}}, {{"claude-code", 1}}, {{"claude-code", 2}}, 1};

  TicketOutcome merged;
  merged.ticket = 1;
  merged.rule = "typo";
  merged.executor = "claude-code";
  merged.outcome = "merged";
  merged.seconds_to_acknowledgement = 3;
  merged.seconds_to_first_commit = 400;
  merged.seconds_to_pull_request = 460;
  merged.seconds_to_merge = 5000;
  merged.turns = 2;
  merged.tokens = 2'500'000;
  merged.cost_usd = 1.25;
  merged.person_asks = 1;
  TicketOutcome stopped;
  stopped.ticket = 2;
  stopped.rule = "文档\"错字\"";
  stopped.executor = "none";
  stopped.outcome = "stopped";
  TicketOutcome live = merged;
  live.ticket = 3;
  live.outcome = "live";
  live.seconds_to_merge.reset();
  s.ticket_outcomes = {merged, stopped, live};

  RulePrecision typo;
  typo.rule = "typo";
  typo.yes = 4;
  typo.no = 1;
  typo.unanswered = 3;
  typo.lower_bound = WilsonLowerBound(4, 5);
  RulePrecision chinese;
  chinese.rule = "文档\"错字\"";
  chinese.missed = 2;
  s.rule_precision = {typo, chinese};
  return s;
}

// promtool check metrics over `text` on its standard input: its exit code and everything it said.
RunResult Promtool(const std::string& promtool, const std::string& text) {
  RunOptions options;
  options.stdin_text = text;
  options.timeout_ms = 30'000;
  return RunProgram(promtool, {"check", "metrics"}, options);
}

// Prometheus' parser takes the text, and its linter finds nothing to say (a counter without
// _total, a missing HELP, a unit it would name otherwise): with Tickets and without.
TEST(PrometheusText, PromtoolChecksTheMetricsClean) {
  const std::string promtool = app::FindProgram("promtool");
  if (promtool.empty()) {
    ASSERT_FALSE(PrometheusTestsInCi()) << "promtool is not installed: cmake/dev.sh deps installs Debian's prometheus";
    GTEST_SKIP() << "promtool is not installed (cmake/dev.sh deps installs Debian's prometheus)";
  }
  metrics::Snapshot s = PrometheusLintSnapshot();
  RunResult r = Promtool(promtool, metrics::RenderPrometheus(s));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "");

  s.ticket_outcomes.clear();
  s.rule_precision.clear();
  r = Promtool(promtool, metrics::RenderPrometheus(s));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "");

  // The check has teeth: a counter named like a gauge is reported.
  r = Promtool(promtool, "# HELP superagent_x A count.\n# TYPE superagent_x counter\nsuperagent_x 1\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.out + r.err, ::testing::HasSubstr("_total"));
}

// A real Prometheus scrapes the panel as an operator configures it (the panel's password as a
// Bearer token) and stores the outcome series of a Ticket a person stopped on the panel.
class PrometheusScrapeTest : public PanelServerTest {
 protected:
  void SetUp() override {
    PanelServerTest::SetUp();
    StartClockAnHourAgo();
    seed_ = Seed();
  }
  void TearDown() override {
    if (prometheus_) prometheus_->KillGroup();  // its own process group: nothing of it outlives the test
    prometheus_.reset();
    PanelServerTest::TearDown();
  }

  // Starts `program` on a free loopback port, scraping the panel every second; its port.
  int StartPrometheus(const std::string& program) {
    const std::filesystem::path home = dir_ / "prometheus";
    std::filesystem::create_directories(home / "data");
    std::ofstream(home / "prometheus.yml") << "global:\n"
                                              "  scrape_interval: 1s\n"
                                              "  scrape_timeout: 1s\n"
                                              "scrape_configs:\n"
                                              "  - job_name: superagent\n"
                                              "    metrics_path: /metrics\n"
                                              "    authorization:\n"
                                              "      type: Bearer\n"
                                              "      credentials: "
                                           << kPanelTestToken << "\n"
                                           << "    static_configs:\n"
                                              "      - targets: ['127.0.0.1:"
                                           << port_ << "']\n";
    const int port = FreePort();
    exec::ProcessSpec spec;
    spec.argv = {program, "--config.file=" + (home / "prometheus.yml").string(),
                 "--storage.tsdb.path=" + (home / "data").string(),
                 "--web.listen-address=127.0.0.1:" + std::to_string(port)};
    spec.cwd = home.string();
    spec.output_dir = home.string();
    auto p = runner_->Spawn(spec);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) prometheus_ = std::move(*p);
    return port;
  }

  // What Prometheus says of its scrape target (health, last error), for a failure message.
  std::string TargetHealth(httplib::Client& api) {
    auto r = api.Get("/api/v1/targets");
    return r ? r->body : "no answer from /api/v1/targets";
  }

  PanelSeed seed_;
  std::unique_ptr<exec::ProcessRunner> runner_ = exec::MakePosixProcessRunner({"off"});
  std::unique_ptr<exec::Process> prometheus_;
};

// The series of `query`'s answer (a vector) whose labels include `label`=`value`; null when none.
json PrometheusSeriesWith(const std::string& body, const std::string& label, const std::string& value) {
  const json answer = json::parse(body, nullptr, false);
  if (!answer.is_object() || answer.value("status", "") != "success") return nullptr;
  const json result = answer.value("data", json::object()).value("result", json::array());
  for (const json& series : result)
    if (series.is_object() && series.value("metric", json::object()).value(label, "") == value) return series;
  return nullptr;
}

TEST_F(PrometheusScrapeTest, ARealPrometheusReadsTheOutcomeOfAStoppedTicket) {
  const std::string prometheus = app::FindProgram("prometheus");
  if (prometheus.empty()) {
    ASSERT_FALSE(PrometheusTestsInCi()) << "prometheus is not installed: cmake/dev.sh deps installs Debian's prometheus";
    GTEST_SKIP() << "prometheus is not installed (cmake/dev.sh deps installs Debian's prometheus)";
  }
  StartServer();
  auto stop = Post("/api/tickets/" + std::to_string(seed_.blocked) + "/stop", {{"confirm", true}, {"name", "Tess"}});
  ASSERT_TRUE(stop);
  ASSERT_EQ(stop->status, 200) << stop->body;

  const int port = StartPrometheus(prometheus);
  ASSERT_TRUE(prometheus_);
  httplib::Client api("127.0.0.1", port);
  api.set_connection_timeout(1, 0);
  api.set_read_timeout(5, 0);
  auto query = [&](const std::string& promql) {
    auto r = api.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    return r && r->status == 200 ? r->body : std::string();
  };

  // Prometheus starts, waits for its first scrape (its target discovery settles for a few
  // seconds), then scrapes every second: ask until the series is there or 30 s have passed.
  json stopped;
  std::string last;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (stopped.is_null() && std::chrono::steady_clock::now() < deadline) {
    const std::optional<int> exited = prometheus_->Poll();
    ASSERT_FALSE(exited.has_value()) << "prometheus exited with " << *exited << ":\n"
                                     << exec::Tail(prometheus_->Stderr());
    last = query("superagent_ticket_outcomes_total");
    stopped = PrometheusSeriesWith(last, "outcome", "stopped");
    if (stopped.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // between polls only
  }
  ASSERT_FALSE(stopped.is_null()) << "no outcome=\"stopped\" series within 30 s; last answer: " << last
                                  << "\ntarget: " << TargetHealth(api) << "\nprometheus said:\n"
                                  << exec::Tail(prometheus_->Stderr());
  const json& labels = stopped["metric"];
  EXPECT_EQ(labels.value("__name__", ""), "superagent_ticket_outcomes_total");
  EXPECT_EQ(labels.value("job", ""), "superagent");
  // TicketOutcome's labels: a person's request counts under "explicit"; no turn ran, so no executor.
  EXPECT_EQ(labels.value("rule", ""), "explicit") << stopped.dump();
  EXPECT_EQ(labels.value("executor", ""), "none") << stopped.dump();
  ASSERT_TRUE(stopped["value"].is_array() && stopped["value"].size() == 2) << stopped.dump();
  EXPECT_EQ(stopped["value"][1], "1") << stopped.dump();  // one Ticket stopped

  // The same scrape stored the histograms: the stopped Ticket is observed once in its turns.
  const json turns = PrometheusSeriesWith(query("superagent_ticket_turns_count"), "outcome", "stopped");
  ASSERT_FALSE(turns.is_null());
  EXPECT_EQ(turns["value"][1], "1") << turns.dump();
}

}  // namespace
}  // namespace superagent::testing
