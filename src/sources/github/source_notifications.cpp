// The GitHub Source's notifications path (SPEC §3.3): the saved failed items first, then the
// bot's notifications, each pointing at a discussion read from its own cursor; the failed-item
// set and the advanced notifications cursor are saved in one transaction.
#include <set>

#include <spdlog/spdlog.h>

#include "superagent/assign_or_return.h"
#include "superagent/github_threads.h"
#include "superagent/json_read.h"
#include "superagent/text.h"
#include "superagent/views.h"
#include "superagent/metrics.h"

#include "sources/github/source_internal.h"

namespace superagent::github {

using nlohmann::json;
using namespace polling;

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
    d.repo = options_.repo;
    d.pull = json_read::StringOr(item, "kind") == "pull";
    d.number = JsonInt(item, "number");
    if (d.number <= 0) {
      update->erase_cursors.push_back(name);  // unreadable bookkeeping helps nobody
      cursors.erase(name);
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
        cursors.erase(name);
        update->set_cursors[d.Key()] = cursors[d.Key()] = r.cursor.dump();
        spdlog::info("github failed item recovered discussion={} attempts={}", d.Key(), JsonInt(item, "attempts"));
        break;
      case ReadOutcome::Kind::kGone:
        MarkGone(engine_, d);
        update->erase_cursors.push_back(name);
        cursors.erase(name);
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
          cursors.erase(name);
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

NotificationListing SortNotifications(const json& page) {
  NotificationListing out;
  if (!page.is_array()) return out;
  std::set<std::string> seen;
  for (const json& n : page) {
    TimeMs updated = 0;
    if (TimeField(n, "updated_at", &updated)) out.newest = std::max(out.newest, updated);
    // A notification GitHub sent wrong (a field null or of another type) is skipped and counted
    // (SPEC §3.2); the rest of the page is read.
    auto full_name = json_read::String(n, "repository.full_name");
    auto type = json_read::String(n, "subject.type");
    auto subject_url = json_read::OptString(n, "subject.url");  // CI notifications carry none
    if (!full_name.ok() || !type.ok() || !subject_url.ok()) {
      const Status why = !full_name.ok() ? full_name.status() : !type.ok() ? type.status() : subject_url.status();
      spdlog::warn("github notification skipped id={} reason=\"{}\"", text::Cut(json_read::StringOr(n, "id", "?"), 80),
                   why.message());
      ++out.skipped;
      continue;
    }
    // CI notifications carry no URL; default-branch CI has its own path.
    if (*type != "Issue" && *type != "PullRequest") continue;
    if (!github_threads::IsRepositoryName(*full_name)) {
      ++out.skipped;
      continue;
    }
    Discussion d;
    d.repo = *full_name;
    d.pull = *type == "PullRequest";
    const std::string& url = *subject_url;
    auto slash = url.find_last_of('/');
    if (slash != std::string::npos) d.number = std::atoll(url.c_str() + slash + 1);
    if (d.number <= 0) {
      ++out.skipped;
      continue;
    }
    const std::string repo = github_threads::Canonical(*full_name);
    if (seen.insert(repo + ":" + d.Key()).second) out.by_repository[repo].push_back(d);
  }
  return out;
}

void Source::ReadNotifiedDiscussions(const std::vector<Discussion>& notified, TimeMs since,
                                     std::map<std::string, std::string>& cursors, SourceUpdate* update,
                                     std::set<std::string>* read, RoundReport* report) {
  const TimeMs now = clock_->NowMs();
  for (Discussion d : notified) {
    d.repo = options_.repo;  // the configured spelling: the listing's may differ in case
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
        spdlog::warn("github discussion read failed, kept for retry discussion={} repo={} error=\"{}\"", d.Key(),
                     options_.repo, out.error);
        break;
      }
    }
  }
}

bool Source::ReadNotified(const std::vector<Discussion>& notified, TimeMs since, RoundReport* report) {
  std::lock_guard<std::mutex> round(round_mu_);
  if (!EnsureIdentity(report)) return false;  // without it, its own messages could not be told apart
  auto stored = views_->SourceCursors(source_name_);
  if (!stored.ok()) {
    if (report) report->errors.push_back("cursors not read: " + stored.status().message());
    return false;
  }
  auto cursors = std::move(*stored);
  std::set<std::string> read;
  SourceUpdate u;
  u.source = source_name_;
  u.path = "notifications";
  ReadNotifiedDiscussions(notified, since, cursors, &u, &read, report);
  if (Status s = Report(u); !s.ok()) {
    spdlog::error("github notified discussions update failed repo={}: {}", options_.repo, s.ToString());
    if (report) report->errors.push_back(s.ToString());
    return false;
  }
  return true;
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
  NotificationListing listing = SortNotifications(r.body);
  // Other repositories the account hears about are not this Source's business.
  auto mine = listing.by_repository.find(github_threads::Canonical(options_.repo));
  if (mine != listing.by_repository.end()) ReadNotifiedDiscussions(mine->second, since, cursors, update, read, report);
  update->skipped += listing.skipped;
  if (report) report->skipped += listing.skipped;
  // Only a thread newer than any seen moves the cursor: the overlap brings the last ones back,
  // and an unchanged URL lets the next poll be a free 304.
  if (listing.newest > newest_before) {
    global["since"] = IsoSeconds(read_start - options_.overlap_ms);
    global["newest"] = listing.newest;
  }
  update->set_cursors["notifications"] = cursors["notifications"] = global.dump();
}

}  // namespace superagent::github
