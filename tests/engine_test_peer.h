// Test hooks of the Engine (LevelDB's TEST_ methods, kept off the public interface): events no
// daemon path raises by itself, so a test can put a Ticket or a Source in a state directly. Each
// is one transaction, as the Engine's public events are.
#pragma once

#include <string>

#include "superagent/engine.h"

namespace superagent {

class EngineTestPeer {
 public:
  explicit EngineTestPeer(Engine& engine) : e_(engine) {}
  Status AskPerson(TicketId ticket, const HumanAction& action, const std::string& message_id) {
    return e_.AskPerson(ticket, action, message_id);
  }
  Status SetStage(TicketId ticket, Stage stage, const std::string& cause) { return e_.SetStage(ticket, stage, cause); }
  Status EndTicket(TicketId ticket, const std::string& reason) { return e_.EndTicket(ticket, reason); }
  Status StartAssignment(std::int64_t assignment, const std::string& executor) {
    return e_.StartAssignment(assignment, executor);
  }
  Result<Session> OpenSession(TicketId ticket, const std::string& title, const std::string& executor) {
    return e_.OpenSession(ticket, title, executor);
  }
  Status RecordWorkspace(const WorkspaceRecord& workspace) { return e_.RecordWorkspace(workspace); }
  Status SetSourceEnabled(const std::string& source, bool enabled) { return e_.SetSourceEnabled(source, enabled); }

 private:
  Engine& e_;
};

}  // namespace superagent
