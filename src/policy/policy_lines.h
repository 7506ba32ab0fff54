// Where a key is written in a policy file, for pointing a person at the line to edit.
#pragma once

#include <string>
#include <vector>

namespace superagent {

struct KeyLine {
  int line = 0;     // 1-based; 0 when not even the first key of `path` is written
  std::size_t depth = 0;  // how many keys of `path` are written (path.size() when all are)
};

// The line of the deepest key of `path` ({"sources", "github", "people"}) written in the YAML
// file at `file`. Never fails: an unreadable or invalid file gives {0, 0}.
KeyLine FindPolicyKeyLine(const std::string& file, const std::vector<std::string>& path);

// Where to make the edit, as `explain` says it: "The key is at FILE:14.", "It is not written yet:
// add it under the key at FILE:12.", or "It is not written yet: add it to FILE."
std::string KeyLineWords(const std::string& file, const std::vector<std::string>& path);

}  // namespace superagent
