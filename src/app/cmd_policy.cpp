// superagent policy simulate --config FILE --policy CANDIDATE.yaml [--since 7d] [--gate-only] [--json]
// superagent policy report --config FILE [--since 30d] [--json]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "app/commands.h"
#include "app/config.h"
#include "app/simulate.h"
#include "superagent/clock.h"
#include "superagent/judgement.h"
#include "superagent/views.h"

namespace superagent::app {
namespace {

const char kPolicyUsage[] =
    "usage: superagent policy simulate --config FILE --policy CANDIDATE.yaml [--since 7d] [--gate-only] [--json]\n"
    "\n"
    "Replays the Decisions recorded since --since (default 7d; units m, h, d) through the Gate\n"
    "and the decision code under CANDIDATE, reusing each recorded model assessment, and prints\n"
    "every Decision that would come out differently. The model is never called: where the\n"
    "candidate admits a message no recorded assessment covers, it says \"needs_assessment\".\n"
    "--gate-only ignores recorded assessments. Reads only; safe while the daemon runs.\n"
    "exit: 0 simulated (differences or not), 1 no database or unreadable, 2 bad input.\n"
    "\n"
    "usage: superagent policy report --config FILE [--since 30d] [--json]\n"
    "\n"
    "For each rule, what observe mode would have done since --since (default 30d) and what people\n"
    "said of it: would_accept Decisions, verdicts yes / no / don't know, unanswered, precision\n"
    "(yes of yes + no) and its 95 % Wilson lower bound — the figure to hold against before\n"
    "switching a rule to auto. Reads only; safe while the daemon runs.\n";

// "7d", "12h", "30m" → milliseconds; -1 when malformed.
TimeMs ParseSince(const std::string& s) {
  if (s.size() < 2) return -1;
  const char unit = s.back();
  const std::string digits = s.substr(0, s.size() - 1);
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  const TimeMs n = std::stoll(digits);
  switch (unit) {
    case 'm': return n * 60'000;
    case 'h': return n * 3'600'000;
    case 'd': return n * 86'400'000;
    default: return -1;
  }
}

// The config at `path` (the defaults when empty); nullopt, its problems printed, when invalid.
std::optional<Config> ConfigOrDefaults(const std::string& path) {
  if (path.empty()) return DefaultConfig();
  std::vector<Problem> problems;
  auto loaded = LoadConfigFile(path, &problems);
  if (!loaded)
    for (const Problem& p : problems) std::fprintf(stderr, "%s\n", p.ToString().c_str());
  return loaded;
}

// The daemon's store under `config`, read-only; null, the reason printed as `command`'s, when it
// cannot be opened.
std::unique_ptr<Views> OpenStore(const Config& config, const char* command) {
  auto views = Views::Open((std::filesystem::path(config.data_dir) / "superagent.db").string());
  if (views.ok()) return std::move(*views);
  std::fprintf(stderr, "%s: %s\n", command, views.status().message().c_str());
  return nullptr;
}

int Simulate(int argc, char** argv) {
  std::string config_path, policy_path, since = "7d";
  bool gate_only = false, as_json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kPolicyUsage, stdout);
      return 0;
    }
    if (a == "--config" && i + 1 < argc) config_path = argv[++i];
    else if (a == "--policy" && i + 1 < argc) policy_path = argv[++i];
    else if (a == "--since" && i + 1 < argc) since = argv[++i];
    else if (a == "--gate-only") gate_only = true;
    else if (a == "--json") as_json = true;
    else {
      return UsageError("policy simulate", "unexpected argument '" + std::string(argv[i]) + "'", kPolicyUsage);
    }
  }
  if (policy_path.empty()) {
    return UsageError("policy simulate", "--policy CANDIDATE.yaml is required", kPolicyUsage);
  }
  const TimeMs window = ParseSince(since);
  if (window < 0) {
    std::fprintf(stderr, "policy simulate: --since must be a number and a unit (m, h or d), e.g. 7d; got '%s'\n",
                 since.c_str());
    return 2;
  }
  std::optional<Config> config = ConfigOrDefaults(config_path);
  if (!config) return 2;
  std::vector<Problem> problems;
  auto candidate = LoadPolicyFile(policy_path, &problems);
  if (!candidate) {
    for (const Problem& p : problems) std::fprintf(stderr, "%s\n", p.ToString().c_str());
    std::fprintf(stderr, "policy simulate: the candidate policy has %zu problem(s)\n", problems.size());
    return 2;
  }
  // Views is the read-only connection: a simulation can never change the store.
  auto views = OpenStore(*config, "policy simulate");
  if (!views) return 1;
  const TimeMs from = SystemClock()->NowMs() - window;
  auto recorded = views->DecisionsSince(from);
  if (!recorded.ok()) {
    std::fprintf(stderr, "policy simulate: the store could not be read: %s\n", recorded.status().message().c_str());
    return 1;
  }
  SimulationReport r = SimulatePolicy(*recorded, *candidate, !gate_only);

  if (as_json) {
    nlohmann::json diffs = nlohmann::json::array();
    for (const SimulatedDecision& d : r.differences)
      diffs.push_back({{"decision", d.decision_id}, {"thread", d.thread}, {"trigger", d.trigger_id}, {"url", d.url},
                       {"at", FormatTime(d.at)}, {"recorded", d.recorded}, {"simulated", d.simulated},
                       {"recorded_reason", d.recorded_reason}, {"simulated_reason", d.simulated_reason},
                       {"assumed", d.assumed}});
    nlohmann::json out = {{"since", FormatTime(from)}, {"policy", policy_path}, {"decisions", r.decisions},
                          {"same", r.same}, {"changed", r.changed}, {"needs_assessment", r.needs_assessment},
                          {"unavailable_skipped", r.unavailable_skipped}, {"differences", diffs}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%d decision(s) since %s replayed under %s (mode %s)\n", r.decisions, FormatTime(from).c_str(),
              policy_path.c_str(), ModeName(candidate->mode));
  std::printf("  same: %d  changed: %d  needs a model assessment: %d\n", r.same, r.changed, r.needs_assessment);
  if (r.unavailable_skipped)
    std::printf("  (%d model failure(s) not replayed: their messages were judged again later)\n", r.unavailable_skipped);
  for (const SimulatedDecision& d : r.differences) {
    std::printf("\n%s %s -> %s  (%s)\n", d.trigger_id.c_str(), d.recorded.c_str(), d.simulated.c_str(),
                FormatTime(d.at).c_str());
    if (!d.url.empty()) std::printf("  url   %s\n", d.url.c_str());
    std::printf("  was   %s\n  now   %s\n", d.recorded_reason.c_str(), d.simulated_reason.c_str());
  }
  return 0;
}

