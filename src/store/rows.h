// Row readers for the domain tables, shared by the Engine's store and the panel's read-only
// views so both read a row the same way. Each reader expects the columns of its *_COLUMNS list,
// in that order, starting at column 0 (ReadTrigger: at column `c`, for joins).
#pragma once

#include <map>

#include "store/sqlite.h"
#include "superagent/budget.h"
#include "superagent/domain.h"
#include "superagent/judgement.h"
#include "superagent/quarantine.h"

namespace superagent {
struct SourceHealth;  // superagent/source_state.h
}  // namespace superagent

namespace superagent::store {

#define TRIGGER_COLUMNS \
  "seq, id, source, scope, actor, human, addressed, text, at, channel, meta, via, received_at, outcome, filter_reason"
#define TICKET_COLUMNS "id, thread_key, stage, scope, waiting, end_reason, decision_id, created_at, updated_at"
#define DECISION_COLUMNS \
  "id, eval_id, thread_key, outcome, would_accept, strength, reason, assessment, ticket_id, policy_version, created_at"
#define INPUT_COLUMNS \
  "id, ticket_id, kind, trigger_seq, body, state, handback_kind, handback_reason, created_at, from_person"
#define RECEIPT_COLUMNS "id, ticket_id, thread_key, channel, kind, body, status, created_at"
// A Mandate with its end: select these FROM MANDATE_TABLES (columns after them are the caller's).
#define MANDATE_COLUMNS                                                                                  \
  "m.id, m.ticket_id, m.policy_version, m.scope, m.strength, m.matched_rules, m.source, m.sender, " \
  "m.admission, m.origin_trigger_seq, m.created_at, m.budget, e.kind, e.reason, m.repos"
#define MANDATE_TABLES "mandates m LEFT JOIN mandate_ends e ON e.mandate_id = m.id"

#define HEALTH_COLUMNS "source, path, last_success_at, last_error, last_error_at, consecutive_failures, skipped_items, note"
#define QUARANTINE_COLUMNS "kind, item, label, last_error, failures, crashes, set_aside_at, reason, updated_at"

// The current row of `s` as a stored Trigger with its intake record.
TriggerRecord ReadTrigger(Stmt& s, int c = 0);
// The current row as a Ticket; a damaged `waiting` column reads as an empty question.
Ticket ReadTicket(Stmt& s);
// The current row as a Decision; `assessment` is null when none was recorded.
Decision ReadDecision(Stmt& s);
// The current row as a Mandate (MANDATE_COLUMNS). A damaged `matched_rules` still reads: what is
// not a JSON array reads as no rules, and an element that is not a string is skipped.
Mandate ReadMandate(Stmt& s);
// The current row as a Ticket input (follow-up, handback, policy change …).
TicketInput ReadInput(Stmt& s);
// The current row as a Receipt (a message the agent has decided to say).
Receipt ReadReceipt(Stmt& s);
// The current row as a Source path's health.
SourceHealth ReadHealth(Stmt& s);
// The current row as a quarantine record (store_quarantine.cpp).
QuarantineItem ReadQuarantine(Stmt& s);

// A Ticket's spend and its budget events (store_budget.cpp), for the Engine and the views alike.
Result<BudgetSpend> ReadBudgetSpend(Db& db, TicketId ticket);
// The install id (migration 14), for the Store and the Views alike; NotFound in a database from
// before it (no table yet: the daemon's next start adds it).
Result<std::string> ReadInstallId(Db& db);
// The pull requests opened for `ticket`, oldest first (store_pulls.cpp; the Store and Views both read them).
Result<std::vector<TicketPull>> ReadTicketPulls(Db& db, TicketId ticket);
Result<std::vector<BudgetEvent>> ReadBudgetEvents(Db& db, TicketId ticket);

// Judgement's reads (judged.cpp, issue 38), for the Engine and the views alike.
// What each Ticket of `tickets` has for its outcome so far (LabelOutcome's facts); one not in the
// map has nothing yet.
Result<std::map<TicketId, OutcomeFacts>> ReadOutcomeFacts(Db& db, const TicketSet& tickets);
// would_accepts and accepted Decisions that made a Ticket, made at or after `since`, oldest
// first, each labelled by its verdict or else its outcome; `text` is left empty.
Result<std::vector<WouldAcceptRecord>> ReadJudged(Db& db, TimeMs since);
Result<std::vector<MissedRecord>> ReadMissed(Db& db, TimeMs since);
// The outcome of each Ticket of `tickets` made at or after `since`, by id.
Result<std::vector<TicketOutcome>> ReadTicketOutcomes(Db& db, TimeMs since, const TicketSet& tickets = {});

}  // namespace superagent::store
