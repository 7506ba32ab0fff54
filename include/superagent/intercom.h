// Intercom (SPEC §10): top-level sessions the daemon runs find, message, wake and read each other,
// and form groups. What the model asks for is data; what may happen is decided here, in code:
//   - the sender is the calling session, given by the runtime, never taken from arguments;
//   - validation order and limits follow the original (research/intercom-spec.md §2), minus its
//     bugs: unknown workspaces fail closed, a text over 8 000 characters is refused (not cut),
//     steer spends the wake budget too, rate limits count per target *and* per sender→target pair;
//   - a relayed message is level-5 data, wrapped with an unforgeable delimiter, and can never wake
//     a session whose Ticket ended or whose Mandate was withdrawn (only a person can, SPEC §4.5);
//   - messages are durable (queued → delivered → answered) with a reply_to link, so `ask` and
//     `check_replies` follow links instead of guessing by time, and nothing queued is lost on restart.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/domain.h"
#include "superagent/mailbox.h"
#include "superagent/status.h"

namespace superagent {

class Views;

class Engine;

enum class SessionStatus { kWorking, kIdle, kWaitingForPerson, kDormant };
const char* SessionStatusName(SessionStatus s);  // "working" | "idle" | "waiting_for_person" | "dormant"

// An intercom message as its sender wrote it, read back from the text Intercom::Wrap gave a
// session's model: who sent it ("Tess", or "session «title»") and the words inside the
// delimiters. nullopt for any text Wrap did not make.
struct UnwrappedIntercom {
  std::string from;
  std::string text;
};
std::optional<UnwrappedIntercom> UnwrapIntercom(const std::string& wrapped);

// A session as the intercom sees it. Dormant = its Ticket ended; its transcript stays readable.
struct SessionInfo {
  std::string id;
  std::string title;
  SessionStatus status = SessionStatus::kIdle;
  std::optional<TicketId> ticket;
  std::string workspace;   // the repository it works on; "" = unknown, and unknown fails closed
  TimeMs last_activity = 0;
  bool top_level = true;   // sub-agents are never intercom parties
};

// One entry of a session's surface transcript: what was said, not tool calls.
struct SurfaceEntry {
  std::string role;  // "user" | "assistant"
  std::string text;
  TimeMs at = 0;
};

// The sessions the daemon runs. Implemented by the executor (one worker session per Ticket, and
// panel-opened sessions); tests implement it directly.
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  // Every session, live and dormant. A failed read is an error, never "no sessions".
  virtual Result<std::vector<SessionInfo>> Sessions() = 0;
  // One session; nullopt when the id is unknown.
  virtual std::optional<SessionInfo> Find(const std::string& id) = 0;
  // The session's surface transcript, oldest first; an error when it could not be read.
  virtual Result<std::vector<SurfaceEntry>> Surface(const std::string& id) = 0;
  // Intercom messages wait in `id`'s inbox (Intercom::TakeInbox). `start_turn`: the session is
  // idle and was woken, so start a turn now; otherwise pick them up at the next step.
  virtual void InboxChanged(const std::string& id, bool start_turn) = 0;
};

// What a send did. `ok` false: `error` says exactly what was refused and why; nothing was stored.
struct SendOutcome {
  bool ok = false;
  std::string error;
  std::string message_id;
  std::string applied;        // "wake" | "steer" | "queue"
  std::string target_status;  // as read after delivery
  bool resumed = false;       // a person's message reopened the target's ended Ticket (SPEC §4.5)
  nlohmann::json ToJson() const;
};

class Intercom {
 public:
  // `engine` stores messages and groups, `views` reads them; `host` knows the sessions. All must
  // outlive this.
  Intercom(Engine* engine, Views* views, SessionHost* host, Clock* clock, IntercomLimits limits = {});

