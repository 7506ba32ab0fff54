// Engine::Explain — "I sent it, why didn't it answer?" (SPEC §12). Reads only.
#include "superagent/engine.h"
#include "store/store.h"

namespace superagent {

using nlohmann::json;

namespace {

json TicketJson(const Ticket& t) {
  json j{{"id", t.id}, {"thread", t.thread}, {"stage", StageName(t.stage)}, {"scope", t.scope},
         {"created_at", FormatTime(t.created_at)}};
  if (!t.end_reason.empty()) j["end_reason"] = t.end_reason;
  if (t.waiting) j["waiting_for"] = {{"actor", t.waiting->actor}, {"question", t.waiting->question}};
  return j;
}

json ReceiptJson(const Receipt& r) {
  return json{{"id", r.id}, {"kind", MessageKindName(r.kind)}, {"channel", r.channel}, {"status", r.status},
              {"created_at", FormatTime(r.created_at)}, {"body", r.body}};
}

json DecisionJson(const Decision& d) {
  json j{{"id", d.id}, {"eval", d.eval}, {"outcome", DecisionOutcomeName(d.outcome)}, {"strength", StrengthName(d.strength)},
         {"reason", d.reason}, {"policy_version", d.policy_version}, {"at", FormatTime(d.created_at)}};
  if (d.would_accept) j["would_accept"] = true;
  if (d.ticket) j["ticket"] = *d.ticket;
  if (!d.assessment.is_null()) j["assessment"] = d.assessment;
  return j;
}

json SetAsideJson(const QuarantineItem& q) {
  return json{{"kind", q.kind}, {"item", q.item}, {"what", q.label}, {"reason", q.reason},
              {"set_aside_at", FormatTime(q.set_aside_at.value_or(q.updated_at))}};
}

}  // namespace

Result<json> Engine::Explain(const std::string& id_or_url) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(auto rec, store_->FindTrigger(id_or_url));
  if (!rec) {
    ASSIGN_OR_RETURN(rec, store_->FindTriggerByUrl(id_or_url));
  }
  if (!rec)
    return Status::NotFound("no message with id or URL \"" + id_or_url +
                            "\" was ever received: check the Source's health and whether it is in scope");
  json story;
  json trig = TriggerToJson(rec->trigger);
  trig["seq"] = rec->seq;
  story["trigger"] = trig;
  story["arrival"] = {{"via", rec->via}, {"received_at", FormatTime(rec->received_at)}};
  story["intake"] = {{"outcome", IntakeOutcomeName(rec->outcome)}};
  if (rec->outcome == IntakeOutcome::kFiltered) {
    story["intake"]["filter_reason"] = rec->filter_reason;
    story["summary"] = "Filtered at intake (" + rec->filter_reason + "); it went no further.";
    return story;
  }

  std::vector<std::string> summary;
  json evals = json::array();
  ASSIGN_OR_RETURN(auto gate_rows, store_->GateRowsFor(rec->seq));
  for (const store::GateRow& g : gate_rows) {
    json e{{"eval", g.eval}, {"gate", {{"strength", g.strength}, {"candidate", g.candidate}, {"reason", g.reason}}}};
    ASSIGN_OR_RETURN(auto d, store_->DecisionForEval(g.eval));
    if (d) {
      e["decision"] = DecisionJson(*d);
      std::string line = "Eval " + std::to_string(g.eval) + ": gate " + g.strength + " (" + g.reason + "), decision " +
                         DecisionOutcomeName(d->outcome) + (d->would_accept ? " (would_accept)" : "") + ": " + d->reason;
      summary.push_back(line);
    }
    evals.push_back(e);
  }
  story["evals"] = evals;
  ASSIGN_OR_RETURN(auto q, store_->QueueRowFor(rec->seq));
  if (q) {
    story["eval_queue"] = {{"attempts", q->attempts}, {"in_running_eval", q->eval.has_value()}};
    if (!q->handback.empty()) story["eval_queue"]["handback"] = json::parse(q->handback, nullptr, false);
    summary.push_back(q->eval ? "An Eval is judging it now." :
                      "Waiting for an Eval (" + std::to_string(q->attempts) + " earlier attempts).");
  }

