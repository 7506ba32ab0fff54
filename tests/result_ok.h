// Ok(r): the value of a Result a test expects to hold one. A failed read fails the test (and
// throws, so no test goes on with a value that was never read).
#pragma once

#include <stdexcept>
#include <utility>

#include <gtest/gtest.h>

#include "superagent/status.h"

namespace superagent {

template <typename T>
T Ok(Result<T> r) {
  if (!r.ok()) {
    ADD_FAILURE() << "expected a value, got " << r.status().ToString();
    throw std::runtime_error(r.status().ToString());
  }
  return std::move(*r);
}

}  // namespace superagent
