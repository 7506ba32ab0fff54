#include "core/revalidate.h"

#include "superagent/gate.h"
#include "superagent/text.h"

namespace superagent {
namespace {

bool IsCellAdmission(const std::string& admission) { return admission.rfind("cell:", 0) == 0; }

bool SameRule(const Rule& a, const Rule& b) {
  return a.enabled == b.enabled && a.when == b.when && a.instructions == b.instructions && a.silent == b.silent &&
         a.approver == b.approver;
}

// The admission table today still gives the origin Trigger at least the Mandate's strength.
// Follow-ups were admitted because the Thread had a Ticket, which it still has.
bool CellStillAdmits(const Mandate& m, const Trigger& origin, const Policy& now) {
  GateResult g = EvaluateGate(now, origin, /*thread_has_ticket=*/m.admission == "follow_up");
  return g.strength >= m.strength;
}

std::string MatchedRulesStillEnabled(const Mandate& m, const Policy& now) {
  for (const auto& name : m.matched_rules) {
    const Rule* r = now.FindRule(name);
    if (!r || !r->enabled) return "rule " + name + " is no longer enabled";
  }
  return "";
}

// Proactive work goes on only while a rule it matched is in auto: the rule's own mode, else the
// policy's (issue 38). "" when one is.
std::string NotAuto(const Mandate& m, const std::string& repo, const Policy& now) {
  bool own_mode = false;
  for (const auto& name : m.matched_rules) {
    const Rule* r = now.FindRule(name);
    if (r == nullptr) continue;
    if (now.ModeOf(*r, repo) == Mode::kAuto) return "";
    own_mode = own_mode || r->mode.has_value();
  }
  if (m.matched_rules.empty() && now.ModeIn(repo) == Mode::kAuto) return "";
  if (own_mode) return "no rule it matched is in auto (" + text::Join(m.matched_rules, ", ") + ")";
  return std::string("mode is ") + ModeName(now.ModeIn(repo)) + ", not auto";
}

// The table the origin Trigger was admitted by: its repository's own, else the Source's.
const SourcePolicy* TableOf(const Mandate& m, const Trigger& origin, const Policy& now) {
  return now.SourceIn(m.source, Policy::RepositoryOf(origin));
}

}  // namespace

std::string RevalidateMandate(const Mandate& m, const Trigger& origin, const Policy& now) {
  // The Source must still listen to the original Thread (not necessarily receive-all).
  const std::string repo = Policy::RepositoryOf(origin);
  const SourcePolicy* table = TableOf(m, origin, now);
  if (m.source != "panel" && table == nullptr) return "source " + m.source + " is no longer in the policy";
  if (m.admission == "allow_listed_follow_up" || m.admission == "panel_operator") return "";
  if (m.admission == "listed_bot") {
    if (!m.sender || !table->IsBot(*m.sender)) return "bot is no longer on the bot list";
    if (std::string r = NotAuto(m, repo, now); !r.empty()) return r;
    return MatchedRulesStillEnabled(m, now);
  }
  if (m.strength == Strength::kInferred) {
    if (std::string r = NotAuto(m, repo, now); !r.empty()) return r;
    if (std::string r = MatchedRulesStillEnabled(m, now); !r.empty()) return r;
  }
  if (IsCellAdmission(m.admission) || m.admission == "follow_up") {
    if (!CellStillAdmits(m, origin, now)) return "the admission table no longer gives this sender that strength";
    return "";
  }
  // An allow-listed person's request: they must still be on the allow-list.
  if (!m.sender || !table->IsPerson(*m.sender)) return "requester is no longer allow-listed";
  return "";
}

std::vector<std::string> PolicyChangeReasons(const Mandate& m, const Trigger& origin, const Policy& before,
                                             const Policy& now) {
  std::vector<std::string> reasons;
  for (const auto& name : m.matched_rules) {
    const Rule* old_rule = before.FindRule(name);
    const Rule* new_rule = now.FindRule(name);
    if (!new_rule || !new_rule->enabled)
      reasons.push_back("matched rule " + name + " no longer applies");
    else if (old_rule && !SameRule(*old_rule, *new_rule))
      reasons.push_back("matched rule " + name + " changed");
  }
  const bool proactive = m.strength == Strength::kInferred;
  const std::string repo = Policy::RepositoryOf(origin);
  if (proactive && NotAuto(m, repo, before).empty() && !NotAuto(m, repo, now).empty())
    reasons.push_back("proactive work no longer accepted (" + NotAuto(m, repo, now) + ")");

  bool eligible = true;
  const SourcePolicy* table = TableOf(m, origin, now);
  if (m.source != "panel" && table == nullptr) {
    eligible = false;
  } else if (m.admission == "listed_bot") {
    eligible = m.sender && table->IsBot(*m.sender);
  } else if (IsCellAdmission(m.admission) || m.admission == "follow_up") {
    eligible = CellStillAdmits(m, origin, now);
  } else if (m.admission == "allow_listed_addressed" || m.admission == "allow_listed_follow_up") {
    eligible = m.sender && table->IsPerson(*m.sender);
  }
  if (!eligible) reasons.push_back("requester no longer eligible");
  return reasons;
}

}  // namespace superagent
