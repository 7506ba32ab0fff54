// Checked access to JSON that came from outside the daemon: webhooks and REST pages, Feishu
// events, model answers, tool arguments, panel command bodies. nlohmann's get<>, value() and
// operator[] throw on a wrong type, and an exception there ends a thread (std::terminate) or a
// request; nothing here throws. Each read yields the value or a Status that names the field,
// what was expected and what came, e.g.
//   field "repository.full_name": expected string, got null
// A path is object keys joined by '.', e.g. "subject.url".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "superagent/status.h"

namespace superagent::json_read {

using nlohmann::json;

// "null", "boolean", "integer", "number", "string", "array", "object" — the words errors use.
const char* TypeName(const json& j);

// Parses bytes without throwing; InvalidArgument "<what>: not valid JSON" otherwise. Invalid
// UTF-8 inside strings is refused too (nlohmann's parser checks it).
Result<json> Parse(std::string_view bytes, std::string_view what = "the body");
// Parse, and the value must be an object: "<what>: expected a JSON object, got array".
Result<json> ParseObject(std::string_view bytes, std::string_view what = "the body");

// The value at `path`; nullptr when a step is absent or a parent on the way is not an object.
const json* Find(const json& j, std::string_view path);

// Required fields: absent is `field "p": missing`, another type (null included) is
// `field "p": expected <type>, got <type>`.
Result<std::string> String(const json& j, std::string_view path);
Result<std::int64_t> Int(const json& j, std::string_view path);  // integers within int64 only
Result<bool> Bool(const json& j, std::string_view path);
Result<const json*> Object(const json& j, std::string_view path);
Result<const json*> Array(const json& j, std::string_view path);

// Optional fields: absent or null gives `fallback`; present with another type is the error.
Result<std::string> OptString(const json& j, std::string_view path, std::string fallback = "");
Result<std::int64_t> OptInt(const json& j, std::string_view path, std::int64_t fallback = 0);
Result<bool> OptBool(const json& j, std::string_view path, bool fallback = false);

// Lenient reads for best-effort fields, where a wrong type means the same as absence (a log
// line's detail, a display name): the value when it is there with its type, else `fallback`.
std::string StringOr(const json& j, std::string_view path, std::string fallback = "");
std::int64_t IntOr(const json& j, std::string_view path, std::int64_t fallback = 0);
bool BoolOr(const json& j, std::string_view path, bool fallback = false);

// Reads several fields of one object and keeps the first mistake, for argument lists where the
// first mistake is what the sender needs to hear. A Fields over a non-object is already failed
// ("<what>: expected a JSON object, got string"); reads after a failure return their fallback.
class Fields {
 public:
  // `j` must outlive the Fields (it is read in place, not copied).
  Fields(const json& j, std::string what);
  Fields(json&& j, std::string what) = delete;
  std::string String(std::string_view path);
  std::string OptString(std::string_view path, std::string fallback = "");
  std::int64_t Int(std::string_view path);
  std::int64_t OptInt(std::string_view path, std::int64_t fallback = 0);
  bool OptBool(std::string_view path, bool fallback = false);
  // True while every read so far succeeded.
  bool ok() const { return status_.ok(); }
  // The first mistake, prefixed with `what` ("arguments of read_file: field \"path\": ...").
  const Status& status() const { return status_; }

 private:
  template <typename T>
  T Take(Result<T> r, T fallback);

  const json& j_;
  std::string what_;
  Status status_;
};

}  // namespace superagent::json_read
