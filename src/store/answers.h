// The reads behind the answer invariant (superagent/answer.h), shared by the Engine's store (for
// `explain`) and the panel's read-only views (for the "Not answered" and "not allowed" cards), so
// both see a message's answer the same way. Each runs in the caller's snapshot.
#pragma once

#include <vector>

#include "store/sqlite.h"
#include "superagent/answer.h"

namespace superagent::store {

// Everything AnswerOf needs about the stored Trigger `rec`.
Result<AnswerFacts> ReadAnswerFacts(Db& db, const TriggerRecord& rec);

// Messages from people that address the agent (not the agent's own), received at or after
// `since`, newest first, at most `limit`.
Result<std::vector<TriggerRecord>> ReadAddressedSince(Db& db, TimeMs since, int limit);

}  // namespace superagent::store
