// Gemini CLI (`gemini --prompt … --output-format stream-json`): Google's coding CLI, on the
// Gemini REST API (streamGenerateContent). Its JSONL: init {session_id, model}, message {role,
// content, delta}, tool_use {tool_name, tool_id, parameters}, tool_result {tool_id, status,
// output, error {type, message}}, result {status, error, stats} (docs/003-execution.md "Gemini
// CLI", ../shared/research/coding-clis.md).
#include "exec/cli_adapter.h"

#include "superagent/json_read.h"
#include "superagent/text.h"

namespace superagent::exec {

using nlohmann::json;

namespace {

// The daemon's settings, in the private HOME (rewritten before every start, so what a worker
// wrote there in an earlier turn does not count). Without the auth type a base URL alone ends in
// exit 41 "Invalid auth method selected". maxAttempts bounds its retries: by default it retries
// a 500 ten times with backoff for minutes; with 2 a dead model ends the turn in seconds
// (measured with 0.61). The web tools would reach past the team's model endpoint.
// The workspace is started untrusted (GEMINI_CLI_TRUST_WORKSPACE=false, see Invocation), and
// folderTrust off here is what lets an untrusted folder run headless at all (else it exits
// "not running in a trusted directory"). With folderTrust off the CLI would load the project's
// agents even untrusted, so agents are off; hooks and skills are off whatever their source.
const char* kGeminiSettings = R"({
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"maxAttempts": 2, "enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "tools": {"exclude": ["web_fetch", "google_web_search"]},
  "hooksConfig": {"enabled": false},
  "skills": {"enabled": false},
  "experimental": {"enableAgents": false}
})";

// The daemon's policy (~/.gemini/policies/) when allowed_commands is empty: every shell command,
// redirections included — without allowRedirection a rule that allows a command still asks (so
// refuses, headless) once the command writes with `>` (measured with 0.61: `npm test > out.txt`
// was refused under this very rule).
const char* kAnyCommandPolicy = R"([[rule]]
toolName = "run_shell_command"
commandRegex = ".*"
decision = "allow"
priority = 100
allowRedirection = true
)";

json& State(CliProgress* p, const char* key, json fallback) {
  if (!p->state.is_object()) p->state = json::object();
  json& v = p->state[key];
  if (v.type() != fallback.type()) v = std::move(fallback);
  return v;
}

// The assistant text streamed since the last tool call, as one transcript event.
void FlushText(CliProgress* p, json calls = json::array()) {
  json& pending = State(p, "text", "");
  const std::string text = pending.get<std::string>();
  pending = "";
  if (!text.empty()) p->final_text = text;
  if (!text.empty() || !calls.empty()) p->events.emplace_back("assistant", AssistantEvent(text, calls));
}

std::string ErrorMessage(const json& line) {
  std::string m = json_read::StringOr(line, "error.message");
  if (m.empty()) m = json_read::StringOr(line, "message");
  return m;
}

class GeminiCliAdapter : public CliAdapter {
 public:
  std::string name() const override { return "gemini-cli"; }
  std::string default_binary() const override { return "gemini"; }

  CliInvocation Invocation(const CliExecutorOptions& o, const CliTurn& turn) const override {
    CliInvocation inv;
    // `--opt=value`: a prompt that begins with '-' is still the prompt's value.
    // approval-mode default: an untrusted folder forces it anyway, and in it every tool that is
    // not read-only is refused headless (tool_result error.type policy_violation, never a
    // prompt) unless an --allowed-tools entry names it: the edit tools, and the shell only for
    // the allow-list's prefixes. The flag is deprecated for its policy engine but works in 0.61.
    inv.argv = {o.binary, "--prompt=" + turn.prompt, "--output-format=stream-json", "--approval-mode=default",
                "--allowed-tools=replace", "--allowed-tools=write_file"};
    std::vector<std::string> prefixes = AllowedCommandPrefixes(o);
    for (const std::string& c : prefixes) inv.argv.push_back("--allowed-tools=run_shell_command(" + c + ")");
    // No allow-list: any command. Not `--allowed-tools=run_shell_command`: in an untrusted
    // workspace that whole-tool rule still asks — so refuses headless — every git command
    // (measured). A rule with a pattern is taken as it stands, so the daemon's user-tier policy
    // allows every command by pattern. Written either way, empty with an allow-list, so a rule
    // of an earlier turn under another configuration does not survive.
    inv.home_files.emplace_back(".gemini/policies/superagent.toml", prefixes.empty() ? kAnyCommandPolicy : "");
    if (!o.model.empty()) inv.argv.push_back("--model=" + o.model);
    // 0.61 takes the session's UUID (from `init`) as well as "latest" or an index.
    if (turn.resume) inv.argv.push_back("--resume=" + *turn.resume);
    if (!o.api_key.empty()) inv.env.emplace_back("GEMINI_API_KEY", o.api_key);
    if (!o.base_url.empty()) inv.env.emplace_back("GOOGLE_GEMINI_BASE_URL", o.base_url);
    // The repository is data, not configuration. A trusted workspace honours a committed
    // .gemini/settings.json — hooks, MCP servers, a tool discovery command, tools.allowed,
    // policy files — and .gemini/policies/ and .env (measured with 0.61: ten hook types, an
    // MCP server and the discovery command ran, and a command outside the allow-list). Untrusted,
    // only the system files and the daemon's settings in the private HOME count.
    inv.env.emplace_back("GEMINI_CLI_TRUST_WORKSPACE", "false");
    inv.env.emplace_back("NO_COLOR", "1");
    inv.home_files.emplace_back(".gemini/settings.json", kGeminiSettings);
    return inv;
  }

