// One row per config key (config.cpp's ConfigKeys()): its default passes its own checks, is what a
// Config holds and what config/superagent.example.yaml says, and the module option it names is fed
// by it — by it alone — through ModuleOptionsFor and the wiring functions the daemon calls.
#include "app/config_options.h"

#include <stdlib.h>

#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "app/config.h"
#include "app/wiring.h"
#include "config_yaml.h"

namespace superagent::app {
namespace {

using superagent::testing::YamlFor;

using ::testing::HasSubstr;
using Type = ConfigKey::Type;

const std::string kExample = std::string(SUPERAGENT_SOURCE_DIR) + "/config/superagent.example.yaml";

// The variable the tests name in *_env keys, and what it holds.
constexpr const char* kSecretName = "SUPERAGENT_TEST_OPTIONS_SECRET";
constexpr const char* kSecretValue = "options-test-secret-密钥-0123";

// Sets kSecretName for the life of a test.
class SecretSet {
 public:
  SecretSet() { EXPECT_EQ(setenv(kSecretName, kSecretValue, 1), 0); }
  ~SecretSet() { unsetenv(kSecretName); }
};

std::string Dump(const std::vector<Problem>& problems) {
  std::string out;
  for (const Problem& p : problems) out += p.ToString() + "\n";
  return out;
}

Config ParseOk(const std::string& yaml) {
  std::vector<Problem> problems;
  std::optional<Config> c = ParseConfig(yaml, "/etc/superagent/superagent.yaml", &problems);
  EXPECT_TRUE(c.has_value()) << yaml << Dump(problems);
  return c.value_or(Config{});
}

// ---- defaults ----

// Why `k`'s default fails the checks ParseConfig makes of the key alone; "" when it passes them.
std::string WhyNotValid(const ConfigKey& k) {
  const ConfigKey::Value& v = k.default_value;
  switch (k.type) {
    case Type::kString: {
      const std::string* s = std::get_if<std::string>(&v);
      if (s == nullptr) return "not a string";
      if (k.required && s->empty()) return "empty, and the key is required";
      bool chosen = k.choices.empty();
      for (std::string_view c : k.choices) chosen |= *s == c;
      if (!chosen) return "not one of its choices";
      if (k.valid != nullptr && !k.valid(*s)) return "not " + std::string(k.must);
      return "";
    }
    case Type::kEnvName: {
      const std::string* s = std::get_if<std::string>(&v);
      if (s == nullptr) return "not a string";
      if (s->empty()) return k.required ? "empty, and the key is required" : "";
      if (!IsEnvVarName(*s)) return "not a variable name";
      if (LooksLikeSecret(*s)) return "looks like a secret";
      return "";
    }
    case Type::kInt: {
      const int* n = std::get_if<int>(&v);
      if (n == nullptr) return "not an int";
      return *n < k.min || *n > k.max ? "out of its bounds" : "";
    }
    case Type::kBool:
    case Type::kOnOff: return std::holds_alternative<bool>(v) ? "" : "not a bool";
    case Type::kEnvNameList:
    case Type::kStringList: {
      const auto* list = std::get_if<std::vector<std::string>>(&v);
      if (list == nullptr) return "not a list";
      if (k.type == Type::kEnvNameList)
        for (const std::string& name : *list)
          if (!IsEnvVarName(name)) return name + " is not a variable name";
      return "";
    }
  }
  return "unknown type";
}

TEST(ConfigRowsTest, EveryDefaultPassesItsOwnRowsChecks) {
  for (const ConfigKey& k : ConfigKeys()) EXPECT_EQ(WhyNotValid(k), "") << k.name << "'s default";
  // And the checks can fail: a default outside its row is caught.
  ConfigKey slots;
  for (const ConfigKey& k : ConfigKeys())
    if (k.name == "execution.slots") slots = k;
  slots.default_value = slots.max + 1;
  EXPECT_EQ(WhyNotValid(slots), "out of its bounds");
}

// The JSON of every row's default, as ConfigToJson shows a Config (on/off for kOnOff).
nlohmann::json JsonOfTheRowsDefaults() {
  nlohmann::json out = nlohmann::json::object();
  for (const ConfigKey& k : ConfigKeys()) {
    nlohmann::json* at = &out;
    std::string_view rest = k.name;
    for (std::size_t dot; (dot = rest.find('.')) != std::string_view::npos; rest.remove_prefix(dot + 1))
      at = &(*at)[std::string(rest.substr(0, dot))];
    nlohmann::json& value = (*at)[std::string(rest)];
    std::visit([&](const auto& d) { value = d; }, k.default_value);
    if (k.type == Type::kOnOff) value = std::get<bool>(k.default_value) ? "on" : "off";
    if (k.pairs) value = nlohmann::json::object();  // a mapping row shows as one, none by default
  }
  return out;
}

TEST(ConfigRowsTest, AConfigHoldsTheRowsDefaults) {
  const nlohmann::json defaults = JsonOfTheRowsDefaults();
  EXPECT_EQ(ConfigToJson(DefaultConfig()), defaults);
  Config made;
  EXPECT_EQ(ConfigToJson(made), defaults);
  EXPECT_EQ(made.source_file, "") << "not a key: no default";
  // Written out as a config file (JSON is YAML), the defaults parse with no problem and read back
  // as themselves, the relative data_dir resolved next to the file.
  Config read = ParseOk(defaults.dump(2));
  Config expected = DefaultConfig();
  expected.data_dir = "/etc/superagent/superagent-data";
  EXPECT_EQ(ConfigToJson(read), ConfigToJson(expected));
}

// The defaults are written once, in the table's rows; a Config made any way holds them.
TEST(ConfigRowsTest, AConfigMadeAnyWayHoldsTheDefaults) {
  Config made;
  for (const Config& c : {made, Config{}, DefaultConfig()}) {
    EXPECT_EQ(c.github.poll_interval_seconds, 60);
    EXPECT_EQ(c.github.message_max_chars, 65000);
    EXPECT_EQ(c.github.pull_request_origin, "link");
    EXPECT_TRUE(c.github.read.issues && c.github.read.pulls && c.github.read.comments && c.github.read.ci);
    EXPECT_FALSE(c.github.merge_as_agent);
    EXPECT_EQ(c.github.app_private_key_env, "GITHUB_APP_PRIVATE_KEY");
    EXPECT_EQ(c.github.webhook_secret_env, "GITHUB_WEBHOOK_SECRET");
    EXPECT_FALSE(c.feishu.enabled);
    EXPECT_EQ(c.feishu.api_url, "https://open.feishu.cn");
    EXPECT_EQ(c.feishu.verification_token_env, "FEISHU_VERIFICATION_TOKEN");
    EXPECT_EQ(c.feishu.realtime, "long_connection");
    EXPECT_EQ(c.feishu.thread_reads_per_round, 20);
    EXPECT_EQ(c.llm.base_url, "https://api.deepseek.com");
    EXPECT_EQ(c.llm.timeout_seconds, 60);
    EXPECT_EQ(c.execution.ci_fix_attempts, 2);
    EXPECT_EQ(c.execution.nice, 10);
    EXPECT_EQ(c.execution.cgroups, "auto");
    EXPECT_EQ(c.execution.sandbox, "on");
    EXPECT_TRUE(c.execution.network);
    EXPECT_TRUE(c.execution.env.empty());
    EXPECT_EQ(c.execution.ui_paths, (std::vector<std::string>{"web/**", "*.css", "*.scss", "*.html", "*.vue", "*.tsx",
                                                               "*.jsx", "*.svelte"}));
    for (const Config::CodingCli* cli :
         {&c.execution.claude_code, &c.execution.codex, &c.execution.gemini_cli, &c.execution.qwen_code}) {
      EXPECT_EQ(cli->turn_seconds, 1800);
      EXPECT_EQ(cli->binary, "");
      EXPECT_EQ(cli->api_key_env, "");
      EXPECT_TRUE(cli->args.empty() && cli->allowed_commands.empty());
    }
    EXPECT_EQ(ConfigToJson(c), ConfigToJson(made));
  }
}

// ---- the example file: config/superagent.example.yaml ----

TEST(ConfigTest, ExampleParsesWithZeroProblemsAndStatesTheDefaults) {
  std::vector<Problem> problems;
  std::optional<Config> c = LoadConfigFile(kExample, &problems);
  ASSERT_TRUE(c.has_value()) << Dump(problems);
  EXPECT_TRUE(problems.empty());
  // The example documents the defaults, so apart from path resolution it equals them.
  Config expected = DefaultConfig();
  expected.data_dir = std::string(SUPERAGENT_SOURCE_DIR) + "/config/superagent-data";
  EXPECT_EQ(ConfigToJson(*c), ConfigToJson(expected));
}

// Collects "a.b" paths of every scalar leaf.
void Leaves(const nlohmann::json& j, const std::string& prefix, std::set<std::string>* out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string p = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object() && !it->empty()) {  // an empty mapping is a mapping row's value (none)
      Leaves(*it, p, out);
    } else {
      out->insert(p);
    }
  }
}

