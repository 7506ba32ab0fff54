// A WebSocket client session (and, for tests, a server) over websocketpp. websocketpp 0.8 does
// not compile as C++20 (template-ids on destructors), so its code lives in C++17 translation
// units behind this std-only interface; the rest of the project stays C++20.
#pragma once

#include <cstdint>
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

// A loopback WebSocket server (tests' fake Feishu). Callbacks run on the server thread.
class Server {
 public:
  struct Handlers {
    std::function<void(int conn, const std::string& resource)> on_open;
    std::function<void(int conn, const std::string& bytes)> on_message;
    std::function<void(int conn)> on_close;
  };
  explicit Server(Handlers handlers);  // listens on 127.0.0.1, an ephemeral port
  ~Server();
  std::uint16_t Port() const;
  void Send(int conn, const std::string& bytes);  // binary
  void CloseAll();                                // every open connection, "going away"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace superagent::feishu::wsio
