// Periodic, the thread loop under the scheduler, the Effects loop, the Eval runner and the
// Sources' pollers. Time is a ManualWait the test releases by hand: no test waits out an interval.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <vector>

#include "engine_fixture.h"
#include "superagent/periodic.h"
#include "result_ok.h"

namespace superagent::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr auto kBound = std::chrono::seconds(10);  // how long a test waits for the loop's thread

// A LoopWait whose time passes only on Elapse(). It records the waits that blocked (a wait whose
// `done` holds at once returns without being recorded, as it does not wait).
class ManualWait : public LoopWait {
 public:
  void WaitFor(TimeMs ms, const std::function<bool()>& done) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (done()) return;
    const int elapsed = elapsed_;
    waits_.push_back(ms);
    waiting_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] {
      ++looks_;
      cv_.notify_all();
      return done() || elapsed_ != elapsed;
    });
    waiting_ = false;
    cv_.notify_all();
  }
  void Notify() override {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }

  // Blocks (bounded) until the loop's thread is in its `n`th blocking wait, or past it; returns
  // the length it asked for, or -1 when it never got there.
  TimeMs AwaitWait(std::size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, kBound, [&] { return waits_.size() > n || (waits_.size() == n && waiting_); })) return -1;
    return waits_[n - 1];
  }
  // Ends the wait in progress as if its time had passed.
  void Elapse() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++elapsed_;
    }
    cv_.notify_all();
  }
  // How often a waiting thread has looked at its `done`.
  int Looks() {
    std::lock_guard<std::mutex> lock(mu_);
    return looks_;
  }
  // Blocks (bounded) until the waiting thread looked at its `done` after `looks` looks; true when
  // it did and still waits (that look did not end the wait).
  bool LookedSince(int looks) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, kBound, [&] { return looks_ > looks; })) return false;
    return waiting_;
  }
  std::vector<TimeMs> Waits() {
    std::lock_guard<std::mutex> lock(mu_);
    return waits_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<TimeMs> waits_;
  bool waiting_ = false;
  int elapsed_ = 0;
  int looks_ = 0;
};

