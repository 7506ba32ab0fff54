// The GitHub Channel's own (its files and tests), not for other modules: the text and marker of
// every message it writes, the check run's name, and the auto-merge guard (SPEC §6).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/github.h"
#include "superagent/status.h"

namespace superagent::github {

// ---------------------------------------------------------------------------------------------
// Channel

// The first line of every message the agent writes on GitHub (SPEC §3.3).
inline constexpr const char* kAutomatedFirstLine = "This is by an automated agent, not a human";

// "<!-- superagent-receipt: <id> -->": hidden in the rendered comment, found again after a crash.
std::string ReceiptMarker(const std::string& id);
// The text posted for `body`: the first line, a blank line, the body, the hidden marker.
std::string MessageText(const std::string& body, const std::string& marker_id);

// The name of the check run that shows a Ticket's stage on its pull request (issue 25).
inline constexpr const char* kCheckRunName = "superagent";

// ---------------------------------------------------------------------------------------------
// Linked pull requests: one change across repositories, one pull request in each.

// The hidden markers around the section link_pull_requests owns in a pull request's body; the
// rest of the body is a person's (or the opening's) and is never touched.
inline constexpr const char* kLinkedPullsBegin = "<!-- superagent:linked-pulls -->";
inline constexpr const char* kLinkedPullsEnd = "<!-- /superagent:linked-pulls -->";
// GitHub's limit on a pull request's body, in characters.
inline constexpr std::size_t kMaxPullBodyChars = 65'536;

// Another pull request of the same change, written as GitHub cross-references it ("owner/name#N").
struct PullLink {
  std::string repo;  // "owner/name"
  std::int64_t number = 0;
};

// `body` with its linked-pulls section saying that `links` (in their order) are Ticket
// `ticket`'s change, merged together. The section replaces the first one between the markers
// (a begin marker without an end marker: from it to the end of the body), or is appended after a
// blank line when there is none. Every byte outside the section is kept, so the result of the
// same links is the same body again.
std::string WithLinkedPulls(const std::string& body, std::int64_t ticket, const std::vector<PullLink>& links);

// ---------------------------------------------------------------------------------------------
// Auto-merge guard (SPEC §6): the one place that decides whether the daemon may merge a PR.

// One submitted review as GitHub lists it (GET /pulls/N/reviews), oldest first.
struct ReviewFact {
  std::string login;
  std::string state;      // "APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"
  std::string commit_id;  // the commit the review was given on
  bool bot = false;       // user.type "Bot" or a "name[bot]" login
};

// What the guard needs to know about a pull request, read just before merging.
struct PullFacts {
  bool open = false;
  bool draft = false;
  std::string author;    // user.login; the author's own approval never counts
  std::string head_sha;
  std::string body;      // carries the hidden receipt marker when the daemon opened it
  int additions = 0;
  int deletions = 0;
  std::vector<ReviewFact> reviews;
  // Gathered beside the pull request by the channel:
  std::string agent_login;            // the agent's own account: its approval never counts
  std::vector<std::string> ui_files;  // changed files under execution.ui_paths (the screenshot rule)
};

// The team's terms (a rule's auto_merge block and its approver, SPEC §4.4).
struct AutoMergeRule {
  int max_changed_lines = 200;   // additions + deletions must stay below this
  int required_approvals = 1;
  std::string approver;          // when set, this person must be among the approvers
};

// Answers WriteAccess for a login (CollaboratorPermissions::Of, or a table in tests).
using WriteAccessLookup = std::function<WriteAccess(const std::string& login)>;

// "" when the PR may be merged, else one sentence saying why not. Merging needs: open, not a
// draft, opened for this Ticket (`ticket_marker`, ReceiptMarker("pr:ticket:<N>"), in its body),
// head == `expected_head_sha` (a newer push revokes), additions + deletions < max_changed_lines,
// and at least required_approvals people whose latest decisive review (any but COMMENTED and
// PENDING, which leave a standing unchanged as on GitHub) is an approval of the head commit and
// who may approve: not bots, not the author, not the agent, and with write access by `access`
// (asked only for those approvers, once each; an answer that is not "writer" — a stranger, a
// read-only collaborator, a lookup that failed — does not count, and the refusal names why).
// The rule's approver, when named, must be among them; a change with ui_files (a visible UI
// change, SPEC §6) needs a named approver. Logins compare ignoring case.
std::string AutoMergeRefusal(const PullFacts& pull, const AutoMergeRule& rule, const std::string& expected_head_sha,
                             const std::string& ticket_marker, const WriteAccessLookup& access);

// PullFacts from GitHub's answers: a pull request object and its reviews (a list). A field the
// guard needs with a wrong type is an InvalidArgument naming it; a review that is not a
// well-formed object is left out (it cannot approve anything).
Result<PullFacts> PullFactsFromJson(const nlohmann::json& pull, const nlohmann::json& reviews);

// WriteAccess from an answer of GET /repos/{repo}/collaborators/{login}/permission for `login`:
// a writer only for a 2xx object whose `permission` is "admin", "maintain" or "write", whose
// user.login (when given) is `login`, and whose user.permissions.push (when given) agrees.
// Anything else — no answer, 403 (the asker lacks push access), 404, a body of the wrong shape —
// is not a writer, with why.
WriteAccess WriteAccessFromAnswer(const std::string& login, const ApiResponse& answer);

}  // namespace superagent::github
