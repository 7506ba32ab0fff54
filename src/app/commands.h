// Subcommands of the `superagent` binary. Each takes the arguments after its own name
// (argv[0] is the subcommand name), prints to stdout/stderr, and returns the process exit code:
// 0 success, 1 a problem found (check/doctor) or runtime failure, 2 bad usage or bad input.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "app/config.h"
#include "superagent/engine.h"

namespace superagent::app {

int CmdServe(int argc, char** argv);    // serve --config FILE
int CmdCheck(int argc, char** argv);    // check --config FILE
int CmdGate(int argc, char** argv);     // gate --policy FILE --trigger FILE [--thread-has-ticket]
int CmdExplain(int argc, char** argv);  // explain TRIGGER --config FILE
int CmdVersion(int argc, char** argv);  // version
int CmdReceive(int argc, char** argv);  // receive --trigger FILE [--config FILE] [--via NAME]
int CmdPolicy(int argc, char** argv);   // policy simulate --config FILE --policy FILE [--since 7d]
int CmdDoctor(int argc, char** argv);   // doctor --config FILE
int CmdPanelUrl(int argc, char** argv); // panel-url [--config FILE]
int CmdInit(int argc, char** argv);     // init [--dir DIR] [--repo OWNER/NAME] … [--yes] [--force]
int CmdModelBridge(int argc, char** argv);  // model-bridge PORT SOCKET (started in a sandbox by the daemon)
int CmdWorker(int argc, char** argv);       // worker --config FILE (a worker on another machine, issue 36)
// `worker --check --config FILE` and `doctor --worker FILE`: checks a worker's file, join token,
// sandbox and CLIs, and joins the daemon once to prove the connection. Exit 0 / 1 / 2 as doctor.
int WorkerDoctor(const std::string& config_path);


// The one way a subcommand refuses its arguments: "<command>: <what>", a blank line and `usage`
// on stderr; returns 2, the exit code of bad usage.
int UsageError(const char* command, const std::string& what, const char* usage);

// Shared by the subcommands whose only argument is `--config FILE` (or `--config=FILE`): sets
// *config_path and returns nullopt to go on; otherwise the exit code (0 after printing `usage`
// for --help, 2 after naming an unexpected argument).
std::optional<int> ParseConfigOnly(int argc, char** argv, const char* command, const char* usage,
                                   std::string* config_path);
// Shared by the subcommands. The config at `path` (empty: the defaults); on problems each is
// printed to stderr, one per line with file:line, and the result is empty (exit 2).
std::optional<Config> LoadConfigOrReport(const std::string& path);
// The Engine over the database an earlier `serve` created under config.data_dir; never creates
// one. On failure prints "<command>: why" to stderr and returns null (exit 1).
std::unique_ptr<Engine> OpenExistingOrReport(const Config& config, const char* command);

}  // namespace superagent::app
