// Store: the SQLite schema and typed queries. Only store/ holds SQL text; it makes no domain
// decisions. Callers group calls into transactions with Begin().
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/answers.h"
#include "store/sqlite.h"
#include "superagent/budget.h"
#include "superagent/domain.h"
#include "superagent/judgement.h"
#include "superagent/mailbox.h"
#include "superagent/quarantine.h"
#include "superagent/session.h"
#include "superagent/source_state.h"

namespace superagent {
class Views;
}

namespace superagent::store {

struct PolicyVersionRow {
  std::int64_t version = 0;
  std::string fingerprint;
  std::string body;
  std::string origin;
  TimeMs created_at = 0;
};

struct QueueRow {
  std::int64_t seq = 0;
  std::string thread;
  int attempts = 0;
  std::optional<EvalId> eval;
  std::string handback;  // JSON text or ""
};

struct EvalRow {
  EvalId id = 0;
  std::string thread;
  std::int64_t policy_version = 0;
  std::string status;
  TimeMs started_at = 0, deadline_at = 0;
};

struct GateRow {
  EvalId eval = 0;
  std::int64_t seq = 0;
  std::string strength, reason;
  bool candidate = false;
};

class Store {
 public:
  // Opens the database file (0600, created if needed), sets WAL + foreign keys +
  // synchronous=FULL, applies migrations. `options`: how long to wait for other processes' locks.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, DbOptions options = {});
  // Opens an existing database for reading only (query_only: no statement can write, whatever it
  // says), without migrating it: the read face (Views) beside the Engine's connection. NotFound
  // when no database exists at `path`.
  static Result<std::unique_ptr<Store>> OpenReadOnly(const std::string& path);
  // SQLite's quick_check within `budget` (0: none); see store::QuickCheck.
  Result<bool> QuickCheck(std::chrono::milliseconds budget) { return store::QuickCheck(db_, budget); }
  // Statements caught mid-way (holding a read snapshot); always 0 between calls.
  int BusyStatements() const { return db_.BusyStatements(); }
  // Write transactions begun since Open (Db::WriteTransactions).
  std::int64_t WriteTransactions() const { return db_.WriteTransactions(); }

  // A write transaction (BEGIN IMMEDIATE); rolls back unless committed.
  std::unique_ptr<Tx> Begin() { return std::make_unique<Tx>(&db_); }
  Result<int> SchemaVersion();

  // Triggers and Threads.
  Result<std::optional<TriggerRecord>> FindTrigger(const std::string& id);
  Result<std::optional<TriggerRecord>> FindTriggerBySeq(std::int64_t seq);
  // The Trigger a message's URL names, for `explain`: the newest version of the Trigger with that
  // URL; else of the URL tidied (MessageUrlForms::tidy: no trailing slash, query or sub-page);
  // else, for an issue's or pull request's URL (a comment's fragment that names nothing received
  // included), the discussion's newest Trigger that addresses the agent — a person asking "why
  // didn't it answer?" about an issue means their mention — or, when none does, its newest one
  // that was not filtered, then its newest. nullopt when the URL names nothing stored.
  Result<std::optional<TriggerRecord>> FindTriggerByUrl(const std::string& url);
  Result<std::int64_t> InsertTrigger(const TriggerRecord& r);
  Status InsertTriggerThread(std::int64_t seq, const std::string& thread, int position);
  Result<std::vector<std::string>> TriggerThreads(std::int64_t seq);
  Result<std::vector<Trigger>> ThreadHistory(const std::string& thread, std::size_t limit);
  Status UpsertThread(const std::string& key, const std::string& source, const std::string& channel, TimeMs at);
  Result<std::optional<std::string>> ThreadChannel(const std::string& key);

  // Policy versions.
  Result<std::optional<PolicyVersionRow>> LatestPolicyVersion();
  Result<std::int64_t> InsertPolicyVersion(const std::string& fingerprint, const std::string& body,
                                           const std::string& origin, TimeMs at);

