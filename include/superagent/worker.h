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
#include "superagent/model_gateway.h"
#include "superagent/prompts.h"
#include "superagent/session.h"
#include "superagent/workspace.h"

namespace superagent {
class Views;
}  // namespace superagent

namespace superagent::exec {

// One screenshot a ready report shows (SPEC §6: a UI change needs Before and After).
struct Screenshot {
  std::string label;  // "Before (main abc1234)" / "After (branch def5678)": which version it shows
  std::string path;   // relative to the Ticket's directory; committed with the branch
};

struct PullRequestSpec {
  std::string title, body;
  // Shown under "Screenshots" in the body, linked from the branch (they are committed with it).
  std::vector<Screenshot> screenshots;
};

// How a turn ends (the structured `report`). stage is kReady, kBlocked or kWaitingForPerson.
struct WorkerReport {
  Stage stage = Stage::kBlocked;
  std::string summary;
  std::optional<std::string> question;  // waiting_for_person: the one concrete question
  std::optional<PullRequestSpec> pr;    // open (or keep) the Ticket's PR from its branch
  // waiting_for_person: the question's form as question.h stores it (QuestionFormJson), null when
  // the report gave no options (a free-text question).
  nlohmann::json question_form;
  std::string ask;                      // who the worker named to answer; "" = the requester
  std::vector<Screenshot> screenshots;  // ready: Before/After of a UI change (CheckReport)
  // Set by an executor (never parsed from a worker's report) when the turn failed rather than the
  // worker reporting: the raw cause (a CLI's stderr, an exit code) for the log, the panel's card
  // and the failure count. `summary` then says it in the daemon's own words, without it.
  std::string failure;
};

// Parses {"stage","summary","question","options","free_text","ask","pr","screenshots"} — the one
// parser of every executor's report: the report tool's and human_action's arguments, a coding
// CLI's ```superagent-report``` block, the external command's last line. options/free_text are
// checked by ParseQuestionForm (question.h). InvalidArgument names the field that is wrong, e.g.
// "report.options[2]: is empty"; `what` replaces "report" in those names.
Result<WorkerReport> ParseReport(const nlohmann::json& j, const std::string& what = "report");

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
  // Issue 37: the Mandate's other repositories, each a repository of its own inside
  // workspace.dir (Workspaces::PrepareAlso), on the same branch name; each gets its own PR.
  std::vector<WorkspaceRecord> other_workspaces;
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
  // The model gateway refused a call of this turn because the Ticket's budget was spent: the
  // scheduler asks the budget question instead of reporting the turn (Engine::EnforceBudget).
  bool budget_spent = false;
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
// What every worker is given and held to, whichever executor runs it.
struct WorkerServicesOptions {
  std::string team_dir;  // prompts.team_dir: the team's skills, re-read every turn; "" = none
  // execution.ui_paths: a branch that changes a path matching one of these globs is a UI change,
  // and its ready report needs Before and After screenshots. A glob without '/' matches a file's
  // name in any directory ("*.css"); one with '/' matches the whole path from the repository's
  // root, '*' crossing directories ("web/**").
  std::vector<std::string> ui_paths = DefaultUiPaths();
  std::uint64_t screenshot_max_bytes = 10u << 20;  // one screenshot file at most (GitHub shows up to 10 MiB)
  static std::vector<std::string> DefaultUiPaths();
};

// What the Ticket's commits may change (Workspaces::TakeCommits), from its Mandate: workflows only
// when the request of a person allowed to ask (an explicit Mandate) names .github/workflows.
CommitRules CommitRulesFor(const WorkerTask& task);

class WorkerServices {
 public:
  WorkerServices(Engine* engine, Workspaces* workspaces, WorkerServicesOptions options = {})
      : engine_(engine), workspaces_(workspaces), options_(std::move(options)) {}
  // Commits pending changes (if any) with `message` in the sandbox, takes the branch out and
  // verifies it (Workspaces::TakeCommits), and pushes what was verified. Returns the number of
  // commits the branch has over its base; InvalidArgument (naming the file) when the
  // commits are refused, and nothing is pushed. The Ticket's other repositories (issue 37) are
  // committed and pushed the same way after it, each to its own remote; a refusal there names
  // the repository (what was pushed before it stays pushed).
  Result<int> CommitAndPush(const WorkerTask& task, const std::string& message);
  // Commits and pushes the branch and returns the `open_pull_request` action's payload (one per
  // Ticket: idempotency key "pr:ticket:<id>"; a later push updates the same PR). Conflict when
  // the branch has no commits over its base. Issue 37: each of the Ticket's other repositories
  // whose branch has commits gets an action too (key "pr:ticket:<id>:<owner/name>"), after the
  // Ticket's own (which is left out when only the others changed); a refusal in any of them
  // names that repository, and then no action is returned.
  Result<std::vector<nlohmann::json>> PreparePullRequests(const WorkerTask& task, const PullRequestSpec& pr);
  // PreparePullRequest, then the action is enqueued at once (the worker's tool, mid-turn).
  Status OpenPullRequest(const WorkerTask& task, const PullRequestSpec& pr);
  // What a report does, for Engine::FinishTurn: ready/blocked → a result message and the stage;
  // waiting_for_person → one structured question to the person who asked. A PR in a ready
  // report is pushed here and enqueued with the result; if the push fails the Ticket is blocked
  // with the reason instead.
  // A report it refuses (CheckReport) blocks the Ticket with why.
  TurnEnd EndFor(const WorkerTask& task, const WorkerReport& report);
  // What the host holds a report to beyond its shape: a question goes to the person who asked
  // (`ask` naming anyone else is refused), and a ready report of a branch that changes a UI path
  // (ChangedUiPaths) carries a Before and an After screenshot, each labelled with a commit id,
  // a real PNG or JPEG inside the Ticket's directory under screenshot_max_bytes. InvalidArgument
  // worded for the worker, naming the field.
  Status CheckReport(const WorkerTask& task, const WorkerReport& report);
  // The files the Ticket's branch changes (committed over its base, staged, or not yet added)
  // that match execution.ui_paths, sorted.
  Result<std::vector<std::string>> ChangedUiPaths(const WorkerTask& task);
  // The team's prompt directory as it is now (LoadTeamFiles), problems logged.
  TeamFiles Team() const;
  Engine* engine() { return engine_; }
  Workspaces* workspaces() { return workspaces_; }
  const WorkerServicesOptions& options() const { return options_; }

