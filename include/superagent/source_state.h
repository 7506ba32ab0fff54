// What the Engine keeps about each Source's read paths and about failing kinds of work: values
// shared by the Engine, the Store and the panel (SPEC §3.5 health, §6 system problems).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"

namespace superagent {

// Health of one read path of a Source (SPEC §3.5: "realtime", "backfill", "notifications", ...).
struct SourceHealth {
  std::string source, path;
  std::optional<TimeMs> last_success_at, last_error_at;
  std::string last_error;
  int consecutive_failures = 0;
  std::int64_t skipped_items = 0;  // malformed items skipped and counted (SPEC §3.2)
  std::string note;                // the path's own account of its last round, e.g. what it deferred
};

// One round of a Source's bookkeeping, applied in one transaction (SPEC §3.3: the failed-item
// set and the advanced global cursor are saved together).
struct SourceUpdate {
  std::string source;                              // "github", "feishu"
  std::map<std::string, std::string> set_cursors;  // cursor name → value (any text, JSON welcome)
  std::vector<std::string> erase_cursors;
  std::string path;                                // read path this round reports on; "" for none
  bool ok = true;                                  // the path's round succeeded
  std::string error;                               // when !ok; never contains secrets
  int skipped = 0;                                 // malformed items skipped this round
  std::string note;                                // kept as the path's SourceHealth::note; "" clears it
  // !ok because the daemon's stop cut the read short: the stop's doing, not the peer's, so it is
  // logged at info and neither recorded against the path nor counted toward a problem.
  bool abandoned = false;
};

// What one round of a Source took in, counted alike by every Source (sources/intake.h): each
// Source's RoundReport derives from it and adds what its own reads counted.
struct IntakeCounts {
  int stored = 0, duplicate = 0, filtered = 0, skipped = 0;
  std::vector<std::string> errors;  // what went wrong, one line each
};

// A message an open Ticket was asked with, or one the daemon posted for it (issue 34): what a
// Source looks at again for a discussion that grew on it after it was read — a Feishu topic
// opened on the request or on the acknowledgement while the daemon was down. Engine::
// OpenTicketMessages lists them; which platform id a Source reads from it is the Source's business.
struct TicketMessage {
  std::int64_t ticket = 0;   // the Ticket's id
  bool request = false;      // the Ticket's origin Trigger; else a message the daemon posted (a receipt)
  std::string kind;          // "request", or the receipt's kind ("acknowledgement", "answer", "result", "attention")
  std::string channel;       // where it was said: the Trigger's channel, or the receipt's
  std::string external_id;   // posted: the platform's id its delivery returned; request: ""
  nlohmann::json meta;       // request: the origin Trigger's meta as received (may be anything); posted: null
  TimeMs at = 0;             // request: when it was said; posted: when it was sent
};

// A standing problem for "what needs me now" (SPEC §6: the same kind failing 3 times in a row).
struct SystemProblem {
  std::string kind;
  std::string message;
  int failures = 0;
  TimeMs first_at = 0, last_at = 0;
};

}  // namespace superagent
