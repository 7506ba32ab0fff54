// Judgement you can measure (issue 38, first part): a person's verdict on what the daemon would
// have done in observe mode, and each rule's precision from those verdicts, with the lower bound
// of its 95 % Wilson interval — the honest figure for "has this rule earned auto?" on few answers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"

namespace superagent {

// A person's answer to "was this a request?" about one would_accept Decision.
enum class Verdict { kYes, kNo, kUnknown };
const char* VerdictName(Verdict v);                         // "yes" | "no" | "unknown"
std::optional<Verdict> ParseVerdict(std::string_view text);  // exactly those words

// One would_accept Decision and the verdict on it, if any (Views::WouldAccepts).
struct WouldAcceptRecord {
  std::int64_t decision = 0;
  std::string thread;
  std::vector<std::string> rules;  // the rules its assessment matched (none: the record counts under "(no rule)")
  std::string text;                // the newest message of its batch, for a person to judge
  std::optional<Verdict> verdict;
  std::string by;                  // who gave the verdict
  std::string via;                 // "panel" | "thread"
  TimeMs verdict_at = 0;           // when the verdict was given (0: none)
  TimeMs created_at = 0;           // the Decision's
};

// One rule's record.
struct RulePrecision {
  std::string rule;
  int would_accept = 0;  // would_accept Decisions it matched
  int yes = 0, no = 0, unknown = 0;
  int unanswered = 0;
  // yes / (yes + no): "don't know" and unanswered count neither way. 0 with no yes or no.
  double precision = 0;
  double lower_bound = 0;  // the 95 % Wilson lower bound of `precision` over yes + no answers
};

// The lower bound of the Wilson score interval for `successes` of `trials` at `z` (1.96: 95 %);
// 0 when trials is 0. On 3 of 3 it is 0.44, on 30 of 30 0.89: few answers never look certain.
double WilsonLowerBound(int successes, int trials, double z = 1.959963984540054);

// Each rule's record over `records`, by rule name (a Decision matching two rules counts for both).
std::vector<RulePrecision> PrecisionByRule(const std::vector<WouldAcceptRecord>& records);

// {"since": ms, "rules": [{rule, would_accept, yes, no, unknown, unanswered, precision,
// lower_bound}]}: `superagent policy report --json`'s shape.
nlohmann::json PrecisionReportJson(const std::vector<RulePrecision>& rules, TimeMs since);

}  // namespace superagent