 private:
  // Records a push on the Ticket's history (its first is the Ticket's time to first commit).
  // `other`: the workspace of another of the Ticket's repositories it was pushed from (issue 37).
  void NotePushed(const WorkerTask& task, const VerifiedCommits& verified, const WorkspaceRecord* other = nullptr);
  Engine* engine_;
  Workspaces* workspaces_;
  WorkerServicesOptions options_;
};

// Whether the repository path `path` matches one of `globs` (WorkerServicesOptions::ui_paths).
bool MatchesUiPath(const std::vector<std::string>& globs, const std::string& path);

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
  // How the CLI reaches its model. With a gateway (the daemon always gives one), every turn gets
  // a pass of its own as the CLI's key and the gateway's loopback URL as its base URL: the key
  // stays in the daemon, and `api_key` and `base_url` below are not used.
  ModelGateway* gateway = nullptr;
  // With `execution.network: off` the sandbox cannot reach the gateway's TCP port: this program
  // (the daemon's own binary) is started in it first as `model-bridge PORT SOCKET`, and carries
  // the CLI's connections to the gateway's unix socket. "" when the sandbox has the host's network.
  std::string bridge_binary;
  // Without a gateway (tests of the CLIs themselves): the key's value and the API's base URL,
  // given to the CLI under its own variable names inside the sandbox. "" = none / its default.
  std::string api_key;
  std::string base_url;
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
// `sleeper` time the turn (poll and limit); `engine`, `views` (the session's transcript),
// `services`, `clock` must outlive it.
Result<std::unique_ptr<Executor>> MakeCliExecutor(CliExecutorOptions options, Engine* engine, Views* views,
                                                  WorkerServices* services, Clock* clock, Sleeper sleeper);

struct BuiltinExecutorOptions {
  std::string model;
  int max_steps = 60;                // model calls per turn before it is reported blocked
  TimeMs foreground_ms = 5'000;      // SPEC §6: a shell command moves to the background after 5 s
  std::size_t tool_output_chars = 16'000;  // code points of one tool result, cut once as a whole (text.h)
};

// execution.executor: builtin — the agent loop on the OpenAI-compatible client.
// `views` reads the session's transcript.
std::unique_ptr<Executor> MakeBuiltinExecutor(BuiltinExecutorOptions options, Engine* engine, Views* views,
                                              llm::ChatClient* chat,
                                              WorkerServices* services);

// The first input of a worker session: the original request, the Mandate with its rules'
// instructions, AGENTS.md and the communication rules of SPEC §1; `team_skills`
// (TeamSkillsText), when given, after the rules and before AGENTS.md.
std::string FirstInputText(const WorkerTask& task, const std::string& team_skills = "");
// Later inputs (follow-ups, answers, policy-changed, restart) as one user message. An "intercom"
// input only rang the doorbell: the messages come from the inbox (IntercomInbox), not from here.
// An answer shows the question it answers and the chosen option (or the person's own words).
std::string InputsText(const std::vector<nlohmann::json>& inputs);

// The team's skills for a worker's prompt (SPEC §7 level 4): their index (name: description),
// and with body_chars > 0 also their SKILL.md texts, cut (text.h) to share body_chars between
// them — for coding CLIs, which cannot call the `skill` tool. "" when the team has no skill.
std::string TeamSkillsText(const TeamFiles& team, std::size_t body_chars);

}  // namespace superagent::exec
