// The HTTP server's limits as pure rules (which body is refused, with what), and the connection
// pool that grows with slow peers instead of letting them starve everyone else.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "panel/http_limits.h"

namespace superagent::panel {
namespace {

using ::testing::HasSubstr;

TEST(BodyLimits, EachRouteHasItsOwnAndTheSenderIsToldIt) {
  EXPECT_EQ(BodyLimit("/hooks/github"), 25u * 1024 * 1024);  // GitHub: "Payloads are capped at 25 MB"
  EXPECT_EQ(BodyLimit("/hooks/feishu"), 256u * 1024);
  EXPECT_EQ(BodyLimit("/api/tickets/1/stop"), 64u * 1024);
  EXPECT_EQ(BodyLimit("/hooks/github/../feishu"), 64u * 1024);  // not a hook: the small limit

  EXPECT_EQ(CheckBody("POST", "/hooks/github", true, "26214400", "").status, 0);
  BodyRefusal big = CheckBody("POST", "/hooks/github", true, "1073741824", "");
  EXPECT_EQ(big.status, 413);
  EXPECT_THAT(big.message, HasSubstr("at most 26214400 bytes"));
  EXPECT_EQ(CheckBody("POST", "/hooks/feishu", true, "262145", "").status, 413);
  EXPECT_EQ(CheckBody("POST", "/hooks/feishu", true, "262144", "").status, 0);
  EXPECT_EQ(CheckBody("POST", "/api/policy/reload", true, "65537", "").status, 413);
  EXPECT_EQ(CheckBody("POST", "/api/policy/reload", true, "0", "").status, 0);
  // Bodies httplib 0.11 would read without a limit: chunked, or until the peer closes.
  EXPECT_EQ(CheckBody("POST", "/hooks/github", false, "", "chunked").status, 411);
  EXPECT_EQ(CheckBody("POST", "/hooks/github", true, "10", "gzip, chunked").status, 411);
  EXPECT_EQ(CheckBody("POST", "/api/policy/reload", false, "", "").status, 411);
  EXPECT_EQ(CheckBody("PUT", "/x", false, "", "").status, 411);
  EXPECT_EQ(CheckBody("GET", "/healthz", false, "", "").status, 0);
  // A Content-Length that is not a plain number of bytes.
  for (const char* bad : {"", "-1", "12abc", " 12", "0x10", "99999999999999999999999", "１２", "\xff"})
    EXPECT_EQ(CheckBody("POST", "/hooks/github", true, bad, "").status, 400) << bad;
  EXPECT_EQ(CheckBody("POST", "/hooks/github", true, "9999999999999999999", "").status, 413);
}

// Holds `n` tasks running until released, the way slow connections hold their threads.
struct Blocker {
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  bool released = false;
  void Run() {
    std::unique_lock<std::mutex> lock(mu);
    ++running;
    cv.notify_all();
    cv.wait(lock, [&] { return released; });
  }
  bool WaitRunning(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return running >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
    cv.notify_all();
  }
};

TEST(ConnectionPool, GrowsWithHeldConnectionsSoANewOneIsServedAtOnce) {
  ConnectionPool pool(100);
  Blocker held;
  for (int i = 0; i < 64; ++i) pool.enqueue([&] { held.Run(); });
  ASSERT_TRUE(held.WaitRunning(64));  // 64 at once: none waits for another
  std::atomic<bool> served{false};
  Blocker probe;
  pool.enqueue([&] {
    served = true;
    probe.Run();
  });
  EXPECT_TRUE(probe.WaitRunning(1)) << "a 65th connection waited behind 64 slow ones";
  EXPECT_EQ(pool.threads(), 65u);
  probe.Release();
  held.Release();
  pool.shutdown();
  EXPECT_TRUE(served);
}

TEST(ConnectionPool, BeyondTheCapConnectionsWaitAndAnExceptionEndsOnlyItsOwn) {
  ConnectionPool pool(2);
  Blocker held;
  pool.enqueue([] { throw std::runtime_error("a handler threw"); });
  pool.enqueue([&] { held.Run(); });
  std::atomic<int> later{0};
  for (int i = 0; i < 5; ++i) pool.enqueue([&] { ++later; });
  ASSERT_TRUE(held.WaitRunning(1));
  // The thread whose task threw goes on with the waiting ones while the other is held.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (later.load() < 5 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(later.load(), 5);
  EXPECT_EQ(pool.threads(), 2u);  // the cap
  held.Release();
  pool.shutdown();
}

}  // namespace
}  // namespace superagent::panel
