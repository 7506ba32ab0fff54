// Worker sessions (SPEC §6) as the Engine stores them: a session is one agent conversation with
// a transcript of events; a Ticket's worker session lives as long as the Ticket. The intercom
// (SPEC §10) builds on the same notion: sessions have an id, a title, a status and a transcript.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/domain.h"

namespace superagent {

using SessionId = std::int64_t;

struct Session {
  SessionId id = 0;
  std::optional<TicketId> ticket;  // the Ticket a worker session serves; none for other sessions
  std::string title;
  std::string executor;            // "builtin" | "command"
  std::string status;              // "idle" | "running" | "ended"
  TimeMs created_at = 0, updated_at = 0;
};

// One transcript entry. Kinds: "input" (what the session was given), "assistant" (a model
// message, tool calls included), "tool_result", "report", "command" (an external executor run),
// "jobs_killed", "note". `body` is JSON whose shape depends on the kind; for "input",
// "assistant" and "tool_result" it is the chat message itself, so a transcript can be replayed.
struct SessionEvent {
  std::int64_t id = 0;
  SessionId session = 0;
  std::int64_t assignment = 0;  // the Assignment during which it happened; 0 for none
  std::string kind;
  nlohmann::json body;
  TimeMs at = 0;
};

// A Ticket's workspace: one directory, one branch (SPEC §6).
struct WorkspaceRecord {
  TicketId ticket = 0;
  std::string dir;
  std::string branch;
  std::string base;  // what the branch started from, e.g. "origin/main"
  TimeMs created_at = 0;
  std::optional<TimeMs> removed_at;
  std::string repo;  // "owner/name" it was made from, lower case; "": the home repository (Workspaces::RepositoryOf)
};

// The worker slots as the scheduler holds them now (SPEC §6), for the panel and /metrics.
struct SlotsView {
  int worker_slots = 0, worker_used = 0;
  bool reserved_used = false;
  int queued = 0;  // pending Assignments; -1 when the store could not be read
};

}  // namespace superagent
