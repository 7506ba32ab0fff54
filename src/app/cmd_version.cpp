// `superagent version`: what is running, including the SQLite library actually linked (Debian
// may upgrade it underneath the binary, and its version decides which SQL features exist).
#include <cstdio>
#include <string_view>

#include <sqlite3.h>

#include "app/commands.h"

namespace superagent::app {

namespace {

void PrintVersionUsage(std::FILE* out) {
  std::fprintf(out,
               "usage: superagent version\n"
               "\n"
               "Prints the version of superagent and of the SQLite library it uses.\n");
}

}  // namespace

int CmdVersion(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintVersionUsage(stdout);
      return 0;
    }
    std::fprintf(stderr, "version: unexpected argument '%s'\n\n", argv[i]);
    PrintVersionUsage(stderr);
    return 2;
  }
  std::printf("superagent %s\nsqlite %s\n", SUPERAGENT_VERSION, sqlite3_libversion());
  return 0;
}

}  // namespace superagent::app
