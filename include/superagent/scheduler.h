// Scheduler (SPEC §6): N worker slots + 1 reserved for a person's message to an existing Ticket.
// Queued Assignments start in order; each turn runs on its own thread: workspace, session,
// inputs, executor, report. A Ticket keeps its slot while its background jobs run after a turn,
// for at most 30 minutes; handing over to a person releases the slot at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "superagent/engine.h"
#include "superagent/jobs.h"
#include "superagent/periodic.h"
#include "superagent/worker.h"

namespace superagent {
class Views;
}  // namespace superagent

namespace superagent::exec {

struct SchedulerOptions {
  int slots = 3;                              // execution.slots; one more is reserved for people
  TimeMs background_limit_ms = 30 * 60'000;   // background work after a turn ends
  TimeMs shutdown_wait_ms = 10'000;           // per worker, on Stop()
  TimeMs tick_ms = 1'000;                     // Start()'s loop period
  std::string jobs_dir;                       // where shell output files go ("" = temp dir)
  // Called on the turn's thread once a turn has ended (its result, its PR are in the outbox):
  // the daemon wakes its Effects loop, so a result goes out now rather than at its next round.
  std::function<void()> on_turn_end;
};

class Scheduler {
 public:
  // Everything given must outlive the Scheduler.
  // `views` answers its reads (pending Assignments, a Ticket's stage, workspaces to remove).
  Scheduler(Engine* engine, Views* views, Workspaces* workspaces, Executor* executor, WorkerServices* services,
            ProcessRunner* runner, Clock* clock, Sleeper sleeper, SchedulerOptions options);
  ~Scheduler();

  // One pass: finished turns are reaped, follow-up inputs become Assignments, background limits
  // are enforced, stopped Tickets are cancelled, queued Assignments start while slots allow, and
  // workspaces of Tickets ended for good are removed. Returns how many turns started.
  Result<int> Tick();
  // Blocks until no turn is running — or, given a Ticket, until its turn is not (tests; then
  // Tick() reaps them).
  void WaitForTurns(std::optional<TicketId> ticket = std::nullopt);
  SlotsView Slots();
  // Turns started from now on are given `intercom` (WorkerTask::intercom); null detaches it.
  // It must outlive every turn (the daemon stops the scheduler first).
  void AttachIntercom(Intercom* intercom) { intercom_.store(intercom); }
  // The session's shells (for the panel and tests); null when it has none.
  Jobs* JobsFor(TicketId ticket);

  // Recovers interrupted work (RecoverInterruptedWork) and ticks every tick_ms on a thread.
  Status Start();
  // Cancels every turn, waits at most shutdown_wait_ms per worker, kills every shell. Running
  // Assignments stay running in the store: the next Start() resumes them.
  void Stop();
  // Ticks now instead of at the end of tick_ms (work was queued or a turn ended).
  void Wake();

 private:
  struct Run {
    TicketId ticket = 0;
    std::int64_t assignment = 0;
    bool reserved = false;      // holds the reserved slot
    bool in_turn = false;       // a turn thread is running
    bool turn_done = false;     // the thread finished; join it
    bool handed_over = false;   // waiting for a person: slot released
    std::optional<Stage> deferred;  // the reported stage, once background work ends
    TimeMs turn_ended_at = 0;
    std::atomic<bool> cancel{false};
    std::thread thread;
  };
  void RunTurn(Run* run, Assignment assignment);
  // Taken inputs in the worker's shape: {"kind","text","from","message_id","request","earlier",…}.
  static std::vector<nlohmann::json> InputsJson(const std::vector<TakenInput>& inputs);
  std::shared_ptr<Jobs> JobsOf(TicketId ticket);
  // The repository Ticket `ticket` works in: its workspace's, else its home repository.
  std::string RepositoryOf(TicketId ticket);
  // Its repository first, then the other repositories its Mandate lists (issue 37).
  std::vector<std::string> RepositoriesOf(TicketId ticket);
  void ReapLocked(std::vector<std::thread>* to_join);
  static bool PersonCause(const std::string& cause);
  // Engine::EnforceBudget for the Assignment: true when the turn must not start or go on.
  bool BudgetStops(TicketId ticket, std::int64_t assignment);

  Engine* engine_;
  Views* views_;
  Workspaces* workspaces_;
  Executor* executor_;
  WorkerServices* services_;
  ProcessRunner* runner_;
  Clock* clock_;
  Sleeper sleeper_;
  SchedulerOptions options_;

  std::mutex mu_;
  std::condition_variable cv_;  // a turn finished (turn_done)
  std::map<TicketId, std::unique_ptr<Run>> runs_;
  std::map<TicketId, std::shared_ptr<Jobs>> jobs_;
  std::atomic<Intercom*> intercom_{nullptr};
  bool stopping_ = false;  // guarded by mu_: no turn starts once Stop() began
  Periodic loop_;          // Tick() every tick_ms; declared last, so it stops first
};

}  // namespace superagent::exec
