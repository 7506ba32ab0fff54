// What workspace.cpp (the mirror, the Tickets' repositories) and workspace_commits.cpp (a turn's
// commits) both need, so a ref is named and a git failure read one way. Private to src/exec.
#pragma once

#include <string>

#include "superagent/process.h"
#include "superagent/status.h"
#include "superagent/text.h"
#include "superagent/workspace.h"

namespace superagent::exec::workspace_internal {

inline std::string TicketName(TicketId t) { return "ticket-" + std::to_string(t); }
inline std::string IncomingRef(TicketId t) { return "refs/superagent/incoming/" + TicketName(t); }

inline Status Failed(const std::string& what, const Result<RunResult>& r) {
  if (!r.ok()) return Status::Unavailable(what + ": " + r.status().message());
  if (r->cancelled) return Status::Unavailable(what + ": cancelled");
  if (r->timed_out) return Status::Unavailable(what + ": timed out");
  if (r->exit_code != 0) return Status::Unavailable(what + ": " + text::TailLines(r->err, 5, 500));
  return Status::Ok();
}

}  // namespace superagent::exec::workspace_internal
