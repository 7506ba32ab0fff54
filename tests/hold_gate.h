// A gate a loopback fake holds requests at: a peer that hangs, released by the test. Event-driven
// (condition variable), so a test waits for "a request is being held" instead of sleeping.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace superagent::testing {

class HoldGate {
 public:
  // Called on the server's thread: blocks until Release().
  void Hold() {
    std::unique_lock<std::mutex> lock(mu_);
    ++holding_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    --holding_;
  }
  // Blocks until a request is held; false after 10 s.
  bool WaitUntilHolding() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return holding_ > 0; });
  }
  // Lets every held request (and every later one) go.
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  // Blocks until `n` requests are held at once; false after 10 s.
  bool WaitUntilHoldingAtLeast(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return holding_ >= n; });
  }
  // Whether a request is held now (its client has had no answer).
  bool Holding() {
    std::lock_guard<std::mutex> lock(mu_);
    return holding_ > 0;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int holding_ = 0;
  bool released_ = false;
};

}  // namespace superagent::testing
