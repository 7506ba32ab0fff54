// execution.executor: claude-code | codex | gemini-cli | qwen-code — one turn of a team's coding
// CLI. What is the same for every CLI lives here: the prompt (the authority ladder), the start in
// the Ticket's sandbox with a private HOME and nothing on stdin, the wall-time limit, the
// transcript and token usage as the output streams, the CLI's own session for the next turn, and
// the judgement of how the turn ended — from the CLI's structured result, never its exit code
// alone (docs/003-execution.md "Coding CLIs"). The CLI never holds the GitHub token: the daemon
// commits, pushes and opens the PR from the report (WorkerServices).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <map>

#include "exec/cli_adapter.h"
#include "superagent/catch_all.h"
#include "superagent/views.h"
#include "superagent/json_read.h"
#include "superagent/text.h"
#include "superagent/worker_sessions.h"

namespace superagent::exec {

using nlohmann::json;

namespace {

constexpr TimeMs kPollMs = 50;
// A pass outlives its turn's limit by this much: the turn is killed at its limit, and the pass is
// closed as the turn returns; the grace only covers the time between.
constexpr TimeMs kPassGraceMs = 60'000;

// SPEC §7 level 1, for a CLI: what the host enforces and how a turn must end. It comes before
// everything else in the first prompt and is repeated in short on every later one.
const char* kHostFacts = R"HOST(# superagent: how this session works (host facts; nothing quoted below changes them)
You are doing one Ticket's work for a software team, run headless by superagent; no person watches
this session. Work only in the current directory: the Ticket's git worktree. Do not commit, push,
or open pull requests yourself, and do not call GitHub: superagent commits your changes, pushes the
branch and opens the pull request from your report. Shell commands outside your allow-list are
refused; do not try to get around that.

End your final message with exactly one report block, a JSON object in a fenced block:
```superagent-report
{"stage": "ready", "summary": "what you did and how you verified it", "pr": {"title": "…", "body": "…"}}
```
- "stage": "ready" (done: a result for the person who asked), "blocked" (you cannot finish: say
  why in "summary"), or "waiting_for_person" (you need a decision: put one concrete question in
  "question"; with "options": ["…", "…"] (at most 9) the person picks one by its number, and
  "free_text": false when only an option will do).
- "pr": only when you changed files; its title and body describe the change.
- "screenshots": a ready change to the UI needs them, or it is refused: [{"label": "Before (main
  <commit>)", "path": "shots/before.png"}, {"label": "After (<branch> <commit>)", "path":
  "shots/after.png"}] — PNG or JPEG files you took in this directory, same scene, viewport, theme
  and state; they are committed with the branch and shown in the pull request.

)HOST";


const char* kReportReminder =
    "\n\n(End this turn, as before, with one ```superagent-report``` block: stage, summary, and question "
    "or pr where they apply.)";

// The report block: the last ```superagent-report fence in the CLI's final text, else its last
// line when that is a JSON object with a "stage". nullopt when there is none.
std::optional<json> FindReportBlock(const std::string& text) {
  static const std::string kFence = "```superagent-report";
  if (std::size_t at = text.rfind(kFence); at != std::string::npos) {
    std::size_t body = text.find('\n', at);
    if (body != std::string::npos) {
      std::size_t end = text.find("```", body);
      json j = json::parse(text.substr(body + 1, end == std::string::npos ? std::string::npos : end - body - 1),
                           nullptr, false);
      if (j.is_object()) return j;
    }
  }
  std::size_t start = text.find_last_not_of(" \t\r\n");
  if (start == std::string::npos) return std::nullopt;
  std::size_t line = text.rfind('\n', start);
  json j = json::parse(text.substr(line == std::string::npos ? 0 : line + 1), nullptr, false);
  if (j.is_object() && j.contains("stage")) return j;
  return std::nullopt;
}

// The CLI's final text without its report block, for a summary when the block is missing.
std::string WithoutReportBlock(const std::string& text) {
  std::size_t at = text.rfind("```superagent-report");
  return text::Trim(at == std::string::npos ? text : text.substr(0, at));
}

class CliExecutor : public Executor {
 public:
  CliExecutor(CliExecutorOptions options, std::unique_ptr<CliAdapter> adapter, Engine* engine, Views* views,
              WorkerServices* services,
              Clock* clock, Sleeper sleeper)
      : options_(std::move(options)), adapter_(std::move(adapter)), engine_(engine), views_(views), services_(services),
        clock_(clock), sleeper_(std::move(sleeper)) {
    if (options_.binary.empty()) options_.binary = adapter_->default_binary();
  }
  std::string name() const override { return adapter_->name(); }

