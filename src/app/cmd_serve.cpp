#include <cstdio>

#include "app/commands.h"

namespace superagent::app {
// Replaced by the Engine-backed daemon later in this change.
int CmdServe(int, char**) { std::fprintf(stderr, "serve: not built yet\n"); return 1; }
}  // namespace superagent::app
