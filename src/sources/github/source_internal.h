// Source's private record types, shared by the poller (source.cpp) and the webhook receiver.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "superagent/github.h"

namespace superagent::github {

// How reading one discussion went.
struct Source::ReadOutcome {
  enum class Kind { kOk, kGone, kError } kind = Kind::kOk;
  std::string error;
  bool not_found = false;  // kError from a 404: a tracked pull request's is skipped, not a failure
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
