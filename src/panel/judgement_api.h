// Judgement you can measure (issue 38), as the panel shows it: GET /api/judgement's body — each
// rule's record with its mode, the policy edits its record earns (proposed to a person, never
// made by the daemon), and the week's Ticket outcomes for the quiet weekly card. The JSON is built
// from plain values (JudgementJson) so it is tested without a store; the reads are beside it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/judgement.h"
#include "superagent/policy.h"
#include "superagent/status.h"

namespace superagent {
class Views;
}  // namespace superagent

namespace superagent::panel {

// The weekly card's week: the last seven days, whatever the judgement window.
inline constexpr TimeMs kJudgementWeekMs = 7LL * 24 * 3600 * 1000;

// What the judgement view is made of, read at `now`.
struct JudgementFacts {
  TimeMs now = 0;
  TimeMs since = 0;       // now − judgement.window_days: the Decisions whose answers count
  TimeMs week_since = 0;  // now − kJudgementWeekMs
  std::vector<RulePrecision> rules;  // PrecisionByRule(Judged(since), Missed(since))
  std::vector<TicketOutcome> week;   // TicketOutcomes(week_since)
  int week_would_accept = 0;         // would_accept Decisions made this week
  int week_verdicts = 0;             // verdicts people gave this week (outcome labels are not theirs)
};

// Each rule's record over the judgement window at `now` (what proposals are made of).
Result<std::vector<RulePrecision>> ReadRulePrecision(Views& views, const JudgementSettings& settings, TimeMs now);

// Everything JudgementJson shows, read at `now`.
Result<JudgementFacts> ReadJudgementFacts(Views& views, const JudgementSettings& settings, TimeMs now);

// The text of the policy file in force, for the proposals' diffs: read at each request, so the
// diff is against the file as it is now. "" when there is no file (the embedded defaults) or it
// cannot be read.
std::string PolicyFileText(const std::string& policy_file);

// ProposeModes over the rules' records; explicit-request paths are not rules and never proposed.
std::vector<ModeProposal> ProposalsFor(const std::vector<RulePrecision>& rules, const Policy& policy,
                                       const std::string& policy_file, const std::string& policy_text);

// The mode a row of the table runs in: "explicit" for an explicit-request path, "off" for a
// disabled rule, else the rule's own or the policy's (a name the policy no longer has: the policy's).
std::string RowMode(const RulePrecision& r, const Policy& policy);

// A duration as a person says it: "40 s", "12 min", "2.5 h", "30 h".
std::string DurationWords(double seconds);

// The weekly card's one line: "This week: 5 Tickets — 2 merged, …", or one line saying nothing
// happened.
std::string WeekWords(const nlohmann::json& week);

// GET /api/judgement: {window_days, since, settings: {promote_at, promote_after, demote_at,
// demote_after}, rules: [PrecisionReportJson's rows + mode + words], proposals: [{rule, kind:
// promote|demote, from, to, lower_bound, answers, diff, why, file}], week: {since, tickets,
// merged, closed, pr_open, answered, stopped, live, ended, median_seconds_to_acknowledgement,
// median_seconds_to_pull_request (null when none), turns, tokens, cost_usd, person_asks,
// would_accept, verdicts, words}}. `policy_file` is "" when the embedded defaults are in force.
nlohmann::json JudgementJson(const JudgementFacts& facts, const Policy& policy, const std::string& policy_file,
                             const std::string& policy_text);

// The route's answer: ReadJudgementFacts, the policy file read now, JudgementJson.
Result<nlohmann::json> ReadJudgement(Views& views, const Policy& policy, const std::string& policy_file, TimeMs now);

}  // namespace superagent::panel
