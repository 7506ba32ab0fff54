// Qwen Code (`qwen -p`): the way to run a coding CLI on DeepSeek or Qwen models, through any
// OpenAI-compatible chat API. Its output is Claude Code's stream-json; its trap is that a dead
// model (500, 401) ends with exit 0 and is_error false, the error only in the result text.
#include "exec/cli_adapter.h"

#include "superagent/text.h"

namespace superagent::exec {

using nlohmann::json;

namespace {

// The daemon's settings, in the private HOME (rewritten before every start): no usage
// statistics or telemetry, no update check, and no managed memory (else a second, tool-using
// "memory" model call follows every turn). folderTrust on, with the Ticket's worktree listed as
// not trusted (the trustedFolders.json Invocation writes): the repository is data, not configuration. Trusted — its default
// — Qwen Code merges a committed .qwen/settings.json: its hooks ran and a command outside the
// allow-list was let through (measured with 0.24.4). Untrusted, the project's settings, hooks,
// MCP servers, skills and agents are ignored. No hook runs from any source.
const char* kQwenSettings = R"({
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "memory": {"enableManagedAutoMemory": false},
  "security": {"folderTrust": {"enabled": true}},
  "disableAllHooks": true
})";

// The texts Qwen Code puts in a "successful" result when the model call failed.
bool IsApiErrorText(const std::string& text) {
  const std::string t = text::Trim(text);
  return t.rfind("[API Error", 0) == 0 || t.rfind("API Error:", 0) == 0;
}

class QwenCodeAdapter : public CliAdapter {
 public:
  std::string name() const override { return "qwen-code"; }
  std::string default_binary() const override { return "qwen"; }

  CliInvocation Invocation(const CliExecutorOptions& o, const CliTurn& turn) const override {
    CliInvocation inv;
    // approval-mode default, which an untrusted folder forces anyway: headless, a tool that is
    // not read-only runs only when --allowed-tools names it — the edit tools, and the shell for
    // the allow-list's prefixes — and is refused (permission_denials) otherwise.
    inv.argv = {o.binary, "-p", turn.prompt, "--auth-type", "openai", "--output-format", "stream-json",
                "--approval-mode", "default", "--chat-recording"};
    std::vector<std::string> prefixes = AllowedCommandPrefixes(o);
    inv.argv.insert(inv.argv.end(), {"--allowed-tools", "edit", "write_file"});
    if (prefixes.empty()) inv.argv.push_back("run_shell_command");
    for (const std::string& c : prefixes) inv.argv.push_back("run_shell_command(" + c + ")");
    if (!o.model.empty()) inv.argv.insert(inv.argv.end(), {"--model", o.model});
    if (turn.resume) inv.argv.insert(inv.argv.end(), {"--resume", *turn.resume});
    if (!o.api_key.empty()) inv.env.emplace_back("OPENAI_API_KEY", o.api_key);
    if (!o.base_url.empty()) inv.env.emplace_back("OPENAI_BASE_URL", o.base_url);
    if (!o.model.empty()) inv.env.emplace_back("OPENAI_MODEL", o.model);
    inv.home_files.emplace_back(".qwen/settings.json", kQwenSettings);
    // The worktree by the path the CLI sees as its working directory (the sandbox shows it at
    // the same path): a rule for that exact folder, so nothing above it changes.
    inv.home_files.emplace_back(".qwen/trustedFolders.json", json({{turn.worktree, "DO_NOT_TRUST"}}).dump(-1, ' ', false, json::error_handler_t::replace));
    return inv;
  }

  void OnLine(const json& line, CliProgress* p) const override {
    OnClaudeStyleLine(line, p);
    if (p->finished && !p->failed && IsApiErrorText(p->final_text)) {
      p->failed = true;
      p->error = text::Trim(p->final_text);
    }
  }
};

}  // namespace

std::unique_ptr<CliAdapter> MakeQwenCodeAdapter() { return std::make_unique<QwenCodeAdapter>(); }

}  // namespace superagent::exec
