#include "superagent/status.h"

namespace superagent {

std::string Status::ToString() const {
  const char* name = "ok";
  switch (code_) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: name = "invalid argument"; break;
    case Code::kNotFound: name = "not found"; break;
    case Code::kConflict: name = "conflict"; break;
    case Code::kIoError: name = "io error"; break;
    case Code::kUnavailable: name = "unavailable"; break;
    case Code::kInternal: name = "internal error"; break;
  }
  return std::string(name) + ": " + message_;
}

}  // namespace superagent
