#include "app/init.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "superagent/host_port.h"
#include "superagent/text.h"

namespace superagent::app {

namespace {

using nlohmann::json;

// A YAML double-quoted scalar: JSON's string syntax is valid YAML, escapes included.
std::string Quoted(const std::string& s) { return json(text::Repair(s)).dump(); }

bool VariableName(const std::string& s) {
  if (s.empty() || s.size() > 128 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool RepoName(const std::string& s) {
  const std::size_t slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() || s.find('/', slash + 1) != std::string::npos)
    return false;
  return s.size() <= 140 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/';
         });
}

bool HttpUrl(const std::string& s) {
  return (s.rfind("https://", 0) == 0 || s.rfind("http://", 0) == 0) && s.size() > 8 && s.size() <= 2048 &&
         std::none_of(s.begin(), s.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

HttpResponse Get(HttpClient& http, const std::string& url, const std::string& token) {
  HttpRequest r;
  r.url = url;
  r.headers = {{"Accept", "application/vnd.github+json"},
               {"Authorization", "Bearer " + token},
               {"X-GitHub-Api-Version", "2022-11-28"}};
  return http.Send(r);
}

// A note that goes into a YAML comment: one line, whatever an error message held.
std::string OneLine(const std::string& s) {
  std::string out = text::Cut(text::Repair(s), 300);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return out;
}

}  // namespace

std::string InitAnswersProblem(const InitAnswers& a) {
  if (!a.repo.empty() && !RepoName(a.repo)) return "--repo: expected owner/name, got " + Quoted(a.repo);
  for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--github-token-env", &a.github_token_env},
                                    {"--model-key-env", &a.model_key_env}})
    if (!VariableName(*value)) return std::string(flag) + ": expected an environment variable's NAME (letters, digits, _), got " + Quoted(*value);
  for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--github-api-url", &a.github_api_url},
                                    {"--model-url", &a.model_url}})
    if (!HttpUrl(*value)) return std::string(flag) + ": expected an http(s) URL, got " + Quoted(*value);
  if (a.assessment_model.empty() || a.assessment_model.size() > 200) return "--model: a model name is required";
  if (a.execution_model.size() > 200) return "--execution-model: too long";
  std::string host;
  int port = 0;
  if (!SplitHostPort(a.listen, &host, &port)) return "--listen: expected host:port, got " + Quoted(a.listen);
  if (a.data_dir.empty()) return "--data-dir: a directory is required";
  if (a.git_remote.size() > 2048 || a.git_remote.find_first_of("\n\r") != std::string::npos)
    return "--git-remote: expected a URL or a path";
  return "";
}

