// Trigger: one immutable, normalized event from a Source (SPEC §3.1). Nothing downstream of a
// Source adapter sees platform formats; everything sees this.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/status.h"

namespace superagent {

struct Trigger {
  std::string id;                    // stable identity: "feishu:<message_id>", "github:comment:<id>@<updated_at>"
  std::string source;                // "github" | "feishu" | "panel"
  std::string scope;                 // admission row: issues|pulls|comments|ci, chat:<id>|direct|other_mentions
  std::optional<std::string> actor;  // who sent it; nullopt for CI
  bool human = false;                // the Source recognises the sender as an ordinary user
  bool addressed = false;            // mentions, or is sent directly to, the agent
  std::string text;
  TimeMs at = 0;                     // event time, used for ordering
  std::vector<std::string> threads;  // Thread keys, first one is the primary Thread
  std::string channel;               // where a reply would go
  nlohmann::json meta = nlohmann::json::object();  // source-specific detail (urls, ids, diff hunks, ...)
};

// Parses the JSON form (keys as in SPEC §3.1; `at` as RFC 3339). Every problem names the field,
// e.g. "trigger.threads: must be a non-empty array of strings".
Result<Trigger> TriggerFromJson(const nlohmann::json& j);
// The JSON form accepted by TriggerFromJson.
nlohmann::json TriggerToJson(const Trigger& t);
// Ok when `t` holds every invariant TriggerFromJson checks (so what is stored reads back);
// otherwise the same field-naming error. Intake refuses what fails it.
Status ValidateTrigger(const Trigger& t);

// The message's web address when the Source knows one (meta.html_url or meta.url), else "".
std::string TriggerUrl(const Trigger& t);

}  // namespace superagent
