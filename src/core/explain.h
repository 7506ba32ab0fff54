// explain's story of one Trigger (SPEC §12): "I sent it, why didn't it answer?". Reads only; the
// read face (Views::Explain) calls it inside one read transaction.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/policy.h"
#include "superagent/status.h"

namespace superagent {

namespace store { class Store; }

// The story of the Trigger `id_or_url` names (its id, or a message URL): how it arrived, the
// Gate's verdict under `policy`, the Evals and Decisions, the Tickets it reached and what was said
// — and, when nothing was, why, as of `now`. NotFound when nothing stored matches.
Result<nlohmann::json> ExplainTrigger(store::Store& store, const Policy& policy, TimeMs now,
                                      const std::string& id_or_url);

}  // namespace superagent
