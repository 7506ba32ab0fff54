// Needs-you's cards for what stops the daemon from working (issue 24): what is not set up, the
// system problems grouped by their cause, and a policy file on disk that is not in force. Each
// card says what is wrong and what a person can do about it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/answer.h"
#include "superagent/judgement.h"
#include "superagent/panel.h"
#include "superagent/policy.h"
#include "superagent/source_state.h"

namespace superagent::panel {

// The cause a system problem's kind belongs to: a platform for its Source's read paths and its
// deliveries ("source:github:ci", "effect:post_message:github" → "github"), a GitHub repository
// for its own read paths ("source:github:acme/web:issues" → "github:acme/web"); any other kind is
// its own cause. ProblemCardsJson folds more than three failing repositories into "github".
std::string ProblemCause(const std::string& kind);

// One "Set up" card per gap that applies now (a gap `until_first_contact` applies while its
// Source has never read successfully and has failed). Adds to `folded` the Sources such a card
// stands for, whose problems are not shown again.
nlohmann::json SetupCardsJson(const std::vector<SetupGap>& gaps, const std::vector<SourceHealth>& health,
                              std::set<std::string>* folded);

// One card per cause, in the order the causes began; a cause in `folded` is left out. A card
// lists its failing paths (`paths`, each as ProblemJson) and says what to check.
nlohmann::json ProblemCardsJson(const std::vector<SystemProblem>& problems, const std::set<std::string>& folded);

// The answer invariant's cards (issue 34), from the recent messages that address the agent and
// what is known of each. "Not answered": one card listing each message from a person who may ask
// that holds none of the invariant's outcomes (answer.h) — null when there is none. "Not allowed":
// one quiet card counting the last week's mentions from people the policy does not let ask, by
// person, with the key that widens it — null when there were none.
nlohmann::json UnansweredCardJson(const std::vector<AnswerFacts>& asked, const Policy& policy, TimeMs now);
nlohmann::json NotAllowedCardJson(const std::vector<AnswerFacts>& asked, const Policy& policy, TimeMs now);

// Verdicts on what observe mode would have done (issue 38): one card per rule ("(no rule)" for a
// record that matched none) with would_accept `records` (the last kVerdictWindowMs) nobody has
// judged yet, listing them newest first (at most kVerdictItems) with the rule's counts, precision
// and Wilson lower bound over the same records. Batched, so people are asked in batches and not
// per message: a rule given a verdict less than kVerdictQuietMs ago (`verdict_at`: each Decision's
// verdict time, as far as known) is left out until it has kVerdictBatch unanswered records.
inline constexpr TimeMs kVerdictWindowMs = 7LL * 24 * 3600 * 1000;
inline constexpr TimeMs kVerdictQuietMs = 24LL * 3600 * 1000;
inline constexpr int kVerdictBatch = 5;
inline constexpr int kVerdictItems = 20;
nlohmann::json VerdictCardsJson(const std::vector<WouldAcceptRecord>& records,
                                const std::map<std::int64_t, TimeMs>& verdict_at, TimeMs now);

// "precision 80 % (at least 38 % with 95 % confidence) over 5 answers", or that there is none yet.
std::string PrecisionWords(const RulePrecision& r);

// Proposed policy edits (issue 38 §3): one card per ModeProposal (kind "mode_proposal"), with the
// rule's figures from `rules`, the diff of `policy_file` ("" when the embedded defaults are in
// force) and what a person does about it. Nothing on it edits anything: the daemon never edits
// its own policy. A demotion's card says the rule's new Tickets are held for a person meanwhile.
nlohmann::json ModeProposalCardsJson(const std::vector<ModeProposal>& proposals, const std::vector<RulePrecision>& rules,
                                     const std::string& policy_file);

// The card for a policy file on disk that is not the version in force.
nlohmann::json PolicyFileCardJson(const PolicyReloadResult& on_disk);

}  // namespace superagent::panel
