#include "superagent/catch_all.h"

#include <spdlog/spdlog.h>

#include "superagent/engine.h"

namespace superagent {

std::string DescribeCurrentException() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception of unknown type";
  }
}

bool LoopGuard::Run(const std::function<void()>& iteration) noexcept {
  Status s = CatchAll(loop_, iteration);
  const std::string kind = "unexpected:" + loop_;
  if (s.ok()) {
    if (failing_ && engine_ != nullptr) {
      Status cleared = CatchAll("clearing " + kind, [&] { return engine_->ReportSuccess(kind); });
      failing_ = !cleared.ok();
    }
    return true;
  }
  // Caught here rather than ending the process: what was in flight is retried by its own rules.
  CatchAll("logging", [&] {
    spdlog::error("{} failed unexpectedly, the daemon goes on: {}", loop_, s.message());
  });
  if (engine_ != nullptr) {
    Status recorded = CatchAll("recording " + kind, [&] { return engine_->ReportFailure(kind, s.message()); });
    if (!recorded.ok()) CatchAll("logging", [&] { spdlog::error("could not record it: {}", recorded.message()); });
  }
  failing_ = true;
  return false;
}

}  // namespace superagent
