// The JSON field readers and the verdicts every GitHub normalizer shares (normalize.cpp for the
// conversation, normalize_ci.cpp for CI), so a field is read and a malformed item judged alike.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "sources/github/normalize.h"
#include "superagent/github.h"

namespace superagent::github::normalize_internal {

using nlohmann::json;

inline const json* Field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// A string field; "" when absent or null, false when present with another type.
inline bool OptString(const json& j, const char* key, std::string* out) {
  const json* f = Field(j, key);
  out->clear();
  if (f == nullptr || f->is_null()) return true;
  if (!f->is_string()) return false;
  *out = f->get<std::string>();
  return true;
}

inline bool ReqString(const json& j, const char* key, std::string* out) {
  const json* f = Field(j, key);
  if (f == nullptr || !f->is_string()) return false;
  *out = f->get<std::string>();
  return true;
}

inline bool ReqInt(const json& j, const char* key, std::int64_t* out) {
  const json* f = Field(j, key);
  if (f == nullptr || !f->is_number_integer()) return false;
  *out = f->get<std::int64_t>();
  return true;
}

// A timestamp field as ms plus its canonical text (so a version in an id never depends on how a
// path formatted the time).
inline bool ReqTime(const json& j, const char* key, TimeMs* ms, std::string* canonical) {
  std::string s;
  if (!ReqString(j, key, &s) || !ParseTime(s, ms)) return false;
  *canonical = IsoSeconds(*ms);
  return true;
}

inline Normalized Malformed(std::string why) {
  Normalized n;
  n.kind = Normalized::Kind::kMalformed;
  n.why = std::move(why);
  return n;
}

inline Normalized Skip(std::string why) {
  Normalized n;
  n.kind = Normalized::Kind::kSkip;
  n.why = std::move(why);
  return n;
}

}  // namespace superagent::github::normalize_internal
