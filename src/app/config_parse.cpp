// Reading a config file against the key table (config.cpp): every problem with its file:line:column,
// then the rules between keys. Apart from the table, which grows with every key added.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "app/config.h"
#include "app/config_internal.h"
#include "policy/yaml_documents.h"
#include "superagent/github_threads.h"
#include "superagent/host_port.h"
#include "superagent/text.h"

namespace superagent {

namespace {

using config_internal::BoolOf;
using config_internal::IntOf;
using config_internal::ListOf;
using config_internal::StartsWith;
using config_internal::StringOf;
using config_internal::Type;

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

// "on or off", "one of trace, debug, info, warn, error".
std::string Alternatives(const std::vector<std::string_view>& choices) {
  if (choices.size() == 2) return std::string(choices[0]) + " or " + std::string(choices[1]);
  std::string out = "one of ";
  for (std::size_t i = 0; i < choices.size(); ++i) out += (i > 0 ? ", " : "") + std::string(choices[i]);
  return out;
}

// Collects problems against one file. yaml-cpp marks are 0-based and -1 when unknown; Problem
// is 1-based with 0 meaning unknown.
class Reader {
 public:
  Reader(std::string file, std::vector<Problem>* problems) : file_(std::move(file)), problems_(problems) {}

  bool failed() const { return failed_; }

  void Add(const YAML::Mark& mark, std::string message) {
    Problem p;
    p.file = file_;
    p.line = mark.line >= 0 ? mark.line + 1 : 0;
    p.column = mark.column >= 0 && mark.line >= 0 ? mark.column + 1 : 0;
    p.message = std::move(message);
    problems_->push_back(std::move(p));
    failed_ = true;
  }

  // The value's own place when yaml-cpp knows it (an implicit null may not have one), else
  // its key's.
  static YAML::Mark Where(const YAML::Node& key, const YAML::Node& value) {
    YAML::Mark m = value.Mark();
    return m.is_null() ? key.Mark() : m;
  }

  // A string value. Null (`key:` with nothing after it) reads as "".
  bool String(const YAML::Node& key, const YAML::Node& value, const std::string& path, std::string* out) {
    if (value.IsNull()) {
      out->clear();
      return true;
    }
    if (!value.IsScalar()) {
      Add(Where(key, value), path + ": must be a string");
      return false;
    }
    *out = value.Scalar();
    return true;
  }

  // An integer within [lo, hi].
  void Int(const YAML::Node& key, const YAML::Node& value, const std::string& path, int lo, int hi, int* out) {
    int parsed = 0;
    if (!value.IsScalar() || !YAML::convert<int>::decode(value, parsed)) {
      std::string got = value.IsScalar() ? " (got " + Quote(value.Scalar()) + ")" : "";
      Add(Where(key, value), path + ": must be an integer" + got);
      return;
    }
    if (parsed < lo || parsed > hi) {
      Add(Where(key, value),
          path + ": must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (got " +
              std::to_string(parsed) + ")");
      return;
    }
    *out = parsed;
  }

  // The NAME of an environment variable. A credential pasted here instead is refused with a
  // message saying where secrets go, and is never echoed back.
  void EnvName(const YAML::Node& key, const YAML::Node& value, const std::string& path, std::string* out) {
    std::string s;
    if (!String(key, value, path, &s)) return;
    if (LooksLikeSecret(s)) {
      Add(Where(key, value),
          path + ": this looks like a secret value; secrets come only from environment variables; put the "
                 "variable's NAME here (e.g. GITHUB_TOKEN) and export the secret in the service's environment");
      return;
    }
    if (!IsEnvVarName(s)) {
      Add(Where(key, value), path + ": must be an environment variable name like GITHUB_TOKEN (got " + Quote(s) + ")");
      return;
    }
    *out = s;
  }

