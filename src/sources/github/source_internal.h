// Source's private record types, shared by the poller (source.cpp) and the webhook receiver.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "superagent/github.h"

namespace superagent::github {

// o[key] when o is an object holding a string there, else "": GitHub's JSON (and a signed
// webhook's) may hold null or another type anywhere, and json::value() throws on that.
inline std::string StringField(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return "";
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

// How reading one discussion went.
struct Source::ReadOutcome {
  enum class Kind { kOk, kGone, kError } kind = Kind::kOk;
  std::string error;
  nlohmann::json cursor;  // the discussion's new cursor (kOk)
  int skipped = 0;        // malformed items skipped, for the path's health
};

// What a path's intake produced beyond the Engine's own records.
struct Source::Intake {
  int skipped = 0;
  TimeMs last_activity = 0;
  std::vector<std::pair<Discussion, TimeMs>> addressed;  // discussions to follow from now on
  std::string error;                                     // an Engine failure, if any
  bool any = false;                                      // at least one item was read
  int fresh = 0;  // items not seen before (stored or filtered): only these move a cursor, so
                  // re-reading the overlap leaves URLs unchanged and the next read is a free 304
};

}  // namespace superagent::github