  // Eval queue and Evals.
  Status Enqueue(std::int64_t seq, const std::string& thread, TimeMs at, TimeMs not_before, int attempts,
                 const std::string& handback);
  Result<std::optional<QueueRow>> QueueRowFor(std::int64_t seq);
  // A Thread with due, unclaimed queue rows and no running Eval (oldest first).
  Result<std::optional<std::string>> NextDueThread(TimeMs now);
  Result<EvalId> InsertEval(const std::string& thread, std::int64_t policy_version, TimeMs at, TimeMs deadline);
  Status ClaimBatch(EvalId eval, const std::string& thread, TimeMs now);
  Result<std::vector<QueueRow>> Batch(EvalId eval);
  Result<std::optional<EvalRow>> GetEval(EvalId eval);
  Result<std::vector<EvalRow>> RunningEvals();
  Status SetEvalStatus(EvalId eval, const std::string& status, TimeMs at);
  Status DequeueBatch(EvalId eval);
  // Releases the batch back to the queue; attempts += attempt_increment; due at not_before.
  Status ReleaseBatch(EvalId eval, TimeMs not_before, int attempt_increment);
  Status InsertGateRow(const GateRow& row);
  Result<std::vector<GateRow>> GateRowsFor(std::int64_t seq);
  Result<std::int64_t> InsertDecision(const Decision& d);
  Result<std::vector<Decision>> DecisionsForThread(const std::string& thread);
  Result<std::optional<Decision>> DecisionForEval(EvalId eval);
  Result<std::optional<Decision>> DecisionById(std::int64_t decision);
  // The newest Decision on `thread` a verdict may still be given on (issue 38): a would_accept, or
  // an inferred accept that made a Ticket (auto mode), with no verdict yet.
  Result<std::optional<std::int64_t>> NewestUnjudged(const std::string& thread);
  // Each rule's precision over the judgement window at `now` (PrecisionByRule of ReadJudged): a
  // demoted rule's Tickets are held at accept, and explain shows it beside a rule's Decision.
  Result<std::vector<RulePrecision>> PrecisionNow(const JudgementSettings& settings, TimeMs now);
  // A verdict on `decision` (issue 38); false when it already has one (nothing written).
  Result<bool> InsertVerdict(std::int64_t decision, const std::string& verdict, const std::string& by,
                             const std::string& via, TimeMs at);

  // Tickets, Mandates, Subscriptions (store_tickets.cpp).
  Result<TicketId> InsertTicket(const Ticket& t, std::int64_t origin_seq);
  Result<std::optional<Ticket>> GetTicket(TicketId id);
  Result<std::optional<TicketId>> TicketByOrigin(std::int64_t origin_seq);
  Status UpdateTicket(const Ticket& t);
  Status InsertTicketEvent(TicketId id, TimeMs at, std::optional<Stage> from, Stage to, const std::string& cause);
  // The id of the Ticket's newest history line (ids grow with every line of every Ticket); 0 when none.
  Result<std::int64_t> LastTicketEventId(TicketId id);
  // Why the Ticket last moved to `to` (its latest such event's cause); "" when it never did.
  Result<std::string> LastStageCause(TicketId id, Stage to);
  // What the answer invariant reads about `rec` (store/answers.h).
  Result<AnswerFacts> AnswerFactsOf(const TriggerRecord& rec) { return ReadAnswerFacts(db_, rec); }
  Result<std::int64_t> InsertMandate(const Mandate& m);
  Result<std::optional<Mandate>> MandateForTicket(TicketId id);
  // How many Mandates `source` made since `since` (inclusive), only `sender`'s when it is set.
  Result<std::int64_t> CountMandatesSince(const std::string& source, const std::optional<std::string>& sender,
                                          TimeMs since);
  Status EndMandate(std::int64_t mandate_id, const std::string& kind, const std::string& reason,
                    const std::string& by, TimeMs at);
  Status Subscribe(const std::string& thread, TicketId ticket, TimeMs at);
  Result<std::vector<TicketId>> SubscribedTickets(const std::vector<std::string>& threads);
  Result<std::vector<std::string>> TicketThreads(TicketId ticket);
  Result<std::vector<TicketId>> OpenTickets();
  // The Threads starting with `prefix` of Tickets that ended at or after `since`, each with the
  // latest such end (SPEC §3.5: a discussion is followed for 14 days after its Ticket's end too).
  Result<std::map<std::string, TimeMs>> EndedTicketThreads(const std::string& prefix, TimeMs since);

