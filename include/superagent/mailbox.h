// The intercom's durable mailbox as values (SPEC §10): stored messages, groups and the fixed
// limits. Kept apart from intercom.h (its threads, locks and SessionHost) so the Engine and the
// Store, which store these values, need none of that machinery.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "superagent/clock.h"

namespace superagent {

// A stored intercom message.
struct IntercomMessage {
  std::string id;
  std::string from_session;  // "" when a person sent it from the panel
  std::string from_person;   // the panel operator, when a person sent it
  std::string to_session;
  std::string text;          // as written (unwrapped)
  std::string delivery;      // "wake" | "steer"
  std::string applied;       // "wake" (turn started) | "steer" | "queue"
  std::string state;         // "queued" | "delivered" | "answered"
  std::string reply_to;      // the message this one answers, or ""
  std::string group;         // the group it was broadcast to, or ""
  TimeMs created_at = 0;
  std::optional<TimeMs> delivered_at;
};

struct IntercomGroup {
  std::string id;     // "auto" for the automatic group of sessions that have talked
  std::string name;
  bool automatic = false;
  std::vector<std::string> members;  // session ids, in the order they joined
};

// The group named `id` among `groups`; null when there is none.
inline const IntercomGroup* FindGroup(const std::vector<IntercomGroup>& groups, const std::string& id) {
  for (const IntercomGroup& g : groups)
    if (g.id == id) return &g;
  return nullptr;
}

// Rules of the road (SPEC §10), fixed by code; the panel shows them.
struct IntercomLimits {
  std::size_t max_text = 8'000;         // code points in; longer is refused with a message
  std::size_t max_output = 16'000;     // code points of a read tool's whole JSON result; the newest text is kept
  std::size_t max_last_text = 4'000;   // collect: a session's last conclusion
  int per_target_per_minute = 10;
  int per_pair_per_minute = 10;
  int wake_budget = 3;                  // per target, reset only by a person's message
  int default_read_events = 80;
  int max_read_events = 500;
  TimeMs max_ask_wait_ms = 30'000;
  std::size_t max_group_name = 60;
  std::size_t max_collect = 20;
};

}  // namespace superagent
