// /metrics as Prometheus reads it: rendering from a plain Snapshot (every family has HELP and
// TYPE, label values are escaped, unknown figures are left out rather than shown as zero), and
// the process-wide counters the model client and the Sources feed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "superagent/metrics.h"

namespace superagent::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

metrics::Snapshot Sample() {
  metrics::Snapshot s;
  s.version = "0.1.0";
  s.policy_version = 3;
  s.mode = "observe";
  s.triggers[{"github", "stored"}] = 12;
  s.triggers[{"github", "filtered"}] = 4;
  s.triggers[{"feishu", "stored"}] = 2;
  s.decisions = {{"accept", 5}, {"ignore", 7}};
  s.would_accept = 2;
  s.tickets = {{"working", 1}, {"ended", 4}};
  s.eval_queue = 3;
  s.slots_configured = 3;
  s.slots_busy = 1;
  s.effects_pending = 2;
  s.effects_failed = 1;
  s.system_problems = 1;
  s.set_aside["effect"] = 2;
  SourceHealth h;
  h.source = "github";
  h.path = "notifications";
  h.last_success_at = 1'764'670'000'000;
  h.consecutive_failures = 0;
  h.skipped_items = 2;
  SourceHealth bad;
  bad.source = "feishu";
  bad.path = "back\"fill";  // a label value that must be escaped
  bad.consecutive_failures = 3;
  s.sources = {h, bad};
  s.rounds["github"] = {10, 1, 2.5, 0.25};
  s.model_tokens["assessment"] = {4, 4000, 300, 3500};
  s.gateway_refused = {{"budget", 2}, {"pass", 1}};
  return s;
}

TEST(MetricsRender, EveryFamilyHasHelpAndTypeAndEverySampleParses) {
  const std::string text = metrics::RenderPrometheus(Sample());
  std::istringstream in(text);
  std::string line;
  std::set<std::string> typed;
  const std::regex sample(R"(^([a-z_]+)(\{[a-z_]+="([^"\\]|\\.)*"(,[a-z_]+="([^"\\]|\\.)*")*\})? -?[0-9.e+]+$)");
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      EXPECT_TRUE(type == "counter" || type == "gauge" || type == "summary") << line;
      typed.insert(name);
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    ASSERT_TRUE(std::regex_match(line, sample)) << "not a sample line: " << line;
    std::string name = line.substr(0, line.find_first_of("{ "));
    // A summary's _sum/_count belong to the family without the suffix.
    std::string family = std::regex_replace(name, std::regex("_(sum|count)$"), "");
    EXPECT_TRUE(typed.count(name) || typed.count(family)) << "sample before its TYPE: " << line;
    ++samples;
  }
  EXPECT_GT(samples, 30);
  EXPECT_EQ(text.back(), '\n');
}

TEST(MetricsRender, ShowsTheFiguresAnOperatorAsksFor) {
  const std::string text = metrics::RenderPrometheus(Sample());
  EXPECT_THAT(text, HasSubstr("superagent_triggers_total{source=\"github\",outcome=\"filtered\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("superagent_triggers_total{source=\"feishu\",outcome=\"stored\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("superagent_decisions_total{outcome=\"accept\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("superagent_decisions_total{outcome=\"stop\"} 0\n"));  // stable series
  EXPECT_THAT(text, HasSubstr("superagent_decisions_would_accept_total 2\n"));
  EXPECT_THAT(text, HasSubstr("superagent_tickets{stage=\"working\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("superagent_tickets{stage=\"waiting_for_person\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("superagent_slots_busy 1\n"));
  EXPECT_THAT(text, HasSubstr("superagent_slots_configured 3\n"));
  EXPECT_THAT(text, HasSubstr("superagent_effects{state=\"pending\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("superagent_effects{state=\"failed\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("superagent_source_consecutive_failures{source=\"feishu\",path=\"back\\\"fill\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("superagent_source_last_success_timestamp_seconds{source=\"github\",path=\"notifications\"} 1.76467e+09\n"));
  EXPECT_THAT(text, HasSubstr("superagent_source_poll_seconds_count{source=\"github\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("superagent_source_poll_failures_total{source=\"github\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("superagent_model_tokens_total{purpose=\"assessment\",kind=\"prompt\"} 4000\n"));
  EXPECT_THAT(text, HasSubstr("superagent_model_tokens_total{purpose=\"assessment\",kind=\"cache_hit\"} 3500\n"));
  EXPECT_THAT(text, HasSubstr("superagent_info{version=\"0.1.0\",mode=\"observe\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("superagent_model_gateway_refused_total{reason=\"budget\"} 2\n"));
  // Set-aside (poison) items by kind, every kind always present so an alert can compare.
  EXPECT_THAT(text, HasSubstr("superagent_set_aside_items{kind=\"effect\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("superagent_set_aside_items{kind=\"eval\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("superagent_set_aside_items{kind=\"turn\"} 0\n"));
  // The rate limit was never seen: no made-up zero that would fire an alert.
  EXPECT_THAT(text, Not(HasSubstr("superagent_github_rate_limit_remaining")));
  // A path that never succeeded has no last-success sample.
  EXPECT_THAT(text, Not(HasSubstr("last_success_timestamp_seconds{source=\"feishu\"")));

  metrics::Snapshot s = Sample();
  s.github_rate = metrics::RateLimit{5000, 4711, 1'764'673'600'000};
  EXPECT_THAT(metrics::RenderPrometheus(s), HasSubstr("superagent_github_rate_limit_remaining 4711\n"));
  // The reserved slot exists only while execution runs; then its use is a 0/1 gauge.
  EXPECT_THAT(text, Not(HasSubstr("superagent_reserved_slot_busy")));
  s.reserved_slot_busy = true;
  EXPECT_THAT(metrics::RenderPrometheus(s), HasSubstr("# TYPE superagent_reserved_slot_busy gauge\nsuperagent_reserved_slot_busy 1\n"));
}

TEST(MetricsRuntime, AccumulatesModelTokensByPurposeAndPollRounds) {
  metrics::Runtime r;
  r.AddModelUsage("assessment", 100, 10, 80);
  r.AddModelUsage("assessment", 50, 5, 0);
  r.AddModelUsage("", 1, 1, 0);
  r.ObserveSourceRound("github", 1500, true);
  r.ObserveSourceRound("github", 500, false);
  auto usage = r.ModelUsage();
  EXPECT_EQ(usage["assessment"].calls, 2);
  EXPECT_EQ(usage["assessment"].prompt, 150);
  EXPECT_EQ(usage["assessment"].completion, 15);
  EXPECT_EQ(usage["assessment"].cache_hit, 80);
  EXPECT_EQ(usage["unknown"].calls, 1);
  auto rounds = r.Rounds();
  EXPECT_EQ(rounds["github"].rounds, 2);
  EXPECT_EQ(rounds["github"].failed, 1);
  EXPECT_DOUBLE_EQ(rounds["github"].seconds_sum, 2.0);
  EXPECT_DOUBLE_EQ(rounds["github"].last_seconds, 0.5);
}

}  // namespace
}  // namespace superagent::testing
