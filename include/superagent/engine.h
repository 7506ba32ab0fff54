// Engine: the single writer of domain state (ARCHITECTURE.md). Every public method is one SPEC
// event and one SQLite transaction; messages to the outside are only *enqueued* here (outbox).
// It holds the lock, the clock and the policy in force; it answers no questions about stored
// state — every read goes through the read face, Views (views.h), beside it.
// Thread-safe: calls are serialized by an internal mutex.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/assessment.h"
#include "superagent/budget.h"
#include "superagent/channel.h"
#include "superagent/clock.h"
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

namespace store { class Store; }

struct EngineOptions {
  TimeMs eval_timeout_ms = 120'000;     // a running Eval past this is timed out
  int eval_max_attempts = 3;            // unavailable/timed-out Evals are retried this often
  TimeMs eval_backoff_ms = 30'000;      // first retry delay, doubled per attempt
  TimeMs eval_backoff_max_ms = 600'000;
  std::size_t history_limit = 50;       // Thread snapshot size given to an Eval
  // The length rule of the platform `channel` belongs to; nullopt (or unset): no limit. app/ sets
  // it from the platforms' modules (app::MessageLimitsFor): SPEC §1's word limit for chats,
  // GitHub's character cap. Every message the Engine enqueues is checked against it.
  std::function<std::optional<MessageLimit>(const std::string& channel)> message_limit;
  int problem_threshold = 3;            // SPEC §6: the same kind failing 3 times in a row
  // Issue 18: an Effect, a Thread's Evals or a Ticket's turns failing the same way this many
  // times in a row, or in flight during this many abnormal exits in a row, are set aside.
  int quarantine_after = 5;
  // Issue 22 (SPEC §6): failing checks on a Ticket's own PR handed to its worker before a person is
  // asked instead (execution.ci_fix_attempts).
  int ci_fix_attempts = 2;
  // A Ticket's follow-up turn starts once its newest pending input is this old, so a burst (a
  // review's comments arriving as one webhook each) is one turn. The daemon uses 3 s.
  TimeMs follow_up_settle_ms = 0;
  // Called after a commit that queued a Trigger for an Eval due now (Receive, Handback), with
  // the Engine's lock held, so the daemon wakes its Eval loop instead of waiting for its next
  // poll. Must not block or call the Engine. Empty: nobody is told.
  std::function<void()> on_eval_queued;
  // Issue 25: a Ticket with an open pull request shows its stage there as a check run (an Effect
  // enqueued with each stage change). Only a GitHub App may write check runs (github.auth: app).
  bool check_runs = false;
  // panel.public_url: the check run links to the Ticket at "<panel_url>/#ticket-<id>"; "" none.
  std::string panel_url;
  // Issue 37: whether the daemon serves GitHub repository `repo` ("owner/name", lower case) —
  // one a request may name for its Mandate. Called with the Engine's lock held; must not call
  // the Engine. Unset: a request names none.
  std::function<bool(const std::string& repo)> serves_repository;
  // feishu.chat_repos: the repositories ("owner/name", lower case) each chat (by its id) may ask
  // about, in the order written. A request in a listed chat names only those; naming none it is
  // worked in the only one, or its asker is asked which (a Ticket waiting for that answer).
  std::map<std::string, std::vector<std::string>> chat_repositories;
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
  std::string verb;                            // "stop" | "status" when a verb decided it (no model)
  // The code checks an inferred assessment went through, in order, each {"check", "passed"}; kept
  // with the Decision (in its assessment) so a verdict traces to what decided. Null: none ran.
  nlohmann::json checks;
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

// An Effect handed to the Effects loop, with what the loop needs to schedule its retry.
struct ClaimedEffect {
  Effect effect;
  bool outcome_unknown = false;  // an earlier attempt may have reached the peer
  bool is_message = true;        // channel message (5 s → 300 s) vs external action (2 s → 1 min)
  std::string platform;          // "github", "feishu", ... (the channel's prefix)
};

// An input a turn takes, with the message it carries when it carries one.
struct TakenInput {
  TicketInput input;
  std::optional<Trigger> trigger;  // the message (kind "trigger", "answer", "resume")
  bool request = false;            // that message is the Ticket's own request
  bool context = false;            // older than the request: context, not something to act on
};

// Everything one worker turn needs, read and marked in the turn's one transaction (BeginTurn), so
// nothing can change between reading the Ticket and opening its session.
struct TurnContext {
  Assignment assignment;                                    // now running
  Ticket ticket;                                            // now working
  Mandate mandate;
  std::string request_text;                                 // the original request, verbatim
  std::vector<std::pair<std::string, std::string>> rules;  // matched rules still in the policy: name, instructions
  std::optional<WorkspaceRecord> workspace;                 // none when it could not be prepared
  std::vector<WorkspaceRecord> other_workspaces;            // the Mandate's other repositories' (issue 37)
  Session session;                                          // now running
  bool first_turn = false;                                  // the session's transcript was empty
  std::vector<TakenInput> inputs;                           // taken for this turn, oldest first
};

// How a worker turn ended; FinishTurn applies all of it in one transaction.
struct TurnEnd {
  std::int64_t assignment = 0;
  // ready | blocked | waiting_for_person, with `summary` as the result message (and `question`
  // for waiting_for_person). nullopt: the turn ended without a report: the Ticket is blocked and
  // the requester is told so in the daemon's words (issue 34: a Ticket never idles in silence),
  // unless background work still runs.
  std::optional<Stage> reported;
  // What is posted. When `error` is set it must be the daemon's own words (never an executor's
  // output: raw stderr holds host paths); FinishTurn adds what the requester can do next.
  std::string summary;
  std::string question;
  // The question's form (question.h: options, free_text) as the worker gave it; null: free text.
  nlohmann::json question_form;
  // External actions enqueued with the result (kind, payload), under EnqueueAction's rules.
  std::vector<std::pair<std::string, nlohmann::json>> actions;
  // Non-empty: the turn failed this way — raw, for the log, the panel's card and the count toward
  // setting the Ticket's turns aside; never posted.
  std::string error;
  bool background_running = false;  // the Ticket's background jobs still run: it stays `working` (SPEC §6)
};

// What the scheduler must do after Engine::EnforceBudget (issue 22).
enum class BudgetVerdict {
  kGo,       // within budget (or none): start or go on with the turn
  kAsked,    // a limit was reached: the Assignment ended and the requester was asked; stop the turn
  kWaiting,  // the budget question is still open (the answer was not an option): nothing starts
  kEnded,    // the person chose to stop, or nobody can be asked: the Ticket ended
};
struct BudgetCheck {
  BudgetVerdict verdict = BudgetVerdict::kGo;
  std::string dimension;  // kAsked / kEnded: the limit reached
};

// What FinishTurn did.
struct TurnOutcome {
  Stage stage = Stage::kIdle;  // the Ticket's stage now
  bool handed_over = false;    // waiting for a person: its slot is free at once (SPEC §6)
  bool said = false;           // a result or question was enqueued
  std::string not_sent;        // why the result could not be enqueued (then the Ticket is blocked)
  // Background work still runs: the stage the report asked for, for EndBackgroundWork.
  std::optional<Stage> deferred;
};

class Engine {
 public:
  // --- Opening (engine.cpp) ---
  // Opens (creating and migrating) the store at `db_path` and records `policy` as the current
  // version if it differs from the last stored one. `clock` must outlive the Engine.
  static Result<std::unique_ptr<Engine>> Open(const std::string& db_path, Clock* clock, const Policy& policy,
                                              const std::string& policy_origin, EngineOptions options = {});
  // Opens an existing store for tools (explain, receive) without touching the policy: the
  // current version is the last one stored. NotFound when no database exists at `db_path`.
  static Result<std::unique_ptr<Engine>> OpenExisting(const std::string& db_path, Clock* clock,
                                                      EngineOptions options = {});
  ~Engine();

