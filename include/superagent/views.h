// Views: the read face. Every read of domain state — the panel's pages, the Scheduler's pending
// Assignments, a Source's cursors, a worker session's transcript, `explain` — goes through here,
// beside the Engine (which only writes, ARCHITECTURE.md). A separate, read-only SQLite connection
// on the Engine's database: WAL lets it read while the Engine writes, so a read never waits on the
// Engine's lock, can never change domain state, and sees every transaction the Engine committed
// before the call. Typed queries only; JSON shaping is the caller's.
//
// Thread-safe: calls are serialized by an internal mutex. Multi-query reads (a Ticket's detail)
// run in one read transaction, so they see one consistent snapshot. Views keep no clock and no
// policy: a read that depends on them (a budget's time, explain's Gate) takes them as arguments.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/answer.h"
#include "superagent/assessment.h"
#include "superagent/budget.h"
#include "superagent/domain.h"
#include "superagent/judgement.h"
#include "superagent/mailbox.h"
#include "superagent/mutex.h"
#include "superagent/policy.h"
#include "superagent/quarantine.h"
#include "superagent/session.h"
#include "superagent/source_state.h"
#include "superagent/status.h"

namespace superagent {

namespace store { class Db; class Store; }

// One row of ticket_events: a stage change and why.
struct TicketEvent {
  std::int64_t id = 0;
  TicketId ticket = 0;
  TimeMs at = 0;
  std::optional<Stage> from;
  Stage to = Stage::kIdle;
  std::string cause;
};

// A command a person gave (panel Stop, answer, policy reload): who did what, when.
struct CommandRecord {
  std::int64_t id = 0;
  TimeMs at = 0;
  std::string who, command, target, detail;
};

struct CursorRecord {
  std::string source, name, value;
  TimeMs updated_at = 0;
};

struct PolicyVersionInfo {
  std::int64_t version = 0;
  std::string origin;
  TimeMs created_at = 0;
};

// A Mandate with who ended it, when (from mandate_ends).
struct MandateView {
  Mandate mandate;
  std::string ended_by;
  std::optional<TimeMs> ended_at;
};

// A Ticket with what the History list shows beside it.
struct TicketRow {
  Ticket ticket;
  std::optional<MandateView> mandate;
  std::optional<TriggerRecord> origin;  // the request that created it
  // Spend against the Mandate's budget (issue 22), none when the Mandate has no budget. Views
  // keep no clock: time working now is counted up to its last stage change (`working_since`).
  std::optional<BudgetStatus> budget;
  std::vector<TicketPull> pulls;  // pull requests opened for it (issue 22)
  std::string stage_reason;       // why it is in its stage: the cause of its last change to it
};

// Something that reached a Ticket, with the message itself when it was a Trigger.
struct InputView {
  TicketInput input;
  std::optional<TriggerRecord> trigger;
};

// A Trigger an Eval judged, with the Gate's verdict on it.
struct JudgedTrigger {
  TriggerRecord record;
  std::string strength, gate_reason;
  bool candidate = false;
};

struct DecisionView {
  Decision decision;
  std::vector<JudgedTrigger> batch;  // the Triggers the Eval judged (the evidence)
};

// A recorded Decision as `policy simulate` replays it.
struct RecordedDecision {
  DecisionView view;
  bool thread_had_ticket = false;  // a Ticket was subscribed to the Thread before the Decision
  std::vector<TicketView> tickets;  // those Tickets, with their stage as it is now
};

struct TicketDetail {
  TicketRow row;
  std::vector<DecisionView> decisions;  // the accept that created it and later Decisions on its Thread
  std::vector<Assignment> assignments;
  std::vector<Receipt> receipts;        // messages sent (or pending) for it
  std::vector<InputView> inputs;        // the transcript as far as the store knows it
  std::vector<TicketEvent> events;
  std::vector<CommandRecord> commands;  // commands people gave on it
  std::vector<std::string> threads;     // every Thread subscribed to it: its request's, its PR's, its CI's
};

struct StatusCounts {
  std::map<std::string, std::int64_t> triggers;   // by intake outcome
  std::map<std::string, std::int64_t> tickets;    // by stage
  std::map<std::string, std::int64_t> decisions;  // by outcome
  std::int64_t would_accept = 0;
  std::int64_t eval_queue = 0;
  std::int64_t receipts_pending = 0;
  std::int64_t receipts_failed = 0;
  std::int64_t assignments_running = 0;
  std::int64_t assignments_pending = 0;
  bool operator==(const StatusCounts&) const = default;
};

class Views {
 public:
  // Opens `db_path` read-only (query_only). NotFound when no database exists there: the Engine
  // creates and migrates it, so open the Engine first.
  static Result<std::unique_ptr<Views>> Open(const std::string& db_path);
  ~Views();

