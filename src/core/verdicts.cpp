// Verdicts (issue 38): a person's answer to "was this a request?" on what observe mode would have
// done. Final once given, so a rule's counts never move under the people reading them.
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
  if (!d->would_accept)
    return Status::InvalidArgument("Decision " + std::to_string(decision) +
                                   " is not a would_accept: only what observe mode would have done gets a verdict");
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

}  // namespace superagent
