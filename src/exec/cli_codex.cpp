// Codex (`codex exec --json`): OpenAI's coding CLI. It speaks only the Responses API, so a team's
// endpoint is given as a custom model provider with wire_api "responses" and the key under a
// variable of the adapter's choosing. Its JSONL: thread.started {thread_id}, turn.started,
// item.started/item.completed {item: agent_message | command_execution | file_change | …},
// turn.completed {usage}; a failure is `error` and/or `turn.failed` (docs/003-execution.md
// "Codex", ../shared/research/coding-clis.md).
#include "exec/cli_adapter.h"

#include "superagent/json_read.h"
#include "superagent/text.h"

namespace superagent::exec {

using nlohmann::json;

namespace {

// The provider's name in Codex's config and the variable its key is read from (env_key).
constexpr const char* kProvider = "superagent";
constexpr const char* kKeyVariable = "SUPERAGENT_CODEX_API_KEY";

// A TOML basic string: quoted, with backslash, quote and control characters escaped. The
// base URL and model come from the team's config, never from a stranger, but a quote in them
// must still not end the string.
std::string TomlString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::int64_t IntAt(const json& j, const char* key) { return json_read::IntOr(j, key, 0); }

// "/bin/bash -lc 'git diff --stat'" → "git diff --stat" (what the model asked for); anything
// else unchanged.
std::string InnerCommand(const std::string& command) {
  for (const char* shell : {"/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c ", "/bin/zsh -lc "}) {
    const std::string p = shell;
    if (command.rfind(p, 0) != 0) continue;
    std::string rest = command.substr(p.size());
    if (rest.size() >= 2 && rest.front() == '\'' && rest.back() == '\'') rest = rest.substr(1, rest.size() - 2);
    return rest;
  }
  return command;
}

// Items whose start was seen (their tool call is already in the transcript), by item id.
void MarkStarted(CliProgress* p, const std::string& id) {
  if (!p->state.is_object()) p->state = json::object();
  json& started = p->state["started"];
  if (!started.is_object()) started = json::object();
  started[id.empty() ? "-" : id] = true;
}
bool WasStarted(const CliProgress& p, const std::string& id) {
  const json* started = p.state.is_object() && p.state.contains("started") ? &p.state["started"] : nullptr;
  return started != nullptr && started->is_object() && started->contains(id.empty() ? "-" : id);
}

class CodexAdapter : public CliAdapter {
 public:
  std::string name() const override { return "codex"; }
  std::string default_binary() const override { return "codex"; }

  CliInvocation Invocation(const CliExecutorOptions& o, const CliTurn& turn) const override {
    CliInvocation inv;
    // Codex has no per-command allow-list: its exec policy rules (~/.codex/rules) only name
    // prefixes to allow outside its own sandbox, prompt for, or forbid, and everything else
    // runs. Running it anyway would silently widen what the team configured.
    if (!AllowedCommandPrefixes(o).empty()) {
      inv.unsupported =
          "Codex has no allow-list for shell commands, so execution.codex.allowed_commands cannot be honoured; "
          "leave it empty (the sandbox confines every command) or choose a CLI that has one (claude-code, "
          "gemini-cli, qwen-code).";
      return inv;
    }
    inv.argv = {o.binary, "exec"};
    // `exec resume` takes the same -c overrides but no --sandbox flag: everything goes in -c,
    // after the subcommand, so a first turn and a resumed one are configured alike.
    if (turn.resume) inv.argv.push_back("resume");
    inv.argv.push_back("--json");
    auto config = [&](const std::string& kv) { inv.argv.insert(inv.argv.end(), {"-c", kv}); };
    if (!o.base_url.empty()) {
      config(std::string("model_provider=") + kProvider);
      config(std::string("model_providers.") + kProvider + "={name=" + TomlString(kProvider) +
             ",base_url=" + TomlString(o.base_url) + ",wire_api=\"responses\",env_key=" + TomlString(kKeyVariable) +
             ",request_max_retries=1,stream_max_retries=1}");
    }
    // Never ask (nobody watches). Its own sandbox (bubblewrap + seccomp) cannot start inside
    // ours — nested user namespaces are refused ("bwrap: setting up uid map: Operation not
    // permitted") and every command and patch then fails, commands without even an item in the
    // JSONL — so it runs with full access inside the Ticket's bwrap, which confines it to the
    // worktree, its HOME and TMPDIR (measured with 0.171).
    config("approval_policy=\"never\"");
    config("sandbox_mode=\"danger-full-access\"");
    config("analytics.enabled=false");
    config("check_for_update_on_startup=false");
    config("feedback.enabled=false");
    config("otel.exporter=\"none\"");
    config("history.persistence=\"none\"");
    // The repository is data, not configuration: Codex reads a project's .codex/config.toml
    // (notify, MCP servers, model providers, hooks) only for a trusted project, and trust lives
    // in $CODEX_HOME/config.toml — the private HOME's, which a worker could have written in an
    // earlier turn. So that file is not read at all (everything above is given with -c), nor
    // any execpolicy .rules file, the user's or the project's.
    inv.argv.insert(inv.argv.end(),
                    {"--disable", "plugins", "--skip-git-repo-check", "--ignore-user-config", "--ignore-rules"});
    if (!o.model.empty()) inv.argv.insert(inv.argv.end(), {"-m", o.model});
    if (turn.resume) inv.argv.push_back(*turn.resume);
    // The prompt is a positional argument: one that begins with '-' would be read as an option.
    inv.argv.push_back(!turn.prompt.empty() && turn.prompt.front() == '-' ? "\n" + turn.prompt : turn.prompt);
    if (!o.api_key.empty()) inv.env.emplace_back(kKeyVariable, o.api_key);
    // CODEX_HOME stays its default, ~/.codex of the Ticket's private HOME: the sessions `exec
    // resume` reads live there, next to nothing of the daemon's.
    return inv;
  }