  // A session sends to another. `caller` comes from the runtime. `reply_to` links an answer.
  SendOutcome Send(const std::string& caller, const std::string& target, const std::string& text,
                   const std::string& delivery, const std::string& reply_to = "");
  // A person types in the panel: marked as the person's, resets the target's wake budget and
  // always wakes an idle target. To a dormant target (its Ticket ended) it is what a person's
  // message on the Ticket's Thread is: the Ticket resumes in place only if the SPEC §4.5
  // revalidation passes (Engine::ResumeForPersonsMessage); otherwise nothing is stored and the
  // error says exactly why.
  SendOutcome SendAsPerson(const std::string& person, const std::string& target, const std::string& text,
                           const std::string& delivery);
  // Send, then wait up to `wait_ms` (≤ 30 s) for a message from the target whose reply_to is
  // the sent message. Event-driven: returns as soon as the reply is stored, or early (without a
  // reply) when `cancel` is set or Shutdown() is called.
  nlohmann::json Ask(const std::string& caller, const std::string& target, const std::string& text, TimeMs wait_ms,
                     const std::atomic<bool>* cancel = nullptr);
  // Ends every Ask that is waiting, now and from now on (the daemon is stopping).
  void Shutdown();
  // Replies from `target` linked to the caller's messages to it that the caller has not yet seen.
  nlohmann::json CheckReplies(const std::string& caller, const std::string& target);

  // Queued messages for `session`, wrapped for its prompt, now marked delivered (one
  // transaction). Called by the session at its next step or when its turn starts.
  std::vector<std::string> TakeInbox(const std::string& session);
  // The wrapped text a session's model sees for `m` (level-5 data with an unforgeable delimiter).
  std::string Wrap(const IntercomMessage& m, const std::string& sender_title) const;

  // Reading. Allowed for dormant sessions too; never wakes anyone.
  nlohmann::json List(const std::string& caller);
  nlohmann::json ListDormant(const std::string& caller);
  nlohmann::json Read(const std::string& caller, const std::string& target, int max_events);
  nlohmann::json Collect(const std::string& caller, const std::vector<std::string>& targets);

  // Groups. Explicit groups plus "auto" (sessions that have talked; dormant members pruned).
  nlohmann::json CreateGroup(const std::string& caller, const std::string& name, const std::vector<std::string>& members);
  nlohmann::json AddMember(const std::string& caller, const std::string& group, const std::string& member);
  nlohmann::json RemoveMember(const std::string& caller, const std::string& group, const std::string& member);
  nlohmann::json DeleteGroup(const std::string& caller, const std::string& group);
  nlohmann::json Groups(const std::string& caller);
  nlohmann::json Broadcast(const std::string& caller, const std::string& group, const std::string& text,
                           const std::string& delivery);
  nlohmann::json ReadGroup(const std::string& caller, const std::string& group, TimeMs since);

  // --- For the panel, where the caller is a person and sees every workspace ---
  // A person's broadcast: SendAsPerson to every member (dormant members are skipped with the
  // reason; a broadcast never reopens a Ticket).
  nlohmann::json BroadcastAsPerson(const std::string& person, const std::string& group, const std::string& text,
                                   const std::string& delivery);
  // The members' surface entries merged by time, newest `limit` kept, as
  // [{session, title, role, text, at}], plus the group's relayed messages (broadcasts) as
  // [{id, from, from_person, to, text, at}].
  nlohmann::json GroupFeed(const std::string& group, TimeMs since, int limit = 200);

  // The model tools (OpenAI "tools" array entries) and their dispatcher. Arguments are checked
  // against the schema's types; a bad call answers {"ok":false,"error":...}.
  static nlohmann::json ToolSpecs();
  // `cancel` (the turn's) ends a waiting intercom_ask early.
  nlohmann::json CallTool(const std::string& caller, const std::string& name, const nlohmann::json& args,
                          const std::atomic<bool>* cancel = nullptr);

  const IntercomLimits& limits() const { return limits_; }

 private:
  // Checks shared by every send path; empty string when the pair may talk.
  std::string CheckParties(const std::optional<SessionInfo>& from, const std::optional<SessionInfo>& to,
                           const std::string& target_id);
  SendOutcome Deliver(const std::string& from_session, const std::string& person, const SessionInfo& target,
                      const std::string& text, const std::string& delivery, const std::string& reply_to,
                      const std::string& group);
  Result<std::vector<IntercomGroup>> PrunedGroups();
  std::string TitleOf(const std::string& session);
  // "" when `text` may be sent with `delivery`, else why not (nothing is sent).
  std::string CheckText(const std::string& text, const std::string& delivery) const;
  void MessageStored();  // wakes every Ask

  Engine* engine_;
  Views* views_;
  SessionHost* host_;
  Clock* clock_;
  IntercomLimits limits_;
  std::mutex mu_;  // with replies_: Ask waits for a reply
  std::condition_variable replies_;
  std::uint64_t reply_generation_ = 0;
  bool shutting_down_ = false;  // guarded by mu_
};

}  // namespace superagent