  // true / false (YAML 1.2 spellings only: "yes"/"on" are refused as ambiguous).
  void Bool(const YAML::Node& key, const YAML::Node& value, const std::string& path, bool* out) {
    if (value.IsScalar() && (value.Scalar() == "true" || value.Scalar() == "false")) {
      *out = value.Scalar() == "true";
      return;
    }
    std::string got = value.IsScalar() ? " (got " + Quote(value.Scalar()) + ")" : "";
    Add(Where(key, value), path + ": must be true or false" + got);
  }

  // A mapping row (ConfigKey::pairs): each key a plain name without spaces, to one value or a list
  // of at most kMaxPairValues, each passing k.valid and written once per key.
  void Pairs(const ConfigKey& k, const YAML::Node& key, const YAML::Node& value, const std::string& path, Config* cfg) {
    constexpr std::size_t kMaxPairValues = 5;
    if (!value.IsMap()) return Add(Where(key, value), path + ": must be a mapping, e.g. oc_123: [acme/api, acme/web]");
    std::vector<std::string>& out = ListOf(k, *cfg);
    out.clear();
    for (const auto& kv : value) {
      const YAML::Node& name = kv.first;
      if (!name.IsScalar() || name.Scalar().empty() || name.Scalar().find_first_of(" \t\n\r") != std::string::npos) {
        Add(name.Mark(), path + ": keys must be plain names without spaces");
        continue;
      }
      const std::string p = path + "." + name.Scalar();
      std::vector<YAML::Node> items;
      if (kv.second.IsScalar()) items.push_back(kv.second);
      else if (kv.second.IsSequence()) for (std::size_t i = 0; i < kv.second.size(); ++i) items.push_back(kv.second[i]);
      else {
        Add(Where(name, kv.second), p + ": must be " + std::string(k.must) + " or a list of them");
        continue;
      }
      if (items.empty() || items.size() > kMaxPairValues) {
        Add(Where(name, kv.second), p + ": must name 1 to " + std::to_string(kMaxPairValues) + " (got " +
                                        std::to_string(items.size()) + ")");
        continue;
      }
      std::vector<std::string> seen;
      for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string ip = kv.second.IsSequence() ? p + "[" + std::to_string(i) + "]" : p;
        std::string item;
        if (!String(items[i], items[i], ip, &item)) continue;
        if (k.valid != nullptr && !k.valid(item)) {
          Add(items[i].Mark(), ip + ": must be " + std::string(k.must) + " (got " + Quote(item) + ")");
          continue;
        }
        const std::string lower = text::AsciiLower(item);
        if (std::find(seen.begin(), seen.end(), lower) != seen.end()) {
          Add(items[i].Mark(), ip + ": is written twice");
          continue;
        }
        seen.push_back(lower);
        out.push_back(name.Scalar() + " " + lower);
      }
    }
  }

