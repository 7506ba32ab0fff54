// The GitHub Source's poller (SPEC §3.3, §3.5). One round reads, in this order: the saved failed
// items, the bot's notifications (each pointing at a discussion read from its own cursor), the
// discussions it follows (open Tickets every round, others for 14 days after activity), then the
// repo-wide scopes switched on in config, then default-branch CI. Every path saves its cursors and
// health in one Engine::UpdateSource transaction; the failed-item set is saved in the same one as
// the advanced notifications cursor. This file holds the round, the identity, reading one
// discussion and the followed discussions; source_notifications.cpp the failed items and the
// notifications, source_repo.cpp the repo-wide scopes and the Tickets' own CI.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "superagent/assign_or_return.h"
#include "superagent/json_read.h"
#include "superagent/metrics.h"
#include "superagent/views.h"

#include "sources/github/source_internal.h"

namespace superagent::github {

using nlohmann::json;

using namespace polling;

Source::Source(Engine* engine, Views* views, Client* client, Clock* clock, SourceOptions options)
    : engine_(engine), views_(views), client_(client), clock_(clock), options_(std::move(options)),
      source_name_(github_threads::Repository(options_.repo)),
      poller_({"the github poller", options_.poll_interval_ms, engine_}, [this]() -> std::optional<TimeMs> {
        // A round that throws is logged and recorded by the loop's guard; its cursors did not
        // move, so the next round reads the same items again.
        RunOnce();
        return NextDelayMs();
      }) {}

Source::~Source() { Stop(); }

std::string Source::BotLogin() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bot_login_;
}

NormalizeContext Source::Context() const { return NormalizeContext{options_.repo, BotLogin()}; }

Status Source::Report(SourceUpdate u) { return sources::ReportRound(*engine_, std::move(u), client_->options().cancel); }

CallOptions Source::PollCall() const { return CallOptions{options_.max_inline_wait_ms, options_.poll_attempts}; }

TimeMs Source::NextDelayMs() const {
  TimeMs delay = options_.poll_interval_ms;
  {
    std::lock_guard<std::mutex> lock(mu_);
    delay = std::max(delay, poll_interval_header_ms_);
  }
  const TimeMs now = clock_->NowMs();
  RateBudget b = client_->Budget();
  if (b.blocked_until > now) delay = std::max(delay, b.blocked_until - now);
  return delay;
}

void Source::Start() {
  if (poller_.Start())
    spdlog::info("github source started repo={} interval_s={}", options_.repo, options_.poll_interval_ms / 1000);
}

void Source::Stop() { poller_.Stop(); }

void Source::InterruptibleSleep(TimeMs ms) { poller_.Sleep(ms); }

bool Source::EnsureIdentity(RoundReport* report) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (identity_confirmed_) return true;
  }
  std::string login = options_.bot_login;
  std::string error;
  // Another repository's round learnt it already: said once for the account, not per repository.
  const bool shared = options_.shared_identity && !options_.shared_identity().empty();
  if (login.empty() && options_.identity) {
    auto got = options_.identity();
    if (got.ok()) login = *got;
    else error = got.status().message();
  } else if (login.empty()) {
    ApiResponse r = client_->Get("/user", PollCall());
    auto got = json_read::String(r.body, "login");
    if (r.ok() && got.ok() && !got->empty()) {
      login = *got;
    } else {
      error = r.ok() ? "GET /user: answer has no login (" + got.status().message() + ")" : r.error;
    }
  }
  SourceUpdate u;
  u.source = source_name_;
  u.path = "identity";
  u.ok = error.empty();
  u.error = error;
  if (!login.empty()) u.set_cursors["identity"] = json{{"login", login}}.dump();
  if (Status s = Report(u); !s.ok()) spdlog::error("github identity update failed: {}", s.ToString());
  if (!error.empty()) {
    if (report) report->errors.push_back(error);
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (bot_login_ != login) {
    if (shared) spdlog::debug("github identity login={} repo={} (the account's)", login, options_.repo);
    else spdlog::info("github identity login={}", login);
  }
  bot_login_ = login;  // replaces a stored login a webhook adopted (AdoptStoredIdentity)
  identity_confirmed_ = true;
  return true;
}

bool Source::Followed(const Discussion& d, const std::map<std::string, std::string>& cursors) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ticket_discussions_.count(d.Key())) return true;
  }
  auto it = cursors.find(d.Key());
  if (it == cursors.end()) return false;
  json c = json::parse(it->second, nullptr, false);
  return c.is_object() && !JsonBool(c, "deleted");
}

