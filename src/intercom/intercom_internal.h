// What the intercom's two files (intercom.cpp: delivery and reading; intercom_groups.cpp: groups)
// share, so a refusal and a title in a group read the same as anywhere else.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "superagent/intercom.h"
#include "superagent/status.h"
#include "superagent/text.h"

namespace superagent::intercom_internal {

using nlohmann::json;

// A title as it may appear inside the wrapper: one line, no guillemets, bounded.
inline std::string SafeTitle(const std::string& title) {
  std::string out;
  for (char c : title) {
    if (c == '\n' || c == '\r' || c == '\t') out += ' ';
    else if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  for (const char* g : {"«", "»"})
    for (std::size_t p = out.find(g); p != std::string::npos; p = out.find(g)) out.replace(p, std::string(g).size(), "\"");
  return text::Cut(out, 80);
}

inline bool Live(const SessionInfo& s) { return s.status != SessionStatus::kDormant; }

inline json Refused(const std::string& why) { return {{"ok", false}, {"error", why}}; }
// A read the store failed: refused too, and marked so the panel answers 503, not "no such thing".
inline json Unreadable(const Status& s) {
  return {{"ok", false}, {"error", "the store could not be read: " + s.message()}, {"unreadable", true}};
}

}  // namespace superagent::intercom_internal
