// What the config's two files share (config.cpp: the key table; config_parse.cpp: reading YAML
// against it): a key's member of a Config, reached by its type. Private to those two files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "app/config.h"

namespace superagent::config_internal {

inline bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

using Type = ConfigKey::Type;

// The member `k` sets in `c`, by its type.
inline std::string& StringOf(const ConfigKey& k, Config& c) { return std::get<std::string& (*)(Config&)>(k.field)(c); }
inline int& IntOf(const ConfigKey& k, Config& c) { return std::get<int& (*)(Config&)>(k.field)(c); }
inline bool& BoolOf(const ConfigKey& k, Config& c) { return std::get<bool& (*)(Config&)>(k.field)(c); }
inline std::vector<std::string>& ListOf(const ConfigKey& k, Config& c) {
  return std::get<std::vector<std::string>& (*)(Config&)>(k.field)(c);
}

}  // namespace superagent::config_internal
