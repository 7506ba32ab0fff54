// A coding CLI (Claude Code, Codex, Gemini CLI, Qwen Code) as a turn's executor: what each one
// needs to know to run headless in a Ticket's worktree and what it makes of the CLI's JSONL
// output. The turn itself — prompt, sandbox, time limit, transcript, usage, the report — is
// cli_executor.cpp's, the same for every CLI; an adapter only speaks its CLI's dialect
// (docs/003-execution.md "Coding CLIs", ../shared/research/coding-clis.md for what was measured).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/worker.h"

namespace superagent::exec {

// One turn as the CLI is asked to do it.
struct CliTurn {
  std::string prompt;                  // given as an argument, never on stdin (stdin is empty)
  std::optional<std::string> resume;   // the CLI's own session id to continue, when it has one
  std::string worktree;                // the Ticket's git worktree, the CLI's working directory
};

// How to start the CLI for one turn.
struct CliInvocation {
  std::vector<std::string> argv;  // argv[0] is options.binary
  // Its variables: the model key under the CLI's own name, the base URL, the switches that keep
  // it quiet and offline. Added to the worker environment the runner builds (sandbox.h).
  std::vector<std::pair<std::string, std::string>> env;
  // Written below the private HOME before it starts (path relative to HOME, content): settings
  // files a CLI reads only from there. Paths are the adapter's constants, never input.
  std::vector<std::pair<std::string, std::string>> home_files;
  // Non-empty: the CLI cannot honour these options (e.g. Codex has no per-command allow-list):
  // the turn is not started and ends blocked with this reason.
  std::string unsupported;
};

// What an adapter has read from the CLI's output so far. The executor takes `events` and `usage`
// after every batch of lines (and clears them); the rest accumulates over the turn.
struct CliProgress {
  // For the session transcript, in the builtin worker's shapes so the panel shows both alike:
  //   "assistant"   {"role":"assistant","content":TEXT,"tool_calls":[{"id","name","arguments"(JSON text)}]}
  //   "tool_result" {"role":"tool","tool_call_id":ID,"content":TEXT}
  //   "command"     {"command","exit_code","stdout_tail"}            (a shell command the CLI ran)
  std::vector<std::pair<std::string, nlohmann::json>> events;
  // Token usage per model call or per turn, in llm::Usage::ToJson's shape
  // {"model","purpose":"worker","calls","prompt_tokens","completion_tokens","total_tokens"}, plus
  // "cost_usd" where the CLI reports a cost.
  std::vector<nlohmann::json> usage;
  std::optional<std::string> session_id;  // the CLI's own session, for resuming it next turn
  std::string model;        // the model the CLI says it uses, for token_usage
  bool finished = false;    // the CLI's final record was read
  bool failed = false;      // the final record (or an error record) says the turn failed
  std::string final_text;   // the CLI's last answer: where the report block is looked for
  std::string error;        // why it failed, in the CLI's words
  std::vector<std::string> refused;  // shell commands refused by the allow-list (for the log)
  // The adapter's own notes over the turn (a tool id's command, text still being streamed):
  // OnLine is const and shared by every turn, so what it must remember lives here.
  nlohmann::json state = nlohmann::json::object();
};

class CliAdapter {
 public:
  virtual ~CliAdapter() = default;
  // "claude-code" | "codex" | "gemini-cli" | "qwen-code": execution.executor's value.
  virtual std::string name() const = 0;
  // The binary's usual name in PATH ("claude", "codex", "gemini", "qwen").
  virtual std::string default_binary() const = 0;
  // The command line, variables and HOME files for `turn` under `options`. Headless, permissions
  // non-interactive, shell commands limited to options.allowed_commands (empty: any — the
  // sandbox confines them), telemetry and update checks off, retries bounded. The CLI reads no
  // settings but the ones given here: none from the worktree (the repository is data — its
  // hooks, MCP servers and permissions must not count) and none from HOME files a worker could
  // have written in an earlier turn (home_files are rewritten before every start).
  virtual CliInvocation Invocation(const CliExecutorOptions& options, const CliTurn& turn) const = 0;
  // One stdout line that parsed as a JSON object. Must accept anything (unknown types, missing
  // or mistyped fields) without throwing: the output is the CLI's, and the CLI read strangers'
  // text.
  virtual void OnLine(const nlohmann::json& line, CliProgress* progress) const = 0;
  // The CLI exited with `exit_code`; judges what the lines did not say (no final record).
  virtual void OnExit(int exit_code, CliProgress* progress) const;
};

// --- What a CLI turn is made of, on the daemon's host or on a remote worker (cli_executor.cpp) ---

// The team skills' texts in a CLI's prompt, at most (code points, shared equally by the skills).
// The whole prompt is cut at 30,000 (one argument's limit); the host facts, Mandate and rules take
// about 3,000, so 12,000 for skills still leaves 15,000 for AGENTS.md and the request before the
// cut reaches them. A CLI cannot call the `skill` tool, so it gets the texts themselves.
inline constexpr std::size_t kCliSkillChars = 12'000;

// A turn's prompt: for a new CLI session the host facts (the authority ladder, how a turn ends)
// and the first input (FirstInputText, with `skills`); for a resumed one the new inputs, the
// skills again when `skills_new`, and a reminder of the report. The intercom inbox is taken
// either way. Cut to 30,000 code points (text::CutMiddle).
std::string CliPrompt(const WorkerTask& t, bool resumed, const std::string& skills, bool skills_new);

// The sandbox half of the way to the gateway, when the sandbox has no network.
struct CliBridge {
  std::string binary;  // the daemon's own binary, run as `model-bridge PORT SOCKET`
  int port = 0;
  std::string socket;
};
// The argv that starts `inv`: as it is, or behind a short sh prelude that writes its home_files
// below the private HOME (from variables added to `env`) and starts the bridge first.
std::vector<std::string> CliArgv(const CliInvocation& inv, const std::optional<CliBridge>& bridge,
                                 std::vector<std::pair<std::string, std::string>>* env);

// Feeds every complete line of `out` after `consumed` (and, at exit, a last unterminated one)
// that parses as a JSON object to `adapter`; anything the adapter throws is logged. Returns the
// new offset.
std::size_t FeedCliLines(const CliAdapter& adapter, const std::string& out, std::size_t consumed, bool at_exit,
                         CliProgress* progress);

// How a finished turn of `cli` ended, from its structured result: timed out, failed (`failure`
// holds the raw cause), a report block (then also given in *report_block), or — a CLI that
// forgot the block — its final words as a ready result, with a PR titled `scope` when
// `has_changes()` says the worktree changed.
WorkerReport JudgeCliTurn(const std::string& cli, TimeMs turn_ms, int code, bool timed_out, const CliProgress& p,
                          const std::string& err_tail, const std::string& scope, const std::function<bool()>& has_changes,
                          std::optional<nlohmann::json>* report_block);

// The adapter of `cli` (one of CliExecutorNames()); nullptr for another name.
std::unique_ptr<CliAdapter> MakeCliAdapter(const std::string& cli);

std::unique_ptr<CliAdapter> MakeClaudeCodeAdapter();
std::unique_ptr<CliAdapter> MakeCodexAdapter();
std::unique_ptr<CliAdapter> MakeGeminiCliAdapter();
std::unique_ptr<CliAdapter> MakeQwenCodeAdapter();

// Helpers the adapters share.
// `options.allowed_commands` as the command prefixes a CLI's allow-list syntax wraps (e.g.
// Claude's "Bash(git diff:*)"), each trimmed; empty entries dropped.
std::vector<std::string> AllowedCommandPrefixes(const CliExecutorOptions& options);
// A transcript "assistant" body with text and/or tool calls.
nlohmann::json AssistantEvent(const std::string& text, const nlohmann::json& tool_calls = nlohmann::json::array());
nlohmann::json ToolCallJson(const std::string& id, const std::string& name, const nlohmann::json& arguments);
nlohmann::json ToolResultEvent(const std::string& id, const std::string& content);
// The stream-json dialect Claude Code and Qwen Code share (system/init, assistant, user, result).
void OnClaudeStyleLine(const nlohmann::json& line, CliProgress* progress);
nlohmann::json UsageJson(const std::string& model, std::int64_t prompt_tokens, std::int64_t completion_tokens,
                         std::optional<double> cost_usd = std::nullopt);

}  // namespace superagent::exec