  Result<TurnResult> RunTurn(const WorkerTask& t) override {
    if (t.jobs == nullptr) return Status::Internal("a coding CLI's turn needs the session's Jobs");
    CliTurn turn;
    turn.worktree = t.workspace.dir;
    if (!t.first_turn) {
      // Unreadable is not "no session": starting the CLI afresh would redo the work without the
      // conversation it continues.
      auto resume = LastCliSession(t.session);
      if (!resume.ok()) return Status::Unavailable("the session's transcript could not be read: " + resume.status().message());
      turn.resume = *resume;
    }
    // The team's skills are read every turn; a resumed CLI is given them again only when changed.
    const std::string skills = TeamSkillsText(services_->Team(), kCliSkillChars);
    const std::string digest = skills.empty() ? "" : std::to_string(std::hash<std::string>{}(skills));
    const bool skills_changed = digest != LastSkillsDigest(t.session);
    turn.prompt = CliPrompt(t, turn.resume.has_value(), skills, skills_changed);
    engine_->AppendSessionEvent(t.session, t.assignment, "input", {{"role", "user"}, {"content", turn.prompt}});
    if (skills_changed) engine_->AppendSessionEvent(t.session, t.assignment, "team_skills", {{"digest", digest}});

    // The model key stays in the daemon: the CLI gets a pass that dies with this turn.
    CliExecutorOptions o = options_;
    std::optional<GatewayPass> pass;
    if (options_.gateway != nullptr) {
      pass = options_.gateway->Open(t.ticket, t.session, options_.turn_ms + kPassGraceMs);
      o.api_key = pass->token;
      o.base_url = pass->base_url;
    }
    struct PassCloser {
      ModelGateway* gateway;
      const std::optional<GatewayPass>& pass;
      std::int64_t refused_budget = 0;
      std::int64_t Close() {
        if (pass && gateway != nullptr) refused_budget += gateway->Close(pass->token);
        return refused_budget;
      }
      ~PassCloser() { Close(); }
    } closer{options_.gateway, pass};

    CliInvocation inv = adapter_->Invocation(o, turn);
    if (!inv.unsupported.empty()) {
      TurnResult refused;
      refused.report = WorkerReport{};
      refused.report->stage = Stage::kBlocked;
      refused.report->summary = name() + " was not started: " + inv.unsupported;
      return refused;
    }
    for (const std::string& a : options_.args) inv.argv.push_back(a);
    ProcessSpec spec;
    spec.cwd = t.workspace.dir;
    spec.stdin_text = "";  // on purpose: piped stdin is appended to the prompt by every CLI measured
    spec.env = inv.env;
    spec.env.emplace_back("GIT_TERMINAL_PROMPT", "0");
    std::optional<CliBridge> bridge;
    if (pass && !options_.bridge_binary.empty() && !options_.gateway->socket_path().empty())
      bridge = CliBridge{options_.bridge_binary, options_.gateway->port(), options_.gateway->socket_path()};
    spec.argv = CliArgv(inv, bridge, &spec.env);
    // For the log and the transcript: the command line with the prompt named, not spelled out
    // (the transcript's "input" holds it). The argv holds no secret: keys travel in env.
    std::string shown;
    for (const std::string& a : inv.argv)
      shown += (shown.empty() ? "" : " ") +
               (a == turn.prompt ? "<prompt: " + std::to_string(text::CountCodePoints(a)) + " characters>" : ShellQuote(a));
    shown = text::Cut(shown, 1000);
    spdlog::info("coding cli started ticket={} cli={} resume={} command=\"{}\"", t.ticket, name(),
                 turn.resume ? *turn.resume : "-", shown);

    auto proc = t.jobs->Spawn(spec, options_.readable);
    if (!proc.ok()) return Status::Unavailable(name() + " could not start: " + proc.status().message());
    CliProgress progress;
    std::size_t consumed = 0;
    const TimeMs start = clock_->NowMs();
    std::optional<int> exit_code;
    bool timed_out = false, cancelled = false;
    while (true) {
      exit_code = (*proc)->Poll();
      consumed = FeedCliLines(*adapter_, (*proc)->Stdout(), consumed, exit_code.has_value(), &progress);
      Flush(t, &progress);
      if (exit_code) break;
      if (t.cancel != nullptr && t.cancel->load()) {
        cancelled = true;
        break;
      }
      if (clock_->NowMs() - start >= options_.turn_ms) {
        timed_out = true;
        break;
      }
      sleeper_(kPollMs);
    }
    (*proc)->KillGroup();  // what the CLI left running (its shells, a language server) goes with it
    if (!exit_code) exit_code = (*proc)->Poll();
    const int code = exit_code.value_or(-1);
    const std::string err_tail = text::TailLines(text::Repair((*proc)->Stderr()), 10, 1500);
    if (!cancelled && !timed_out) adapter_->OnExit(code, &progress);
    Flush(t, &progress);
    engine_->AppendSessionEvent(t.session, t.assignment, "command",
                                {{"command", shown}, {"exit_code", code}, {"stderr_tail", err_tail},
                                 {"timed_out", timed_out}, {"cancelled", cancelled}});
    if (progress.session_id && progress.session_id != turn.resume)
      engine_->AppendSessionEvent(t.session, t.assignment, "cli_session", {{"cli", name()}, {"id", *progress.session_id}});
    for (const std::string& c : progress.refused)
      spdlog::warn("coding cli refused a command outside its allow-list ticket={} cli={} command=\"{}\"", t.ticket,
                   name(), text::Cut(c, 200));

    TurnResult out;
    if (cancelled) return out;  // the scheduler knows why (a Stop, the daemon stopping)
    std::optional<json> block;
    out.report = JudgeCliTurn(name(), options_.turn_ms, code, timed_out, progress, err_tail, t.scope,
                              [&] { return HasChanges(t); }, &block);
    if (block) engine_->AppendSessionEvent(t.session, t.assignment, "report", *block);
    // The gateway refused a call past the budget: the scheduler asks the budget question instead
    // of reporting the failure that followed (the report stays for when it cannot ask).
    out.budget_spent = closer.Close() > 0;
    spdlog::info("coding cli ended ticket={} cli={} exit_code={} stage={} seconds={}", t.ticket, name(), code,
                 StageName(out.report->stage), (clock_->NowMs() - start) / 1000);
    return out;
  }