  // --- Intake (SPEC §3.2, §4.1; intake.cpp) ---
  // Receives one Trigger in one transaction. `filter_reason` non-empty means the Source already
  // decided it goes no further (stored as kFiltered with that reason). `via` says how it arrived.
  // `with`, when given, is the delivering Source's bookkeeping (its path's health, a cursor it
  // starts), applied in the same transaction — also for a duplicate — as UpdateSource would: a
  // webhook delivery is one transaction. Nothing of either is written when the Trigger is refused.
  Result<IntakeResult> Receive(const Trigger& trigger, const std::string& via, const std::string& filter_reason = "",
                               const SourceUpdate* with = nullptr);
  // A worker returns a message outside its Mandate (SPEC §4.1). At most once per (Ticket, message);
  // the message goes to Eval, with every executor's reasons, only when no Ticket still holds it.
  Status Handback(TicketId ticket, const std::string& trigger_id, HandbackKind kind, const std::string& reason);

  // --- Evals (SPEC §5; evals.cpp) ---
  // Starts an Eval on a Thread whose queued Triggers are due and which has no running Eval.
  // Returns nullopt when there is nothing to do. The batch's gate fields are not yet filled.
  Result<std::optional<EvalJob>> BeginEval();
  // Records the outcome of a running Eval in one transaction. Conflict when the Eval is no longer
  // running (discarded by a policy change, or timed out): nothing is recorded.
  Result<FinishResult> FinishEval(EvalId eval, const EvalOutcome& outcome);
  // Times out running Evals past their deadline: their Triggers are requeued with backoff, or end
  // `unavailable` once attempts are exhausted. Returns how many Evals timed out.
  Result<int> ExpireEvals();
  // An Eval that could not finish (its judging threw, or FinishEval failed): in one transaction
  // the batch is released with backoff — or, at options.quarantine_after failures in a row on the
  // Thread, the Thread is set aside. Conflict when the Eval is no longer running.
  Status RecordEvalError(EvalId eval, const std::string& error);

