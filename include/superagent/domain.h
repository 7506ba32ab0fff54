// Domain vocabulary of SPEC §2 as value types: what the Engine stores and what readers get back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/policy.h"
#include "superagent/trigger.h"

namespace superagent {

using TicketId = std::int64_t;
using EvalId = std::int64_t;

// SPEC §3.2: exactly one of these per received Trigger.
enum class IntakeOutcome { kDuplicate, kFiltered, kStored };
const char* IntakeOutcomeName(IntakeOutcome o);  // "duplicate" | "filtered" | "stored"

// Ticket stages for the panel and scheduling (SPEC §2). A Ticket is "open" in every stage but
// kEnded.
enum class Stage { kWorking, kIdle, kWaitingForPerson, kReady, kBlocked, kEnded };
const char* StageName(Stage s);  // "working" | "idle" | "waiting_for_person" | "ready" | "blocked" | "ended"
bool ParseStage(const std::string& text, Stage* out);

enum class DecisionOutcome { kAccept, kStop, kIgnore, kUnavailable };
const char* DecisionOutcomeName(DecisionOutcome d);  // "accept" | "stop" | "ignore" | "unavailable"
bool ParseDecisionOutcome(const std::string& text, DecisionOutcome* out);

// Channel message kinds (SPEC §2).
enum class MessageKind { kAcknowledgement, kAnswer, kResult, kAttention };
const char* MessageKindName(MessageKind k);

// Why a worker returns a message it received (SPEC §4.1).
enum class HandbackKind { kOutOfScope, kOtherTicket, kUnrelatedThread };
const char* HandbackKindName(HandbackKind k);  // "out_of_scope" | "other_ticket" | "unrelated_thread"
bool ParseHandbackKind(const std::string& text, HandbackKind* out);

// A Trigger as the store keeps it: the event plus how and when it arrived.
struct TriggerRecord {
  std::int64_t seq = 0;  // arrival order
  Trigger trigger;
  std::string via;  // how it arrived: "webhook", "poll", "realtime", "backfill", "cli", ...
  TimeMs received_at = 0;
  IntakeOutcome outcome = IntakeOutcome::kStored;
  std::string filter_reason;  // set when outcome is kFiltered
};

// What an accept grants (SPEC §2, §4.5). Immutable once written.
struct Mandate {
  std::int64_t id = 0;
  TicketId ticket = 0;
  std::int64_t policy_version = 0;
  std::string scope;                       // what the work is, one line
  Strength strength = Strength::kNone;
  std::vector<std::string> matched_rules;  // rule names (inferred work)
  std::string source;                      // Source of the request
  std::optional<std::string> sender;       // who asked
  std::string admission;                   // Gate reason that admitted it, e.g. "allow_listed_addressed"
  std::int64_t origin_trigger_seq = 0;
  TimeMs created_at = 0;
  // What the Ticket may spend, from the policy at accept (by strength); nullopt for Mandates
  // written before budgets existed, which are not limited. Extensions live beside it.
  std::optional<Budget> budget;
  // Issue 37: the repositories ("owner/name", lower case) the Ticket may change, in the order its
  // pull requests merge; the Ticket's workspace is in the first of them unless its Thread is in
  // another. Empty: its own repository only (Mandates from before, and work that named none).
  std::vector<std::string> repos;
  // Lifecycle (kept beside the immutable row): "" while active, else "withdrawn" or "revoked".
  std::string ended_as;
  std::string ended_reason;
};

// The one rendering of a Mandate, for `explain` and the panel alike: its grant (with "budget", null
// when it has none), "created_at" as
// FormatTime, "status" ("active" | "withdrawn" | "revoked") and, once ended, "ended": {reason, by,
// at} — `ended_by` and `ended_at` when the caller read them ("" and null when not).
nlohmann::json MandateJson(const Mandate& m, const std::string& ended_by = "",
                           std::optional<TimeMs> ended_at = std::nullopt);

// A structured question waiting for one person (SPEC §1 human_action).
struct HumanAction {
  std::string thread;    // where the person is asked
  std::string actor;     // who must answer (as the Source reports them)
  std::string question;  // one concrete question
  nlohmann::json form = nlohmann::json::object();  // optional structured fields
};

struct Ticket {
  TicketId id = 0;
  std::string thread;  // Thread of the request
  Stage stage = Stage::kIdle;
  std::string scope;
  std::optional<HumanAction> waiting;  // set while kWaitingForPerson
  std::string end_reason;
  std::int64_t decision_id = 0;
  TimeMs created_at = 0;
  TimeMs updated_at = 0;
  bool open() const { return stage != Stage::kEnded; }
};

// A pull request the daemon opened for a Ticket (SPEC §6: a linked open PR keeps being tracked).
struct TicketPull {
  TicketId ticket = 0;
  std::string repo;  // "owner/name", lower case (github_threads.h)
  std::int64_t number = 0;
  std::string head_branch;
  std::string url;            // the PR's web address, "" when the platform did not say
  std::string state = "open";  // "open" | "merged" | "closed"
  int ci_fix_attempts = 0;    // pushes whose failing checks were handed to the worker so far
  std::string ci_fix_sha;     // the head commit of the last of them
  // A Ticket with several: "<round> <head sha>" once the auto-merge guard passed it in that round,
  // "<round> refused" once it did not; "" before any (Engine::AutoMergeLocked).
  std::string merge_check;
  TimeMs created_at = 0;
  TimeMs updated_at = 0;
};

// The one rendering of a TicketPull, for `explain` and the panel: {repo, number, url, head_branch,
// state, ci_fix_attempts, created_at, updated_at}.
nlohmann::json TicketPullJson(const TicketPull& p);

struct Decision {
  std::int64_t id = 0;
  EvalId eval = 0;
  std::string thread;
  DecisionOutcome outcome = DecisionOutcome::kIgnore;
  bool would_accept = false;
  Strength strength = Strength::kNone;
  std::string reason;  // code's reason, e.g. "observe_mode", "no_candidate", "model_failed: ..."
  nlohmann::json assessment;  // the model's structured answer, null when none
  std::optional<TicketId> ticket;
  std::int64_t policy_version = 0;
  TimeMs created_at = 0;
};

// Something delivered to a Ticket: a Trigger by Subscription, a resume, a policy change notice.
struct TicketInput {
  std::int64_t id = 0;
  TicketId ticket = 0;
  std::string kind;  // "trigger" | "answer" | "resume" | "policy_changed" | "restart" | "intercom"
  std::optional<std::int64_t> trigger_seq;
  nlohmann::json body;
  // "pending" (starts a turn) | "context" (older than the Ticket's request: shown at the next
  // turn, starts none) | "taken" | "handed_back"
  std::string state;
  std::string handback_kind, handback_reason;
  TimeMs created_at = 0;
  // A person sent it (not a bot, CI or the daemon): only such input may take the slot kept for
  // people (SPEC §6) and resume an ended Ticket.
  bool from_person = false;
};

struct Assignment {
  std::int64_t id = 0;
  TicketId ticket = 0;
  std::string executor;
  std::string state;  // "pending" | "running" | "ended"
  TimeMs created_at = 0;
  std::optional<TimeMs> started_at, ended_at;
  // Why it exists: "accepted" (new work), "restart", "retry", "intercom" (a session's message),
  // "update" (a bot's, CI's or the daemon's input); or a person's input to an existing Ticket:
  // "answer", "resume", "follow_up". Only the latter may take the reserved slot (SPEC §6).
  std::string cause;
};

// An outgoing message (outbox row, SPEC §8).
struct Receipt {
  std::string id;  // idempotency key: a repeated id is ignored
  std::optional<TicketId> ticket;
  std::string thread;
  std::string channel;
  MessageKind kind = MessageKind::kAcknowledgement;
  std::string body;
  std::string status;  // "pending" | "sent" | "failed" | "abandoned"
  TimeMs created_at = 0;
};

}  // namespace superagent
