#include "superagent/judgement.h"

#include <cmath>
#include <map>

namespace superagent {

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kYes: return "yes";
    case Verdict::kNo: return "no";
    case Verdict::kUnknown: return "unknown";
  }
  return "unknown";
}

std::optional<Verdict> ParseVerdict(std::string_view text) {
  if (text == "yes") return Verdict::kYes;
  if (text == "no") return Verdict::kNo;
  if (text == "unknown") return Verdict::kUnknown;
  return std::nullopt;
}

double WilsonLowerBound(int successes, int trials, double z) {
  if (trials <= 0) return 0;
  const double n = trials, p = static_cast<double>(successes) / n, z2 = z * z;
  const double centre = p + z2 / (2 * n);
  const double margin = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  return std::max(0.0, (centre - margin) / (1 + z2 / n));
}

std::vector<RulePrecision> PrecisionByRule(const std::vector<WouldAcceptRecord>& records) {
  std::map<std::string, RulePrecision> by_rule;
  for (const WouldAcceptRecord& w : records) {
    std::vector<std::string> rules = w.rules;
    if (rules.empty()) rules.push_back("(no rule)");
    for (const std::string& name : rules) {
      RulePrecision& r = by_rule[name];
      r.rule = name;
      ++r.would_accept;
      if (!w.verdict) ++r.unanswered;
      else if (*w.verdict == Verdict::kYes) ++r.yes;
      else if (*w.verdict == Verdict::kNo) ++r.no;
      else ++r.unknown;
    }
  }
  std::vector<RulePrecision> out;
  for (auto& [name, r] : by_rule) {
    const int judged = r.yes + r.no;
    r.precision = judged > 0 ? static_cast<double>(r.yes) / judged : 0;
    r.lower_bound = WilsonLowerBound(r.yes, judged);
    out.push_back(r);
  }
  return out;
}

nlohmann::json PrecisionReportJson(const std::vector<RulePrecision>& rules, TimeMs since) {
  nlohmann::json list = nlohmann::json::array();
  for (const RulePrecision& r : rules)
    list.push_back({{"rule", r.rule},
                    {"would_accept", r.would_accept},
                    {"yes", r.yes},
                    {"no", r.no},
                    {"unknown", r.unknown},
                    {"unanswered", r.unanswered},
                    {"precision", r.precision},
                    {"lower_bound", r.lower_bound}});
  return {{"since", since}, {"rules", list}};
}

}  // namespace superagent
