// SecretFilter: the one outbound filter (issue 33, item 3). Everything the daemon publishes — a
// comment, a PR's title and body, a check run's summary, a Feishu message, a panel response, a log
// line — passes it last, and it replaces every secret the daemon knows and every common token
// shape with kRedactedMarker, and records that it did.
//
// What it replaces:
//   - known values: what app/ hands it (each *_env key's value, the panel token, the App key and
//     each line of its PEM body) and what is learnt at run time (each GitHub App installation
//     token as it is issued). Values shorter than kMinSecretLength are not learnt (see there).
//   - token shapes, found by a hand-written scanner (no std::regex: it recurses per character and
//     is slow on megabyte transcripts): ghp_/gho_/ghu_/ghs_/ghr_ and github_pat_ tokens, sk- keys
//     (sk-ant-, sk-proj-), Slack's xoxa-/xoxb-/xoxp-/xoxr-, AWS access key ids (AKIA/ASIA), PEM
//     private key blocks, and the credential of an Authorization header (Bearer, Basic, token)
//     or of a lone "Bearer <credential>".
// A shape starts only at a word boundary (the byte before it is no letter, digit or '_'), so
// "task-list" or "desk-top" never look like an sk- key.
//
// Matching is on bytes and exact: each match is one byte range, overlapping and nested ranges (a
// secret that is a prefix of another) merge, and each merged range becomes one marker. Every
// match is bounded by ASCII bytes or by a whole known value, so no UTF-8 sequence around it is
// split, and invalid UTF-8 around a secret stays as it was (repairing is text::Repair's job).
//
// Thread-safe: values may be learnt while other threads filter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "superagent/clock.h"

namespace superagent {

// What stands where a secret was.
inline constexpr std::string_view kRedactedMarker = "[REDACTED]";

// The shortest known value the filter learns. Shorter "secrets" (a 4-digit app id, "true", a
// test password) occur in ordinary text, so replacing them would mangle comments and logs while
// protecting little: a value that short falls to guessing anyway. Every real credential the
// daemon holds (GitHub tokens 40+, model keys 40+, the panel token 43, webhook secrets as
// generated) is far longer.
inline constexpr std::size_t kMinSecretLength = 8;

// One occasion on which the filter replaced something.
struct RedactionEvent {
  TimeMs at = 0;
  std::string path;               // "outbox", "panel", "intercom", "log"
  std::string where;              // what was being published: "post_message effect=12 ticket=4"
  std::vector<std::string> what;  // the names of what was replaced ("llm.api_key_env", "ghp_ token"); never a value
};

class SecretFilter {
 public:
  // `clock` stamps the events (null: the system clock); it must outlive the filter.
  explicit SecretFilter(Clock* clock = nullptr);

  // Learns `value` as a secret called `name` (a config key such as "llm.api_key_env", or "github
  // installation token"; names are shown, values never). Also learns `value` without surrounding
  // whitespace and, when it holds a PEM block, each line of the block's body. A value shorter than
  // kMinSecretLength is ignored. With `keep_last` > 0 only the newest `keep_last` values of `name`
  // are kept (installation tokens expire hourly; the filter must not grow forever). Thread-safe.
  void Learn(std::string_view name, std::string_view value, std::size_t keep_last = 0);

  // How many known values the filter holds (tests).
  std::size_t known_values() const;

  // `text` with every known value and token shape replaced by kRedactedMarker. Records nothing;
  // appends to *found (when given) the name of each kind replaced, once each. Never throws.
  std::string Redact(std::string_view text, std::vector<std::string>* found = nullptr) const;

  // Redacts every string inside `j` — values and object keys — in place, appending to *found as
  // Redact does. True when anything was replaced.
  bool RedactJson(nlohmann::json* j, std::vector<std::string>* found = nullptr) const;

  // Redact, and when anything was replaced, Record it (path, where, logged). For what leaves
  // through one place at a time: an Effect's text, a panel response.
  std::string Clean(std::string_view text, std::string_view path, std::string_view where);
  // RedactJson, then Record as Clean does. True when anything was replaced.
  bool CleanJson(nlohmann::json* j, std::string_view path, std::string_view where);

  // Records one redaction: the counter of `path` grows by one, the event becomes Last(), and when
  // `log` is true one warning line names the path, the place and the kinds — never a value. The
  // log sink itself passes log=false (a sink that logs would call itself).
  void Record(std::string_view path, std::string_view where, const std::vector<std::string>& what, bool log = true);

  // Redaction events so far, by path. Always has "outbox", "panel", "intercom" and "log" (0
  // until one), so /metrics shows the series from the start.
  std::map<std::string, std::int64_t> Counts() const;
  // The latest event; nullopt before the first.
  std::optional<RedactionEvent> Last() const;

 private:
  struct Known {
    std::string name;
    std::string value;
    std::uint64_t learnt = 0;  // order of learning, for keep_last
  };
  void LearnOne(std::string_view name, std::string_view value);

  Clock* clock_;
  mutable std::shared_mutex known_mu_;  // Learn writes; every Redact reads
  std::vector<Known> known_;            // longest first, so the report names the longest match
  std::uint64_t learnt_ = 0;

  mutable std::mutex events_mu_;  // never held while logging
  std::map<std::string, std::int64_t> counts_;
  std::optional<RedactionEvent> last_;
};

}  // namespace superagent
