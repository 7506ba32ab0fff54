// GitHub REST client: one place that knows GitHub's wire conventions (auth, API version, Link
// pagination, conditional requests, rate limits, retries), so the poller and the channel only
// speak in paths and JSON.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

#include <spdlog/spdlog.h>

#include "superagent/clock.h"
#include "superagent/github.h"
#include "superagent/text.h"

namespace superagent::github {

using nlohmann::json;

namespace {

bool ParseInt64(const std::string& s, std::int64_t* out) {
  if (s.empty()) return false;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// The path part of a URL, for log lines and errors (never the query: it may carry cursors only,
// but keep lines short).
std::string PathOf(const std::string& url) {
  auto scheme = url.find("://");
  auto start = scheme == std::string::npos ? 0 : url.find('/', scheme + 3);
  if (start == std::string::npos) return "/";
  auto q = url.find('?', start);
  return url.substr(start, q == std::string::npos ? std::string::npos : q - start);
}

// scheme://host[:port] of a URL, lower-cased; "" when it has none.
std::string OriginOf(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  const auto end = url.find_first_of("/?#", scheme + 3);
  return text::AsciiLower(url.substr(0, end));
}

// GitHub's error text: "message", plus each of "errors" (their own message, or resource/field/code),
// e.g. "Validation Failed (A pull request already exists for o:b.)".
std::string GitHubMessage(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return "";
  std::string out = j.contains("message") && j["message"].is_string() ? j["message"].get<std::string>() : "";
  if (j.contains("errors") && j["errors"].is_array()) {
    std::string details;
    for (const json& e : j["errors"]) {
      std::string d;
      if (e.is_string()) {
        d = e.get<std::string>();
      } else if (e.is_object()) {
        if (e.contains("message") && e["message"].is_string()) {
          d = e["message"].get<std::string>();
        } else {
          for (const char* k : {"resource", "field", "code"})
            if (e.contains(k) && e[k].is_string()) d += (d.empty() ? "" : " ") + e[k].get<std::string>();
        }
      }
      if (!d.empty()) details += (details.empty() ? "" : "; ") + d;
    }
    if (!details.empty()) out += " (" + details + ")";
  }
  return out;
}

bool IsRateLimitMessage(const std::string& message) {
  std::string m = text::AsciiLower(message);
  return m.find("rate limit") != std::string::npos;
}

}  // namespace

std::string ApiResponse::Header(const std::string& name) const {
  auto it = headers.find(text::AsciiLower(name));
  return it == headers.end() ? "" : it->second;
}

std::string NextLink(const std::string& link) {
  // <url>; rel="next", <url>; rel="last"
  std::size_t pos = 0;
  while (pos < link.size()) {
    auto lt = link.find('<', pos);
    if (lt == std::string::npos) break;
    auto gt = link.find('>', lt);
    if (gt == std::string::npos) break;
    auto comma = link.find(",", gt);
    std::string params = link.substr(gt + 1, comma == std::string::npos ? std::string::npos : comma - gt - 1);
    if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos)
      return link.substr(lt + 1, gt - lt - 1);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return "";
}

bool ParseHttpDate(const std::string& text, TimeMs* out) {
  // "Tue, 10 Oct 2017 16:00:00 GMT"
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char wday[4] = {}, mon[4] = {}, zone[4] = {};
  int day = 0, year = 0, h = 0, m = 0, s = 0;
  if (std::sscanf(text.c_str(), "%3s, %d %3s %d %d:%d:%d %3s", wday, &day, mon, &year, &h, &m, &s, zone) != 8)
    return false;
  int month = -1;
  for (int i = 0; i < 12; ++i)
    if (std::string(mon) == kMonths[i]) month = i + 1;
  if (month < 0 || std::string(zone) != "GMT") return false;
  char iso[64];
  std::snprintf(iso, sizeof iso, "%04d-%02d-%02dT%02d:%02d:%02dZ", year, month, day, h, m, s);
  return ParseTime(iso, out);
}

std::string QueryValue(const std::string& value) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == ':') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string IsoSeconds(TimeMs t) {
  std::string f = FormatTime(t);  // 2026-01-01T00:00:00.000Z
  return f.substr(0, 19) + "Z";
}

Client::Client(HttpClient* http, Clock* clock, Sleeper sleeper, ClientOptions options)
    : http_(http), clock_(clock), sleeper_(std::move(sleeper)), options_(std::move(options)) {
  while (!options_.api_url.empty() && options_.api_url.back() == '/') options_.api_url.pop_back();
}

std::string Client::Absolute(const std::string& p) const {
  if (p.rfind("http://", 0) == 0 || p.rfind("https://", 0) == 0) return p;
  return options_.api_url + (p.empty() || p[0] != '/' ? "/" : "") + p;
}

namespace {
constexpr TimeMs kMinuteMs = 60'000, kHourMs = 3'600'000;
constexpr std::size_t kCountedKept = 100'000;  // a bound on memory; no budget asks for more an hour
}  // namespace

RateBudget Client::Budget() const {
  const TimeMs since = clock_->NowMs() - kHourMs;
  std::lock_guard<std::mutex> lock(mu_);
  RateBudget b = budget_;
  b.counted_last_hour =
      static_cast<std::int64_t>(counted_.end() - std::upper_bound(counted_.begin(), counted_.end(), since));
  return b;
}

ApiResponse Client::Get(const std::string& path_or_url, CallOptions call) {
  return Perform("GET", Absolute(path_or_url), "", true, call);
}

ApiResponse Client::Send(const std::string& method, const std::string& path, const json& body, CallOptions call) {
  call.attempts = 1;  // a write is never repeated blindly
  return Perform(method, Absolute(path), body.is_null() ? "" : body.dump(), false, call);
}

ApiResponse Client::GetAll(const std::string& path_or_url, const std::string& items_key, CallOptions call) {
  ApiResponse all;
  all.body = json::array();
  all.not_modified = true;
  std::string url = Absolute(path_or_url);
  for (int page = 0; page < options_.max_pages && !url.empty(); ++page) {
    ApiResponse r = Perform("GET", url, "", true, call);
    all.status = r.status;
    all.headers = r.headers;
    all.rate_limited = r.rate_limited;
    all.retry_at = r.retry_at;
    all.retry_after_ms = r.retry_after_ms;
    if (page == 0) all.server_time = r.server_time;
    if (!r.ok()) {
      all.error = r.error;
      all.not_modified = false;
      return all;
    }
    all.not_modified = all.not_modified && r.not_modified;
    const json* items = &r.body;
    if (!items_key.empty()) {
      if (!r.body.is_object() || !r.body.contains(items_key)) {
        all.error = "GET " + PathOf(url) + ": answer has no \"" + items_key + "\" list";
        all.not_modified = false;
        return all;
      }
      items = &r.body[items_key];
    }
    if (!items->is_array()) {
      all.error = "GET " + PathOf(url) + ": answer is not a list";
      all.not_modified = false;
      return all;
    }
    for (const json& item : *items) all.body.push_back(item);
    url = r.next_url;
    all.next_url = r.next_url;
  }
  return all;
}

ApiResponse Client::Perform(const std::string& method, const std::string& original_url, const std::string& body,
                            bool conditional, CallOptions call) {
  ApiResponse out;
  std::string url = original_url;
  const int attempts = std::max(1, call.attempts);
  int attempt = 0;
  int redirects = 0;
  int rate_waits = 0;
  bool reauthorized = false;
  while (true) {
    // A standing block (primary limit exhausted, secondary limit hit) keeps requests home.
    TimeMs blocked_until = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocked_until = budget_.blocked_until;
    }
    TimeMs now = clock_->NowMs();
    if (blocked_until > now) {
      if (blocked_until - now > call.max_wait_ms) {
        out.rate_limited = true;
        out.retry_at = blocked_until;
        out.retry_after_ms = blocked_until - now;
        out.error = method + " " + PathOf(url) + ": rate limited until " + FormatTime(blocked_until);
        return out;
      }
      spdlog::info("github rate limit: waiting {} ms before {} {}", blocked_until - now, method, PathOf(url));
      sleeper_(blocked_until - now);
      // A sleep cut short (shutdown) must not become a request GitHub asked us not to send.
      now = clock_->NowMs();
      if (blocked_until > now) {
        out.rate_limited = true;
        out.retry_at = blocked_until;
        out.retry_after_ms = blocked_until - now;
        out.error = method + " " + PathOf(url) + ": rate limited until " + FormatTime(blocked_until);
        return out;
      }
    }

    if (options_.cancel != nullptr && options_.cancel->load()) {
      out.error = method + " " + PathOf(url) + ": not sent, shutting down";
      return out;
    }
    // Our own pace (max_requests_per_minute): a full minute waits for its oldest request to
    // age out, so a round over many repositories never bursts into GitHub's secondary limit.
    if (options_.max_requests_per_minute > 0) {
      TimeMs pace_wait = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        // A whole millisecond more than a minute: the clock counts whole milliseconds, GitHub's
        // minute does not.
        while (!sent_.empty() && sent_.front() + kMinuteMs < now) sent_.pop_front();
        if (sent_.size() >= static_cast<std::size_t>(options_.max_requests_per_minute))
          pace_wait = sent_.front() + kMinuteMs + 1 - now;
      }
      if (pace_wait > 0) {
        sleeper_(pace_wait);
        if (clock_->NowMs() == now) {  // a sleep cut short (shutdown): nothing waited, nothing sent
          out.error = method + " " + PathOf(url) + ": not sent, its minute's requests are spent";
          return out;
        }
        continue;  // the block, the cancel flag and the pace are looked at again
      }
    }
    // The token goes to github.api_url and nowhere else: a next-page link, a redirect or a URL
    // in an answer that points at another host (a peer that lies, a proxy that rewrites) is
    // not followed, whatever its scheme.
    if (OriginOf(url) != OriginOf(options_.api_url)) {
      out = ApiResponse{};
      out.error = method + " " + PathOf(url) + ": not sent: the URL is on " +
                  (OriginOf(url).empty() ? std::string("no host") : OriginOf(url)) + ", not github.api_url (" +
                  OriginOf(options_.api_url) + ")";
      spdlog::warn("github request refused request=\"{} {}\" reason=\"{}\"", method, PathOf(url), out.error);
      return out;
    }
    HttpRequest req;
    req.method = method;
    req.url = url;
    req.timeout_ms = options_.timeout_ms;
    req.cancel = options_.cancel;
    req.headers = {{"Accept", "application/vnd.github+json"},
                   {"X-GitHub-Api-Version", options_.api_version},
                   {"User-Agent", options_.user_agent}};
    std::string token = options_.token;
    if (options_.token_source) {
      Result<std::string> fresh = options_.token_source();
      if (!fresh.ok()) {
        out = ApiResponse{};
        out.error = method + " " + PathOf(url) + ": not sent, no installation token: " + fresh.status().message();
        return out;
      }
      token = *fresh;
    }
    if (!token.empty()) req.headers.emplace_back("Authorization", "Bearer " + token);
    if (!body.empty()) {
      req.body = body;
      req.headers.emplace_back("Content-Type", "application/json");
    }
    if (conditional) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(url);
      if (it != cache_.end()) {
        if (!it->second.etag.empty()) req.headers.emplace_back("If-None-Match", it->second.etag);
        if (!it->second.last_modified.empty()) req.headers.emplace_back("If-Modified-Since", it->second.last_modified);
      }
    }

    HttpResponse resp = http_->Send(req);
    now = clock_->NowMs();
    // Counted when it ends, not when it left: GitHub saw it somewhere in between, so a minute of
    // ends holds every request GitHub saw in that minute.
    if (options_.max_requests_per_minute > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      sent_.push_back(now);
    }
    out = ApiResponse{};
    out.status = resp.status;
    out.headers = resp.headers;
    TimeMs date = 0;
    if (ParseHttpDate(resp.Header("date"), &date)) out.server_time = date;

    // Bookkeeping of the primary limit, from every answer that carries it.
    std::int64_t remaining = -1, limit = -1, reset = -1, retry_after = -1;
    bool has_remaining = ParseInt64(resp.Header("x-ratelimit-remaining"), &remaining);
    ParseInt64(resp.Header("x-ratelimit-limit"), &limit);
    bool has_reset = ParseInt64(resp.Header("x-ratelimit-reset"), &reset);
    bool has_retry_after = ParseInt64(resp.Header("retry-after"), &retry_after);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (resp.status != 0) ++budget_.requests;
      if (resp.status == 304) ++budget_.not_modified;
      if (resp.status != 0 && resp.status != 304) {
        while (!counted_.empty() && (counted_.front() <= now - kHourMs || counted_.size() >= kCountedKept))
          counted_.pop_front();
        counted_.push_back(now);
      }
      if (has_remaining) budget_.remaining = static_cast<int>(remaining);
      if (limit >= 0) budget_.limit = static_cast<int>(limit);
      if (has_reset) budget_.reset_at = reset * 1000;
      // Spent: nothing more until the window resets (SPEC §12: a rate-limit budget).
      if (has_remaining && remaining == 0 && has_reset && reset * 1000 > now)
        budget_.blocked_until = std::max(budget_.blocked_until, reset * 1000 + 1000);
    }

    if (resp.cancelled) {
      out.error = method + " " + PathOf(url) + ": abandoned, shutting down";
      return out;
    }
    if (!resp.error.empty()) {
      out.error = method + " " + PathOf(url) + ": " + resp.error;
      if (++attempt < attempts) {
        TimeMs wait = DoublingDelay(options_.backoff_initial_ms, attempt - 1, options_.backoff_max_ms);
        spdlog::warn("github request failed, retrying in {} ms: {}", wait, out.error);
        sleeper_(wait);
        continue;
      }
      return out;
    }

    const int st = resp.status;
    if ((st == 301 || st == 302 || st == 307 || st == 308) && !resp.Header("location").empty() && redirects < 3) {
      ++redirects;
      url = Absolute(resp.Header("location"));
      continue;
    }

    // An installation token revoked or replaced early: one new token, one more try.
    if (st == 401 && options_.token_source && !reauthorized) {
      reauthorized = true;
      spdlog::info("github token refused, asking for a new one request=\"{} {}\"", method, PathOf(url));
      if (options_.token_rejected) options_.token_rejected();
      continue;
    }

    if (st == 304) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = cache_.find(original_url);
      if (it == cache_.end()) it = cache_.find(url);
      if (it != cache_.end()) {
        it->second.used = ++tick_;
        out.body = it->second.body;
        out.next_url = NextLink(it->second.link);
        out.not_modified = true;
        return out;
      }
      out.error = method + " " + PathOf(url) + ": 304 without a cached answer";
      return out;
    }

    if (st >= 200 && st < 300) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        secondary_hits_ = 0;
      }
      out.body = resp.body.empty() ? json() : json::parse(resp.body, nullptr, false);
      if (out.body.is_discarded()) {
        out.error = method + " " + PathOf(url) + ": answer is not JSON";
        return out;
      }
      out.next_url = NextLink(resp.Header("link"));
      const std::string etag = resp.Header("etag"), last_modified = resp.Header("last-modified");
      if (conditional && (!etag.empty() || !last_modified.empty())) {
        std::lock_guard<std::mutex> lock(mu_);
        CacheEntry& e = cache_[original_url];
        e.etag = etag;
        e.last_modified = last_modified;
        e.link = resp.Header("link");
        e.body = out.body;
        e.used = ++tick_;
        if (cache_.size() > options_.cache_entries) {
          auto oldest = std::min_element(cache_.begin(), cache_.end(),
                                         [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
          cache_.erase(oldest);
        }
      }
      return out;
    }

    const std::string message = GitHubMessage(resp.body);
    // Rate limits: 429, or 403 that says so (Retry-After, remaining 0, or the message). A 403
    // without any of these is a permission problem and is not retried.
    bool rate_limited = st == 429 || (st == 403 && (has_retry_after || (has_remaining && remaining == 0) ||
                                                    IsRateLimitMessage(message)));
    if (rate_limited) {
      TimeMs until = 0;
      if (has_retry_after) {
        until = now + retry_after * 1000;
      } else if (has_remaining && remaining == 0 && has_reset && reset * 1000 > now) {
        until = reset * 1000 + 1000;
      } else {
        std::lock_guard<std::mutex> lock(mu_);
        // Secondary limit without instructions: at least a minute, doubling while it repeats.
        until = now + std::min<TimeMs>(options_.secondary_wait_ms << std::min(secondary_hits_, 5), 3600'000);
        ++secondary_hits_;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        budget_.blocked_until = std::max(budget_.blocked_until, until);
      }
      out.rate_limited = true;
      out.retry_at = until;
      out.retry_after_ms = until - now;
      out.error = method + " " + PathOf(url) + ": " + std::to_string(st) + " rate limited" +
                  (message.empty() ? "" : ": " + message);
      spdlog::warn("github {} (until {})", out.error, FormatTime(until));
      // The wait itself happens at the top of the loop (or the caller comes back later).
      if (++rate_waits <= 3 && until - now <= call.max_wait_ms) continue;
      return out;
    }

    out.error = method + " " + PathOf(url) + ": " + std::to_string(st) + (message.empty() ? "" : " " + message);
    if (st >= 500 && ++attempt < attempts) {
      TimeMs wait = DoublingDelay(options_.backoff_initial_ms, attempt - 1, options_.backoff_max_ms);
      spdlog::warn("github {}; retrying in {} ms", out.error, wait);
      sleeper_(wait);
      continue;
    }
    return out;
  }
}

}  // namespace superagent::github
