// The GitHub Source's poller (SPEC §3.3, §3.5). One round reads, in this order: the saved failed
// items, the bot's notifications (each pointing at a discussion read from its own cursor), the
// discussions it follows (open Tickets every round, others for 14 days after activity), then the
// repo-wide scopes switched on in config, then default-branch CI. Every path saves its cursors and
// health in one Engine::UpdateSource transaction; the failed-item set is saved in the same one as
// the advanced notifications cursor.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "superagent/assign_or_return.h"
#include "superagent/json_read.h"
#include "superagent/metrics.h"

#include "sources/github/source_internal.h"

namespace superagent::github {

using nlohmann::json;

namespace {

constexpr const char* kSource = "github";
constexpr TimeMs kMinNotificationIntervalMs = 60'000;  // SPEC §3.3: never faster than 60 s
constexpr int kLowBudget = 100;  // below this many requests left, only what people wait for is read

json ParseCursor(const std::map<std::string, std::string>& cursors, const std::string& name) {
  auto it = cursors.find(name);
  if (it == cursors.end()) return json::object();
  json j = json::parse(it->second, nullptr, false);
  return j.is_object() ? j : json::object();
}

// A time field of an outside (or saved) object; false when absent, of another type or unparsable.
bool TimeField(const json& j, const char* key, TimeMs* out) {
  const json* v = json_read::Find(j, key);
  return v != nullptr && v->is_string() && ParseTime(v->get<std::string>(), out);
}

TimeMs CursorSince(const json& c, TimeMs fallback) {
  TimeMs t = 0;
  return TimeField(c, "since", &t) ? t : fallback;
}

std::int64_t JsonInt(const json& c, const char* key, std::int64_t fallback = 0) { return json_read::IntOr(c, key, fallback); }

bool JsonBool(const json& c, const char* key) { return json_read::BoolOr(c, key); }

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

// The moment a read began, on GitHub's clock when it said (cursors compare with GitHub's times).
TimeMs ReadStart(const ApiResponse& r, TimeMs local) { return r.server_time > 0 ? std::min(r.server_time, local) : local; }

bool IsGone(const ApiResponse& r) { return r.status == 410; }

}  // namespace

Source::Source(Engine* engine, Client* client, Clock* clock, SourceOptions options)
    : engine_(engine), client_(client), clock_(clock), options_(std::move(options)),
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

Status Source::Report(SourceUpdate u) {
  // The client's cancel is set before any request is abandoned and never cleared.
  const std::atomic<bool>* cancel = client_->options().cancel;
  u.abandoned = !u.ok && cancel != nullptr && cancel->load();
  return engine_->UpdateSource(u);
}

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
  u.source = kSource;
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
  if (bot_login_ != login) spdlog::info("github identity login={}", login);
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
  if (n.kind == Normalized::Kind::kMalformed) {
    ++intake->skipped;
    if (report) ++report->skipped;
    spdlog::warn("github item skipped via={} reason=\"{}\"", via, n.why);
    return;
  }
  if (n.kind == Normalized::Kind::kSkip) return;
  const Trigger& t = n.trigger;
  intake->last_activity = std::max(intake->last_activity, t.at);
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
  auto r = engine_->Receive(t, via, reason, with);
  if (!r.ok() && r.status().code() == Status::Code::kInvalidArgument) {
    // Intake refused the item itself (it breaks a Trigger invariant): malformed, skipped and
    // counted like one the normalizer caught; a retry would only fail the same way.
    ++intake->skipped;
    if (report) ++report->skipped;
    spdlog::warn("github item skipped via={} trigger={} reason=\"{}\"", via, t.id, r.status().message());
    return;
  }
  if (!r.ok()) {
    intake->error = "receive " + t.id + ": " + r.status().ToString();
    if (report) report->errors.push_back(intake->error);
    return;
  }
  if (r->outcome != IntakeOutcome::kDuplicate) ++intake->fresh;
  if (report) {
    switch (r->outcome) {
      case IntakeOutcome::kStored: ++report->stored; break;
      case IntakeOutcome::kDuplicate: ++report->duplicate; break;
      case IntakeOutcome::kFiltered: ++report->filtered; break;
    }
  }
  if (t.addressed && !own && !followed) {
    if (auto d = DiscussionOf(t.threads.front())) intake->addressed.emplace_back(*d, t.at);
  }
}

std::string Source::FollowCursor(TimeMs since) const {
  return json{{"since", IsoSeconds(since - options_.overlap_ms)}, {"last_activity", since}, {"last_polled", 0}}.dump();
}

