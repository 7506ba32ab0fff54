#include "policy/policy_lines.h"

#include <yaml-cpp/yaml.h>

namespace superagent {

KeyLine FindPolicyKeyLine(const std::string& file, const std::vector<std::string>& path) {
  KeyLine out;
  try {
    YAML::Node node = YAML::LoadFile(file);
    for (const std::string& key : path) {
      if (!node.IsMap()) break;
      bool found = false;
      for (const auto& kv : node) {
        if (!kv.first.IsScalar() || kv.first.Scalar() != key) continue;
        out.line = kv.first.Mark().line + 1;
        ++out.depth;
        node = kv.second;
        found = true;
        break;
      }
      if (!found) break;
    }
  } catch (const std::exception&) {
    return {};
  }
  return out;
}

std::string KeyLineWords(const std::string& file, const std::vector<std::string>& path) {
  const KeyLine at = FindPolicyKeyLine(file, path);
  if (at.depth == path.size() && at.line > 0) return "The key is at " + file + ":" + std::to_string(at.line) + ".";
  if (at.depth > 0) return "It is not written yet: add it under the key at " + file + ":" + std::to_string(at.line) + ".";
  return "It is not written yet: add it to " + file + ".";
}

}  // namespace superagent
