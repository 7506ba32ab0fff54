// policy.yaml → Policy, with every problem reported at its file:line:column. yaml-cpp throws;
// its exceptions are caught here and never cross the public API.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "policy/yaml_documents.h"
#include "superagent/github_threads.h"
#include "superagent/policy.h"
#include "superagent/text.h"

namespace superagent {
namespace {

const std::vector<std::string> kRootKeys = {"mode", "sources", "rules", "budgets", "circuit_breaker", "judgement", "repos"};
const std::vector<std::string> kRepositoryKeys = {"mode", "sources"};
const std::vector<std::string> kJudgementKeys = {"promote_at", "promote_after", "demote_at", "demote_after", "window_days"};
const std::vector<std::string> kCircuitBreakerKeys = {"per_sender", "per_source", "window_minutes"};
const std::vector<std::string> kBudgetKinds = {"explicit", "inferred"};
const std::vector<std::string> kBudgetKeys = {"tokens", "cost_usd", "wall_clock_minutes", "turns"};
const std::vector<std::string> kSourceKeys = {"people", "bots", "scopes", "tell_others"};
const std::vector<std::string> kCellKeys = {"receive_all", "allowed_unaddressed", "others_addressed", "others_unaddressed"};
const std::vector<std::string> kRuleKeys = {"name", "enabled", "when", "instructions", "silent", "approver", "auto_merge", "mode", "repos"};
const std::vector<std::string> kAutoMergeKeys = {"enabled", "max_changed_lines", "required_approvals"};

// One "key: value" of a mapping, with both nodes kept for their marks.
struct Entry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

// Walks the document and collects problems; never stops at the first one, because a person
// fixing a policy wants the whole list at once.
class PolicyReader {
 public:
  PolicyReader(const std::string& file, std::vector<Problem>* problems) : file_(file), problems_(problems) {}

  bool ok() const { return count_ == 0; }

  // Records a problem at `node`. An empty value ("key:" and nothing) carries the mark of the
  // *next* token, often the following line, so callers pass the key node for those.
  void Add(const YAML::Node& node, const std::string& path, const std::string& what) { Add(node.Mark(), path, what); }
  void Add(const YAML::Mark& m, const std::string& path, const std::string& what) {
    Problem p;
    p.file = file_;
    if (!m.is_null() && m.line >= 0) {
      p.line = m.line + 1;
      p.column = m.column + 1;
    }
    p.message = path.empty() ? what : path + ": " + what;
    problems_->push_back(std::move(p));
    ++count_;
  }

  // Where to point for a problem with an entry's value.
  static const YAML::Node& Where(const Entry& e) { return e.value.IsNull() ? e.key_node : e.value; }

  // Lists the entries of mapping `map`. Non-string keys, duplicate keys (yaml-cpp would keep
  // both and a later lookup would silently pick one) and — when `known` is given — unknown keys
  // are problems and are left out.
  std::vector<Entry> Entries(const YAML::Node& map, const std::string& path, const std::vector<std::string>* known) {
    std::vector<Entry> out;
    std::set<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      // Copies: yaml-cpp's iterator yields a temporary pair, so references would dangle.
      const YAML::Node k = it->first;
      if (!k.IsScalar()) {
        Add(k, path, "keys must be plain strings");
        continue;
      }
      std::string key = k.Scalar();
      std::string key_path = path.empty() ? key : path + "." + key;
      if (!seen.insert(key).second) {
        Add(k, key_path, "duplicate key");
        continue;
      }
      if (known != nullptr && std::find(known->begin(), known->end(), key) == known->end()) {
        Add(k, key_path, "unknown key (expected one of " + text::Join(*known, ", ") + ")");
        continue;
      }
      out.push_back(Entry{key, k, it->second});
    }
    return out;
  }

  // A mapping, or null (an empty section, treated as empty). Otherwise a problem.
  bool ExpectMap(const Entry& e, const std::string& path) {
    if (e.value.IsMap() || e.value.IsNull()) return true;
    Add(Where(e), path, "must be a mapping");
    return false;
  }

