// `superagent init`: writes a new team's superagent.yaml and policy.yaml (issue 24), then runs
// `check` and `doctor` on them, so the first start is the one that works. Asks on a terminal for
// what its flags did not give; with --yes (or without a terminal) it asks nothing.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "app/commands.h"
#include "app/config.h"
#include "app/init.h"

namespace superagent::app {

namespace {

const char kUsage[] =
    "usage: superagent init [--dir DIR] [--repo OWNER/NAME] [--model-url URL] [--model NAME]\n"
    "                       [--execution-model NAME] [--model-key-env NAME] [--github-token-env NAME]\n"
    "                       [--github-api-url URL] [--git-remote URL] [--data-dir DIR] [--listen HOST:PORT]\n"
    "                       [--yes] [--force]\n"
    "\n"
    "Writes DIR/superagent.yaml and DIR/policy.yaml (DIR: the current directory), both commented,\n"
    "then runs `check` and `doctor` on them. The policy starts in observe mode and allows the\n"
    "repository's collaborators with write access, when the token in --github-token-env's variable\n"
    "(GITHUB_TOKEN) may list them. Secrets are never asked for: only the NAMES of the variables\n"
    "that hold them.\n"
    "\n"
    "On a terminal it asks for each value its flags did not give (Enter keeps the default shown);\n"
    "with --yes, or when stdin is not a terminal, it asks nothing. Existing files are kept unless\n"
    "--force.\n"
    "\n"
    "exit: 0 files written and valid (doctor's findings are printed as next steps), 1 the files\n"
    "could not be written or are invalid, 2 bad usage or a bad value.\n";

int Usage(const std::string& message) {
  std::fprintf(stderr, "init: %s\n\n%s", message.c_str(), kUsage);
  return 2;
}

// Asks `question` on the terminal; Enter keeps *value. End of input keeps it too.
void Ask(const char* question, std::string* value) {
  std::printf("%s [%s]: ", question, value->c_str());
  std::fflush(stdout);
  std::string line;
  if (!std::getline(std::cin, line)) return;
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  std::size_t start = line.find_first_not_of(' ');
  if (start != std::string::npos) *value = line.substr(start);
}

bool WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

}  // namespace

int CmdInit(int argc, char** argv) {
  InitAnswers a;
  std::string dir = ".";
  bool yes = false, force = false;
  std::vector<std::string> given;  // flags set, not asked again
  struct Flag {
    const char* name;
    std::string* value;
  };
  const Flag flags[] = {{"--dir", &dir},
                        {"--repo", &a.repo},
                        {"--model-url", &a.model_url},
                        {"--model", &a.assessment_model},
                        {"--execution-model", &a.execution_model},
                        {"--model-key-env", &a.model_key_env},
                        {"--github-token-env", &a.github_token_env},
                        {"--github-api-url", &a.github_api_url},
                        {"--git-remote", &a.git_remote},
                        {"--data-dir", &a.data_dir},
                        {"--listen", &a.listen}};
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--yes" || arg == "-y") {
      yes = true;
      continue;
    }
    if (arg == "--force") {
      force = true;
      continue;
    }
    bool known = false;
    for (const Flag& f : flags) {
      const std::string name = f.name;
      if (arg == name) {
        if (i + 1 >= argc) return Usage(name + " needs a value");
        *f.value = argv[++i];
      } else if (arg.rfind(name + "=", 0) == 0) {
        *f.value = std::string(arg.substr(name.size() + 1));
      } else {
        continue;
      }
      given.push_back(name);
      known = true;
      break;
    }
    if (!known) return Usage("unexpected argument '" + std::string(arg) + "'");
  }
  auto was_given = [&](const char* name) { return std::find(given.begin(), given.end(), name) != given.end(); };
  if (!yes && isatty(STDIN_FILENO)) {
    std::printf("Setting up superagent. Enter keeps the value in brackets; no secret is asked for.\n");
    if (!was_given("--repo")) Ask("GitHub repository the agent works on (owner/name, empty for none)", &a.repo);
    if (!was_given("--github-token-env")) Ask("Variable that will hold the GitHub token", &a.github_token_env);
    if (!was_given("--model-url")) Ask("Model endpoint (OpenAI-compatible)", &a.model_url);
    if (!was_given("--model")) Ask("Model that judges messages", &a.assessment_model);
    if (!was_given("--execution-model")) Ask("Model that does the work (empty: the same)", &a.execution_model);
    if (!was_given("--model-key-env")) Ask("Variable that will hold the model key", &a.model_key_env);
  }
  if (std::string problem = InitAnswersProblem(a); !problem.empty()) return Usage(problem);

  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path config_path = fs::path(dir) / "superagent.yaml", policy_path = fs::path(dir) / "policy.yaml";
  if (!force)
    for (const fs::path& p : {config_path, policy_path})
      if (fs::exists(p, ec)) {
        std::fprintf(stderr, "init: %s exists; nothing was written (--force replaces it)\n", p.c_str());
        return 1;
      }
  auto http = MakeCurlHttpClient("superagent-init/" SUPERAGENT_VERSION);
  const InitPeople people = InitPeopleFromGitHub(a, ResolveSecret(a.github_token_env), *http);
  if (!WriteFile(config_path, InitConfigYaml(a)) || !WriteFile(policy_path, InitPolicyYaml(a, people))) {
    std::fprintf(stderr, "init: cannot write into %s\n", dir.c_str());
    return 1;
  }
  std::printf("wrote %s\nwrote %s (mode observe; people: %zu; init %s)\n\n", config_path.c_str(),
              policy_path.c_str(), people.logins.size(), people.note.c_str());
  std::fflush(stdout);

  std::string config_arg = config_path.string();
  char check_name[] = "check", config_flag[] = "--config";
  char* check_argv[] = {check_name, config_flag, config_arg.data(), nullptr};
  if (int rc = CmdCheck(3, check_argv); rc != 0) return 1;
  std::printf("\n");
  std::fflush(stdout);
  char doctor_name[] = "doctor";
  char* doctor_argv[] = {doctor_name, config_flag, config_arg.data(), nullptr};
  const int doctor = CmdDoctor(3, doctor_argv);
  std::printf("\nnext: %sstart it with `superagent serve --config %s`, and open the link it prints.\n",
              doctor == 0 ? "" : "fix what doctor says failed (secrets go in the environment, not the files), then ",
              config_arg.c_str());
  return 0;
}

}  // namespace superagent::app
