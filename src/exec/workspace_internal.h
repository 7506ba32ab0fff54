// What workspace.cpp (the mirror, the Tickets' repositories) and workspace_commits.cpp (a turn's
// commits) both need, so a ref is named and a git failure read one way. Private to src/exec.
#pragma once

#include <string>
#include <utility>
#include <vector>

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

// `git for-each-ref --format='%(refname) %(objectname)'` output as {ref name, object id}.
inline std::vector<std::pair<std::string, std::string>> ParseRefListing(const std::string& listing) {
  std::vector<std::pair<std::string, std::string>> refs;
  for (std::size_t at = 0; at < listing.size();) {
    std::size_t end = listing.find('\n', at);
    if (end == std::string::npos) end = listing.size();
    const std::string line = listing.substr(at, end - at);
    at = end + 1;
    if (const std::size_t sp = line.find(' '); sp != std::string::npos) refs.emplace_back(line.substr(0, sp), line.substr(sp + 1));
  }
  return refs;
}

// The object id a bundle's header gives HEAD ("# v2 git bundle", then "-<id> …" prerequisites and
// "<id> <ref>" lines up to a blank line; v3 adds "@capability" lines), or "" when the header
// names none or not as a 40- or 64-digit lower-case hex id. The bundle is a worker's bytes.
std::string BundleHead(const std::string& bundle);

// The object id the loose ref file `ref` in the daemon's own repository `repo` holds, or "" when
// there is none (a packed ref, another ref store) or it holds anything else: then git is asked.
// Loose refs win over packed ones, so an id read here is the ref's value.
std::string LooseRef(const std::string& repo, const std::string& ref);

}  // namespace superagent::exec::workspace_internal
