// ASSIGN_OR_RETURN: the Result<T> counterpart of RETURN_IF_ERROR (status.h).
#pragma once

#include <utility>

#include "superagent/status.h"

// ASSIGN_OR_RETURN(auto x, expr): evaluates `expr` (a Result<T>); returns its Status from the
// enclosing function (which returns Status or Result<U>) when it failed, otherwise declares or
// assigns `x` from the value.
#define SUPERAGENT_CONCAT_INNER_(a, b) a##b
#define SUPERAGENT_CONCAT_(a, b) SUPERAGENT_CONCAT_INNER_(a, b)
#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL_(SUPERAGENT_CONCAT_(_result_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(r, lhs, expr) \
  auto r = (expr);                           \
  if (!r.ok()) return r.status();            \
  lhs = std::move(r.value())
