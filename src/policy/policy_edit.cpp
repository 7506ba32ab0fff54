// RuleModeEditDiff: the one policy edit the daemon ever writes out, and only as a proposal shown
// to a person (issue 38). The edit is made on the file's own lines — its comments and layout kept —
// and checked by parsing the result, so a proposal that would not do what it says is never shown.
#include <algorithm>
#include <sstream>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "superagent/policy.h"

namespace superagent {
namespace {

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> out;
  std::string line;
  std::istringstream in{std::string(text)};
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// The rules entry named `rule` in block style, or an undefined node.
YAML::Node FindRuleItem(const YAML::Node& root, const std::string& rule) {
  if (!root.IsMap() || !root["rules"] || !root["rules"].IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (const YAML::Node& item : root["rules"]) {
    if (!item.IsMap() || item.Style() == YAML::EmitterStyle::Flow) continue;
    const YAML::Node name = item["name"];
    if (name && name.IsScalar() && name.Scalar() == rule) return item;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// A unified diff of `before` → `after`, which differ in one place: `at` (0-based) replaced by
// `removed` lines and `added` lines.
std::string OneHunk(const std::string& file, const std::vector<std::string>& before, const std::vector<std::string>& after,
                    std::size_t at, std::size_t removed, std::size_t added) {
  const std::size_t kContext = 3;
  const std::size_t from = at >= kContext ? at - kContext : 0;
  const std::size_t old_end = std::min(before.size(), at + removed + kContext);
  const std::size_t old_count = old_end - from;
  const std::size_t new_count = old_count - removed + added;
  // git's a/ b/ prefixes for a path relative to a checkout; an absolute path stands as it is.
  const bool absolute = !file.empty() && file[0] == '/';
  std::string out = (absolute ? "--- " : "--- a/") + file + "\n" + (absolute ? "+++ " : "+++ b/") + file + "\n";
  out += "@@ -" + std::to_string(from + 1) + "," + std::to_string(old_count) + " +" + std::to_string(from + 1) + "," +
         std::to_string(new_count) + " @@\n";
  for (std::size_t i = from; i < at; ++i) out += " " + before[i] + "\n";
  for (std::size_t i = at; i < at + removed; ++i) out += "-" + before[i] + "\n";
  for (std::size_t i = at; i < at + added; ++i) out += "+" + after[i] + "\n";
  for (std::size_t i = at + removed; i < old_end; ++i) out += " " + before[i] + "\n";
  return out;
}

}  // namespace

std::string RuleModeEditDiff(std::string_view yaml, const std::string& file, const std::string& rule, Mode to) {
  if (to == Mode::kOff) return "";
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception&) {
    return "";
  }
  const YAML::Node item = FindRuleItem(root, rule);
  if (!item.IsDefined()) return "";
  const std::vector<std::string> before = Lines(yaml);
  std::vector<std::string> after = before;
  std::size_t at = 0, removed = 0;
  const std::string word = ModeName(to);
  bool done = false;
  for (const auto& kv : item) {
    if (!kv.first.IsScalar() || kv.first.Scalar() != "mode") continue;
    // `mode: observe` (perhaps quoted, perhaps with a comment): the value's token is replaced.
    const YAML::Mark m = kv.second.Mark();
    if (kv.second.IsScalar() && kv.second.Scalar() == word) return "";  // it says so already
    if (!kv.second.IsScalar() || m.line < 0 || static_cast<std::size_t>(m.line) >= before.size()) return "";
    std::string& line = after[static_cast<std::size_t>(m.line)];
    const std::size_t col = static_cast<std::size_t>(m.column);
    if (col > line.size()) return "";
    const bool quoted = col < line.size() && (line[col] == '"' || line[col] == '\'');
    const std::size_t len = kv.second.Scalar().size() + (quoted ? 2 : 0);
    if (line.compare(col, len, quoted ? line.substr(col, 1) + kv.second.Scalar() + line[col] : kv.second.Scalar()) != 0)
      return "";
    line.replace(col, len, word);
    at = static_cast<std::size_t>(m.line);
    removed = 1;
    done = true;
  }
  if (!done) {
    // No mode yet: one line under the name, at the column its key starts.
    YAML::Mark key;
    for (const auto& kv : item)
      if (kv.first.IsScalar() && kv.first.Scalar() == "name") key = kv.first.Mark();
    const YAML::Mark value = item["name"].Mark();
    if (key.line < 0 || value.line != key.line || static_cast<std::size_t>(key.line) >= before.size()) return "";
    at = static_cast<std::size_t>(key.line) + 1;
    after.insert(after.begin() + static_cast<std::ptrdiff_t>(at), std::string(static_cast<std::size_t>(key.column), ' ') + "mode: " + word);
  }
  std::string edited;
  for (const std::string& l : after) edited += l + "\n";
  std::vector<Problem> problems;
  const std::optional<Policy> parsed = ParsePolicy(edited, file, &problems);
  if (!parsed) return "";
  const Rule* r = parsed->FindRule(rule);
  if (r == nullptr || !r->mode || *r->mode != to) return "";
  return OneHunk(file, before, after, at, removed, 1);
}

}  // namespace superagent
