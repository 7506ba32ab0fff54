// GitHub CI results (workflow runs, check runs) → Trigger. Their own rules (which branches count,
// which check runs are the agent's own) keep them apart from the conversation's normalize.cpp.
#include "sources/github/normalize.h"
#include "sources/github/normalize_internal.h"
#include "superagent/github.h"
#include "superagent/text.h"

namespace superagent::github {

using nlohmann::json;
using namespace normalize_internal;

namespace {

// Whether `login` is the App `slug`'s bot ("<slug>[bot]"), ignoring case as GitHub does.
bool AppBotLoginMatches(const std::string& login, const std::string& slug) {
  return text::AsciiLower(login) == text::AsciiLower(slug + "[bot]");
}

std::string ShortCommit(const std::string& sha) { return sha.substr(0, 7); }

// The tracked pull request whose head is `branch`, or null.
const TrackedPull* TrackedOn(const NormalizeContext& ctx, const std::string& branch) {
  if (branch.empty()) return nullptr;
  for (const TrackedPull& p : ctx.tracked)
    if (p.number > 0 && p.head_branch == branch) return &p;
  return nullptr;
}

// CI is read on the default branch and on tracked pull requests' heads; nowhere else.
bool CiBranchTaken(const NormalizeContext& ctx, const std::string& branch, const std::string& default_branch) {
  return (!default_branch.empty() && branch == default_branch) || TrackedOn(ctx, branch) != nullptr;
}

}  // namespace

Normalized NormalizeWorkflowRun(const json& run, const NormalizeContext& ctx, const std::string& default_branch) {
  std::int64_t id = 0, attempt = 1, run_number = 0;
  std::string status, conclusion, branch, sha, name, title, html_url, version, event;
  TimeMs at = 0;
  if (!ReqInt(run, "id", &id)) return Malformed("workflow run: no integer id");
  const std::string what = "workflow run " + std::to_string(id);
  if (!ReqString(run, "status", &status)) return Malformed(what + ": no status");
  if (status != "completed") return Skip(what + ": not completed");
  if (!OptString(run, "head_branch", &branch) || !ReqString(run, "head_sha", &sha))
    return Malformed(what + ": no head_branch/head_sha");
  if (!CiBranchTaken(ctx, branch, default_branch))
    return Skip(what + ": not on the default branch or a tracked pull request's head");
  if (!OptString(run, "conclusion", &conclusion)) return Malformed(what + ": conclusion is not text");
  if (!ReqTime(run, "updated_at", &at, &version)) return Malformed(what + ": no valid updated_at");
  ReqInt(run, "run_attempt", &attempt);
  ReqInt(run, "run_number", &run_number);
  OptString(run, "name", &name);
  OptString(run, "display_title", &title);
  OptString(run, "html_url", &html_url);
  OptString(run, "event", &event);

  Normalized n;
  n.kind = Normalized::Kind::kTrigger;
  Trigger& t = n.trigger;
  t.source = "github";
  t.scope = "ci";
  t.id = "github:ci:run:" + std::to_string(id) + "@" + std::to_string(attempt);
  t.text = "CI: workflow \"" + name + "\" run #" + std::to_string(run_number) + " on " + branch + " (" + ShortCommit(sha) +
           ") finished: " + (conclusion.empty() ? "unknown" : conclusion) + (title.empty() ? "" : "\n" + title);
  t.at = at;
  t.threads = {github_threads::Ci(ctx.repo, branch)};
  t.channel = github_threads::Commit(ctx.repo, sha);
  t.meta["type"] = "workflow_run";
  t.meta["run_id"] = id;
  t.meta["run_attempt"] = attempt;
  t.meta["conclusion"] = conclusion;
  t.meta["branch"] = branch;
  t.meta["head_sha"] = sha;
  t.meta["workflow"] = name;
  if (!event.empty()) t.meta["event"] = event;
  if (!html_url.empty()) t.meta["html_url"] = html_url;
  if (const TrackedPull* p = TrackedOn(ctx, branch)) t.meta["pull_number"] = p->number;
  return n;
}

Normalized NormalizeCheckRun(const json& run, const NormalizeContext& ctx, const std::string& default_branch) {
  std::int64_t id = 0;
  std::string status, conclusion, sha, name, html_url, version, branch;
  TimeMs at = 0;
  if (!ReqInt(run, "id", &id)) return Malformed("check run: no integer id");
  const std::string what = "check run " + std::to_string(id);
  // The daemon's own check run shows a Ticket's stage (issue 25); read back as CI, a Ticket
  // marked ready would be told its own "success" and loop on it. Known before anything else.
  // By its App; the external_id only when no App is named, so another App copying our ids cannot
  // hide its CI result from the Ticket.
  std::string slug;
  const json* app = Field(run, "app");
  if (app != nullptr && app->is_object()) OptString(*app, "slug", &slug);
  std::string external_id;
  const bool ours_by_id =
      OptString(run, "external_id", &external_id) && external_id.rfind("superagent-ticket-", 0) == 0;
  if ((!slug.empty() && AppBotLoginMatches(ctx.bot_login, slug)) || (slug.empty() && ours_by_id))
    return Skip(what + ": the agent's own check run");
  if (!ReqString(run, "status", &status)) return Malformed(what + ": no status");
  if (status != "completed") return Skip(what + ": not completed");
  if (!ReqString(run, "head_sha", &sha)) return Malformed(what + ": no head_sha");
  if (!OptString(run, "conclusion", &conclusion)) return Malformed(what + ": conclusion is not text");
  if (!ReqTime(run, "completed_at", &at, &version)) return Malformed(what + ": no valid completed_at");
  // GitHub Actions reports the same result as a workflow run, which is read instead.
  if (slug == "github-actions") return Skip(what + ": reported by its workflow run");
  // Webhooks say the branch in check_suite.head_branch; the REST listing is already per branch.
  branch = default_branch;
  if (const json* suite = Field(run, "check_suite"); suite != nullptr && suite->is_object()) {
    std::string b;
    // A wrong type must not read as "no branch", which would file it under the default branch.
    if (!OptString(*suite, "head_branch", &b)) return Malformed(what + ": check_suite.head_branch is not text");
    if (!b.empty()) branch = b;
  }
  if (!CiBranchTaken(ctx, branch, default_branch))
    return Skip(what + ": not on the default branch or a tracked pull request's head");
  OptString(run, "name", &name);
  OptString(run, "html_url", &html_url);

  Normalized n;
  n.kind = Normalized::Kind::kTrigger;
  Trigger& t = n.trigger;
  t.source = "github";
  t.scope = "ci";
  t.id = "github:ci:check:" + std::to_string(id) + "@" + version;
  t.text = "CI: check \"" + name + "\" on " + branch + " (" + ShortCommit(sha) + ") finished: " +
           (conclusion.empty() ? "unknown" : conclusion);
  if (const json* output = Field(run, "output"); output != nullptr && output->is_object()) {
    std::string title;
    if (OptString(*output, "title", &title) && !title.empty()) t.text += "\n" + title;
  }
  t.at = at;
  t.threads = {github_threads::Ci(ctx.repo, branch)};
  t.channel = github_threads::Commit(ctx.repo, sha);
  t.meta["type"] = "check_run";
  t.meta["check_run_id"] = id;
  t.meta["conclusion"] = conclusion;
  t.meta["branch"] = branch;
  t.meta["head_sha"] = sha;
  t.meta["check"] = name;
  if (!html_url.empty()) t.meta["html_url"] = html_url;
  if (const TrackedPull* p = TrackedOn(ctx, branch)) t.meta["pull_number"] = p->number;
  return n;
}

}  // namespace superagent::github
