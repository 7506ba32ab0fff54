// Periodic: the daemon's one way to run background work on a thread — the scheduler's ticks, the
// Effects loop, the Eval runner, the Sources' polling rounds. Each of them used to carry its own
// stop flag, wake flag, condition variable and interval wait, and the copies drifted; here a step
// runs at once, then again after its interval, sooner on Wake(), never again after Stop(). A step
// that throws is caught by a LoopGuard (logged, counted as "unexpected:<name>") and the loop goes
// on, so one bad item never ends the daemon.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "superagent/clock.h"

namespace superagent {

class Engine;

// How a Periodic's thread waits. The real one waits on a condition variable against the steady
// clock; a test injects one it releases by hand, so the suite never sleeps for an interval.
class LoopWait {
 public:
  virtual ~LoopWait() = default;
  // Blocks until `ms` have passed or `done()` is true. `done` is evaluated under this wait's own
  // lock, at the start and after every Notify(); it must not block.
  virtual void WaitFor(TimeMs ms, const std::function<bool()>& done) = 0;
  // Makes every WaitFor in progress evaluate its `done` again. Thread-safe. A caller changes what
  // `done` reads first, then calls Notify(), so no change is lost.
  virtual void Notify() = 0;
};

// The real LoopWait: a condition variable and the steady clock.
class RealLoopWait : public LoopWait {
 public:
  void WaitFor(TimeMs ms, const std::function<bool()>& done) override;
  void Notify() override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

struct PeriodicOptions {
  std::string name;          // "the scheduler": the LoopGuard's log line and problem kind
  TimeMs interval_ms = 1'000;  // the wait after a step that names none (and after one that threw)
  Engine* engine = nullptr;  // where a throwing step is recorded (LoopGuard); null: only logged
  LoopWait* wait = nullptr;  // null: a RealLoopWait of its own; else it must outlive the Periodic
};

class Periodic {
 public:
  // One step of the loop. Returns the wait before the next one: nullopt for interval_ms, 0 to
  // run again at once (more work is due), or any other length (a peer asked to be polled less).
  using Step = std::function<std::optional<TimeMs>()>;

  // Nothing runs until Start(). `step` runs only on the Periodic's thread, one call at a time.
  Periodic(PeriodicOptions options, Step step);
  // Stop()s.
  ~Periodic();
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

  // Starts the thread; its first step runs at once (a restarted daemon catches up immediately).
  // Returns false, and does nothing, while a thread started earlier has not been stopped.
  bool Start();
  // Runs the next step now instead of after the rest of the wait. A Wake() during a step makes
  // the next step follow it at once, so work announced while a step runs is never missed.
  // Thread-safe; harmless before Start() and after Stop().
  void Wake();
  // Ends the loop: a wait in progress (and a Sleep()) returns at once, no further step starts,
  // and the thread is joined — a step in progress is waited for. Idempotent; must not be called
  // from the step itself. After it, Start() may run the loop again.
  void Stop();
  // True from Stop() until the next Start(): a long step checks it between items to end early.
  bool stopping() const { return stopping_.load(); }
  // For a step's own waits (a rate limit it sleeps through): sleeps up to `ms` on this loop's
  // wait, returning early — false — once Stop() was called; true when the time passed. A Wake()
  // does not shorten it (it is kept for the loop's next wait).
  bool Sleep(TimeMs ms);

 private:
  void Loop();

  PeriodicOptions options_;
  Step step_;
  std::unique_ptr<RealLoopWait> own_wait_;  // when options_.wait is null
  LoopWait* wait_;
  std::thread thread_;
  std::mutex start_mu_;  // Start() and Stop() against each other
  std::atomic<bool> stopping_{false};
  std::atomic<bool> woken_{false};
};

}  // namespace superagent
