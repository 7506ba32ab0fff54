// The unix-socket way to the model gateway for sandboxes without a network (model_bridge.cpp).
#pragma once

#include <string>

#include "superagent/status.h"

namespace superagent::exec {

// Carries bytes both ways between connected sockets `a` and `b` until both directions have
// ended (or one side broke). Blocks the calling thread; the caller closes both.
void PumpBytes(int a, int b);
// A listening unix socket at `path` (an old socket there is replaced), connectable by any uid.
Result<int> ListenUnix(const std::string& path);
Result<int> ConnectUnix(const std::string& path);
Result<int> ConnectLoopback(int port);
// `superagent model-bridge PORT SOCKET`, run inside a sandbox: listens on 127.0.0.1:PORT, then
// forks; the parent returns Ok (the CLI may start), the child carries each connection to the unix
// socket until it is killed. Never returns in the child.
Status RunModelBridge(int port, const std::string& socket_path);

}  // namespace superagent::exec
