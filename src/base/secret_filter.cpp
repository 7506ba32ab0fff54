// The outbound filter: finds byte ranges (known values, token shapes), merges them, and writes
// one marker per merged range. One scanner decides what a secret looks like; every publishing
// path calls it (docs/011-security.md, "Secrets in what the daemon publishes").
#include "superagent/secret_filter.h"
#include "superagent/text.h"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace superagent {

using nlohmann::json;

namespace {

struct Range {
  std::size_t begin = 0, end = 0;
};

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool IsWord(char c) { return IsAlnum(c) || c == '_'; }
bool IsWordOrDash(char c) { return IsWord(c) || c == '-'; }
bool IsUpperOrDigit(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
// What a credential in an Authorization header is made of: RFC 7235's token68 and a token's bytes.
bool IsCredential(char c) {
  return IsAlnum(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=' || c == '-';
}
bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// A shape starts only where a word starts, so "task-list" holds no "sk-" key.
bool AtWordStart(std::string_view s, std::size_t i) { return i == 0 || !IsWord(s[i - 1]); }

template <typename Pred>
std::size_t RunEnd(std::string_view s, std::size_t i, Pred pred) {
  while (i < s.size() && pred(s[i])) ++i;
  return i;
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string LowerCopy(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

void Note(std::vector<std::string>* found, std::string_view name) {
  if (found == nullptr) return;
  if (std::find(found->begin(), found->end(), name) == found->end()) found->emplace_back(name);
}

// A prefix, then a body of `body` bytes at least `min_body` long that `ok` accepts.
struct Prefixed {
  std::string_view prefix;
  std::string_view name;
  std::size_t min_body;
  bool (*body)(char);
  bool (*ok)(std::string_view body);
};

bool AnyBody(std::string_view) { return true; }
// An sk- key's body has letters and digits; a hyphenated phrase ("sk-like-a-long-compound")
// has no digit.
bool LettersAndDigits(std::string_view b) {
  return std::any_of(b.begin(), b.end(), IsDigit) && std::any_of(b.begin(), b.end(), IsLetter);
}
bool HasDigit(std::string_view b) { return std::any_of(b.begin(), b.end(), IsDigit); }

// GitHub's token formats (github.blog, 2021-04: "Behind GitHub's new authentication token
// formats"): a prefix and 36 base62 characters; fine-grained PATs "github_pat_" and 82.
// OpenAI's and Anthropic's keys: "sk-", "sk-proj-", "sk-ant-api03-" and 40+ characters. Slack's:
// "xoxb-" and digit groups. The minimum bodies are below the real lengths (a cut token still
// leaks most of itself) and above ordinary words.
constexpr Prefixed kPrefixed[] = {
    {"ghp_", "ghp_ token", 20, IsWord, AnyBody},
    {"gho_", "gho_ token", 20, IsWord, AnyBody},
    {"ghu_", "ghu_ token", 20, IsWord, AnyBody},
    {"ghs_", "ghs_ token", 20, IsWord, AnyBody},
    {"ghr_", "ghr_ token", 20, IsWord, AnyBody},
    {"github_pat_", "github_pat_ token", 22, IsWord, AnyBody},
    {"sk-", "sk- key", 20, IsWordOrDash, LettersAndDigits},
    {"xoxa-", "Slack token", 10, IsWordOrDash, HasDigit},
    {"xoxb-", "Slack token", 10, IsWordOrDash, HasDigit},
    {"xoxp-", "Slack token", 10, IsWordOrDash, HasDigit},
    {"xoxr-", "Slack token", 10, IsWordOrDash, HasDigit},
};

void FindPrefixed(std::string_view s, std::vector<Range>* out, std::vector<std::string>* found) {
  for (const Prefixed& p : kPrefixed) {
    for (std::size_t at = s.find(p.prefix); at != std::string_view::npos; at = s.find(p.prefix, at + 1)) {
      if (!AtWordStart(s, at)) continue;
      const std::size_t b = at + p.prefix.size();
      const std::size_t e = RunEnd(s, b, p.body);
      if (e - b < p.min_body || !p.ok(s.substr(b, e - b))) continue;
      out->push_back({at, e});
      Note(found, p.name);
      at = e - 1;
    }
  }
}

// AWS access key ids: AKIA (long-term) or ASIA (temporary) and exactly 16 of [A-Z0-9].
void FindAws(std::string_view s, std::vector<Range>* out, std::vector<std::string>* found) {
  for (std::string_view prefix : {std::string_view("AKIA"), std::string_view("ASIA")}) {
    for (std::size_t at = s.find(prefix); at != std::string_view::npos; at = s.find(prefix, at + 1)) {
      if (at > 0 && IsAlnum(s[at - 1])) continue;
      const std::size_t e = RunEnd(s, at + 4, IsUpperOrDigit);
      if (e - at != 20 || (e < s.size() && IsAlnum(s[e]))) continue;
      out->push_back({at, e});
      Note(found, "AWS access key id");
    }
  }
}

// "-----BEGIN … PRIVATE KEY-----" to its "-----END …-----"; to the end of the text when the END
// is missing (a block cut short still leaks its key).
void FindPem(std::string_view s, std::vector<Range>* out, std::vector<std::string>* found) {
  constexpr std::string_view kBegin = "-----BEGIN ", kEnd = "-----END ", kDashes = "-----";
  for (std::size_t at = s.find(kBegin); at != std::string_view::npos; at = s.find(kBegin, at + 1)) {
    const std::size_t label = at + kBegin.size();
    const std::size_t close = s.find(kDashes, label);
    if (close == std::string_view::npos || close - label > 64) continue;
    const std::string_view name = s.substr(label, close - label);
    if (name.size() < 11 || name.substr(name.size() - 11) != "PRIVATE KEY") continue;
    std::size_t e = s.size();
    if (const std::size_t end = s.find(kEnd, close + kDashes.size()); end != std::string_view::npos) {
      const std::size_t end_close = s.find(kDashes, end + kEnd.size());
      if (end_close != std::string_view::npos && end_close - end < 80) e = end_close + kDashes.size();
    }
    out->push_back({at, e});
    Note(found, "PEM private key");
    at = e - 1;
    if (e == s.size()) break;
  }
}

// The credential after "Authorization: <scheme> " (any case; also `"Authorization": "…"`,
// `authorization=…`, git's http.extraHeader) and after a lone "Bearer ". The header's name and
// scheme stay, so a reader sees what was there.
void FindAuthorization(std::string_view s, std::string_view lower, std::vector<Range>* out,
                       std::vector<std::string>* found) {
  constexpr std::string_view kHeader = "authorization";
  for (std::size_t at = lower.find(kHeader); at != std::string_view::npos; at = lower.find(kHeader, at + 1)) {
    if (!AtWordStart(s, at)) continue;
    std::size_t i = at + kHeader.size();
    i = RunEnd(s, i, [](char c) { return c == '"' || c == '\'' || IsSpace(c); });
    if (i >= s.size() || (s[i] != ':' && s[i] != '=')) continue;
    i = RunEnd(s, i + 1, [](char c) { return c == '"' || c == '\'' || IsSpace(c); });
    const std::size_t scheme_end = RunEnd(s, i, IsLetter);
    const std::string_view scheme = lower.substr(i, scheme_end - i);
    std::size_t cred = i;
    const bool schemed = scheme == "bearer" || scheme == "basic" || scheme == "token";
    if (schemed) {
      cred = RunEnd(s, scheme_end, IsSpace);
      if (cred == scheme_end) continue;  // "Bearerish": a word, not a scheme
    }
    const std::size_t e = RunEnd(s, cred, IsCredential);
    // After a scheme a credential is anything of its bytes; without one ("Authorization: required
    // here") it must look like a token: long, with a digit.
    if (schemed ? e - cred < kMinSecretLength : (e - cred < 16 || !HasDigit(s.substr(cred, e - cred)))) continue;
    out->push_back({cred, e});
    Note(found, "Authorization header");
  }
  constexpr std::string_view kBearer = "bearer";
  for (std::size_t at = lower.find(kBearer); at != std::string_view::npos; at = lower.find(kBearer, at + 1)) {
    if (!AtWordStart(s, at)) continue;
    const std::size_t cred = RunEnd(s, at + kBearer.size(), IsSpace);
    if (cred == at + kBearer.size()) continue;
    const std::size_t e = RunEnd(s, cred, IsCredential);
    // Longer than kMinSecretLength: "bearer of bad news" must stay; a token is long.
    if (e - cred < 16 || !HasDigit(s.substr(cred, e - cred))) continue;
    out->push_back({cred, e});
    Note(found, "bearer credential");
  }
}

// The lines of a PEM block's body (between its BEGIN and END lines), literal "\n" read as breaks.
std::vector<std::string> PemBodyLines(std::string_view pem) {
  std::string text;
  text.reserve(pem.size());
  for (std::size_t i = 0; i < pem.size(); ++i) {
    if (pem[i] == '\\' && i + 1 < pem.size() && pem[i + 1] == 'n') {
      text.push_back('\n');
      ++i;
    } else {
      text.push_back(pem[i]);
    }
  }
  std::vector<std::string> lines;
  bool inside = false;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    while (!line.empty() && (line.back() == '\r' || IsSpace(line.back()))) line.pop_back();
    if (line.rfind("-----BEGIN ", 0) == 0) inside = true;
    else if (line.rfind("-----END ", 0) == 0) inside = false;
    else if (inside && !line.empty() && line.find(':') == std::string::npos) lines.push_back(line);
    start = nl + 1;
  }
  return lines;
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (IsSpace(s.front()) || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (IsSpace(s.back()) || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

SecretFilter::SecretFilter(Clock* clock) : clock_(clock != nullptr ? clock : SystemClock()) {
  counts_ = {{"outbox", 0}, {"panel", 0}, {"intercom", 0}, {"log", 0}};
}

void SecretFilter::LearnOne(std::string_view name, std::string_view value) {
  if (value.size() < kMinSecretLength) return;
  for (const Known& k : known_)
    if (k.value == value) return;
  known_.push_back({std::string(name), std::string(value), ++learnt_});
  // Longest first: of a secret and its prefix, the longer one names the match.
  std::stable_sort(known_.begin(), known_.end(),
                   [](const Known& a, const Known& b) { return a.value.size() > b.value.size(); });
}

void SecretFilter::Learn(std::string_view name, std::string_view value, std::size_t keep_last) {
  std::unique_lock<std::shared_mutex> lock(known_mu_);
  LearnOne(name, value);
  LearnOne(name, TrimSpace(value));
  if (value.find("-----BEGIN ") != std::string_view::npos)
    for (const std::string& line : PemBodyLines(value)) LearnOne(name, line);
  if (keep_last == 0) return;
  std::vector<std::uint64_t> orders;
  for (const Known& k : known_)
    if (k.name == name) orders.push_back(k.learnt);
  if (orders.size() <= keep_last) return;
  std::sort(orders.begin(), orders.end());
  const std::uint64_t oldest_kept = orders[orders.size() - keep_last];
  known_.erase(std::remove_if(known_.begin(), known_.end(),
                              [&](const Known& k) { return k.name == name && k.learnt < oldest_kept; }),
               known_.end());
}

std::size_t SecretFilter::known_values() const {
  std::shared_lock<std::shared_mutex> lock(known_mu_);
  return known_.size();
}

namespace {

// Where text was cut (text::Cut, CutNoted, CutMiddle): the end or start of the text, or their
// markers, which all hold an ellipsis.
constexpr std::string_view kCutMark = "\xE2\x80\xA6";
bool CutAfter(std::string_view text, std::size_t at) {
  const std::string_view rest = text.substr(at);
  return rest.empty() || rest.substr(0, kCutMark.size()) == kCutMark || rest.substr(0, 2 + kCutMark.size()) == std::string("\n[").append(kCutMark) ||
         rest.substr(0, 1 + kCutMark.size()) == std::string("[").append(kCutMark);
}
bool CutBefore(std::string_view text, std::size_t at) {
  const std::string_view head = text.substr(0, at);
  auto ends = [&](std::string_view tail) { return head.size() >= tail.size() && head.substr(head.size() - tail.size()) == tail; };
  return head.empty() || ends(kCutMark) || ends(std::string(kCutMark).append("]\n")) || ends(std::string(kCutMark).append("]"));
}

// A known value a cut left only part of: its head (at least kMinSecretLength bytes) just before a
// cut, or its tail just after one. Whole occurrences are found before this.
void FindCutValue(std::string_view text, std::string_view value, std::vector<Range>* ranges, bool* hit) {
  const std::size_t n = value.size();
  if (n <= kMinSecretLength) return;
  const std::string_view head = value.substr(0, kMinSecretLength);
  for (std::size_t at = text.find(head); at != std::string_view::npos; at = text.find(head, at + 1)) {
    std::size_t len = kMinSecretLength;
    while (len < n && at + len < text.size() && text[at + len] == value[len]) ++len;
    if (len < n && CutAfter(text, at + len)) {
      ranges->push_back({at, at + len});
      *hit = true;
    }
  }
  const std::string_view tail = value.substr(n - kMinSecretLength);
  for (std::size_t at = text.find(tail); at != std::string_view::npos; at = text.find(tail, at + 1)) {
    const std::size_t end = at + kMinSecretLength;
    std::size_t len = kMinSecretLength;
    while (len < n && end >= len + 1 && text[end - len - 1] == value[n - len - 1]) ++len;
    if (len < n && CutBefore(text, end - len)) {
      ranges->push_back({end - len, end});
      *hit = true;
    }
  }
}

}  // namespace

std::string SecretFilter::Redact(std::string_view text, std::vector<std::string>* found) const {
  std::vector<Range> ranges;
  {
    std::shared_lock<std::shared_mutex> lock(known_mu_);
    for (const Known& k : known_) {
      for (std::size_t at = text.find(k.value); at != std::string_view::npos; at = text.find(k.value, at + 1)) {
        ranges.push_back({at, at + k.value.size()});
        Note(found, k.name);
      }
      bool cut = false;
      FindCutValue(text, k.value, &ranges, &cut);
      if (cut) Note(found, k.name);
    }
  }
  FindPrefixed(text, &ranges, found);
  FindAws(text, &ranges, found);
  FindPem(text, &ranges, found);
  const std::string lower = LowerCopy(text);
  FindAuthorization(text, lower, &ranges, found);
  if (ranges.empty()) return std::string(text);

  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(text.size());
  std::size_t copied = 0;
  for (std::size_t i = 0; i < ranges.size();) {
    Range merged = ranges[i];
    for (++i; i < ranges.size() && ranges[i].begin <= merged.end; ++i) merged.end = std::max(merged.end, ranges[i].end);
    out.append(text.substr(copied, merged.begin - copied));
    out.append(kRedactedMarker);
    copied = merged.end;
  }
  out.append(text.substr(copied));
  return out;
}

bool SecretFilter::RedactJson(json* j, std::vector<std::string>* found) const {
  if (j->is_string()) {
    std::string& s = j->get_ref<std::string&>();
    std::vector<std::string> here;
    std::string clean = Redact(s, &here);
    if (here.empty()) return false;
    for (const std::string& name : here) Note(found, name);
    s = std::move(clean);
    return true;
  }
  bool changed = false;
  if (j->is_array()) {
    for (json& e : *j) changed = RedactJson(&e, found) || changed;
  } else if (j->is_object()) {
    json out = json::object();
    for (auto it = j->begin(); it != j->end(); ++it) {
      std::vector<std::string> here;
      std::string key = Redact(it.key(), &here);
      for (const std::string& name : here) Note(found, name);
      changed = changed || !here.empty();
      json value = std::move(it.value());
      changed = RedactJson(&value, found) || changed;
      out[key] = std::move(value);
    }
    *j = std::move(out);
  }
  return changed;
}

std::string SecretFilter::Clean(std::string_view text, std::string_view path, std::string_view where) {
  std::vector<std::string> found;
  std::string out = Redact(text, &found);
  if (!found.empty()) Record(path, where, found);
  return out;
}

bool SecretFilter::CleanJson(json* j, std::string_view path, std::string_view where) {
  std::vector<std::string> found;
  if (!RedactJson(j, &found)) return false;
  Record(path, where, found);
  return true;
}

void SecretFilter::Record(std::string_view path, std::string_view where, const std::vector<std::string>& what,
                          bool log) {
  RedactionEvent e{clock_->NowMs(), std::string(path), std::string(where), what};
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    ++counts_[e.path];
    last_ = e;
  }
  // Outside the lock: the log line passes the log sink, which filters it too (it holds no secret).
  if (log)
    spdlog::warn("secret redacted path={} where=\"{}\" what=\"{}\"", e.path, e.where, text::Join(e.what, ", "));
}

std::map<std::string, std::int64_t> SecretFilter::Counts() const {
  std::lock_guard<std::mutex> lock(events_mu_);
  return counts_;
}

std::optional<RedactionEvent> SecretFilter::Last() const {
  std::lock_guard<std::mutex> lock(events_mu_);
  return last_;
}

}  // namespace superagent