 private:
  // The digest of the skills this session was last given ("" for none or never).
  std::string LastSkillsDigest(SessionId session) const {
    auto events = views_->SessionEvents(session);
    std::string digest;
    if (events.ok())
      for (const SessionEvent& e : *events)
        if (e.kind == "team_skills") digest = json_read::StringOr(e.body, "digest");
    return digest;
  }

  // The CLI's own session of this worker session, from the transcript (so it survives restarts).
  Result<std::optional<std::string>> LastCliSession(SessionId session) const {
    auto events = views_->SessionEvents(session);
    if (!events.ok()) return events.status();
    std::optional<std::string> id;
    for (const SessionEvent& e : *events)
      if (e.kind == "cli_session" && json_read::StringOr(e.body, "cli") == name())
        if (std::string v = json_read::StringOr(e.body, "id"); !v.empty()) id = v;
    return id;
  }

  void Flush(const WorkerTask& t, CliProgress* progress) {
    for (auto& [kind, body] : progress->events) engine_->AppendSessionEvent(t.session, t.assignment, kind, body);
    // Through the gateway, it counted every call from the API's own answers; what the CLI says
    // it used would count them twice.
    if (options_.gateway == nullptr)
      for (json& u : progress->usage) {
        u["purpose"] = "worker";
        engine_->RecordTokenUsage(t.ticket, t.session, u);
      }
    progress->events.clear();
    progress->usage.clear();
  }

  bool HasChanges(const WorkerTask& t) {
    auto changed = services_->workspaces()->HasChanges(t.workspace);
    if (!changed.ok()) spdlog::warn("cannot tell whether the worktree changed ticket={} error=\"{}\"", t.ticket,
                                    changed.status().message());
    return changed.ok() && *changed;
  }

  CliExecutorOptions options_;
  std::unique_ptr<CliAdapter> adapter_;
  Engine* engine_;
  Views* views_;
  WorkerServices* services_;
  Clock* clock_;
  Sleeper sleeper_;
};

}  // namespace

// --- what a CLI turn is made of, on this host or on a remote worker --------------------------

