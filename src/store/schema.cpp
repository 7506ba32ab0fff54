// The schema as an ordered list of migrations. A migration is never edited once released: add a
// new one. Every table stores times as milliseconds since the epoch (UTC).
#include "store/schema.h"

namespace superagent::store {

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, "domain model of SPEC §2", R"SQL(
CREATE TABLE sources (
  name                 TEXT PRIMARY KEY,
  enabled              INTEGER NOT NULL DEFAULT 1
);
-- Health is per read path (SPEC §3.5): realtime, backfill, notifications, ...
CREATE TABLE source_health (
  source               TEXT NOT NULL,
  path                 TEXT NOT NULL,
  last_success_at      INTEGER,
  last_error           TEXT,
  last_error_at        INTEGER,
  consecutive_failures INTEGER NOT NULL DEFAULT 0,
  skipped_items        INTEGER NOT NULL DEFAULT 0,   -- malformed items skipped and counted (SPEC §3.2)
  PRIMARY KEY (source, path)
);
CREATE TABLE source_cursors (
  source     TEXT NOT NULL,
  name       TEXT NOT NULL,                 -- "notifications", "issue:57", "chat:oc_1", ...
  value      TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (source, name)
);

CREATE TABLE policy_versions (
  version     INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  body        TEXT NOT NULL,                -- canonical JSON of the Policy
  origin      TEXT NOT NULL,                -- file path or "embedded default"
  created_at  INTEGER NOT NULL
);

CREATE TABLE threads (
  key              TEXT PRIMARY KEY,        -- "github:issue:42", "feishu:chat:oc_1:thread:omt_9"
  source           TEXT NOT NULL,
  channel          TEXT NOT NULL,           -- where replies for this Thread go (latest known)
  created_at       INTEGER NOT NULL,
  last_activity_at INTEGER NOT NULL
);

-- Triggers are immutable: the unit of audit and of idempotency.
CREATE TABLE triggers (
  seq           INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  source        TEXT NOT NULL,
  scope         TEXT NOT NULL,
  actor         TEXT,
  human         INTEGER NOT NULL,
  addressed     INTEGER NOT NULL,
  text          TEXT NOT NULL,
  at            INTEGER NOT NULL,
  channel       TEXT NOT NULL,
  meta          TEXT NOT NULL,
  url           TEXT,
  via           TEXT NOT NULL,
  received_at   INTEGER NOT NULL,
  outcome       TEXT NOT NULL CHECK (outcome IN ('stored', 'filtered')),
  filter_reason TEXT,
  CHECK ((outcome = 'filtered') = (filter_reason IS NOT NULL))
);
CREATE INDEX triggers_url ON triggers (url) WHERE url IS NOT NULL;
CREATE TRIGGER triggers_immutable BEFORE UPDATE ON triggers
  BEGIN SELECT RAISE(ABORT, 'triggers are immutable'); END;
CREATE TRIGGER triggers_kept BEFORE DELETE ON triggers
  BEGIN SELECT RAISE(ABORT, 'triggers are kept forever'); END;

CREATE TABLE trigger_threads (
  trigger_seq INTEGER NOT NULL REFERENCES triggers (seq),
  thread_key  TEXT NOT NULL REFERENCES threads (key),
  position    INTEGER NOT NULL,             -- 0 = primary Thread
  PRIMARY KEY (trigger_seq, thread_key)
);
CREATE INDEX trigger_threads_by_thread ON trigger_threads (thread_key, trigger_seq);

CREATE TABLE evals (
  id             INTEGER PRIMARY KEY,
  thread_key     TEXT NOT NULL REFERENCES threads (key),
  policy_version INTEGER NOT NULL REFERENCES policy_versions (version),
  status         TEXT NOT NULL CHECK (status IN ('running', 'done', 'discarded', 'timed_out')),
  started_at     INTEGER NOT NULL,
  deadline_at    INTEGER NOT NULL,
  ended_at       INTEGER
);
-- At most one Eval at a time per Thread (SPEC §2), enforced by the schema itself.
CREATE UNIQUE INDEX evals_one_running_per_thread ON evals (thread_key) WHERE status = 'running';

-- Triggers waiting for an Eval. eval_id is set while a running Eval holds them as its batch.
CREATE TABLE eval_queue (
  trigger_seq INTEGER PRIMARY KEY REFERENCES triggers (seq),
  thread_key  TEXT NOT NULL REFERENCES threads (key),
  queued_at   INTEGER NOT NULL,
  not_before  INTEGER NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  eval_id     INTEGER REFERENCES evals (id),
  handback    TEXT                          -- JSON array of executors' reasons, when handed back
);
CREATE INDEX eval_queue_by_thread ON eval_queue (thread_key, trigger_seq);

-- The Gate's verdict on each Trigger of an Eval's batch.
CREATE TABLE eval_triggers (
  eval_id     INTEGER NOT NULL REFERENCES evals (id),
  trigger_seq INTEGER NOT NULL REFERENCES triggers (seq),
  strength    TEXT NOT NULL,
  candidate   INTEGER NOT NULL,
  gate_reason TEXT NOT NULL,
  PRIMARY KEY (eval_id, trigger_seq)
);
CREATE INDEX eval_triggers_by_trigger ON eval_triggers (trigger_seq);

CREATE TABLE decisions (
  id             INTEGER PRIMARY KEY,
  eval_id        INTEGER NOT NULL UNIQUE REFERENCES evals (id),
  thread_key     TEXT NOT NULL,
  outcome        TEXT NOT NULL CHECK (outcome IN ('accept', 'stop', 'ignore', 'unavailable')),
  would_accept   INTEGER NOT NULL DEFAULT 0,
  strength       TEXT NOT NULL,
  reason         TEXT NOT NULL,
  assessment     TEXT,
  ticket_id      INTEGER,
  policy_version INTEGER NOT NULL,
  created_at     INTEGER NOT NULL,
  CHECK (would_accept = 0 OR outcome = 'ignore')
);
CREATE TRIGGER decisions_immutable BEFORE UPDATE ON decisions
  BEGIN SELECT RAISE(ABORT, 'decisions are recorded forever'); END;
CREATE TRIGGER decisions_kept BEFORE DELETE ON decisions
  BEGIN SELECT RAISE(ABORT, 'decisions are recorded forever'); END;

CREATE TABLE tickets (
  id                 INTEGER PRIMARY KEY,
  origin_trigger_seq INTEGER NOT NULL UNIQUE REFERENCES triggers (seq),  -- accepted twice, one Ticket
  decision_id        INTEGER NOT NULL REFERENCES decisions (id),
  thread_key         TEXT NOT NULL REFERENCES threads (key),
  scope              TEXT NOT NULL,
  stage              TEXT NOT NULL CHECK (stage IN ('working', 'idle', 'waiting_for_person', 'ready', 'blocked', 'ended')),
  waiting            TEXT,                  -- JSON human_action while waiting_for_person
  end_reason         TEXT,
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL,
  CHECK ((stage = 'waiting_for_person') = (waiting IS NOT NULL))
);
CREATE INDEX tickets_by_stage ON tickets (stage);

-- Every stage change, with why: the Ticket's own history.
CREATE TABLE ticket_events (
  id         INTEGER PRIMARY KEY,
  ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
  at         INTEGER NOT NULL,
  from_stage TEXT,
  to_stage   TEXT NOT NULL,
  cause      TEXT NOT NULL
);
CREATE INDEX ticket_events_by_ticket ON ticket_events (ticket_id, id);

CREATE TABLE mandates (
  id                 INTEGER PRIMARY KEY,
  ticket_id          INTEGER NOT NULL UNIQUE REFERENCES tickets (id),
  policy_version     INTEGER NOT NULL REFERENCES policy_versions (version),
  scope              TEXT NOT NULL,
  strength           TEXT NOT NULL CHECK (strength IN ('inferred', 'explicit')),
  matched_rules      TEXT NOT NULL,         -- JSON array of rule names
  source             TEXT NOT NULL,
  sender             TEXT,
  admission          TEXT NOT NULL,
  origin_trigger_seq INTEGER NOT NULL REFERENCES triggers (seq),
  created_at         INTEGER NOT NULL
);
CREATE TRIGGER mandates_immutable BEFORE UPDATE ON mandates
  BEGIN SELECT RAISE(ABORT, 'mandates are immutable'); END;
-- Only a panel Stop (withdrawn) or a failed revalidation (revoked) ends a Mandate (SPEC §4.5).
CREATE TABLE mandate_ends (
  mandate_id INTEGER PRIMARY KEY REFERENCES mandates (id),
  kind       TEXT NOT NULL CHECK (kind IN ('withdrawn', 'revoked')),
  reason     TEXT NOT NULL,
  by_whom    TEXT,
  at         INTEGER NOT NULL
);

CREATE TABLE subscriptions (
  thread_key TEXT NOT NULL REFERENCES threads (key),
  ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (thread_key, ticket_id)
);
CREATE INDEX subscriptions_by_ticket ON subscriptions (ticket_id);

CREATE TABLE ticket_inputs (
  id              INTEGER PRIMARY KEY,
  ticket_id       INTEGER NOT NULL REFERENCES tickets (id),
  kind            TEXT NOT NULL CHECK (kind IN ('trigger', 'answer', 'resume', 'policy_changed', 'restart')),
  trigger_seq     INTEGER REFERENCES triggers (seq),
  body            TEXT NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('pending', 'taken', 'handed_back')),
  handback_kind   TEXT,
  handback_reason TEXT,
  created_at      INTEGER NOT NULL
);
-- A message reaches a Ticket at most once, so it can be handed back at most once.
CREATE UNIQUE INDEX ticket_inputs_once ON ticket_inputs (ticket_id, trigger_seq) WHERE trigger_seq IS NOT NULL;
CREATE INDEX ticket_inputs_by_trigger ON ticket_inputs (trigger_seq);

