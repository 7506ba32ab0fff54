// The auto-merge guard (SPEC §6): one pure function decides whether the daemon may merge a pull
// request, so the conditions live in one place and are tested without a network. The channel
// only gathers the facts (PullFactsFromJson, and who may approve: CollaboratorPermissions) and
// acts on the answer.
#include <algorithm>
#include <cctype>
#include <climits>
#include <map>

#include <spdlog/spdlog.h>

#include "superagent/github.h"
#include "sources/github/channel.h"
#include "superagent/json_read.h"
#include "superagent/text.h"

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
                             const std::string& ticket_marker, const WriteAccessLookup& access) {
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
  const std::string author = Folded(pull.author), agent = Folded(pull.agent_login);
  const std::string approver = Folded(rule.approver);
  int approvals = 0;
  bool approver_approved = false;
  std::string approver_why;    // why the approver's approval of the head does not count
  std::string not_counted;     // "mallory (read), eve (permission unknown: HTTP 500 …)"
  int not_counted_n = 0;
  for (const auto& [login, r] : latest) {
    if (login == author || login == agent || r->state != "APPROVED" || r->commit_id != pull.head_sha) continue;
    // Only here is GitHub asked: a stranger's comment or an outdated approval costs no request.
    const WriteAccess a = access ? access(r->login) : WriteAccess{false, "permission not asked"};
    if (!a.writer) {
      if (login == approver) approver_why = a.why;
      // Named up to five, so a flood of strangers' approvals cannot make the refusal unreadable.
      if (++not_counted_n <= 5)
        not_counted += (not_counted.empty() ? "" : ", ") + text::Cut(text::Repair(r->login), 40) + " (" +
                       text::Cut(a.why, 200) + ")";
      continue;
    }
    ++approvals;
    if (login == approver) approver_approved = true;
  }
  if (not_counted_n > 5) not_counted += " and " + std::to_string(not_counted_n - 5) + " more";
  const std::string without = not_counted.empty() ? "" : "; not counted: " + not_counted;
  if (approvals < rule.required_approvals)
    return "the head commit " + Short(pull.head_sha) + " has " + std::to_string(approvals) + " approval" +
           (approvals == 1 ? "" : "s") + " by people with write access other than its author and the agent; " +
           std::to_string(rule.required_approvals) + " required" + without;
  // A visible UI change (the screenshot rule, SPEC §6) is judged by a person the team named.
  if (!pull.ui_files.empty() && rule.approver.empty())
    return "the change touches the UI (" + text::Cut(text::Repair(pull.ui_files.front()), 120) +
           (pull.ui_files.size() > 1 ? " and " + std::to_string(pull.ui_files.size() - 1) + " more" : "") +
           "), which needs the rule's named approver, and the rule names none";
  if (!rule.approver.empty() && !approver_approved)
    return "the rule's approver " + rule.approver +
           (approver_why.empty() ? " has not approved the head commit " + Short(pull.head_sha)
                                 : " approved the head commit " + Short(pull.head_sha) +
                                       " without write access (" + approver_why + ")");
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

WriteAccess WriteAccessFromAnswer(const std::string& login, const ApiResponse& answer) {
  if (!answer.ok()) {
    // The client's error names the request ("GET /repos/…/permission: 500 …"); the login
    // beside it already says which, so only what GitHub answered is kept.
    const std::size_t colon = answer.error.find(": ");
    const std::string said = colon == std::string::npos ? answer.error : answer.error.substr(colon + 2);
    // 403 "Must have push access to view collaborator permission." is the agent's own lack.
    const bool status_first = !said.empty() && std::isdigit(static_cast<unsigned char>(said[0]));
    return {false, std::string("permission unknown") +
                       (answer.status == 403 ? " (the agent's token needs push access to ask)" : "") + ": " +
                       (status_first ? "HTTP " : "") + text::Cut(said, 120)};
  }
  const json& b = answer.body;
  if (!b.is_object()) return {false, std::string("permission unknown: the answer is ") + json_read::TypeName(b)};
  auto p = b.find("permission");
  if (p == b.end() || !p->is_string())
    return {false, std::string("permission unknown: \"permission\" is ") +
                       (p == b.end() ? "missing" : json_read::TypeName(*p))};
  const std::string permission = *p;
  // A GitHub that answers for somebody else, or contradicts itself, is not believed.
  const json* user = b.contains("user") && b["user"].is_object() ? &b["user"] : nullptr;
  if (user != nullptr && user->contains("login") && (!(*user)["login"].is_string() ||
                                                    Folded((*user)["login"].get<std::string>()) != Folded(login)))
    return {false, "permission unknown: the answer is about another user"};
  const bool writer = permission == "admin" || permission == "maintain" || permission == "write";
  if (writer && user != nullptr && user->contains("permissions") && (*user)["permissions"].is_object()) {
    const json& perms = (*user)["permissions"];
    if (perms.contains("push") && perms["push"] != json(true))
      return {false, "permission unknown: \"" + permission + "\" without push"};
  }
  if (!writer && permission != "triage" && permission != "read" && permission != "none")
    return {false, "unknown permission \"" + text::Cut(text::Repair(permission), 40) + "\""};
  // `permission` decides (the legacy base role: maintain reads "write", triage "read"); the role
  // name, when it is one of GitHub's own, says it more exactly to whoever reads the refusal.
  const std::string role = json_read::StringOr(b, "role_name");
  for (const char* known : {"admin", "maintain", "write", "triage", "read"})
    if (role == known) return {writer, role};
  return {writer, permission};
}

CollaboratorPermissions::CollaboratorPermissions(Client* client, std::string repo)
    : client_(client), repo_(std::move(repo)) {}

WriteAccess CollaboratorPermissions::Of(const std::string& login) {
  const std::string key = Folded(login);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = known_.find(key); it != known_.end()) return it->second;
  }
  WriteAccess a;
  // Put into a URL path only what a GitHub login can be: "x/../../other/repo" must not ask
  // about anything else (letters, digits, '-'; '_' for Enterprise Managed Users).
  const bool valid = !login.empty() && login.size() <= 100 &&
                     std::all_of(login.begin(), login.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
                     });
  if (!valid) {
    a = {false, "not a GitHub login"};
  } else {
    ApiResponse r = client_->Get("/repos/" + repo_ + "/collaborators/" + login + "/permission", CallOptions{0, 2});
    a = WriteAccessFromAnswer(login, r);
  }
  if (!a.writer) spdlog::info("github approval without write access login={} why=\"{}\"", text::Cut(text::Repair(login), 60), a.why);
  std::lock_guard<std::mutex> lock(mu_);
  known_[key] = a;
  return a;
}

void CollaboratorPermissions::NewRound() {
  std::lock_guard<std::mutex> lock(mu_);
  known_.clear();
}

}  // namespace superagent::github
