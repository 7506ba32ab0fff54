// `superagent doctor`: the checks a first deployment gets wrong, each with how to fix it. Every
// network check goes through the injected HttpClient, so tests run them against loopback fakes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/config.h"
#include "superagent/http.h"

namespace superagent::app {

struct DoctorCheck {
  // kWarning: works, but something a team should fix (said in `fix`); exit status unchanged.
  enum class Result { kOk, kFailed, kSkipped, kWarning };
  std::string name;    // stable, e.g. "github.token"
  Result result = Result::kOk;
  std::string detail;  // what was found; never a secret
  std::string fix;     // when failed (or skipped for a reason worth acting on): what to do
};

// Runs every check for a config that already parsed. Checks that cannot apply (no GitHub repo,
// no Feishu, no model key) are kSkipped with the reason; a check whose prerequisite failed is
// skipped too, so one mistake is reported once.
std::vector<DoctorCheck> RunDoctor(const Config& config, HttpClient& http);

// With execution.executor: command and the sandbox on, why a worker could not run
// execution.command (issue 34): its program — found in `path_env`'s directories when it has no
// slash — or a file it names by an absolute path is not shown in the sandbox (SandboxHides), or
// the program is in none of those directories or does not exist. `what` names execution.command
// and the file, `fix` says what to do; nullopt when the worker can run it, when the sandbox is off,
// or when only the shell could tell (an expansion, a builtin, a path relative to the Ticket's
// directory).
struct CommandProgramProblem {
  std::string what;
  std::string fix;
};
std::optional<CommandProgramProblem> FindCommandProgramProblem(const Config& config, const std::string& path_env);

// "ok" | "FAILED" | "skipped" | "warning"
const char* DoctorResultName(DoctorCheck::Result r);

}  // namespace superagent::app