CREATE TABLE assignments (
  id         INTEGER PRIMARY KEY,
  ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
  executor   TEXT NOT NULL,
  state      TEXT NOT NULL CHECK (state IN ('pending', 'running', 'ended')),
  cause      TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  ended_at   INTEGER
);
CREATE INDEX assignments_by_ticket ON assignments (ticket_id, id);

-- Outbox (SPEC §8): a receipt per outgoing message, an effect per pending external action.
CREATE TABLE receipts (
  id          TEXT PRIMARY KEY,
  ticket_id   INTEGER REFERENCES tickets (id),
  thread_key  TEXT NOT NULL,
  channel     TEXT NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('acknowledgement', 'answer', 'result', 'attention')),
  body        TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'abandoned')),
  external_id TEXT,
  created_at  INTEGER NOT NULL,
  sent_at     INTEGER
);
CREATE INDEX receipts_by_ticket ON receipts (ticket_id, created_at);
CREATE INDEX receipts_by_thread ON receipts (thread_key, created_at);
CREATE TABLE effects (
  id         INTEGER PRIMARY KEY,
  receipt_id TEXT REFERENCES receipts (id),
  kind       TEXT NOT NULL,
  payload    TEXT NOT NULL,
  status     TEXT NOT NULL CHECK (status IN ('pending', 'done', 'failed', 'abandoned')),
  attempts   INTEGER NOT NULL DEFAULT 0,
  next_at    INTEGER NOT NULL,
  last_error TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX effects_due ON effects (status, next_at);

-- Commands from people (panel Stop, policy reload, answers): who did what, when.
CREATE TABLE commands (
  id      INTEGER PRIMARY KEY,
  at      INTEGER NOT NULL,
  who     TEXT NOT NULL,
  command TEXT NOT NULL,
  target  TEXT,
  detail  TEXT
);
)SQL"},
      {2, "outbox delivery state, system problems, deleted discussions", R"SQL(
-- A discussion the platform says is gone (GitHub 410): nothing is delivered there any more.
ALTER TABLE threads ADD COLUMN deleted_at INTEGER;
ALTER TABLE effects ADD COLUMN kind_class TEXT NOT NULL DEFAULT 'message';  -- 'message' | 'action'
ALTER TABLE effects ADD COLUMN started_at INTEGER;   -- set while an attempt is in flight
ALTER TABLE effects ADD COLUMN outcome_unknown INTEGER NOT NULL DEFAULT 0;
ALTER TABLE effects ADD COLUMN external_id TEXT;
ALTER TABLE effects ADD COLUMN ended_reason TEXT;
-- "What needs me now": one row per kind of problem, cleared when that kind succeeds again.
CREATE TABLE system_problems (
  kind        TEXT PRIMARY KEY,        -- e.g. "effect:post_message:github", "source:github:notifications"
  message     TEXT NOT NULL,
  failures    INTEGER NOT NULL,
  first_at    INTEGER NOT NULL,
  last_at     INTEGER NOT NULL,
  cleared_at  INTEGER                  -- NULL while the problem stands
);
)SQL"},
      {6, "intercom: durable messages, groups, wake budgets", R"SQL(
-- Messages between sessions (SPEC §10). Durable: a queued message survives a restart.
CREATE TABLE intercom_messages (
  id           TEXT PRIMARY KEY,
  from_session TEXT NOT NULL DEFAULT '',  -- '' when a person sent it
  from_person  TEXT NOT NULL DEFAULT '',
  to_session   TEXT NOT NULL,
  text         TEXT NOT NULL,
  delivery     TEXT NOT NULL CHECK (delivery IN ('wake', 'steer')),
  applied      TEXT NOT NULL CHECK (applied IN ('wake', 'steer', 'queue')),
  state        TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'answered')),
  reply_to     TEXT NOT NULL DEFAULT '',
  group_id     TEXT NOT NULL DEFAULT '',
  created_at   INTEGER NOT NULL,
  delivered_at INTEGER
);
CREATE INDEX intercom_inbox ON intercom_messages (to_session, state, created_at);
CREATE INDEX intercom_sent ON intercom_messages (from_session, to_session, created_at);
CREATE INDEX intercom_replies ON intercom_messages (reply_to) WHERE reply_to <> '';
-- Wakes spent per target since a person last wrote to it.
CREATE TABLE intercom_wake_budget (
  session_id TEXT PRIMARY KEY,
  spent      INTEGER NOT NULL
);
CREATE TABLE intercom_groups (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  automatic  INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);
CREATE TABLE intercom_group_members (
  group_id   TEXT NOT NULL REFERENCES intercom_groups (id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  joined_at  INTEGER NOT NULL,
  PRIMARY KEY (group_id, session_id)
);
INSERT INTO intercom_groups (id, name, automatic, created_at) VALUES ('auto', 'sessions that have talked', 1, 0);
)SQL"},
      {7, "execution: worker sessions, transcripts, token usage, workspaces", R"SQL(
-- A session is one agent conversation; a Ticket's worker session lives as long as the Ticket.
CREATE TABLE sessions (
  id         INTEGER PRIMARY KEY,
  ticket_id  INTEGER REFERENCES tickets (id),   -- NULL for sessions that serve no Ticket
  title      TEXT NOT NULL,
  executor   TEXT NOT NULL,
  status     TEXT NOT NULL CHECK (status IN ('idle', 'running', 'ended')),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX sessions_one_per_ticket ON sessions (ticket_id) WHERE ticket_id IS NOT NULL;
-- The transcript: the panel shows it and a restarted daemon resumes from it.
CREATE TABLE session_events (
  id            INTEGER PRIMARY KEY,
  session_id    INTEGER NOT NULL REFERENCES sessions (id),
  assignment_id INTEGER,
  kind          TEXT NOT NULL,
  body          TEXT NOT NULL,
  at            INTEGER NOT NULL
);
CREATE INDEX session_events_by_session ON session_events (session_id, id);
CREATE TABLE token_usage (
  id                INTEGER PRIMARY KEY,
  ticket_id         INTEGER NOT NULL REFERENCES tickets (id),
  session_id        INTEGER REFERENCES sessions (id),
  model             TEXT NOT NULL,
  purpose           TEXT NOT NULL,
  calls             INTEGER NOT NULL,
  prompt_tokens     INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  total_tokens      INTEGER NOT NULL,
  cache_hit_tokens  INTEGER,
  at                INTEGER NOT NULL
);
CREATE INDEX token_usage_by_ticket ON token_usage (ticket_id);
-- One Ticket = one directory = one branch.
CREATE TABLE workspaces (
  ticket_id  INTEGER PRIMARY KEY REFERENCES tickets (id),
  dir        TEXT NOT NULL,
  branch     TEXT NOT NULL,
  base       TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  removed_at INTEGER
);
CREATE INDEX assignments_by_state ON assignments (state, id);
)SQL"},
      {8, "intercom: a ticket input of kind 'intercom' wakes a Ticket's worker session", R"SQL(
-- SQLite cannot alter a CHECK constraint: rebuild ticket_inputs with the new kind, keeping every
-- row (ids included, so nothing that points at an input breaks) and both indexes.
CREATE TABLE ticket_inputs_v8 (
  id              INTEGER PRIMARY KEY,
  ticket_id       INTEGER NOT NULL REFERENCES tickets (id),
  kind            TEXT NOT NULL CHECK (kind IN ('trigger', 'answer', 'resume', 'policy_changed', 'restart', 'intercom')),
  trigger_seq     INTEGER REFERENCES triggers (seq),
  body            TEXT NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('pending', 'taken', 'handed_back')),
  handback_kind   TEXT,
  handback_reason TEXT,
  created_at      INTEGER NOT NULL
);
INSERT INTO ticket_inputs_v8 (id, ticket_id, kind, trigger_seq, body, state, handback_kind, handback_reason, created_at)
  SELECT id, ticket_id, kind, trigger_seq, body, state, handback_kind, handback_reason, created_at FROM ticket_inputs;
DROP TABLE ticket_inputs;
ALTER TABLE ticket_inputs_v8 RENAME TO ticket_inputs;
CREATE UNIQUE INDEX ticket_inputs_once ON ticket_inputs (ticket_id, trigger_seq) WHERE trigger_seq IS NOT NULL;
CREATE INDEX ticket_inputs_by_trigger ON ticket_inputs (trigger_seq);
)SQL"},
      {9, "indexes for the scheduler's every-second questions", R"SQL(
-- Which Tickets have input waiting (Engine::AssignFollowUps), and which workspaces still exist
-- (Engine::WorkspacesToRemove): partial indexes, so the answer costs what is pending, not what
-- was ever stored.
CREATE INDEX IF NOT EXISTS ticket_inputs_pending ON ticket_inputs (ticket_id) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS workspaces_live ON workspaces (ticket_id) WHERE removed_at IS NULL;
)SQL"},
      {10, "quarantine: poison items set aside, and whether the daemon stopped cleanly", R"SQL(
-- One row per item that failed (kind + item name the loop's key: an Effect id, a Thread key, a
-- Ticket id). A success deletes the row; set_aside_at set means the loop no longer picks it.
CREATE TABLE IF NOT EXISTS quarantine (
  kind         TEXT NOT NULL CHECK (kind IN ('effect', 'eval', 'turn')),
  item         TEXT NOT NULL,
  label        TEXT NOT NULL,
  last_error   TEXT NOT NULL DEFAULT '',
  failures     INTEGER NOT NULL DEFAULT 0,   -- the same failure in a row
  crashes      INTEGER NOT NULL DEFAULT 0,   -- abnormal exits in a row while it was in flight
  set_aside_at INTEGER,
  reason       TEXT NOT NULL DEFAULT '',
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (kind, item)
);
-- The crash-loop guard's marker: running = 1 from start until a clean stop, so a start that finds
-- it still 1 knows the previous run died.
CREATE TABLE IF NOT EXISTS daemon_run (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  running    INTEGER NOT NULL,
  pid        INTEGER NOT NULL,
  started_at INTEGER NOT NULL,
  stopped_at INTEGER
);
)SQL"},
      {11, "ticket inputs say whether a person sent them, and an older message is kept as context", R"SQL(
-- Issue 20: only a person's input may take the slot kept for people (SPEC §6), and a message
-- older than a Ticket's request reaches it as context for its next turn, never as a new turn.
-- Rebuilt for the state CHECK; existing rows keep their ids. from_person for old rows: answers
-- and resumes came from people; a delivered message did when its Trigger was a person's, not CI.
CREATE TABLE ticket_inputs_v11 (
  id              INTEGER PRIMARY KEY,
  ticket_id       INTEGER NOT NULL REFERENCES tickets (id),
  kind            TEXT NOT NULL CHECK (kind IN ('trigger', 'answer', 'resume', 'policy_changed', 'restart', 'intercom')),
  trigger_seq     INTEGER REFERENCES triggers (seq),
  body            TEXT NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('pending', 'context', 'taken', 'handed_back')),
  handback_kind   TEXT,
  handback_reason TEXT,
  created_at      INTEGER NOT NULL,
  from_person     INTEGER NOT NULL DEFAULT 0
);
INSERT INTO ticket_inputs_v11 (id, ticket_id, kind, trigger_seq, body, state, handback_kind, handback_reason,
                               created_at, from_person)
  SELECT i.id, i.ticket_id, i.kind, i.trigger_seq, i.body, i.state, i.handback_kind, i.handback_reason, i.created_at,
         CASE WHEN i.kind IN ('answer', 'resume') THEN 1
              WHEN i.kind = 'trigger' THEN COALESCE((SELECT t.human AND t.scope <> 'ci' FROM triggers t
                                                     WHERE t.seq = i.trigger_seq), 0)
              ELSE 0 END
  FROM ticket_inputs i;