  bool ReadBool(const Entry& e, const std::string& path, bool* out) {
    // Only true/false: YAML 1.1's yes/no/on/off are a classic source of surprises, and a quoted
    // "true" is a string, not a switch.
    if (e.value.IsScalar() && e.value.Tag() != "!") {
      const std::string& s = e.value.Scalar();
      if (s == "true" || s == "True" || s == "TRUE") { *out = true; return true; }
      if (s == "false" || s == "False" || s == "FALSE") { *out = false; return true; }
    }
    Add(Where(e), path, "must be true or false" + Got(e.value));
    return false;
  }

  // A string scalar; an empty value reads as "".
  bool ReadString(const Entry& e, const std::string& path, std::string* out) {
    if (e.value.IsNull()) { out->clear(); return true; }
    if (e.value.IsScalar()) { *out = e.value.Scalar(); return true; }
    Add(Where(e), path, "must be a string");
    return false;
  }

  // A list of non-empty identity strings; an empty value reads as an empty list.
  void ReadIdentities(const Entry& e, const std::string& path, std::vector<std::string>* out) {
    if (e.value.IsNull()) return;
    if (!e.value.IsSequence()) {
      Add(Where(e), path, "must be a list of identities, e.g. [alice, bob]");
      return;
    }
    for (std::size_t i = 0; i < e.value.size(); ++i) {
      YAML::Node item = e.value[i];
      if (!item.IsScalar() || item.Scalar().empty()) {
        Add(item.IsNull() ? e.value : item, path + "[" + std::to_string(i) + "]", "must be a non-empty string");
        continue;
      }
      out->push_back(item.Scalar());
    }
  }

  // A rule's related repositories (issue 37): 2 to kMaxRuleRepositories of "owner/name", each once.
  void ReadRelatedRepositories(const Entry& e, const std::string& path, std::vector<std::string>* out) {
    if (!e.value.IsSequence()) {
      Add(Where(e), path, "must be a list of repositories, e.g. [acme/api, acme/web]" + Got(e.value));
      return;
    }
    if (e.value.size() < 2 || e.value.size() > kMaxRuleRepositories) {
      Add(Where(e), path, "must list 2 to " + std::to_string(kMaxRuleRepositories) + " repositories (got " +
                              std::to_string(e.value.size()) + ")");
      return;
    }
    for (std::size_t i = 0; i < e.value.size(); ++i) {
      YAML::Node item = e.value[i];
      const std::string p = path + "[" + std::to_string(i) + "]";
      if (!item.IsScalar() || !github_threads::IsRepositoryName(item.Scalar())) {
        Add(item.IsNull() ? e.value : item, p, "is not a repository: write it as GitHub does, \"owner/name\"");
        continue;
      }
      const std::string name = github_threads::Canonical(item.Scalar());
      if (std::find(out->begin(), out->end(), name) != out->end()) {
        Add(item, p, "is written twice (GitHub's names ignore case)");
        continue;
      }
      out->push_back(name);
    }
  }

  // One admission cell restricted to `options` (SPEC §4.3).
  void ReadCell(const Entry& e, const std::string& path, const std::vector<std::string>& options, Strength* out) {
    Strength s;
    if (e.value.IsScalar() && std::find(options.begin(), options.end(), e.value.Scalar()) != options.end() &&
        ParseStrength(e.value.Scalar(), &s)) {
      *out = s;
      return;
    }
    Add(Where(e), path, "must be one of " + text::Join(options, ", ") + Got(e.value));
  }

  // budgets: {explicit: {...}, inferred: {...}}; an absent kind or member keeps its default.
  void ReadBudgets(const Entry& e, Policy* out) {
    if (!ExpectMap(e, "budgets")) return;
    for (const Entry& kind : Entries(e.value, "budgets", &kBudgetKinds)) {
      const std::string path = "budgets." + kind.key;
      if (!ExpectMap(kind, path)) continue;
      Budget& b = kind.key == "explicit" ? out->budgets.for_explicit : out->budgets.for_inferred;
      for (const Entry& f : Entries(kind.value, path, &kBudgetKeys)) {
        const std::string p = path + "." + f.key;
        if (f.key == "cost_usd") ReadAmount(f, p, &b.cost_usd);
        else ReadCount(f, p, f.key == "tokens" ? &b.tokens : f.key == "turns" ? &b.turns : &b.wall_clock_minutes);
      }
    }
  }

