#include "app/logging.h"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <map>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "superagent/secret_filter.h"

namespace superagent::app {

namespace {

// The filter every log line passes; one per process (the daemon's), set by FilterLogLines.
std::mutex g_filter_mu;
std::shared_ptr<SecretFilter> g_filter;

std::shared_ptr<SecretFilter> CurrentFilter() {
  std::lock_guard<std::mutex> lock(g_filter_mu);
  return g_filter;
}

// The log's part of the outbound filter: the last point before a line's bytes are written,
// whatever code logged it. It counts what it replaced but logs nothing itself (it would call
// itself); the marker in the line is the record a reader sees.
class RedactingSink : public spdlog::sinks::sink {
 public:
  explicit RedactingSink(std::shared_ptr<spdlog::sinks::sink> inner) : inner_(std::move(inner)) {}
  void log(const spdlog::details::log_msg& msg) override {
    std::string_view payload(msg.payload.data(), msg.payload.size());
    // One record, one line, whatever a caller passed (a stage's cause quoting a command's stderr):
    // a person tails and greps lines, and journald splits on newlines.
    std::string one_line;
    if (payload.find_first_of("\r\n") != std::string_view::npos) {
      one_line.reserve(payload.size() + 8);
      for (char c : payload) {
        if (c == '\n') one_line += "\\n";
        else if (c == '\r') one_line += "\\r";
        else one_line += c;
      }
      payload = one_line;
    }
    std::shared_ptr<SecretFilter> filter = CurrentFilter();
    std::vector<std::string> found;
    const std::string clean = filter ? filter->Redact(payload, &found) : std::string();
    if (!filter || found.empty()) {
      if (one_line.empty()) return inner_->log(msg);
      spdlog::details::log_msg copy = msg;
      copy.payload = spdlog::string_view_t(payload.data(), payload.size());
      return inner_->log(copy);
    }
    spdlog::details::log_msg copy = msg;
    copy.payload = spdlog::string_view_t(clean.data(), clean.size());
    inner_->log(copy);
    filter->Record("log", std::string("a ") + spdlog::level::to_string_view(msg.level).data() + " line", found,
                   /*log=*/false);
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  std::shared_ptr<spdlog::sinks::sink> inner_;
};

// A warning or error written once a minute, not once per occurrence (issue 34: an outage logged
// ~28 identical warnings a minute before its one card). A line identical to one written less than
// a minute ago (by its text, at its level) is counted instead of written; the next identical line
// written after the minute ends with "repeated=N" — how many were held back since. Info and debug
// lines pass: they are events, each one counts. Time is the line's own (msg.time), so tests set it.
class OncePerMinuteSink : public spdlog::sinks::sink {
 public:
  explicit OncePerMinuteSink(std::shared_ptr<spdlog::sinks::sink> inner) : inner_(std::move(inner)) {}
  void log(const spdlog::details::log_msg& msg) override {
    if (msg.level < spdlog::level::warn) return inner_->log(msg);
    std::string key(msg.payload.data(), msg.payload.size());
    key.push_back(static_cast<char>('0' + msg.level));
    int held = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = seen_.find(key);
      if (it != seen_.end() && msg.time - it->second.written < kWindow) {
        ++it->second.held;
        return;
      }
      if (it != seen_.end()) {
        held = it->second.held;
        it->second = {msg.time, 0};
      } else {
        if (seen_.size() >= kMaxLines) Forget(msg.time);
        seen_.emplace(std::move(key), Seen{msg.time, 0});
      }
    }
    if (held == 0) return inner_->log(msg);
    std::string line(msg.payload.data(), msg.payload.size());
    line += " repeated=" + std::to_string(held);
    spdlog::details::log_msg copy = msg;
    copy.payload = spdlog::string_view_t(line.data(), line.size());
    inner_->log(copy);
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override { inner_->set_formatter(std::move(formatter)); }

