// The Ticket state machine (SPEC §2 stages, §4.5 resume, §6 execution): the one place a Ticket's
// stage changes. Every handler that moves a Ticket calls ChangeStage inside its own transaction,
// so the stage, its history line and `updated_at` are written together and an illegal move is
// refused before anything is written.
#pragma once

#include <string>

#include "superagent/clock.h"
#include "superagent/domain.h"
#include "superagent/engine.h"
#include "superagent/status.h"

namespace superagent {

namespace store { class Store; }

// Why a stage changes; each names the SPEC event that may cause it.
enum class StageCause {
  kTurnStarted,    // an Assignment started (→ working)
  kReported,       // a worker's report or a turn's end (→ idle, ready, blocked)
  kAsked,          // the worker asked a person one structured question (→ waiting_for_person)
  kAnswered,       // that person answered, in the Thread or the panel (→ idle)
  kResumed,        // a person's message resumed an ended Ticket in place (→ idle)
  kSetAside,       // its turns failed the same way too often (→ blocked)
  kRetried,        // a person retried set-aside turns (→ idle)
  kBackgroundDone, // the background work that kept it working ended (→ idle or the reported stage)
  kEnded,          // the work is over: result delivered or given up (→ ended)
  kStopped,        // a person's Stop, or a stop Decision (→ ended)
};
const char* StageCauseName(StageCause c);

// Whether `cause` may move a Ticket from `from` to `to`. Staying in the same stage is never a
// change (callers skip it). The table is in ticket_stage.cpp; tests walk all of it.
bool StageChangeAllowed(Stage from, Stage to, StageCause cause);

// Moves `ticket` (as read in the caller's transaction) to `to`, writing the row and one history
// line "<detail>" at `now`; logs one line. With options.check_runs, the check runs that show the
// stage on the Ticket's open pull requests are enqueued too (EnqueueCheckRuns). FailedPrecondition,
// with nothing written, when the table does not allow it. A move to the stage it is in already
// writes nothing and is Ok.
Status ChangeStage(store::Store* store, const EngineOptions& options, Ticket* ticket, Stage to, StageCause cause,
                   const std::string& detail, TimeMs now);

// Issue 25: enqueues, in the caller's transaction, one check_run Effect per open pull request of
// `ticket`, showing its stage as of its newest history line (whose id orders the updates, so a
// late retry never shows an older stage). `cause` is StageCauseName's word or what else happened
// ("pull request opened"); `detail` the history line. Nothing unless options.check_runs.
Status EnqueueCheckRuns(store::Store* store, const EngineOptions& options, const Ticket& ticket,
                        const std::string& cause, const std::string& detail, TimeMs now);

}  // namespace superagent
