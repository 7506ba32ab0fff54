// Verdicts (issue 38): a person's answer to "was this a request?" on what a rule did (auto) or
// would have done (observe). Final once given, so a rule's counts never move under the people
// reading them; a person's verdict on an accepted Decision outranks its Ticket's outcome.
#include <cstdio>
#include <map>

#include <spdlog/spdlog.h>

#include "core/engine_internal.h"
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/json_read.h"

namespace superagent {

Status Engine::RecordVerdict(std::int64_t decision, Verdict verdict, const std::string& by, const std::string& via) {
  if (via != "panel" && via != "thread") return Status::InvalidArgument("a verdict comes via panel or thread, not " + via);
  MutexLock lock(&mu_);
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  ASSIGN_OR_RETURN(auto d, store_->DecisionById(decision));
  if (!d) return Status::NotFound("no Decision " + std::to_string(decision));
  if (!d->would_accept && !(d->outcome == DecisionOutcome::kAccept && d->strength == Strength::kInferred))
    return Status::InvalidArgument("Decision " + std::to_string(decision) +
                                   " is neither a would_accept nor a rule's accept: only what a rule did or would have "
                                   "done gets a verdict");
  ASSIGN_OR_RETURN(bool inserted, store_->InsertVerdict(decision, VerdictName(verdict), by, via, clock_->NowMs()));
  if (!inserted) return Status::Conflict("Decision " + std::to_string(decision) + " already has a verdict");
  RETURN_IF_ERROR(tx->Commit());
  std::string rules;
  if (const auto* list = json_read::Find(d->assessment, "rules"); list != nullptr && list->is_array())
    for (const auto& r : *list)
      if (r.is_object() && r.value("matched", false) && r.contains("name") && r["name"].is_string())
        rules += (rules.empty() ? "" : ",") + r["name"].get<std::string>();
  spdlog::info("verdict recorded decision={} thread={} verdict={} by=\"{}\" via={} rules={}", decision, d->thread,
               VerdictName(verdict), by, via, rules.empty() ? "-" : rules);
  return Status::Ok();
}

Result<std::string> Engine::DemotedLocked(const Mandate& m, TimeMs now) {
  if (m.strength != Strength::kInferred) return std::string();
  std::vector<std::string> in_auto;
  for (const std::string& name : m.matched_rules)
    if (const Rule* r = policy_.FindRule(name); r && policy_.ModeOf(*r) == Mode::kAuto) in_auto.push_back(name);
  if (in_auto.empty()) return std::string();
  const JudgementSettings& js = policy_.judgement;
  ASSIGN_OR_RETURN(auto precision, store_->PrecisionNow(js, now));
  std::map<std::string, RulePrecision> by_rule;
  for (RulePrecision& r : precision) by_rule[r.rule] = std::move(r);
  // Held only when every rule in auto that covers the work has lost it: one that still holds
  // its precision is reason enough to go on.
  std::string why;
  for (const std::string& name : in_auto) {
    auto it = by_rule.find(name);
    if (it == by_rule.end() || !Demoted(it->second, js)) return std::string();
    char figures[160];
    std::snprintf(figures, sizeof figures, "%d of %d answers said it was a request, at least %.1f %% with 95 %% confidence",
                  it->second.yes, it->second.answers(), 100 * it->second.lower_bound);
    why += (why.empty() ? "" : "; ") + ("rule " + name + " is under judgement.demote_at (" + figures + ")");
  }
  return why + "; its policy edit back to observe is proposed in the panel";
}

}  // namespace superagent
