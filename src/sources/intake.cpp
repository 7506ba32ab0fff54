// The intake steps both Sources share (sources/intake.h).
#include "sources/intake.h"

#include <spdlog/spdlog.h>

namespace superagent::sources {

void SkipItem(const char* platform, const std::string& via, const std::string& why, ReadTally* tally,
              IntakeCounts* counts) {
  ++tally->skipped;
  if (counts) ++counts->skipped;
  spdlog::warn("{} item skipped via={} reason=\"{}\"", platform, via, why);
}

std::optional<IntakeResult> ReceiveTrigger(Engine& engine, const char* platform, const Trigger& t,
                                           const std::string& via, const std::string& filter_reason,
                                           const SourceUpdate* with, ReadTally* tally, IntakeCounts* counts) {
  tally->last_activity = std::max(tally->last_activity, t.at);
  auto r = engine.Receive(t, via, filter_reason, with);
  if (!r.ok() && r.status().code() == Status::Code::kInvalidArgument) {
    ++tally->skipped;
    if (counts) ++counts->skipped;
    spdlog::warn("{} item skipped via={} trigger={} reason=\"{}\"", platform, via, t.id, r.status().message());
    return std::nullopt;
  }
  if (!r.ok()) {
    tally->error = "receive " + t.id + ": " + r.status().ToString();
    if (counts) counts->errors.push_back(tally->error);
    return std::nullopt;
  }
  if (r->outcome != IntakeOutcome::kDuplicate) ++tally->fresh;
  if (counts) {
    switch (r->outcome) {
      case IntakeOutcome::kStored: ++counts->stored; break;
      case IntakeOutcome::kDuplicate: ++counts->duplicate; break;
      case IntakeOutcome::kFiltered: ++counts->filtered; break;
    }
  }
  if (r->outcome == IntakeOutcome::kFiltered)
    spdlog::info("{} message filtered trigger={} via={} reason={}", platform, t.id, via, r->filter_reason);
  return *r;
}

Status ReportRound(Engine& engine, SourceUpdate u, const std::atomic<bool>* cancel) {
  // The client's cancel is set before any request is abandoned and never cleared.
  u.abandoned = !u.ok && cancel != nullptr && cancel->load();
  return engine.UpdateSource(u);
}

void ReportRefused(Engine& engine, const char* platform, const char* path, std::int64_t n, const std::string& why,
                   bool* reported) {
  if (n == 0 && !*reported) return;
  SourceUpdate u;
  u.source = platform;
  u.path = path;
  u.ok = n == 0;
  if (n > 0)
    u.error = std::to_string(n) + " refused deliver" + (n == 1 ? "y" : "ies") + " since the last round (" + why + ")";
  *reported = n > 0;
  if (Status s = engine.UpdateSource(u); !s.ok())
    spdlog::error("{} {} health update failed: {}", platform, path, s.ToString());
}

}  // namespace superagent::sources
