// `superagent init`: a new team's two files. What it asks is plain data (InitAnswers); the
// files are rendered from it with every value quoted, so a repository or a model name can never
// change the YAML's shape; the people come from GitHub when the token may list them.
#pragma once

#include <string>
#include <vector>

#include "superagent/http.h"

namespace superagent::app {

struct InitAnswers {
  std::string repo;                                    // "owner/name"; empty: GitHub off
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

// What is wrong with `a` before anything is written ("" when nothing): a repository that is not
// owner/name, a variable name that is not one, a URL that is not http(s), an empty model.
std::string InitAnswersProblem(const InitAnswers& a);

// The people a new policy allows and where they came from.
struct InitPeople {
  std::vector<std::string> logins;  // sorted
  std::string note;                 // "collaborators with write access to o/r, read on …" or why none
};

// The repository's collaborators with write access (push, maintain or admin), without bots and
// without the token's own account (the agent), when `token` may list them; otherwise none, and
// the note says why. Never fails: a policy without people is still a valid start.
InitPeople InitPeopleFromGitHub(const InitAnswers& a, const std::string& token, HttpClient& http);

// superagent.yaml for `a`, commented, naming policy.yaml beside it.
std::string InitConfigYaml(const InitAnswers& a);
// policy.yaml in observe mode, allowing `people` on GitHub when there is a repository.
std::string InitPolicyYaml(const InitAnswers& a, const InitPeople& people);

}  // namespace superagent::app
