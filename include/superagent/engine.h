// Engine: the single writer of domain state (ARCHITECTURE.md). Every public method that changes
// state is one SQLite transaction; messages to the outside are only *enqueued* here (outbox).
// Thread-safe: calls are serialized by an internal mutex.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/assessment.h"
#include "superagent/channel.h"
#include "superagent/clock.h"
#include "superagent/domain.h"
#include "superagent/policy.h"
#include "superagent/status.h"

namespace superagent {

namespace store { class Store; }

struct EngineOptions {
  TimeMs eval_timeout_ms = 120'000;     // a running Eval past this is timed out
  int eval_max_attempts = 3;            // unavailable/timed-out Evals are retried this often
  TimeMs eval_backoff_ms = 30'000;      // first retry delay, doubled per attempt
  TimeMs eval_backoff_max_ms = 600'000;
  std::size_t history_limit = 50;       // Thread snapshot size given to an Eval
  std::size_t chat_word_limit = 100;    // SPEC §1: chat messages ≤ 100 words (level-1 host fact)
  std::size_t github_char_limit = 65'000;
  int problem_threshold = 3;            // SPEC §6: the same kind failing 3 times in a row
  // Called after a commit that queued a Trigger for an Eval due now (Receive, Handback), with
  // the Engine's lock held, so the daemon wakes its Eval loop instead of waiting for its next
  // poll. Must not block or call the Engine. Empty: nobody is told.
  std::function<void()> on_eval_queued;
};

struct IntakeResult {
  IntakeOutcome outcome = IntakeOutcome::kStored;
  std::string filter_reason;            // when kFiltered
  std::vector<TicketId> delivered_to;   // Tickets that now hold it (Subscription fan-out)
  std::vector<TicketId> resumed;        // ended Tickets it resumed in place
  std::vector<TicketId> revoked;        // ended Tickets whose revalidation failed
  bool queued_for_eval = false;
};

// What code concluded from Gate + Assessment; FinishEval records it.
struct EvalOutcome {
  DecisionOutcome outcome = DecisionOutcome::kIgnore;
  bool would_accept = false;
  Strength strength = Strength::kNone;
  std::string reason;
  std::vector<Candidate> gated;                // the batch with gate verdicts
  std::optional<Assessment> assessment;
  bool retry = false;                          // unavailable: requeue with backoff
  // For accept:
  std::int64_t request_seq = 0;                // the Trigger that carries the request
  std::string scope;
  std::vector<std::string> matched_rules;
  std::string admission;
  std::string acknowledgement;
  bool silent = false;                         // a matched rule suppresses the acknowledgement
  std::optional<TicketId> related_ticket;      // accept: attach to it; stop: the Ticket to stop
};

struct FinishResult {
  std::int64_t decision_id = 0;
  std::optional<TicketId> ticket;              // created (or attached to) by an accept
  std::vector<TicketId> stopped;
  bool requeued = false;
};

struct PolicyChange {
  bool changed = false;
  std::int64_t version = 0;
  int discarded_evals = 0;
  std::vector<TicketId> notified;              // live Tickets that got a policy_changed input
};

struct MessageSpec {
  std::string id;  // idempotency key
  std::optional<TicketId> ticket;
  std::string thread;
  MessageKind kind = MessageKind::kAnswer;
  std::string body;
};

// Health of one read path of a Source (SPEC §3.5: "realtime", "backfill", "notifications", ...).
struct SourceHealth {
  std::string source, path;
  std::optional<TimeMs> last_success_at, last_error_at;
  std::string last_error;
  int consecutive_failures = 0;
  std::int64_t skipped_items = 0;  // malformed items skipped and counted (SPEC §3.2)
};

// One round of a Source's bookkeeping, applied in one transaction (SPEC §3.3: the failed-item
// set and the advanced global cursor are saved together).
struct SourceUpdate {
  std::string source;                              // "github", "feishu"
  std::map<std::string, std::string> set_cursors;  // cursor name → value (any text, JSON welcome)
  std::vector<std::string> erase_cursors;
  std::string path;                                // read path this round reports on; "" for none
  bool ok = true;                                  // the path's round succeeded
  std::string error;                               // when !ok; never contains secrets
  int skipped = 0;                                 // malformed items skipped this round
};

// A standing problem for "what needs me now" (SPEC §6: the same kind failing 3 times in a row).
struct SystemProblem {
  std::string kind;
  std::string message;
  int failures = 0;
  TimeMs first_at = 0, last_at = 0;
};

// An Effect handed to the Effects loop, with what the loop needs to schedule its retry.
struct ClaimedEffect {
  Effect effect;
  bool outcome_unknown = false;  // an earlier attempt may have reached the peer
  bool is_message = true;        // channel message (5 s → 300 s) vs external action (2 s → 1 min)
  std::string platform;          // "github", "feishu", ... (the channel's prefix)
};

class Engine {
 public:
  // Opens (creating and migrating) the store at `db_path` and records `policy` as the current
  // version if it differs from the last stored one. `clock` must outlive the Engine.
  static Result<std::unique_ptr<Engine>> Open(const std::string& db_path, Clock* clock, const Policy& policy,
                                              const std::string& policy_origin, EngineOptions options = {});
  // Opens an existing store for tools (explain, receive) without touching the policy: the
  // current version is the last one stored. NotFound when no database exists at `db_path`.
  static Result<std::unique_ptr<Engine>> OpenExisting(const std::string& db_path, Clock* clock,
                                                      EngineOptions options = {});
  ~Engine();