InitPeople InitPeopleFromGitHub(const InitAnswers& a, const std::string& token, HttpClient& http) {
  InitPeople out;
  if (a.repo.empty()) {
    out.note = "was given no repository";
    return out;
  }
  if (token.empty()) {
    out.note = "found the variable " + a.github_token_env + " unset, so it could not read the collaborators of " + a.repo;
    return out;
  }
  std::string base = a.github_api_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string self;
  HttpResponse me = Get(http, base + "/user", token);
  if (me.status == 200) {
    json u = json::parse(me.body, nullptr, false);
    if (u.is_object() && u.contains("login") && u["login"].is_string()) self = u["login"].get<std::string>();
  }
  HttpResponse r = Get(http, base + "/repos/" + a.repo + "/collaborators?affiliation=all&per_page=100", token);
  if (r.status != 200) {
    out.note = "could not list the collaborators of " + a.repo + " with the token (" +
               (r.status == 0 ? r.error : "HTTP " + std::to_string(r.status)) + "; it needs push access)";
    return out;
  }
  json list = json::parse(r.body, nullptr, false);
  if (!list.is_array()) {
    out.note = "got something other than a list of the collaborators of " + a.repo;
    return out;
  }
  for (const json& c : list) {
    if (!c.is_object() || !c.contains("login") || !c["login"].is_string()) continue;
    const std::string login = c["login"].get<std::string>();
    // GitHub's logins are letters, digits and hyphens; anything else is not a person to allow.
    const bool plain = std::all_of(login.begin(), login.end(),
                                   [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-'; });
    if (login.empty() || login.size() > 39 || !plain || login == self) continue;
    if (c.contains("type") && c["type"] == "Bot") continue;
    const json perms = c.contains("permissions") && c["permissions"].is_object() ? c["permissions"] : json::object();
    auto has = [&](const char* k) { return perms.contains(k) && perms[k] == true; };
    if (!has("push") && !has("maintain") && !has("admin")) continue;
    out.logins.push_back(login);
  }
  std::sort(out.logins.begin(), out.logins.end());
  out.logins.erase(std::unique(out.logins.begin(), out.logins.end()), out.logins.end());
  out.note = "allowed the collaborators with write access to " + a.repo + " when it ran" +
             (list.size() >= 100 ? " (the first 100 only)" : "");
  return out;
}

std::string InitConfigYaml(const InitAnswers& a) {
  std::string y;
  y += "# superagent.yaml, written by `superagent init`.\n"
       "#\n"
       "# Keys not here take their defaults; config/superagent.example.yaml (installed as\n"
       "# /usr/share/doc/superagent/superagent.example.yaml) lists every key with what it does.\n"
       "# No secret goes in this file: a key ending in _env holds the NAME of the environment variable\n"
       "# that holds the secret (for the service: /etc/superagent/secrets.env).\n"
       "# Check it with `superagent check --config FILE`, the deployment with `superagent doctor --config FILE`.\n"
       "\n"
       "# The SQLite database, worktrees and transcripts; relative to this file.\n";
  y += "data_dir: " + Quoted(a.data_dir) + "\n";
  y += "# Who and what the agent takes work from; reloaded when saved.\n"
       "policy_file: policy.yaml\n"
       "\n"
       "panel:\n"
       "  # Keep it on loopback; `superagent panel-url --config FILE` prints the login link.\n";
  y += "  listen: " + Quoted(a.listen) + "\n\n";
  y += "github:\n"
       "  # The one repository the agent works on; \"\" turns GitHub off.\n";
  y += "  repo: " + Quoted(a.repo) + "\n";
  y += "  api_url: " + Quoted(a.github_api_url) + "\n";
  y += "  # The variable holding the token the agent acts as (scopes: repo, notifications).\n";
  y += "  token_env: " + Quoted(a.github_token_env) + "\n\n";
  if (!a.git_remote.empty()) {
    y += "execution:\n"
         "  # Where code comes from and branches go, instead of the repository's GitHub clone URL.\n";
    y += "  git_remote: " + Quoted(a.git_remote) + "\n\n";
  }
  y += "llm:\n"
       "  # An OpenAI-compatible endpoint, the model that judges messages, and the one that works.\n";
  y += "  base_url: " + Quoted(a.model_url) + "\n";
  y += "  api_key_env: " + Quoted(a.model_key_env) + "\n";
  y += "  assessment_model: " + Quoted(a.assessment_model) + "\n";
  y += "  # \"\": the assessment model.\n";
  y += "  execution_model: " + Quoted(a.execution_model) + "\n";
  return y;
}

std::string InitPolicyYaml(const InitAnswers& a, const InitPeople& people) {
  std::string y;
  y += "# policy.yaml, written by `superagent init`. config/policy.example.yaml explains every key.\n"
       "#\n"
       "# observe: an allow-listed person's @-mention of the agent is done; work the agent only infers\n"
       "# is assessed and recorded as \"would accept\", never done. Read those records in the panel\n"
       "# before switching to auto. `superagent gate --policy policy.yaml --trigger msg.json` shows\n"
       "# what this file gives one message.\n"
       "mode: observe\n";
  if (a.repo.empty()) return y;
  y += "\nsources:\n"
       "  github:\n"
       "    # The GitHub logins whose @-mention of the agent is a request for work.\n";
  y += "    # init " + OneLine(people.note) + ".\n";
  if (people.logins.empty()) y += "    # Add your team's logins, e.g. [alice, bob].\n";
  std::string list;
  for (const std::string& l : people.logins) list += (list.empty() ? "" : ", ") + Quoted(l);
  y += "    people: [" + list + "]\n";
  return y;
}

}  // namespace superagent::app