  // Changes whenever another connection commits (SQLite's PRAGMA data_version): a cheap "did
  // anything change?" for live updates. -1 when it cannot be read.
  std::int64_t DataVersion();
  // SQLite's quick_check of the file: true when all of it reads as sound, false when `budget`
  // (0: none) ran out first with nothing wrong so far, an IoError naming the damage otherwise.
  Result<bool> QuickCheck(std::chrono::milliseconds budget);
  // The id made once with this database (32 hex digits, issue 23). Every idempotency key the
  // daemon sends (Feishu's uuid, GitHub's receipt marker) carries it, so a second install of the
  // same app, or this one after its data_dir was reset, never meets the keys of the first.
  // NotFound in a database the Engine has not yet migrated to it (schema < 14).
  Result<std::string> InstallId();

  // Every read below returns its rows, or the store's error: a failed read is never an empty
  // list (the panel answers 503 rather than "Nothing needs you" when the store cannot be read).

  // --- What needs a person ---
  // Tickets in `stage`, oldest first (questions are answered in the order they were asked).
  Result<std::vector<TicketRow>> TicketsInStage(Stage stage, int limit);
  Result<std::vector<SystemProblem>> Problems(int threshold);
  // Poison items set aside (issue 18), oldest first.
  Result<std::vector<QuarantineItem>> SetAside(int limit);
  // Messages from people that address the agent, received at or after `since`, newest first, at
  // most `limit`, each with what the answer invariant reads about it (answer.h), in one snapshot.
  Result<std::vector<AnswerFacts>> AddressedSince(TimeMs since, int limit);

  // --- Status ---
  // The newest policy version; an empty optional before the first.
  Result<std::optional<PolicyVersionInfo>> CurrentPolicy();
  Result<std::vector<SourceHealth>> SourcesHealth();
  Result<std::vector<CursorRecord>> Cursors();
  Result<StatusCounts> Counts();
  // Triggers by (source, intake outcome), for /metrics.
  Result<std::map<std::pair<std::string, std::string>, std::int64_t>> TriggersBySource();

  // --- History ---
  // Newest first; `stage` filters; `before` pages (ids below it); `repo` ("owner/name", lower
  // case; "" all) keeps the Tickets asked for in that repository or working in it (issue 37).
  Result<std::vector<TicketRow>> Tickets(std::optional<Stage> stage, int limit, std::optional<TicketId> before,
                                         const std::string& repo = "");
  // NotFound when no Ticket has that id.
  Result<TicketDetail> Detail(TicketId id);
  // Observe review: `would_accept` Decisions, newest first, with the Triggers they judged.
  Result<std::vector<DecisionView>> WouldAccept(int limit);
  Result<std::vector<CommandRecord>> Commands(int limit);
  // Decisions made at or after `since`, oldest first, with their batches (policy simulate).
  Result<std::vector<RecordedDecision>> DecisionsSince(TimeMs since);
  // would_accept Decisions made at or after `since`, oldest first, each with the rules its
  // assessment matched, its newest message and its verdict if one was given (issue 38).
  Result<std::vector<WouldAcceptRecord>> WouldAccepts(TimeMs since);
  // Everything judged or waiting to be, made at or after `since`, oldest first: the would_accepts
  // (as WouldAccepts) and the accepted Decisions with a Ticket, each labelled by a person's
  // verdict if one was given, else by its Ticket's outcome (LabelOutcome) if it has one yet. For
  // counting: `text` is left empty (WouldAccepts has it, for the cards a person reads).
  Result<std::vector<WouldAcceptRecord>> Judged(TimeMs since);
  // Explicit requests at or after `since` that followed an inferred ignore on their Thread.
  Result<std::vector<MissedRecord>> Missed(TimeMs since);
  // The outcome of every Ticket made at or after `since`, oldest first (issue 38 §4).
  Result<std::vector<TicketOutcome>> TicketOutcomes(TimeMs since);
  // The outcome of each Ticket of `tickets`, by id (the panel's TicketOutcomeCache).
  Result<std::vector<TicketOutcome>> TicketOutcomesOf(const TicketSet& tickets);

 
  // --- The domain, one item or list at a time (what the Engine's writers and its clients ask) ---
  // What is not there is a value (NotFound for a single item asked by id, an empty list, nullopt);
  // a read the store failed is its error, never "empty", so no caller acts on nothing when
  // something is there (issue 20).
  Result<Ticket> GetTicket(TicketId id);
  Result<Mandate> GetMandate(TicketId ticket);
  Result<std::vector<TicketInput>> TicketInputs(TicketId ticket);
  Result<std::vector<Assignment>> Assignments(TicketId ticket);
  // Assignments in `state` ("pending" | "running" | "ended"), oldest first.
  Result<std::vector<Assignment>> AssignmentsInState(const std::string& state);
  // nullopt ticket: every receipt.
  Result<std::vector<Receipt>> Receipts(std::optional<TicketId> ticket);
  Result<std::vector<Decision>> Decisions(const std::string& thread);
  Result<TriggerRecord> GetTrigger(const std::string& id);
  // The Trigger with arrival number `seq`.
  Result<TriggerRecord> GetTriggerBySeq(std::int64_t seq);
  // Open pull requests opened for Tickets whose Mandate stands: what the GitHub Source follows
  // (their CI, reviews, merge or close) besides what it reads anyway.
  Result<std::vector<TicketPull>> TrackedPulls();
  // The pull requests opened for `ticket`, oldest first.
  Result<std::vector<TicketPull>> TicketPulls(TicketId ticket);
  // The Ticket's budget, extensions and spend at `now`; nullopt when its Mandate has none.
  Result<std::optional<BudgetStatus>> BudgetOf(TicketId ticket, TimeMs now);
  // A Trigger's whole story (SPEC §12 explain): lookup by Trigger id or message URL. `policy` is
  // the one in force (the Gate's verdict on it now), `now` the time its answer is judged at.
  Result<nlohmann::json> Explain(const std::string& id_or_url, const Policy& policy, TimeMs now);
  // Effects not yet done: "pending" (waiting or in flight) and "failed" counts.
  Result<nlohmann::json> OutboxCounts();