void Source::ReceiveNormalized(const Normalized& n, const std::string& via, bool followed, Intake* intake,
                               RoundReport* report, const SourceUpdate* with) {
  intake->any = true;
  if (n.kind == Normalized::Kind::kMalformed) return sources::SkipItem(kSource, via, n.why, intake, report);
  if (n.kind == Normalized::Kind::kSkip) return;
  const Trigger& t = n.trigger;
  // Dropped before intake, but stored with the reason so "why didn't it answer" has evidence.
  std::string reason;
  const bool own = json_read::BoolOr(t.meta, "own");
  if (own) {
    reason = "own_message";
  } else {
    bool scope_on = (t.scope == "issues" && options_.read_issues) || (t.scope == "pulls" && options_.read_pulls) ||
                    (t.scope == "comments" && options_.read_comments) || (t.scope == "ci" && options_.read_ci);
    if (!scope_on && !t.addressed && !followed) reason = "out_of_scope";
  }
  if (!sources::ReceiveTrigger(*engine_, kSource, t, via, reason, with, intake, report)) return;
  if (t.addressed && !own && !followed) {
    if (auto d = DiscussionOf(t.threads.front())) intake->addressed.emplace_back(*d, t.at);
  }
}

std::string Source::FollowCursor(TimeMs since) const {
  return json{{"since", IsoSeconds(since - options_.overlap_ms)}, {"last_activity", since}, {"last_polled", 0}}.dump();
}

void Source::RegisterDiscussion(const Discussion& d, TimeMs since) {
  auto cursors = views_->SourceCursors(source_name_);
  if (!cursors.ok()) {  // not followed now; the notifications cursor still brings its mentions
    spdlog::error("github follow discussion={} failed: {}", d.Key(), cursors.status().ToString());
    return;
  }
  if (cursors->count(d.Key())) return;
  SourceUpdate u;
  u.source = source_name_;
  u.set_cursors[d.Key()] = FollowCursor(since);
  if (Status s = Report(u); !s.ok())
    spdlog::error("github follow discussion={} failed: {}", d.Key(), s.ToString());
  else
    spdlog::info("github following discussion={} repo={}", d.Key(), options_.repo);
}