  // --- Tickets (SPEC §4, §6; tickets.cpp): every stage change goes through ticket_stage.cpp ---
  // Adds a line to the Ticket's history without changing its stage (e.g. killed background jobs).
  Status NoteTicket(TicketId ticket, const std::string& cause);

  // --- Worker turns (SPEC §6; turns.cpp): each one transaction ---
  // Starts pending Assignment `assignment` with `executor`: the Assignment runs, the Ticket is
  // `working`, `prepared` (a workspace made for this turn) is recorded, the Ticket's session is
  // opened (created on first use) and running, and its pending inputs are taken. Conflict — and
  // the Assignment is ended, nothing else changes — when the Assignment is not pending, its
  // Ticket has ended, waits for a person or has its turns set aside. With no workspace recorded
  // and none given (it could not be prepared) the turn still begins — its end says why.
  // `prepared_others`: workspaces of the Ticket's other repositories made for this turn (issue 37).
  Result<TurnContext> BeginTurn(std::int64_t assignment, const std::string& executor,
                                const std::optional<WorkspaceRecord>& prepared,
                                const std::vector<WorkspaceRecord>& prepared_others = {});
  // Ends a turn: its actions and result message (or question) are enqueued, the Ticket moves to
  // the reported stage (or stays `working` while background work runs), the Assignment ends, the
  // session goes idle and the turn's failure or success is counted — one transaction. A Ticket
  // that ended meanwhile (a Stop) gets nothing of it: the Assignment ends and nothing is said. A
  // result over the channel's limit is not enqueued; the Ticket is blocked with why.
  Result<TurnOutcome> FinishTurn(const TurnEnd& end);
  // Background work that kept a Ticket `working` after its turn ended is over (finished or
  // killed): the Ticket moves to `after` (the stage its last report asked for). Ok and nothing
  // changes when it is no longer working or a turn runs.
  Status EndBackgroundWork(TicketId ticket, Stage after, const std::string& why);
  // The Ticket's pending and context inputs, oldest first, now marked taken, with their messages.
  Result<std::vector<TakenInput>> TakeInputs(TicketId ticket);
  // Gives every open Ticket that holds pending inputs but has no pending or running Assignment a
  // new one — cause "follow_up" when a person sent one of them (it may take the slot kept for
  // people), "update" otherwise (a bot, CI, a policy notice) — so an input to an idle session
  // starts a turn and an input to a busy one waits for the next. Context inputs (older than the
  // request) start nothing. Tickets waiting for a person are skipped (their answer does this).
  // Returns how many were created.
  Result<int> AssignFollowUps();
  // running (or pending) → ended. Ok when already ended.
  Status FinishAssignment(std::int64_t assignment);
  // After a restart: every running Assignment ends; its open Ticket gets a "restart" input and a
  // new pending Assignment (cause "restart"). Returns those Tickets.
  Result<std::vector<TicketId>> RecoverInterruptedWork();