  // --- What a Source follows (SPEC §3) ---
  // Every cursor `source` saved, by name. A failed read is an error, never "no cursors": a Source
  // that took it for empty would start following discussions again from fresh cursors.
  Result<std::map<std::string, std::string>> SourceCursors(const std::string& source);
  // Thread keys subscribed by open Tickets that start with `prefix` (e.g. "github:"): the
  // discussions a Source keeps polling while work is in progress (SPEC §3.5).
  Result<std::vector<std::string>> OpenTicketThreads(const std::string& prefix);
  // Thread keys starting with `prefix` of Tickets that ended at or after `since`, each with its
  // Ticket's end: SPEC §3.5 follows a discussion for 14 days after its last activity or its
  // Ticket's end, whichever is later.
  Result<std::map<std::string, TimeMs>> EndedTicketThreads(const std::string& prefix, TimeMs since);
  // The request (origin Trigger) and the messages the daemon posted and saw delivered (sent
  // receipts, with the platform's id) of every open Ticket, whose channel starts with `prefix`
  // (e.g. "feishu:"); by Ticket, then time: what a Source looks at again for a discussion that
  // grew on one of them later (issue 34).
  Result<std::vector<TicketMessage>> OpenTicketMessages(const std::string& prefix);

  // --- Worker sessions, transcripts, usage, workspaces (SPEC §6) ---
  // The Ticket's session; nullopt when it has none yet.
  Result<std::optional<Session>> SessionForTicket(TicketId ticket);
  Result<Session> GetSession(SessionId id);
  Result<std::vector<Session>> Sessions();
  // Transcript events after `after_id`, oldest first.
  Result<std::vector<SessionEvent>> SessionEvents(SessionId session, std::int64_t after_id = 0);
  // Totals for the Ticket: calls, prompt/completion/total/cache_hit tokens.
  Result<nlohmann::json> TokenUsage(TicketId ticket);
  // nullopt: none was recorded for the Ticket.
  Result<std::optional<WorkspaceRecord>> WorkspaceFor(TicketId ticket);
  // The live workspaces of the Ticket's other repositories (issue 37), in the order they were made.
  Result<std::vector<WorkspaceRecord>> OtherWorkspacesFor(TicketId ticket);
  // The repository a chat's Ticket works in as its asker chose it (feishu.chat_repos); nullopt: none.
  Result<std::optional<std::string>> ChosenRepository(TicketId ticket);
  // Live workspaces whose Ticket has ended and whose Mandate has ended too (stopped or revoked):
  // nothing can resume them, so their directory and branch can go.
  Result<std::vector<WorkspaceRecord>> WorkspacesToRemove();

  // --- Intercom (SPEC §10) ---
  // nullopt: no message has that id.
  Result<std::optional<IntercomMessage>> GetIntercomMessage(const std::string& id);
  // Messages waiting in `session`'s inbox (Engine::TakeIntercomInbox delivers them).
  Result<std::vector<IntercomMessage>> QueuedIntercom(const std::string& session);
  // Messages to or from `session` newer than `since`, the newest `limit`, oldest first.
  Result<std::vector<IntercomMessage>> IntercomMessagesOf(const std::string& session, TimeMs since, int limit);
  // Wakes `session` has spent since a person last wrote to it.
  Result<int> IntercomWakesSpent(const std::string& session);
  Result<std::vector<IntercomGroup>> IntercomGroups();

 private:
  Views();
  Result<std::optional<MandateView>> MandateOf(TicketId id) REQUIRES(mu_);
  Result<std::optional<TriggerRecord>> TriggerBySeq(std::int64_t seq) REQUIRES(mu_);
  Result<TicketRow> RowOf(const Ticket& t) REQUIRES(mu_);
  Result<std::vector<TicketRow>> RowsOf(const std::vector<Ticket>& tickets) REQUIRES(mu_);
  Result<std::vector<JudgedTrigger>> BatchOf(EvalId eval) REQUIRES(mu_);

  Mutex mu_;
  std::unique_ptr<store::Store> store_ PT_GUARDED_BY(mu_);  // opened read-only
  // store_'s connection, for the queries in views.cpp that are the panel's own.
  store::Db* db_ PT_GUARDED_BY(mu_) = nullptr;
};

}  // namespace superagent
