// Worker sessions (SPEC §6): what one turn of work on a Ticket is given, what it ends with, and
// the executors that run it — the built-in agent loop on the model, or a team's own coding CLI.
// Executors never change domain state themselves: the daemon-side actions (commit, push, open
// the PR, report) go through WorkerServices, which asks the Engine.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/domain.h"
#include "superagent/engine.h"
#include "superagent/intercom.h"
#include "superagent/jobs.h"
#include "superagent/llm.h"
#include "superagent/session.h"
#include "superagent/workspace.h"

namespace superagent::exec {

struct PullRequestSpec {
  std::string title, body;
};

// How a turn ends (the structured `report`). stage is kReady, kBlocked or kWaitingForPerson.
struct WorkerReport {
  Stage stage = Stage::kBlocked;
  std::string summary;
  std::optional<std::string> question;  // waiting_for_person: the one concrete question
  std::optional<PullRequestSpec> pr;    // open (or keep) the Ticket's PR from its branch
};

// Parses {"stage","summary","question","pr"} (the external command's last line; the report tool's
// arguments). InvalidArgument names the field that is wrong.
Result<WorkerReport> ParseReport(const nlohmann::json& j);

struct WorkerTask {
  TicketId ticket = 0;
  std::int64_t assignment = 0;
  SessionId session = 0;
  std::string thread;        // the Ticket's Thread (where it answers)
  std::string scope;
  std::string request_text;  // the original request, not a paraphrase
  Mandate mandate;
  std::vector<std::pair<std::string, std::string>> rules;  // matched rules: name, instructions
  std::vector<nlohmann::json> inputs;  // new this turn: {"kind","text","from","message_id",...}
  WorkspaceRecord workspace;
  std::string agents_md;   // the repository's AGENTS.md, "" when absent
  bool first_turn = true;  // the session has no transcript yet
  Jobs* jobs = nullptr;    // the session's shells (outlive the turn)
  const std::atomic<bool>* cancel = nullptr;  // set when the Ticket is stopped or the daemon stops
  // The intercom (SPEC §10), when the daemon runs one: its tools are offered, and the session's
  // inbox is read at every model step. The caller is always this task's session.
  Intercom* intercom = nullptr;
  // Takes the Ticket's inputs that arrived since the turn began (a person's follow-up, a policy
  // change), in the shape of `inputs`; empty when there are none. SPEC §6: a running session
  // takes the next input between steps instead of after its turn. Unset: inputs wait for the
  // next turn.
  std::function<std::vector<nlohmann::json>()> take_inputs;
};

struct TurnResult {
  std::optional<WorkerReport> report;  // none: the turn ended without one (the Ticket goes idle)
};

class Executor {
 public:
  virtual ~Executor() = default;
  // "builtin" | "command": recorded on the Assignment.
  virtual std::string name() const = 0;
  // Runs one turn. Non-ok when the turn could not run (the Ticket becomes blocked with why).
  virtual Result<TurnResult> RunTurn(const WorkerTask& task) = 0;
};

// The daemon-side actions of a worker: they touch git and the Engine (the outbox), never GitHub
// directly — the PR is an outbox action the Effects loop performs.
class WorkerServices {
 public:
  WorkerServices(Engine* engine, Workspaces* workspaces) : engine_(engine), workspaces_(workspaces) {}
  // Commits pending changes (if any) with `message` and pushes the branch. Returns the number of
  // commits the branch has over its base.
  Result<int> CommitAndPush(const WorkerTask& task, const std::string& message);
  // Commits and pushes the branch and returns the `open_pull_request` action's payload (one per
  // Ticket: idempotency key "pr:ticket:<id>"; a later push updates the same PR). Conflict when
  // the branch has no commits over its base.
  Result<nlohmann::json> PreparePullRequest(const WorkerTask& task, const PullRequestSpec& pr);
  // PreparePullRequest, then the action is enqueued at once (the worker's tool, mid-turn).
  Status OpenPullRequest(const WorkerTask& task, const PullRequestSpec& pr);
  // What a report does, for Engine::FinishTurn: ready/blocked → a result message and the stage;
  // waiting_for_person → one structured question to the person who asked. A PR in a ready
  // report is pushed here and enqueued with the result; if the push fails the Ticket is blocked
  // with the reason instead.
  TurnEnd EndFor(const WorkerTask& task, const WorkerReport& report);
  Engine* engine() { return engine_; }
  Workspaces* workspaces() { return workspaces_; }

 private:
  Engine* engine_;
  Workspaces* workspaces_;
};

struct CommandExecutorOptions {
  std::string command;  // execution.command: run with /bin/sh -c in the Ticket's directory
};

// execution.executor: command — docs/003-execution.md has the contract.
std::unique_ptr<Executor> MakeCommandExecutor(CommandExecutorOptions options, Engine* engine);

// execution.executor: claude-code | codex | gemini-cli | qwen-code — a team's coding CLI, driven
// headless by an adapter that knows its flags and output (docs/003-execution.md "Coding CLIs").
struct CliExecutorOptions {
  std::string cli;      // which CLI: one of CliExecutorNames()
  std::string binary;   // path or name in PATH; "" = the CLI's usual name
  std::string model;    // the model it asks for; "" = the CLI's default
  // The model key's VALUE (app/ reads it from the variable execution.<cli>.api_key_env names);
  // passed to the CLI under its own variable name only, inside the sandbox. "" = none.
  std::string api_key;
  std::string base_url;  // the model API's base URL; "" = the CLI's default endpoint
  std::vector<std::string> args;              // extra arguments, after the adapter's own
  std::vector<std::string> allowed_commands;  // shell command prefixes it may run; empty = any
  // Directories shown read-only in the sandbox so the CLI can start (its installation: the
  // node_modules it lives in). app/ derives them from the binary's real path.
  std::vector<std::string> readable;
  TimeMs turn_ms = 30 * 60 * 1000;  // one turn's wall time; past it the CLI's tree is killed
};

// The executor names of the coding CLIs: "claude-code", "codex", "gemini-cli", "qwen-code".
const std::vector<std::string>& CliExecutorNames();

// execution.executor: one of CliExecutorNames(). InvalidArgument for another name. `clock` and
// `sleeper` time the turn (poll and limit); `engine`, `services`, `clock` must outlive it.
Result<std::unique_ptr<Executor>> MakeCliExecutor(CliExecutorOptions options, Engine* engine,
                                                  WorkerServices* services, Clock* clock, Sleeper sleeper);

struct BuiltinExecutorOptions {
  std::string model;
  int max_steps = 60;                // model calls per turn before it is reported blocked
  TimeMs foreground_ms = 5'000;      // SPEC §6: a shell command moves to the background after 5 s
  std::size_t tool_output_chars = 16'000;  // code points of one tool result, cut once as a whole (text.h)
};

// execution.executor: builtin — the agent loop on the OpenAI-compatible client.
std::unique_ptr<Executor> MakeBuiltinExecutor(BuiltinExecutorOptions options, Engine* engine, llm::ChatClient* chat,
                                              WorkerServices* services);

// The first input of a worker session: the original request, the Mandate with its rules'
// instructions, AGENTS.md and the communication rules of SPEC §1.
std::string FirstInputText(const WorkerTask& task);
// Later inputs (follow-ups, answers, policy-changed, restart) as one user message. An "intercom"
// input only rang the doorbell: the messages come from the inbox (IntercomInbox), not from here.
std::string InputsText(const std::vector<nlohmann::json>& inputs);

}  // namespace superagent::exec
