#include <cstdio>
#include <filesystem>

#include "app/commands.h"

namespace superagent::app {

std::optional<Config> LoadConfigOrReport(const std::string& path) {
  if (path.empty()) return DefaultConfig();
  std::vector<Problem> problems;
  auto loaded = LoadConfigFile(path, &problems);
  if (!loaded)
    for (const Problem& p : problems) std::fprintf(stderr, "%s\n", p.ToString().c_str());
  return loaded;
}

std::unique_ptr<Engine> OpenExistingOrReport(const Config& config, const char* command) {
  auto engine = Engine::OpenExisting((std::filesystem::path(config.data_dir) / "superagent.db").string(), SystemClock());
  if (!engine.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, engine.status().message().c_str());
    return nullptr;
  }
  return std::move(*engine);
}

}  // namespace superagent::app
