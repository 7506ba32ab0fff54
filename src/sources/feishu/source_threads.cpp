// The Feishu Source's thread path (SPEC §3.4 read path 3, §3.5): the topics it follows — an open
// Ticket's every round, others by how lately they were active, for 14 days after their activity or
// their Ticket's end — and the topics opened later on an open Ticket's request or on what the
// daemon posted for it, which no listing shows (issue 34).
#include <algorithm>

#include <spdlog/spdlog.h>

#include "superagent/feishu.h"
#include "superagent/json_read.h"
#include "superagent/metrics.h"

#include "sources/feishu/source_internal.h"

namespace superagent::feishu {

using nlohmann::json;
using namespace polling;

// What FindLateThreads learned for this round's thread reads.
struct Source::LateThreads {
  std::set<std::string> open;   // topics grown on an open Ticket's message: due every round
  std::set<std::string> found;  // of those, found this round: read first, in this round
  int checked = 0, failed = 0, deferred = 0;
  std::size_t cap = 0;
  std::string first_error;
};

void Source::FindLateThreads(std::map<std::string, std::string>* cursors, SourceUpdate* u, LateThreads* late,
                             RoundReport* report) {
  auto fail = [&](const std::string& error) {
    ++late->failed;
    if (late->first_error.empty()) late->first_error = error;
    if (report) report->errors.push_back(error);
  };
  // Unread, the open Tickets' messages are not "none": the round says it could not look.
  auto listed = views_->OpenTicketMessages("feishu:");
  if (!listed.ok()) {
    fail("open tickets' messages not read: " + listed.status().message());
    return;
  }
  // A topic whose root is known (seen by any path, or found by an earlier lookup) needs no lookup.
  std::map<std::string, std::string> topic_on;  // message id → the topic grown on it
  for (const auto& [name, value] : *cursors) {
    if (name.rfind("thread:", 0) != 0) continue;
    const std::string root = json_read::StringOr(ParseCursor(*cursors, name), "root");
    if (!root.empty()) topic_on[root] = name.substr(7);
  }
  std::vector<Candidate> ask;
  std::set<std::string> held;  // every message an open Ticket still holds
  for (const TicketMessage& m : *listed) {
    for (Candidate& c : CandidatesOf(m)) {
      if (!held.insert(c.message_id).second) continue;
      if (auto it = topic_on.find(c.message_id); it != topic_on.end()) {
        late->open.insert(it->second);
        continue;
      }
      if (!gone_.count(c.message_id)) ask.push_back(std::move(c));
    }
  }
  // What no open Ticket holds any more is forgotten, so this memory stays as small as the work.
  std::erase_if(looked_up_, [&](const auto& e) { return !held.count(e.first); });
  std::erase_if(gone_, [&](const std::string& id) { return !held.count(id); });
  // A topic may be opened on any of them at any time, so each is asked again every round until
  // one has a topic; with more than the cap, the least lately asked go first (never asked: first).
  auto turn = [&](const Candidate& c) {
    auto it = looked_up_.find(c.message_id);
    return it == looked_up_.end() ? std::int64_t{0} : it->second;
  };
  std::stable_sort(ask.begin(), ask.end(), [&](const Candidate& a, const Candidate& b) { return turn(a) < turn(b); });
  late->cap = static_cast<std::size_t>(std::max(1, options_.message_checks_per_round));
  if (ask.size() > late->cap) {
    late->deferred = static_cast<int>(ask.size() - late->cap);
    ask.resize(late->cap);
    spdlog::info("feishu message lookups deferred count={} cap={}", late->deferred, late->cap);
  }
  for (const Candidate& c : ask) {
    looked_up_[c.message_id] = ++lookup_turn_;
    ++late->checked;
    auto tid = client_->MessageThread(c.message_id);
    if (!tid.ok() && tid.status().code() == Status::Code::kNotFound) {
      gone_.insert(c.message_id);
      spdlog::info("feishu message gone ticket={} message={} kind=\"{}\" error=\"{}\"", c.ticket, c.message_id, c.kind,
                   tid.status().message());
      continue;
    }
    if (!tid.ok()) {
      // This message's lookup alone failed: the others go on, and it is asked again next round.
      fail(c.message_id + ": " + tid.status().message());
      spdlog::warn("feishu message lookup failed ticket={} message={} error=\"{}\"", c.ticket, c.message_id,
                   tid.status().message());
      continue;
    }
    if (tid->empty()) continue;
    // A topic was opened on it since: followed from that message on, read in this round, and due
    // every round while the Ticket is open (its root is this message).
    const std::string name = "thread:" + *tid;
    json cur = ParseCursor(*cursors, name);
    if (cur.is_null()) cur = json{{"since", c.at - options_.overlap_ms}, {"chat_id", c.chat_id}, {"last_activity", c.at}};
    cur["root"] = c.message_id;
    (*cursors)[name] = cur.dump();
    u->set_cursors[name] = cur.dump();
    late->open.insert(*tid);
    late->found.insert(*tid);
    spdlog::info("feishu topic found on a ticket's message ticket={} message={} kind=\"{}\" thread={}", c.ticket,
                 c.message_id, c.kind, *tid);
  }
  if (report) {
    report->messages_checked += late->checked;
    report->messages_failed += late->failed;
    report->messages_deferred += late->deferred;
    report->late_threads_found += static_cast<int>(late->found.size());
  }
}

void Source::PollThreads(RoundReport* report) {
  auto read = CursorsOrReport(views_, report);
  if (!read) return;
  auto cursors = std::move(*read);
  const TimeMs now = clock_->NowMs();
  // Unread, the open Tickets' threads are not "none": this round reads no thread and says why.
  auto open = views_->OpenTicketThreads("feishu:thread:");
  if (!open.ok()) {
    report->errors.push_back("open tickets' threads not read: " + open.status().message());
    return;
  }
  SourceUpdate u;
  u.source = kSource;
  u.path = "threads";
  // Topics opened later on the open Tickets' own messages (issue 34) join the open Tickets' topics.
  LateThreads late;
  FindLateThreads(&cursors, &u, &late, report);
  // Which threads are due: an open Ticket's every round; a followed one by how lately it was
  // active, so a busy chat's old topics cost little. The cap takes the topics just found first (a
  // reply is likely waiting there), then the open Tickets', then those waiting longest; the rest
  // are deferred to the next round (and said so in the health).
  struct Due {
    std::string tid;
    bool open = false;
    TimeMs last_polled = 0;
    bool found = false;
  };
  std::map<std::string, Due> due;
  for (const std::string& key : *open) due[key.substr(14)] = Due{key.substr(14), true, 0};
  for (const std::string& tid : late.open) due[tid] = Due{tid, true, 0, late.found.count(tid) > 0};
  int followed = static_cast<int>(due.size());
  // A topic whose Ticket ended lately is followed for the window after that end too (SPEC §3.5).
  std::map<std::string, TimeMs> ended_at;
  if (auto ended = views_->EndedTicketThreads("feishu:thread:", now - options_.follow_window_ms); !ended.ok()) {
    spdlog::warn("feishu ended tickets' threads not read error=\"{}\"", ended.status().message());
  } else {
    for (const auto& [thread, at] : *ended) ended_at[thread.substr(14)] = at;
  }
  std::vector<std::string> expired;  // quiet past the window: no longer followed, so forgotten
  for (const auto& [name, value] : cursors) {
    if (name.rfind("thread:", 0) != 0) continue;
    json c = ParseCursor(cursors, name);
    const std::string tid = name.substr(7);
    const auto end = ended_at.find(tid);
    const TimeMs idle = now - std::max(Int(c, "last_activity"), end == ended_at.end() ? 0 : end->second);
    const TimeMs polled = Int(c, "last_polled");
    auto it = due.find(tid);
    if (it != due.end()) {
      it->second.last_polled = polled;
      continue;
    }
    // Activity, not polling, keeps a thread followed: `since` moves with every read. A topic
    // quiet past the window is forgotten, so the cursors stay as many as the topics followed; a
    // later reply seen by realtime follows it again from that reply on (NoteChat).
    if (idle > options_.follow_window_ms) {
      expired.push_back(name);
      continue;
    }
    ++followed;
    // A thread whose last read failed is due again at once: its health is not "ok" until it is read.
    const TimeMs every = c.contains("pollError") || idle <= 3'600'000 ? 0 : idle <= 24 * 3'600'000LL ? 600'000 : 3'600'000;
    if (now - polled >= every) due[tid] = Due{tid, false, polled};
  }
  const bool looked = late.checked > 0 || late.failed > 0 || late.deferred > 0;
  if (followed == 0 && !looked) {
    if (expired.empty()) return;
    SourceUpdate forget;
    forget.source = kSource;
    forget.erase_cursors = expired;
    spdlog::info("feishu threads no longer followed count={}", expired.size());
    if (Status s = Report(forget); !s.ok()) spdlog::error("feishu cursor update failed: {}", s.ToString());
    return;
  }
  std::vector<Due> order;
  for (auto& [tid, d] : due) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [](const Due& a, const Due& b) {
    if (a.found != b.found) return a.found;
    if (a.open != b.open) return a.open;
    return a.last_polled < b.last_polled;
  });
  const std::size_t cap = static_cast<std::size_t>(std::max(1, options_.thread_reads_per_round));
  const std::size_t deferred = order.size() > cap ? order.size() - cap : 0;
  if (deferred) order.resize(cap);
  u.erase_cursors = expired;
  if (!expired.empty()) spdlog::info("feishu threads no longer followed count={}", expired.size());
  u.note = "following " + std::to_string(followed) + " topic thread(s); read " + std::to_string(order.size()) +
           " this round" +
           (deferred ? ", " + std::to_string(deferred) + " due ones deferred to the next (thread_reads_per_round " +
                           std::to_string(cap) + ")"
                     : "");
  if (looked) {
    u.note += "; looked up " + std::to_string(late.checked) + " open Ticket message(s) for a topic opened since";
    if (!late.found.empty()) u.note += ", found " + std::to_string(late.found.size());
    if (late.failed) u.note += ", " + std::to_string(late.failed) + " failed";
    if (late.deferred)
      u.note += ", " + std::to_string(late.deferred) + " deferred to the next (" + std::to_string(late.cap) + " a round)";
  }
  if (deferred) spdlog::info("feishu thread reads deferred count={} cap={}", deferred, cap);
  if (report) report->threads_deferred = static_cast<int>(deferred);
  int failed = 0;
  std::string first_error;
  for (const Due& d : order) {
    const std::string& tid = d.tid;
    json c = ParseCursor(cursors, "thread:" + tid);
    if (c.is_null()) c = json::object();
    const TimeMs since = Int(c, "since", 0);
    const TimeMs read_start = clock_->NowMs();
    // A topic in a direct chat is read as one: its messages are the direct chat's.
    const bool direct = Bool(ParseCursor(cursors, "chat:" + json_read::StringOr(c, "chat_id")), "direct");
    Intake intake;
    Status s = ReadThread(tid, since, direct, &intake, report);
    u.skipped += intake.skipped;
    if (s.ok()) {
      if (report) ++report->threads_read;
      c["since"] = read_start - options_.overlap_ms;
      c["last_activity"] = std::max(Int(c, "last_activity"), intake.last_activity);
      c.erase("pollError");
    } else {
      if (report) {
        ++report->threads_failed;
        report->errors.push_back(tid + ": " + s.message());
      }
      ++failed;
      if (first_error.empty()) first_error = tid + ": " + s.message();
      c["pollError"] = json{{"message", s.message()}, {"at", now}};
      spdlog::warn("feishu thread poll failed thread={} error=\"{}\"", tid, s.message());
    }
    c["last_polled"] = now;
    u.set_cursors["thread:" + tid] = c.dump();
  }
  u.ok = failed == 0 && late.failed == 0;
  if (failed) u.error = std::to_string(failed) + " thread(s) failed, first " + first_error;
  if (late.failed)
    u.error += (u.error.empty() ? "" : "; ") + std::to_string(late.failed) + " message lookup(s) failed, first " +
               late.first_error;
  if (Status s = Report(u); !s.ok()) spdlog::error("feishu threads update failed: {}", s.ToString());
}

}  // namespace superagent::feishu