// Blocks (bounded) until `pred` holds; for state another thread sets without a notification.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(PeriodicTest, RunsAtOnceThenOnceEveryInterval) {
  ManualWait wait;
  std::atomic<int> steps{0};
  Periodic loop({"the test loop", 60'000, nullptr, &wait}, [&]() -> std::optional<TimeMs> {
    ++steps;
    return std::nullopt;
  });
  EXPECT_EQ(steps, 0) << "nothing runs before Start()";
  ASSERT_TRUE(loop.Start());
  EXPECT_FALSE(loop.Start()) << "one thread per loop";
  ASSERT_EQ(wait.AwaitWait(1), 60'000);
  EXPECT_EQ(steps, 1) << "the first step runs at once";
  wait.Elapse();
  ASSERT_EQ(wait.AwaitWait(2), 60'000);
  EXPECT_EQ(steps, 2) << "one step per interval";
  wait.Elapse();
  ASSERT_EQ(wait.AwaitWait(3), 60'000);
  EXPECT_EQ(steps, 3);
  loop.Stop();
  EXPECT_EQ(steps, 3) << "the wait Stop() ended runs no step";
}

TEST(PeriodicTest, WakeRunsTheNextStepEarlyAndAWakeDuringAStepIsNotLost) {
  ManualWait wait;
  std::atomic<int> steps{0};
  Periodic* self = nullptr;
  Periodic loop({"the test loop", 60'000, nullptr, &wait}, [&]() -> std::optional<TimeMs> {
    if (++steps == 3) self->Wake();  // work announced while this step runs
    return std::nullopt;
  });
  self = &loop;
  loop.Wake();  // before Start(): harmless
  ASSERT_TRUE(loop.Start());
  ASSERT_EQ(wait.AwaitWait(1), 60'000);
  EXPECT_EQ(steps, 1);
  loop.Wake();
  ASSERT_EQ(wait.AwaitWait(2), 60'000);
  EXPECT_EQ(steps, 2) << "Wake() ended the interval early";
  wait.Elapse();
  ASSERT_EQ(wait.AwaitWait(3), 60'000);
  EXPECT_EQ(steps, 4) << "the Wake() during step 3 ran step 4 without a wait";
  loop.Stop();
  loop.Wake();  // after Stop(): harmless
  EXPECT_EQ(steps, 4);
}

TEST(PeriodicTest, TheIntervalAStepReturnsIsObeyed) {
  ManualWait wait;
  std::vector<std::optional<TimeMs>> answers = {7'000, 0, 0, std::nullopt, 120'000};
  std::atomic<std::size_t> steps{0};
  Periodic loop({"the test loop", 60'000, nullptr, &wait}, [&]() -> std::optional<TimeMs> {
    const std::size_t i = steps++;
    return i < answers.size() ? answers[i] : std::nullopt;
  });
  ASSERT_TRUE(loop.Start());
  ASSERT_EQ(wait.AwaitWait(1), 7'000) << "the step asked for 7 s";
  wait.Elapse();
  // Steps 2 and 3 asked for no wait: step 4 followed them at once and named none.
  ASSERT_EQ(wait.AwaitWait(2), 60'000);
  EXPECT_EQ(steps, 4u);
  wait.Elapse();
  ASSERT_EQ(wait.AwaitWait(3), 120'000) << "a longer wait (a peer's X-Poll-Interval) is obeyed too";
  loop.Stop();
  EXPECT_THAT(wait.Waits(), ElementsAre(7'000, 60'000, 120'000));
}

TEST(PeriodicTest, StopDuringALongIntervalReturnsPromptly) {
  // The real wait: an hour-long interval that Stop() must cut short.
  std::promise<void> first;
  std::atomic<int> steps{0};
  Periodic loop({"the test loop", 3'600'000}, [&]() -> std::optional<TimeMs> {
    if (steps++ == 0) first.set_value();
    return std::nullopt;
  });
  ASSERT_TRUE(loop.Start());
  ASSERT_EQ(first.get_future().wait_for(kBound), std::future_status::ready);
  const auto stop_started = std::chrono::steady_clock::now();
  loop.Stop();
  // Half the suite's 60 s timeout: far below the hour it would otherwise wait.
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, std::chrono::seconds(30));
  EXPECT_EQ(steps, 1);
  EXPECT_TRUE(loop.stopping());
  // Stopped is not finished: the loop runs again after Start(), at once.
  ASSERT_TRUE(loop.Start());
  EXPECT_FALSE(loop.stopping());
  ASSERT_TRUE(Eventually([&] { return steps == 2; }));
  loop.Stop();
}

TEST(PeriodicTest, StopWaitsForTheStepInProgressAndStartsNoOther) {
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> finished{false};
  std::atomic<int> steps{0};
  Periodic loop({"the test loop", 5}, [&]() -> std::optional<TimeMs> {
    if (steps++ == 0) {
      entered.set_value();
      released.wait();
      finished = true;
    }
    return std::nullopt;
  });
  ASSERT_TRUE(loop.Start());
  ASSERT_EQ(entered.get_future().wait_for(kBound), std::future_status::ready);
  auto stopped = std::async(std::launch::async, [&] {
    loop.Stop();
    return finished.load();
  });
  ASSERT_TRUE(Eventually([&] { return loop.stopping(); })) << "Stop() began";
  release.set_value();
  ASSERT_EQ(stopped.wait_for(kBound), std::future_status::ready);
  EXPECT_TRUE(stopped.get()) << "Stop() returned only after the step in progress ended";
  EXPECT_EQ(steps, 1) << "no step started once Stop() began";
}

TEST(PeriodicTest, AStepsSleepEndsOnStopButNotOnWake) {
  ManualWait wait;
  std::vector<bool> slept;  // the loop thread's; read after Stop() joined it
  std::atomic<int> steps{0};
  Periodic* self = nullptr;
  Periodic loop({"the test loop", 60'000, nullptr, &wait}, [&]() -> std::optional<TimeMs> {
    const int i = steps++;
    if (i == 0 || i == 2) slept.push_back(self->Sleep(5'000));  // a rate-limit wait inside a round
    return std::nullopt;
  });
  self = &loop;
  ASSERT_TRUE(loop.Start());
  ASSERT_EQ(wait.AwaitWait(1), 5'000);
  const int looks = wait.Looks();
  loop.Wake();
  EXPECT_TRUE(wait.LookedSince(looks)) << "the Wake() was seen and the sleep went on";
  wait.Elapse();
  // The Wake() was kept for the loop's own wait: step 2 followed step 1 at once.
  ASSERT_EQ(wait.AwaitWait(2), 60'000);
  EXPECT_EQ(steps, 2);
  wait.Elapse();
  ASSERT_EQ(wait.AwaitWait(3), 5'000);
  loop.Stop();
  EXPECT_THAT(slept, ElementsAre(true, false)) << "the second sleep was ended by Stop()";
  EXPECT_EQ(steps, 3);
}

// A step that throws: logged, counted as a system problem after three in a row (LoopGuard), the
// usual interval, then the loop goes on; the next clean step clears the problem.
class PeriodicGuardTest : public EngineTest {};

// What the process logs while it lives, kept in memory.
struct CapturedLog {
  CapturedLog() { spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink)); }
  ~CapturedLog() { spdlog::set_default_logger(previous); }
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
};

TEST_F(PeriodicGuardTest, AThrowingStepIsLoggedAndRecordedAndTheLoopGoesOn) {
  CapturedLog log;
  ManualWait wait;
  std::atomic<int> steps{0};
  Periodic loop({"the test loop", 60'000, engine_.get(), &wait}, [&]() -> std::optional<TimeMs> {
    const int i = ++steps;
    if (i == 1) return 7'000;
    if (i <= 4) throw std::runtime_error("boom " + std::to_string(i));
    return std::nullopt;
  });
  ASSERT_TRUE(loop.Start());
  ASSERT_EQ(wait.AwaitWait(1), 7'000);
  for (std::size_t n = 2; n <= 4; ++n) {
    wait.Elapse();
    ASSERT_EQ(wait.AwaitWait(n), 60'000) << "after a throw the loop waits its interval, not the last step's";
  }
  EXPECT_EQ(steps, 4);
  auto problems = Ok(views_->Problems(options_.problem_threshold));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, "unexpected:the test loop");
  EXPECT_EQ(problems[0].message, "unexpected error in the test loop: boom 4");
  EXPECT_EQ(problems[0].failures, 3);
  wait.Elapse();
  ASSERT_EQ(wait.AwaitWait(5), 60'000);
  EXPECT_EQ(steps, 5) << "the loop went on";
  EXPECT_TRUE(Ok(views_->Problems(options_.problem_threshold)).empty()) << "the clean step cleared the problem";
  loop.Stop();
  std::vector<std::string> logged;
  for (const std::string& line : log.sink->last_formatted())
    if (line.find("failed unexpectedly") != std::string::npos) logged.push_back(line);
  ASSERT_EQ(logged.size(), 3u) << "one line per throw";
  EXPECT_THAT(logged[0], HasSubstr("[error] the test loop failed unexpectedly, the daemon goes on: "
                                   "unexpected error in the test loop: boom 2"));
  EXPECT_THAT(logged[2], HasSubstr("boom 4"));
}

}  // namespace
}  // namespace superagent::testing
