// explain — "I sent it, why didn't it answer?" (SPEC §12). Reads only (core/explain.h).
#include <algorithm>
#include <cstdio>
#include <map>

#include "core/explain.h"
#include "core/explain_words.h"
#include "store/store.h"
#include "superagent/answer.h"
#include "superagent/gate.h"
#include "superagent/json_read.h"
#include "superagent/judgement.h"
#include "superagent/text.h"

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

// "It was judged by model M (prompt version P); code checks passed: a, b; failed: c." from the
// stored assessment; "" when it has none of these (a verb, no model).
std::string JudgedByWords(const json& a) {
  if (!a.is_object()) return "";
  std::string model, version;
  if (auto u = a.find("usage"); u != a.end() && u->is_object()) {
    if (u->contains("model") && (*u)["model"].is_string()) model = (*u)["model"].get<std::string>();
    if (u->contains("prompt_version") && (*u)["prompt_version"].is_string()) version = (*u)["prompt_version"].get<std::string>();
  }
  std::vector<std::string> passed, failed;
  if (auto c = a.find("checks"); c != a.end() && c->is_array())
    for (const json& check : *c)
      if (check.is_object() && check.contains("check") && check["check"].is_string())
        (check.value("passed", false) ? passed : failed).push_back(check["check"].get<std::string>());
  if (model.empty() && passed.empty() && failed.empty()) return "";
  std::string out = "It was judged";
  if (!model.empty()) out += " by model " + text::Cut(model, 80) + (version.empty() ? "" : " (prompt version " + version + ")");
  if (!passed.empty()) out += "; code checks passed: " + text::Join(passed, ", ");
  if (!failed.empty()) out += "; failed: " + text::Join(failed, ", ");
  return out + ".";
}

// Each rule `d` matched, with its precision over the policy's judgement window.
Result<json> RulePrecisionJson(store::Store& store, const Policy& policy, const Decision& d, TimeMs now) {
  std::vector<std::string> rules;
  if (d.assessment.is_object() && d.assessment.contains("rules") && d.assessment["rules"].is_array())
    for (const json& r : d.assessment["rules"])
      if (r.is_object() && r.value("matched", false) == true && r.contains("name") && r["name"].is_string())
        rules.push_back(r["name"].get<std::string>());
  json out = json::array();
  if (rules.empty()) return out;
  const int days = policy.judgement.window_days;
  ASSIGN_OR_RETURN(const std::vector<RulePrecision> precision, store.PrecisionNow(policy.judgement, now));
  for (const std::string& name : rules) {
    RulePrecision r;
    r.rule = name;
    for (const RulePrecision& p : precision)
      if (!p.explicit_path && p.rule == name) r = p;
    char figures[200];
    if (r.answers() == 0)
      std::snprintf(figures, sizeof figures, "no yes or no answer yet in the last %d days", days);
    else
      std::snprintf(figures, sizeof figures,
                    "%d of %d answers in the last %d days said such work was a request (%.1f %%; at least %.1f %% with "
                    "95 %% confidence)",
                    r.yes, r.answers(), days, 100 * r.precision, 100 * r.lower_bound);
    out.push_back({{"rule", name}, {"yes", r.yes}, {"no", r.no}, {"unknown", r.unknown}, {"precision", r.precision},
                   {"lower_bound", r.lower_bound}, {"words", "Rule " + name + ": " + figures + "."}});
  }
  return out;
}

}  // namespace