void Leaves(const YAML::Node& n, const std::string& prefix, std::set<std::string>* out) {
  for (const auto& kv : n) {
    std::string p = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    if (kv.second.IsMap()) {
      Leaves(kv.second, p, out);
    } else {
      out->insert(p);
    }
  }
}

TEST(ConfigTest, ExampleSetsEveryKeyThereIs) {
  std::set<std::string> keys, in_example, in_json;
  for (const ConfigKey& k : ConfigKeys()) keys.insert(std::string(k.name));
  Leaves(YAML::LoadFile(kExample), "", &in_example);
  Leaves(ConfigToJson(DefaultConfig()), "", &in_json);
  EXPECT_EQ(in_example, keys) << "the example sets exactly the keys of the table";
  EXPECT_EQ(in_json, keys) << "ConfigToJson shows exactly the keys of the table";
  EXPECT_EQ(keys.size(), ConfigKeys().size()) << "no key is in the table twice";
  // The names people and tools rely on.
  for (const char* k : {"data_dir", "policy_file", "panel.listen", "github.api_url", "github.repo", "github.token_env",
                        "llm.base_url", "llm.api_key_env", "llm.assessment_model", "llm.execution_model",
                        "execution.slots", "log.level", "eval.timeout_seconds", "eval.max_attempts"}) {
    EXPECT_TRUE(keys.count(k)) << k;
  }
}