DROP TABLE ticket_inputs;
ALTER TABLE ticket_inputs_v11 RENAME TO ticket_inputs;
CREATE UNIQUE INDEX ticket_inputs_once ON ticket_inputs (ticket_id, trigger_seq) WHERE trigger_seq IS NOT NULL;
CREATE INDEX ticket_inputs_by_trigger ON ticket_inputs (trigger_seq);
CREATE INDEX ticket_inputs_pending ON ticket_inputs (ticket_id) WHERE state = 'pending';
)SQL"},
      {12, "budgets: the Mandate's budget, reported cost, and budget questions and extensions", R"SQL(
-- Issue 22: what one Ticket may spend. The budget is part of the immutable grant (ADD COLUMN
-- fires no UPDATE trigger); Mandates from before budgets have NULL and are not limited.
ALTER TABLE mandates ADD COLUMN budget TEXT;           -- JSON {"tokens","cost_usd","wall_clock_minutes","turns"}
-- A cost the model (or the coding CLI) reported for the call; NULL where none was reported.
ALTER TABLE token_usage ADD COLUMN cost_usd REAL;
-- Beside the Mandate, append-only: each budget question asked (which limit, what was spent, how
-- much more was offered, the inputs already there), each extension a person granted and each
-- stop a person chose. The effective limit is the Mandate's plus the extensions.
CREATE TABLE budget_events (
  id           INTEGER PRIMARY KEY,
  ticket_id    INTEGER NOT NULL REFERENCES tickets (id),
  kind         TEXT NOT NULL CHECK (kind IN ('asked', 'extended', 'stopped')),
  dimension    TEXT NOT NULL CHECK (dimension IN ('tokens', 'cost_usd', 'wall_clock_minutes', 'turns')),
  amount       REAL NOT NULL,   -- asked: the amount offered; extended: added to the limit
  spent        REAL NOT NULL,   -- what was spent in that dimension when it happened
  budget       REAL NOT NULL,   -- the limit in force then
  question     TEXT,            -- asked: the HumanAction as JSON
  after_input  INTEGER,         -- asked: the last ticket input then; later answers answer it
  by_whom      TEXT,
  at           INTEGER NOT NULL
);
CREATE INDEX budget_events_by_ticket ON budget_events (ticket_id, id);
CREATE TRIGGER budget_events_append_only BEFORE UPDATE ON budget_events
  BEGIN SELECT RAISE(ABORT, 'budget events are append-only'); END;
)SQL"},
      {13, "pull requests opened for Tickets, followed until merged or closed", R"SQL(
-- Issue 22 (SPEC §6): "a linked open PR keeps being tracked". One row per PR the daemon opened for
-- a Ticket; its CI and reviews reach the Ticket through Subscriptions, and its end ends the Ticket.
CREATE TABLE ticket_pulls (
  ticket_id       INTEGER NOT NULL REFERENCES tickets (id),
  number          INTEGER NOT NULL,
  head_branch     TEXT NOT NULL,
  url             TEXT NOT NULL DEFAULT '',
  state           TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'merged', 'closed')),
  ci_fix_attempts INTEGER NOT NULL DEFAULT 0,  -- pushes whose failing checks went to the worker
  ci_fix_sha      TEXT NOT NULL DEFAULT '',    -- the head commit of the last of them
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  PRIMARY KEY (ticket_id, number)
);
CREATE INDEX ticket_pulls_open ON ticket_pulls (state) WHERE state = 'open';
)SQL"},
      {14, "an install id for idempotency keys; a note per Source read path", R"SQL(
-- Issue 23: Feishu sends one message per request uuid and the GitHub channel looks for its hidden
-- receipt marker before posting again. Keys made from receipt ids alone ("ack:ticket:1") repeat
-- across installs of the same app and after a data_dir reset, and would find the other install's
-- message. An id made once with the database goes into every key.
CREATE TABLE install (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  install_id TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
INSERT INTO install (id, install_id, created_at)
  VALUES (1, lower(hex(randomblob(16))), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
-- What a path's last round says beyond success or failure (the Feishu topic schedule: followed,
-- read, deferred).
ALTER TABLE source_health ADD COLUMN note TEXT NOT NULL DEFAULT '';
)SQL"},
      {15, "a person's verdict on a would_accept Decision", R"SQL(
-- Issue 38: "was this a request?" answered about what observe mode would have done. One verdict
-- per Decision, final: the counts a rule's precision is computed from never move under it.
CREATE TABLE verdicts (
  decision_id INTEGER PRIMARY KEY REFERENCES decisions (id),
  verdict     TEXT NOT NULL CHECK (verdict IN ('yes', 'no', 'unknown')),
  by_whom     TEXT NOT NULL,
  via         TEXT NOT NULL CHECK (via IN ('panel', 'thread')),
  created_at  INTEGER NOT NULL
);
CREATE TRIGGER verdicts_final BEFORE UPDATE ON verdicts
BEGIN
  SELECT RAISE(ABORT, 'a verdict is final');
END;
)SQL"},
      {16, "indexes for judgement: Decisions by time, Tickets by Decision", R"SQL(
-- Issue 38: precision over a window reads the Decisions of the last days and the Tickets they
-- made, at each panel read and at each accept of a rule in auto (a demoted rule holds its work).
CREATE INDEX decisions_by_time ON decisions (created_at);
CREATE INDEX decisions_by_thread ON decisions (thread_key, id);  -- "missed": the Decision before a request
CREATE INDEX tickets_by_decision ON tickets (decision_id);
)SQL"},
      {17, "a Ticket's pull requests and workspace name their repository", R"SQL(
-- Issue 37: one daemon serves several repositories, and one Ticket may open a PR in each, with
-- the same number in two of them. Rows from before carry '' until Engine::QualifyGitHubThreads
-- names the repository that was served then.
CREATE TABLE ticket_pulls_v17 (
  ticket_id       INTEGER NOT NULL REFERENCES tickets (id),
  repo            TEXT NOT NULL DEFAULT '',    -- "owner/name", lower case (github_threads.h)
  number          INTEGER NOT NULL,
  head_branch     TEXT NOT NULL,
  url             TEXT NOT NULL DEFAULT '',
  state           TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'merged', 'closed')),
  ci_fix_attempts INTEGER NOT NULL DEFAULT 0,
  ci_fix_sha      TEXT NOT NULL DEFAULT '',
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  PRIMARY KEY (ticket_id, repo, number)
);
INSERT INTO ticket_pulls_v17 (ticket_id, number, head_branch, url, state, ci_fix_attempts, ci_fix_sha, created_at, updated_at)
  SELECT ticket_id, number, head_branch, url, state, ci_fix_attempts, ci_fix_sha, created_at, updated_at FROM ticket_pulls;