  // --- Budgets (issue 22; budgets.cpp) ---
  // The scheduler's check, one transaction, before Assignment `assignment` starts a turn (it is
  // pending) and while the turn runs (it is running). Before a turn, an answer to the Ticket's
  // open budget question is applied first: option 1 (or a message that is exactly "1") records an
  // extension beside the Mandate and the turn goes on; option 2 ends the Ticket ("budget reached;
  // stopped by WHO"); anything else puts the Ticket back to waiting and stays pending for the
  // worker. Then spend is compared with the Mandate's budget plus extensions (while a turn runs,
  // the turns limit is left for the next one); at a reached limit the Assignment ends and the
  // requester is asked one structured question on the request's Thread (form purpose "budget").
  // kGo, changing nothing, when the Mandate has no budget or the Assignment has already ended.
  Result<BudgetCheck> EnforceBudget(TicketId ticket, std::int64_t assignment);

  // --- Sessions, transcripts, token usage, workspaces (SPEC §6; sessions.cpp) ---
  // "idle" | "running" | "ended"; InvalidArgument for anything else.
  Status SetSessionStatus(SessionId session, const std::string& status);
  // Appends one transcript event; returns its id.
  Result<std::int64_t> AppendSessionEvent(SessionId session, std::int64_t assignment, const std::string& kind,
                                          const nlohmann::json& body);
  // Records one model call's usage (llm::Usage::ToJson()) against the Ticket.
  Status RecordTokenUsage(TicketId ticket, std::optional<SessionId> session, const nlohmann::json& usage);
  Status MarkWorkspaceRemoved(TicketId ticket);

  // --- Verdicts (issue 38; verdicts.cpp) ---
  // A person's verdict on would_accept Decision `decision`: was it a request? `by` is who, `via`
  // "panel" or "thread". One transaction; final. NotFound for an unknown Decision, InvalidArgument
  // for one that is not a would_accept (or a bad `via`), Conflict when it already has a verdict.
  Status RecordVerdict(std::int64_t decision, Verdict verdict, const std::string& by, const std::string& via);

  // --- Outbox (SPEC §8; outbox.cpp; delivered by the Effects loop) ---
  // Enqueues a message (Receipt + Effect, one transaction). A repeated id is ignored (ok).
  // Chat messages over the word limit are refused with InvalidArgument.
  Status Send(const MessageSpec& message);
  // Enqueues an external action (not a message): `payload` must name its "channel" (e.g.
  // "github:pull:12") and carry an "idempotency_key"; a repeated key is ignored (ok).
  Status EnqueueAction(const std::string& kind, const nlohmann::json& payload);
  // Claims up to `limit` due Effects, oldest first, that may be performed now: the receipt is
  // still pending, its Source enabled, and no earlier receipt of the same Ticket or Thread is
  // pending. Effects whose target no longer accepts messages (Ticket stopped, discussion deleted)
  // are cancelled here with the reason recorded. Each claimed Effect is marked in flight; one
  // found already in flight (a crash mid-send) or retried comes back with outcome_unknown set.
  Result<std::vector<ClaimedEffect>> ClaimDueEffects(int limit);
  // Records what happened to a claimed Effect: done, retry at `retry_at`, failed or target gone.
  // Also counts failures per kind ("effect:<kind>:<platform>") for system problems.
  Status RecordDelivery(std::int64_t effect_id, const Delivery& delivery, TimeMs retry_at);

  // --- Source rounds and system problems (SPEC §3; source_rounds.cpp) ---
  // Applies one round of cursors, health and skip counts in one transaction. Three consecutive
  // failures of a path raise a system problem "source:<source>:<path>"; a success clears it.
  Status UpdateSource(const SourceUpdate& update);
  // Issue 37: GitHub keys written when the daemon served one repository carry none
  // ("github:issue:5"). Names them as `repo`'s (the repository served then: github.repo, or the
  // first of github.repos) in one transaction, with the GitHub Source's cursors and health; a
  // store with none left changes nothing. InvalidArgument when `repo` is not "owner/name".
  // Returns how many Threads were renamed.
  Result<int> QualifyGitHubThreads(const std::string& repo);
  // The platform says the discussion is gone (e.g. GitHub 410): nothing more is delivered there.
  Status MarkThreadDeleted(const std::string& thread, const std::string& why);
  // Counts a failure of `kind`; at options.problem_threshold consecutive failures the problem is
  // raised (shown once, however often it fails after that).
  Status ReportFailure(const std::string& kind, const std::string& message);
  // Clears the failure count of `kind` and the problem, if raised.
  Status ReportSuccess(const std::string& kind);

