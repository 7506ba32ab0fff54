// execution.executor: command — a team's own coding CLI runs the turn. Contract (docs/003):
// the task as JSON on stdin; one JSON object on the last stdout line; non-zero exit = blocked.
#include <spdlog/spdlog.h>

#include <sstream>

#include "superagent/text.h"
#include "superagent/worker.h"
#include "superagent/worker_sessions.h"

namespace superagent::exec {

using nlohmann::json;

namespace {

std::string LastLine(const std::string& out) {
  std::vector<std::string> lines;
  std::stringstream ss(out);
  for (std::string line; std::getline(ss, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  return lines.empty() ? "" : lines.back();
}

class CommandExecutor : public Executor {
 public:
  CommandExecutor(CommandExecutorOptions options, Engine* engine) : options_(std::move(options)), engine_(engine) {}
  std::string name() const override { return "command"; }

  Result<TurnResult> RunTurn(const WorkerTask& t) override {
    if (options_.command.empty()) return Status::InvalidArgument("execution.command is empty");
    json task = {{"ticket", t.ticket},
                 {"request", t.request_text},
                 {"mandate",
                  {{"scope", t.mandate.scope},
                   {"strength", StrengthName(t.mandate.strength)},
                   {"matched_rules", json::array()},
                   {"sender", t.mandate.sender ? json(*t.mandate.sender) : json()},
                   {"policy_version", t.mandate.policy_version}}},
                 {"follow_ups", json::array()},
                 {"directory", t.workspace.dir},
                 {"branch", t.workspace.branch},
                 {"base", t.workspace.base},
                 {"first_run", t.first_turn}};
    // Issue 37: the Mandate's other repositories, each a repository of its own inside `directory`.
    if (!t.other_workspaces.empty()) {
      json others = json::array();
      for (const WorkspaceRecord& o : t.other_workspaces)
        others.push_back({{"repo", o.repo}, {"directory", o.dir}, {"branch", o.branch}, {"base", o.base}});
      task["other_repositories"] = std::move(others);
    }
    for (const auto& [rule, instructions] : t.rules)
      task["mandate"]["matched_rules"].push_back({{"name", rule}, {"instructions", instructions}});
    for (const json& in : t.inputs)
      if (!in.value("request", false) && in.value("kind", "") != "intercom") task["follow_ups"].push_back(in);
    // Intercom messages (SPEC §10) as follow-ups, already wrapped as level-5 data.
    if (t.intercom != nullptr)
      for (const std::string& m : t.intercom->TakeInbox(IntercomSessionId(t.session)))
        task["follow_ups"].push_back({{"kind", "intercom"}, {"text", m}});
    // "surface": what was said, for people and the intercom's transcript reading (the task JSON
    // itself is for the command).
    std::string said = t.first_turn ? t.request_text : "";
    for (const json& f : task["follow_ups"])
      if (f.contains("text") && f["text"].is_string()) said += (said.empty() ? "" : "\n\n") + f["text"].get<std::string>();
    engine_->AppendSessionEvent(t.session, t.assignment, "input",
                                {{"role", "user"}, {"content", text::Dump(task)}, {"surface", said}});
    // The command is the turn: it runs in the foreground until it exits or the Ticket stops.
    auto r = t.jobs->Run(options_.command, t.workspace.dir, text::Dump(task) + "\n", kNoBackground, t.cancel);
    if (!r.ok()) return r.status();
    json event = {{"command", options_.command}, {"exit_code", r->exit_code}, {"stdout_tail", text::TailLines(r->out, 20, 2000)},
                  {"stderr_tail", text::TailLines(r->err, 20, 2000)}};
    engine_->AppendSessionEvent(t.session, t.assignment, "command", event);
    TurnResult out;
    if (t.cancel != nullptr && t.cancel->load()) return out;
    if (r->exit_code != 0) {
      WorkerReport rep;
      rep.stage = Stage::kBlocked;
      // Its stderr stays on the panel and in the log (host paths, a worker's output): issue 34.
      rep.summary = "The command exited with code " + std::to_string(r->exit_code) + ".";
      rep.failure = rep.summary + "\n\n" + text::TailLines(r->err, 10, 1500);
      out.report = rep;
      spdlog::warn("worker command failed ticket={} exit_code={}", t.ticket, r->exit_code);
      return out;
    }
    const std::string line = LastLine(r->out);
    json j = json::parse(line, nullptr, false);
    auto rep = ParseReport(j);
    if (!rep.ok()) {
      WorkerReport bad;
      bad.stage = Stage::kBlocked;
      bad.summary = "The command's last output line is not a result: " + rep.status().message() + ".";
      bad.failure = bad.summary;
      out.report = bad;
      return out;
    }
    out.report = *rep;
    engine_->AppendSessionEvent(t.session, t.assignment, "report", j);
    return out;
  }

 private:
  static constexpr TimeMs kNoBackground = 365LL * 24 * 3600 * 1000;
  CommandExecutorOptions options_;
  Engine* engine_;
};

}  // namespace

std::unique_ptr<Executor> MakeCommandExecutor(CommandExecutorOptions options, Engine* engine) {
  return std::make_unique<CommandExecutor>(std::move(options), engine);
}

}  // namespace superagent::exec