// A row's default as the example's comments write it: "" for an empty string, on/off, a list as
// ["a", "b"].
std::string ShownDefault(const ConfigKey& k) {
  switch (k.type) {
    case ConfigKey::Type::kString:
    case ConfigKey::Type::kEnvName: {
      const std::string& s = std::get<std::string>(k.default_value);
      return s.empty() ? "\"\"" : s;
    }
    case ConfigKey::Type::kInt: return std::to_string(std::get<int>(k.default_value));
    case ConfigKey::Type::kBool: return std::get<bool>(k.default_value) ? "true" : "false";
    case ConfigKey::Type::kOnOff: return std::get<bool>(k.default_value) ? "on" : "off";
    case ConfigKey::Type::kEnvNameList:
    case ConfigKey::Type::kStringList: {
      if (k.pairs) return "{}";  // a mapping row (feishu.chat_repos): none by default
      std::string out;
      for (const std::string& item : std::get<std::vector<std::string>>(k.default_value))
        out += (out.empty() ? "\"" : ", \"") + item + "\"";
      return "[" + out + "]";
    }
  }
  return "";
}

// Each key of the example is preceded by its comment, which gives the row's default and, from the
// table, the bounds or every allowed value: the file people read cannot drift from the parser.
TEST(ConfigTest, ExampleDocumentsEveryKeyWithItsBoundsAndDefault) {
  std::vector<std::string> lines;
  {
    std::ifstream in(kExample);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  // The comment lines right above line `n` (0-based), joined.
  auto comment_above = [&](int n) {
    std::string text;
    for (int i = n - 1; i >= 0; --i) {
      const std::string& l = lines[i];
      const std::size_t first = l.find_first_not_of(' ');
      if (first == std::string::npos || l[first] != '#') break;
      text = l.substr(first + 1) + "\n" + text;
    }
    return text;
  };
  std::map<std::string, int> line_of;  // key -> 0-based line
  std::function<void(const YAML::Node&, const std::string&)> walk = [&](const YAML::Node& n, const std::string& prefix) {
    for (const auto& kv : n) {
      const std::string p = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
      if (kv.second.IsMap()) walk(kv.second, p);
      else line_of[p] = kv.first.Mark().line;
    }
  };
  walk(YAML::LoadFile(kExample), "");
  for (const ConfigKey& k : ConfigKeys()) {
    const std::string name(k.name);
    EXPECT_FALSE(k.doc.empty()) << name << " has no one-line doc in the table";
    ASSERT_TRUE(line_of.count(name)) << name << " is missing from " << kExample;
    const std::string doc = comment_above(line_of[name]);
    EXPECT_THAT(doc, HasSubstr("Default:")) << name << " is not documented by a comment above it";
    // The default the row holds, whole: followed by the end of a line or a space ("" (none)).
    const std::string shown = "Default: " + ShownDefault(k);
    const std::size_t at = doc.find(shown);
    const std::size_t after = at + shown.size();
    EXPECT_TRUE(at != std::string::npos && (after == doc.size() || doc[after] == '\n' || doc[after] == ' '))
        << name << ": its comment does not say \"" << shown << "\", the table's default";
    if (k.type == ConfigKey::Type::kInt) {
      EXPECT_THAT(doc, HasSubstr(std::to_string(k.min) + ".." + std::to_string(k.max))) << name;
    }
    for (std::string_view choice : k.choices) EXPECT_THAT(doc, HasSubstr(std::string(choice))) << name;
  }
}

// ---- destinations ----

// True when `a` and `b` hold the same value at `d`'s option.
bool SameAt(const ConfigKey::Destination& d, ModuleOptions& a, ModuleOptions& b) {
  return std::visit([&](auto to) { return to(a) == to(b); }, d.to);
}

// YAML values for row `k`, valid ones first as far as the row says; ValueOtherThanTheDefault
// takes the first that parses and differs from the default.
std::vector<std::string> Candidates(const ConfigKey& k) {
  auto quoted = [](const std::string& s) { return nlohmann::json(s).dump(); };
  std::vector<std::string> out;
  switch (k.type) {
    case Type::kString: {
      const std::string& def = std::get<std::string>(k.default_value);
      std::vector<std::string> values;
      for (std::string_view c : k.choices) values.emplace_back(c);
      if (k.choices.empty())
        for (const char* s : {"https://example.test/api", "127.0.0.1:9999", "acme/widgets", "12345", "my-agent",
                              "0.5", "准备 {dir} 工作区"})
          values.emplace_back(s);
      for (const std::string& s : values)
        if (s != def) out.push_back(quoted(s));
      break;
    }
    case Type::kEnvName: out.push_back(kSecretName); break;
    case Type::kInt: {
      const int def = std::get<int>(k.default_value);
      if (def < k.max) out.push_back(std::to_string(def + 1));
      if (def > k.min) out.push_back(std::to_string(def - 1));
      break;
    }
    case Type::kBool: out.push_back(std::get<bool>(k.default_value) ? "false" : "true"); break;
    case Type::kOnOff: out.push_back(std::get<bool>(k.default_value) ? "off" : "on"); break;
    case Type::kEnvNameList: out.push_back(std::string("[") + kSecretName + "]"); break;
    case Type::kStringList: out.push_back("[\"测试/**\", \"--flag\"]"); break;
  }
  return out;
}

// Keys whose other values a rule between keys allows only with others set (execution.placement
// not local needs workers.listen and a coding CLI): those others, set in the config the row is
// compared with too, so that the row's own value is the only difference.
using Settings = std::vector<std::pair<std::string, std::string>>;
const Settings& PrerequisitesOf(std::string_view key) {
  static const std::map<std::string, Settings, std::less<>> kNeeds = {
      {"execution.placement", {{"execution.executor", "codex"}, {"workers.listen", "127.0.0.1:8790"}}},
  };
  static const Settings kNone;
  auto it = kNeeds.find(key);
  return it == kNeeds.end() ? kNone : it->second;
}

void MergeYaml(YAML::Node into, const YAML::Node& from) {
  for (const auto& kv : from) {
    const std::string key = kv.first.as<std::string>();
    if (kv.second.IsMap() && into[key] && into[key].IsMap()) {
      MergeYaml(into[key], kv.second);
    } else {
      into[key] = kv.second;
    }
  }
}

// Dotted keys and their values as one config file.
std::string YamlForAll(const Settings& settings) {
  if (settings.empty()) return "";
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& [dotted, value] : settings) MergeYaml(root, YAML::Load(YamlFor(dotted, value)));
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

// A config setting `k` (with its prerequisites) to a valid value other than its default; nullopt
// when none of the candidates is one.
std::optional<Config> ValueOtherThanTheDefault(const ConfigKey& k) {
  const Settings& needs = PrerequisitesOf(k.name);
  const nlohmann::json unset = ConfigToJson(ParseOk(YamlForAll(needs)));
  for (const std::string& value : Candidates(k)) {
    std::vector<Problem> problems;
    Settings with = needs;
    with.emplace_back(std::string(k.name), value);
    std::optional<Config> c = ParseConfig(needs.empty() ? YamlFor(k.name, value) : YamlForAll(with),
                                          "/etc/superagent/superagent.yaml", &problems);
    if (!c) continue;  // e.g. executor: command without a command
    if (ConfigToJson(*c) != unset) return c;
  }
  return std::nullopt;
}

// The keys no row's destination covers: wiring reads them with other keys or with the host, or
// the daemon uses them before any module exists.
const std::map<std::string, std::string>& ComputedByHand() {
  static const std::map<std::string, std::string> kKeys = {
      {"data_dir", "the work root, the database, the sandbox's state and hidden paths"},
      {"policy_file", "loaded by the daemon; its directory hidden from the sandbox"},
      {"log.level", "the logger, set up before anything else"},
      {"github.auth", "chooses between the token and the App's installation tokens"},
      {"github.message_max_chars", "a MessageLimit function (MessageLimitsFor)"},
      {"feishu.enabled", "whether the Feishu integration exists"},
      {"feishu.realtime", "IntegrationOptions::long_connection, a bool of the choice"},
      {"llm.execution_model", "falls back to llm.assessment_model"},
      {"execution.git_remote", "falls back to github.repo's clone URL (EffectiveGitRemote), {repo} per repository"},
      {"github.repos", "one Source and Channel per repository (IntegrationOptions::repos), and a mirror each"},
      {"execution.cgroups", "auto is the runner's \"\", off its \"off\""},
      {"feishu.chat_repos", "EngineOptions::chat_repositories, a map of the \"chat repo\" pairs (EngineOptionsFor)"},
  };
  return kKeys;
}

TEST(ModuleOptionsTest, EveryRowWithoutADestinationIsOneWiringComputes) {
  std::set<std::string> without, listed;
  for (const ConfigKey& k : ConfigKeys())
    if (k.destinations.empty()) without.insert(std::string(k.name));
  for (const auto& [key, why] : ComputedByHand()) listed.insert(key);
  EXPECT_EQ(without, listed) << "a new key names the option it feeds in its row (Feeds), or is listed here with why";
}

TEST(ModuleOptionsTest, EveryRowFeedsItsDestinationsAndNothingElse) {
  SecretSet secret;
  int rows = 0;
  for (const ConfigKey& k : ConfigKeys()) {
    if (k.destinations.empty()) continue;
    SCOPED_TRACE(std::string(k.name));
    ++rows;
    ModuleOptions before = ModuleOptionsFor(ParseOk(YamlForAll(PrerequisitesOf(k.name))));
    std::optional<Config> changed = ValueOtherThanTheDefault(k);
    ASSERT_TRUE(changed.has_value()) << "no valid value other than the default was found";
    ModuleOptions after = ModuleOptionsFor(*changed);
    Config set = *changed;  // the row's own accessor takes a Config it may write
    const long long seconds = k.type == Type::kInt ? std::get<int& (*)(Config&)>(k.field)(set) : 0;
    for (const ConfigKey::Destination& d : k.destinations) {
      EXPECT_FALSE(SameAt(d, before, after)) << "a destination of the row is not fed by it";
      // The conversions the row names, checked on the value it set.
      std::visit(
          [&](auto to) {
            auto& option = to(after);
            using T = std::remove_reference_t<decltype(option)>;
            if constexpr (std::is_same_v<T, std::string>) {
              if (d.convert == ConfigKey::Convert::kSecret) {
                EXPECT_EQ(option, kSecretValue);
              }
            } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
              if (d.convert == ConfigKey::Convert::kMilliseconds) {
                EXPECT_EQ(static_cast<long long>(option), seconds * 1000);
              }
            }
          },
          d.to);
    }
    for (const ConfigKey& other : ConfigKeys()) {
      if (other.name == k.name) continue;
      for (const ConfigKey::Destination& d : other.destinations)
        EXPECT_TRUE(SameAt(d, before, after)) << "it also changed a destination of " << other.name;
    }
  }
  EXPECT_GE(rows, 70) << "most keys go to a module as they are";
}

