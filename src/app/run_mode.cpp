#include "app/run_mode.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace superagent::app {

namespace {

// The last path component ending in ".service" of a cgroup file ("0::/system.slice/
// superagent.service" → "superagent.service"); "" when there is none (a scope, a user session).
std::string ServiceOf(std::string_view cgroup) {
  std::string found;
  std::size_t start = 0;
  while (start <= cgroup.size()) {
    std::size_t end = cgroup.find_first_of("/\n", start);
    if (end == std::string_view::npos) end = cgroup.size();
    const std::string_view part = cgroup.substr(start, end - start);
    if (part.size() > 8 && part.substr(part.size() - 8) == ".service") found = std::string(part);
    start = end + 1;
  }
  return found;
}

// "--config FILE" for a command line, or nothing for the defaults.
std::string ConfigArgs(const RunMode& mode) {
  return mode.config_file.empty() ? "" : " --config " + mode.config_file;
}

}  // namespace

RunMode RunModeFrom(const std::map<std::string, std::string>& env, std::string_view cgroup,
                    const std::string& config_file) {
  RunMode m;
  m.config_file = config_file;
  auto set = [&](const char* name) {
    auto it = env.find(name);
    return it != env.end() && !it->second.empty() ? it->second : std::string();
  };
  if (!set("INVOCATION_ID").empty()) {
    m.kind = RunMode::Kind::kSystemd;
    if (std::string unit = ServiceOf(cgroup); !unit.empty()) m.unit = unit;
  } else if (set(kStartedByVariable) == "dev.sh") {
    m.kind = RunMode::Kind::kDevSh;
  }
  return m;
}

RunMode CurrentRunMode(const std::string& config_file) {
  std::map<std::string, std::string> env;
  for (const char* name : {"INVOCATION_ID", kStartedByVariable})
    if (const char* v = std::getenv(name)) env[name] = v;
  std::ifstream in("/proc/self/cgroup");
  std::stringstream cgroup;
  cgroup << in.rdbuf();
  return RunModeFrom(env, cgroup.str(), config_file);
}

std::string RestartHint(const RunMode& mode) {
  switch (mode.kind) {
    case RunMode::Kind::kSystemd: return "Then restart it: sudo systemctl restart " + mode.unit + ".";
    case RunMode::Kind::kDevSh:
      return "Then restart it: stop it with Ctrl-C and run cmake/dev.sh run" + ConfigArgs(mode) + ".";
    case RunMode::Kind::kTerminal: break;
  }
  return "Then restart it: stop it with Ctrl-C and start `superagent serve" + ConfigArgs(mode) + "` again.";
}

std::string SecretsHint(const RunMode& mode) {
  if (mode.kind == RunMode::Kind::kSystemd)
    return "in /etc/superagent/secrets.env or a credential file (docs/007-operations.md, Secrets)";
  return "in the shell that starts the daemon (export it there)";
}

}  // namespace superagent::app
