// The threads an httplib server serves connections on, grown with demand up to a cap: shared by
// the daemon's panel listener and its worker listener, where a worker's long-polling claim holds a
// connection while it waits.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace superagent::net {

// Connection threads: a new connection gets an idle thread, else a new one while fewer than
// `max_threads` exist; beyond that it waits in line until a thread is free (the read and idle
// timeouts bound how long any connection holds one). Threads stay once made. An exception that
// escapes a connection is logged, never ends the process.
class ConnectionPool final : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(std::size_t max_threads);
  ~ConnectionPool() override;
  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;
  std::size_t threads() const;

 private:
  void Work();

  const std::size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool shutdown_ = false;
};

// Debian's cpp-httplib is a compiled library whose listen() backlog is 5: a burst of clients
// connecting at once (every worker of a pool reconnecting after a restart) overflows it and most
// wait out SYN retries or fail. Finds this process's listening TCP socket on `port` and listens on
// it again with `backlog` (Linux takes the new length for a socket already listening). False when
// no such socket was found.
bool WidenListenBacklog(int port, int backlog);

}  // namespace superagent::net
