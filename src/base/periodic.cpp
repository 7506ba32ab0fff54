#include "superagent/periodic.h"

#include <chrono>

#include "superagent/catch_all.h"

namespace superagent {

void RealLoopWait::WaitFor(TimeMs ms, const std::function<bool()>& done) {
  std::unique_lock<std::mutex> lock(mu_);
  // The predicate form waits against one deadline, so a Notify() that does not make `done` true
  // (a Wake() during a step's Sleep) does not restart the interval.
  cv_.wait_for(lock, std::chrono::milliseconds(ms), done);
}

void RealLoopWait::Notify() {
  // Taking the lock orders the caller's change before a waiter's next look at `done`: a waiter
  // either saw the change already or is blocked and gets this notification.
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
}

Periodic::Periodic(PeriodicOptions options, Step step)
    : options_(std::move(options)), step_(std::move(step)) {
  if (options_.wait == nullptr) own_wait_ = std::make_unique<RealLoopWait>();
  wait_ = options_.wait != nullptr ? options_.wait : own_wait_.get();
}

Periodic::~Periodic() { Stop(); }

bool Periodic::Start() {
  std::lock_guard<std::mutex> lock(start_mu_);
  if (thread_.joinable()) return false;
  stopping_ = false;
  woken_ = false;
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void Periodic::Wake() {
  woken_ = true;
  wait_->Notify();
}

void Periodic::Stop() {
  std::lock_guard<std::mutex> lock(start_mu_);
  stopping_ = true;
  wait_->Notify();
  if (thread_.joinable()) thread_.join();
}

bool Periodic::Sleep(TimeMs ms) {
  wait_->WaitFor(ms, [this] { return stopping_.load(); });
  return !stopping_;
}

void Periodic::Loop() {
  LoopGuard guard(options_.name, options_.engine);
  while (!stopping_) {
    // Cleared before the step, not after: a Wake() while it runs asks for the next one at once.
    woken_ = false;
    std::optional<TimeMs> next;
    // A throw is logged and recorded by the guard; the loop waits its usual interval, so a step
    // that keeps throwing does not spin.
    guard.Run([&] { next = step_(); });
    const TimeMs wait = next.value_or(options_.interval_ms);
    if (wait <= 0) continue;
    wait_->WaitFor(wait, [this] { return stopping_.load() || woken_.load(); });
  }
}

}  // namespace superagent
