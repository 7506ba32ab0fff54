// One way in for a Source (issue 35): the intake steps the GitHub and Feishu Sources share — a
// normalized item into the Engine, what is counted and logged about it, and the round's
// bookkeeping — live here once; each Source keeps only what is its own (how it reads, what it
// filters, which cursor an item moves).
#pragma once

#include <atomic>
#include <optional>
#include <string>

#include "superagent/engine.h"
#include "superagent/source_state.h"

namespace superagent::sources {

// What one read (a discussion, a chat, a delivery) took in; a Source's own tally derives from it.
struct ReadTally {
  int skipped = 0;         // malformed items skipped and counted (SPEC §3.2)
  int fresh = 0;           // items not seen before (stored or filtered)
  TimeMs last_activity = 0;  // the newest item's time
  std::string error;       // an Engine failure, if any: the read's cursor must not move
};

// An item the normalizer could not take: counted as skipped and logged with why. A retry would
// only fail the same way, so it never holds the cursor back.
void SkipItem(const char* platform, const std::string& via, const std::string& why, ReadTally* tally,
              IntakeCounts* counts);

// One Trigger into the Engine (Engine::Receive, with `with` applied in the same transaction).
// Intake refusing the item itself (InvalidArgument: it breaks a Trigger invariant) is a skip, as
// the normalizer's are; another failure is the read's `error` (and the round's); otherwise the
// outcome is counted and a filtered one logged with its reason. Returns what the Engine did, or
// nullopt when it took nothing.
std::optional<IntakeResult> ReceiveTrigger(Engine& engine, const char* platform, const Trigger& t,
                                           const std::string& via, const std::string& filter_reason,
                                           const SourceUpdate* with, ReadTally* tally, IntakeCounts* counts);

// A round's bookkeeping (Engine::UpdateSource). A failed round the daemon's stop cut short
// (`cancel` set: the client abandoned its requests) is marked abandoned: the stop's doing, not
// the peer's.
Status ReportRound(Engine& engine, SourceUpdate u, const std::atomic<bool>* cancel);

// The deliveries pushed to `path` ("webhook", "callback") and refused since the last round (`n`:
// unsigned, badly signed, stale), as one health record of that path, "N refused deliveries since
// the last round (`why`)". Nothing a stranger sends is written per delivery: a flood costs one
// record a round. A round with none clears what earlier ones raised, once (`*reported` remembers
// whether the last record was a refusal).
void ReportRefused(Engine& engine, const char* platform, const char* path, std::int64_t n, const std::string& why,
                   bool* reported);

}  // namespace superagent::sources
