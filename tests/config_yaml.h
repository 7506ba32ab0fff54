// YAML for config tests: a dotted key and its value as the nested mapping a config file holds.
#pragma once

#include <string>
#include <string_view>

namespace superagent::testing {

// "a.b: v" as nested YAML ("a:\n  b: v\n").
inline std::string YamlFor(std::string_view dotted, const std::string& value) {
  std::string out, indent;
  for (std::size_t dot; (dot = dotted.find('.')) != std::string_view::npos; dotted.remove_prefix(dot + 1)) {
    out += indent + std::string(dotted.substr(0, dot)) + ":\n";
    indent += "  ";
  }
  return out + indent + std::string(dotted) + ": " + value + "\n";
}

}  // namespace superagent::testing