  // circuit_breaker: {per_sender, per_source, window_minutes}; an absent member keeps its default.
  void ReadCircuitBreaker(const Entry& e, CircuitBreaker* out) {
    if (!ExpectMap(e, "circuit_breaker")) return;
    for (const Entry& f : Entries(e.value, "circuit_breaker", &kCircuitBreakerKeys)) {
      const std::string p = "circuit_breaker." + f.key;
      std::int64_t v = -1;
      ReadCount(f, p, &v);
      if (v < 0) continue;  // ReadCount said why
      if (f.key == "window_minutes" && (v < 1 || v > kMaxCircuitBreakerWindowMinutes)) {
        Add(Where(f), p, "must be from 1 to " + std::to_string(kMaxCircuitBreakerWindowMinutes) + " minutes" + Got(f.value));
        continue;
      }
      (f.key == "per_sender" ? out->per_sender : f.key == "per_source" ? out->per_source : out->window_minutes) = v;
    }
  }

  // judgement: {promote_at, promote_after, demote_at, demote_after, window_days} (issue 38).
  void ReadJudgement(const Entry& e, JudgementSettings* out) {
    if (!ExpectMap(e, "judgement")) return;
    for (const Entry& f : Entries(e.value, "judgement", &kJudgementKeys)) {
      const std::string p = "judgement." + f.key;
      if (f.key == "promote_at" || f.key == "demote_at") {
        ReadShare(f, p, f.key == "promote_at" ? &out->promote_at : &out->demote_at);
        continue;
      }
      std::int64_t v = -1;
      ReadCount(f, p, &v);
      if (v < 0) continue;  // ReadCount said why
      const std::int64_t most = f.key == "window_days" ? 365 : 10'000;
      if (v < 1 || v > most) {
        Add(Where(f), p, "must be from 1 to " + std::to_string(most) + Got(f.value));
        continue;
      }
      (f.key == "promote_after" ? out->promote_after : f.key == "demote_after" ? out->demote_after : out->window_days) =
          static_cast<int>(v);
    }
    if (out->demote_at > out->promote_at)
      Add(Where(e), "judgement", "demote_at must not be above promote_at (a rule would be proposed both ways)");
  }

  // A plain share from 0 to 1, such as 0.9.
  void ReadShare(const Entry& e, const std::string& path, double* out) {
    const std::string s = e.value.IsScalar() && e.value.Tag() != "!" ? e.value.Scalar() : "";
    const bool plain = !s.empty() && s.size() <= 8 && s.find_first_not_of("0123456789.") == std::string::npos &&
                       std::count(s.begin(), s.end(), '.') <= 1 && s.front() != '.' && s.back() != '.';
    const double v = plain ? std::strtod(s.c_str(), nullptr) : -1;
    if (!plain || v < 0 || v > 1) {
      Add(Where(e), path, "must be a share from 0 to 1, such as 0.9" + Got(e.value));
      return;
    }
    *out = v;
  }

  // A plain (unquoted) whole number, 0 or more. A quoted "10" is a string, as for switches.
  void ReadCount(const Entry& e, const std::string& path, std::int64_t* out) {
    const std::string s = e.value.IsScalar() && e.value.Tag() != "!" ? e.value.Scalar() : "";
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!s.empty() && s[0] != '-' && s[0] != '+' && ec == std::errc() && end == s.data() + s.size()) {
      *out = v;
      return;
    }
    if (ec == std::errc::result_out_of_range) {
      Add(Where(e), path, "is too large" + Got(e.value));
      return;
    }
    Add(Where(e), path, "must be a whole number, 0 or more (0: no limit)" + Got(e.value));
  }

  // A plain amount of US dollars such as 10 or 2.5, 0 or more.
  void ReadAmount(const Entry& e, const std::string& path, double* out) {
    const std::string s = e.value.IsScalar() && e.value.Tag() != "!" ? e.value.Scalar() : "";
    const std::size_t dot = s.find('.');
    const bool digits = !s.empty() && s.size() <= 15 && s.find_first_not_of("0123456789.") == std::string::npos &&
                        dot != 0 && dot + 1 != s.size() && s.find('.', dot == std::string::npos ? 0 : dot + 1) == std::string::npos;
    if (digits) {
      *out = std::strtod(s.c_str(), nullptr);
      return;
    }
    Add(Where(e), path, "must be an amount of US dollars such as 10 or 2.5, 0 or more (0: no limit)" + Got(e.value));
  }

