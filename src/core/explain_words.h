// `explain` in a person's words (issue 24): who sent a message and where, what the Gate said and
// which policy key would change it, what the Eval decided. Pure functions over stored values, so
// the CLI, the panel and --json tell the same story.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "superagent/domain.h"
#include "superagent/trigger.h"

namespace superagent {

// The policy key whose edit would change the Gate's verdict, and what to do with it.
struct PolicyEdit {
  std::vector<std::string> path;  // {"sources", "github", "people"}
  std::string to;                 // "add alice"
};
std::string DottedKey(const std::vector<std::string>& path);  // sources.github.scopes."chat:oc_1".receive_all

// Where a message was written, as a person says it: "GitHub issue #11", "a Feishu topic".
std::string PlaceWords(const Trigger& t);
// Who wrote it: "alice", "the bot dependabot[bot]", "GitHub CI".
std::string SenderWords(const Trigger& t);
// "alice wrote on GitHub issue #11, addressing the agent, at 2026-12-02T10:00:00Z."
std::string ArrivalWords(const Trigger& t);
// The Gate's verdict on `t` (its stored reason token), and in `change` the key that would
// change it when one would. `table` is where the admission table that judged it is written
// (Policy::SourcePath: {"sources", "github"}, or {"repos", "acme/api", "sources", "github"}).
std::string GateWords(const Trigger& t, const std::string& reason, const std::string& strength,
                      const std::vector<std::string>& table, std::optional<PolicyEdit>* change);
// What the Eval decided, and (in `change`) the key for an observe-mode "would accept": `mode_key`,
// the row whose observe held it (Policy::ModePath).
std::string DecisionWords(const Decision& d, const std::vector<std::string>& mode_key, std::optional<PolicyEdit>* change);

}  // namespace superagent