Source::ReadOutcome Source::ReadDiscussion(const Discussion& d, const json& cursor, TimeMs fallback_since,
                                           RoundReport* report) {
  ReadOutcome out;
  const std::string repo = "/repos/" + options_.repo;
  const std::string num = std::to_string(d.number);
  const TimeMs since = CursorSince(cursor, fallback_since);
  const std::string since_q = IsoSeconds(since);
  const TimeMs local_start = clock_->NowMs();
  const NormalizeContext ctx = Context();
  Intake intake;
  bool edited_body = false;

  auto fail = [&](const ApiResponse& r) {
    out.kind = IsGone(r) ? ReadOutcome::Kind::kGone : ReadOutcome::Kind::kError;
    out.error = r.error;
    out.not_found = r.status == 404;
    out.skipped = intake.skipped;
    return out;
  };

  // The issue / PR itself: its text, which becomes a Trigger when it is new or was edited.
  ApiResponse item = client_->Get(repo + (d.pull ? "/pulls/" : "/issues/") + num, PollCall());
  if (!item.ok()) return fail(item);
  const TimeMs read_start = ReadStart(item, local_start);
  std::string digest = json_read::StringOr(cursor, "body");
  TimeMs last_activity = JsonInt(cursor, "last_activity");
  if (!item.not_modified) {
    Normalized n = NormalizeIssue(item.body, ctx, d.pull);
    if (n.kind == Normalized::Kind::kTrigger) {
      const std::string new_digest = json_read::StringOr(n.trigger.meta, "digest");
      const bool is_new = n.trigger.at >= since;
      const bool edited = !digest.empty() && new_digest != digest;
      if (is_new || edited) {
        ReceiveNormalized(n, "poll:discussion", true, &intake, report);
        edited_body = edited;
      }
      digest = new_digest;
    } else if (n.kind == Normalized::Kind::kMalformed) {
      ReceiveNormalized(n, "poll:discussion", true, &intake, report);
    }
    TimeMs updated = 0;
    if (TimeField(item.body, "updated_at", &updated)) last_activity = std::max(last_activity, updated);
  }
  // A pull request merged or closed is its Thread's event. The cursor remembers the closing it
  // took, so one whose Receive failed is tried again though GitHub now answers 304, and a
  // closed pull request costs no more reads. A closing older than the cursor is history, except
  // on a tracked pull request, whose Ticket waits for exactly this.
  std::string closed_seen = json_read::StringOr(cursor, "closed");
  std::string head_sha = json_read::StringOr(cursor, "head_sha");
  if (d.pull) {
    if (auto sha = json_read::String(item.body, "head.sha"); sha.ok() && !sha->empty()) head_sha = *sha;
    Normalized closed = NormalizePullClosed(item.body, ctx);
    const bool tracked = tracked_discussions_.count(d.Key()) > 0;
    if (closed.kind == Normalized::Kind::kTrigger) {
      const std::string closed_at = json_read::StringOr(closed.trigger.meta, "closed_at");
      if (closed_at != closed_seen && (tracked || closed.trigger.at >= since)) {
        if (!json_read::BoolOr(closed.trigger.meta, "merged")) {
          // The pull request does not say who closed it; its issue does (closed_by).
          ApiResponse issue = client_->Get(repo + "/issues/" + num, PollCall());
          if (!issue.ok()) return fail(issue);
          const json* by = json_read::Find(issue.body, "closed_by");
          closed = NormalizePullClosed(item.body, ctx, by == nullptr ? json() : *by);
        }
        const std::string error_before = intake.error;
        ReceiveNormalized(closed, "poll:discussion", true, &intake, report);
        if (intake.error == error_before) closed_seen = closed_at;
      }
    } else if (closed.kind == Normalized::Kind::kMalformed && !item.not_modified) {
      ReceiveNormalized(closed, "poll:discussion", true, &intake, report);
    }
  }

  ApiResponse comments =
      client_->GetAll(repo + "/issues/" + num + "/comments?since=" + since_q + "&per_page=100", "", PollCall());
  if (!comments.ok()) return fail(comments);
  if (!comments.not_modified) {
    for (const json& c : comments.body) {
      ReceiveNormalized(NormalizeIssueComment(c, ctx, d.pull), "poll:discussion", true, &intake, report);
    }
  }
  if (d.pull) {
    ApiResponse review_comments = client_->GetAll(
        repo + "/pulls/" + num + "/comments?sort=updated&direction=asc&since=" + since_q + "&per_page=100", "",
        PollCall());
    if (!review_comments.ok()) return fail(review_comments);
    if (!review_comments.not_modified) {
      for (const json& c : review_comments.body) {
        ReceiveNormalized(NormalizeReviewComment(c, ctx), "poll:discussion", true, &intake, report);
      }
    }
    // Reviews have no `since`: the conditional request keeps an unchanged list free, and only
    // reviews submitted after the cursor are taken.
    ApiResponse reviews = client_->GetAll(repo + "/pulls/" + num + "/reviews?per_page=100", "", PollCall());
    if (!reviews.ok()) return fail(reviews);
    if (!reviews.not_modified) {
      for (const json& r : reviews.body) {
        TimeMs submitted = 0;
        if (TimeField(r, "submitted_at", &submitted) && submitted < since) continue;
        ReceiveNormalized(NormalizeReview(r, ctx, d.number), "poll:discussion", true, &intake, report);
      }
    }
  }
  out.skipped = intake.skipped;
  if (!intake.error.empty()) {
    out.kind = ReadOutcome::Kind::kError;
    out.error = intake.error;
    return out;
  }
  last_activity = std::max(last_activity, intake.last_activity);
  if (report) ++report->discussions_read;
  // Next cursor = read start − overlap, but only when something new came: an unchanged cursor
  // keeps the URLs identical, so the next read of an idle discussion is a free 304.
  const bool changed = intake.fresh > 0 || edited_body;
  out.cursor = json{{"since", changed ? IsoSeconds(read_start - options_.overlap_ms) : IsoSeconds(since)},
                    {"body", digest},
                    {"last_activity", last_activity},
                    {"last_polled", clock_->NowMs()}};
  if (!closed_seen.empty()) out.cursor["closed"] = closed_seen;
  if (!head_sha.empty()) out.cursor["head_sha"] = head_sha;  // a tracked pull's check runs are read at its head
  return out;
}


