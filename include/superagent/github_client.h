// GitHub's REST client: auth, pagination (Link), conditional requests (ETag / Last-Modified, so
// an unchanged answer is a free 304), rate limits (x-ratelimit-*, Retry-After) and retries with
// backoff, over the HttpClient seam. The Source, the Channel and the App's tokens all call
// through it (github.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/http.h"
#include "superagent/status.h"

namespace superagent::github {

// Waits `ms` milliseconds. Injected so tests advance a FakeClock instead of sleeping, and so the
// daemon can cut a wait short on shutdown.
using Sleeper = std::function<void(TimeMs ms)>;

// ---------------------------------------------------------------------------------------------
// Client

struct ClientOptions {
  std::string api_url = "https://api.github.com";  // base for relative paths; no trailing slash needed
  std::string token;                               // sent as a Bearer token; never logged
  // A GitHub App's installation token (issue 25), asked for before each request because it
  // expires hourly; when set, `token` is ignored. An error fails the request unsent.
  std::function<Result<std::string>()> token_source;
  // Called when GitHub answers 401 to a token_source token; the request is then sent once more
  // with a fresh one. A 401 means GitHub did nothing, so even a write is not doubled.
  std::function<void()> token_rejected;
  std::string user_agent = "superagent";           // GitHub rejects requests without one
  std::string api_version = "2022-11-28";          // X-GitHub-Api-Version
  long timeout_ms = 30'000;
  TimeMs backoff_initial_ms = 1'000;       // 5xx / network retry: 1 s, 2 s, 4 s … (idempotent requests only)
  TimeMs backoff_max_ms = 30'000;
  TimeMs secondary_wait_ms = 60'000;       // secondary rate limit without Retry-After: wait ≥ 60 s, doubling
  std::size_t cache_entries = 2'000;       // conditional-request cache (URL → validators + body)
  int max_pages = 30;                      // pagination bound per listing
  // At most this many requests leave in any 60 s (0: no bound); one more waits, through the
  // sleeper, for the oldest to fall out of the minute. GitHub's secondary limit is 900 REST
  // points a minute per account, a GET costing one and a 304 too: the pollers of every
  // repository share one client so that one bound holds for all of them (issue 37).
  int max_requests_per_minute = 0;
  // When it becomes true, a request in flight is abandoned and none is retried (the poller's
  // client, at shutdown: a hanging GitHub must not hold `systemctl stop`). Must outlive the Client.
  const std::atomic<bool>* cancel = nullptr;
};

// How one call may spend time: rate-limit waits up to `max_wait_ms` are slept through (longer
// ones fail fast as rate_limited, with retry_at); `attempts` bounds 5xx / network retries.
struct CallOptions {
  TimeMs max_wait_ms = 0;
  int attempts = 1;
};

struct ApiResponse {
  int status = 0;              // last HTTP status (304 when served from the cache); 0 = no answer
  std::string error;           // empty on success (2xx or 304); never contains the token
  nlohmann::json body;         // parsed JSON; for GetAll the items of every page
  bool not_modified = false;   // every page answered 304: nothing changed since the last read
  bool rate_limited = false;   // refused for rate limits; retry_at says when to come back
  TimeMs retry_at = 0;         // absolute time …
  TimeMs retry_after_ms = 0;   // … and the same as a wait from when the answer came
  TimeMs server_time = 0;      // the response's Date header (0 when absent)
  std::map<std::string, std::string> headers;  // last response's headers, names lower-cased
  std::string next_url;        // Link rel="next" of the last page read, "" when none
  bool ok() const { return error.empty(); }
  std::string Header(const std::string& name) const;
};

// What the client knows about GitHub's primary rate limit from the last answers.
struct RateBudget {
  int limit = -1, remaining = -1;  // -1 until a response said
  TimeMs reset_at = 0;
  TimeMs blocked_until = 0;        // no request leaves before this (primary or secondary limit)
  std::int64_t requests = 0;       // requests sent
  std::int64_t not_modified = 0;   // of which answered 304 (free)
  // Answers other than 304 in the hour before the Budget() call: what counted against GitHub's
  // primary limit, by this client's own count (github.request_budget_per_hour bounds it).
  std::int64_t counted_last_hour = 0;
};

class Client {
 public:
  // `http`, `clock` must outlive the Client. Thread-safe.
  Client(HttpClient* http, Clock* clock, Sleeper sleeper, ClientOptions options);

  // GET with conditional validators from earlier answers to the same URL; a 304 returns the
  // cached body with not_modified set. `path_or_url` is "/repos/…" or an absolute URL (Link).
  ApiResponse Get(const std::string& path_or_url, CallOptions call = {});
  // GET every page (Link rel="next"), concatenating arrays. `items_key` names the array inside
  // an object answer ({"workflow_runs": […]}); empty means the answer is the array itself.
  ApiResponse GetAll(const std::string& path_or_url, const std::string& items_key = "", CallOptions call = {});
  // A write (POST/PATCH/PUT/DELETE) with a JSON body. Never retried on 5xx or timeouts: whether
  // it reached GitHub is unknown, and only the caller can look (receipt markers).
  ApiResponse Send(const std::string& method, const std::string& path, const nlohmann::json& body,
                   CallOptions call = {});

  RateBudget Budget() const;
  const ClientOptions& options() const { return options_; }

 private:
  struct CacheEntry {
    std::string etag, last_modified, link;
    nlohmann::json body;
    std::uint64_t used = 0;
  };
  ApiResponse Perform(const std::string& method, const std::string& url, const std::string& body, bool conditional,
                      CallOptions call);
  std::string Absolute(const std::string& path_or_url) const;

  HttpClient* http_;
  Clock* clock_;
  Sleeper sleeper_;
  ClientOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, CacheEntry> cache_;
  std::uint64_t tick_ = 0;
  RateBudget budget_;
  std::deque<TimeMs> sent_;     // when requests ended, within the last minute (max_requests_per_minute)
  std::deque<TimeMs> counted_;  // times of answers other than 304 within the last hour
  int secondary_hits_ = 0;
};

// The rel="next" URL of a Link header, "" when there is none.
std::string NextLink(const std::string& link_header);
// HTTP-date (RFC 7231, "Tue, 10 Oct 2017 16:00:00 GMT") → ms; false when malformed.
bool ParseHttpDate(const std::string& text, TimeMs* out);
// Percent-encodes a query parameter value (branch names may hold '/' or '+').
std::string QueryValue(const std::string& value);
// ISO 8601 without fractions ("2026-01-01T00:00:00Z"), the form GitHub's `since` takes.
std::string IsoSeconds(TimeMs t);

}  // namespace superagent::github
