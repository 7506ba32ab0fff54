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

// The object id a bundle's header gives HEAD ("# v2 git bundle", then "-<id> …" prerequisites and
// "<id> <ref>" lines up to a blank line; v3 adds "@capability" lines), or "" when the header
// names none or not as a 40- or 64-digit lower-case hex id. The bundle is a worker's bytes.
std::string BundleHead(const std::string& bundle);

}  // namespace superagent::exec::workspace_internal