  // --- Intake (SPEC §3.2) ---
  // Receives one Trigger in one transaction. `filter_reason` non-empty means the Source already
  // decided it goes no further (stored as kFiltered with that reason). `via` says how it arrived.
  Result<IntakeResult> Receive(const Trigger& trigger, const std::string& via, const std::string& filter_reason = "");

  // --- Eval (SPEC §5) ---
  // Starts an Eval on a Thread whose queued Triggers are due and which has no running Eval.
  // Returns nullopt when there is nothing to do. The batch's gate fields are not yet filled.
  Result<std::optional<EvalJob>> BeginEval();
  // Records the outcome of a running Eval in one transaction. Conflict when the Eval is no longer
  // running (discarded by a policy change, or timed out): nothing is recorded.
  Result<FinishResult> FinishEval(EvalId eval, const EvalOutcome& outcome);
  // Times out running Evals past their deadline: their Triggers are requeued with backoff, or end
  // `unavailable` once attempts are exhausted. Returns how many Evals timed out.
  Result<int> ExpireEvals();

  // --- Tickets ---
  // A worker returns a message outside its Mandate (SPEC §4.1). At most once per (Ticket, message);
  // the message goes to Eval, with every executor's reasons, only when no Ticket still holds it.
  Status Handback(TicketId ticket, const std::string& trigger_id, HandbackKind kind, const std::string& reason);
  // The Ticket asks one structured question: stage waiting_for_person, and an attention message
  // on the question's Thread. The asked person's next message there goes to this Ticket.
  Status AskPerson(TicketId ticket, const HumanAction& action, const std::string& message_id);
  // Executor-reported progress: working, idle, ready or blocked (not ended, not waiting).
  Status SetStage(TicketId ticket, Stage stage, const std::string& cause);
  // The work is over (result delivered or given up); Mandate and Subscriptions stay.
  Status EndTicket(TicketId ticket, const std::string& reason);
  // The panel's Stop (SPEC §4.5): a command from a person; ends the Ticket and withdraws its Mandate.
  Status StopTicket(TicketId ticket, const std::string& who);
  // Enqueues a message (Receipt + Effect, one transaction). A repeated id is ignored (ok).
  // Chat messages over the word limit are refused with InvalidArgument.
  Status Send(const MessageSpec& message);

  // The panel's answer to a waiting Ticket's question: delivered as its answer input; the Ticket
  // resumes (stage idle, new Assignment). Conflict when the Ticket is not waiting.
  Status AnswerQuestion(TicketId ticket, const std::string& who, const nlohmann::json& answer);

