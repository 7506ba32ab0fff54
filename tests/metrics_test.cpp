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

  // Three Tickets (issue 38 §4): two of one rule and executor that merged, one a person stopped
  // under a rule whose name is Chinese with a quote in it.
  TicketOutcome merged;
  merged.ticket = 1;
  merged.rule = "typo";
  merged.executor = "claude-code";
  merged.repo = "acme/api";
  merged.outcome = "merged";
  merged.seconds_to_acknowledgement = 4;
  merged.seconds_to_first_commit = 200;
  merged.seconds_to_pull_request = 240;
  merged.seconds_to_merge = 7200;
  merged.turns = 2;
  merged.tokens = 120'000;
  merged.cost_usd = 0.75;
  merged.person_asks = 0;
  TicketOutcome merged_too = merged;
  merged_too.ticket = 2;
  merged_too.seconds_to_acknowledgement = 30;  // on a bound: counted in le="30"
  merged_too.seconds_to_first_commit = 1000;
  merged_too.seconds_to_pull_request = 1100;
  merged_too.seconds_to_merge = 90'000;
  merged_too.turns = 7;
  merged_too.tokens = 12'345'678;  // past the last bound: only in +Inf, and _sum keeps every digit
  merged_too.cost_usd = 3.5;
  merged_too.person_asks = 2;
  TicketOutcome stopped;
  stopped.ticket = 3;
  stopped.rule = "文档\"错字\"";
  stopped.executor = "codex";
  stopped.outcome = "stopped";
  stopped.seconds_to_acknowledgement = 2.5;  // no commit, pull request or merge: not observed there
  stopped.turns = 1;
  stopped.tokens = 800;
  stopped.cost_usd = 0.004;
  s.ticket_outcomes = {merged, merged_too, stopped};

  RulePrecision typo;
  typo.rule = "typo";
  typo.yes = 5;
  typo.no = 1;
  typo.unknown = 1;
  typo.unanswered = 2;
  typo.missed = 1;
  typo.precision = 5.0 / 6;
  typo.lower_bound = WilsonLowerBound(5, 6);
  RulePrecision path;
  path.rule = "explicit:mention";
  path.explicit_path = true;
  path.yes = 3;
  path.precision = 1;
  path.lower_bound = WilsonLowerBound(3, 3);
  s.rule_precision = {typo, path};
  return s;
}

TEST(MetricsRender, EveryFamilyHasHelpAndTypeAndEverySampleParses) {
  const std::string text = metrics::RenderPrometheus(Sample());
  std::istringstream in(text);
  std::string line;
  std::set<std::string> typed;
  const std::regex sample(R"(^([a-z_]+)(\{[a-z_]+="([^"\\]|\\.)*"(,[a-z_]+="([^"\\]|\\.)*")*\})? -?[0-9.e+-]+$)");
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      EXPECT_TRUE(type == "counter" || type == "gauge" || type == "summary" || type == "histogram") << line;
      typed.insert(name);
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    ASSERT_TRUE(std::regex_match(line, sample)) << "not a sample line: " << line;
    std::string name = line.substr(0, line.find_first_of("{ "));
    // A summary's _sum/_count, a histogram's _bucket/_sum/_count belong to the family without the suffix.
    std::string family = std::regex_replace(name, std::regex("_(sum|count|bucket)$"), "");
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

// Issue 38 §4, worked by hand from Sample()'s three Tickets: the two merged ones share a label
// set (acknowledged after 4 s and 30 s, 120 000 and 12 345 678 tokens, $0.75 and $3.50), the
// stopped one has its own and was only acknowledged.
TEST(MetricsRender, TicketOutcomesAreCountersAndCumulativeHistograms) {
  const std::string text = metrics::RenderPrometheus(Sample());
  const std::string merged = R"(rule="typo",executor="claude-code",outcome="merged",repo="acme/api")";
  const std::string stopped = R"(rule="文档\"错字\"",executor="codex",outcome="stopped",repo="none")";
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_ticket_outcomes_total counter\n"
                              "superagent_ticket_outcomes_total{" + merged + "} 2\n"
                              "superagent_ticket_outcomes_total{" + stopped + "} 1\n"));

  // Every bucket counts the observations at or under its bound (30 s is in le="30"), +Inf all.
  auto buckets = [](const std::string& family, const std::string& labels,
                    const std::vector<std::pair<std::string, int>>& counts) {
    std::string out;
    for (const auto& [le, n] : counts)
      out += family + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(n) + "\n";
    return out;
  };
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_ticket_acknowledgement_seconds histogram\n" +
                              buckets("superagent_ticket_acknowledgement_seconds", merged,
                                      {{"1", 0}, {"5", 1}, {"15", 1}, {"30", 2}, {"60", 2}, {"300", 2}, {"900", 2},
                                       {"1800", 2}, {"3600", 2}, {"14400", 2}, {"86400", 2}, {"604800", 2},
                                       {"+Inf", 2}}) +
                              "superagent_ticket_acknowledgement_seconds_sum{" + merged + "} 34\n"
                              "superagent_ticket_acknowledgement_seconds_count{" + merged + "} 2\n" +
                              buckets("superagent_ticket_acknowledgement_seconds", stopped,
                                      {{"1", 0}, {"5", 1}, {"15", 1}}) ));
  EXPECT_THAT(text, HasSubstr("superagent_ticket_acknowledgement_seconds_sum{" + stopped + "} 2.5\n"));
  // 12 345 678 tokens are past the last bound: only +Inf has them, and _sum keeps every digit.
  EXPECT_THAT(text, HasSubstr(buckets("superagent_ticket_tokens", merged,
                                      {{"1000", 0}, {"10000", 0}, {"100000", 0}, {"300000", 1}, {"1e+06", 1},
                                       {"3e+06", 1}, {"1e+07", 1}, {"+Inf", 2}}) +
                              "superagent_ticket_tokens_sum{" + merged + "} 1.2465678e+07\n"
                              "superagent_ticket_tokens_count{" + merged + "} 2\n"));
  EXPECT_THAT(text, HasSubstr(buckets("superagent_ticket_cost_usd", merged,
                                      {{"0.01", 0}, {"0.1", 0}, {"0.5", 0}, {"1", 1}, {"2", 1}, {"5", 2}, {"10", 2},
                                       {"50", 2}, {"+Inf", 2}}) +
                              "superagent_ticket_cost_usd_sum{" + merged + "} 4.25\n"));
  EXPECT_THAT(text, HasSubstr(buckets("superagent_ticket_turns", merged,
                                      {{"1", 0}, {"2", 1}, {"3", 1}, {"5", 1}, {"10", 2}, {"20", 2}, {"40", 2},
                                       {"+Inf", 2}}) +
                              "superagent_ticket_turns_sum{" + merged + "} 9\n"));
  EXPECT_THAT(text, HasSubstr(buckets("superagent_ticket_person_asks", merged, {{"0", 1}, {"1", 1}, {"2", 2}}) ));
  EXPECT_THAT(text, HasSubstr("superagent_ticket_merge_seconds_sum{" + merged + "} 97200\n"));
  // A moment that never came is not observed: the stopped Ticket has no commit, PR or merge series.
  for (const char* family : {"first_commit", "pull_request", "merge"})
    EXPECT_THAT(text, Not(HasSubstr(std::string("superagent_ticket_") + family + "_seconds_count{" + stopped)));

  // Each rule's verdicts, its precision's lower bound and its misses; explicit paths alike.
  EXPECT_THAT(text, HasSubstr("superagent_rule_verdicts{rule=\"typo\",verdict=\"yes\"} 5\n"
                              "superagent_rule_verdicts{rule=\"typo\",verdict=\"no\"} 1\n"
                              "superagent_rule_verdicts{rule=\"typo\",verdict=\"unknown\"} 1\n"
                              "superagent_rule_verdicts{rule=\"typo\",verdict=\"unanswered\"} 2\n"
                              "superagent_rule_verdicts{rule=\"explicit:mention\",verdict=\"yes\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_rule_precision_lower_bound gauge\n"
                              "superagent_rule_precision_lower_bound{rule=\"typo\"} 0.436497\n"
                              "superagent_rule_precision_lower_bound{rule=\"explicit:mention\"} 0.438503\n"));
  EXPECT_THAT(text, HasSubstr("superagent_rule_missed{rule=\"typo\"} 1\n"
                              "superagent_rule_missed{rule=\"explicit:mention\"} 0\n"));
}

