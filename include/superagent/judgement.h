// Judgement you can measure (issue 38): whether what the daemon did, or would have done, was
// wanted. In observe mode a person gives a verdict on each would_accept; in auto mode (and on a
// person's explicit request) the Ticket's outcome labels itself. Each rule's precision comes with
// the lower bound of its 95 % Wilson interval — the honest figure for "has this rule earned auto?"
// on few answers — and a rule that earns it (or loses it) gets a proposed policy edit, never an
// edit made by the daemon.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/domain.h"
#include "superagent/policy.h"

namespace superagent {

// A person's answer to "was this a request?" about one would_accept Decision.
enum class Verdict { kYes, kNo, kUnknown };
const char* VerdictName(Verdict v);                         // "yes" | "no" | "unknown"
std::optional<Verdict> ParseVerdict(std::string_view text);  // exactly those words

// One would_accept Decision, or one accepted Decision with its Ticket, and the verdict on it, if
// any (Views::WouldAccepts, Views::Judged).
struct WouldAcceptRecord {
  std::int64_t decision = 0;
  std::string thread;
  std::vector<std::string> rules;  // the rules its assessment matched (none: the record counts under "(no rule)")
  std::string text;                // the newest message of its batch, for a person to judge
  std::optional<Verdict> verdict;
  std::string by;                  // who gave the verdict; for an outcome, the outcome's name
  std::string via;                 // "panel" | "thread" | "outcome"
  TimeMs verdict_at = 0;           // when the verdict was given (0: none)
  TimeMs created_at = 0;           // the Decision's
  // Accepted (auto mode, or a person's explicit request) rather than would_accept. An accepted
  // explicit request counts under its path, "explicit:<admission>", not under rules.
  bool accepted = false;
  bool explicit_request = false;
  std::string admission;  // the Mandate's admission, for accepted Decisions
  std::optional<TicketId> ticket;
};

// "A person asked and the daemon had just declined": an explicit request on a Thread whose newest
// Decision before it (within kMissedWithinMs) was an inferred Eval's ignore. Counted as missed
// under the rules that declined assessment named (matched or not), or "(no rule)".
inline constexpr TimeMs kMissedWithinMs = 24LL * 3600 * 1000;
struct MissedRecord {
  std::int64_t declined = 0;  // the inferred ignore Decision
  std::int64_t request = 0;   // the explicit Decision after it
  std::string thread;
  std::vector<std::string> rules;
  TimeMs at = 0;  // the explicit Decision's
};

// One rule's record, or one explicit-request path's ("explicit:<admission>").
struct RulePrecision {
  std::string rule;
  bool explicit_path = false;  // a person's explicit request path, not a rule
  int would_accept = 0;        // would_accept Decisions it matched (observe mode)
  int accepted = 0;            // accepted Decisions whose Tickets it covers (auto mode, explicit paths)
  int yes = 0, no = 0, unknown = 0;
  int unanswered = 0;          // no verdict and no outcome yet
  int missed = 0;              // MissedRecords naming it
  // yes / (yes + no): "don't know" and unanswered count neither way. 0 with no yes or no.
  double precision = 0;
  double lower_bound = 0;  // the 95 % Wilson lower bound of `precision` over yes + no answers
  int answers() const { return yes + no; }
};

// The lower bound of the Wilson score interval for `successes` of `trials` at `z` (1.96: 95 %);
// 0 when trials is 0. On 3 of 3 it is 0.44, on 30 of 30 0.89: few answers never look certain.
double WilsonLowerBound(int successes, int trials, double z = 1.959963984540054);

// Each rule's record over `records`, by rule name (a Decision matching two rules counts for both),
// then each explicit path's; `missed` adds its counts to the rules (and paths) it names.
std::vector<RulePrecision> PrecisionByRule(const std::vector<WouldAcceptRecord>& records,
                                           const std::vector<MissedRecord>& missed = {});

// {"since": ms, "rules": [{rule, kind: "rule"|"explicit", would_accept, accepted, yes, no,
// unknown, unanswered, missed, precision, lower_bound}]}: `superagent policy report --json`'s shape.
nlohmann::json PrecisionReportJson(const std::vector<RulePrecision>& rules, TimeMs since);

// What a Ticket's outcome says of the Decision that made it (SPEC §4.4, issue 38): stopped by a
// person within its first turn, or its pull requests all closed unmerged, count against; a merged
// pull request, a question answered (a result and no pull request), or a person's thanks after its
// result count for. nullopt: no outcome yet (still working, a PR open, or ended some other way).
struct OutcomeFacts {
  bool stopped_by_person = false;
  std::int64_t turns_when_stopped = 0;  // turns begun when it was stopped
  int pulls_merged = 0, pulls_closed = 0, pulls_open = 0;
  bool result_sent = false;   // a result went out
  bool thanked = false;       // a person's message after the result was thanks alone (IsThanks)
};
struct OutcomeLabel {
  Verdict verdict;
  std::string name;  // "stopped_in_first_turn" | "pull_request_closed" | "pull_request_merged" | "answered" | "thanked"
};
std::optional<OutcomeLabel> LabelOutcome(const OutcomeFacts& f);

// A message that only thanks (after its mentions are taken out): "thanks", "thank you!", "谢谢",
// "感谢", "多谢", "👍", "ty". Anything more ("thanks, but…") is not.
bool IsThanks(std::string_view text);

// One Ticket's outcome (issue 38 §4): what it cost and yielded, for /metrics and the weekly card.
struct TicketOutcome {
  TicketId ticket = 0;
  std::string rule;      // label: the Mandate's first matched rule; "explicit" for a person's request
  std::string executor;  // label: the executor of its first turn; "none" before one
  // label: the repository it works in ("owner/name": its workspace's, else its Thread's); "" for
  // one outside GitHub with no workspace (shown "none")
  std::string repo;
  // label: "merged" | "closed" (every PR closed unmerged) | "pr_open" | "answered" (a result, no PR,
  // ended or ready) | "stopped" (a person stopped it) | "live" (still at work) | "ended" (otherwise)
  std::string outcome;
  std::optional<double> seconds_to_acknowledgement, seconds_to_first_commit, seconds_to_pull_request, seconds_to_merge;
  std::int64_t turns = 0, tokens = 0;
  double cost_usd = 0;
  std::int64_t person_asks = 0;  // questions the Ticket put to a person: messages that needed an answer
  TimeMs created_at = 0;
};

// Which Tickets to read: every one from id `from` on, and the ones listed in `also` (the panel's
// cache re-reads only the Tickets still at work, and the new ones).
struct TicketSet {
  TicketId from = 0;
  std::vector<TicketId> also;
  std::string AlsoJson() const;  // `also` as a JSON array, for SQLite's json_each
};

// A proposed change of one rule's mode (issue 38 §3): the daemon proposes, a person edits.
struct ModeProposal {
  std::string rule;
  Mode from = Mode::kObserve, to = Mode::kAuto;  // promote: observe → auto; demote: auto → observe
  bool promote = true;
  double lower_bound = 0;
  int answers = 0;
  std::string diff;  // a unified diff of the policy file ("" when the file does not name the rule)
  std::string why;   // one sentence a person reads
};

// The proposals `precision` earns under `policy`'s judgement settings: promote a rule that is not
// in auto once its lower bound reaches promote_at over at least promote_after answers; demote a
// rule in auto once, over at least demote_after answers, its lower bound falls under demote_at.
// `policy_file`/`policy_text` are the file in force, for the diff (RuleModeEditDiff).
std::vector<ModeProposal> ProposeModes(const std::vector<RulePrecision>& precision, const Policy& policy,
                                       const std::string& policy_file, const std::string& policy_text);

// Where the judgement window that counts answers at `now` begins (judgement.window_days back).
TimeMs JudgementWindowStart(const JudgementSettings& s, TimeMs now);

// Whether a rule in auto is demoted now (ProposeModes's demotion test): its new Tickets are held.
bool Demoted(const RulePrecision& r, const JudgementSettings& s);

}  // namespace superagent
