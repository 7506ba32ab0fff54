#include "superagent/judgement.h"

#include <cctype>
#include <cmath>
#include <cstdio>
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

std::vector<RulePrecision> PrecisionByRule(const std::vector<WouldAcceptRecord>& records,
                                           const std::vector<MissedRecord>& missed) {
  std::map<std::string, RulePrecision> by_rule, by_path;
  for (const WouldAcceptRecord& w : records) {
    std::vector<std::string> keys;
    if (w.explicit_request) keys.push_back("explicit:" + (w.admission.empty() ? std::string("unknown") : w.admission));
    else keys = w.rules.empty() ? std::vector<std::string>{"(no rule)"} : w.rules;
    for (const std::string& name : keys) {
      RulePrecision& r = (w.explicit_request ? by_path : by_rule)[name];
      r.rule = name;
      r.explicit_path = w.explicit_request;
      ++(w.accepted ? r.accepted : r.would_accept);
      if (!w.verdict) ++r.unanswered;
      else if (*w.verdict == Verdict::kYes) ++r.yes;
      else if (*w.verdict == Verdict::kNo) ++r.no;
      else ++r.unknown;
    }
  }
  for (const MissedRecord& m : missed) {
    const std::vector<std::string> keys = m.rules.empty() ? std::vector<std::string>{"(no rule)"} : m.rules;
    for (const std::string& name : keys) {
      RulePrecision& r = by_rule[name];
      r.rule = name;
      ++r.missed;
    }
  }
  std::vector<RulePrecision> out;
  for (auto* table : {&by_rule, &by_path})
    for (auto& [name, r] : *table) {
      r.precision = r.answers() > 0 ? static_cast<double>(r.yes) / r.answers() : 0;
      r.lower_bound = WilsonLowerBound(r.yes, r.answers());
      out.push_back(r);
    }
  return out;
}

nlohmann::json PrecisionReportJson(const std::vector<RulePrecision>& rules, TimeMs since) {
  nlohmann::json list = nlohmann::json::array();
  for (const RulePrecision& r : rules)
    list.push_back({{"rule", r.rule},
                    {"kind", r.explicit_path ? "explicit" : "rule"},
                    {"would_accept", r.would_accept},
                    {"accepted", r.accepted},
                    {"yes", r.yes},
                    {"no", r.no},
                    {"unknown", r.unknown},
                    {"unanswered", r.unanswered},
                    {"missed", r.missed},
                    {"precision", r.precision},
                    {"lower_bound", r.lower_bound}});
  return {{"since", since}, {"rules", list}};
}

std::optional<OutcomeLabel> LabelOutcome(const OutcomeFacts& f) {
  // A person who stops the work before its first turn is over says it was not wanted; after
  // that, a stop may be about the work's course, which is not this question.
  if (f.stopped_by_person && f.turns_when_stopped <= 1) return OutcomeLabel{Verdict::kNo, "stopped_in_first_turn"};
  if (f.pulls_merged > 0) return OutcomeLabel{Verdict::kYes, "pull_request_merged"};
  if (f.pulls_open > 0) return std::nullopt;  // not decided yet
  if (f.pulls_closed > 0) return OutcomeLabel{Verdict::kNo, "pull_request_closed"};
  if (f.thanked) return OutcomeLabel{Verdict::kYes, "thanked"};
  if (f.result_sent && !f.stopped_by_person) return OutcomeLabel{Verdict::kYes, "answered"};
  return std::nullopt;
}

bool IsThanks(std::string_view text) {
  // The mentions that open it out ("@agent thanks"); one later in it ("thanks @bob") thanks
  // someone else.
  std::string words;
  std::size_t i = 0;
  while (true) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
    if (i >= text.size() || text[i] != '@') break;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t' && text[i] != '\n') ++i;
  }
  for (; i < text.size(); ++i) words += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  // Trailing and leading spaces and punctuation, ASCII and CJK full-width ("谢谢！", "thanks!!").
  static const char* const kTrim[] = {" ", "\t", "\n", "\r", "!", ".", ",", "~", "！", "。", "，", "～", "🙏", "😊", "❤️"};
  for (bool changed = true; changed;) {
    changed = false;
    for (const char* t : kTrim) {
      const std::string_view cut(t);
      while (words.size() >= cut.size() && words.compare(words.size() - cut.size(), cut.size(), cut) == 0) {
        words.erase(words.size() - cut.size());
        changed = true;
      }
      while (words.size() >= cut.size() && words.compare(0, cut.size(), cut) == 0) {
        words.erase(0, cut.size());
        changed = true;
      }
    }
  }
  static const char* const kThanks[] = {"thanks", "thank you", "thx", "ty", "thanks a lot", "many thanks", "great, thanks",
                                        "谢谢", "感谢", "多谢", "谢啦", "谢了", "辛苦了", "👍"};
  for (const char* t : kThanks)
    if (words == t) return true;
  return false;
}

TimeMs JudgementWindowStart(const JudgementSettings& s, TimeMs now) {
  return now - static_cast<TimeMs>(s.window_days) * 24 * 3600 * 1000;
}

std::string TicketSet::AlsoJson() const { return nlohmann::json(also).dump(); }

bool Demoted(const RulePrecision& r, const JudgementSettings& s) {
  return !r.explicit_path && r.answers() >= s.demote_after && r.lower_bound < s.demote_at;
}

namespace {

std::string Percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * share);
  return buf;
}

}  // namespace

std::vector<ModeProposal> ProposeModes(const std::vector<RulePrecision>& precision, const Policy& policy,
                                       const std::string& policy_file, const std::string& policy_text) {
  const JudgementSettings& s = policy.judgement;
  std::vector<ModeProposal> out;
  for (const RulePrecision& r : precision) {
    if (r.explicit_path) continue;
    const Rule* rule = policy.FindRule(r.rule);
    if (rule == nullptr || !rule->enabled) continue;
    const Mode now = policy.ModeOf(*rule);
    ModeProposal p;
    p.rule = r.rule;
    p.lower_bound = r.lower_bound;
    p.answers = r.answers();
    const std::string figures = std::to_string(r.yes) + " of " + std::to_string(r.answers()) +
                                " answers said it was a request; at least " + Percent(r.lower_bound) +
                                " with 95 % confidence";
    if (now != Mode::kAuto && r.answers() >= s.promote_after && r.lower_bound >= s.promote_at) {
      p.from = now;
      p.to = Mode::kAuto;
      p.promote = true;
      p.why = "Rule " + r.rule + " has earned auto: " + figures + " (promote_at " + Percent(s.promote_at) + ", after " +
              std::to_string(s.promote_after) + " answers).";
    } else if (now == Mode::kAuto && Demoted(r, s)) {
      p.from = Mode::kAuto;
      p.to = Mode::kObserve;
      p.promote = false;
      p.why = "Rule " + r.rule + " has lost auto: " + figures + ", under demote_at " + Percent(s.demote_at) +
              ". Its new Tickets are held for a person until the policy changes.";
    } else {
      continue;
    }
    const std::string file = policy_file.empty() ? "policy.yaml" : policy_file;
    p.diff = policy_text.empty() ? "" : RuleModeEditDiff(policy_text, file, r.rule, p.to);
    if (p.diff.empty())
      p.why += policy_text.empty() ? " The policy in force is the embedded default: write it to a policy file first, "
                                     "then give the rule mode: " + std::string(ModeName(p.to)) + "."
                                   : " Give the rule mode: " + std::string(ModeName(p.to)) + " in " + file + ".";
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace superagent