  // Ticket inputs (store_tickets.cpp).
  // Inserts; returns 0 (no error) when this Trigger already reached this Ticket.
  Result<std::int64_t> InsertInput(const TicketInput& in);
  Result<std::vector<TicketInput>> InputsForTicket(TicketId ticket);
  Result<std::vector<TicketInput>> InputsForTrigger(std::int64_t seq);
  Status MarkHandedBack(std::int64_t input_id, const std::string& kind, const std::string& reason);

  // Assignments (store_tickets.cpp).
  Result<std::int64_t> InsertAssignment(TicketId ticket, const std::string& executor, const std::string& cause, TimeMs at);
  Result<std::vector<Assignment>> AssignmentsFor(TicketId ticket);
  Status EndAssignments(TicketId ticket, TimeMs at);
  // The Ticket's pending Assignment of cause "update" (if any) becomes "follow_up".
  Status PromoteQueuedUpdate(TicketId ticket);

  // Execution (store_exec.cpp): Assignments by state, sessions, transcripts, usage, workspaces.
  Result<std::vector<Assignment>> AssignmentsInState(const std::string& state);
  Result<std::optional<Assignment>> GetAssignment(std::int64_t id);
  Status SetAssignmentState(std::int64_t id, const std::string& state, const std::string& executor, TimeMs at);
  // Pending and context inputs become taken.
  Status MarkInputsTaken(TicketId ticket);
  Result<SessionId> InsertSession(const Session& s);
  Result<std::optional<Session>> GetSession(SessionId id);
  Result<std::optional<Session>> SessionForTicket(TicketId ticket);
  Result<std::vector<Session>> AllSessions();
  Status SetSessionStatus(SessionId id, const std::string& status, TimeMs at);
  Result<std::int64_t> InsertSessionEvent(const SessionEvent& e);
  Result<std::vector<SessionEvent>> SessionEvents(SessionId id, std::int64_t after_id);
  Status InsertTokenUsage(TicketId ticket, std::optional<SessionId> session, const nlohmann::json& usage, TimeMs at);
  Result<nlohmann::json> TokenTotals(TicketId ticket);
  Status UpsertWorkspace(const WorkspaceRecord& w);
  Result<std::optional<WorkspaceRecord>> GetWorkspace(TicketId ticket);
  Result<std::vector<WorkspaceRecord>> LiveWorkspaces();
  // Live workspaces of Tickets that ended for good (ended and their Mandate withdrawn or revoked).
  Result<std::vector<WorkspaceRecord>> WorkspacesEndedForGood();
  // Open Tickets, not waiting for a person, that hold a pending input and have no pending or
  // running Assignment: the ones a follow-up Assignment is due for. Indexed: the scheduler asks
  // every second, whatever the number of Tickets.
  struct DueFollowUp {
    TicketId ticket = 0;
    bool from_person = false;  // a person sent one of its pending inputs
  };
  // Only Tickets whose newest pending input arrived at or before `settled_at` (a burst has settled).
  Result<std::vector<DueFollowUp>> TicketsDueAFollowUp(TimeMs settled_at);
  // Whether the session's transcript holds any event (without reading it).
  Result<bool> SessionHasEvents(SessionId id);
  // Marks the Ticket's workspace removed, and its other repositories' with it.
  Status MarkWorkspaceRemoved(TicketId ticket, TimeMs at);
  // Issue 37: the workspaces of a Ticket's other repositories (workspace_repos), one per repository.
  Status UpsertWorkspaceRepo(const WorkspaceRecord& w);
  // Its live ones, in the order they were made.
  Result<std::vector<WorkspaceRecord>> WorkspaceRepos(TicketId ticket);
  // The repository a chat's Ticket works in, chosen among its Mandate's (ticket_repository); the
  // first choice stands. nullopt: none was chosen.
  Status ChooseRepository(TicketId ticket, const std::string& repo, const std::string& by, TimeMs at);
  Result<std::optional<std::string>> ChosenRepository(TicketId ticket);

