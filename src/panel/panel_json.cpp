#include "panel/panel_json.h"

#include <algorithm>

#include "superagent/question.h"
#include "superagent/text.h"

namespace superagent::panel {

using nlohmann::json;

json TimeJson(std::optional<TimeMs> t) { return t ? json(FormatTime(*t)) : json(nullptr); }

json TriggerJson(const TriggerRecord& r) {
  const Trigger& t = r.trigger;
  json j{{"id", t.id},
         {"seq", r.seq},
         {"source", t.source},
         {"scope", t.scope},
         {"actor", t.actor ? json(*t.actor) : json(nullptr)},
         {"human", t.human},
         {"addressed", t.addressed},
         {"text", t.text},
         {"at", TimeJson(t.at)},
         {"thread", t.threads.empty() ? json(nullptr) : json(t.threads.front())},
         {"via", r.via},
         {"received_at", TimeJson(r.received_at)},
         {"outcome", IntakeOutcomeName(r.outcome)}};
  if (std::string url = TriggerUrl(t); !url.empty()) j["url"] = url;
  if (!r.filter_reason.empty()) j["filter_reason"] = r.filter_reason;
  return j;
}

json TicketRowJson(const TicketRow& row) {
  const Ticket& t = row.ticket;
  json j{{"id", t.id},
         {"thread", t.thread},
         {"stage", StageName(t.stage)},
         {"scope", t.scope},
         {"created_at", TimeJson(t.created_at)},
         {"updated_at", TimeJson(t.updated_at)},
         {"mandate", row.mandate ? MandateJson(row.mandate->mandate, row.mandate->ended_by, row.mandate->ended_at)
                               : json(nullptr)},
         {"request", row.origin ? TriggerJson(*row.origin) : json(nullptr)}};
  if (!t.end_reason.empty()) j["end_reason"] = t.end_reason;
  j["stage_reason"] = row.stage_reason;
  // The request in the requester's words, cut and marked, for cards that must be read at a glance.
  j["request_quote"] = row.origin ? json(text::CutNoted(row.origin->trigger.text, 280, text::Keep::kHead)) : json(nullptr);
  if (t.waiting)
    j["question"] = {{"thread", t.waiting->thread},
                     {"actor", t.waiting->actor},
                     {"question", t.waiting->question},
                     {"form", t.waiting->form}};
  // Stop withdraws the Mandate: possible while it is active, even on an ended Ticket (so a
  // later message cannot resume it).
  j["stoppable"] = row.mandate && row.mandate->mandate.ended_as.empty();
  // Spend against budget (issue 22); null when the Mandate has none.
  j["budget"] = row.budget ? BudgetStatusJson(*row.budget, row.budget->spent.working_since.value_or(0)) : json(nullptr);
  json pulls = json::array();
  for (const TicketPull& p : row.pulls) pulls.push_back(TicketPullJson(p));
  j["pull_requests"] = pulls;
  return j;
}

json DecisionJson(const DecisionView& v) {
  const Decision& d = v.decision;
  json batch = json::array();
  for (const JudgedTrigger& jt : v.batch) {
    json t = TriggerJson(jt.record);
    t["gate"] = {{"strength", jt.strength}, {"candidate", jt.candidate}, {"reason", jt.gate_reason}};
    batch.push_back(std::move(t));
  }
  json j{{"id", d.id},
         {"eval", d.eval},
         {"thread", d.thread},
         {"outcome", DecisionOutcomeName(d.outcome)},
         {"would_accept", d.would_accept},
         {"strength", StrengthName(d.strength)},
         {"reason", d.reason},
         {"assessment", d.assessment},
         {"ticket", d.ticket ? json(*d.ticket) : json(nullptr)},
         {"policy_version", d.policy_version},
         {"at", TimeJson(d.created_at)},
         {"triggers", batch}};
  // The rules the assessment matched, for the observe review ("would this rule have been right?").
  json matched = json::array();
  if (d.assessment.is_object() && d.assessment.contains("rules") && d.assessment["rules"].is_array())
    for (const json& r : d.assessment["rules"])
      if (r.is_object() && r.value("matched", false)) matched.push_back(r.value("name", ""));
  j["matched_rules"] = matched;
  return j;
}

json ProblemJson(const SystemProblem& p) {
  return {{"kind", p.kind},
          {"message", p.message},
          {"failures", p.failures},
          {"first_at", TimeJson(p.first_at)},
          {"last_at", TimeJson(p.last_at)}};
}

json SetAsideJson(const QuarantineItem& q) {
  return {{"kind", q.kind},
          {"item", q.item},
          {"what", q.label},
          {"reason", q.reason},
          {"last_error", q.last_error},
          {"failures", q.failures},
          {"crashes", q.crashes},
          {"set_aside_at", TimeJson(q.set_aside_at.value_or(q.updated_at))}};
}

json CommandJson(const CommandRecord& c) {
  json j{{"id", c.id}, {"at", TimeJson(c.at)}, {"who", c.who}, {"command", c.command}, {"target", c.target}};
  json detail = json::parse(c.detail, nullptr, false);
  j["detail"] = detail.is_discarded() ? json(c.detail) : detail;
  return j;
}

json HealthJson(const SourceHealth& h) {
  return {{"source", h.source},
          {"path", h.path},
          {"last_success_at", TimeJson(h.last_success_at)},
          {"last_error", h.last_error.empty() ? json(nullptr) : json(h.last_error)},
          {"last_error_at", TimeJson(h.last_error_at)},
          {"consecutive_failures", h.consecutive_failures},
          {"skipped_items", h.skipped_items},
          {"note", h.note}};
}

namespace {

// An answer as the transcript reads it: "bob chose 2. docs/" or "bob answered: words" — not JSON.
std::string AnswerLine(const std::string& who, const json& answer) {
  const std::string name = who.empty() ? "someone" : who;
  if (answer.is_object()) {
    auto option = answer.find("option");
    if (option != answer.end() && option->is_number_integer())
      return name + " chose " + std::to_string(option->get<std::int64_t>()) + ". " + AnswerText(answer);
    if (answer.contains("text")) return name + " answered: " + AnswerText(answer);
  }
  return name + " answered: " + AnswerText(answer);
}

}  // namespace

json DetailJson(const TicketDetail& d) {
  json j = TicketRowJson(d.row);
  json decisions = json::array();
  for (const DecisionView& v : d.decisions) decisions.push_back(DecisionJson(v));
  j["decisions"] = decisions;
  json assignments = json::array();
  for (const Assignment& a : d.assignments)
    assignments.push_back({{"id", a.id},
                           {"executor", a.executor},
                           {"state", a.state},
                           {"created_at", TimeJson(a.created_at)},
                           {"started_at", TimeJson(a.started_at)},
                           {"ended_at", TimeJson(a.ended_at)}});
  j["assignments"] = assignments;
  json messages = json::array();
  for (const Receipt& r : d.receipts)
    messages.push_back({{"id", r.id},
                        {"kind", MessageKindName(r.kind)},
                        {"channel", r.channel},
                        {"status", r.status},
                        {"body", r.body},
                        {"created_at", TimeJson(r.created_at)}});
  j["messages"] = messages;
  json commands = json::array();
  for (const CommandRecord& c : d.commands) commands.push_back(CommandJson(c));
  j["commands"] = commands;
  j["threads"] = d.threads;  // every place it is discussed: the request's, its PR's, its CI's

  // The transcript: one time-ordered list a person reads top to bottom.
  struct Entry {
    TimeMs at;
    int order;
    json body;
  };
  std::vector<Entry> entries;
  int order = 0;
  for (const InputView& v : d.inputs) {
    const TicketInput& in = v.input;
    json e{{"at", TimeJson(in.created_at)}, {"type", "input"}, {"kind", in.kind}, {"state", in.state}};
    if (v.trigger) {
      e["who"] = v.trigger->trigger.actor ? json(*v.trigger->trigger.actor) : json(v.trigger->trigger.source);
      e["text"] = v.trigger->trigger.text;
      if (std::string url = TriggerUrl(v.trigger->trigger); !url.empty()) e["url"] = url;
      // A reply (or a card's button) that answered the question reads as the answer it gave.
      if (in.kind == "answer" && in.body.contains("answer")) {
        e["said"] = e["text"];
        e["text"] = AnswerLine(e["who"].get<std::string>(), in.body["answer"]);
      }
    } else if (in.kind == "answer") {
      e["who"] = in.body.value("from", "");
      e["text"] = AnswerLine(in.body.value("from", ""), in.body.value("answer", json("")));
    } else if (in.kind == "policy_changed") {
      e["who"] = "policy";
      std::string text = "policy version " + std::to_string(in.body.value("policy_version", 0));
      if (in.body.contains("reasons") && in.body["reasons"].is_array())
        for (const json& r : in.body["reasons"])
          if (r.is_string()) text += "; " + r.get<std::string>();
      e["text"] = text;
    } else {
      e["who"] = "system";
      e["text"] = in.body.dump();
    }
    if (in.state == "handed_back") e["handback"] = {{"kind", in.handback_kind}, {"reason", in.handback_reason}};
    entries.push_back({in.created_at, order++, std::move(e)});
  }
  for (const Receipt& r : d.receipts)
    entries.push_back({r.created_at, order++,
                       {{"at", TimeJson(r.created_at)},
                        {"type", "sent"},
                        {"kind", MessageKindName(r.kind)},
                        {"who", "agent"},
                        {"text", r.body},
                        {"state", r.status}}});
  for (const TicketEvent& ev : d.events)
    entries.push_back({ev.at, order++,
                       {{"at", TimeJson(ev.at)},
                        {"type", "stage"},
                        {"kind", StageName(ev.to)},
                        {"who", "system"},
                        {"from", ev.from ? json(StageName(*ev.from)) : json(nullptr)},
                        {"text", ev.cause}}});
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.at != b.at ? a.at < b.at : a.order < b.order; });
  json transcript = json::array();
  for (Entry& e : entries) transcript.push_back(std::move(e.body));
  j["transcript"] = transcript;
  return j;
}

}  // namespace superagent::panel
