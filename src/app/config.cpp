#include "app/config.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "app/logging.h"
#include "superagent/host_port.h"
#include "policy/yaml_documents.h"

namespace superagent {

namespace {

// One key of a mapping and what to do with its value.
struct Field {
  const char* name;
  std::function<void(const YAML::Node& key, const YAML::Node& value, const std::string& path)> read;
};

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool IsHttpUrl(std::string_view s) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (StartsWith(s, scheme) && s.size() > scheme.size()) return s.find_first_of(" \t\r\n") == std::string_view::npos;
  }
  return false;
}

// GitHub's own rules: owners are alphanumerics and '-', repository names add '.' and '_'.
bool IsRepoName(std::string_view repo) {
  size_t slash = repo.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == repo.size()) return false;
  std::string_view owner = repo.substr(0, slash);
  std::string_view name = repo.substr(slash + 1);
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  for (char c : owner) {
    if (!alnum(c) && c != '-') return false;
  }
  for (char c : name) {
    if (!alnum(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return name != "." && name != "..";
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

  // Walks a mapping: every key must be one of `fields`, once. A missing or null section means
  // "all defaults".
  void Mapping(const YAML::Node& key, const YAML::Node& node, const std::string& path,
               const std::vector<Field>& fields) {
    if (!node.IsDefined() || node.IsNull()) return;
    if (!node.IsMap()) {
      Add(Where(key, node), (path.empty() ? std::string("the top level") : path) + ": must be a mapping of keys");
      return;
    }
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
      const Field* field = nullptr;
      for (const Field& f : fields) {
        if (k.Scalar() == f.name) field = &f;
      }
      if (field == nullptr) {
        Add(k.Mark(), UnknownKeyMessage(full, k.Scalar(), path, fields));
        continue;
      }
      field->read(k, kv.second, full);
    }
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

  // A non-empty string.
  void Required(const YAML::Node& key, const YAML::Node& value, const std::string& path, std::string* out) {
    std::string s;
    if (!String(key, value, path, &s)) return;
    if (s.empty()) {
      Add(Where(key, value), path + ": must not be empty");
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

  // A GitHub login: letters, digits and single inner hyphens, at most 39 characters; an app's
  // bot account adds "[bot]". Empty means "ask GitHub".
  void Login(const YAML::Node& key, const YAML::Node& value, const std::string& path, std::string* out) {
    std::string s;
    if (!String(key, value, path, &s)) return;
    std::string name = s;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, "[bot]") == 0) name.resize(name.size() - 5);
    bool valid = name.size() <= 39 && !name.empty() && name.front() != '-' && name.back() != '-';
    for (char c : name) {
      bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!alnum && c != '-') valid = false;
    }
    if (!s.empty() && !valid) {
      Add(Where(key, value), path + ": must be empty or a GitHub login like my-agent (got " + Quote(s) + ")");
      return;
    }
    *out = s;
  }

  void Url(const YAML::Node& key, const YAML::Node& value, const std::string& path, std::string* out) {
    std::string s;
    if (!String(key, value, path, &s)) return;
    if (!IsHttpUrl(s)) {
      Add(Where(key, value), path + ": must be an http:// or https:// URL (got " + Quote(s) + ")");
      return;
    }
    *out = s;
  }

 private:
  static std::string UnknownKeyMessage(const std::string& full, const std::string& name, const std::string& path,
                                       const std::vector<Field>& fields) {
    std::string known;
    for (const Field& f : fields) {
      if (!known.empty()) known += ", ";
      known += f.name;
    }
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

Config DefaultConfig() { return Config{}; }

bool IsEnvVarName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

bool LooksLikeSecret(std::string_view value) {
  // Prefixes of credentials people actually paste: GitHub (classic, OAuth, user-to-server,
  // server-to-server, refresh, fine-grained), OpenAI-style API keys (DeepSeek too), Slack,
  // GitLab, AWS access key ids, and whole Authorization headers.
  static constexpr std::string_view kPrefixes[] = {
      "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk-", "xoxb-", "xoxp-", "glpat-", "AKIA", "Bearer ",
  };
  for (std::string_view p : kPrefixes) {
    if (StartsWith(value, p) && value.size() > p.size()) return true;
  }
  // Variable names are short words joined by '_'; a long run of mixed-case letters and digits
  // without one is a random token (e.g. a Feishu app secret).
  if (value.size() >= 24 && value.find('_') == std::string_view::npos) {
    bool lower = false, upper = false, digit = false;
    for (char c : value) {
      lower |= c >= 'a' && c <= 'z';
      upper |= c >= 'A' && c <= 'Z';
      digit |= c >= '0' && c <= '9';
    }
    if (digit && (lower || upper)) return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> SecretEnvNames(const Config& c) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](const char* key, const std::string& name) {
    if (!name.empty()) out.emplace_back(key, name);
  };
  add("github.token_env", c.github.token_env);
  add("github.webhook_secret_env", c.github.webhook_secret_env);
  add("feishu.app_id_env", c.feishu.app_id_env);
  add("feishu.app_secret_env", c.feishu.app_secret_env);
  add("feishu.encrypt_key_env", c.feishu.encrypt_key_env);
  add("feishu.verification_token_env", c.feishu.verification_token_env);
  add("llm.api_key_env", c.llm.api_key_env);
  add("panel.token_env", c.panel.token_env);
  return out;
}

std::vector<std::string> ExecutionEnvWarnings(const Config& c) {
  std::vector<std::string> out;
  for (const std::string& name : c.execution.env)
    for (const auto& [key, secret] : SecretEnvNames(c))
      if (name == secret)
        out.push_back("execution.env passes " + name + " (the daemon's " + key +
                      ") to every worker command: a worker that reads strangers' text can be made to print or "
                      "send it; give the worker a credential of its own under another name instead");
  return out;
}

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

  using Y = const YAML::Node&;
  using S = const std::string&;
  YAML::Mark listen_mark = YAML::Mark::null_mark();  // where panel.listen was set, for the check below
  YAML::Mark executor_mark = YAML::Mark::null_mark();  // where execution.executor was set
  try {
    r.Mapping(YAML::Node(), root, "",
              {
                  {"data_dir", [&](Y k, Y v, S p) { r.Required(k, v, p, &cfg.data_dir); }},
                  {"policy_file", [&](Y k, Y v, S p) { r.String(k, v, p, &cfg.policy_file); }},
                  {"panel",
                   [&](Y k, Y v, S p) {
                     r.Mapping(k, v, p,
                               {{"listen", [&](Y k2, Y v2, S p2) {
                                   std::string s, host;
                                   int port = 0;
                                   if (!r.String(k2, v2, p2, &s)) return;
                                   if (!SplitHostPort(s, &host, &port)) {
                                     r.Add(Reader::Where(k2, v2),
                                           p2 + ": must be \"host:port\" with port 1..65535 (got " + Quote(s) + ")");
                                     return;
                                   }
                                   cfg.panel.listen = s;
                                   listen_mark = Reader::Where(k2, v2);
                                 }},
                                {"token_env", [&](Y k2, Y v2, S p2) {
                                   std::string s;
                                   if (!r.String(k2, v2, p2, &s)) return;
                                   if (s.empty()) cfg.panel.token_env.clear();
                                   else r.EnvName(k2, v2, p2, &cfg.panel.token_env);
                                 }}});
                   }},
                  {"log",
                   [&](Y k, Y v, S p) {
                     r.Mapping(k, v, p,
                               {{"level", [&](Y k2, Y v2, S p2) {
                                   std::string s;
                                   spdlog::level::level_enum level = spdlog::level::info;
                                   if (!r.String(k2, v2, p2, &s)) return;
                                   if (!app::ParseLogLevel(s, &level)) {
                                     r.Add(Reader::Where(k2, v2),
                                           p2 + ": must be one of trace, debug, info, warn, error (got " + Quote(s) +
                                               ")");
                                     return;
                                   }
                                   cfg.log.level = s;
                                 }}});
                   }},
                  {"github",
                   [&](Y k, Y v, S p) {
                     r.Mapping(k, v, p,
                               {
                                   {"api_url", [&](Y k2, Y v2, S p2) { r.Url(k2, v2, p2, &cfg.github.api_url); }},
                                   {"repo",
                                    [&](Y k2, Y v2, S p2) {
                                      std::string s;
                                      if (!r.String(k2, v2, p2, &s)) return;
                                      if (!s.empty() && !IsRepoName(s)) {
                                        r.Add(Reader::Where(k2, v2),
                                              p2 + ": must be empty or \"owner/name\" (got " + Quote(s) + ")");
                                        return;
                                      }
                                      cfg.github.repo = s;
                                    }},
                                   {"token_env",
                                    [&](Y k2, Y v2, S p2) { r.EnvName(k2, v2, p2, &cfg.github.token_env); }},
                                   {"webhook_secret_env",
                                    [&](Y k2, Y v2, S p2) { r.EnvName(k2, v2, p2, &cfg.github.webhook_secret_env); }},
                                   {"bot_login", [&](Y k2, Y v2, S p2) { r.Login(k2, v2, p2, &cfg.github.bot_login); }},
                                   {"poll_interval_seconds",
                                    [&](Y k2, Y v2, S p2) {
                                      r.Int(k2, v2, p2, 60, 3600, &cfg.github.poll_interval_seconds);
                                    }},
                                   {"message_max_chars",
                                    [&](Y k2, Y v2, S p2) {
                                      r.Int(k2, v2, p2, 1000, 65000, &cfg.github.message_max_chars);
                                    }},
                                   {"read",
                                    [&](Y k2, Y v2, S p2) {
                                      auto& rd = cfg.github.read;
                                      r.Mapping(k2, v2, p2,
                                                {
                                                    {"issues", [&](Y k3, Y v3, S p3) { r.Bool(k3, v3, p3, &rd.issues); }},
                                                    {"pulls", [&](Y k3, Y v3, S p3) { r.Bool(k3, v3, p3, &rd.pulls); }},
                                                    {"comments",
                                                     [&](Y k3, Y v3, S p3) { r.Bool(k3, v3, p3, &rd.comments); }},
                                                    {"ci", [&](Y k3, Y v3, S p3) { r.Bool(k3, v3, p3, &rd.ci); }},
                                                });
                                    }},
                               });
                   }},
                  {"feishu",
                   [&](Y k, Y v, S p) {
                     auto& f = cfg.feishu;
                     r.Mapping(k, v, p,
                               {
                                   {"enabled", [&](Y k2, Y v2, S p2) { r.Bool(k2, v2, p2, &f.enabled); }},
                                   {"api_url", [&](Y k2, Y v2, S p2) { r.Url(k2, v2, p2, &f.api_url); }},
                                   {"app_id_env", [&](Y k2, Y v2, S p2) { r.EnvName(k2, v2, p2, &f.app_id_env); }},
                                   {"app_secret_env",
                                    [&](Y k2, Y v2, S p2) { r.EnvName(k2, v2, p2, &f.app_secret_env); }},
                                   {"encrypt_key_env",
                                    [&](Y k2, Y v2, S p2) { r.EnvName(k2, v2, p2, &f.encrypt_key_env); }},
                                   {"verification_token_env",
                                    [&](Y k2, Y v2, S p2) { r.EnvName(k2, v2, p2, &f.verification_token_env); }},
                                   {"realtime",
                                    [&](Y k2, Y v2, S p2) {
                                      std::string s;
                                      if (!r.String(k2, v2, p2, &s)) return;
                                      if (s != "long_connection" && s != "callback") {
                                        r.Add(Reader::Where(k2, v2),
                                              p2 + ": must be one of long_connection, callback (got " + Quote(s) + ")");
                                        return;
                                      }
                                      f.realtime = s;
                                    }},
                                   {"poll_interval_seconds",
                                    [&](Y k2, Y v2, S p2) { r.Int(k2, v2, p2, 10, 3600, &f.poll_interval_seconds); }},
                               });
                   }},
                  {"llm",
                   [&](Y k, Y v, S p) {
                     r.Mapping(
                         k, v, p,
                         {
                             {"base_url", [&](Y k2, Y v2, S p2) { r.Url(k2, v2, p2, &cfg.llm.base_url); }},
                             {"api_key_env", [&](Y k2, Y v2, S p2) { r.EnvName(k2, v2, p2, &cfg.llm.api_key_env); }},
                             {"assessment_model",
                              [&](Y k2, Y v2, S p2) { r.Required(k2, v2, p2, &cfg.llm.assessment_model); }},
                             {"execution_model",
                              [&](Y k2, Y v2, S p2) { r.String(k2, v2, p2, &cfg.llm.execution_model); }},
                             {"timeout_seconds",
                              [&](Y k2, Y v2, S p2) { r.Int(k2, v2, p2, 1, 3600, &cfg.llm.timeout_seconds); }},
                             {"max_retries", [&](Y k2, Y v2, S p2) { r.Int(k2, v2, p2, 0, 10, &cfg.llm.max_retries); }},
                             {"max_retry_wait_seconds",
                              [&](Y k2, Y v2, S p2) { r.Int(k2, v2, p2, 1, 600, &cfg.llm.max_retry_wait_seconds); }},
                         });
                   }},
                  {"prompts",
                   [&](Y k, Y v, S p) {
                     r.Mapping(k, v, p,
                               {{"team_dir", [&](Y k2, Y v2, S p2) { r.String(k2, v2, p2, &cfg.prompts.team_dir); }}});
                   }},
                  {"execution",
                   [&](Y k, Y v, S p) {
                     r.Mapping(k, v, p,
                               {{"slots", [&](Y k2, Y v2, S p2) { r.Int(k2, v2, p2, 1, 64, &cfg.execution.slots); }},
                                {"executor",
                                 [&](Y k2, Y v2, S p2) {
                                   std::string s;
                                   if (!r.String(k2, v2, p2, &s)) return;
                                   executor_mark = Reader::Where(k2, v2);
                                   if (s != "builtin" && s != "command") {
                                     r.Add(executor_mark, p2 + ": must be builtin or command (got " + Quote(s) + ")");
                                     return;
                                   }
                                   cfg.execution.executor = s;
                                 }},
                                {"command", [&](Y k2, Y v2, S p2) { r.String(k2, v2, p2, &cfg.execution.command); }},
                                {"git_remote",
                                 [&](Y k2, Y v2, S p2) { r.String(k2, v2, p2, &cfg.execution.git_remote); }},
                                {"prepare", [&](Y k2, Y v2, S p2) { r.String(k2, v2, p2, &cfg.execution.prepare); }},
                                {"nice", [&](Y k2, Y v2, S p2) { r.Int(k2, v2, p2, 0, 19, &cfg.execution.nice); }},
                                {"cgroups",
                                 [&](Y k2, Y v2, S p2) {
                                   std::string s;
                                   if (!r.String(k2, v2, p2, &s)) return;
                                   if (s != "auto" && s != "off") {
                                     r.Add(Reader::Where(k2, v2), p2 + ": must be auto or off (got " + Quote(s) + ")");
                                     return;
                                   }
                                   cfg.execution.cgroups = s;
                                 }},
                                {"sandbox",
                                 [&](Y k2, Y v2, S p2) {
                                   std::string s;
                                   if (!r.String(k2, v2, p2, &s)) return;
                                   if (s != "on" && s != "off") {
                                     r.Add(Reader::Where(k2, v2), p2 + ": must be on or off (got " + Quote(s) + ")");
                                     return;
                                   }
                                   cfg.execution.sandbox = s;
                                 }},
                                {"network",
                                 [&](Y k2, Y v2, S p2) {
                                   // YAML reads a bare on/off as a boolean: both spellings mean the same.
                                   std::string s;
                                   if (!r.String(k2, v2, p2, &s)) return;
                                   if (s == "on" || s == "true") cfg.execution.network = true;
                                   else if (s == "off" || s == "false") cfg.execution.network = false;
                                   else r.Add(Reader::Where(k2, v2), p2 + ": must be on or off (got " + Quote(s) + ")");
                                 }},
                                {"env",
                                 [&](Y k2, Y v2, S p2) {
                                   if (v2.IsNull()) return;
                                   if (!v2.IsSequence()) {
                                     r.Add(Reader::Where(k2, v2), p2 + ": must be a list of environment variable names");
                                     return;
                                   }
                                   cfg.execution.env.clear();
                                   for (std::size_t i = 0; i < v2.size(); ++i) {
                                     std::string name;
                                     r.EnvName(v2[i], v2[i], p2 + "[" + std::to_string(i) + "]", &name);
                                     if (!name.empty()) cfg.execution.env.push_back(name);
                                   }
                                 }}});
                   }},
                  {"eval",
                   [&](Y k, Y v, S p) {
                     r.Mapping(k, v, p,
                               {
                                   {"timeout_seconds",
                                    [&](Y k2, Y v2, S p2) { r.Int(k2, v2, p2, 1, 3600, &cfg.eval.timeout_seconds); }},
                                   {"max_attempts",
                                    [&](Y k2, Y v2, S p2) { r.Int(k2, v2, p2, 1, 20, &cfg.eval.max_attempts); }},
                               });
                   }},
                  {"quarantine",
                   [&](Y k, Y v, S p) {
                     r.Mapping(k, v, p,
                               {
                                   {"after", [&](Y k2, Y v2, S p2) { r.Int(k2, v2, p2, 2, 100, &cfg.quarantine.after); }},
                               });
                   }},
              });
  } catch (const YAML::Exception& e) {
    // Conversions above do not throw; this guards against yaml-cpp surprises on odd documents.
    r.Add(e.mark, "YAML: " + e.msg);
  }

  // A panel reachable from other machines must ask for a password (issue 7).
  std::string listen_host;
  int listen_port = 0;
  if (!r.failed() && SplitHostPort(cfg.panel.listen, &listen_host, &listen_port) && !IsLoopbackHost(listen_host) &&
      cfg.panel.token_env.empty()) {
    r.Add(listen_mark, "panel.listen: " + Quote(cfg.panel.listen) +
                           " is not a loopback address, so the panel needs a password: set panel.token_env to the "
                           "NAME of an environment variable holding it (or listen on 127.0.0.1 behind a proxy)");
  }
  if (!r.failed() && cfg.execution.executor == "command" && cfg.execution.command.empty())
    r.Add(executor_mark, "execution.executor: command needs execution.command (the command line to run)");
  if (r.failed()) return std::nullopt;
  cfg.data_dir = ResolveAgainst(file, cfg.data_dir);
  cfg.policy_file = ResolveAgainst(file, cfg.policy_file);
  cfg.prompts.team_dir = ResolveAgainst(file, cfg.prompts.team_dir);
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

std::string ResolveSecret(const std::string& env_name) {
  if (env_name.empty()) return "";
  const char* value = std::getenv(env_name.c_str());
  return value == nullptr ? "" : std::string(value);
}

nlohmann::json ConfigToJson(const Config& c) {
  return nlohmann::json{
      {"data_dir", c.data_dir},
      {"policy_file", c.policy_file},
      {"panel", {{"listen", c.panel.listen}, {"token_env", c.panel.token_env}}},
      {"log", {{"level", c.log.level}}},
      {"feishu",
       {{"enabled", c.feishu.enabled},
        {"api_url", c.feishu.api_url},
        {"app_id_env", c.feishu.app_id_env},
        {"app_secret_env", c.feishu.app_secret_env},
        {"encrypt_key_env", c.feishu.encrypt_key_env},
        {"verification_token_env", c.feishu.verification_token_env},
        {"realtime", c.feishu.realtime},
        {"poll_interval_seconds", c.feishu.poll_interval_seconds}}},
      {"github",
       {{"api_url", c.github.api_url},
        {"repo", c.github.repo},
        {"token_env", c.github.token_env},
        {"webhook_secret_env", c.github.webhook_secret_env},
        {"bot_login", c.github.bot_login},
        {"poll_interval_seconds", c.github.poll_interval_seconds},
        {"message_max_chars", c.github.message_max_chars},
        {"read",
         {{"issues", c.github.read.issues},
          {"pulls", c.github.read.pulls},
          {"comments", c.github.read.comments},
          {"ci", c.github.read.ci}}}}},
      {"llm",
       {{"base_url", c.llm.base_url},
        {"api_key_env", c.llm.api_key_env},
        {"assessment_model", c.llm.assessment_model},
        {"execution_model", c.llm.execution_model},
        {"timeout_seconds", c.llm.timeout_seconds},
        {"max_retries", c.llm.max_retries},
        {"max_retry_wait_seconds", c.llm.max_retry_wait_seconds}}},
      {"prompts", {{"team_dir", c.prompts.team_dir}}},
      {"execution",
       {{"slots", c.execution.slots},
        {"executor", c.execution.executor},
        {"command", c.execution.command},
        {"git_remote", c.execution.git_remote},
        {"prepare", c.execution.prepare},
        {"nice", c.execution.nice},
        {"cgroups", c.execution.cgroups},
        {"sandbox", c.execution.sandbox},
        {"network", c.execution.network ? "on" : "off"},
        {"env", c.execution.env}}},
      {"eval", {{"timeout_seconds", c.eval.timeout_seconds}, {"max_attempts", c.eval.max_attempts}}},
      {"quarantine", {{"after", c.quarantine.after}}},
  };
}

}  // namespace superagent
