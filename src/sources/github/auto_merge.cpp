// The auto-merge guard (SPEC §6): one pure function decides whether the daemon may merge a pull
// request, so the conditions live in one place and are tested without a network. The channel
// only gathers the facts (PullFactsFromJson) and acts on the answer.
#include <algorithm>
#include <cctype>
#include <climits>
#include <map>

#include "superagent/github.h"
#include "superagent/json_read.h"

namespace superagent::github {

using nlohmann::json;

namespace {

// GitHub logins are case-insensitive ("Alice" and "alice" are one account).
std::string Folded(const std::string& login) {
  std::string out = login;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Short(const std::string& sha) { return sha.substr(0, 12); }

bool IsBotLogin(const std::string& login) {
  return login.size() > 5 && login.compare(login.size() - 5, 5, "[bot]") == 0;
}

// A review state that sets where a reviewer stands. A COMMENTED review after an approval leaves
// the approval in force (GitHub counts it the same way); PENDING is an unsent draft. Any other
// state — including one this code does not know or could not read — withdraws an earlier
// approval: a guard that is unsure must not merge.
bool Decisive(const std::string& state) { return state != "COMMENTED" && state != "PENDING"; }

int ClampedInt(std::int64_t v) { return static_cast<int>(std::clamp<std::int64_t>(v, INT_MIN, INT_MAX)); }

}  // namespace

std::string AutoMergeRefusal(const PullFacts& pull, const AutoMergeRule& rule, const std::string& expected_head_sha,
                             const std::string& ticket_marker) {
  if (!pull.open) return "the pull request is not open";
  if (pull.draft) return "the pull request is a draft";
  // Only a PR the daemon opened for this Ticket: anything else is somebody else's work to merge.
  if (ticket_marker.empty() || pull.body.find(ticket_marker) == std::string::npos)
    return "the pull request was not opened for this Ticket (its description lacks the Ticket's marker)";
  if (expected_head_sha.empty()) return "no head commit was named to merge";
  if (pull.head_sha != expected_head_sha)
    return "a new version was pushed: the head is " + Short(pull.head_sha) + ", the approved version was " +
           Short(expected_head_sha);
  const std::int64_t changed = static_cast<std::int64_t>(pull.additions) + pull.deletions;
  if (pull.additions < 0 || pull.deletions < 0 || changed >= rule.max_changed_lines)
    return "the change is too large to merge without a person: " + std::to_string(pull.additions) + " additions + " +
           std::to_string(pull.deletions) + " deletions, the limit is under " + std::to_string(rule.max_changed_lines);

  // Each person's latest decisive review is where they stand now.
  std::map<std::string, const ReviewFact*> latest;
  for (const ReviewFact& r : pull.reviews) {
    if (r.bot || r.login.empty() || !Decisive(r.state)) continue;
    latest[Folded(r.login)] = &r;
  }
  const std::string author = Folded(pull.author);
  int approvals = 0;
  bool approver_approved = false;
  for (const auto& [login, r] : latest) {
    if (login == author || r->state != "APPROVED" || r->commit_id != pull.head_sha) continue;
    ++approvals;
    if (!rule.approver.empty() && login == Folded(rule.approver)) approver_approved = true;
  }
  if (approvals < rule.required_approvals)
    return "the head commit " + Short(pull.head_sha) + " has " + std::to_string(approvals) + " approval" +
           (approvals == 1 ? "" : "s") + " by people other than its author; " +
           std::to_string(rule.required_approvals) + " required";
  if (!rule.approver.empty() && !approver_approved)
    return "the rule's approver " + rule.approver + " has not approved the head commit " + Short(pull.head_sha);
  return "";
}

Result<PullFacts> PullFactsFromJson(const json& pull, const json& reviews) {
  json_read::Fields f(pull, "pull request");
  PullFacts facts;
  facts.open = f.String("state") == "open";
  facts.draft = f.OptBool("draft");
  facts.author = f.String("user.login");
  facts.head_sha = f.String("head.sha");
  facts.body = f.OptString("body");
  facts.additions = ClampedInt(f.Int("additions"));
  facts.deletions = ClampedInt(f.Int("deletions"));
  if (!f.ok()) return f.status();
  if (!reviews.is_array())
    return Status::InvalidArgument(std::string("reviews: expected a list, got ") + json_read::TypeName(reviews));
  for (const json& r : reviews) {
    ReviewFact fact;
    fact.login = json_read::StringOr(r, "user.login");
    // A review nobody can be named for cannot approve; one whose state cannot be read still
    // counts against its author's earlier approval (see Decisive).
    if (fact.login.empty()) continue;
    // REST lists say "APPROVED", webhooks "approved": one vocabulary for the guard.
    fact.state = json_read::StringOr(r, "state", "UNREADABLE");
    for (char& c : fact.state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    fact.commit_id = json_read::StringOr(r, "commit_id");
    fact.bot = json_read::StringOr(r, "user.type") == "Bot" || IsBotLogin(fact.login);
    facts.reviews.push_back(std::move(fact));
  }
  return facts;
}

}  // namespace superagent::github
