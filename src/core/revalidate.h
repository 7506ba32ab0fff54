// Pure checks of a Mandate against a Policy (SPEC §4.5, §4.6). No I/O.
#pragma once

#include <string>
#include <vector>

#include "superagent/domain.h"
#include "superagent/policy.h"

namespace superagent {

// Revalidation before resume (SPEC §4.5 table). Returns "" when the Mandate may resume under
// `now`, else the reason it may not. `origin` is the Trigger that made the request.
std::string RevalidateMandate(const Mandate& m, const Trigger& origin, const Policy& now);

// What a policy change means for a live Ticket's Mandate (SPEC §4.6): one line per effect —
// a matched rule changed or no longer applies, the requester is no longer eligible, proactive
// work is no longer accepted. Empty when the Ticket is unaffected.
std::vector<std::string> PolicyChangeReasons(const Mandate& m, const Trigger& origin, const Policy& before,
                                             const Policy& now);

}  // namespace superagent
