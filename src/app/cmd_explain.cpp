#include <cstdio>

#include "app/commands.h"

namespace superagent::app {
// Replaced by the store-backed story later in this change.
int CmdExplain(int, char**) { std::fprintf(stderr, "explain: not built yet\n"); return 1; }
}  // namespace superagent::app