  json reached = json::array();
  std::vector<TicketId> involved;
  ASSIGN_OR_RETURN(auto inputs, store_->InputsForTrigger(rec->seq));
  for (const TicketInput& in : inputs) {
    json r{{"ticket", in.ticket}, {"as", in.kind}, {"state", in.state}};
    if (in.state == "handed_back") r["handback"] = {{"kind", in.handback_kind}, {"reason", in.handback_reason}};
    reached.push_back(r);
    involved.push_back(in.ticket);
    summary.push_back("Reached Ticket " + std::to_string(in.ticket) + " as " + in.kind +
                      (in.state == "handed_back" ? " and was handed back (" + in.handback_kind + ")" : ""));
  }
  story["tickets_reached"] = reached;

  ASSIGN_OR_RETURN(auto created, store_->TicketByOrigin(rec->seq));
  if (created) {
    ASSIGN_OR_RETURN(auto t, store_->GetTicket(*created));
    ASSIGN_OR_RETURN(auto m, store_->MandateForTicket(*created));
    json c = TicketJson(*t);
    if (m) c["mandate"] = MandateJson(*m);
    if (m && m->budget) {  // spend against it, with the extensions people granted (issue 22)
      ASSIGN_OR_RETURN(auto spend, store_->BudgetSpendOf(*created));
      ASSIGN_OR_RETURN(auto events, store_->BudgetEvents(*created));
      const TimeMs now = clock_->NowMs();
      c["budget"] = BudgetStatusJson(ComputeBudgetStatus(*m->budget, events, spend, now), now);
    }
    json pulls = json::array();
    ASSIGN_OR_RETURN(auto created_pulls, store_->TicketPulls(*created));
    for (const TicketPull& p : created_pulls) pulls.push_back(TicketPullJson(p));
    c["pull_requests"] = pulls;
    json assignments = json::array();
    ASSIGN_OR_RETURN(auto created_assignments, store_->AssignmentsFor(*created));
    for (const Assignment& a : created_assignments)
      assignments.push_back({{"id", a.id}, {"executor", a.executor}, {"state", a.state}});
    c["assignments"] = assignments;
    // Every place it is discussed (issue 23): the request's Thread, its PR's, its CI's, a chat's.
    ASSIGN_OR_RETURN(auto created_threads, store_->TicketThreads(*created));
    c["threads"] = created_threads;
    story["ticket_created"] = c;
    if (std::find(involved.begin(), involved.end(), *created) == involved.end()) involved.push_back(*created);
    summary.push_back("It created Ticket " + std::to_string(*created) + " (" + StageName(t->stage) + ").");
  }

  json receipts = json::array();
  for (TicketId id : involved) {
    ASSIGN_OR_RETURN(auto ticket_receipts, store_->ReceiptsFor(id));
    const bool made_here = created && *created == id;
    for (const Receipt& r : ticket_receipts) {
      // A Ticket this message only reached said things before it arrived (its acknowledgement,
      // earlier results): those were not sent for this message (issue 23).
      if (!made_here && r.created_at < rec->received_at) continue;
      json rj = ReceiptJson(r);
      rj["ticket"] = id;
      receipts.push_back(rj);
      if (r.kind == MessageKind::kAcknowledgement)
        summary.push_back("Acknowledgement " + r.status + " on " + r.channel + ".");
    }
  }
  story["receipts"] = receipts;

  // Set aside (issue 18): its Thread's Evals, a Ticket's turns, or a message about it.
  json set_aside = json::array();
  auto note = [&](const std::optional<QuarantineItem>& item) {
    if (!item || !item->set_aside()) return;
    set_aside.push_back(SetAsideJson(*item));
    summary.push_back("Set aside: " + item->label + " " + item->reason + "; a person can retry it from the panel's Needs-you.");
  };
  ASSIGN_OR_RETURN(auto trigger_threads, store_->TriggerThreads(rec->seq));
  for (const std::string& th : trigger_threads) {
    ASSIGN_OR_RETURN(auto eval_q, store_->GetQuarantine(kQuarantineEval, th));
    note(eval_q);
  }
  for (TicketId id : involved) {
    ASSIGN_OR_RETURN(auto turn_q, store_->GetQuarantine(kQuarantineTurn, std::to_string(id)));
    note(turn_q);
  }
  for (const json& r : receipts) {
    ASSIGN_OR_RETURN(auto effect_q, store_->SetAsideEffectOf(r["id"].get<std::string>()));
    note(effect_q);
  }
  story["set_aside"] = set_aside;
  if (summary.empty()) summary.push_back("Stored; no Eval or Ticket has handled it yet.");
  std::string text;
  for (const auto& s : summary) text += (text.empty() ? "" : " ") + s;
  story["summary"] = text;
  return story;
}

}  // namespace superagent
