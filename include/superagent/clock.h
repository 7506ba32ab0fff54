// Clock: the seam for time. Production uses the system clock; tests use FakeClock and
// advance it explicitly, so nothing in the suite sleeps.
#pragma once

#include <cstdint>
#include <string>

namespace superagent {

// Milliseconds since the Unix epoch, UTC.
using TimeMs = std::int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  // Current wall-clock time in milliseconds since the epoch.
  virtual TimeMs NowMs() const = 0;
};

// The process-wide real clock (never null, never destroyed).
Clock* SystemClock();

// A clock that only moves when told to. Not thread-safe; tests drive it from one thread.
class FakeClock : public Clock {
 public:
  explicit FakeClock(TimeMs start = 1'767'225'600'000 /* 2026-01-01T00:00:00Z */) : now_(start) {}
  TimeMs NowMs() const override { return now_; }
  // Moves time forward by `ms` (may be zero).
  void Advance(TimeMs ms) { now_ += ms; }
  void Set(TimeMs ms) { now_ = ms; }

 private:
  TimeMs now_;
};

// 9999-12-31T23:59:59.999Z: the latest time FormatTime writes and ParseTime reads back (RFC 3339
// has four year digits). A Source that reads a timestamp from outside refuses anything later.
inline constexpr TimeMs kLatestTimeMs = 253'402'300'799'999;

// Formats as RFC 3339 UTC with millisecond precision, e.g. "2026-12-02T13:34:24.000Z".
std::string FormatTime(TimeMs t);
// Parses RFC 3339 / ISO 8601 ("2026-12-02T13:34:24Z", fractional seconds and +hh:mm offsets
// allowed). Returns false and leaves *out untouched on malformed input.
bool ParseTime(const std::string& text, TimeMs* out);

// The one exponential retry schedule: `first` doubled `doublings` times (clamped to 0..20, so the
// shift cannot overflow), never more than `cap`. E.g. Eval retries: DoublingDelay(30 s, attempts - 1,
// 10 min).
TimeMs DoublingDelay(TimeMs first, int doublings, TimeMs cap);

}  // namespace superagent