Result<json> ExplainTrigger(store::Store& store, const Policy& policy, TimeMs now, const std::string& id_or_url) {
  ASSIGN_OR_RETURN(auto rec, store.FindTrigger(id_or_url));
  if (!rec) {
    ASSIGN_OR_RETURN(rec, store.FindTriggerByUrl(id_or_url));
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
  // The story in a person's words (issue 24): `told`, one sentence each, and `summary` joins them.
  std::vector<std::string> summary{ArrivalWords(rec->trigger)};
  std::optional<PolicyEdit> change;
  auto finish = [&] {
    if (change) {
      const std::string key = DottedKey(change->path);
      story["change"] = {{"key", key}, {"path", change->path}, {"to", change->to}};
      summary.push_back("To change that: " + key + " — " + change->to + ".");
    }
    story["told"] = summary;
    std::string text;
    for (const auto& s : summary) text += (text.empty() ? "" : " ") + s;
    story["summary"] = text;
  };
  if (rec->outcome == IntakeOutcome::kFiltered) {
    story["intake"]["filter_reason"] = rec->filter_reason;
    summary.push_back("It was filtered when it arrived (" + rec->filter_reason + "), so nothing else happened.");
    finish();
    return story;
  }

  json evals = json::array();
  ASSIGN_OR_RETURN(auto gate_rows, store.GateRowsFor(rec->seq));
  for (const store::GateRow& g : gate_rows) {
    json e{{"eval", g.eval}, {"gate", {{"strength", g.strength}, {"candidate", g.candidate}, {"reason", g.reason}}}};
    ASSIGN_OR_RETURN(auto d, store.DecisionForEval(g.eval));
    // Each Eval that judged it: what the Gate said, then what was decided. A key that would have
    // changed an earlier verdict is kept only when no later Eval changed the story.
    change.reset();
    summary.push_back(GateWords(rec->trigger, g.reason, g.strength,
                                policy.SourcePath(rec->trigger.source, Policy::RepositoryOf(rec->trigger)), &change));
    if (d) {
      e["decision"] = DecisionJson(*d);
      std::optional<PolicyEdit> decided;
      // The row whose observe held a "would accept": the matched rule's own mode, the
      // repository's, or the policy's (as the current policy writes them).
      std::string rule;
      if (const json* rules = json_read::Find(d->assessment, "rules"); rules != nullptr && rules->is_array())
        for (const json& r : *rules)
          if (json_read::BoolOr(r, "matched") && rule.empty()) rule = json_read::StringOr(r, "name");
      summary.push_back(DecisionWords(*d, policy.ModePath(rule, Policy::RepositoryOf(rec->trigger)), &decided));
      if (decided) change = decided;
      if (std::string judged = JudgedByWords(d->assessment); !judged.empty()) summary.push_back(judged);
      // Beside a rule's decision, how often that rule has been right (issue 38).
      if (d->would_accept || (d->outcome == DecisionOutcome::kAccept && d->strength == Strength::kInferred)) {
        ASSIGN_OR_RETURN(json precision, RulePrecisionJson(store, policy, *d, now));
        if (!precision.empty()) {
          e["decision"]["precision"] = precision;
          for (const json& r : precision) summary.push_back(r["words"].get<std::string>());
        }
      }
    }
    evals.push_back(e);
  }
  story["evals"] = evals;
  ASSIGN_OR_RETURN(auto q, store.QueueRowFor(rec->seq));
  if (q) {
    story["eval_queue"] = {{"attempts", q->attempts}, {"in_running_eval", q->eval.has_value()}};
    if (!q->handback.empty()) story["eval_queue"]["handback"] = json::parse(q->handback, nullptr, false);
    summary.push_back(q->eval ? "An Eval is judging it now."
                      : q->attempts == 0
                          ? "It is waiting for an Eval."
                          : "It is waiting for an Eval to be tried again (" + std::to_string(q->attempts) +
                                (q->attempts == 1 ? " attempt" : " attempts") + " so far).");
  }

  ASSIGN_OR_RETURN(auto created, store.TicketByOrigin(rec->seq));
  json reached = json::array();
  std::vector<TicketId> involved;
  ASSIGN_OR_RETURN(auto inputs, store.InputsForTrigger(rec->seq));
  for (const TicketInput& in : inputs) {
    json r{{"ticket", in.ticket}, {"as", in.kind}, {"state", in.state}};
    if (in.state == "handed_back") r["handback"] = {{"kind", in.handback_kind}, {"reason", in.handback_reason}};
    reached.push_back(r);
    involved.push_back(in.ticket);
    static const std::map<std::string, std::string> kAs{{"trigger", "a message on its discussion"},
                                                         {"answer", "the answer to its question"},
                                                         {"resume", "a message that resumed it"}};
    auto as = kAs.find(in.kind);
    if (created && *created == in.ticket) continue;  // the request of the Ticket it created: told below
    summary.push_back("It reached Ticket " + std::to_string(in.ticket) + " as " +
                      (as != kAs.end() ? as->second : in.kind) +
                      (in.state == "handed_back" ? ", which handed it back (" + in.handback_kind + ": " + in.handback_reason + ")"
                       : in.state == "pending"   ? "; its next turn will read it"
                       : in.state == "context"   ? ", as context: it started no turn (it asks for nothing, or is older "
                                                   "than the request), and the Ticket's next turn reads it"
                                                 : "") +
                      ".");
  }
  story["tickets_reached"] = reached;

  std::vector<TicketPull> created_pulls;
  if (created) {
    ASSIGN_OR_RETURN(auto t, store.GetTicket(*created));
    ASSIGN_OR_RETURN(auto m, store.MandateForTicket(*created));
    json c = TicketJson(*t);
    if (m) c["mandate"] = MandateJson(*m);
    if (m && m->budget) {  // spend against it, with the extensions people granted (issue 22)
      ASSIGN_OR_RETURN(auto spend, store.BudgetSpendOf(*created));
      ASSIGN_OR_RETURN(auto events, store.BudgetEvents(*created));
      c["budget"] = BudgetStatusJson(ComputeBudgetStatus(*m->budget, events, spend, now), now);
    }
    json pulls = json::array();
    ASSIGN_OR_RETURN(created_pulls, store.TicketPulls(*created));
    for (const TicketPull& p : created_pulls) pulls.push_back(TicketPullJson(p));
    c["pull_requests"] = pulls;
    json assignments = json::array();
    ASSIGN_OR_RETURN(auto created_assignments, store.AssignmentsFor(*created));
    for (const Assignment& a : created_assignments)
      assignments.push_back({{"id", a.id}, {"executor", a.executor}, {"state", a.state}});
    c["assignments"] = assignments;
    // Every place it is discussed (issue 23): the request's Thread, its PR's, its CI's, a chat's.
    ASSIGN_OR_RETURN(auto created_threads, store.TicketThreads(*created));
    c["threads"] = created_threads;
    story["ticket_created"] = c;
    if (std::find(involved.begin(), involved.end(), *created) == involved.end()) involved.push_back(*created);
    std::string stage = StageName(t->stage);
    std::replace(stage.begin(), stage.end(), '_', ' ');
    summary.push_back("It created Ticket " + std::to_string(*created) + ", now " + stage + ": " + text::Cut(t->scope, 120) +
                      (t->end_reason.empty() ? "" : " (" + text::Cut(t->end_reason, 120) + ")") + ".");
    for (const TicketPull& p : created_pulls)
      summary.push_back("Its pull request: " + (p.url.empty() ? "#" + std::to_string(p.number) : p.url) + " (" + p.state + ").");
  }

  json receipts = json::array();
  std::vector<std::string> sent;  // "the acknowledgement (sent)", in order
  for (TicketId id : involved) {
    ASSIGN_OR_RETURN(auto ticket_receipts, store.ReceiptsFor(id));
    const bool made_here = created && *created == id;
    for (const Receipt& r : ticket_receipts) {
      // A Ticket this message only reached said things before it arrived (its acknowledgement,
      // earlier results): those were not sent for this message (issue 23).
      if (!made_here && r.created_at < rec->received_at) continue;
      json rj = ReceiptJson(r);
      rj["ticket"] = id;
      receipts.push_back(rj);
      static const std::map<MessageKind, std::string> kWhat{{MessageKind::kAcknowledgement, "the acknowledgement"},
                                                            {MessageKind::kAnswer, "an answer"},
                                                            {MessageKind::kResult, "the result"},
                                                            {MessageKind::kAttention, "a question"}};
      sent.push_back(kWhat.at(r.kind) + " (" + r.status + ")");
    }
  }
  story["receipts"] = receipts;
  if (!sent.empty()) {
    std::string list;
    for (std::size_t i = 0; i < sent.size(); ++i)
      list += (i == 0 ? "" : i + 1 == sent.size() ? " and " : ", ") + sent[i];
    summary.push_back("The agent wrote back: " + list + ".");
  }

  // Set aside (issue 18): its Thread's Evals, a Ticket's turns, or a message about it.
  json set_aside = json::array();
  auto note = [&](const std::optional<QuarantineItem>& item) {
    if (!item || !item->set_aside()) return;
    set_aside.push_back(SetAsideJson(*item));
    summary.push_back("Set aside: " + item->label + " " + item->reason + "; a person can retry it from the panel's Needs-you.");
  };
  ASSIGN_OR_RETURN(auto trigger_threads, store.TriggerThreads(rec->seq));
  for (const std::string& th : trigger_threads) {
    ASSIGN_OR_RETURN(auto eval_q, store.GetQuarantine(kQuarantineEval, th));
    note(eval_q);
  }
  for (TicketId id : involved) {
    ASSIGN_OR_RETURN(auto turn_q, store.GetQuarantine(kQuarantineTurn, std::to_string(id)));
    note(turn_q);
  }
  for (const json& r : receipts) {
    ASSIGN_OR_RETURN(auto effect_q, store.SetAsideEffectOf(r["id"].get<std::string>()));
    note(effect_q);
  }
  story["set_aside"] = set_aside;
  if (summary.size() == 1) summary.push_back("It is stored; no Eval or Ticket has handled it yet.");
  // Which outcome of the answer invariant holds (issue 34): the one line a person asking "why
  // didn't it answer?" needs, decided where the panel's "Not answered" card decides it.
  ASSIGN_OR_RETURN(AnswerFacts facts, store.AnswerFactsOf(*rec));
  const Answer answer =
      AnswerOf(facts, EvaluateGate(policy, rec->trigger, false).strength == Strength::kExplicit, now);
  story["answer"] = {{"kind", AnswerKindName(answer.kind)}, {"words", answer.words}};
  if (answer.kind != AnswerKind::kNotAsked) summary.push_back(answer.words);
  finish();
  return story;
}

}  // namespace superagent
