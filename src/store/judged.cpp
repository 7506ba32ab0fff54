// Judgement's reads (issue 38), shared by the Engine's store (a rule in auto that has lost its
// precision holds its next Ticket) and the panel's views (reports, proposals, /metrics): what was
// done or would have been, the verdict or the outcome that labels it, what a person asked for
// right after a decline, and what each Ticket cost and yielded.
#include <algorithm>
#include <map>

#include "store/rows.h"
#include "superagent/assign_or_return.h"
#include "superagent/github_threads.h"

namespace superagent::store {

using nlohmann::json;

namespace {

// The names of the rules a stored assessment (decisions.assessment, column `col`) matched, as a
// JSON array, picked out by SQLite's JSON functions: faster than parsing every assessment whole,
// and guarded so a damaged row reads as no rule.
#define MATCHED_RULES(col)                                                                                     \
  "(SELECT json_group_array(json_extract(r.value, '$.name')) FROM json_each(CASE WHEN json_valid(" col         \
  ") THEN " col " ELSE '{}' END, '$.rules') r WHERE (CASE WHEN r.type = 'object' THEN json_extract(r.value, " \
  "'$.matched') = 1 AND json_type(r.value, '$.name') = 'text' END))"

// The rule names of a JSON array of strings (a Mandate's matched_rules, or MATCHED_RULES'
// result); none from damaged text.
std::vector<std::string> Names(const Stmt& s, int col) {
  std::vector<std::string> out;
  if (s.IsNull(col)) return out;
  const json list = json::parse(s.Text(col), nullptr, false);
  if (!list.is_array()) return out;
  for (const json& r : list)
    if (r.is_string()) out.push_back(r.get<std::string>());
  return out;
}

}  // namespace

Result<std::map<TicketId, OutcomeFacts>> ReadOutcomeFacts(Db& db, const TicketSet& tickets) {
  // A handful of grouped reads over the set (ids grow with time, and every table read here is
  // indexed by Ticket), rather than a handful per Ticket: the panel and /metrics read these at
  // each refresh (bench/judgement.cpp).
  const std::string also = tickets.AlsoJson();
  std::map<TicketId, OutcomeFacts> out;
  // Stopped by a person: the panel's Stop (or a drop of a held Ticket) withdraws the Mandate; a
  // person's "stop" in the discussion is a Decision that ends the Ticket. The turns begun by then.
  Stmt stops = db.Prepare(
      "SELECT s.ticket_id, (SELECT COUNT(*) FROM assignments a WHERE a.ticket_id = s.ticket_id AND a.started_at IS NOT NULL "
      "AND a.started_at <= s.at) FROM (SELECT ticket_id, MIN(at) AS at FROM (SELECT m.ticket_id AS ticket_id, e.at AS at "
      "FROM mandate_ends e JOIN mandates m ON m.id = e.mandate_id WHERE (m.ticket_id >= ?1 OR m.ticket_id IN (SELECT value FROM json_each(?2))) AND e.kind = 'withdrawn' "
      "UNION ALL SELECT ticket_id, at FROM ticket_events WHERE (ticket_id >= ?1 OR ticket_id IN (SELECT value FROM json_each(?2))) AND to_stage = 'ended' AND cause = 'decision stop') "
      "GROUP BY ticket_id) s");
  stops.Bind(1, tickets.from).Bind(2, also);
  while (stops.Step()) {
    OutcomeFacts& f = out[stops.Int(0)];
    f.stopped_by_person = true;
    f.turns_when_stopped = stops.Int(1);
  }
  RETURN_IF_ERROR(stops.status());
  Stmt pulls = db.Prepare("SELECT ticket_id, state, COUNT(*) FROM ticket_pulls WHERE (ticket_id >= ?1 OR ticket_id IN (SELECT value FROM "
                          "json_each(?2))) GROUP BY ticket_id, state");
  pulls.Bind(1, tickets.from).Bind(2, also);
  while (pulls.Step()) {
    OutcomeFacts& f = out[pulls.Int(0)];
    const std::string state = pulls.Text(1);
    const int n = static_cast<int>(pulls.Int(2));
    (state == "merged" ? f.pulls_merged : state == "closed" ? f.pulls_closed : f.pulls_open) += n;
  }
  RETURN_IF_ERROR(pulls.status());
  // A question answered: a result went out and the Ticket reported ready. Then a person's message
  // after the result that only thanks.
  Stmt results = db.Prepare(
      "SELECT r.ticket_id, MIN(r.sent_at) FROM receipts r WHERE (r.ticket_id >= ?1 OR r.ticket_id IN (SELECT value FROM "
      "json_each(?2))) AND r.kind = 'result' AND r.status = 'sent' "
      "AND EXISTS (SELECT 1 FROM ticket_events e WHERE e.ticket_id = r.ticket_id AND e.to_stage = 'ready') GROUP BY r.ticket_id");
  results.Bind(1, tickets.from).Bind(2, also);
  std::map<TicketId, TimeMs> result_at;
  while (results.Step()) {
    out[results.Int(0)].result_sent = true;
    result_at[results.Int(0)] = results.Int(1);
  }
  RETURN_IF_ERROR(results.status());
  Stmt thanks = db.Prepare(
      "SELECT i.ticket_id, i.created_at, t.text FROM ticket_inputs i JOIN triggers t ON t.seq = i.trigger_seq "
      "WHERE (i.ticket_id >= ?1 OR i.ticket_id IN (SELECT value FROM json_each(?2))) AND i.from_person = 1 AND length(t.text) <= 200");
  thanks.Bind(1, tickets.from).Bind(2, also);
  while (thanks.Step()) {
    auto at = result_at.find(thanks.Int(0));
    if (at != result_at.end() && thanks.Int(1) >= at->second && IsThanks(thanks.Text(2))) out[thanks.Int(0)].thanked = true;
  }
  RETURN_IF_ERROR(thanks.status());
  return out;
}

Result<std::vector<WouldAcceptRecord>> ReadJudged(Db& db, TimeMs since) {
  Stmt s = db.Prepare(
      "SELECT d.id, d.thread_key, CASE WHEN d.would_accept = 1 THEN " MATCHED_RULES("d.assessment") " "
      "END, d.created_at, d.would_accept, d.strength, v.verdict, v.by_whom, v.via, "
      "v.created_at, t.id, m.admission, m.matched_rules "
      "FROM decisions d LEFT JOIN verdicts v ON v.decision_id = d.id "
      "LEFT JOIN tickets t ON t.decision_id = d.id LEFT JOIN mandates m ON m.ticket_id = t.id "
      "WHERE d.created_at >= ? AND (d.would_accept = 1 OR (d.outcome = 'accept' AND t.id IS NOT NULL)) ORDER BY d.id");
  s.Bind(1, since);
  std::vector<WouldAcceptRecord> out;
  while (s.Step()) {
    WouldAcceptRecord w;
    w.decision = s.Int(0);
    w.thread = s.Text(1);
    w.created_at = s.Int(3);
    w.accepted = !s.Bool(4);
    w.explicit_request = w.accepted && s.Text(5) == "explicit";
    if (!s.IsNull(6)) {
      w.verdict = ParseVerdict(s.Text(6));
      w.by = s.Text(7);
      w.via = s.Text(8);
      w.verdict_at = s.Int(9);
    }
    if (!s.IsNull(10)) w.ticket = s.Int(10);
    w.admission = s.IsNull(11) ? "" : s.Text(11);
    // A would_accept's rules are its assessment's matched ones; an accepted one's, its Mandate's
    // (the same names, and the Mandate is what the work was done under).
    w.rules = Names(s, w.accepted ? 12 : 2);
    out.push_back(std::move(w));
  }
  RETURN_IF_ERROR(s.status());
  s.Reset();
  TicketId first = 0;
  for (const WouldAcceptRecord& w : out)
    if (w.ticket && (first == 0 || *w.ticket < first)) first = *w.ticket;
  if (first == 0) return out;
  ASSIGN_OR_RETURN(const auto facts_of, ReadOutcomeFacts(db, TicketSet{first, {}}));
  for (WouldAcceptRecord& w : out) {
    if (w.verdict || !w.ticket) continue;
    auto facts = facts_of.find(*w.ticket);
    if (facts == facts_of.end()) continue;  // nothing has happened to it yet
    if (std::optional<OutcomeLabel> label = LabelOutcome(facts->second)) {
      w.verdict = label->verdict;
      w.by = label->name;
      w.via = "outcome";
    }
  }
  return out;
}

Result<std::vector<MissedRecord>> ReadMissed(Db& db, TimeMs since) {
  // The explicit requests of the window, each with the newest Decision before it on its Thread.
  Stmt s = db.Prepare(
      "SELECT d.id, d.thread_key, d.created_at, p.id, p.strength, p.outcome, p.would_accept, " MATCHED_RULES("p.assessment")
      ", p.created_at "
      "FROM decisions d JOIN decisions p ON p.id = (SELECT MAX(q.id) FROM decisions q WHERE q.thread_key = d.thread_key "
      "AND q.id < d.id) "
      "WHERE d.created_at >= ? AND d.strength = 'explicit' AND d.outcome = 'accept' ORDER BY d.id");
  s.Bind(1, since);
  std::vector<MissedRecord> out;
  while (s.Step()) {
    if (s.Text(4) != "inferred" || s.Text(5) != "ignore" || s.Bool(6)) continue;
    if (s.Int(2) - s.Int(8) > kMissedWithinMs) continue;
    MissedRecord m;
    m.request = s.Int(0);
    m.thread = s.Text(1);
    m.at = s.Int(2);
    m.declined = s.Int(3);
    m.rules = Names(s, 7);
    out.push_back(std::move(m));
  }
  RETURN_IF_ERROR(s.status());
  return out;
}

Result<std::vector<TicketOutcome>> ReadTicketOutcomes(Db& db, TimeMs since, const TicketSet& tickets) {
  Stmt s = db.Prepare(
      "SELECT t.id, t.stage, t.created_at, m.strength, m.matched_rules, tr.received_at, "
      "(SELECT executor FROM sessions WHERE ticket_id = t.id), "
      "(SELECT MIN(sent_at) FROM receipts WHERE ticket_id = t.id AND kind = 'acknowledgement' AND status = 'sent'), "
      "(SELECT MIN(at) FROM ticket_events WHERE ticket_id = t.id AND cause LIKE 'pushed %'), "
      "(SELECT MIN(created_at) FROM ticket_pulls WHERE ticket_id = t.id), "
      "(SELECT MIN(updated_at) FROM ticket_pulls WHERE ticket_id = t.id AND state = 'merged'), "
      "(SELECT COUNT(*) FROM assignments WHERE ticket_id = t.id AND started_at IS NOT NULL), "
      "(SELECT COALESCE(SUM(total_tokens), 0) FROM token_usage WHERE ticket_id = t.id), "
      "(SELECT COALESCE(SUM(cost_usd), 0) FROM token_usage WHERE ticket_id = t.id), "
      "(SELECT COUNT(*) FROM ticket_events WHERE ticket_id = t.id AND to_stage = 'waiting_for_person'), "
      "t.thread_key, (SELECT repo FROM workspaces WHERE ticket_id = t.id) "
      "FROM tickets t JOIN mandates m ON m.ticket_id = t.id LEFT JOIN triggers tr ON tr.seq = m.origin_trigger_seq "
      "WHERE t.created_at >= ?1 AND (t.id >= ?2 OR t.id IN (SELECT value FROM json_each(?3))) ORDER BY t.id");
  s.Bind(1, since).Bind(2, tickets.from).Bind(3, tickets.AlsoJson());
  std::vector<TicketOutcome> out;
  std::vector<std::string> stages;
  while (s.Step()) {
    TicketOutcome o;
    o.ticket = s.Int(0);
    stages.push_back(s.Text(1));
    o.created_at = s.Int(2);
    const std::vector<std::string> rules = Names(s, 4);
    o.rule = s.Text(3) == "explicit" || rules.empty() ? "explicit" : rules.front();
    o.executor = s.IsNull(6) ? "none" : s.Text(6);
    // Where it works: its workspace's repository, else its Thread's (a GitHub Ticket not yet at work).
    o.repo = s.IsNull(16) ? "" : s.Text(16);
    if (o.repo.empty())
      if (auto place = github_threads::PlaceOf(s.Text(15))) o.repo = place->repo;
    // From the moment the request reached the daemon (the Ticket's own time when it is gone).
    const TimeMs asked = s.IsNull(5) ? o.created_at : s.Int(5);
    auto seconds = [&](int col) -> std::optional<double> {
      if (s.IsNull(col)) return std::nullopt;
      return std::max<TimeMs>(0, s.Int(col) - asked) / 1000.0;
    };
    o.seconds_to_acknowledgement = seconds(7);
    o.seconds_to_first_commit = seconds(8);
    o.seconds_to_pull_request = seconds(9);
    o.seconds_to_merge = seconds(10);
    o.turns = s.Int(11);
    o.tokens = s.Int(12);
    o.cost_usd = s.Real(13);
    o.person_asks = s.Int(14);
    out.push_back(std::move(o));
  }
  RETURN_IF_ERROR(s.status());
  s.Reset();
  if (out.empty()) return out;
  TicketSet read = tickets;
  read.from = std::max(read.from, out.front().ticket);
  ASSIGN_OR_RETURN(const auto facts_of, ReadOutcomeFacts(db, read));
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto it = facts_of.find(out[i].ticket);
    const OutcomeFacts f = it == facts_of.end() ? OutcomeFacts{} : it->second;
    const std::string& stage = stages[i];
    if (f.pulls_merged > 0) out[i].outcome = "merged";
    else if (f.pulls_open > 0) out[i].outcome = "pr_open";
    else if (f.pulls_closed > 0) out[i].outcome = "closed";
    else if (f.stopped_by_person) out[i].outcome = "stopped";
    else if (f.result_sent && (stage == "ready" || stage == "ended")) out[i].outcome = "answered";
    else if (stage == "ended") out[i].outcome = "ended";
    else out[i].outcome = "live";
  }
  return out;
}

}  // namespace superagent::store

#undef MATCHED_RULES