void Source::PollFollowed(std::map<std::string, std::string>& cursors, std::set<std::string>* read,
                          const std::vector<TrackedPull>& tracked, RoundReport* report) {
  const TimeMs now = clock_->NowMs();
  // Unread, the open Tickets' discussions are not "none": this round follows nothing and says why
  // (a round that took them for none would let their discussions fall out of the follow window).
  auto open = views_->OpenTicketThreads(github_threads::Repository(options_.repo) + ":");
  if (!open.ok()) {
    const std::string error = "open tickets' discussions not read: " + open.status().message();
    spdlog::error("github followed discussions skipped error=\"{}\"", error);
    if (report) report->errors.push_back(error);
    return;
  }
  std::set<std::string> tickets;
  for (const std::string& thread : *open)
    if (auto d = DiscussionOf(thread)) tickets.insert(d->Key());
  // A Ticket's own pull request is read like its discussion: every round (its reviews, review
  // comments and closing included), whether or not the Ticket is subscribed to it yet.
  for (const TrackedPull& p : tracked) tickets.insert(Discussion{options_.repo, true, p.number}.Key());
  {
    std::lock_guard<std::mutex> lock(mu_);
    ticket_discussions_ = tickets;
  }
  // A discussion whose Ticket ended lately is followed for the window after that end too (SPEC
  // §3.5), however long it was quiet before. Unread, the round counts activity alone and says so.
  std::map<std::string, TimeMs> ended_at;
  if (auto ended = views_->EndedTicketThreads(github_threads::Repository(options_.repo) + ":", now - options_.follow_window_ms); !ended.ok()) {
    spdlog::warn("github ended tickets' discussions not read error=\"{}\"", ended.status().message());
  } else {
    for (const auto& [thread, at] : *ended)
      if (auto d = DiscussionOf(thread)) ended_at[d->Key()] = std::max(ended_at[d->Key()], at);
  }
  const bool low_budget = BudgetLow();
  std::vector<Discussion> due;
  for (const auto& [name, value] : cursors) {
    auto d = DiscussionOf(github_threads::Key(options_.repo, name));
    if (!d || read->count(name)) continue;
    json c = json::parse(value, nullptr, false);
    if (!c.is_object() || JsonBool(c, "deleted")) continue;
    if (tickets.count(name)) {
      due.push_back(*d);
      continue;
    }
    if (low_budget) continue;
    const auto end = ended_at.find(name);
    const TimeMs active = std::max(JsonInt(c, "last_activity"), end == ended_at.end() ? 0 : end->second);
    if (now - active > options_.follow_window_ms) continue;
    if (now - JsonInt(c, "last_polled") < options_.recent_poll_interval_ms) continue;
    due.push_back(*d);
  }
  // A Ticket's discussion the Source has never read (e.g. the request came by webhook and was
  // never registered) is read from the notifications cursor on.
  for (const std::string& key : tickets) {
    if (cursors.count(key) || read->count(key)) continue;
    if (auto d = DiscussionOf(github_threads::Key(options_.repo, key))) due.push_back(*d);
  }
  const TimeMs fallback = CursorSince(ParseCursor(cursors, "notifications"), now - options_.overlap_ms);

  SourceUpdate u;
  u.source = source_name_;
  u.path = "discussions";
  std::string first_error;
  int failed = report ? report->discussions_failed : 0;
  for (const Discussion& d : due) {
    if (!read->insert(d.Key()).second) continue;
    ReadOutcome out = ReadDiscussion(d, ParseCursor(cursors, d.Key()), fallback, report);
    u.skipped += out.skipped;
    switch (out.kind) {
      case ReadOutcome::Kind::kOk:
        u.set_cursors[d.Key()] = cursors[d.Key()] = out.cursor.dump();
        break;
      case ReadOutcome::Kind::kGone:
        MarkGone(engine_, d);
        u.set_cursors[d.Key()] = cursors[d.Key()] = DeletedCursor(now).dump();
        break;
      case ReadOutcome::Kind::kError:
        if (out.not_found && tracked_discussions_.count(d.Key())) {
          // A tracked pull request GitHub does not show (moved, or the token lost access): the
          // Ticket's record names it, so it comes back every round; one line each, no failure.
          spdlog::warn("github tracked pull request not found, skipped this round discussion={}", d.Key());
          break;
        }
        ++failed;
        if (report) {
          ++report->discussions_failed;
          report->errors.push_back(d.Key() + ": " + out.error);
        }
        if (first_error.empty()) first_error = d.Key() + ": " + out.error;
        break;
    }
  }
  // This path's health covers every discussion read this round (failed items and notifications too).
  if (report && failed > 0 && first_error.empty()) {
    for (const std::string& e : report->errors)
      if (e.rfind("issue:", 0) == 0 || e.rfind("pull:", 0) == 0) {
        first_error = e;
        break;
      }
  }
  u.ok = failed == 0;
  u.error = u.ok ? "" : first_error + (failed > 1 ? " (and " + std::to_string(failed - 1) + " more)" : "");
  if (Status s = Report(u); !s.ok()) spdlog::error("github discussions update failed: {}", s.ToString());
}

