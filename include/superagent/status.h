// Status and Result<T>: errors are values across module boundaries (no exceptions escape).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace superagent {

class Status {
 public:
  enum class Code { kOk, kInvalidArgument, kNotFound, kConflict, kIoError, kUnavailable, kInternal };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
  static Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
  static Status Conflict(std::string m) { return Status(Code::kConflict, std::move(m)); }
  static Status IoError(std::string m) { return Status(Code::kIoError, std::move(m)); }
  static Status Unavailable(std::string m) { return Status(Code::kUnavailable, std::move(m)); }
  static Status Internal(std::string m) { return Status(Code::kInternal, std::move(m)); }

  // True when the operation succeeded.
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // Human-readable reason; empty when ok().
  const std::string& message() const { return message_; }
  // "invalid argument: <message>" style rendering for logs and CLI output.
  std::string ToString() const;
  // The same error with `prefix` put before its message (naming where it happened); ok stays ok.
  Status Prefixed(const std::string& prefix) const { return ok() ? *this : Status(code_, prefix + message_); }

 private:
  Status(Code c, std::string m) : code_(c), message_(std::move(m)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// Result<T> holds either a value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}     // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  // The error; Status::Ok() when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  // The value; only valid when ok().
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace superagent

// Returns the Status of `expr` from the enclosing function (which returns Status or Result<T>)
// when it is not ok.
#define RETURN_IF_ERROR(expr)             \
  do {                                    \
    ::superagent::Status _s = (expr);     \
    if (!_s.ok()) return _s;              \
  } while (0)
