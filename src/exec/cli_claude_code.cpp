// Claude Code (`claude -p`), and the stream-json dialect it shares with Qwen Code: system/init,
// assistant and user messages in the Anthropic Messages shape, and one final `result`.
#include "exec/cli_adapter.h"

#include "superagent/json_read.h"
#include "superagent/text.h"

namespace superagent::exec {

using nlohmann::json;

namespace {

// A tool result's content: a string, or a list of blocks of which the text ones count.
std::string ContentText(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string s;
  if (content.is_array())
    for (const json& block : content)
      if (block.is_object() && json_read::StringOr(block, "type") == "text")
        s += (s.empty() ? "" : "\n") + json_read::StringOr(block, "text");
  return s;
}

std::int64_t IntOr(const json& j, const char* key) {
  const json* v = json_read::Find(j, key);
  return v != nullptr && v->is_number_integer() ? v->get<std::int64_t>() : 0;
}

}  // namespace

void OnClaudeStyleLine(const json& line, CliProgress* p) {
  const std::string type = json_read::StringOr(line, "type");
  if (std::string sid = json_read::StringOr(line, "session_id"); !sid.empty()) p->session_id = sid;
  if (type == "system")
    if (std::string model = json_read::StringOr(line, "model"); !model.empty()) p->model = model;
  const json* message = json_read::Find(line, "message");
  const json* content = message != nullptr && message->is_object() ? json_read::Find(*message, "content") : nullptr;
  if (type == "assistant" && content != nullptr && content->is_array()) {
    std::string text;
    json calls = json::array();
    for (const json& block : *content) {
      if (!block.is_object()) continue;
      const std::string kind = json_read::StringOr(block, "type");
      if (kind == "text") text += json_read::StringOr(block, "text");
      if (kind == "tool_use") {
        const json* input = json_read::Find(block, "input");
        calls.push_back(ToolCallJson(json_read::StringOr(block, "id"), json_read::StringOr(block, "name"),
                                     input != nullptr ? *input : json::object()));
      }
    }
    if (!text.empty()) p->final_text = text;
    if (!text.empty() || !calls.empty()) p->events.emplace_back("assistant", AssistantEvent(text, calls));
  } else if (type == "user" && content != nullptr && content->is_array()) {
    for (const json& block : *content) {
      if (!block.is_object() || json_read::StringOr(block, "type") != "tool_result") continue;
      const json* c = json_read::Find(block, "content");
      std::string text = c != nullptr ? ContentText(*c) : "";
      if (const json* e = json_read::Find(block, "is_error"); e != nullptr && e->is_boolean() && e->get<bool>())
        text = "error: " + text;
      p->events.emplace_back("tool_result", ToolResultEvent(json_read::StringOr(block, "tool_use_id"), text));
    }
  } else if (type == "result") {
    p->finished = true;
    const json* is_error = json_read::Find(line, "is_error");
    // `subtype` says "success" even for a failed turn: is_error is what counts.
    p->failed = is_error != nullptr && is_error->is_boolean() && is_error->get<bool>();
    if (std::string result = json_read::StringOr(line, "result"); !result.empty()) p->final_text = result;
    if (p->failed) {
      p->error = p->final_text;
      if (const json* s = json_read::Find(line, "api_error_status"); s != nullptr && !s->is_null())
        p->error = "the model API answered " + (s->is_string() ? s->get<std::string>() : s->dump()) +
                   (p->error.empty() ? "" : ": " + p->error);
    }
    if (const json* denials = json_read::Find(line, "permission_denials"); denials != nullptr && denials->is_array())
      for (const json& d : *denials) {
        const json* in = d.is_object() ? json_read::Find(d, "tool_input") : nullptr;
        std::string what = in != nullptr && in->is_object() ? json_read::StringOr(*in, "command") : "";
        if (what.empty()) what = d.is_object() ? json_read::StringOr(d, "tool_name") : d.dump();
        p->refused.push_back(what);
      }
    if (const json* u = json_read::Find(line, "usage"); u != nullptr && u->is_object()) {
      std::optional<double> cost;
      if (const json* c = json_read::Find(line, "total_cost_usd"); c != nullptr && c->is_number()) cost = c->get<double>();
      const std::int64_t in = IntOr(*u, "input_tokens") + IntOr(*u, "cache_read_input_tokens") +
                              IntOr(*u, "cache_creation_input_tokens");
      json usage = UsageJson(p->model, in, IntOr(*u, "output_tokens"), cost);
      usage["calls"] = std::max<std::int64_t>(1, IntOr(line, "num_turns"));
      if (std::int64_t cached = IntOr(*u, "cache_read_input_tokens"); cached > 0) usage["cache_hit_tokens"] = cached;
      p->usage.push_back(usage);
    }
  }
}

namespace {

// The daemon's settings, the only ones the CLI reads (--settings with --setting-sources ""):
// no hook runs, whatever source might still name one (a plugin, a skill's or an agent's
// frontmatter).
constexpr const char* kClaudeSettings = R"({"disableAllHooks":true})";

class ClaudeCodeAdapter : public CliAdapter {
 public:
  std::string name() const override { return "claude-code"; }
  std::string default_binary() const override { return "claude"; }

