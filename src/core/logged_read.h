// For the Engine's read methods whose signatures cannot carry an error yet (the reshaping of the
// Engine gives them Result): a failed store read is logged as an error and reads as empty, so
// the caller shows nothing rather than something wrong. Decisions never go through this: every
// read inside a transaction propagates its error.
#pragma once

#include <utility>

#include <spdlog/spdlog.h>

#include "superagent/assign_or_return.h"
#include "superagent/status.h"

namespace superagent {

template <typename T>
T LoggedRead(Result<T> r, const char* what) {
  if (r.ok()) return std::move(*r);
  spdlog::error("store read failed what={} error=\"{}\"", what, r.status().message());
  return T{};
}

}  // namespace superagent
