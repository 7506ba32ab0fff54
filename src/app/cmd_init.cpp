// `superagent init`: writes a new team's superagent.yaml and policy.yaml (issue 24), then runs
// `check` and `doctor` on them, so the first start is the one that works. Asks on a terminal for
// what its flags did not give; with --yes (or without a terminal) it asks nothing.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/commands.h"
#include "app/config.h"
#include "app/init.h"
#include "app/wiring.h"

namespace superagent::app {

namespace {

const char kInitUsage[] =
    "usage: superagent init [--dir DIR] [--repo OWNER/NAME[,OWNER/NAME]] [--people LOGIN,LOGIN] [--model-url URL]\n"
    "                       [--model NAME] [--execution-model NAME] [--model-key-env NAME]\n"
    "                       [--github-token-env NAME] [--github-api-url URL] [--git-remote URL]\n"
    "                       [--data-dir DIR] [--listen HOST:PORT] [--yes] [--force]\n"
    "\n"
    "Writes DIR/superagent.yaml and DIR/policy.yaml (DIR: the current directory), both commented,\n"
    "then runs `check` and `doctor` on them. The policy starts in observe mode and allows the\n"
    "GitHub logins given with --people (comma-separated), or else the repositories' collaborators\n"
    "with write access, when the token in --github-token-env's variable (GITHUB_TOKEN) may list\n"
    "them. When it ends with nobody, it says so last: every @-mention would be ignored until\n"
    "sources.github.people lists someone. --repo takes one repository or several (comma-separated;\n"
    "the first is home to what is asked in a chat), each also as its GitHub URL. Secrets\n"
    "are never asked for: only the NAMES of the variables that hold them.\n"
    "\n"
    "On a terminal it asks for each value its flags did not give (Enter keeps the default shown),\n"
    "then for the people who may ask; a bad answer is said at once and asked again. With --yes,\n"
    "or when stdin is not a terminal, it asks nothing. Existing files are kept unless --force.\n"
    "\n"
    "exit: 0 files written and valid (doctor's findings are printed as next steps), 1 the files\n"
    "could not be written or are invalid, 2 bad usage or a bad value.\n";

int Usage(const std::string& message) { return UsageError("init", message, kInitUsage); }

bool WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

}  // namespace

int CmdInit(int argc, char** argv) {
  InitAnswers a;
  std::string dir = ".", people_list;
  bool yes = false, force = false;
  std::vector<std::string> given;  // flags set, not asked again
  struct Flag {
    const char* name;
    std::string* value;
  };
  const Flag flags[] = {{"--dir", &dir},
                        {"--repo", &a.repo},
                        {"--people", &people_list},
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
      std::fputs(kInitUsage, stdout);
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
  InitPeople people;
  if (was_given("--people")) {
    if (std::string p = ParsePeopleList(people_list, &people.logins); !p.empty()) return Usage("--people: " + p);
    if (people.logins.empty()) return Usage("--people: no login given (leave the flag out to list the repository's writers)");
    people.note = "allowed the people given with --people";
  }
  const bool interactive = !yes && isatty(STDIN_FILENO);
  // Each answer is checked as it is given (issue 34): a pasted URL becomes owner/name, a bad
  // answer is said at once and asked again; input that ends on a refused answer stops here.
  auto ask = [&](const char* flag, const char* question, std::string* value,
                 const std::function<std::string(std::string*)>& check) -> std::optional<int> {
    if (!interactive || was_given(flag)) return std::nullopt;
    if (std::string p = AskUntilValid(std::cin, std::cout, question, value, check); !p.empty())
      return Usage(std::string(flag) + ": " + p + " (and the input ended)");
    return std::nullopt;
  };
  auto variable = [](std::string* v) { return InitVariableProblem(*v); };
  if (interactive) std::printf("Setting up superagent. Enter keeps the value in brackets; no secret is asked for.\n");
  std::fflush(stdout);
  if (auto rc = ask("--repo",
                    "GitHub repositories the agent works on (owner/name or URL, several separated by commas; empty for none)",
                    &a.repo, [&a](std::string* v) { return InitReposProblem(v, &a.repos); }))
    return *rc;
  if (auto rc = ask("--github-token-env", "Variable that will hold the GitHub token", &a.github_token_env, variable))
    return *rc;
  if (auto rc = ask("--model-url", "Model endpoint (OpenAI-compatible)", &a.model_url,
                    [](std::string* v) { return InitUrlProblem(*v); }))
    return *rc;
  if (auto rc = ask("--model", "Model that judges messages", &a.assessment_model, [](std::string* v) {
        return v->empty() || v->size() > 200 ? std::string("a model name is required (at most 200 characters)") : "";
      }))
    return *rc;
  if (auto rc = ask("--execution-model", "Model that does the work (empty: the same)", &a.execution_model,
                    [](std::string* v) { return v->size() > 200 ? std::string("at most 200 characters") : ""; }))
    return *rc;
  if (auto rc = ask("--model-key-env", "Variable that will hold the model key", &a.model_key_env, variable)) return *rc;
  if (std::string problem = InitAnswersProblem(&a); !problem.empty()) return Usage(problem);

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
  if (!was_given("--people")) {
    auto http = MakeHttpClient("superagent-init/" SUPERAGENT_VERSION, HttpProxiesFromEnvironment());
    people = InitPeopleFromGitHub(a, ResolveSecret(a.github_token_env), *http);
    // Without a token (the README's order: init first, the secrets after) nobody would be
    // allowed: the person at the terminal is asked, with the writers GitHub named as the default.
    if (interactive && !a.repo.empty()) {
      std::string list;
      for (const std::string& l : people.logins) list += (list.empty() ? "" : ",") + l;
      const std::string before = list;
      if (people.logins.empty()) std::printf("init %s.\n", people.note.c_str());
      auto check = [](std::string* v) {
        std::vector<std::string> logins;
        return ParsePeopleList(*v, &logins);
      };
      if (auto rc = ask("--people", "GitHub logins who may ask the agent for work, comma-separated (empty: nobody yet)",
                        &list, check))
        return *rc;
      if (list != before) {
        (void)ParsePeopleList(list, &people.logins);
        people.note = "allowed the people given when it asked";
      }
    }
  }
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
  // Last, where it cannot be missed: a policy that lets nobody ask is a daemon that never answers.
  if (std::string nobody = InitNobodyMayAskWords(a, people, policy_path.string()); !nobody.empty())
    std::printf("\n%s\n", nobody.c_str());
  return 0;
}

}  // namespace superagent::app
