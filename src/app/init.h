// `superagent init`: a new team's two files. What it asks is plain data (InitAnswers); the
// files are rendered from it with every value quoted, so a repository or a model name can never
// change the YAML's shape; the people come from GitHub when the token may list them.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "superagent/http.h"

namespace superagent::app {

struct InitAnswers {
  // "owner/name"; empty: GitHub off. As given, several may be listed ("acme/api, acme/web");
  // InitAnswersProblem leaves the first here and every one in `repos`.
  std::string repo;
  std::vector<std::string> repos;                      // issue 37: every repository, the first = repo
  std::string github_api_url = "https://api.github.com";
  std::string github_token_env = "GITHUB_TOKEN";
  std::string model_url = "https://api.deepseek.com";  // an OpenAI-compatible endpoint
  std::string assessment_model = "deepseek-chat";
  std::string execution_model;                         // empty: the assessment model
  std::string model_key_env = "DEEPSEEK_API_KEY";
  std::string git_remote;                              // empty: the repository's GitHub clone URL
  std::string data_dir = "./superagent-data";
  std::string listen = "127.0.0.1:8080";
};

// Each answer's rule, shared by the flags and the questions (issue 34: a bad answer is said when it
// is given, not after the sixth question). Each returns what is wrong, without the flag's name, or
// "" when the value is good.
//
// The repository: owner/name, or a pasted GitHub URL of it — https://github.com/o/r, …/o/r.git,
// …/o/r/issues/5, git@github.com:o/r.git — which becomes "o/r" in *repo. Empty means GitHub off.
std::string InitRepoProblem(std::string* repo);
// Issue 37: several repositories, split at commas and blanks, each checked as InitRepoProblem
// checks one (the problem names which: "the 2nd repository …"). Repeats (GitHub's names ignore
// case) are dropped. Sets *repos and rewrites *list as "o/r, o/s"; an empty list is GitHub off.
std::string InitReposProblem(std::string* list, std::vector<std::string>* repos);
// A variable's NAME (letters, digits, _; not starting with a digit), and not a pasted secret.
std::string InitVariableProblem(const std::string& name);
// An http(s) URL without blanks.
std::string InitUrlProblem(const std::string& url);

// Why `login` cannot be a GitHub login, or "": GitHub logins are 1–39 characters of A–Z, a–z,
// 0–9 and '-', not starting with a hyphen. Says which rule it breaks — empty, not UTF-8, the first
// character GitHub does not allow, too long, a leading hyphen — quoting at most 40 characters.
std::string GitHubLoginProblem(const std::string& login);
// The logins in `list` ("alice, @bob carol"): split at commas and blanks, a leading '@' dropped,
// repeats removed, sorted into *logins. The problem names which login is wrong ("the 2nd login
// \"王五\" has \"王\", …"); an empty list is no problem here (the caller decides).
std::string ParsePeopleList(const std::string& list, std::vector<std::string>* logins);

// What is wrong with `a` before anything is written ("" when nothing): a repository that is not
// owner/name (a GitHub URL is made owner/name in a->repo first), a variable name that is not one,
// a URL that is not http(s), an empty model. Prefixed with the flag that sets it.
std::string InitAnswersProblem(InitAnswers* a);

// Asks `question` on `out` until `check` accepts the answer — `check` may rewrite it (a URL into
// owner/name) and returns its problem or "" — and sets *value to it; Enter keeps *value (shown in
// brackets). A refused answer is said with its problem, then the question comes again. Returns ""
// once *value is set, or the problem when the input ended before an accepted answer (nothing more
// will come; asking again would loop). End of input with nothing refused keeps *value.
std::string AskUntilValid(std::istream& in, std::ostream& out, const std::string& question, std::string* value,
                          const std::function<std::string(std::string*)>& check);

// The people a new policy allows and where they came from.
struct InitPeople {
  std::vector<std::string> logins;  // sorted
  std::string note;                 // "collaborators with write access to o/r, read on …" or why none
};

// What init's last lines say when the policy it wrote lets nobody ask for work on GitHub (issue
// 34): that every @-mention will be ignored, and the key and file that fix it; "" when someone
// may ask or there is no repository.
std::string InitNobodyMayAskWords(const InitAnswers& a, const InitPeople& people, const std::string& policy_path);

// The repository's collaborators with write access (push, maintain or admin), without bots and
// without the token's own account (the agent), when `token` may list them; otherwise none, and
// the note says why. Never fails: a policy without people is still a valid start.
InitPeople InitPeopleFromGitHub(const InitAnswers& a, const std::string& token, HttpClient& http);

// superagent.yaml for `a`, commented, naming policy.yaml beside it.
std::string InitConfigYaml(const InitAnswers& a);
// policy.yaml in observe mode, allowing `people` on GitHub when there is a repository.
std::string InitPolicyYaml(const InitAnswers& a, const InitPeople& people);

}  // namespace superagent::app