int Report(int argc, char** argv) {
  std::string config_path, since = "30d";
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kPolicyUsage, stdout);
      return 0;
    }
    if (a == "--config" && i + 1 < argc) config_path = argv[++i];
    else if (a == "--since" && i + 1 < argc) since = argv[++i];
    else if (a == "--json") as_json = true;
    else return UsageError("policy report", "unexpected argument '" + a + "'", kPolicyUsage);
  }
  const TimeMs window = ParseSince(since);
  if (window < 0) {
    std::fprintf(stderr, "policy report: --since must be a number and a unit (m, h or d), e.g. 30d; got '%s'\n",
                 since.c_str());
    return 2;
  }
  std::optional<Config> config = ConfigOrDefaults(config_path);
  if (!config) return 2;
  auto views = OpenStore(*config, "policy report");
  if (!views) return 1;
  const TimeMs from = SystemClock()->NowMs() - window;
  auto records = views->WouldAccepts(from);
  if (!records.ok()) {
    std::fprintf(stderr, "policy report: the store could not be read: %s\n", records.status().message().c_str());
    return 1;
  }
  const std::vector<RulePrecision> rules = PrecisionByRule(*records);
  if (as_json) {
    nlohmann::json out = PrecisionReportJson(rules, from);
    out["since"] = FormatTime(from);
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%zu would_accept Decision(s) since %s\n", records->size(), FormatTime(from).c_str());
  if (rules.empty()) std::printf("  none: observe mode has recorded nothing it would have done in this window\n");
  for (const RulePrecision& r : rules) {
    std::printf("\nrule %s: %d would_accept; yes %d, no %d, don't know %d, unanswered %d\n", r.rule.c_str(),
                r.would_accept, r.yes, r.no, r.unknown, r.unanswered);
    if (r.yes + r.no == 0) std::printf("  precision: no yes or no answer yet\n");
    else
      std::printf("  precision %.1f %% over %d answer(s); at least %.1f %% with 95 %% confidence (Wilson)\n",
                  100 * r.precision, r.yes + r.no, 100 * r.lower_bound);
  }
  return 0;
}

}  // namespace

int CmdPolicy(int argc, char** argv) {
  if (argc >= 2 && !std::strcmp(argv[1], "simulate")) return Simulate(argc - 1, argv + 1);
  if (argc >= 2 && !std::strcmp(argv[1], "report")) return Report(argc - 1, argv + 1);
  const bool help = argc >= 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"));
  std::fputs(kPolicyUsage, help ? stdout : stderr);
  return help ? 0 : 2;
}

}  // namespace superagent::app
