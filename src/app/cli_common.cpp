#include <cstdio>
#include <cstring>
#include <filesystem>

#include "app/commands.h"
#include "app/wiring.h"

namespace superagent::app {

int UsageError(const char* command, const std::string& what, const char* usage) {
  std::fprintf(stderr, "%s: %s\n\n%s", command, what.c_str(), usage);
  return 2;
}

std::optional<int> ParseConfigOnly(int argc, char** argv, const char* command, const char* usage,
                                   std::string* config_path) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(usage, stdout);
      return 0;
    }
    if (!std::strcmp(argv[i], "--config") && i + 1 < argc) {
      *config_path = argv[++i];
    } else if (!std::strncmp(argv[i], "--config=", 9)) {
      *config_path = argv[i] + 9;
    } else {
      return UsageError(command, "unexpected argument '" + std::string(argv[i]) + "'", usage);
    }
  }
  return std::nullopt;
}

std::optional<Config> LoadConfigOrReport(const std::string& path) {
  if (path.empty()) return DefaultConfig();
  std::vector<Problem> problems;
  auto loaded = LoadConfigFile(path, &problems);
  if (!loaded)
    for (const Problem& p : problems) std::fprintf(stderr, "%s\n", p.ToString().c_str());
  return loaded;
}

std::unique_ptr<Engine> OpenExistingOrReport(const Config& config, const char* command) {
  EngineOptions options;
  options.message_limit = MessageLimitsFor(config);  // as the daemon's: a tool enqueues by the same rules
  auto engine = Engine::OpenExisting((std::filesystem::path(config.data_dir) / "superagent.db").string(), SystemClock(),
                                     options);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, engine.status().message().c_str());
    return nullptr;
  }
  return std::move(*engine);
}

}  // namespace superagent::app