  // Sets `key`'s member of *cfg from `value`, or adds the problem.
  void Value(const ConfigKey& k, const YAML::Node& key, const YAML::Node& value, const std::string& path,
             Config* cfg) {
    switch (k.type) {
      case Type::kString: {
        std::string s;
        if (!String(key, value, path, &s)) return;
        if (k.required && s.empty()) return Add(Where(key, value), path + ": must not be empty");
        bool chosen = k.choices.empty();
        for (std::string_view c : k.choices) chosen |= s == c;
        if (!chosen)
          return Add(Where(key, value), path + ": must be " + Alternatives(k.choices) + " (got " + Quote(s) + ")");
        if (k.valid != nullptr && !k.valid(s))
          return Add(Where(key, value), path + ": must be " + std::string(k.must) + " (got " + Quote(s) + ")");
        StringOf(k, *cfg) = s;
        return;
      }
      case Type::kEnvName: {
        std::string& out = StringOf(k, *cfg);
        if (!k.required) {
          std::string s;
          if (!String(key, value, path, &s)) return;
          if (s.empty()) {  // none
            out.clear();
            return;
          }
        }
        return EnvName(key, value, path, &out);
      }
      case Type::kInt:
        return Int(key, value, path, k.min, k.max, &IntOf(k, *cfg));
      case Type::kBool:
        return Bool(key, value, path, &BoolOf(k, *cfg));
      case Type::kOnOff: {
        // YAML reads a bare on/off as a boolean: both spellings mean the same.
        std::string s;
        if (!String(key, value, path, &s)) return;
        bool& out = BoolOf(k, *cfg);
        if (s == "on" || s == "true") out = true;
        else if (s == "off" || s == "false") out = false;
        else Add(Where(key, value), path + ": must be on or off (got " + Quote(s) + ")");
        return;
      }
      case Type::kStringList: {
        if (value.IsNull()) return;
        if (k.pairs) return Pairs(k, key, value, path, cfg);
        if (value.IsScalar() && !k.choices.empty() && value.Scalar() == k.choices.front()) {
          ListOf(k, *cfg) = {std::string(k.choices.front())};  // the row's one word (WithWord)
          return;
        }
        if (!value.IsSequence())
          return Add(Where(key, value), path + ": must be a list of strings" +
                                            (k.choices.empty() ? "" : " or " + std::string(k.choices.front())));
        std::vector<std::string>& out = ListOf(k, *cfg);
        out.clear();
        for (std::size_t i = 0; i < value.size(); ++i) {
          std::string item;
          if (String(value[i], value[i], path + "[" + std::to_string(i) + "]", &item)) out.push_back(item);
        }
        return;
      }
      case Type::kEnvNameList: {
        if (value.IsNull()) return;
        if (!value.IsSequence()) return Add(Where(key, value), path + ": must be a list of environment variable names");
        std::vector<std::string>& out = ListOf(k, *cfg);
        out.clear();
        for (std::size_t i = 0; i < value.size(); ++i) {
          std::string name;
          EnvName(value[i], value[i], path + "[" + std::to_string(i) + "]", &name);
          if (!name.empty()) out.push_back(name);
        }
        return;
      }
    }
  }

  // Walks the mapping at `path` ("" = the top level): every key must be a key of the table or
  // a section of them, once. A missing or null section means "all defaults". Records where each
  // key's value is in *marks, for the rules between keys.
  void Mapping(const YAML::Node& key, const YAML::Node& node, const std::string& path, Config* cfg,
               std::map<std::string, YAML::Mark>* marks) {
    if (!node.IsDefined() || node.IsNull()) return;
    if (!node.IsMap()) {
      Add(Where(key, node), (path.empty() ? std::string("the top level") : path) + ": must be a mapping of keys");
      return;
    }
    const std::vector<std::string> names = Children(path);
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const YAML::Node& k = kv.first;
      if (!k.IsScalar()) {
        Add(k.Mark(), (path.empty() ? std::string("top level") : path) + ": keys must be plain names");
        continue;
      }
      const std::string full = path.empty() ? k.Scalar() : path + "." + k.Scalar();
      if (!seen.insert(k.Scalar()).second) {
        Add(k.Mark(), full + ": duplicate key");
        continue;
      }
      if (std::find(names.begin(), names.end(), k.Scalar()) == names.end()) {
        Add(k.Mark(), UnknownKeyMessage(full, k.Scalar(), path, names));
        continue;
      }
      const ConfigKey* leaf = nullptr;
      for (const ConfigKey& c : ConfigKeys())
        if (c.name == full) leaf = &c;
      if (leaf == nullptr) {
        Mapping(k, kv.second, full, cfg, marks);  // a section
        continue;
      }
      (*marks)[full] = Where(k, kv.second);
      Value(*leaf, k, kv.second, full, cfg);
    }
  }

 private:
  // The names one level below `path` ("" = the top level), in table order.
  static std::vector<std::string> Children(const std::string& path) {
    const std::string prefix = path.empty() ? "" : path + ".";
    std::vector<std::string> out;
    for (const ConfigKey& k : ConfigKeys()) {
      if (!StartsWith(k.name, prefix)) continue;
      std::string_view rest = k.name.substr(prefix.size());
      std::string child(rest.substr(0, rest.find('.')));
      if (std::find(out.begin(), out.end(), child) == out.end()) out.push_back(child);
    }
    return out;
  }