// Before the first Ticket and the first verdict every family is there, empty, so alerts and
// dashboards written against them load.
// A Ticket still at work has no settled outcome: counting it would make a counter go down when it
// settles, so it is a gauge until then and joins the counters and histograms once settled.
TEST(MetricsRender, TicketsStillAtWorkAreAGaugeNotACounter) {
  metrics::Snapshot s = Sample();
  TicketOutcome live;
  live.ticket = 9;
  live.rule = "explicit";
  live.executor = "none";
  live.outcome = "live";
  live.turns = 1;
  TicketOutcome open = live;
  open.ticket = 10;
  open.outcome = "pr_open";
  s.ticket_outcomes.push_back(live);
  s.ticket_outcomes.push_back(open);
  const std::string text = metrics::RenderPrometheus(s);
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_tickets_unsettled gauge\n"
                              "superagent_tickets_unsettled{rule=\"explicit\",executor=\"none\",outcome=\"live\",repo=\"none\"} 1\n"
                              "superagent_tickets_unsettled{rule=\"explicit\",executor=\"none\",outcome=\"pr_open\",repo=\"none\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("outcome=\"live\",le=")));
  EXPECT_THAT(text, Not(HasSubstr("superagent_ticket_outcomes_total{rule=\"explicit\"")));
  EXPECT_EQ(text.find("superagent_ticket_turns_count{rule=\"explicit\""), std::string::npos);
}

TEST(MetricsRender, OutcomeFamiliesAreThereWithNoTickets) {
  metrics::Snapshot s = Sample();
  s.ticket_outcomes.clear();
  s.rule_precision.clear();
  const std::string text = metrics::RenderPrometheus(s);
  for (const char* family : {"superagent_ticket_acknowledgement_seconds", "superagent_ticket_first_commit_seconds",
                             "superagent_ticket_pull_request_seconds", "superagent_ticket_merge_seconds",
                             "superagent_ticket_turns", "superagent_ticket_tokens", "superagent_ticket_cost_usd",
                             "superagent_ticket_person_asks"}) {
    EXPECT_THAT(text, HasSubstr("# HELP " + std::string(family) + " "));
    EXPECT_THAT(text, HasSubstr("# TYPE " + std::string(family) + " histogram\n"));
    EXPECT_THAT(text, Not(HasSubstr(std::string(family) + "_bucket")));
  }
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_ticket_outcomes_total counter\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_rule_verdicts gauge\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_rule_precision_lower_bound gauge\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE superagent_rule_missed gauge\n"));
  EXPECT_THAT(text, Not(HasSubstr("superagent_ticket_outcomes_total{")));
  EXPECT_THAT(text, Not(HasSubstr("superagent_rule_verdicts{")));
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
