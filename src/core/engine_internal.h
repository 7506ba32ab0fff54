// What the Engine's event files (intake.cpp, evals.cpp, tickets.cpp, outbox.cpp, turns.cpp, ...)
// share, kept in one place so the rules cannot drift apart between them. Private to src/core.
#pragma once

#include <cstdint>
#include <string>

#include "superagent/engine.h"

namespace superagent {

namespace store { class Store; }

// The length rule of every message the Engine enqueues, the channel's platform's
// (EngineOptions::message_limit; none when unset): "" when `body` may go to `channel`, else why
// not. CutToLimit: `body` cut to fit (an acknowledgement is cut, never refused). In engine.cpp.
std::string TooLong(const std::string& channel, const std::string& body, const EngineOptions& o);
std::string CutToLimit(const std::string& channel, const std::string& body, const EngineOptions& o);

// Whether a message sent at `at` is older than the request that made the Mandate's Ticket: such a
// message is context for the Ticket, never something that starts its work again.
Result<bool> OlderThanRequest(store::Store* store, const Mandate& m, TimeMs at);

// The circuit breaker's hold (circuit_breaker.cpp): a question whose actor no Source reports (it
// has spaces), so only the panel answers it, and the form purpose that marks it.
inline constexpr const char* kPanelActor = "a person in the panel";
inline constexpr const char* kHoldPurpose = "circuit_breaker";

// An id in a message ("ticket 12 has ended").
inline std::string Num(std::int64_t v) { return std::to_string(v); }

}  // namespace superagent