  // --- Policy versions (SPEC §4.6; policy_versions.cpp, the current one in engine.cpp) ---
  // Makes `policy` current. A new version only when its content differs; then running Evals are
  // discarded and requeued and affected live Tickets get one policy_changed input.
  Result<PolicyChange> ApplyPolicy(const Policy& policy, const std::string& origin);
  // The current Policy and its version.
  Policy CurrentPolicy() const;
  std::int64_t PolicyVersion() const;

  // --- Panel commands: commands from people (SPEC §4.5; panel_commands.cpp) ---
  // The panel's Stop (SPEC §4.5): a command from a person; ends the Ticket and withdraws its Mandate.
  Status StopTicket(TicketId ticket, const std::string& who);
  // The panel's answer to a waiting Ticket's question: delivered as its answer input; the Ticket
  // resumes (stage idle, new Assignment). Conflict when the Ticket is not waiting.
  Status AnswerQuestion(TicketId ticket, const std::string& who, const nlohmann::json& answer);
  // The panel's Retry on a blocked Ticket (issue 34): a new turn now, told who asked and why it
  // stopped; a Ticket whose turns are set aside is retried as RetryQuarantined does. Conflict when
  // the Ticket is not blocked, NotFound when there is no such Ticket.
  Status RetryTicket(TicketId ticket, const std::string& who);
  // Records a command that changes no domain state by itself (e.g. a policy reload) with who
  // gave it and when; Stop and answers record theirs in their own transaction.
  Status RecordCommand(const std::string& who, const std::string& command, const std::string& target,
                       const std::string& detail);

  // --- Quarantine (issue 18; quarantine.cpp) ---
  // The daemon's start, before any loop runs. Marks this run as running; when the previous run
  // never reached RecordCleanStop (it died), everything it had in flight — claimed Effects,
  // running Evals, running turns — is charged one abnormal exit, and what reached
  // options.quarantine_after of them in a row is set aside now instead of being processed again.
  // Returns the items set aside by this call.
  Result<std::vector<QuarantineItem>> RecordStart(std::int64_t pid);
  // The daemon stopped cleanly: the next start charges nothing.
  Status RecordCleanStop();
  // A person's Retry (panel), one transaction: the record and its counts are cleared and the item
  // is due again now (an Effect is requeued, a Thread's queued Triggers judged, a Ticket given a
  // new turn). NotFound when nothing of that kind and item is set aside.
  Status RetryQuarantined(const std::string& kind, const std::string& item, const std::string& who);

