// Policy versions (SPEC §4.6): a policy whose content changed becomes a new version in one
// transaction; running Evals judged under the old one are discarded and requeued, and live Tickets
// whose Mandate it affects get one policy_changed input. The current version itself is held by the
// Engine (engine.cpp).
#include <spdlog/spdlog.h>

#include "core/revalidate.h"
#include "store/store.h"
#include "superagent/engine.h"

namespace superagent {

using nlohmann::json;

Result<PolicyChange> Engine::ApplyPolicy(const Policy& policy, const std::string& origin) {
  MutexLock lock(&mu_);
  PolicyChange change;
  const std::string fingerprint = policy.Fingerprint();
  if (policy_version_ != 0 && fingerprint == policy_.Fingerprint()) {
    change.version = policy_version_;
    return change;
  }
  const TimeMs now = clock_->NowMs();
  auto tx = store_->Begin();
  RETURN_IF_ERROR(tx->begin_status());
  auto version = store_->InsertPolicyVersion(fingerprint, policy.ToJson().dump(), origin, now);
  if (!version.ok()) return version.status();
  change.changed = true;
  change.version = *version;

  if (policy_version_ != 0) {
    // Running Evals judged under the old policy: discard, requeue their Triggers (no attempt used).
    ASSIGN_OR_RETURN(auto running, store_->RunningEvals());
    for (const store::EvalRow& e : running) {
      RETURN_IF_ERROR(store_->SetEvalStatus(e.id, "discarded", now));
      RETURN_IF_ERROR(store_->ReleaseBatch(e.id, now, 0));
      ++change.discarded_evals;
    }
    // Live Tickets whose Mandate the change touches get one notice; Mandates are not revoked here.
    ASSIGN_OR_RETURN(auto open, store_->OpenTickets());
    for (TicketId id : open) {
      ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(id));
      if (!m || !m->ended_as.empty()) continue;
      ASSIGN_OR_RETURN(auto origin_rec, store_->FindTriggerBySeq(m->origin_trigger_seq));
      if (!origin_rec) continue;
      std::vector<std::string> reasons = PolicyChangeReasons(*m, origin_rec->trigger, policy_, policy);
      if (reasons.empty()) continue;
      TicketInput in;
      in.ticket = id;
      in.kind = "policy_changed";
      in.body = json{{"policy_version", *version}, {"reasons", reasons}};
      in.state = "pending";
      in.created_at = now;
      auto iid = store_->InsertInput(in);
      if (!iid.ok()) return iid.status();
      change.notified.push_back(id);
    }
  }
  RETURN_IF_ERROR(tx->Commit());
  policy_ = policy;
  policy_version_ = *version;
  // A rule with a mode of its own is named with it: what runs in auto is read off this one line.
  std::string own_modes;
  for (const Rule& r : policy.rules)
    if (r.mode) own_modes += (own_modes.empty() ? "" : ",") + r.name + ":" + ModeName(*r.mode);
  spdlog::info("policy version={} mode={} rules={} rule_modes=\"{}\" origin=\"{}\" discarded_evals={} notified_tickets={}",
               *version, ModeName(policy.mode), policy.rules.size(), own_modes.empty() ? "-" : own_modes, origin,
               change.discarded_evals, change.notified.size());
  return change;
}

}  // namespace superagent
