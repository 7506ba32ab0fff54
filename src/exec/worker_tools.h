// The built-in worker's tools (SPEC §6): shell with background jobs, files confined to the
// Ticket's directory, commit/push, the PR, report, human_action, handback. Nothing that asks a
// person interactively or changes configuration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "superagent/llm.h"
#include "superagent/worker.h"

namespace superagent::exec {

// What calling a tool did: text for the model, and, for report/human_action, how the turn ends.
struct ToolOutcome {
  std::string text;
  std::optional<WorkerReport> report;
};

// The worker's tools; with `intercom` also the 14 intercom tools (SPEC §10).
std::vector<llm::ToolSpec> WorkerToolSpecs(bool intercom = false);
// What the system prompt adds when the intercom tools are offered. Fixed text: live statuses
// stay out of the prompt so it can be cached (the original's prompt changed with every peer).
const char* IntercomSystemNote();
// The session's intercom inbox, taken now (Intercom::TakeInbox): the wrapped level-5 messages
// as one block of text for a user message; "" when empty or without an intercom.
std::string IntercomInbox(const WorkerTask& task);

class WorkerTools {
 public:
  WorkerTools(const WorkerTask& task, Engine* engine, WorkerServices* services, const BuiltinExecutorOptions& options)
      : task_(task), engine_(engine), services_(services), options_(options) {}
  // Runs one call. Bad arguments come back as text for the model (it may correct itself).
  ToolOutcome Call(const llm::ToolCall& call);

 private:
  ToolOutcome Shell(const nlohmann::json& a);
  ToolOutcome ReadFile(const nlohmann::json& a);
  ToolOutcome WriteFile(const nlohmann::json& a);
  ToolOutcome EditFile(const nlohmann::json& a);
  std::string Cut(std::string text) const;

  const WorkerTask& task_;
  Engine* engine_;
  WorkerServices* services_;
  const BuiltinExecutorOptions& options_;
};

}  // namespace superagent::exec
