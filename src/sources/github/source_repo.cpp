// The GitHub Source's repo-wide scopes (new issues and PRs, comments, default-branch CI — each
// only when switched on in config) and the Tickets' own pull requests' CI, read whatever read_ci
// says. Each path saves its cursors and health in one Engine::UpdateSource transaction.
#include <set>

#include <spdlog/spdlog.h>

#include "superagent/assign_or_return.h"
#include "superagent/json_read.h"

#include "sources/github/source_internal.h"

namespace superagent::github {

using nlohmann::json;
using namespace polling;

void Source::PollRepoIssues(std::map<std::string, std::string>& cursors, RoundReport* report) {
  const TimeMs now = clock_->NowMs();
  json c = ParseCursor(cursors, "repo:issues");
  const TimeMs since = CursorSince(c, now - options_.first_run_lookback_ms);
  ApiResponse r = client_->GetAll("/repos/" + options_.repo + "/issues?state=all&sort=updated&direction=asc&since=" +
                                      IsoSeconds(since) + "&per_page=100",
                                  "", PollCall());
  SourceUpdate u;
  u.source = source_name_;
  u.path = "issues";
  Intake intake;
  if (!r.ok()) {
    u.ok = false;
    u.error = r.error;
    if (report) report->errors.push_back(r.error);
  } else {
    const NormalizeContext ctx = Context();
    if (!r.not_modified) {
      for (const json& item : r.body) {
        Normalized n = NormalizeIssue(item, ctx);
        if (n.kind == Normalized::Kind::kTrigger) {
          const bool pull = n.trigger.scope == "pulls";
          if ((pull && !options_.read_pulls) || (!pull && !options_.read_issues)) continue;
          // New issues only: an old issue is listed again whenever anything on it changes. Without
          // notifications (a GitHub App) an old issue that now addresses the agent (assigned to it,
          // or its text edited to mention it) is what a notification would have brought.
          if (n.trigger.at < since && !(n.trigger.addressed && !options_.read_notifications)) continue;
          auto d = DiscussionOf(n.trigger.threads.front());
          ReceiveNormalized(n, "poll:issues", d && Followed(*d, cursors), &intake, report);
        } else {
          ReceiveNormalized(n, "poll:issues", false, &intake, report);
        }
      }
      if (intake.fresh > 0) c["since"] = IsoSeconds(ReadStart(r, now) - options_.overlap_ms);
    }
    if (!c.contains("since")) c["since"] = IsoSeconds(since);
    u.set_cursors["repo:issues"] = cursors["repo:issues"] = c.dump();
    if (!intake.error.empty()) {
      u.ok = false;
      u.error = intake.error;
      u.set_cursors.clear();  // read again next round
    }
  }
  u.skipped = intake.skipped;
  if (Status s = Report(u); !s.ok()) spdlog::error("github issues update failed: {}", s.ToString());
  for (const auto& [d, at] : intake.addressed) RegisterDiscussion(d, at);
}

void Source::PollRepoComments(std::map<std::string, std::string>& cursors, RoundReport* report) {
  const TimeMs now = clock_->NowMs();
  SourceUpdate u;
  u.source = source_name_;
  u.path = "comments";
  Intake intake;
  const NormalizeContext ctx = Context();
  struct Listing {
    const char* cursor;
    const char* path;
    bool review;
  };
  for (const Listing& l : {Listing{"repo:comments", "/issues/comments", false},
                           Listing{"repo:review_comments", "/pulls/comments", true}}) {
    json c = ParseCursor(cursors, l.cursor);
    const TimeMs since = CursorSince(c, now - options_.first_run_lookback_ms);
    ApiResponse r = client_->GetAll("/repos/" + options_.repo + l.path + "?sort=updated&direction=asc&since=" +
                                        IsoSeconds(since) + "&per_page=100",
                                    "", PollCall());
    if (!r.ok()) {
      u.ok = false;
      u.error = r.error;
      if (report) report->errors.push_back(r.error);
      continue;
    }
    const std::string before = intake.error;
    const int fresh_before = intake.fresh;
    if (!r.not_modified) {
      for (const json& item : r.body) {
        Normalized n = l.review ? NormalizeReviewComment(item, ctx) : NormalizeIssueComment(item, ctx);
        std::optional<Discussion> d;
        if (n.kind == Normalized::Kind::kTrigger) d = DiscussionOf(n.trigger.threads.back());
        ReceiveNormalized(n, "poll:comments", d && Followed(*d, cursors), &intake, report);
      }
      if (intake.fresh > fresh_before) c["since"] = IsoSeconds(ReadStart(r, now) - options_.overlap_ms);
    }
    if (!c.contains("since")) c["since"] = IsoSeconds(since);
    if (intake.error == before) u.set_cursors[l.cursor] = cursors[l.cursor] = c.dump();
  }
  if (!intake.error.empty() && u.ok) {
    u.ok = false;
    u.error = intake.error;
  }
  u.skipped = intake.skipped;
  if (Status s = Report(u); !s.ok()) spdlog::error("github comments update failed: {}", s.ToString());
  for (const auto& [d, at] : intake.addressed) RegisterDiscussion(d, at);
}

void Source::PollCi(std::map<std::string, std::string>& cursors, RoundReport* report) {
  const TimeMs now = clock_->NowMs();
  json c = ParseCursor(cursors, "repo:ci");
  const TimeMs since = CursorSince(c, now - options_.first_run_lookback_ms);
  SourceUpdate u;
  u.source = source_name_;
  u.path = "ci";
  Intake intake;
  auto failed = [&](const ApiResponse& r) {
    u.ok = false;
    u.error = r.error;
    if (report) report->errors.push_back(r.error);
  };
  const std::string repo = "/repos/" + options_.repo;
  // The default branch changes seldom: it is asked once an hour, and the cursor remembers it
  // (one request fewer per round of every repository, issue 37).
  const std::string known = json_read::StringOr(c, "default_branch");
  ApiResponse info;
  if (!known.empty() && now - JsonInt(c, "branch_read_at") < kDefaultBranchReadMs) {
    info.status = 304;
    info.not_modified = true;
    info.body = json{{"default_branch", known}};
  } else {
    info = client_->Get(repo, PollCall());
    if (info.ok()) c["branch_read_at"] = now;
  }
  const std::string branch = json_read::StringOr(info.body, "default_branch");
  if (!info.ok()) {
    failed(info);
  } else if (branch.empty()) {
    u.ok = false;
    u.error = "GET " + repo + ": no default_branch";
  } else {
    const NormalizeContext ctx = Context();
    TimeMs read_start = ReadStart(info, now);
    ApiResponse runs =
        client_->Get(repo + "/actions/runs?branch=" + QueryValue(branch) + "&status=completed&per_page=30", PollCall());
    if (!runs.ok()) {
      failed(runs);
    } else if (auto list = json_read::Array(runs.body, "workflow_runs"); !runs.not_modified && list.ok()) {
      for (const json& run : **list) {
        TimeMs updated = 0;
        if (TimeField(run, "updated_at", &updated) && updated < since) continue;
        ReceiveNormalized(NormalizeWorkflowRun(run, ctx, branch), "poll:ci", false, &intake, report);
      }
    }
    ApiResponse checks =
        client_->Get(repo + "/commits/" + QueryValue(branch) + "/check-runs?status=completed&filter=latest&per_page=50",
                     PollCall());
    if (!checks.ok()) {
      failed(checks);
    } else if (auto list = json_read::Array(checks.body, "check_runs"); !checks.not_modified && list.ok()) {
      for (const json& run : **list) {
        TimeMs completed = 0;
        if (TimeField(run, "completed_at", &completed) && completed < since) continue;
        ReceiveNormalized(NormalizeCheckRun(run, ctx, branch), "poll:ci", false, &intake, report);
      }
    }
    if (u.ok && intake.error.empty()) {
      c["default_branch"] = branch;
      c["since"] = IsoSeconds(intake.fresh > 0 ? read_start - options_.overlap_ms : since);
      u.set_cursors["repo:ci"] = cursors["repo:ci"] = c.dump();
    } else if (!intake.error.empty()) {
      u.ok = false;
      u.error = intake.error;
    }
  }
  u.skipped = intake.skipped;
  if (Status s = Report(u); !s.ok()) spdlog::error("github ci update failed: {}", s.ToString());
}

Result<std::vector<TrackedPull>> Source::TrackedPulls() const {
  std::vector<TrackedPull> out;
  if (!options_.tracked_pulls) return out;
  ASSIGN_OR_RETURN(std::vector<TrackedPull> all, options_.tracked_pulls());
  std::set<std::int64_t> seen;
  const std::string mine = github_threads::Canonical(options_.repo);
  for (TrackedPull& p : all)  // another repository's pull requests are its Source's
    if (p.number > 0 && github_threads::Canonical(p.repo) == mine && seen.insert(p.number).second) out.push_back(std::move(p));
  return out;
}

void Source::PollTrackedCi(std::map<std::string, std::string>& cursors, const std::vector<TrackedPull>& tracked,
                           RoundReport* report) {
  if (tracked.empty()) return;
  const TimeMs now = clock_->NowMs();
  const std::string repo = "/repos/" + options_.repo;
  NormalizeContext ctx = Context();
  ctx.tracked = tracked;
  SourceUpdate u;
  u.source = source_name_;
  u.path = "pull_ci";
  int failed = 0;
  std::string first_error;
  for (const TrackedPull& p : tracked) {
    if (p.head_branch.empty()) continue;
    const std::string pull_key = Discussion{options_.repo, true, p.number}.Key();
    const json pull = ParseCursor(cursors, pull_key);
    if (JsonBool(pull, "deleted")) continue;  // 410: nothing more comes from it
    const std::string name = "ci:" + pull_key;
    json c = ParseCursor(cursors, name);
    // Every run on a Ticket's branch is the Ticket's: a first read (or a new head branch) takes
    // all of the completed ones GitHub lists, not only those after now.
    if (json_read::StringOr(c, "branch") != p.head_branch) c = json::object();
    const TimeMs since = CursorSince(c, 0);
    Intake intake;
    std::string error;
    bool skip = false;
    // A branch or head commit GitHub does not know (404/410, 422 "No commit found") is skipped
    // this round with one line; anything else fails the path and keeps the cursor.
    auto answered = [&](const ApiResponse& r) {
      if (r.ok()) return true;
      if (r.status == 404 || r.status == 410 || r.status == 422) {
        spdlog::warn("github tracked pull request CI skipped this round pull={} branch={} error=\"{}\"", p.number,
                     p.head_branch, r.error);
        skip = true;
      } else {
        error = pull_key + " CI: " + r.error;
      }
      return false;
    };
    ApiResponse runs = client_->Get(
        repo + "/actions/runs?branch=" + QueryValue(p.head_branch) + "&status=completed&per_page=30", PollCall());
    const TimeMs read_start = ReadStart(runs, now);
    if (answered(runs) && !runs.not_modified) {
      auto list = json_read::Array(runs.body, "workflow_runs");
      if (!list.ok()) {
        ++intake.skipped;  // GitHub's answer has no list: counted like a malformed item
        if (report) ++report->skipped;
      } else {
        for (const json& run : **list) {
          TimeMs updated = 0;
          if (TimeField(run, "updated_at", &updated) && updated < since) continue;
          ReceiveNormalized(NormalizeWorkflowRun(run, ctx, ""), "poll:pull_ci", true, &intake, report);
        }
      }
    }
    // The head commit as the pull request's own read found it this round (PollFollowed).
    const std::string sha = json_read::StringOr(pull, "head_sha");
    if (error.empty() && !skip && !sha.empty()) {
      ApiResponse checks = client_->Get(
          repo + "/commits/" + QueryValue(sha) + "/check-runs?status=completed&filter=latest&per_page=50", PollCall());
      if (answered(checks) && !checks.not_modified) {
        auto list = json_read::Array(checks.body, "check_runs");
        if (!list.ok()) {
          ++intake.skipped;
          if (report) ++report->skipped;
        } else {
          for (const json& run : **list) {
            TimeMs completed = 0;
            if (TimeField(run, "completed_at", &completed) && completed < since) continue;
            // The listing is of the head commit: a run that names no branch is on the head branch.
            ReceiveNormalized(NormalizeCheckRun(run, ctx, p.head_branch), "poll:pull_ci", true, &intake, report);
          }
        }
      }
    }
    u.skipped += intake.skipped;
    const bool read_failed = !error.empty();  // ReceiveNormalized already reported intake's own
    if (!read_failed) error = intake.error;
    if (!error.empty()) {
      ++failed;
      if (report && read_failed) report->errors.push_back(error);
      if (first_error.empty()) first_error = error;
      continue;
    }
    c["branch"] = p.head_branch;
    c["since"] = IsoSeconds(intake.fresh > 0 ? read_start - options_.overlap_ms : since);
    u.set_cursors[name] = cursors[name] = c.dump();
  }
  u.ok = failed == 0;
  u.error = u.ok ? "" : first_error + (failed > 1 ? " (and " + std::to_string(failed - 1) + " more)" : "");
  if (Status s = Report(u); !s.ok()) spdlog::error("github pull_ci update failed: {}", s.ToString());
}

}  // namespace superagent::github
