// A WebSocket client session over websocketpp. websocketpp 0.8 does not compile as C++20
// (template-ids on destructors), so its code lives in a C++17 translation unit behind this
// std-only interface; the rest of the project stays C++20. The tests' loopback server is not
// here: it lives in tests/ws/ (a test-only target), so the daemon binary carries only a client.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace superagent::feishu::wsio {

struct ClientHandlers {
  std::function<void()> on_open;                         // connected
  std::function<void(const std::string&)> on_message;    // one binary (or text) message
};

// One connection. Handlers, Send and After run on the session's own thread (the one in Run).
class ClientSession {
 public:
  ClientSession();
  ~ClientSession();
  // Dials `url` (ws:// or wss://, TLS verifying peer and host name) and runs until the
  // connection closes or Stop() is called. Returns "" when it was opened at some point, else why
  // it failed.
  std::string Run(const std::string& url, ClientHandlers handlers);
  // Sends one binary message (call from a handler or an After callback).
  void Send(const std::string& bytes);
  // Runs `fn` on the session thread after `ms` milliseconds, unless the session ended first.
  void After(long ms, std::function<void()> fn);
  // Ends Run from any thread.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace superagent::feishu::wsio
