// GitHub JSON (REST or webhook payload) → Trigger: the normalizers, their context and results,
// mentions and discussions. The GitHub Source's own (its files and tests), not for other modules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/github.h"
#include "superagent/github_threads.h"
#include "superagent/trigger.h"

namespace superagent::github {

struct NormalizeContext {
  std::string repo;       // "owner/name"
  std::string bot_login;  // the agent's own account; "" when not yet known
  // CI on these head branches is taken like default-branch CI, with meta.pull_number.
  std::vector<TrackedPull> tracked;
};

struct Normalized {
  enum class Kind {
    kTrigger,    // `trigger` is set
    kSkip,       // well-formed, but not an event the Source takes (pending review, other branch, …)
    kMalformed,  // missing or wrongly typed fields: skipped and counted (SPEC §3.2)
  };
  Kind kind = Kind::kSkip;
  Trigger trigger;
  std::string why;  // for kSkip / kMalformed
};

// A discussion: an issue or a pull request of a repository.
struct Discussion {
  std::string repo;  // "owner/name"
  bool pull = false;
  std::int64_t number = 0;
  // "issue:57" / "pull:12": its cursor name (cursors are the repository's Source's own).
  std::string Key() const { return std::string(pull ? "pull:" : "issue:") + std::to_string(number); }
  // "github:<owner>/<name>:issue:57" (github_threads.h).
  std::string Thread() const { return github_threads::Key(repo, Key()); }
};

// Issue comment (REST or webhook `comment`). Issue vs PR comes from html_url ("/pull/") or, when
// given, `on_pull` (webhooks say so in issue.pull_request).
Normalized NormalizeIssueComment(const nlohmann::json& comment, const NormalizeContext& ctx,
                                 std::optional<bool> on_pull = std::nullopt);
// Inline review comment: path, line and the end of the diff hunk go into `text`; its Thread is
// the review thread "github:<repo>:pull:<n>:review:<top comment id>" and the PR's Thread.
Normalized NormalizeReviewComment(const nlohmann::json& comment, const NormalizeContext& ctx);
// Submitted review; meta.state is lower-case ("approved", "changes_requested", "commented",
// "dismissed") and meta.commit_id the head it reviewed. `pull_number` when the payload lacks
// pull_request_url.
Normalized NormalizeReview(const nlohmann::json& review, const NormalizeContext& ctx, std::int64_t pull_number = 0);
// An issue's or PR's own text (title + body). Its id carries a digest of title and body, so an
// edit re-enters and the same text from any path is one Trigger. `addressed` also when the bot
// is an assignee or a requested reviewer.
Normalized NormalizeIssue(const nlohmann::json& issue, const NormalizeContext& ctx, std::optional<bool> is_pull = std::nullopt);
// A pull request that was merged or closed (REST answer or webhook `pull_request`), as its
// Thread's event: id "github:<repo>:pull:<n>:closed@<closed_at>", so webhook and polling meet. The
// actor is merged_by when merged, else `closer` (the webhook's `sender`, or the issue's
// `closed_by` when polled); kSkip while the pull request is open.
Normalized NormalizePullClosed(const nlohmann::json& pull, const NormalizeContext& ctx,
                               const nlohmann::json& closer = nlohmann::json());
// A completed workflow run / check run on `default_branch` or on the head branch of one of
// ctx.tracked (then meta.pull_number says which). CI has no actor. A check run whose payload
// names no branch (a REST listing of one commit) is taken as on `default_branch`, so a listing of
// a tracked head commit passes that head branch here.
Normalized NormalizeWorkflowRun(const nlohmann::json& run, const NormalizeContext& ctx, const std::string& default_branch);
Normalized NormalizeCheckRun(const nlohmann::json& run, const NormalizeContext& ctx, const std::string& default_branch);
// A webhook delivery's payload (an object) for `event`: nullopt when the event or its action is
// not one the Source takes; kMalformed (with the field and its type) when a field the event
// needs has the wrong type. Never throws, whatever the payload holds.
std::optional<Normalized> NormalizeWebhook(const std::string& event, const nlohmann::json& payload,
                                           const NormalizeContext& ctx);

// True when `text` @-mentions `login` outside code spans, fenced code, block quotes and HTML
// comments. Case-insensitive; "@login-2" or "a@login" do not count. A "name[bot]" login is
// mentioned as "@name".
bool Mentions(const std::string& text, const std::string& login);

// The Discussion a Thread key or channel names ("github:acme/api:issue:5",
// "github:acme/api:pull:7:review:9"), or nullopt for other keys (and unqualified ones).
std::optional<Discussion> DiscussionOf(const std::string& key);

}  // namespace superagent::github
