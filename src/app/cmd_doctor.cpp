// superagent doctor [--config FILE]
#include <cstdio>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "app/doctor.h"
#include "app/wiring.h"

namespace superagent::app {
namespace {

const char kDoctorUsage[] =
    "usage: superagent doctor [--config FILE]\n"
    "       superagent doctor --worker WORKER_FILE   (on a worker host: its file, token, sandbox, CLIs, the daemon)\n"
    "\n"
    "Checks what a first deployment gets wrong and says how to fix each: config and policy valid,\n"
    "someone allowed to ask for work on each Source that is on (sources.<source>.people),\n"
    "data_dir writable, SQLite version, the GitHub token (present, accepted, able to read\n"
    "notifications), the repository readable, the bot login, the default branch's protection\n"
    "(approvals required, stale ones dismissed), the webhook secret, the Feishu app\n"
    "(tenant token, bot, each configured chat, realtime path), the model endpoint and its models,\n"
    "git, the workers' sandbox, and with execution.executor: command that the sandbox shows the\n"
    "program execution.command runs. Checks that do not apply are reported as skipped.\n"
    "Run it as the service user with the service's environment, e.g.\n"
    "  sudo -u superagent env $(sudo grep -v '^#' /etc/superagent/secrets.env | xargs) \\\n"
    "    superagent doctor --config /etc/superagent/superagent.yaml\n"
    "exit: 0 nothing failed, 1 something failed, 2 bad usage or invalid config.\n";

}  // namespace

int CmdDoctor(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--worker") == 0) return WorkerDoctor(argv[2]);
  std::string config_path;
  if (auto exit = ParseConfigOnly(argc, argv, "doctor", kDoctorUsage, &config_path)) return *exit;
  Config config = DefaultConfig();
  if (!config_path.empty()) {
    std::vector<Problem> problems;
    auto loaded = LoadConfigFile(config_path, &problems);
    if (!loaded) {
      std::printf("%-22s FAILED  %zu problem(s) in %s\n", "config", problems.size(), config_path.c_str());
      for (const Problem& p : problems) std::printf("    %s\n", p.ToString().c_str());
      std::printf("    fix: correct these lines; nothing else was checked\n");
      return 2;
    }
    config = *loaded;
    std::printf("%-22s ok      %s\n", "config", config_path.c_str());
  } else {
    std::printf("%-22s ok      embedded defaults (no --config)\n", "config");
  }
  // The report is the output: the checks reuse the daemon's wiring, whose log lines ("llm
  // enabled …", "execution disabled …") would interleave with it on a terminal. What they would
  // say, each check's line says for a person.
  const spdlog::level::level_enum level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  auto http = MakeHttpClient("superagent-doctor/" SUPERAGENT_VERSION, HttpProxiesFromEnvironment());
  int failed = 0, warned = 0;
  for (const DoctorCheck& c : RunDoctor(config, *http)) {
    std::printf("%-22s %-7s %s\n", c.name.c_str(), DoctorResultName(c.result), c.detail.c_str());
    if (!c.fix.empty() && c.result != DoctorCheck::Result::kOk) std::printf("    fix: %s\n", c.fix.c_str());
    if (c.result == DoctorCheck::Result::kFailed) ++failed;
    if (c.result == DoctorCheck::Result::kWarning) ++warned;
  }
  spdlog::set_level(level);
  const std::string warnings = warned ? " (" + std::to_string(warned) + " warning(s))" : "";
  std::printf("\n%s%s\n", failed ? (std::to_string(failed) + " check(s) failed").c_str() : "no problems found",
              warnings.c_str());
  return failed ? 1 : 0;
}

}  // namespace superagent::app