  // --- Intercom mailbox (SPEC §10; mailbox.cpp): the durable mailbox, wake budgets and groups ---
  // Stores `m` after the checks that need stored state, in one transaction: at most
  // limits.per_target_per_minute messages to the target and per_pair_per_minute from this sender
  // to it in the last 60 s (Conflict, nothing stored, when over). Fills m.applied: a person's
  // message resets the target's wake budget and wakes it when idle; a session's wake or steer
  // spends one wake from the budget (steer interjects when the target is working, wakes it when
  // idle); with no budget left the message is queued. A reply marks what it answers "answered".
  // Sender and target join the automatic group.
  Result<IntercomMessage> PostIntercom(IntercomMessage m, bool target_idle, const IntercomLimits& limits);
  // The session's queued messages, oldest first, marked delivered in the same transaction.
  Result<std::vector<IntercomMessage>> TakeIntercomInbox(const std::string& session);
  // Messages `from` sent to `to` that answer `to`'s messages to `from` (reply_to links), oldest
  // first; the queued ones are marked delivered in the same transaction, so the inbox will not
  // deliver them a second time.
  Result<std::vector<IntercomMessage>> TakeIntercomReplies(const std::string& from, const std::string& to);
  // Groups: ids of explicit groups are "group-N"; "auto" cannot be created or deleted.
  Result<IntercomGroup> CreateIntercomGroup(const std::string& name, const std::vector<std::string>& members);
  Status AddIntercomMember(const std::string& group, const std::string& session);
  Status RemoveIntercomMember(const std::string& group, const std::string& session);
  Status DeleteIntercomGroup(const std::string& group);
  // Rings the doorbell of an idle Ticket's worker session (SPEC §10 wake): a pending input of
  // kind "intercom" and, when the Ticket has no pending or running Assignment, a new one — cause
  // "follow_up" for a person's message (it may take the slot kept for people), "intercom" for a
  // session's (it never does). The messages themselves stay in the inbox until the turn takes
  // them. Conflict when the Ticket has ended; a Ticket waiting for a person gets nothing (its
  // answer resumes it, and the inbox is read then).
  Status WakeForIntercom(TicketId ticket, bool from_person);
  // A person's panel message to a session whose Ticket ended (SPEC §4.5): in one transaction the
  // Mandate is revalidated as for a person's message on the Ticket's Thread; when it passes the
  // Ticket resumes in place (stage idle, "resume" Assignment, an "intercom" input) and `m` is
  // stored as PostIntercom would. When it fails nothing is stored and the Status says exactly
  // why: the Mandate was withdrawn or revoked, or which revalidation rule fails now.
  Result<IntercomMessage> ResumeForPersonsMessage(TicketId ticket, IntercomMessage m, const IntercomLimits& limits);

  // Write transactions begun since Open: each domain event should cost one (/metrics, tests).
  std::int64_t WriteTransactions() const;

 private:
  // --- Test hooks (EngineTestPeer, tests/engine_test_peer.h): events no daemon path raises by
  // itself, kept so tests can put a Ticket or a Source in a state directly. Each is one transaction.
  // The Ticket asks one structured question: stage waiting_for_person, and an attention message
  // on the question's Thread. The asked person's next message there goes to this Ticket.
  Status AskPerson(TicketId ticket, const HumanAction& action, const std::string& message_id);
  // Executor-reported progress: working, idle, ready or blocked (not ended, not waiting).
  Status SetStage(TicketId ticket, Stage stage, const std::string& cause);
  // The work is over (result delivered or given up); Mandate and Subscriptions stay.
  Status EndTicket(TicketId ticket, const std::string& reason);
  // pending → running, naming the executor; the Ticket becomes `working`. Conflict when the
  // Assignment is not pending or its Ticket has ended.
  Status StartAssignment(std::int64_t assignment, const std::string& executor);
  // The Ticket's worker session, created idle on first use.
  Result<Session> OpenSession(TicketId ticket, const std::string& title, const std::string& executor);
  // Workspaces: recorded once prepared; removed when the Ticket has ended for good.
  Status RecordWorkspace(const WorkspaceRecord& workspace);
  // Whether a Source may send; a disabled Source's pending messages wait. Sources are enabled
  // until disabled.
  Status SetSourceEnabled(const std::string& source, bool enabled);
  friend class EngineTestPeer;

  Engine(std::unique_ptr<store::Store> store, Clock* clock, EngineOptions options);

  // mailbox.cpp: PostIntercom's work inside a transaction the caller holds (mu_ held too).
  Result<IntercomMessage> PostIntercomLocked(IntercomMessage m, bool target_idle, const IntercomLimits& limits,
                                             TimeMs now) REQUIRES(mu_);

  // quarantine.cpp: quarantine bookkeeping inside a transaction the caller holds (mu_ held too). Charge counts a
  // failure (`crash`: an abnormal exit while in flight) and returns the record; an item already set
  // aside is returned unchanged. SetAside records the reason and does what setting aside means for
  // the kind. Cleared deletes the record after a success.
  Result<QuarantineItem> ChargeLocked(const std::string& kind, const std::string& item, const std::string& error,
                                      bool crash, TimeMs now) REQUIRES(mu_);
  bool DueForQuarantine(const QuarantineItem& q) const;
  // Whether charging `error` to `item` now would set it aside (reads only).
  Result<bool> WouldSetAsideLocked(const std::string& kind, const std::string& item, const std::string& error) REQUIRES(mu_);
  Status SetAsideLocked(QuarantineItem q, TimeMs now) REQUIRES(mu_);
  Status ClearedLocked(const std::string& kind, const std::string& item) REQUIRES(mu_);