  CliInvocation Invocation(const CliExecutorOptions& o, const CliTurn& turn) const override {
    CliInvocation inv;
    // The repository is data, not configuration: a committed .claude/settings.json (hooks,
    // apiKeyHelper, permissions, env), .claude/settings.local.json, .mcp.json, skills, slash
    // commands and agents would all run programs or widen the allow-list (measured with
    // 2.1.332: the hooks of every event a turn has, apiKeyHelper and an MCP server ran). So no
    // settings file is read — not the project's, not the local one, not the private HOME's,
    // which a worker may have written in an earlier turn: `--setting-sources ""` (flag and
    // managed settings still apply), and the daemon's own settings given inline.
    // --strict-mcp-config with no --mcp-config: no MCP server at all. No skills or slash
    // commands (the team's skills are in the prompt).
    inv.argv = {o.binary, "-p", turn.prompt, "--output-format", "stream-json", "--verbose",
                "--setting-sources", "", "--settings", kClaudeSettings, "--strict-mcp-config", "--disable-slash-commands",
                // dontAsk, not acceptEdits: acceptEdits also runs filesystem commands (touch, mkdir,
                // mv, cp, rm …) that are not on the allow-list (measured), and not
                // --dangerously-skip-permissions (refused as root). In dontAsk only what
                // --allowedTools names runs, everything else is refused without a prompt and listed
                // in the result's permission_denials.
                "--permission-mode", "dontAsk", "--disallowedTools", "WebFetch", "WebSearch", "--allowedTools",
                "Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS", "TodoWrite"};
    std::vector<std::string> prefixes = AllowedCommandPrefixes(o);
    if (prefixes.empty()) inv.argv.push_back("Bash");
    for (const std::string& c : prefixes) {
      inv.argv.push_back("Bash(" + c + ")");
      inv.argv.push_back("Bash(" + c + ":*)");
    }
    if (!o.model.empty()) inv.argv.insert(inv.argv.end(), {"--model", o.model});
    if (turn.resume) inv.argv.insert(inv.argv.end(), {"--resume", *turn.resume});
    if (!o.api_key.empty()) inv.env.emplace_back("ANTHROPIC_API_KEY", o.api_key);
    if (!o.base_url.empty()) inv.env.emplace_back("ANTHROPIC_BASE_URL", o.base_url);
    // Without these it also calls its vendor's host whatever the base URL (measured), and a
    // dead model is retried ten times for minutes.
    inv.env.insert(inv.env.end(), {{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
                                   {"DISABLE_TELEMETRY", "1"},
                                   {"DISABLE_AUTOUPDATER", "1"},
                                   {"DISABLE_ERROR_REPORTING", "1"},
                                   {"CLAUDE_CODE_MAX_RETRIES", "1"}});
    return inv;
  }

  void OnLine(const json& line, CliProgress* p) const override { OnClaudeStyleLine(line, p); }
};

}  // namespace

std::unique_ptr<CliAdapter> MakeClaudeCodeAdapter() { return std::make_unique<ClaudeCodeAdapter>(); }

}  // namespace superagent::exec