  // Outbox.
  // Inserts the receipt; false (no error) when its id exists already.
  Result<bool> InsertReceipt(const Receipt& r);
  // `receipt_id` empty for an external action (kind_class "action").
  Status InsertEffect(const std::string& receipt_id, const std::string& kind, const std::string& payload, TimeMs at,
                      const std::string& kind_class = "message");
  Result<std::vector<Receipt>> ReceiptsFor(std::optional<TicketId> ticket);
  Result<std::vector<Receipt>> ReceiptsForThread(const std::string& thread);

  // Pull requests opened for Tickets (store_pulls.cpp).
  // Records the PR (again: harmless, the first row stays).
  Status InsertTicketPull(const TicketPull& p);
  Result<std::vector<TicketPull>> TicketPulls(TicketId ticket);
  // Open PRs of Tickets whose Mandate still stands, oldest first: what the Source follows.
  Result<std::vector<TicketPull>> OpenTicketPulls();
  // The Ticket's PR whose Thread is `thread_key` ("github:<repo>:pull:<n>") or whose CI Thread is it
  // ("github:ci:<head_branch>"); not found when none.
  Result<std::optional<TicketPull>> TicketPullOn(TicketId ticket, const std::string& thread_key);
  Status UpdateTicketPull(const TicketPull& p);
  // Whether an action of `kind` for `ticket` (payload.ticket) is still pending.
  Result<bool> ActionPendingFor(TicketId ticket, const std::string& kind);
  // A pending receipt's text, replaced before it is sent (the result learns its PR's link).
  Status SetReceiptBody(const std::string& id, const std::string& body);

  // Sources and problems (store_sources.cpp).
  Status SetCursor(const std::string& source, const std::string& name, const std::string& value, TimeMs at);
  Status EraseCursor(const std::string& source, const std::string& name);
  Result<std::map<std::string, std::string>> Cursors(const std::string& source);
  Status RecordPathOutcome(const std::string& source, const std::string& path, bool ok, const std::string& error,
                           const std::string& note,
                           int skipped, TimeMs at);
  Result<std::optional<SourceHealth>> GetHealth(const std::string& source, const std::string& path);
  Result<std::vector<SourceHealth>> AllHealth();
  // The install id written by migration 14 (Views::InstallId).
  Result<std::string> InstallId();
  // The origin Triggers and the sent receipts (those with the platform's id) of Tickets not ended,
  // whose channel starts with `channel_prefix`; by Ticket, then time (Views::OpenTicketMessages).
  Result<std::vector<TicketMessage>> OpenTicketMessages(const std::string& channel_prefix);
  Status MarkThreadDeleted(const std::string& thread, TimeMs at);
  Result<bool> ThreadDeleted(const std::string& thread);
  // Rewrites every GitHub key of the grammar before issue 37 ("github:issue:5", "github:repo")
  // into `repo`'s (canonical "owner/name"), and moves the GitHub Source's cursors, health and
  // problems to "github:<repo>". The caller's transaction. Returns how many Threads changed.
  Result<int> QualifyGitHubKeys(const std::string& repo);
  Status SetSourceEnabled(const std::string& source, bool enabled);
  Result<bool> SourceEnabled(const std::string& source);
  // Problem counters: failures counts consecutive failures; raised when cleared_at IS NULL and
  // failures >= threshold.
  Result<int> CountFailure(const std::string& kind, const std::string& message, TimeMs at);
  Status ClearFailures(const std::string& kind, TimeMs at);