  // turns.cpp. A turn ended: `error` empty clears the Ticket's turn failures, else counts one (and sets its
  // turns aside at options.quarantine_after). Inside the caller's transaction.
  Status CountTurnLocked(TicketId ticket, const std::string& error, TimeMs now) REQUIRES(mu_);
  // `tk`'s last turn ended without a report a person was owed, while background work kept it
  // working: its requester is told now, the Ticket is blocked (`why` in its history) and the
  // failure counted. False, writing nothing, when that turn reported, asked or was owed nothing.
  Result<bool> SayNoResultLocked(Ticket* tk, const std::string& why, TimeMs now) REQUIRES(mu_);
  // TakeInputs' work inside the caller's transaction; the input carrying Trigger `origin_seq` is
  // marked as the Ticket's request.
  Result<std::vector<TakenInput>> TakeInputsLocked(TicketId ticket, std::int64_t origin_seq) REQUIRES(mu_);
  // Starts pending Assignment `a` (running, its Ticket `tk` working) inside the caller's
  // transaction; "" when started, else why it may not start (nothing is written then).
  Result<std::string> StartAssignmentLocked(Assignment* a, Ticket* tk, const std::string& executor, TimeMs now) REQUIRES(mu_);

  // outbox.cpp: Send's and EnqueueAction's work inside a transaction the caller holds (mu_ held).
  Status SendLocked(const MessageSpec& message, TimeMs now) REQUIRES(mu_);
  Status EnqueueActionLocked(const std::string& kind, const nlohmann::json& payload, TimeMs now) REQUIRES(mu_);

  // evals.cpp, in the Eval's transaction: the answer invariant's replies (issue 34). TellUnable
  // tells each person in `batch` who may ask that their request could not be taken and why (the
  // daemon's `why`, one receipt per message, "unable:trigger:<seq>"). TellNotAllowed gives a
  // person the policy does not let ask its one short line, at most once a day per Source, when
  // the Source's policy says so (tell_others).
  Status TellUnableLocked(const std::string& thread, const std::vector<std::int64_t>& batch, const std::string& why,
                          TimeMs now) REQUIRES(mu_);
  Status TellNotAllowedLocked(const std::string& thread, const Trigger& t, TimeMs now) REQUIRES(mu_);

  // verbs.cpp: the one short answer to a person's verb ("stop", "status") on `thread`, in the
  // Eval's transaction (acknowledge once: what was stopped, or the Thread's Tickets and their state).
  // `note`: the answer itself, for a verdict verb (what was recorded).
  Status AnswerVerbLocked(EvalId eval, const std::string& thread, const std::string& verb,
                          const std::vector<TicketId>& stopped, TimeMs now, const std::string& note = "") REQUIRES(mu_);

