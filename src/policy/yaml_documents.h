// Reading a file that must hold one YAML document, safely. yaml-cpp 0.7's LoadAll loops forever,
// allocating, when a token that cannot start a document stands at the top level (a stray ','
// does it; found by fuzz/policy_yaml_fuzz): a policy edit could hang the daemon's reload and
// eat its memory. Private to policy/ and app/ (the config file uses it too).
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

namespace superagent::policy {

struct YamlDocuments {
  YAML::Node first;        // Null when the text holds no document
  int count = 0;           // documents found (counting stops at a few: more is an error anyway)
  YAML::Mark second_mark;  // where the second document starts, when count > 1
};

// Parses `text`. Throws YAML::Exception, as YAML::Load does, on malformed YAML, and also when the
// parser stops making progress (the input that hangs LoadAll).
YamlDocuments LoadYamlDocuments(const std::string& text);

}  // namespace superagent::policy