void Source::RegisterDiscussion(const Discussion& d, TimeMs since) {
  auto cursors = engine_->SourceCursors(kSource);
  if (!cursors.ok()) {  // not followed now; the notifications cursor still brings its mentions
    spdlog::error("github follow discussion={} failed: {}", d.Key(), cursors.status().ToString());
    return;
  }
  if (cursors->count(d.Key())) return;
  SourceUpdate u;
  u.source = kSource;
  u.set_cursors[d.Key()] = FollowCursor(since);
  if (Status s = Report(u); !s.ok())
    spdlog::error("github follow discussion={} failed: {}", d.Key(), s.ToString());
  else
    spdlog::info("github following discussion={}", d.Key());
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

namespace {

void MarkGone(Engine* engine, const Discussion& d) {
  Status s = engine->MarkThreadDeleted(d.Thread(), "GitHub answered 410 Gone");
  if (!s.ok() && s.code() != Status::Code::kNotFound)
    spdlog::error("github mark deleted discussion={} failed: {}", d.Key(), s.ToString());
  spdlog::info("github discussion deleted discussion={}", d.Key());
}

json DeletedCursor(TimeMs now) { return json{{"deleted", true}, {"deleted_at", now}}; }

}  // namespace

void Source::PollRetries(std::map<std::string, std::string>& cursors, SourceUpdate* update, std::set<std::string>* read,
                         RoundReport* report) {
  const TimeMs now = clock_->NowMs();
  std::vector<std::pair<std::string, json>> items;
  for (const auto& [name, value] : cursors) {
    if (name.rfind("retry:", 0) != 0) continue;
    json item = json::parse(value, nullptr, false);
    items.emplace_back(name, item.is_object() ? item : json::object());
  }
  for (auto& [name, item] : items) {
    Discussion d;
    d.pull = json_read::StringOr(item, "kind") == "pull";
    d.number = JsonInt(item, "number");
    if (d.number <= 0) {
      update->erase_cursors.push_back(name);  // unreadable bookkeeping helps nobody
      continue;
    }
    read->insert(d.Key());
    json cursor = ParseCursor(cursors, d.Key());
    if (item.contains("since")) cursor["since"] = item["since"];
    ReadOutcome r = ReadDiscussion(d, cursor, now, report);
    update->skipped += r.skipped;
    switch (r.kind) {
      case ReadOutcome::Kind::kOk:
        update->erase_cursors.push_back(name);
        update->set_cursors[d.Key()] = cursors[d.Key()] = r.cursor.dump();
        spdlog::info("github failed item recovered discussion={} attempts={}", d.Key(), JsonInt(item, "attempts"));
        break;
      case ReadOutcome::Kind::kGone:
        MarkGone(engine_, d);
        update->erase_cursors.push_back(name);
        update->set_cursors[d.Key()] = cursors[d.Key()] = DeletedCursor(now).dump();
        break;
      case ReadOutcome::Kind::kError: {
        if (report) {
          ++report->discussions_failed;
          report->errors.push_back(d.Key() + ": " + r.error);
        }
        const TimeMs first = JsonInt(item, "first_failed_at", now);
        if (now - first >= options_.retry_drop_after_ms) {
          // The discussion's own cursor stays: later notifications or polling may still read it.
          update->erase_cursors.push_back(name);
          spdlog::warn("github failed item dropped after {} h discussion={} error=\"{}\"",
                       options_.retry_drop_after_ms / 3'600'000, d.Key(), r.error);
        } else {
          item["attempts"] = JsonInt(item, "attempts") + 1;
          item["last_error"] = r.error;
          item["last_attempt_at"] = now;
          update->set_cursors[name] = item.dump();
        }
        break;
      }
    }
  }
}

void Source::PollNotifications(std::map<std::string, std::string>& cursors, SourceUpdate* update,
                               std::set<std::string>* read, RoundReport* report) {
  const TimeMs now = clock_->NowMs();
  json global = ParseCursor(cursors, "notifications");
  const TimeMs since = CursorSince(global, now - options_.first_run_lookback_ms);
  ApiResponse r = client_->GetAll("/notifications?all=true&since=" + IsoSeconds(since) + "&per_page=50", "", PollCall());
  if (report) report->notifications_polled = true;
  std::int64_t header_s = 0;
  if (std::string h = r.Header("x-poll-interval"); !h.empty()) header_s = std::atoll(h.c_str());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (header_s > 0) poll_interval_header_ms_ = header_s * 1000;
    next_notifications_at_ =
        now + std::max({kMinNotificationIntervalMs, options_.poll_interval_ms, poll_interval_header_ms_});
  }
  if (!r.ok()) {
    update->ok = false;
    update->error = r.error;
    if (report) report->errors.push_back(r.error);
    return;
  }
  if (!global.contains("since")) global["since"] = IsoSeconds(since);
  if (r.not_modified) {
    update->set_cursors["notifications"] = global.dump();
    return;
  }
  if (report) report->notifications_changed = true;
  const TimeMs read_start = ReadStart(r, now);
  const TimeMs newest_before = JsonInt(global, "newest");
  TimeMs newest = newest_before;
  int skipped = 0;
  for (const json& n : r.body) {
    TimeMs updated = 0;
    if (TimeField(n, "updated_at", &updated)) newest = std::max(newest, updated);
    // A notification GitHub sent wrong (a field null or of another type) is skipped and counted
    // (SPEC §3.2); the rest of the page is read.
    auto full_name = json_read::String(n, "repository.full_name");
    auto type = json_read::String(n, "subject.type");
    auto subject_url = json_read::OptString(n, "subject.url");  // CI notifications carry none
    if (!full_name.ok() || !type.ok() || !subject_url.ok()) {
      const Status why = !full_name.ok() ? full_name.status() : !type.ok() ? type.status() : subject_url.status();
      spdlog::warn("github notification skipped id={} reason=\"{}\"", json_read::StringOr(n, "id", "?"), why.message());
      ++skipped;
      continue;
    }
    const std::string& url = *subject_url;
    // Other repositories the account hears about are not this Source's business.
    if (Lower(*full_name) != Lower(options_.repo)) continue;
    // CI notifications carry no URL; default-branch CI has its own path.
    if (*type != "Issue" && *type != "PullRequest") continue;
    Discussion d;
    d.pull = *type == "PullRequest";
    auto slash = url.find_last_of('/');
    if (slash != std::string::npos) d.number = std::atoll(url.c_str() + slash + 1);
    if (d.number <= 0) {
      ++skipped;
      continue;
    }
    if (!read->insert(d.Key()).second) continue;
    json cursor = ParseCursor(cursors, d.Key());
    if (JsonBool(cursor, "deleted")) continue;
    ReadOutcome out = ReadDiscussion(d, cursor, since, report);
    update->skipped += out.skipped;
    switch (out.kind) {
      case ReadOutcome::Kind::kOk:
        update->set_cursors[d.Key()] = cursors[d.Key()] = out.cursor.dump();
        break;
      case ReadOutcome::Kind::kGone:
        MarkGone(engine_, d);
        update->set_cursors[d.Key()] = cursors[d.Key()] = DeletedCursor(now).dump();
        break;
      case ReadOutcome::Kind::kError: {
        // SPEC §3.3: remember #n with its read start, and still advance the global cursor.
        if (report) {
          ++report->discussions_failed;
          report->errors.push_back(d.Key() + ": " + out.error);
        }
        json item{{"kind", d.pull ? "pull" : "issue"},
                  {"number", d.number},
                  {"since", IsoSeconds(CursorSince(cursor, since))},
                  {"first_failed_at", now},
                  {"last_attempt_at", now},
                  {"attempts", 1},
                  {"last_error", out.error}};
        update->set_cursors["retry:" + d.Key()] = cursors["retry:" + d.Key()] = item.dump();
        spdlog::warn("github discussion read failed, kept for retry discussion={} error=\"{}\"", d.Key(), out.error);
        break;
      }
    }
  }
  update->skipped += skipped;
  if (report) report->skipped += skipped;
  // Only a thread newer than any seen moves the cursor: the overlap brings the last ones back,
  // and an unchanged URL lets the next poll be a free 304.
  if (newest > newest_before) {
    global["since"] = IsoSeconds(read_start - options_.overlap_ms);
    global["newest"] = newest;
  }
  update->set_cursors["notifications"] = cursors["notifications"] = global.dump();
}

