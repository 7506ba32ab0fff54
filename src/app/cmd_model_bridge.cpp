// `superagent model-bridge PORT SOCKET`: not for people. The coding-CLI executor starts it inside
// a Ticket's sandbox when execution.network is off: it listens on the sandbox's own
// 127.0.0.1:PORT and carries each connection to the model gateway's unix SOCKET, so the CLI
// reaches its model the same way as with a network (docs/003, "The model gateway").
#include <cstdio>
#include <string>
#include <string_view>

#include "app/commands.h"
#include "exec/model_bridge.h"

namespace superagent::app {

namespace {

void PrintModelBridgeUsage(std::FILE* out) {
  std::fprintf(out,
               "usage: superagent model-bridge PORT SOCKET\n"
               "\n"
               "Started by the daemon inside a coding CLI's sandbox when execution.network is off:\n"
               "listens on 127.0.0.1:PORT and carries each connection to the model gateway's unix\n"
               "SOCKET. Returns once it listens; a child process serves until the sandbox ends.\n");
}

}  // namespace

int CmdModelBridge(int argc, char** argv) {
  if (argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    PrintModelBridgeUsage(stdout);
    return 0;
  }
  if (argc != 3) {
    PrintModelBridgeUsage(stderr);
    return 2;
  }
  const std::string port_text = argv[1];
  if (port_text.empty() || port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos) {
    std::fprintf(stderr, "model-bridge: PORT must be a number 1..65535, not '%s'\n", argv[1]);
    return 2;
  }
  Status s = exec::RunModelBridge(std::stoi(port_text), argv[2]);
  if (!s.ok()) {
    std::fprintf(stderr, "model-bridge: %s\n", s.message().c_str());
    return s.code() == Status::Code::kInvalidArgument ? 2 : 1;
  }
  return 0;
}

}  // namespace superagent::app