 private:
  static constexpr std::chrono::seconds kWindow{60};
  static constexpr std::size_t kMaxLines = 512;  // distinct lines remembered; a flood of unique ones stays bounded
  struct Seen {
    spdlog::log_clock::time_point written;
    int held = 0;
  };
  // Drops the lines whose minute is over (their held count is lost: none came after them); when
  // all are recent, everything — a flood of distinct lines is not worth remembering.
  void Forget(spdlog::log_clock::time_point now) {
    for (auto it = seen_.begin(); it != seen_.end();) it = now - it->second.written >= kWindow ? seen_.erase(it) : std::next(it);
    if (seen_.size() >= kMaxLines) seen_.clear();
  }
  std::shared_ptr<spdlog::sinks::sink> inner_;
  std::mutex mu_;
  std::map<std::string, Seen> seen_;
};

// "%*": the sd-daemon "<N>" syslog priority prefix. journald strips it and files the line
// under that priority, so `journalctl -p warning` works without a journald client library.
class JournalPriorityFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const char* prefix = "<6>";
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug: prefix = "<7>"; break;
      case spdlog::level::info: prefix = "<6>"; break;
      case spdlog::level::warn: prefix = "<4>"; break;
      case spdlog::level::err: prefix = "<3>"; break;
      case spdlog::level::critical: prefix = "<2>"; break;
      default: break;
    }
    dest.append(prefix, prefix + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JournalPriorityFlag>();
  }
};

bool ParseUnsigned(std::string_view text, unsigned long long* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool WantColour() {
  // https://no-color.org: a non-empty NO_COLOR turns colours off even on a terminal.
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return isatty(STDERR_FILENO) == 1;
}

bool NeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || u == 0x7f || c == '"' || c == '=' || c == '\\') return true;
  }
  return false;
}

}  // namespace

bool ParseLogLevel(std::string_view text, spdlog::level::level_enum* out) {
  static constexpr struct {
    std::string_view name;
    spdlog::level::level_enum level;
  } kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"error", spdlog::level::err},
  };
  for (const auto& l : kLevels) {
    if (l.name == text) {
      *out = l.level;
      return true;
    }
  }
  return false;
}

void FilterLogLines(std::shared_ptr<SecretFilter> filter) {
  std::lock_guard<std::mutex> lock(g_filter_mu);
  g_filter = std::move(filter);
}

std::shared_ptr<spdlog::sinks::sink> FilteredSink(std::shared_ptr<spdlog::sinks::sink> inner) {
  return std::make_shared<RedactingSink>(std::move(inner));
}

std::shared_ptr<spdlog::sinks::sink> OncePerMinute(std::shared_ptr<spdlog::sinks::sink> inner) {
  return std::make_shared<OncePerMinuteSink>(std::move(inner));
}

bool StderrIsJournal() {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (env == nullptr) return false;
  std::string_view value(env);
  size_t colon = value.find(':');
  if (colon == std::string_view::npos) return false;
  unsigned long long dev = 0;
  unsigned long long ino = 0;
  if (!ParseUnsigned(value.substr(0, colon), &dev) || !ParseUnsigned(value.substr(colon + 1), &ino)) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

std::string LogPattern(bool journal) {
  // journald timestamps every line itself; a second date only costs width.
  if (journal) return "%*%l %v";
  // Local time with its offset: a line read on another machine, or across a DST change, still
  // says when it happened.
  return "%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v";
}

void SetupLogging(const std::string& level) {
  spdlog::level::level_enum parsed = spdlog::level::info;
  bool known = ParseLogLevel(level, &parsed);

  spdlog::sink_ptr sink;
  if (WantColour()) {
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<JournalPriorityFlag>('*').set_pattern(LogPattern(StderrIsJournal()));
  sink->set_formatter(std::move(formatter));

  auto logger = std::make_shared<spdlog::logger>("superagent", FilteredSink(OncePerMinute(std::move(sink))));
  logger->set_level(parsed);
  // stderr sinks write through, but warnings must never sit in a buffer when the process dies.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));

  if (!known) spdlog::warn("log.unknown_level {} {}", Kv("level", level), Kv("using", "info"));
}

std::string Kv(std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(key.size() + value.size() + 3);
  out.append(key);
  out.push_back('=');
  if (!NeedsQuotes(value)) {
    out.append(value);
    return out;
  }
  out.push_back('"');
  for (char c : value) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\x";
          out.push_back(kHex[u >> 4]);
          out.push_back(kHex[u & 0xf]);
        } else {
          out.push_back(c);
        }
      }
    }
  }
  out.push_back('"');
  return out;
}

std::string Kv(std::string_view key, std::int64_t value) {
  std::string out(key);
  out.push_back('=');
  out += std::to_string(value);
  return out;
}

}  // namespace superagent::app