  void ReadScope(const std::string& source, const Entry& row, const std::string& path, ScopePolicy* out) {
    if (!ExpectMap(row, path)) return;
    const bool ci = source == "github" && row.key == "ci";
    const bool mentions_only = source == "feishu" && (row.key == "other_mentions" || row.key == "direct");
    for (const Entry& e : Entries(row.value, path, &kCellKeys)) {
      std::string p = path + "." + e.key;
      if (ci && e.key != "others_unaddressed") {
        Add(e.key_node, p, "CI has no sender: the ci row has only the others_unaddressed cell");
        continue;
      }
      if (e.key == "receive_all") {
        bool v = false;
        if (!ReadBool(e, p, &v)) continue;
        if (v && mentions_only) {
          // Only messages that @ the agent (other_mentions) or are sent to it (direct) arrive in
          // these rows; "receive all" would promise something that cannot happen.
          Add(Where(e), p, "cannot be true in the " + row.key + " row: only messages addressed to the agent arrive there");
          continue;
        }
        out->receive_all = v;
      } else if (e.key == "allowed_unaddressed") {
        ReadCell(e, p, {"inferred", "ignore"}, &out->allowed_unaddressed);
      } else if (e.key == "others_addressed") {
        ReadCell(e, p, {"explicit", "inferred", "ignore"}, &out->others_addressed);
      } else {
        ReadCell(e, p, {"inferred", "ignore"}, &out->others_unaddressed);
      }
    }
  }

  // repos: {"owner/name": {mode, sources: {github: {...}}}} (issue 37): one repository's own
  // mode and GitHub admission table, each taking the place of the top-level one there.
  void ReadRepositories(const Entry& e, Policy* out) {
    if (!ExpectMap(e, "repos")) return;
    for (const Entry& repo : Entries(e.value, "repos", nullptr)) {
      const std::string p = "repos." + repo.key;
      if (!github_threads::IsRepositoryName(repo.key)) {
        Add(repo.key_node, p, "is not a repository: write it as GitHub does, \"owner/name\"");
        continue;
      }
      const std::string name = github_threads::Canonical(repo.key);
      if (out->repos.count(name)) {
        Add(repo.key_node, p, "is written twice (GitHub's names ignore case)");
        continue;
      }
      RepositoryPolicy& rows = out->repos[name];
      if (!ExpectMap(repo, p)) continue;
      for (const Entry& f : Entries(repo.value, p, &kRepositoryKeys)) {
        const std::string fp = p + "." + f.key;
        if (f.key == "mode") {
          Mode m = Mode::kObserve;
          if (!f.value.IsScalar() || !ParseMode(f.value.Scalar(), &m))
            Add(Where(f), fp, "must be one of off, observe, auto" + Got(f.value));
          else
            rows.mode = m;
          continue;
        }
        if (!ExpectMap(f, fp)) continue;
        for (const Entry& src : Entries(f.value, fp, nullptr)) {
          if (src.key != "github") {
            Add(src.key_node, fp + "." + src.key,
                "a repository's rows are GitHub's; sources." + src.key + " is written once, at the top");
            continue;
          }
          rows.github.emplace();
          ReadSource(src, fp + ".github", &*rows.github);
        }
      }
    }
  }

  static bool KnownScope(const std::string& source, const std::string& scope) {
    if (source == "github") return scope == "issues" || scope == "pulls" || scope == "comments" || scope == "ci";
    return scope == "other_mentions" || scope == "direct" || (scope.rfind("chat:", 0) == 0 && scope.size() > 5);
  }