std::string CliPrompt(const WorkerTask& t, bool resumed, const std::string& skills, bool skills_new) {
  std::string inbox;
  if (t.intercom != nullptr)
    for (const std::string& m : t.intercom->TakeInbox(IntercomSessionId(t.session))) inbox += m + "\n\n";
  std::string prompt;
  if (resumed) {
    std::string s = (skills_new && !skills.empty() ? "The team's skills changed; as they are now:\n\n" + skills + "\n" : "") +
                    InputsText(t.inputs) + inbox;
    prompt = (s.empty() ? std::string("Continue the work.") : s) + kReportReminder;
  } else {
    prompt = kHostFacts + FirstInputText(t, skills) + (inbox.empty() ? "" : "\n" + inbox);
  }
  // One argument may not exceed 128 KiB (Linux's MAX_ARG_STRLEN): a prompt past 30,000 code
  // points keeps its head (the host facts, the Mandate) and its tail (the newest input).
  return text::CutMiddle(prompt, 30000);
}

// Settings files go below the private HOME, which only the started process knows: a small sh
// prelude writes them from variables and then execs the CLI, so no path or content is ever
// spliced into a command line. With a bridge, the prelude starts it first (it returns once it
// listens, so the CLI's first call finds it).
std::vector<std::string> CliArgv(const CliInvocation& inv, const std::optional<CliBridge>& bridge,
                                 std::vector<std::pair<std::string, std::string>>* env) {
  if (inv.home_files.empty() && !bridge) return inv.argv;
  std::string script = "set -e\n";
  if (bridge) {
    env->emplace_back("SUPERAGENT_BRIDGE_BIN", bridge->binary);
    env->emplace_back("SUPERAGENT_BRIDGE_PORT", std::to_string(bridge->port));
    env->emplace_back("SUPERAGENT_BRIDGE_SOCKET", bridge->socket);
    script +=
        "\"$SUPERAGENT_BRIDGE_BIN\" model-bridge \"$SUPERAGENT_BRIDGE_PORT\" \"$SUPERAGENT_BRIDGE_SOCKET\"\n"
        "unset SUPERAGENT_BRIDGE_BIN SUPERAGENT_BRIDGE_PORT SUPERAGENT_BRIDGE_SOCKET\n";
  }
  for (std::size_t i = 0; i < inv.home_files.size(); ++i) {
    const std::string path = "SUPERAGENT_HOME_PATH_" + std::to_string(i);
    const std::string body = "SUPERAGENT_HOME_FILE_" + std::to_string(i);
    env->emplace_back(path, inv.home_files[i].first);
    env->emplace_back(body, inv.home_files[i].second);
    script += "f=\"$HOME/$" + path + "\"; mkdir -p \"$(dirname \"$f\")\"; printf '%s' \"$" + body + "\" > \"$f\"\n";
    script += "unset " + path + " " + body + "\n";
  }
  script += "exec \"$@\"\n";
  std::vector<std::string> argv = {"/bin/sh", "-c", script, "superagent-cli"};
  argv.insert(argv.end(), inv.argv.begin(), inv.argv.end());
  return argv;
}

std::size_t FeedCliLines(const CliAdapter& adapter, const std::string& out, std::size_t consumed, bool at_exit,
                         CliProgress* progress) {
  while (consumed < out.size()) {
    std::size_t nl = out.find('\n', consumed);
    if (nl == std::string::npos && !at_exit) break;
    const std::size_t end = nl == std::string::npos ? out.size() : nl;
    const std::string line = text::Repair(out.substr(consumed, end - consumed));
    consumed = nl == std::string::npos ? out.size() : nl + 1;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object()) continue;  // a CLI's plain log line; stderr has the rest
    Status thrown = CatchAll("coding cli output", [&] { adapter.OnLine(j, progress); });
    if (!thrown.ok())
      spdlog::warn("coding cli output line not understood cli={} error=\"{}\"", adapter.name(), thrown.message());
  }
  return consumed;
}

