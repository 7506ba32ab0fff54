// `superagent check --config FILE`: validates the config and the policy it names, the way
// `serve` would load them, and prints every problem as file:line:col so an editor or CI can jump
// to it. Also fails a command executor whose program the workers' sandbox cannot see, and warns
// when nobody may ask a Source for work (issue 34). Reads only; never creates the data directory
// or anything else.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/commands.h"
#include "app/config.h"
#include "app/doctor.h"
#include "app/wiring.h"
#include "policy/policy_lines.h"
#include "superagent/policy.h"

namespace superagent::app {

namespace {

const char kCheckUsage[] =
    "usage: superagent check --config FILE\n"
    "\n"
    "Validates FILE and the policy file it names (policy_file), printing every problem as\n"
    "file:line:col: message, one per line. Also a problem: execution.command naming a program\n"
    "the workers' sandbox does not show. Warns (exit 0) when nobody may ask a Source that is on\n"
    "for work (an empty sources.<source>.people). Changes nothing on disk.\n"
    "\n"
    "exit status: 0 no problems, 1 problems found, 2 bad usage\n";

int CheckUsageError(const std::string& message) { return app::UsageError("check", message, kCheckUsage); }

void PrintProblems(const std::vector<Problem>& problems) {
  for (const Problem& p : problems) std::printf("%s\n", p.ToString().c_str());
}

// The environment `check` runs in is often not the service's (systemd EnvironmentFile=), so
// an unset variable is a note, not a problem. `without` says what serve does without it.
void NoteUnsetVariable(const std::string& name, const char* key, const char* without = "serve will need it") {
  if (ResolveSecret(name).empty()) {
    std::printf("note: environment variable %s (%s) is not set here; %s\n", name.c_str(), key, without);
  }
}

// The variables an enabled Feishu Source reads: the app credentials always, the callback's
// secrets only when Feishu POSTs events to /hooks/feishu.
void NoteFeishuVariables(const Config::Feishu& f) {
  if (!f.enabled) return;
  NoteUnsetVariable(f.app_id_env, "feishu.app_id_env", "serve will not start without it");
  NoteUnsetVariable(f.app_secret_env, "feishu.app_secret_env", "serve will not start without it");
  if (f.realtime != "callback") return;
  NoteUnsetVariable(f.encrypt_key_env, "feishu.encrypt_key_env",
                    "serve will refuse every callback at /hooks/feishu (401) without it");
  NoteUnsetVariable(f.verification_token_env, "feishu.verification_token_env",
                    "callbacks will be accepted without a verification token check");
}

}  // namespace

int CmdCheck(int argc, char** argv) {
  std::string config_path;
  bool have_config = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kCheckUsage, stdout);
      return 0;
    }
    if (arg == "--config") {
      if (i + 1 >= argc) return CheckUsageError("--config needs a FILE");
      config_path = argv[++i];
      have_config = true;
    } else if (arg.substr(0, 9) == "--config=") {
      config_path = std::string(arg.substr(9));
      have_config = true;
    } else {
      return CheckUsageError("unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (!have_config || config_path.empty()) return CheckUsageError("--config FILE is required");

  std::vector<Problem> problems;
  std::optional<Config> config = LoadConfigFile(config_path, &problems);
  if (!config) {
    PrintProblems(problems);
    std::fprintf(stderr, "check: %zu problem(s) in %s; the policy was not checked\n", problems.size(),
                 config_path.c_str());
    return 1;
  }

  std::optional<Policy> policy;
  std::string policy_label;
  if (config->policy_file.empty()) {
    std::printf("policy: embedded default (observe)\n");
    policy = DefaultPolicy();
    policy_label = "embedded default";
  } else {
    policy = LoadPolicyFile(config->policy_file, &problems);
    policy_label = config->policy_file;
  }
  if (!policy) {
    PrintProblems(problems);
    std::fprintf(stderr, "check: %zu problem(s) in %s\n", problems.size(), policy_label.c_str());
    return 1;
  }

  if (config->github.On()) {
    if (config->github.auth == "app") NoteUnsetVariable(config->github.app_private_key_env, "github.app_private_key_env");
    else NoteUnsetVariable(config->github.token_env, "github.token_env");
  }
  NoteFeishuVariables(config->feishu);
  NoteUnsetVariable(config->llm.api_key_env, "llm.api_key_env");
  // Workers (issue 36): a listener nobody may join, or one whose workers never get a turn.
  if (!config->workers.listen.empty()) {
    if (config->workers.join_token_env.empty())
      std::printf("warning: workers.listen is set but workers.join_token_env is not: no worker may join\n");
    else
      NoteUnsetVariable(config->workers.join_token_env, "workers.join_token_env", "serve will refuse every worker's join");
    if (config->execution.placement == "local")
      std::printf("warning: workers.listen is set but execution.placement is local: workers may join and never "
                  "get a turn; set it to remote or any\n");
  }
  // Allowed (a team may mean it), but never silently: workers are untrusted (issue 19).
  for (const std::string& w : ExecutionEnvWarnings(*config)) std::printf("warning: %s\n", w.c_str());
  // Valid, and deaf: the first @-mention would be ignored without a word (issue 34).
  for (const NobodyMayAsk& n : NobodyMayAskFor(*config, *policy))
    std::printf("warning: %s %s\n", n.what.c_str(), n.fix.c_str());
  // A command executor whose program the workers' sandbox does not show fails every turn.
  const char* path = std::getenv("PATH");
  if (auto problem = FindCommandProgramProblem(*config, path != nullptr ? path : "")) {
    const KeyLine at = FindPolicyKeyLine(config_path, {"execution", "command"});
    PrintProblems({Problem{config_path, at.depth == 2 ? at.line : 0, 0, problem->what + "; " + problem->fix}});
    std::fprintf(stderr, "check: 1 problem in %s\n", config_path.c_str());
    return 1;
  }
  std::printf("ok: config %s, policy %s (mode %s, %zu rules)\n", config_path.c_str(), policy_label.c_str(),
              ModeName(policy->mode), policy->rules.size());
  return 0;
}

}  // namespace superagent::app