bool Source::BudgetLow() const {
  const RateBudget b = client_->Budget();
  if (b.remaining >= 0 && b.remaining < kLowBudget && b.reset_at > clock_->NowMs()) return true;
  return options_.request_budget_per_hour > 0 && b.counted_last_hour >= options_.request_budget_per_hour;
}

RoundReport Source::RunOnce() {
  return metrics::ObservedRound(kSource, clock_, [this] { return Round(); });
}

RoundReport Source::Round() {
  std::lock_guard<std::mutex> round(round_mu_);
  if (options_.round_started) options_.round_started();
  RoundReport report;
  ReportRefusedDeliveries();
  if (!EnsureIdentity(&report)) return report;  // without it, its own messages could not be told apart
  TakeWaitingDeliveries();
  auto stored = views_->SourceCursors(source_name_);
  if (!stored.ok()) {  // a round on empty cursors would read everything again from the start
    report.errors.push_back("cursors not read: " + stored.status().message());
    return report;
  }
  auto cursors = std::move(*stored);
  std::set<std::string> read;
  const TimeMs now = clock_->NowMs();
  auto tracked_read = TrackedPulls();
  if (!tracked_read.ok()) {  // a round that took them for none would stop following the Tickets' PRs
    report.errors.push_back("tracked pull requests not read: " + tracked_read.status().message());
    return report;
  }
  const std::vector<TrackedPull> tracked = std::move(*tracked_read);
  tracked_discussions_.clear();
  for (const TrackedPull& p : tracked) tracked_discussions_.insert(Discussion{options_.repo, true, p.number}.Key());

  bool notifications_due = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    notifications_due = options_.read_notifications && now >= next_notifications_at_;
  }
  const bool retries = std::any_of(cursors.begin(), cursors.end(),
                                   [](const auto& c) { return c.first.rfind("retry:", 0) == 0; });
  if (notifications_due || retries) {
    // Failed items first, then new notifications; the failed-item set and the advanced global
    // cursor land in the same transaction. (Under an Integration the notifications are read
    // once for every repository, Integration::ReadNotifications; the failed items stay here.)
    SourceUpdate u;
    u.source = source_name_;
    u.path = "notifications";
    PollRetries(cursors, &u, &read, &report);
    if (notifications_due) PollNotifications(cursors, &u, &read, &report);
    if (Status s = Report(u); !s.ok()) {
      spdlog::error("github notifications update failed: {}", s.ToString());
      report.errors.push_back(s.ToString());
    }
  }
  PollFollowed(cursors, &read, tracked, &report);
  PollTrackedCi(cursors, tracked, &report);  // what a Ticket waits for: read even on a low budget
  {
    std::lock_guard<std::mutex> lock(mu_);
    report.people_waiting = !ticket_discussions_.empty() || !tracked.empty() ||
                            std::any_of(cursors.begin(), cursors.end(),
                                        [](const auto& c) { return c.first.rfind("retry:", 0) == 0; });
  }

  if (BudgetLow()) {
    report.budget_spent = true;
    RateBudget b = client_->Budget();
    spdlog::warn("github rate budget low repo={} remaining={} reset_at={} counted_last_hour={} budget_per_hour={}: "
                 "repo-wide scopes wait",
                 options_.repo, b.remaining, FormatTime(b.reset_at), b.counted_last_hour,
                 options_.request_budget_per_hour);
    return report;
  }
  if (options_.read_issues || options_.read_pulls) PollRepoIssues(cursors, &report);
  if (options_.read_comments) PollRepoComments(cursors, &report);
  if (options_.read_ci) PollCi(cursors, &report);
  return report;
}

}  // namespace superagent::github