// ---- end to end, through the wiring functions the daemon calls ----

TEST(ModuleOptionsTest, SecondsArriveAsMilliseconds) {
  Config c = ParseOk("github:\n  poll_interval_seconds: 120\nfeishu:\n  poll_interval_seconds: 45\n"
                     "llm:\n  timeout_seconds: 90\n  max_retry_wait_seconds: 20\n"
                     "eval:\n  timeout_seconds: 300\n");
  EXPECT_EQ(GitHubSourceOptionsFor(c).poll_interval_ms, 120'000);
  EXPECT_EQ(FeishuSourceOptionsFor(c).poll_interval_ms, 45'000);
  const llm::ChatOptions chat = ChatOptionsFor(c);
  EXPECT_EQ(chat.timeout_ms, 90'000);
  EXPECT_EQ(chat.max_retry_wait_ms, 20'000);
  EXPECT_EQ(EngineOptionsFor(c).eval_timeout_ms, 300'000);
}

TEST(ModuleOptionsTest, TheChosenCodingCliGetsItsOwnBlock) {
  Config c = ParseOk("execution:\n  executor: codex\n  codex:\n    turn_seconds: 600\n    model: gpt-5-codex\n"
                     "    usd_per_million_input_tokens: \"1.25\"\n    base_url: https://api.example.test/v1\n"
                     "  claude_code:\n    turn_seconds: 900\n");
  const exec::ExecutionOptions o = ExecutionOptionsFor(c);
  EXPECT_EQ(o.cli.cli, "codex");
  EXPECT_EQ(o.cli.turn_ms, 600'000);
  EXPECT_EQ(o.cli.model, "gpt-5-codex");
  EXPECT_EQ(o.gateway.usd_per_million_input, 1.25);
  EXPECT_EQ(o.gateway.usd_per_million_output, 0);
  EXPECT_EQ(o.gateway.upstream, "https://api.example.test/v1");
  // doctor's path, from the block alone, agrees with the daemon's.
  const exec::CliExecutorOptions alone = CliExecutorOptionsFor("codex", c.execution.codex);
  EXPECT_EQ(alone.turn_ms, o.cli.turn_ms);
  EXPECT_EQ(alone.binary, o.cli.binary);
  EXPECT_EQ(alone.model, o.cli.model);
  EXPECT_EQ(ModelGatewayOptionsFor("codex", c.execution.codex).usd_per_million_input, 1.25);
  EXPECT_EQ(CliExecutorOptionsFor("claude-code", c.execution.claude_code).turn_ms, 900'000);
  EXPECT_EQ(ExecutionOptionsFor(ParseOk("")).cli.turn_ms, 30 * 60 * 1000) << "builtin: the CLI options are unused";
}

TEST(ModuleOptionsTest, AnEnvNameKeyHandsDownTheSecretItNames) {
  SecretSet secret;
  Config c = ParseOk(std::string("llm:\n  api_key_env: ") + kSecretName + "\npanel:\n  token_env: " + kSecretName +
                     "\nexecution:\n  executor: qwen-code\n  qwen_code:\n    api_key_env: " + kSecretName + "\n");
  EXPECT_EQ(ChatOptionsFor(c).api_key, kSecretValue);
  const panel::PanelContext ctx = PanelContextFor(c);
  EXPECT_EQ(ctx.password, kSecretValue);
  EXPECT_EQ(ctx.password_env, kSecretName);
  EXPECT_EQ(ctx.slots_configured, 3);
  EXPECT_EQ(ExecutionOptionsFor(c).gateway.api_key, kSecretValue);
  unsetenv(kSecretName);
  EXPECT_EQ(ChatOptionsFor(c).api_key, "") << "read when asked, not remembered";
}

TEST(ModuleOptionsTest, NonAsciiValuesPassThroughUnchanged) {
  const std::string prepare = "准备工作区 {dir} && echo 完成 ✓";
  Config c = ParseOk("execution:\n  prepare: \"" + prepare + "\"\n  executor: gemini-cli\n  gemini_cli:\n"
                     "    args: [\"--提示\", \"значение\"]\nllm:\n  assessment_model: 模型-一\n");
  EXPECT_EQ(c.execution.prepare, prepare);
  const exec::ExecutionOptions o = ExecutionOptionsFor(c);
  EXPECT_EQ(o.workspace.prepare, prepare);
  EXPECT_EQ(WorkspaceOptionsFor(c, "/tmp/unused").prepare, prepare);
  EXPECT_EQ(o.cli.args, (std::vector<std::string>{"--提示", "значение"}));
  EXPECT_EQ(ModuleOptionsFor(c).assessor.model, "模型-一");
}

TEST(ModuleOptionsTest, EngineOptionsFollowTheTable) {
  Config c = ParseOk("eval:\n  max_attempts: 7\nquarantine:\n  after: 9\nexecution:\n  ci_fix_attempts: 0\n"
                     "panel:\n  public_url: https://agent.example.com//\n");
  const EngineOptions o = EngineOptionsFor(c);
  EXPECT_EQ(o.eval_max_attempts, 7);
  EXPECT_EQ(o.quarantine_after, 9);
  EXPECT_EQ(o.ci_fix_attempts, 0);
  EXPECT_EQ(o.panel_url, "https://agent.example.com") << "no trailing '/': the link appends /#ticket-<id>";
  EXPECT_FALSE(o.check_runs) << "a token writes no check runs";
  EXPECT_TRUE(static_cast<bool>(o.message_limit));
  const EngineOptions defaults = EngineOptionsFor(DefaultConfig());
  EXPECT_EQ(defaults.eval_timeout_ms, 120'000);
  EXPECT_EQ(defaults.eval_max_attempts, 3);
  EXPECT_EQ(defaults.quarantine_after, 5);
  EXPECT_EQ(defaults.ci_fix_attempts, 2);
  EXPECT_EQ(defaults.panel_url, "");
}

TEST(ModuleOptionsTest, TheAppsOptionsComeFromTheTable) {
  Config c = ParseOk("github:\n  repo: acme/widgets\n  auth: app\n  app_id: \"12345\"\n"
                     "  app_installation_id: \"987654321012\"\n  api_url: https://ghe.example.com/api/v3\n");
  const ModuleOptions m = ModuleOptionsFor(c);
  EXPECT_EQ(m.github_app.app_id, "12345");
  EXPECT_EQ(m.github_app.installation_id, 987654321012);
  EXPECT_EQ(m.github_app.repo, "acme/widgets");
  EXPECT_EQ(m.github_app.api_url, "https://ghe.example.com/api/v3");
  EXPECT_EQ(m.github.client.api_url, "https://ghe.example.com/api/v3");
  EXPECT_EQ(ModuleOptionsFor(ParseOk("")).github_app.installation_id, 0) << "empty: looked up";
}

}  // namespace
}  // namespace superagent::app
