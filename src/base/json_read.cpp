// Checked JSON access: every outside value goes through type tests before it is read, so the
// throwing accessors are only ever called on a value already known to have their type.
#include "superagent/json_read.h"

#include <limits>

namespace superagent::json_read {

namespace {

std::string FieldError(std::string_view path, const std::string& why) {
  return "field \"" + std::string(path) + "\": " + why;
}

Status Missing(std::string_view path) { return Status::InvalidArgument(FieldError(path, "missing")); }

Status WrongType(std::string_view path, const char* expected, const json& got) {
  return Status::InvalidArgument(FieldError(path, std::string("expected ") + expected + ", got " + TypeName(got)));
}

bool FitsInt64(const json& v) {
  return v.is_number_integer() &&
         (!v.is_number_unsigned() ||
          v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
}

}  // namespace

const char* TypeName(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "integer";
    case json::value_t::number_float: return "number";
    case json::value_t::string: return "string";
    case json::value_t::array: return "array";
    case json::value_t::object: return "object";
    case json::value_t::binary: return "binary";
    case json::value_t::discarded: return "invalid JSON";
  }
  return "unknown";
}

Result<json> Parse(std::string_view bytes, std::string_view what) {
  json j = json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded()) return Status::InvalidArgument(std::string(what) + ": not valid JSON");
  return j;
}

Result<json> ParseObject(std::string_view bytes, std::string_view what) {
  auto j = Parse(bytes, what);
  if (!j.ok()) return j;
  if (!j->is_object())
    return Status::InvalidArgument(std::string(what) + ": expected a JSON object, got " + TypeName(*j));
  return j;
}

const json* Find(const json& j, std::string_view path) {
  const json* at = &j;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string_view key = path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
    if (dot == std::string_view::npos) return at;
    start = dot + 1;
  }
}

namespace {

// The parent that stops a path, for a precise error: `field "repository": expected object,
// got string` says more than `field "repository.full_name": missing`.
Status Absent(const json& j, std::string_view path) {
  std::size_t dot = path.find('.');
  while (dot != std::string_view::npos) {
    const std::string_view parent = path.substr(0, dot);
    const json* p = Find(j, parent);
    if (p == nullptr) return Missing(parent);
    if (!p->is_object()) return WrongType(parent, "object", *p);
    dot = path.find('.', dot + 1);
  }
  if (!j.is_object()) return Status::InvalidArgument("expected an object, got " + std::string(TypeName(j)));
  return Missing(path);
}

}  // namespace

Result<std::string> String(const json& j, std::string_view path) {
  const json* v = Find(j, path);
  if (v == nullptr) return Absent(j, path);
  if (!v->is_string()) return WrongType(path, "string", *v);
  return v->get<std::string>();
}

Result<std::int64_t> Int(const json& j, std::string_view path) {
  const json* v = Find(j, path);
  if (v == nullptr) return Absent(j, path);
  if (v->is_number_integer() && !FitsInt64(*v))
    return Status::InvalidArgument(FieldError(path, "integer out of range"));
  if (!v->is_number_integer()) return WrongType(path, "integer", *v);
  return v->get<std::int64_t>();
}

Result<bool> Bool(const json& j, std::string_view path) {
  const json* v = Find(j, path);
  if (v == nullptr) return Absent(j, path);
  if (!v->is_boolean()) return WrongType(path, "boolean", *v);
  return v->get<bool>();
}

Result<const json*> Object(const json& j, std::string_view path) {
  const json* v = Find(j, path);
  if (v == nullptr) return Absent(j, path);
  if (!v->is_object()) return WrongType(path, "object", *v);
  return v;
}

Result<const json*> Array(const json& j, std::string_view path) {
  const json* v = Find(j, path);
  if (v == nullptr) return Absent(j, path);
  if (!v->is_array()) return WrongType(path, "array", *v);
  return v;
}

Result<std::string> OptString(const json& j, std::string_view path, std::string fallback) {
  const json* v = Find(j, path);
  if (v == nullptr || v->is_null()) return fallback;
  return String(j, path);
}

Result<std::int64_t> OptInt(const json& j, std::string_view path, std::int64_t fallback) {
  const json* v = Find(j, path);
  if (v == nullptr || v->is_null()) return fallback;
  return Int(j, path);
}

Result<bool> OptBool(const json& j, std::string_view path, bool fallback) {
  const json* v = Find(j, path);
  if (v == nullptr || v->is_null()) return fallback;
  return Bool(j, path);
}

std::string StringOr(const json& j, std::string_view path, std::string fallback) {
  const json* v = Find(j, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : fallback;
}

std::int64_t IntOr(const json& j, std::string_view path, std::int64_t fallback) {
  const json* v = Find(j, path);
  return v != nullptr && FitsInt64(*v) ? v->get<std::int64_t>() : fallback;
}

bool BoolOr(const json& j, std::string_view path, bool fallback) {
  const json* v = Find(j, path);
  return v != nullptr && v->is_boolean() ? v->get<bool>() : fallback;
}

Fields::Fields(const json& j, std::string what) : j_(j), what_(std::move(what)) {
  if (!j_.is_object())
    status_ = Status::InvalidArgument(what_ + ": expected a JSON object, got " + TypeName(j_));
}

template <typename T>
T Fields::Take(Result<T> r, T fallback) {
  if (!status_.ok()) return fallback;
  if (!r.ok()) {
    status_ = Status::InvalidArgument(what_ + ": " + r.status().message());
    return fallback;
  }
  return std::move(*r);
}

std::string Fields::String(std::string_view path) { return Take<std::string>(json_read::String(j_, path), ""); }

std::string Fields::OptString(std::string_view path, std::string fallback) {
  return Take<std::string>(json_read::OptString(j_, path, fallback), fallback);
}

std::int64_t Fields::Int(std::string_view path) { return Take<std::int64_t>(json_read::Int(j_, path), 0); }

std::int64_t Fields::OptInt(std::string_view path, std::int64_t fallback) {
  return Take<std::int64_t>(json_read::OptInt(j_, path, fallback), fallback);
}

bool Fields::OptBool(std::string_view path, bool fallback) {
  return Take<bool>(json_read::OptBool(j_, path, fallback), fallback);
}

}  // namespace superagent::json_read