DROP TABLE ticket_pulls;
ALTER TABLE ticket_pulls_v17 RENAME TO ticket_pulls;
CREATE INDEX ticket_pulls_open ON ticket_pulls (state) WHERE state = 'open';
-- The repository a Ticket's workspace was made from; '' is the home repository's (exec/workspace).
ALTER TABLE workspaces ADD COLUMN repo TEXT NOT NULL DEFAULT '';
)SQL"},
      {18, "a Ticket across repositories: the Mandate's repositories, a workspace for each", R"SQL(
-- Issue 37: the repositories a Mandate may change, in the order its pull requests merge (a JSON
-- array of "owner/name"). Part of the immutable grant (ADD COLUMN fires no UPDATE trigger);
-- Mandates from before list none: their Ticket works in its own repository only.
ALTER TABLE mandates ADD COLUMN repos TEXT NOT NULL DEFAULT '[]';
-- The Ticket's other repositories' workspaces, each inside its workspace's directory (the one row
-- of `workspaces`), on the same branch name.
CREATE TABLE workspace_repos (
  ticket_id  INTEGER NOT NULL REFERENCES tickets (id),
  repo       TEXT NOT NULL,
  dir        TEXT NOT NULL,
  branch     TEXT NOT NULL,
  base       TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  removed_at INTEGER,
  PRIMARY KEY (ticket_id, repo)
);
-- A Ticket's pull requests merge all or none (Engine::AutoMergeLocked): each one's guard is asked
-- first, in one round; "<round> <head sha>" once it passed, "<round> refused" once it did not.
ALTER TABLE ticket_pulls ADD COLUMN merge_check TEXT NOT NULL DEFAULT '';
-- A chat's Ticket whose Mandate lists its chat's several repositories and whose request named
-- none: the one it works in, as its asker answered (feishu.chat_repos).
CREATE TABLE ticket_repository (
  ticket_id  INTEGER PRIMARY KEY REFERENCES tickets (id),
  repo       TEXT NOT NULL,
  chosen_by  TEXT NOT NULL,
  at         INTEGER NOT NULL
);
)SQL"},
  };
  return kMigrations;
}

}  // namespace superagent::store