  void ReadSource(const Entry& src, const std::string& path, SourcePolicy* out) {
    if (!ExpectMap(src, path)) return;
    for (const Entry& e : Entries(src.value, path, &kSourceKeys)) {
      std::string p = path + "." + e.key;
      if (e.key == "people") {
        ReadIdentities(e, p, &out->people);
      } else if (e.key == "bots") {
        ReadIdentities(e, p, &out->bots);
      } else if (e.key == "tell_others") {
        ReadBool(e, p, &out->tell_others);
      } else {
        if (!ExpectMap(e, p)) continue;
        for (const Entry& row : Entries(e.value, p, nullptr)) {
          std::string rp = p + "." + row.key;
          if (!KnownScope(src.key, row.key)) {
            Add(row.key_node, rp,
                src.key == "github" ? "unknown github scope (expected one of issues, pulls, comments, ci)"
                                    : "unknown feishu scope (expected chat:<chat_id>, other_mentions or direct)");
            continue;
          }
          ReadScope(src.key, row, rp, &out->scopes[row.key]);
        }
      }
    }
  }

  // A whole number in [min, max]. A quoted "3" is a string, as with booleans.
  bool ReadRuleBound(const Entry& e, const std::string& path, int min, int max, const std::string& why, int* out) {
    if (e.value.IsScalar() && e.value.Tag() != "!") {
      const std::string& s = e.value.Scalar();
      int v = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && end == s.data() + s.size() && v >= min && v <= max) {
        *out = v;
        return true;
      }
    }
    Add(Where(e), path,
        "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) + why + Got(e.value));
    return false;
  }

  // A rule's auto_merge block (SPEC §6): when the daemon may merge the rule's pull request.
  void ReadAutoMerge(const Entry& e, const std::string& path, AutoMergePolicy* out) {
    if (!ExpectMap(e, path) || e.value.IsNull()) return;
    for (const Entry& f : Entries(e.value, path, &kAutoMergeKeys)) {
      std::string p = path + "." + f.key;
      if (f.key == "enabled") {
        ReadBool(f, p, &out->enabled);
      } else if (f.key == "max_changed_lines") {
        ReadRuleBound(f, p, 1, 200, "; the SPEC's 200 is a ceiling a team may lower, not raise",
                      &out->max_changed_lines);
      } else {
        ReadRuleBound(f, p, 1, 10, "", &out->required_approvals);
      }
    }
  }

  void ReadRules(const Entry& e, Policy* out) {
    if (e.value.IsNull()) return;
    if (!e.value.IsSequence()) {
      Add(Where(e), "rules", "must be a list of rules");
      return;
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < e.value.size(); ++i) {
      YAML::Node item = e.value[i];
      std::string path = "rules[" + std::to_string(i) + "]";
      if (!item.IsMap()) {
        Add(item.IsNull() ? e.value : item, path, "must be a mapping with name, when and instructions");
        continue;
      }
      Rule r;
      bool has_name = false, has_when = false;
      for (const Entry& f : Entries(item, path, &kRuleKeys)) {
        std::string p = path + "." + f.key;
        if (f.key == "name") {
          has_name = true;
          if (!ReadString(f, p, &r.name)) continue;
          if (r.name.empty()) {
            Add(Where(f), p, "must not be empty");
          } else if (!names.insert(r.name).second) {
            Add(Where(f), p, "duplicate rule name \"" + r.name + "\" (rule names must be unique)");
          }
        } else if (f.key == "enabled") {
          ReadBool(f, p, &r.enabled);
        } else if (f.key == "when") {
          has_when = true;
          if (!ReadString(f, p, &r.when)) continue;
          if (r.when.empty()) Add(Where(f), p, "must not be empty: it says what the rule covers");
        } else if (f.key == "instructions") {
          ReadString(f, p, &r.instructions);
        } else if (f.key == "silent") {
          ReadBool(f, p, &r.silent);
        } else if (f.key == "approver") {
          ReadString(f, p, &r.approver);
        } else if (f.key == "repos") {
          ReadRelatedRepositories(f, p, &r.repos);
        } else if (f.key == "mode") {
          // off for one rule is enabled: false; a rule's own mode is how it earns auto (issue 38).
          Mode m = Mode::kObserve;
          if (!f.value.IsScalar() || !ParseMode(f.value.Scalar(), &m) || m == Mode::kOff)
            Add(Where(f), p, "must be observe or auto (to turn a rule off, set enabled: false)" + Got(f.value));
          else
            r.mode = m;
        } else {
          ReadAutoMerge(f, p, &r.auto_merge);
        }
      }
      if (!has_name) Add(item, path + ".name", "is required");
      if (!has_when) Add(item, path + ".when", "is required");
      out->rules.push_back(std::move(r));
    }
  }

