// A loopback WebSocket server for tests (the fake Feishu long connection). It lives in the test
// tree, in its own C++17 target (websocketpp 0.8 does not compile as C++20), so the daemon binary
// carries only the client (src/sources/feishu/ws_transport.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace superagent::testing {

class WsServer {
 public:
  // Callbacks run on the server thread.
  struct Handlers {
    // Decides a handshake before it completes: 0 accepts it, anything else refuses it with that
    // HTTP status (what Feishu does for a bad or used ticket). Unset: every handshake is accepted.
    std::function<int(const std::string& resource)> on_handshake;
    std::function<void(int conn, const std::string& resource)> on_open;
    std::function<void(int conn, const std::string& bytes)> on_message;
    std::function<void(int conn)> on_close;
  };
  explicit WsServer(Handlers handlers);  // listens on 127.0.0.1, an ephemeral port
  ~WsServer();
  std::uint16_t Port() const;
  void Send(int conn, const std::string& bytes);  // binary
  void CloseAll();                                // every open connection, "going away"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace superagent::testing
