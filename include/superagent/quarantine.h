// Quarantine (issue 18): an item the daemon fails on the same way again and again — an outgoing
// Effect, the Evals of a Thread, a Ticket's worker turns — or that was in flight each time the
// daemon died, is set aside with its reason instead of being retried into a crash loop.
// Everything else goes on; a person retries it from the panel's Needs-you.
#pragma once

#include <optional>
#include <string>

#include "superagent/clock.h"

namespace superagent {

// What a quarantine record is about. The item is the key its loop picks work by.
inline constexpr const char* kQuarantineEffect = "effect";  // item: the Effect's id
inline constexpr const char* kQuarantineEval = "eval";      // item: the Thread key
inline constexpr const char* kQuarantineTurn = "turn";      // item: the Ticket id

// A counted item: failures in a row until it is set aside (then set_aside_at is set). A success
// deletes the record, so "in a row" means what it says.
struct QuarantineItem {
  std::string kind;        // kQuarantineEffect | kQuarantineEval | kQuarantineTurn
  std::string item;
  std::string label;       // what it is, in a person's words ("message receipt ack:ticket:3 on github")
  std::string last_error;  // the newest failure's text
  int failures = 0;        // failures in a row with the same signature (FailureSignature)
  int crashes = 0;         // abnormal daemon exits in a row while it was in flight
  std::optional<TimeMs> set_aside_at;
  std::string reason;      // why it was set aside; empty while only counted
  TimeMs updated_at = 0;
  bool set_aside() const { return set_aside_at.has_value(); }
};

// What makes two failures "the same way": the text with every run of digits replaced by "#"
// (ids, durations and counts differ between attempts of the same failure), at most 200 bytes.
std::string FailureSignature(const std::string& error);

}  // namespace superagent
