// superagent policy simulate --config FILE --policy CANDIDATE.yaml [--since 7d] [--gate-only] [--json]
// superagent policy report --config FILE [--since 30d] [--json]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

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
    "Then it scores both policies on the verdicts people gave on those Decisions: how many each\n"
    "acts on and declines, and its precision (yes of yes + no among what it acts on) with the 95 %\n"
    "Wilson lower bound, overall and by rule.\n"
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

// Adds the verdicts of `records` to what `policy simulate` scores: each answered record's verdict,
// and the names it counts under per rule (its matched rules; a person's accepted explicit request
// under its path, "explicit:<admission>", as PrecisionByRule counts it).
void AddSimulatedVerdicts(const std::vector<WouldAcceptRecord>& records, std::map<std::int64_t, Verdict>* verdicts,
                          std::map<std::int64_t, std::vector<std::string>>* groups) {
  for (const WouldAcceptRecord& w : records) {
    if (!w.verdict) continue;
    if (!verdicts->emplace(w.decision, *w.verdict).second) continue;  // the first label of a Decision holds
    (*groups)[w.decision] = w.explicit_request ? std::vector<std::string>{"explicit:" + w.admission} : w.rules;
  }
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
  // What people said of the Decisions in the same window, to score both policies by.
  auto would_accepts = views->Judged(from);
  if (!would_accepts.ok()) {
    std::fprintf(stderr, "policy simulate: the store could not be read: %s\n",
                 would_accepts.status().message().c_str());
    return 1;
  }
  std::map<std::int64_t, Verdict> verdicts;
  std::map<std::int64_t, std::vector<std::string>> verdict_groups;
  AddSimulatedVerdicts(*would_accepts, &verdicts, &verdict_groups);
  const VerdictComparison scored = ScoreVerdicts(r, verdicts, verdict_groups);

  if (as_json) {
    nlohmann::json diffs = nlohmann::json::array();
    for (const SimulatedDecision& d : r.differences)
      diffs.push_back({{"decision", d.decision_id}, {"thread", d.thread}, {"trigger", d.trigger_id}, {"url", d.url},
                       {"at", FormatTime(d.at)}, {"recorded", d.recorded}, {"simulated", d.simulated},
                       {"recorded_reason", d.recorded_reason}, {"simulated_reason", d.simulated_reason},
                       {"assumed", d.assumed}, {"row", d.row}});
    nlohmann::json out = {{"since", FormatTime(from)}, {"policy", policy_path}, {"decisions", r.decisions},
                          {"same", r.same}, {"changed", r.changed}, {"needs_assessment", r.needs_assessment},
                          {"unavailable_skipped", r.unavailable_skipped}, {"differences", diffs},
                          {"verdicts", VerdictComparisonJson(scored)}};
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
    if (!d.row.empty()) std::printf("  row   %s\n", d.row.c_str());
  }
  std::printf("\n%s", VerdictComparisonText(scored).c_str());
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
  auto records = views->Judged(from);
  auto missed = records.ok() ? views->Missed(from) : Result<std::vector<MissedRecord>>(records.status());
  if (!missed.ok()) {
    std::fprintf(stderr, "policy report: the store could not be read: %s\n", missed.status().message().c_str());
    return 1;
  }
  const std::vector<RulePrecision> rules = PrecisionByRule(*records, *missed);
  // The edits precision has earned, made against the policy file in force (read, never written).
  std::vector<Problem> problems;
  std::optional<Policy> policy = config->policy_file.empty() ? std::optional<Policy>(DefaultPolicy())
                                                             : LoadPolicyFile(config->policy_file, &problems);
  std::string policy_text;
  if (!config->policy_file.empty()) {
    std::ifstream in(config->policy_file, std::ios::binary);
    policy_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::vector<ModeProposal> proposals =
      policy ? ProposeModes(rules, *policy, config->policy_file, policy_text) : std::vector<ModeProposal>{};
  if (as_json) {
    nlohmann::json out = PrecisionReportJson(rules, from);
    out["since"] = FormatTime(from);
    out["missed"] = missed->size();
    nlohmann::json list = nlohmann::json::array();
    for (const ModeProposal& p : proposals)
      list.push_back({{"rule", p.rule}, {"kind", p.promote ? "promote" : "demote"}, {"from", ModeName(p.from)},
                      {"to", ModeName(p.to)}, {"lower_bound", p.lower_bound}, {"answers", p.answers}, {"diff", p.diff},
                      {"why", p.why}});
    out["proposals"] = list;
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  int would = 0, accepted = 0;
  for (const WouldAcceptRecord& w : *records) ++(w.accepted ? accepted : would);
  std::printf("%d would_accept and %d accepted Decision(s) since %s; %zu explicit request(s) right after a decline\n",
              would, accepted, FormatTime(from).c_str(), missed->size());
  if (rules.empty()) std::printf("  none: no rule did, or would have done, anything in this window\n");
  for (const RulePrecision& r : rules) {
    std::printf("\n%s %s: %d would_accept, %d accepted; yes %d, no %d, don't know %d, unanswered %d, missed %d\n",
                r.explicit_path ? "path" : "rule", r.rule.c_str(), r.would_accept, r.accepted, r.yes, r.no, r.unknown,
                r.unanswered, r.missed);
    if (r.answers() == 0) std::printf("  precision: no yes or no answer yet\n");
    else
      std::printf("  precision %.1f %% over %d answer(s); at least %.1f %% with 95 %% confidence (Wilson)\n",
                  100 * r.precision, r.answers(), 100 * r.lower_bound);
  }
  for (const ModeProposal& p : proposals) {
    std::printf("\nproposed: %s\n", p.why.c_str());
    if (!p.diff.empty()) std::printf("%s", p.diff.c_str());
  }
  if (!proposals.empty()) std::printf("\nThe daemon never edits its policy: make the edit yourself, then reload.\n");
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
