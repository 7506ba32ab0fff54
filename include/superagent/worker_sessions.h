// The intercom's view of the daemon's worker sessions (SPEC §10 over SPEC §6): every Ticket's
// worker session, as the Engine stores it (sessions, session_events, tickets), is an intercom
// party. This is the SessionHost the daemon gives the Intercom.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "superagent/engine.h"
#include "superagent/intercom.h"
#include "superagent/secret_filter.h"
#include "superagent/session.h"

namespace superagent {
class Views;
}  // namespace superagent

namespace superagent::exec {

// Intercom ids of worker sessions: "session-<id>" — never a bare number, so a model cannot
// confuse a session with a Ticket.
std::string IntercomSessionId(SessionId id);
// The SessionId in "session-<id>"; nullopt for anything else.
std::optional<SessionId> ParseIntercomSessionId(const std::string& id);

// The surface of a transcript: what was said (inputs, the model's text, its reports and
// questions), not tool calls or their results. Oldest first.
std::vector<SurfaceEntry> SurfaceOf(const std::vector<SessionEvent>& events);

class WorkerSessionHost : public SessionHost {
 public:
  // `workspace` is the repository the daemon works on, every worker session's workspace
  // (app's DaemonWorkspace); "" means unknown, so the intercom refuses to deliver between
  // sessions (it fails closed). `wake` asks the scheduler for a pass now (Execution::Wake); may
  // be empty (tests tick by hand). `engine` (the doorbell) and `views` (sessions, transcripts,
  // inboxes) must outlive the host. `secrets` (not owned; null:
  // none) is the outbound filter every Surface passes (issue 33): another session, or the
  // panel, reads a transcript with the marker where a secret was.
  WorkerSessionHost(Engine* engine, Views* views, std::string workspace, std::function<void()> wake,
                    SecretFilter* secrets = nullptr);

  // Status comes from the session's Ticket: ended → dormant; stage working (or the session is
  // mid-turn) → working; waiting_for_person → waiting_for_person; idle, ready, blocked → idle
  // (a wake starts a turn).
  Result<std::vector<SessionInfo>> Sessions() override;
  std::optional<SessionInfo> Find(const std::string& id) override;
  Result<std::vector<SurfaceEntry>> Surface(const std::string& id) override;
  // start_turn: rings the Ticket's doorbell (Engine::WakeForIntercom — a pending "intercom"
  // input, hence a turn at the scheduler's next pass) and wakes the scheduler. Otherwise the
  // running turn takes the inbox at its next model step.
  void InboxChanged(const std::string& id, bool start_turn) override;

 private:
  std::optional<SessionInfo> Describe(const Session& s);

  Engine* engine_;
  Views* views_;
  std::string workspace_;
  std::function<void()> wake_;
  SecretFilter* secrets_;
};

}  // namespace superagent::exec
