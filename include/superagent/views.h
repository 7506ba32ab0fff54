// Views: the panel's read model. A separate, read-only SQLite connection on the Engine's database
// (WAL lets it read while the Engine writes), so pages and live updates never wait on the Engine's
// mutex and can never change domain state. Typed queries only; JSON shaping is the panel's.
//
// Thread-safe: calls are serialized by an internal mutex. Multi-query reads (a Ticket's detail)
// run in one read transaction, so they see one consistent snapshot.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "superagent/answer.h"
#include "superagent/assessment.h"
#include "superagent/budget.h"
#include "superagent/domain.h"
#include "superagent/engine.h"

namespace superagent {

namespace store { class Db; }

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
  // The install id (Engine::InstallId); NotFound in a database from before it existed (schema < 14).
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
  // Newest first; `stage` filters; `before` pages (ids below it).
  Result<std::vector<TicketRow>> Tickets(std::optional<Stage> stage, int limit, std::optional<TicketId> before);
  // NotFound when no Ticket has that id.
  Result<TicketDetail> Detail(TicketId id);
  // Observe review: `would_accept` Decisions, newest first, with the Triggers they judged.
  Result<std::vector<DecisionView>> WouldAccept(int limit);
  Result<std::vector<CommandRecord>> Commands(int limit);
  // Decisions made at or after `since`, oldest first, with their batches (policy simulate).
  Result<std::vector<RecordedDecision>> DecisionsSince(TimeMs since);

 private:
  Views();
  Result<std::optional<MandateView>> MandateOf(TicketId id);
  Result<std::optional<TriggerRecord>> TriggerBySeq(std::int64_t seq);
  Result<TicketRow> RowOf(const Ticket& t);
  Result<std::vector<TicketRow>> RowsOf(const std::vector<Ticket>& tickets);
  Result<std::vector<JudgedTrigger>> BatchOf(EvalId eval);

  std::mutex mu_;
  std::unique_ptr<store::Db> db_;
};

}  // namespace superagent
