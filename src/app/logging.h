// Logging: spdlog to stderr, shaped for journald. Under systemd the journal adds timestamps
// and priorities itself, so lines carry a "<N>" priority prefix and no date; elsewhere they carry
// an ISO-8601 local timestamp. Colours only when stderr is a terminal.
//
// Log lines in this project read "event key=value key=value", built with Kv():
//   spdlog::info("ticket.started {} {}", Kv("ticket", id), Kv("title", title));
//   -> ticket.started ticket=T-12 title="fix the typo"
// Secrets are never logged; config values worth logging are variable NAMES only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/common.h>
#include <spdlog/sinks/sink.h>

namespace superagent {
class SecretFilter;
}

namespace superagent::app {

// Accepts exactly trace | debug | info | warn | error (the values log.level documents).
bool ParseLogLevel(std::string_view text, spdlog::level::level_enum* out);

// Replaces spdlog's default logger with a stderr logger at `level`. An unknown level falls back
// to info (config validation reports it first). Safe to call again, e.g. once before the
// config is read and once after.
void SetupLogging(const std::string& level);

// From now on every line the logger SetupLogging made writes passes `filter` first (issue 33):
// a secret in a line — a peer's error quoting a token, a worker's output — is written as the
// marker, and the filter counts it (path "log") without logging again. Null: lines pass as they
// are. Thread-safe; the filter is kept alive while set. Survives a later SetupLogging.
void FilterLogLines(std::shared_ptr<SecretFilter> filter);

// A sink that writes each record through `inner` as one line (a newline or carriage return in
// it written as \n, \r) after the filter FilterLogLines set (tests wrap their own capturing sink
// with it).
std::shared_ptr<spdlog::sinks::sink> FilteredSink(std::shared_ptr<spdlog::sinks::sink> inner);

// A sink that writes an identical warning or error at most once a minute through `inner`; the
// next one written after the minute carries "repeated=N", how many were held back (issue 34).
// Lines below warn pass as they are. The daemon's logger has it; tests wrap their own sink.
std::shared_ptr<spdlog::sinks::sink> OncePerMinute(std::shared_ptr<spdlog::sinks::sink> inner);

// True when stderr is the journal stream systemd set up for this process: JOURNAL_STREAM is
// "device:inode" of that stream, and it is inherited by children whose stderr may have been
// redirected elsewhere, so the variable alone is not proof.
bool StderrIsJournal();

// The spdlog pattern for a journald stream or for a terminal/file.
std::string LogPattern(bool journal);

// "key=value"; the value is double-quoted (with \" \\ \n \r \t escaped) when it is empty or
// contains whitespace, quotes, '=', a backslash or control characters, so every line splits
// back into the same pairs.
std::string Kv(std::string_view key, std::string_view value);
// "key=42". (No bool overload on purpose: a string literal would convert to bool first.)
std::string Kv(std::string_view key, std::int64_t value);

}  // namespace superagent::app
