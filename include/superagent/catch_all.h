// The last line of defence at every thread entry point and per-item step: an exception that
// escapes a thread ends the whole daemon (std::terminate), one that escapes a request leaks its
// text to the peer. CatchAll turns whatever is thrown into a Status; LoopGuard does that for one
// iteration of a periodic loop, logs it, and records it so a person sees it (SPEC §6).
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

#include "superagent/status.h"

namespace superagent {

class Engine;

// "<what the exception said>", or "an exception of unknown type" for a non-std throw.
std::string DescribeCurrentException();

// Runs `fn` (returning void or Status); what it throws becomes Status::Internal("unexpected
// error in <where>: <what>"). Never throws.
template <typename F>
Status CatchAll(std::string_view where, F&& fn) noexcept {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
      fn();
      return Status::Ok();
    } else {
      return fn();
    }
  } catch (...) {
    try {
      return Status::Internal("unexpected error in " + std::string(where) + ": " + DescribeCurrentException());
    } catch (...) {
      return Status::Internal("unexpected error");  // out of memory while describing it
    }
  }
}

// Guards the iterations of one loop (the effects loop, the scheduler, a Source's poller, ...).
// An iteration that throws is logged at error and counted with Engine::ReportFailure under the
// kind "unexpected:<loop>", so repeated ones raise a system problem in Needs-you; the next clean
// iteration clears it. The loop itself goes on.
class LoopGuard {
 public:
  // `engine` may be null (then the failure is only logged); it must outlive the guard.
  LoopGuard(std::string loop, Engine* engine) : loop_(std::move(loop)), engine_(engine) {}
  // Runs one iteration; false when it threw (already logged and recorded).
  bool Run(const std::function<void()>& iteration) noexcept;

 private:
  std::string loop_;
  Engine* engine_;
  bool failing_ = false;
};

}  // namespace superagent
