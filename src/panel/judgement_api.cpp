// GET /api/judgement (issue 38; docs/005-panel.md).
#include "panel/judgement_api.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "panel/needs.h"
#include "superagent/assign_or_return.h"
#include "superagent/views.h"

namespace superagent::panel {

using nlohmann::json;

namespace {

// The middle value (the mean of the middle two for an even count); nullopt for none.
std::optional<double> Median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

json OptionalNumber(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string Counted(std::int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "950", "34k", "1.2M": a week's tokens at a glance.
std::string TokenWords(std::int64_t n) {
  char buf[32];
  if (n < 10'000) return std::to_string(n);
  if (n < 1'000'000) return std::to_string((n + 500) / 1000) + "k";
  std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  return buf;
}

std::string DollarWords(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.2f", usd);
  return buf;
}

}  // namespace

Result<std::vector<RulePrecision>> ReadRulePrecision(Views& views, const JudgementSettings& settings, TimeMs now) {
  const TimeMs since = JudgementWindowStart(settings, now);
  ASSIGN_OR_RETURN(auto judged, views.Judged(since));
  ASSIGN_OR_RETURN(auto missed, views.Missed(since));
  return PrecisionByRule(judged, missed);
}

Result<JudgementFacts> ReadJudgementFacts(Views& views, const JudgementSettings& settings, TimeMs now) {
  JudgementFacts f;
  f.now = now;
  f.since = JudgementWindowStart(settings, now);
  f.week_since = now - kJudgementWeekMs;
  // One read covers both the window and the week, whichever is longer: a verdict given this week
  // on a Decision made before it still counts as given this week.
  ASSIGN_OR_RETURN(auto judged, views.Judged(std::min(f.since, f.week_since)));
  ASSIGN_OR_RETURN(auto missed, views.Missed(f.since));
  ASSIGN_OR_RETURN(f.week, views.TicketOutcomes(f.week_since));
  std::vector<WouldAcceptRecord> window;
  for (const WouldAcceptRecord& w : judged) {
    if (w.created_at >= f.since) window.push_back(w);
    if (!w.accepted && w.created_at >= f.week_since) ++f.week_would_accept;
    if (w.verdict && w.via != "outcome" && w.verdict_at >= f.week_since) ++f.week_verdicts;
  }
  f.rules = PrecisionByRule(window, missed);
  return f;
}

std::string PolicyFileText(const std::string& policy_file) {
  if (policy_file.empty()) return "";
  std::ifstream in(policy_file, std::ios::binary);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<ModeProposal> ProposalsFor(const std::vector<RulePrecision>& rules, const Policy& policy,
                                       const std::string& policy_file, const std::string& policy_text) {
  std::vector<RulePrecision> named;
  for (const RulePrecision& r : rules)
    if (!r.explicit_path) named.push_back(r);
  return ProposeModes(named, policy, policy_file, policy_text);
}

std::string RowMode(const RulePrecision& r, const Policy& policy) {
  if (r.explicit_path) return "explicit";
  const Rule* rule = policy.FindRule(r.rule);
  if (rule == nullptr) return ModeName(policy.mode);
  if (!rule->enabled) return "off";
  return ModeName(policy.ModeOf(*rule));
}

std::string DurationWords(double seconds) {
  char buf[32];
  if (seconds < 90) return std::to_string(static_cast<long long>(std::lround(seconds))) + " s";
  const double minutes = seconds / 60;
  if (minutes < 90) return std::to_string(static_cast<long long>(std::lround(minutes))) + " min";
  // Tenths of an hour under ten hours ("1.5 h"), whole hours beyond; never "2.0 h".
  const double hours = minutes / 60;
  const double tenths = std::round(hours * 10) / 10;
  if (hours < 10 && tenths != std::floor(tenths)) {
    std::snprintf(buf, sizeof buf, "%.1f h", tenths);
    return buf;
  }
  return std::to_string(static_cast<long long>(std::lround(hours))) + " h";
}

std::string WeekWords(const json& week) {
  const std::int64_t tickets = week.value("tickets", 0), would = week.value("would_accept", 0),
                     verdicts = week.value("verdicts", 0);
  const std::string judged = Counted(would, "would-have-acted", "would-have-acted") + ", " +
                             Counted(verdicts, "verdict given", "verdicts given") + ".";
  if (tickets == 0 && would == 0 && verdicts == 0)
    return "Nothing happened this week: no Tickets, nothing observe mode would have done, no verdicts.";
  if (tickets == 0) return "This week: no Tickets; " + judged;

  const json& ack = week["median_seconds_to_acknowledgement"];
  const json& pr = week["median_seconds_to_pull_request"];
  std::string times;
  if (!ack.is_null() && !pr.is_null())
    times = "median time to acknowledgement " + DurationWords(ack.get<double>()) + ", to PR " + DurationWords(pr.get<double>());
  else if (!ack.is_null())
    times = "median time to acknowledgement " + DurationWords(ack.get<double>()) + ", no pull request yet";
  else if (!pr.is_null())
    times = "no acknowledgement sent, median time to PR " + DurationWords(pr.get<double>());
  else
    times = "no acknowledgement or pull request yet";

  return "This week: " + Counted(tickets, "Ticket", "Tickets") + " \u2014 " +
         std::to_string(week.value("merged", 0)) + " merged, " + std::to_string(week.value("closed", 0)) +
         " closed unmerged, " + std::to_string(week.value("answered", 0)) + " answered, " +
         std::to_string(week.value("stopped", 0)) + " stopped; " + times + "; " +
         Counted(week.value("turns", 0), "turn", "turns") + ", " + TokenWords(week.value("tokens", 0)) + " tokens, " +
         DollarWords(week.value("cost_usd", 0.0)) + "; " +
         Counted(week.value("person_asks", 0), "question to a person", "questions to people") + "; " + judged;
}

json JudgementJson(const JudgementFacts& facts, const Policy& policy, const std::string& policy_file,
                   const std::string& policy_text) {
  const JudgementSettings& s = policy.judgement;
  // PrecisionReportJson's rows are in `facts.rules`' order: each gets its mode and words beside it.
  json rules = PrecisionReportJson(facts.rules, facts.since)["rules"];
  for (std::size_t i = 0; i < facts.rules.size() && i < rules.size(); ++i) {
    rules[i]["mode"] = RowMode(facts.rules[i], policy);
    rules[i]["words"] = PrecisionWords(facts.rules[i]);
  }

  json proposals = json::array();
  for (const ModeProposal& p : ProposalsFor(facts.rules, policy, policy_file, policy_text))
    proposals.push_back({{"rule", p.rule},
                         {"kind", p.promote ? "promote" : "demote"},
                         {"from", ModeName(p.from)},
                         {"to", ModeName(p.to)},
                         {"lower_bound", p.lower_bound},
                         {"answers", p.answers},
                         {"diff", p.diff},
                         {"why", p.why},
                         {"file", policy_file.empty() ? json(nullptr) : json(policy_file)}});

  std::map<std::string, int> outcomes;
  std::vector<double> to_ack, to_pr;
  std::int64_t turns = 0, tokens = 0, person_asks = 0;
  double cost = 0;
  for (const TicketOutcome& t : facts.week) {
    ++outcomes[t.outcome];
    if (t.seconds_to_acknowledgement) to_ack.push_back(*t.seconds_to_acknowledgement);
    if (t.seconds_to_pull_request) to_pr.push_back(*t.seconds_to_pull_request);
    turns += t.turns;
    tokens += t.tokens;
    cost += t.cost_usd;
    person_asks += t.person_asks;
  }
  json week{{"since", facts.week_since},
            {"tickets", facts.week.size()},
            {"merged", outcomes["merged"]},
            {"closed", outcomes["closed"]},
            {"pr_open", outcomes["pr_open"]},
            {"answered", outcomes["answered"]},
            {"stopped", outcomes["stopped"]},
            {"live", outcomes["live"]},
            {"ended", outcomes["ended"]},
            {"median_seconds_to_acknowledgement", OptionalNumber(Median(to_ack))},
            {"median_seconds_to_pull_request", OptionalNumber(Median(to_pr))},
            {"turns", turns},
            {"tokens", tokens},
            {"cost_usd", cost},
            {"person_asks", person_asks},
            {"would_accept", facts.week_would_accept},
            {"verdicts", facts.week_verdicts}};
  week["words"] = WeekWords(week);

  return {{"window_days", s.window_days},
          {"since", facts.since},
          {"settings",
           {{"promote_at", s.promote_at},
            {"promote_after", s.promote_after},
            {"demote_at", s.demote_at},
            {"demote_after", s.demote_after}}},
          {"rules", rules},
          {"proposals", proposals},
          {"week", week}};
}

Result<json> ReadJudgement(Views& views, const Policy& policy, const std::string& policy_file, TimeMs now) {
  ASSIGN_OR_RETURN(JudgementFacts facts, ReadJudgementFacts(views, policy.judgement, now));
  return JudgementJson(facts, policy, policy_file, PolicyFileText(policy_file));
}

}  // namespace superagent::panel