void Source::PollFollowed(std::map<std::string, std::string>& cursors, std::set<std::string>* read,
                          const std::vector<TrackedPull>& tracked, RoundReport* report) {
  const TimeMs now = clock_->NowMs();
  // Unread, the open Tickets' discussions are not "none": this round follows nothing and says why
  // (a round that took them for none would let their discussions fall out of the follow window).
  auto open = engine_->OpenTicketThreads("github:");
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
  for (const TrackedPull& p : tracked) tickets.insert(Discussion{true, p.number}.Key());
  {
    std::lock_guard<std::mutex> lock(mu_);
    ticket_discussions_ = tickets;
  }
  // A discussion whose Ticket ended lately is followed for the window after that end too (SPEC
  // §3.5), however long it was quiet before. Unread, the round counts activity alone and says so.
  std::map<std::string, TimeMs> ended_at;
  if (auto ended = engine_->EndedTicketThreads("github:", now - options_.follow_window_ms); !ended.ok()) {
    spdlog::warn("github ended tickets' discussions not read error=\"{}\"", ended.status().message());
  } else {
    for (const auto& [thread, at] : *ended)
      if (auto d = DiscussionOf(thread)) ended_at[d->Key()] = std::max(ended_at[d->Key()], at);
  }
  const bool low_budget = [&] {
    RateBudget b = client_->Budget();
    return b.remaining >= 0 && b.remaining < kLowBudget && b.reset_at > now;
  }();
  std::vector<Discussion> due;
  for (const auto& [name, value] : cursors) {
    auto d = DiscussionOf("github:" + name);
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
    if (auto d = DiscussionOf("github:" + key)) due.push_back(*d);
  }
  const TimeMs fallback = CursorSince(ParseCursor(cursors, "notifications"), now - options_.overlap_ms);

  SourceUpdate u;
  u.source = kSource;
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

void Source::PollRepoIssues(std::map<std::string, std::string>& cursors, RoundReport* report) {
  const TimeMs now = clock_->NowMs();
  json c = ParseCursor(cursors, "repo:issues");
  const TimeMs since = CursorSince(c, now - options_.first_run_lookback_ms);
  ApiResponse r = client_->GetAll("/repos/" + options_.repo + "/issues?state=all&sort=updated&direction=asc&since=" +
                                      IsoSeconds(since) + "&per_page=100",
                                  "", PollCall());
  SourceUpdate u;
  u.source = kSource;
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
  u.source = kSource;
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
  u.source = kSource;
  u.path = "ci";
  Intake intake;
  auto failed = [&](const ApiResponse& r) {
    u.ok = false;
    u.error = r.error;
    if (report) report->errors.push_back(r.error);
  };
  const std::string repo = "/repos/" + options_.repo;
  ApiResponse info = client_->Get(repo, PollCall());
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
  for (TrackedPull& p : all)
    if (p.number > 0 && seen.insert(p.number).second) out.push_back(std::move(p));
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
  u.source = kSource;
  u.path = "pull_ci";
  int failed = 0;
  std::string first_error;
  for (const TrackedPull& p : tracked) {
    if (p.head_branch.empty()) continue;
    const std::string pull_key = Discussion{true, p.number}.Key();
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
  auto stored = engine_->SourceCursors(kSource);
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
  for (const TrackedPull& p : tracked) tracked_discussions_.insert(Discussion{true, p.number}.Key());

  bool notifications_due = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    notifications_due = options_.read_notifications && now >= next_notifications_at_;
  }
  if (notifications_due) {
    // Failed items first, then new notifications; the failed-item set and the advanced global
    // cursor land in the same transaction.
    SourceUpdate u;
    u.source = kSource;
    u.path = "notifications";
    PollRetries(cursors, &u, &read, &report);
    PollNotifications(cursors, &u, &read, &report);
    RateBudget b = client_->Budget();
    u.set_cursors["rate"] = json{{"limit", b.limit},
                                 {"remaining", b.remaining},
                                 {"reset_at", b.reset_at},
                                 {"blocked_until", b.blocked_until},
                                 {"requests", b.requests},
                                 {"not_modified", b.not_modified}}
                                .dump();
    if (Status s = Report(u); !s.ok()) {
      spdlog::error("github notifications update failed: {}", s.ToString());
      report.errors.push_back(s.ToString());
    }
  }
  PollFollowed(cursors, &read, tracked, &report);
  PollTrackedCi(cursors, tracked, &report);  // what a Ticket waits for: read even on a low budget

  RateBudget b = client_->Budget();
  const bool low_budget = b.remaining >= 0 && b.remaining < kLowBudget && b.reset_at > clock_->NowMs();
  if (low_budget) {
    spdlog::warn("github rate budget low remaining={} reset_at={}: repo-wide scopes wait", b.remaining,
                 FormatTime(b.reset_at));
    return report;
  }
  if (options_.read_issues || options_.read_pulls) PollRepoIssues(cursors, &report);
  if (options_.read_comments) PollRepoComments(cursors, &report);
  if (options_.read_ci) PollCi(cursors, &report);
  return report;
}

}  // namespace superagent::github