  void OnLine(const json& line, CliProgress* p) const override {
    const std::string type = json_read::StringOr(line, "type");
    if (type == "thread.started") {
      if (std::string id = json_read::StringOr(line, "thread_id"); !id.empty()) p->session_id = id;
    } else if (type == "item.started" || type == "item.completed") {
      const json* item = json_read::Find(line, "item");
      if (item != nullptr && item->is_object()) OnItem(*item, type == "item.completed", p);
    } else if (type == "turn.completed") {
      p->finished = true;
      const json* u = json_read::Find(line, "usage");
      if (u != nullptr && u->is_object()) {
        // input_tokens already counts the cached ones (Responses API).
        json usage = UsageJson(p->model, IntAt(*u, "input_tokens"), IntAt(*u, "output_tokens"));
        if (std::int64_t cached = IntAt(*u, "cached_input_tokens"); cached > 0) usage["cache_hit_tokens"] = cached;
        p->usage.push_back(usage);
      }
    } else if (type == "turn.failed" || type == "error") {
      p->finished = true;
      p->failed = true;
      std::string why = json_read::StringOr(line, "error.message");
      if (why.empty()) why = json_read::StringOr(line, "message");
      if (why.empty()) why = text::Cut(line.dump(-1, ' ', false, json::error_handler_t::replace), 500);
      // Codex reports one failure twice (an `error`, then `turn.failed` with the same text).
      if (p->error.find(why) == std::string::npos) p->error += (p->error.empty() ? "" : "\n") + why;
    }
  }

 private:
  static void OnItem(const json& item, bool completed, CliProgress* p) {
    const std::string kind = json_read::StringOr(item, "type");
    const std::string id = json_read::StringOr(item, "id");
    if (kind == "agent_message") {
      if (!completed) return;
      const std::string text = json_read::StringOr(item, "text");
      if (text.empty()) return;
      p->final_text = text;
      p->events.emplace_back("assistant", AssistantEvent(text));
    } else if (kind == "command_execution") {
      const std::string command = InnerCommand(json_read::StringOr(item, "command"));
      if (!completed) {
        MarkStarted(p, id);
        p->events.emplace_back("assistant",
                               AssistantEvent("", json::array({ToolCallJson(id, "shell", json{{"command", command}})})));
        return;
      }
      if (!WasStarted(*p, id)) {  // completed without a start line
        p->events.emplace_back("assistant",
                               AssistantEvent("", json::array({ToolCallJson(id, "shell", json{{"command", command}})})));
      }
      const std::string output = json_read::StringOr(item, "aggregated_output");
      const json* code = json_read::Find(item, "exit_code");
      const json exit_code = code != nullptr && code->is_number_integer() ? *code : json(nullptr);
      std::string status = json_read::StringOr(item, "status");
      p->events.emplace_back("tool_result", ToolResultEvent(id, (status == "declined" ? "refused: " : "") + output));
      p->events.emplace_back("command", json{{"command", command},
                                             {"exit_code", exit_code},
                                             {"stdout_tail", text::Cut(output, 2000, text::Keep::kTail)}});
      if (status == "declined") p->refused.push_back(command);
    } else if (kind == "file_change") {
      json changes = json::array();
      if (const json* c = json_read::Find(item, "changes"); c != nullptr && c->is_array())
        for (const json& ch : *c)
          if (ch.is_object())
            changes.push_back({{"path", json_read::StringOr(ch, "path")}, {"kind", json_read::StringOr(ch, "kind")}});
      if (!completed) {
        MarkStarted(p, id);
        p->events.emplace_back("assistant", AssistantEvent("", json::array({ToolCallJson(id, "apply_patch",
                                                                                         json{{"changes", changes}})})));
        return;
      }
      if (!WasStarted(*p, id))
        p->events.emplace_back("assistant", AssistantEvent("", json::array({ToolCallJson(id, "apply_patch",
                                                                                         json{{"changes", changes}})})));
      p->events.emplace_back("tool_result", ToolResultEvent(id, "patch " + json_read::StringOr(item, "status", "done") +
                                                                    ": " + text::Dump(changes)));
    } else if (kind == "error") {
      // A non-fatal error item (e.g. a retry notice): the transcript shows it, the turn goes on.
      if (completed)
        p->events.emplace_back("assistant", AssistantEvent("(codex: " + json_read::StringOr(item, "message") + ")"));
    } else if (completed && !kind.empty() && kind != "reasoning") {
      // mcp_tool_call, web_search, todo_list, …: shown as a tool call with its item as arguments.
      p->events.emplace_back("assistant", AssistantEvent("", json::array({ToolCallJson(id, kind, item)})));
    }
  }
};

}  // namespace

std::unique_ptr<CliAdapter> MakeCodexAdapter() { return std::make_unique<CodexAdapter>(); }

}  // namespace superagent::exec