  static std::string UnknownKeyMessage(const std::string& full, const std::string& name, const std::string& path,
                                       const std::vector<std::string>& known_names) {
    std::string known;
    for (const std::string& n : known_names) known += (known.empty() ? "" : ", ") + n;
    std::string message = full + ": unknown key";
    // The likeliest reason for an unknown "token" key is an attempt to put the secret itself here.
    for (const char* hint : {"token", "secret", "password", "api_key", "apikey"}) {
      if (name.find(hint) != std::string::npos) {
        message += "; secrets come only from environment variables; put the variable's NAME in a *_env key";
        break;
      }
    }
    message += " (known keys" + (path.empty() ? std::string() : " in " + path) + ": " + known + ")";
    return message;
  }

  std::string file_;
  std::vector<Problem>* problems_;
  bool failed_ = false;
};

// Makes a relative path mean "next to the config file".
std::string ResolveAgainst(const std::string& config_file, const std::string& path) {
  if (path.empty()) return path;
  std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(config_file).parent_path() / p).lexically_normal().string();
}

}  // namespace

std::optional<Config> ParseConfig(std::string_view yaml, const std::string& file, std::vector<Problem>* problems) {
  std::vector<Problem> local;
  Reader r(file, problems != nullptr ? problems : &local);
  Config cfg = DefaultConfig();
  cfg.source_file = file;

  YAML::Node root;
  try {
    // Not Load: a second document would otherwise be ignored without a word.
    policy::YamlDocuments docs = policy::LoadYamlDocuments(std::string(yaml));
    if (docs.count > 1) {
      r.Add(docs.second_mark, "a config file holds one YAML document (found " + std::to_string(docs.count) + ")");
      return std::nullopt;
    }
    if (docs.count == 1) root = docs.first;
  } catch (const YAML::Exception& e) {
    // Nothing after a syntax error can be trusted, so this is the only problem reported.
    r.Add(e.mark, "invalid YAML: " + e.msg);
    return std::nullopt;
  }

  // Where each key was set, for the rules between keys below (a null mark when absent).
  std::map<std::string, YAML::Mark> marks;
  try {
    r.Mapping(YAML::Node(), root, "", &cfg, &marks);
  } catch (const YAML::Exception& e) {
    // Conversions above do not throw; this guards against yaml-cpp surprises on odd documents.
    r.Add(e.mark, "YAML: " + e.msg);
  }
  auto mark_of = [&](const std::string& key) {
    auto it = marks.find(key);
    return it != marks.end() ? it->second : YAML::Mark::null_mark();
  };

  // The rules between keys; the table checks one key at a time. A panel reachable from other
  // machines must ask for a password (issue 7).
  std::string listen_host;
  int listen_port = 0;
  if (!r.failed() && SplitHostPort(cfg.panel.listen, &listen_host, &listen_port) && !IsLoopbackHost(listen_host) &&
      cfg.panel.token_env.empty()) {
    r.Add(mark_of("panel.listen"),
          "panel.listen: " + Quote(cfg.panel.listen) +
              " is not a loopback address, so the panel needs a password: set panel.token_env to the "
              "NAME of an environment variable holding it (or listen on 127.0.0.1 behind a proxy)");
  }
  // github.repos: installation (issue 37): the App's installation lists them, at run time. A
  // list of the word alone reads the same: no repository is called that.
  if (!r.failed() && cfg.github.repos == std::vector<std::string>{"installation"}) {
    cfg.github.repos.clear();
    cfg.github.installation = true;
    if (!cfg.github.repo.empty())
      r.Add(mark_of("github.repo"), "github.repo and github.repos: installation are both set: the installation lists "
                                    "the repositories, so remove github.repo");
    else if (cfg.github.auth != "app")
      r.Add(mark_of("github.repos"), "github.repos: installation needs github.auth: app (a GitHub App's installation "
                                     "lists the repositories it can see; a token has no installation)");
    else if (cfg.github.app_installation_id.empty())
      r.Add(mark_of("github.repos"), "github.repos: installation needs github.app_installation_id (the number at the end "
                                     "of the installation's settings page URL): without a repository it cannot be "
                                     "looked up");
  }
  // github.repo is github.repos of one; once loaded, `repos` is the whole list and `repo` its first.
  if (!r.failed() && !cfg.github.repos.empty()) {
    std::set<std::string> seen;
    for (const std::string& repo : cfg.github.repos) {
      if (!github_threads::IsRepositoryName(repo)) {
        r.Add(mark_of("github.repos"), "github.repos: " + Quote(repo) + " is not \"owner/name\"");
      } else if (!seen.insert(text::AsciiLower(repo)).second) {
        r.Add(mark_of("github.repos"), "github.repos: " + Quote(repo) + " is listed twice");
      }
    }
    if (!cfg.github.repo.empty())
      r.Add(mark_of("github.repo"), "github.repo and github.repos are both set: github.repo is a list of one, so "
                                    "move " + Quote(cfg.github.repo) + " into github.repos (first, if it was served before)");
    if (!r.failed()) cfg.github.repo = cfg.github.repos.front();
  } else if (!cfg.github.repo.empty()) {
    cfg.github.repos = {cfg.github.repo};
  }
  if (!r.failed() && cfg.github.auth == "app" && cfg.github.On()) {
    if (cfg.github.app_id.empty())
      r.Add(mark_of("github.auth"), "github.auth: app needs github.app_id (the number on the App's settings page)");
    else if (!cfg.github.read.issues || !cfg.github.read.comments)
      r.Add(mark_of("github.auth"),
            "github.auth: app needs github.read.issues and github.read.comments on: an App gets no notifications, "
            "so its mentions are caught by reading the repository's issues and comments (and by webhooks)");
  }
  // Turns placed on workers need a listener they can reach, and a coding CLI to run there.
  if (!r.failed() && cfg.execution.placement != "local") {
    if (cfg.workers.listen.empty())
      r.Add(mark_of("execution.placement"),
            "execution.placement: " + cfg.execution.placement +
                " needs workers.listen, the \"host:port\" `superagent worker` processes connect to");
    else if (cfg.execution.ChosenCli() == nullptr)
      r.Add(mark_of("execution.placement"),
            "execution.placement: " + cfg.execution.placement + " runs a coding CLI on the workers: set execution.executor to "
                "claude-code, codex, gemini-cli or qwen-code (not " + cfg.execution.executor + ")");
  }
  if (!r.failed() && cfg.execution.executor == "command" && cfg.execution.command.empty())
    r.Add(mark_of("execution.executor"),
          "execution.executor: command needs execution.command (the command line to run)");
  if (!r.failed() && cfg.execution.executor == "codex" && !cfg.execution.codex.allowed_commands.empty())
    r.Add(mark_of("execution.executor"),
          "execution.codex.allowed_commands: Codex has no per-command allow-list (anything its rules do not "
          "match runs); leave the list empty and let the sandbox confine its commands, or choose a CLI that has one");
  if (r.failed()) return std::nullopt;
  for (const ConfigKey& k : ConfigKeys()) {
    if (!k.path) continue;
    std::string& path = StringOf(k, cfg);
    path = ResolveAgainst(file, path);
  }
  return cfg;
}

std::optional<Config> LoadConfigFile(const std::string& path, std::vector<Problem>* problems) {
  std::vector<Problem> local;
  if (problems == nullptr) problems = &local;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    problems->push_back(Problem{path, 0, 0, "cannot read config file: is a directory"});
    return std::nullopt;
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    // libstdc++ opens with open(2), so errno says why ("No such file or directory").
    std::string why = errno != 0 ? std::strerror(errno) : "unknown error";
    problems->push_back(Problem{path, 0, 0, "cannot read config file: " + why});
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();  // an empty file sets failbit on `text`; it is still a valid (empty) config
  if (in.bad()) {
    problems->push_back(Problem{path, 0, 0, "cannot read config file: read error"});
    return std::nullopt;
  }
  return ParseConfig(text.str(), path, problems);
}

}  // namespace superagent