  // pulls.cpp, inside the caller's transaction (mu_ held). A PR action's outcome: a PR opened for
  // a Ticket is recorded and subscribed to (its Thread and its head branch's CI Thread), and the
  // Ticket's pending result learns its link; one that could not be opened says so in the result.
  Status PullDeliveredLocked(const std::string& kind, const nlohmann::json& payload, const Delivery& d, TimeMs now) REQUIRES(mu_);
  // A Trigger on an open Ticket's own PR: what it does there. Returns true when it handled the
  // delivery (CI passing → context; failing → a fix turn, or a question once the attempts are
  // spent; merged/closed → the Ticket ends); false when the Trigger is an ordinary one.
  Result<bool> RouteOnPullLocked(Ticket* tk, const Trigger& t, const std::function<Status(const char* state)>& deliver,
                                 TimeMs now) REQUIRES(mu_);
  // An approval arrived on `pull` at `head_sha`: when the Ticket is ready and one of its rules
  // allows auto-merge (policy now), a merge_pull_request action is enqueued, one per head commit;
  // the GitHub channel's guard (AutoMergeRefusal) decides at delivery with fresh facts.
  // One attempt per head commit and approver: a stranger's approval, refused, must not use up the
  // attempt a writer's approval of the same head makes.
  // With several open pull requests (issue 37) it asks each one's guard first (check_only), one
  // round per approval; MergeRoundDeliveredLocked merges them in the Mandate's order once all pass.
  Status AutoMergeLocked(const Ticket& tk, const TicketPull& pull, const std::string& head_sha,
                         const std::string& approver, TimeMs now) REQUIRES(mu_);
  // The enabled rule that allows the ready Ticket's auto-merge now; nullptr when none does.
  Result<const Rule*> AutoMergeRuleLocked(const Ticket& tk) REQUIRES(mu_);
  // The idempotency key the Ticket's PR in `pull`'s repository was opened with (its marker).
  Result<std::string> PullKeyLocked(TicketId ticket, const TicketPull& pull) REQUIRES(mu_);
  // A merge round's action came back: a check records the guard's answer on the pull request
  // (any refusal holds all); when all passed, or a merge is done, the next one in the Mandate's
  // order merges; the last merge ends the Ticket. A merge refused half-way says what merged.
  Status MergeRoundDeliveredLocked(Ticket* tk, const nlohmann::json& payload, const Delivery& d, TimeMs now)
      REQUIRES(mu_);
  // Once no pull request of the Ticket is still being opened and two or more are open: each
  // one's body is made to name the others (link_pull_requests, one per PR and set of PRs).
  Status LinkPullsLocked(TicketId ticket, TimeMs now) REQUIRES(mu_);
  // An answer to `asked` arrived: what code does with it besides the worker (a "ci_fix" question
  // answered "Try again" gives the Ticket's PRs a fresh set of fix attempts).
  Status AnsweredLocked(TicketId ticket, const HumanAction& asked, const nlohmann::json& answer, TimeMs now) REQUIRES(mu_);
  // The circuit breaker (circuit_breaker.cpp): why a new Ticket under `m` goes past the policy's
  // limit for its sender or Source, or "" when it does not.
  Result<std::string> CircuitBreakerLocked(const Mandate& m, TimeMs now) REQUIRES(mu_);
  // Why `m`'s work is held because every rule in auto it matched has lost its precision
  // (judgement.demote_at, issue 38), or "" when it is not.
  Result<std::string> DemotedLocked(const Mandate& m, TimeMs now) REQUIRES(mu_);
  // Holds a new Ticket in Needs-you: waiting for a person in the panel, asked nothing in the
  // discussion; `acknowledgement` ("" for a silent rule) is posted if the person starts it. `by`
  // names what held it ("the circuit breaker", "judgement"). `ask_repository` (a chat's Ticket of
  // several repositories, issue 37): the person asked which repository once it is started,
  // instead of the acknowledgement.
  Status HoldLocked(Ticket* tk, const std::string& by, const std::string& why, const std::string& acknowledgement,
                    TimeMs now, const std::string& ask_repository = "") REQUIRES(mu_);
  // A panel answer to a hold: start the Ticket (its Assignment and acknowledgement, or the
  // question which repository) or drop it.
  Status ReleaseHoldLocked(Ticket* tk, const std::string& who, const nlohmann::json& answer, TimeMs now) REQUIRES(mu_);
  // Asks `actor`, in the Ticket's Thread, which of `repos` its work is about (a numbered option
  // each); the answer is recorded by AnsweredLocked and the work starts with it (issue 37).
  Status AskRepositoryLocked(Ticket* tk, const std::string& actor, const std::vector<std::string>& repos, TimeMs now)
      REQUIRES(mu_);

  // tickets.cpp: AskPerson's work inside a transaction the caller holds (mu_ held).
  Status AskPersonLocked(Ticket* ticket, const HumanAction& action, const std::string& message_id, TimeMs now) REQUIRES(mu_);

  // source_rounds.cpp: UpdateSource's writes inside the caller's transaction; true when a problem was just raised.
  Result<bool> UpdateSourceLocked(const SourceUpdate& u, TimeMs now) REQUIRES(mu_);
  void LogSourceUpdate(const SourceUpdate& u, bool raised) const;

  mutable Mutex mu_;
  std::unique_ptr<store::Store> store_ PT_GUARDED_BY(mu_);
  Clock* clock_;
  EngineOptions options_;
  Policy policy_ GUARDED_BY(mu_);
  std::int64_t policy_version_ GUARDED_BY(mu_) = 0;
};

}  // namespace superagent