  // --- Sources (SPEC §3) ---
  // Applies one round of cursors, health and skip counts in one transaction. Three consecutive
  // failures of a path raise a system problem "source:<source>:<path>"; a success clears it.
  Status UpdateSource(const SourceUpdate& update);
  // Every cursor a Source saved, by name.
  std::map<std::string, std::string> SourceCursors(const std::string& source);
  std::vector<SourceHealth> SourcesHealth();
  // The platform says the discussion is gone (e.g. GitHub 410): nothing more is delivered there.
  Status MarkThreadDeleted(const std::string& thread, const std::string& why);
  // Whether a Source may send; a disabled Source's pending messages wait. Sources are enabled
  // until disabled.
  Status SetSourceEnabled(const std::string& source, bool enabled);

  // --- System problems ---
  // Counts a failure of `kind`; at options.problem_threshold consecutive failures the problem is
  // raised (shown once, however often it fails after that).
  Status ReportFailure(const std::string& kind, const std::string& message);
  // Clears the failure count of `kind` and the problem, if raised.
  Status ReportSuccess(const std::string& kind);
  std::vector<SystemProblem> SystemProblems();

  // --- Outbox delivery (SPEC §8; used by the Effects loop) ---
  // Claims up to `limit` due Effects, oldest first, that may be performed now: the receipt is
  // still pending, its Source enabled, and no earlier receipt of the same Ticket or Thread is
  // pending. Effects whose target no longer accepts messages (Ticket stopped, discussion deleted)
  // are cancelled here with the reason recorded. Each claimed Effect is marked in flight; one
  // found already in flight (a crash mid-send) or retried comes back with outcome_unknown set.
  Result<std::vector<ClaimedEffect>> ClaimDueEffects(int limit);
  // Records what happened to a claimed Effect: done, retry at `retry_at`, failed or target gone.
  // Also counts failures per kind ("effect:<kind>:<platform>") for system problems.
  Status RecordDelivery(std::int64_t effect_id, const Delivery& delivery, TimeMs retry_at);
  // Enqueues an external action (not a message): `payload` must name its "channel" (e.g.
  // "github:pull:12") and carry an "idempotency_key"; a repeated key is ignored (ok).
  Status EnqueueAction(const std::string& kind, const nlohmann::json& payload);
  // Effects not yet done: "pending" (waiting or in flight) and "failed" counts.
  nlohmann::json OutboxCounts();

  // --- Policy (SPEC §4.6) ---
  // Makes `policy` current. A new version only when its content differs; then running Evals are
  // discarded and requeued and affected live Tickets get one policy_changed input.
  Result<PolicyChange> ApplyPolicy(const Policy& policy, const std::string& origin);
  // The current Policy and its version.
  Policy CurrentPolicy() const;
  std::int64_t PolicyVersion() const;

  // --- Commands from people (panel) ---
  // Records a command that changes no domain state by itself (e.g. a policy reload) with who
  // gave it and when; Stop and answers record theirs in their own transaction.
  Status RecordCommand(const std::string& who, const std::string& command, const std::string& target,
                       const std::string& detail);

  // --- GitHub Source support (src/core/engine_github.cpp) ---
  // Thread keys subscribed by open Tickets that start with `prefix` (e.g. "github:"): the
  // discussions a Source keeps polling while work is in progress (SPEC §3.5).
  std::vector<std::string> OpenTicketThreads(const std::string& prefix);

  // --- Reading ---
  Result<Ticket> GetTicket(TicketId id);
  Result<Mandate> GetMandate(TicketId ticket);
  std::vector<TicketInput> TicketInputs(TicketId ticket);
  std::vector<Assignment> Assignments(TicketId ticket);
  std::vector<Receipt> Receipts(std::optional<TicketId> ticket);
  std::vector<Decision> Decisions(const std::string& thread);
  Result<TriggerRecord> GetTrigger(const std::string& id);
  // A Trigger's whole story (SPEC §12 explain): lookup by Trigger id or message URL.
  Result<nlohmann::json> Explain(const std::string& id_or_url);
  // Counts for status lines: triggers by outcome, queued evals, tickets by stage.
  nlohmann::json Stats();

 private:
  Engine(std::unique_ptr<store::Store> store, Clock* clock, EngineOptions options);

  mutable std::mutex mu_;
  std::unique_ptr<store::Store> store_;
  Clock* clock_;
  EngineOptions options_;
  Policy policy_;
  std::int64_t policy_version_ = 0;
};

}  // namespace superagent
