// The `superagent` binary: one daemon (`serve`) and the small tools that help run it. main only
// picks the subcommand; each subcommand parses its own flags and prints its own --help.
#include <sys/prctl.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "app/commands.h"
#include "app/logging.h"

namespace {

using superagent::app::CmdInit;
using superagent::app::CmdCheck;
using superagent::app::CmdDoctor;
using superagent::app::CmdPolicy;
using superagent::app::CmdExplain;
using superagent::app::CmdPanelUrl;
using superagent::app::CmdGate;
using superagent::app::CmdReceive;
using superagent::app::CmdServe;
using superagent::app::CmdVersion;
using superagent::app::CmdModelBridge;
using superagent::app::CmdWorker;

struct Subcommand {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"init", CmdInit, "write a commented superagent.yaml and policy.yaml for a new team, then check them"},
    {"serve", CmdServe, "run the daemon: sources, engine, workers and the panel"},
    {"check", CmdCheck, "validate a config and the policy it names; print every problem as file:line:col"},
    {"gate", CmdGate, "show the Gate's admission decision for one trigger under a policy"},
    {"receive", CmdReceive, "hand one normalized trigger (JSON) to the store's intake, as a Source would"},
    {"doctor", CmdDoctor, "check a deployment: config, policy, data dir, tokens, endpoints, git; says how to fix each"},
    {"policy", CmdPolicy, "policy simulate: replay recorded Decisions under a candidate policy; policy report: each rule's precision"},
    {"panel-url", CmdPanelUrl, "print the panel's one-click login link (reads data_dir/panel.token)"},
    {"explain", CmdExplain, "tell the whole story of one message: intake, eval, decision, ticket"},
    {"version", CmdVersion, "print the version of superagent and of its SQLite library"},
    {"worker", CmdWorker, "run a worker on another machine: claims a daemon's turns and runs them here"},
    {"model-bridge", CmdModelBridge, "(the daemon's own) carry a sandboxed coding CLI's model calls to the gateway"},
};

void PrintUsage(std::FILE* out) {
  std::fprintf(out,
               "usage: superagent <command> [options]\n"
               "\n"
               "A self-hosted software-engineering colleague for one team and one GitHub repository.\n"
               "\n"
               "commands:\n");
  for (const Subcommand& c : kSubcommands) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(out,
               "  %-12s %s\n"
               "\n"
               "Run 'superagent <command> --help' for a command's options.\n",
               "help", "print this message, or 'help <command>' for a command's options");
}

const Subcommand* Find(std::string_view name) {
  for (const Subcommand& c : kSubcommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

int Run(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return 2;
  }
  std::string_view command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    if (command == "help" && argc >= 3) {
      // "help serve" is "serve --help", so each command documents itself in one place.
      const Subcommand* c = Find(argv[2]);
      if (c == nullptr) {
        std::fprintf(stderr, "superagent: unknown command '%s'\n\n", argv[2]);
        PrintUsage(stderr);
        return 2;
      }
      char help_flag[] = "--help";
      char* sub_argv[] = {argv[2], help_flag, nullptr};
      return c->run(2, sub_argv);
    }
    PrintUsage(stdout);
    return 0;
  }
  if (command == "--version") return CmdVersion(1, argv + 1);

  const Subcommand* c = Find(command);
  if (c == nullptr) {
    std::fprintf(stderr, "superagent: unknown command '%s'\n\n", argv[1]);
    PrintUsage(stderr);
    return 2;
  }
  return c->run(argc - 1, argv + 1);
}

}  // namespace

int main(int argc, char** argv) {
  // Non-dumpable before anything is read (issue 33): another process of the same user — a
  // worker's command that got out of its sandbox, anything else the service user runs — can
  // neither ptrace this one nor read its /proc/<pid>/environ, mem or maps, and no core file is
  // written with its secrets in it. Only root (CAP_SYS_PTRACE) still can. Programs it starts
  // are dumpable again after their exec, as usual.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Until a command reads its config, log at info to stderr: stdout belongs to command output
  // (spdlog's stock default logger writes to stdout).
  superagent::app::SetupLogging("info");
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "superagent: fatal: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "superagent: fatal: unknown exception\n");
  }
  return 1;
}