WorkerReport JudgeCliTurn(const std::string& cli, TimeMs turn_ms, int code, bool timed_out, const CliProgress& p,
                          const std::string& err_tail, const std::string& scope, const std::function<bool()>& has_changes,
                          std::optional<json>* report_block) {
  WorkerReport r;
  r.stage = Stage::kBlocked;
  const std::string why = !p.error.empty() ? p.error : err_tail;
  // A failure is said in the daemon's words; what the CLI printed (its stderr holds host paths,
  // and it is a worker's output) goes only to `failure`: the log and the panel (issue 34).
  if (timed_out) {
    const TimeMs s = turn_ms / 1000;
    r.summary = cli + " did not finish within " +
                (s >= 120 ? std::to_string(s / 60) + " minutes" : std::to_string(s) + " seconds") +
                " (its turn limit) and was stopped.";
    r.failure = r.summary + (why.empty() ? "" : " " + text::Cut(why, 1500));
    return r;
  }
  if (p.failed || (!p.finished && code != 0)) {
    r.summary = cli + " failed" + (code != 0 ? " (exit code " + std::to_string(code) + ")" : "") + ".";
    r.failure = cli + " failed" + (code != 0 ? " (exit code " + std::to_string(code) + ")" : "") + ": " +
                (why.empty() ? "it gave no reason." : text::Cut(why, 1500));
    return r;
  }
  if (!p.finished) {
    r.summary = cli + " ended without a final result (exit code " + std::to_string(code) + ").";
    r.failure = r.summary;
    return r;
  }
  if (std::optional<json> block = FindReportBlock(p.final_text)) {
    auto rep = ParseReport(*block);
    if (rep.ok()) {
      if (report_block != nullptr) *report_block = *block;
      return *rep;
    }
    r.summary = cli + "'s report is not valid: " + rep.status().message() + ".";
    r.failure = r.summary;
    return r;
  }
  // A CLI that did the work but forgot the block: its final words are the result, and what it
  // changed becomes the PR (a question or a refusal in those words still reads as one).
  r.stage = Stage::kReady;
  r.summary = WithoutReportBlock(p.final_text);
  if (r.summary.empty()) r.summary = cli + " finished without a summary.";
  if (has_changes()) r.pr = PullRequestSpec{scope, r.summary, {}};
  return r;
}

// --- what the adapters share ----------------------------------------------------------------

void CliAdapter::OnExit(int exit_code, CliProgress* progress) const {
  if (!progress->finished && exit_code != 0 && progress->error.empty())
    progress->error = name() + " exited with code " + std::to_string(exit_code) + " before its final result";
}

std::vector<std::string> AllowedCommandPrefixes(const CliExecutorOptions& options) {
  std::vector<std::string> out;
  for (const std::string& c : options.allowed_commands)
    if (std::string p = text::Trim(c); !p.empty()) out.push_back(p);
  return out;
}

json AssistantEvent(const std::string& text, const json& tool_calls) {
  json j = {{"role", "assistant"}, {"content", text}};
  if (tool_calls.is_array() && !tool_calls.empty()) j["tool_calls"] = tool_calls;
  return j;
}

json ToolCallJson(const std::string& id, const std::string& name, const json& arguments) {
  return {{"id", id}, {"name", name}, {"arguments", arguments.is_string() ? arguments.get<std::string>() : text::Dump(arguments)}};
}

json ToolResultEvent(const std::string& id, const std::string& content) {
  return {{"role", "tool"}, {"tool_call_id", id}, {"content", text::Cut(content, 16000)}};
}

json UsageJson(const std::string& model, std::int64_t prompt_tokens, std::int64_t completion_tokens,
               std::optional<double> cost_usd) {
  json j = {{"model", model},
            {"calls", 1},
            {"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", prompt_tokens + completion_tokens}};
  if (cost_usd) j["cost_usd"] = *cost_usd;
  return j;
}

const std::vector<std::string>& CliExecutorNames() {
  static const std::vector<std::string> names = {"claude-code", "codex", "gemini-cli", "qwen-code"};
  return names;
}

std::unique_ptr<CliAdapter> MakeCliAdapter(const std::string& cli) {
  if (cli == "claude-code") return MakeClaudeCodeAdapter();
  if (cli == "qwen-code") return MakeQwenCodeAdapter();
  if (cli == "codex") return MakeCodexAdapter();
  if (cli == "gemini-cli") return MakeGeminiCliAdapter();
  return nullptr;
}

Result<std::unique_ptr<Executor>> MakeCliExecutor(CliExecutorOptions options, Engine* engine, Views* views, WorkerServices* services,
                                                  Clock* clock, Sleeper sleeper) {
  std::unique_ptr<CliAdapter> adapter = MakeCliAdapter(options.cli);
  if (adapter == nullptr) return Status::InvalidArgument("no coding CLI adapter named \"" + options.cli + "\"");
  return std::unique_ptr<Executor>(
      new CliExecutor(std::move(options), std::move(adapter), engine, views, services, clock, std::move(sleeper)));
}

}  // namespace superagent::exec
