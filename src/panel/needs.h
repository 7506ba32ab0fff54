// Needs-you's cards for what stops the daemon from working (issue 24): what is not set up, the
// system problems grouped by their cause, and a policy file on disk that is not in force. Each
// card says what is wrong and what a person can do about it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/answer.h"
#include "superagent/panel.h"
#include "superagent/policy.h"
#include "superagent/source_state.h"

namespace superagent::panel {

// The cause a system problem's kind belongs to: a platform for its Source's read paths and its
// deliveries ("source:github:ci", "effect:post_message:github" → "github"); any other kind is its
// own cause.
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

// The card for a policy file on disk that is not the version in force.
nlohmann::json PolicyFileCardJson(const PolicyReloadResult& on_disk);

}  // namespace superagent::panel