  // Outbox delivery (store_effects.cpp).
  struct EffectRow {
    std::int64_t id = 0;
    std::string receipt_id, kind, payload, status, kind_class;
    int attempts = 0;
    TimeMs next_at = 0;
    std::optional<TimeMs> started_at;
    bool outcome_unknown = false;
  };
  Result<std::vector<EffectRow>> DueEffects(TimeMs now, int limit);
  Result<std::optional<Receipt>> GetReceipt(const std::string& id);
  // True when a receipt created before `receipt_id` for the same Ticket or Thread is pending.
  Result<bool> EarlierReceiptPending(const std::string& receipt_id);
  Status MarkEffectInFlight(std::int64_t id, TimeMs at, bool outcome_unknown);
  Status FinishEffect(std::int64_t id, const std::string& status, const std::string& reason,
                      const std::string& external_id);
  Status RescheduleEffect(std::int64_t id, TimeMs next_at, const std::string& error);
  Status SetReceiptStatus(const std::string& id, const std::string& status, const std::string& external_id, TimeMs at);
  Result<std::optional<EffectRow>> GetEffect(std::int64_t id);
  // True when an action effect with this payload idempotency_key exists.
  Result<bool> ActionExists(const std::string& idempotency_key);
  Result<nlohmann::json> EffectCounts();

  // Quarantine and the clean-stop marker (store_quarantine.cpp).
  Result<std::optional<QuarantineItem>> GetQuarantine(const std::string& kind, const std::string& item);
  Status PutQuarantine(const QuarantineItem& q);  // insert or replace
  Status DeleteQuarantine(const std::string& kind, const std::string& item);
  // The set-aside Effect that delivers receipt `receipt_id`, if any.
  Result<std::optional<QuarantineItem>> SetAsideEffectOf(const std::string& receipt_id);
  // Marks this process running; true when the previous run was still marked running (it died).
  Result<bool> MarkRunning(TimeMs at, std::int64_t pid);
  Status MarkStopped(TimeMs at);
  // Pending Effects claimed by a run that never recorded their outcome.
  Result<std::vector<EffectRow>> InFlightEffects();
  // A set-aside Effect or Thread queue is due again now (Retry); attempts are kept.
  Status RequeueEffect(std::int64_t id, TimeMs at);
  Status RequeueThread(const std::string& thread, TimeMs at);

  // Budgets (store_budget.cpp): spend, and the append-only questions, extensions and stops.
  Result<BudgetSpend> BudgetSpendOf(TicketId ticket);
  Result<std::vector<BudgetEvent>> BudgetEvents(TicketId ticket);
  Status InsertBudgetEvent(const BudgetEvent& e);
  Status MarkInputTaken(std::int64_t input_id);
  // The newest input's id for the Ticket; 0 when it has none.
  Result<std::int64_t> LastInputId(TicketId ticket);

  // Commands and counters.
  Status InsertCommand(TimeMs at, const std::string& who, const std::string& command, const std::string& target,
                       const std::string& detail);

  // Intercom (store_intercom.cpp).
  Status InsertIntercomMessage(const IntercomMessage& m);
  Result<std::optional<IntercomMessage>> GetIntercomMessage(const std::string& id);
  Result<std::int64_t> IntercomMessageCount();
  // Messages sessions sent to `to` (when `from` is set, only that session's) since `since`. A
  // person's messages are not counted: the limits are on sessions talking to sessions.
  Result<int> CountIntercomSince(const std::string& to, const std::optional<std::string>& from, TimeMs since);
  Result<std::vector<IntercomMessage>> QueuedIntercomFor(const std::string& session);
  Status MarkIntercomDelivered(const std::string& id, TimeMs at);
  Status MarkIntercomAnswered(const std::string& id);
  // Messages from `from` to `to` that answer one of `to`'s messages to `from`, oldest first.
  Result<std::vector<IntercomMessage>> IntercomRepliesBetween(const std::string& from, const std::string& to);
  Result<std::vector<IntercomMessage>> IntercomMessagesOf(const std::string& session, TimeMs since, int limit);
  Result<int> WakesSpent(const std::string& session);
  Status SetWakesSpent(const std::string& session, int spent);
  Status InsertIntercomGroup(const IntercomGroup& g, TimeMs at);
  Status DeleteIntercomGroup(const std::string& id);
  Status AddIntercomMember(const std::string& group, const std::string& session, TimeMs at);
  Status RemoveIntercomMember(const std::string& group, const std::string& session);
  Result<std::vector<IntercomGroup>> IntercomGroups();

 private:
  // The read face keeps its own multi-table queries (store/views.cpp) on this connection.
  friend class ::superagent::Views;
  Status Configure();
  Status Migrate();
  Db db_;
};

}  // namespace superagent::store