  void ReadRoot(const YAML::Node& root, Policy* out) {
    if (root.IsNull()) return;  // an empty file is an empty policy
    if (!root.IsMap()) {
      Add(root, "", "a policy is a mapping with keys " + text::Join(kRootKeys, ", "));
      return;
    }
    for (const Entry& e : Entries(root, "", &kRootKeys)) {
      if (e.key == "mode") {
        if (!e.value.IsScalar() || !ParseMode(e.value.Scalar(), &out->mode))
          Add(Where(e), "mode", "must be one of off, observe, auto" + Got(e.value));
      } else if (e.key == "sources") {
        if (!ExpectMap(e, "sources")) continue;
        for (const Entry& src : Entries(e.value, "sources", nullptr)) {
          std::string p = "sources." + src.key;
          if (src.key != "github" && src.key != "feishu") {
            Add(src.key_node, p, "unknown source (expected github or feishu)");
            continue;
          }
          ReadSource(src, p, &out->sources[src.key]);
        }
      } else if (e.key == "budgets") {
        ReadBudgets(e, out);
      } else if (e.key == "circuit_breaker") {
        ReadCircuitBreaker(e, &out->circuit_breaker);
      } else if (e.key == "judgement") {
        ReadJudgement(e, &out->judgement);
      } else if (e.key == "repos") {
        ReadRepositories(e, out);
      } else {
        ReadRules(e, out);
      }
    }
  }

 private:
  static std::string Got(const YAML::Node& n) {
    if (n.IsScalar()) return " (got \"" + n.Scalar() + "\")";
    if (n.IsNull()) return " (got nothing)";
    return n.IsMap() ? " (got a mapping)" : " (got a list)";
  }

  std::string file_;
  std::vector<Problem>* problems_;
  int count_ = 0;
};

}  // namespace

std::optional<Policy> ParsePolicy(std::string_view yaml, const std::string& file, std::vector<Problem>* problems) {
  std::vector<Problem> local;
  if (problems == nullptr) problems = &local;
  const std::size_t first = problems->size();
  PolicyReader reader(file, problems);
  Policy policy;
  try {
    policy::YamlDocuments docs = policy::LoadYamlDocuments(std::string(yaml));
    if (docs.count > 1) {
      reader.Add(docs.second_mark, "", "a policy file holds one YAML document (found " + std::to_string(docs.count) + ")");
    } else if (docs.count == 1) {
      reader.ReadRoot(docs.first, &policy);
    }
  } catch (const YAML::Exception& e) {
    // Malformed YAML: nothing after the error can be trusted, so this is the only problem.
    Problem p;
    p.file = file;
    if (!e.mark.is_null() && e.mark.line >= 0) {
      p.line = e.mark.line + 1;
      p.column = e.mark.column + 1;
    }
    p.message = "invalid YAML: " + e.msg;
    problems->push_back(std::move(p));
    return std::nullopt;
  }
  if (!reader.ok()) {
    // Checks run section by section (a mapping's keys before its values), so put the list in
    // file order: that is how a person reads and fixes it.
    std::stable_sort(problems->begin() + static_cast<std::ptrdiff_t>(first), problems->end(),
                     [](const Problem& a, const Problem& b) {
                       return a.line != b.line ? a.line < b.line : a.column < b.column;
                     });
    return std::nullopt;
  }
  return policy;
}

std::optional<Policy> LoadPolicyFile(const std::string& path, std::vector<Problem>* problems) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    if (problems != nullptr) problems->push_back(Problem{path, 0, 0, "cannot read policy file: is a directory"});
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    if (problems != nullptr)
      problems->push_back(Problem{path, 0, 0, std::string("cannot read policy file: ") + std::strerror(err)});
    return std::nullopt;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    if (problems != nullptr) problems->push_back(Problem{path, 0, 0, "cannot read policy file: read error"});
    return std::nullopt;
  }
  return ParsePolicy(buf.str(), path, problems);
}

}  // namespace superagent