  void OnLine(const json& line, CliProgress* p) const override {
    const std::string type = json_read::StringOr(line, "type");
    if (type == "init") {
      if (std::string sid = json_read::StringOr(line, "session_id"); !sid.empty()) p->session_id = sid;
      if (std::string model = json_read::StringOr(line, "model"); !model.empty()) p->model = model;
    } else if (type == "message") {
      if (json_read::StringOr(line, "role") != "assistant") return;
      const std::string content = json_read::StringOr(line, "content");
      json& pending = State(p, "text", "");
      if (json_read::BoolOr(line, "delta")) pending = pending.get<std::string>() + content;
      else pending = content;
    } else if (type == "tool_use") {
      const std::string id = json_read::StringOr(line, "tool_id");
      const std::string tool = json_read::StringOr(line, "tool_name");
      const json* params = json_read::Find(line, "parameters");
      const json args = params != nullptr ? *params : json::object();
      json& tools = State(p, "tools", json::object());
      tools[id] = {{"name", tool}, {"command", json_read::StringOr(args, "command")}};
      FlushText(p, json::array({ToolCallJson(id, tool, args)}));
    } else if (type == "tool_result") {
      const std::string id = json_read::StringOr(line, "tool_id");
      const json& tools = State(p, "tools", json::object());
      const json* known = tools.contains(id) ? &tools[id] : nullptr;
      const std::string tool = known != nullptr ? json_read::StringOr(*known, "name") : "";
      const std::string command = known != nullptr ? json_read::StringOr(*known, "command") : "";
      const std::string status = json_read::StringOr(line, "status");
      std::string output = json_read::StringOr(line, "output");
      const bool refused = json_read::StringOr(line, "error.type") == "policy_violation";
      if (status == "error") {
        const std::string why = ErrorMessage(line);
        output = std::string(refused ? "refused: " : "error: ") + (why.empty() ? output : why);
      }
      p->events.emplace_back("tool_result", ToolResultEvent(id, output));
      if (refused) p->refused.push_back(command.empty() ? tool : command);
      if (tool == "run_shell_command" && !refused)
        p->events.emplace_back("command", json{{"command", command},
                                               {"exit_code", status == "success" ? json(0) : json(nullptr)},
                                               {"stdout_tail", text::Cut(output, 2000, text::Keep::kTail)}});
    } else if (type == "error") {
      // A warning or a non-fatal error while the turn goes on (the final `result` decides).
      if (std::string m = ErrorMessage(line); !m.empty())
        p->events.emplace_back("assistant", AssistantEvent("(gemini-cli: " + m + ")"));
    } else if (type == "result") {
      FlushText(p);
      p->finished = true;
      p->failed = json_read::StringOr(line, "status") != "success";
      if (p->failed) {
        p->error = ErrorMessage(line);
        if (p->error.empty()) p->error = "its result says " + text::Cut(line.dump(-1, ' ', false, json::error_handler_t::replace), 300);
      }
      const json* stats = json_read::Find(line, "stats");
      if (stats == nullptr || !stats->is_object()) return;
      auto usage_of = [&](const std::string& model, const json& s) {
        json u = UsageJson(model, json_read::IntOr(s, "input_tokens"), json_read::IntOr(s, "output_tokens"));
        if (std::int64_t cached = json_read::IntOr(s, "cached"); cached > 0) u["cache_hit_tokens"] = cached;
        return u;
      };
      const json* models = json_read::Find(*stats, "models");
      bool any = false;
      if (models != nullptr && models->is_object())
        for (const auto& [model, s] : models->items())
          if (s.is_object() && json_read::IntOr(s, "total_tokens") > 0) {
            p->usage.push_back(usage_of(model, s));
            any = true;
          }
      if (!any && json_read::IntOr(*stats, "total_tokens") > 0) p->usage.push_back(usage_of(p->model, *stats));
    }
  }
};

}  // namespace

std::unique_ptr<CliAdapter> MakeGeminiCliAdapter() { return std::make_unique<GeminiCliAdapter>(); }

}  // namespace superagent::exec
