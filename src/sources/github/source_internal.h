// Source's private record types, shared by the poller (source.cpp, source_repo.cpp) and the
// webhook receiver; and the poller's helpers (namespace polling), shared by its two files.
#pragma once

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "superagent/engine.h"
#include "superagent/github.h"
#include "superagent/json_read.h"
#include "sources/github/normalize.h"
#include "sources/intake.h"

namespace httplib { class Server; }

namespace superagent::github {

// POST /hooks/github on `server`, each delivery answered by `handle`: its status, and
// {"status", "message"} as JSON (one Source's, or the Integration's for every repository).
void InstallWebhookHandler(httplib::Server& server, std::function<WebhookReply(const WebhookRequest&)> handle);

// Every delivery refused for its proof gets this one answer: a sender cannot learn which check
// failed, and the reply holds nothing it sent.
inline const WebhookReply kRefusedDelivery{401, "refused: the delivery is not signed with this webhook's secret"};

// Constant-time check of an X-Hub-Signature-256 header against the raw body.
bool VerifyWebhookSignature(const std::string& secret, const std::string& body, const std::string& header);

// How reading one discussion went.
struct Source::ReadOutcome {
  enum class Kind { kOk, kGone, kError } kind = Kind::kOk;
  std::string error;
  bool not_found = false;  // kError from a 404: a tracked pull request's is skipped, not a failure
  nlohmann::json cursor;  // the discussion's new cursor (kOk)
  int skipped = 0;        // malformed items skipped, for the path's health
};

// What a path's intake produced beyond the Engine's own records.
// `fresh` (sources::ReadTally): only items not seen before move a cursor, so re-reading the
// overlap leaves URLs unchanged and the next read is a free 304.
struct Source::Intake : sources::ReadTally {
  std::vector<std::pair<Discussion, TimeMs>> addressed;  // discussions to follow from now on
  bool any = false;                                      // at least one item was read
};

// The account's notifications listing sorted out (SPEC §3.3): the discussions its Issue and
// PullRequest threads point at, by repository (github_threads::Canonical), each once, in the
// listing's order. Other threads (CI, releases) are left out; malformed ones are counted in
// `skipped` and logged. `newest`: the newest updated_at of any thread, for the cursor.
struct NotificationListing {
  std::map<std::string, std::vector<Discussion>> by_repository;
  int skipped = 0;
  TimeMs newest = 0;
};
NotificationListing SortNotifications(const nlohmann::json& page);

// The poller's helpers: cursors are JSON objects saved as text, times are GitHub's.
namespace polling {

using nlohmann::json;

inline constexpr const char* kSource = "github";
inline constexpr TimeMs kMinNotificationIntervalMs = 60'000;  // SPEC §3.3: never faster than 60 s
inline constexpr TimeMs kDefaultBranchReadMs = 3'600'000;  // the repository's default branch, asked hourly
inline constexpr int kLowBudget = 100;  // below this many requests left, only what people wait for is read

inline json ParseCursor(const std::map<std::string, std::string>& cursors, const std::string& name) {
  auto it = cursors.find(name);
  if (it == cursors.end()) return json::object();
  json j = json::parse(it->second, nullptr, false);
  return j.is_object() ? j : json::object();
}

// A time field of an outside (or saved) object; false when absent, of another type or unparsable.
inline bool TimeField(const json& j, const char* key, TimeMs* out) {
  const json* v = json_read::Find(j, key);
  return v != nullptr && v->is_string() && ParseTime(v->get<std::string>(), out);
}

inline TimeMs CursorSince(const json& c, TimeMs fallback) {
  TimeMs t = 0;
  return TimeField(c, "since", &t) ? t : fallback;
}

inline std::int64_t JsonInt(const json& c, const char* key, std::int64_t fallback = 0) { return json_read::IntOr(c, key, fallback); }

inline bool JsonBool(const json& c, const char* key) { return json_read::BoolOr(c, key); }

inline std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

// The moment a read began, on GitHub's clock when it said (cursors compare with GitHub's times).
inline TimeMs ReadStart(const ApiResponse& r, TimeMs local) { return r.server_time > 0 ? std::min(r.server_time, local) : local; }

inline bool IsGone(const ApiResponse& r) { return r.status == 410; }


inline void MarkGone(Engine* engine, const Discussion& d) {
  Status s = engine->MarkThreadDeleted(d.Thread(), "GitHub answered 410 Gone");
  if (!s.ok() && s.code() != Status::Code::kNotFound)
    spdlog::error("github mark deleted discussion={} failed: {}", d.Key(), s.ToString());
  spdlog::info("github discussion deleted discussion={}", d.Key());
}

inline json DeletedCursor(TimeMs now) { return json{{"deleted", true}, {"deleted_at", now}}; }

}  // namespace polling

}  // namespace superagent::github
