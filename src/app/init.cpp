#include "app/init.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <istream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "app/config.h"
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

bool AsciiAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// The config's rule (IsEmptyOrRepoName, app/config.cpp): owners are letters, digits and '-';
// names add '.' and '_'. The first character that breaks it, or "" when `part` keeps it.
std::string BadCharacter(const std::string& part, const char* extra) {
  for (std::size_t i = 0; i < part.size();) {
    const unsigned char c = static_cast<unsigned char>(part[i]);
    if (AsciiAlnum(static_cast<char>(c)) || (c != 0 && std::strchr(extra, c) != nullptr)) {
      ++i;
      continue;
    }
    const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    return text::Repair(part.substr(i, len));
  }
  return "";
}

// "1st", "2nd", "3rd", "4th", "11th", "22nd".
std::string Ordinal(std::size_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

// `s` with the comma and blank a Chinese input method types ("，", "、", the ideographic space)
// as their ASCII selves: a list typed in Chinese splits as one typed in English.
std::string AsciiSeparators(std::string s) {
  for (const auto& [wide, ascii] : {std::pair<std::string, std::string>{"\xEF\xBC\x8C", ","},
                                    {"\xE3\x80\x81", ","},
                                    {"\xE3\x80\x80", " "}})
    for (std::size_t at = s.find(wide); at != std::string::npos; at = s.find(wide, at)) s.replace(at, wide.size(), ascii);
  return s;
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

std::string InitRepoProblem(std::string* repo) {
  std::string r = text::Trim(*repo);
  if (r.empty()) {
    repo->clear();
    return "";
  }
  // A pasted URL names the repository by its first two path components, whatever follows.
  std::string host, path;
  if (const std::size_t scheme = r.find("://"); scheme != std::string::npos && scheme < 10) {
    const std::string rest = r.substr(scheme + 3);
    const std::size_t slash = rest.find('/');
    host = rest.substr(0, slash);
    path = slash == std::string::npos ? "" : rest.substr(slash + 1);
  } else if (r.rfind("git@", 0) == 0 && r.find(':') != std::string::npos) {
    host = r.substr(4, r.find(':') - 4);
    path = r.substr(r.find(':') + 1);
  } else if (r.rfind("github.com/", 0) == 0 || r.rfind("www.github.com/", 0) == 0) {
    host = r.substr(0, r.find('/'));
    path = r.substr(r.find('/') + 1);
  }
  if (!host.empty() || r.find("://") != std::string::npos) {
    if (const std::size_t at = host.rfind('@'); at != std::string::npos) host = host.substr(at + 1);  // user@
    if (const std::size_t colon = host.find(':'); colon != std::string::npos) host = host.substr(0, colon);  // :port
    host = text::AsciiLower(host);
    if (host != "github.com" && host != "www.github.com")
      return "expected owner/name or a github.com URL, got " + Quoted(text::Cut(r, 100)) +
             ": for GitHub Enterprise give owner/name and --github-api-url https://" + text::Cut(host, 100) + "/api/v3";
    path = path.substr(0, path.find_first_of("?#"));
    const std::size_t first = path.find('/');
    const std::size_t second = first == std::string::npos ? std::string::npos : path.find('/', first + 1);
    std::string name = first == std::string::npos ? "" : path.substr(first + 1, second - first - 1);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".git") == 0) name.resize(name.size() - 4);
    if (first == std::string::npos || first == 0 || name.empty())
      return "expected owner/name or the repository's GitHub URL, got " + Quoted(text::Cut(r, 100)) +
             ": the URL names no repository (https://github.com/OWNER/NAME)";
    r = path.substr(0, first) + "/" + name;
  }
  const std::size_t slash = r.find('/');
  const std::string shown = Quoted(text::Cut(r, 100));
  if (slash == std::string::npos || slash == 0 || slash + 1 == r.size() || r.find('/', slash + 1) != std::string::npos)
    return "expected owner/name (e.g. octo-org/widgets) or the repository's GitHub URL, got " + shown;
  const std::string owner = r.substr(0, slash), name = r.substr(slash + 1);
  if (std::string bad = BadCharacter(owner, "-"); !bad.empty())
    return "expected owner/name, got " + shown + ": the owner has " + Quoted(bad) +
           ", which GitHub does not allow (letters, digits and hyphens)";
  if (std::string bad = BadCharacter(name, "-._"); !bad.empty())
    return "expected owner/name, got " + shown + ": the name has " + Quoted(bad) +
           ", which GitHub does not allow (letters, digits, '-', '.', '_')";
  if (owner.size() > 39 || name.size() > 100 || name == "." || name == "..")
    return "expected owner/name, got " + shown + ": GitHub owners have at most 39 characters, names at most 100";
  *repo = r;
  return "";
}

std::string InitReposProblem(std::string* list, std::vector<std::string>* repos) {
  std::vector<std::string> words;
  std::string word;
  for (char c : *list + ",") {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  std::vector<std::string> found;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string one = words[i];
    // github.repos: installation is a GitHub App's, which init does not set up (it writes a token's).
    if (text::AsciiLower(one) == "installation")
      return "installation is a GitHub App's list of repositories, and init sets up a token: name the "
             "repositories here, or write github.auth: app and github.repos: installation by hand "
             "(docs/007-operations.md, \"GitHub App\")";
    // One repository's problem is said as it always was; among several, which one.
    if (std::string p = InitRepoProblem(&one); !p.empty())
      return words.size() == 1 ? p : "the " + Ordinal(i + 1) + " repository: " + p;
    const bool seen = std::any_of(found.begin(), found.end(),
                                  [&](const std::string& f) { return text::AsciiLower(f) == text::AsciiLower(one); });
    if (!seen) found.push_back(one);
  }
  *repos = found;
  *list = text::Join(found, ", ");
  return "";
}

std::string InitVariableProblem(const std::string& name) {
  if (LooksLikeSecret(name))
    return "that looks like a secret itself; give the NAME of the variable that will hold it (e.g. GITHUB_TOKEN), "
           "never the secret";
  if (!VariableName(name))
    return "expected an environment variable's NAME (letters, digits, _), got " + Quoted(text::Cut(name, 100));
  return "";
}

std::string InitUrlProblem(const std::string& url) {
  if (!HttpUrl(url)) return "expected an http(s) URL, got " + Quoted(text::Cut(url, 100));
  return "";
}

std::string GitHubLoginProblem(const std::string& login) {
  const std::string shown = Quoted(text::Cut(login, 40));
  if (login.empty()) return "it is empty";
  if (!text::IsValid(login)) return shown + " is not valid UTF-8 text";
  if (std::string bad = BadCharacter(login, "-"); !bad.empty())
    return shown + " has " + Quoted(bad) + ", which GitHub logins cannot have (only letters A-Z, digits and hyphens)";
  if (login.size() > 39)
    return shown + " has " + std::to_string(login.size()) + " characters; GitHub logins have at most 39";
  if (login.front() == '-') return shown + " starts with a hyphen, which GitHub logins cannot";
  return "";
}

std::string ParsePeopleList(const std::string& list, std::vector<std::string>* logins) {
  logins->clear();
  const std::string all = AsciiSeparators(list);
  if (text::Trim(all).empty()) return "";
  std::vector<std::string> found;
  std::size_t start = 0;
  for (bool last = false; !last;) {
    std::size_t comma = all.find(',', start);
    last = comma == std::string::npos;
    const std::string piece = all.substr(start, last ? std::string::npos : comma - start);
    start = comma + 1;
    if (text::Trim(piece).empty())
      return "the " + Ordinal(found.size() + 1) + " login is empty (two commas in a row, or one at an end?)";
    // Blanks separate too: "alice bob" is two logins.
    std::size_t at = 0;
    while (at < piece.size()) {
      at = piece.find_first_not_of(" \t\r\n", at);
      if (at == std::string::npos) break;
      std::size_t end = piece.find_first_of(" \t\r\n", at);
      std::string login = piece.substr(at, end == std::string::npos ? std::string::npos : end - at);
      at = end == std::string::npos ? piece.size() : end;
      if (login.size() > 1 && login.front() == '@') login.erase(0, 1);  // as people write it in a mention
      found.push_back(login);
      if (std::string p = GitHubLoginProblem(login); !p.empty())
        return "the " + Ordinal(found.size()) + " login is not a GitHub login: " + p;
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  *logins = std::move(found);
  return "";
}

std::string InitAnswersProblem(InitAnswers* a) {
  if (std::string p = InitReposProblem(&a->repo, &a->repos); !p.empty()) return "--repo: " + p;
  a->repo = a->repos.empty() ? "" : a->repos.front();
  for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--github-token-env", &a->github_token_env},
                                    {"--model-key-env", &a->model_key_env}})
    if (std::string p = InitVariableProblem(*value); !p.empty()) return std::string(flag) + ": " + p;
  for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--github-api-url", &a->github_api_url},
                                    {"--model-url", &a->model_url}})
    if (std::string p = InitUrlProblem(*value); !p.empty()) return std::string(flag) + ": " + p;
  if (a->assessment_model.empty() || a->assessment_model.size() > 200) return "--model: a model name is required";
  if (a->execution_model.size() > 200) return "--execution-model: too long";
  std::string host;
  int port = 0;
  if (!SplitHostPort(a->listen, &host, &port)) return "--listen: expected host:port, got " + Quoted(a->listen);
  if (a->data_dir.empty()) return "--data-dir: a directory is required";
  if (a->git_remote.size() > 2048 || a->git_remote.find_first_of("\n\r") != std::string::npos)
    return "--git-remote: expected a URL or a path";
  return "";
}

std::string AskUntilValid(std::istream& in, std::ostream& out, const std::string& question, std::string* value,
                          const std::function<std::string(std::string*)>& check) {
  std::string refused;
  while (true) {
    out << question << " [" << *value << "]: " << std::flush;
    std::string line;
    if (!std::getline(in, line)) {
      out << "\n" << std::flush;
      if (!refused.empty()) return refused;
      std::string kept = *value;
      return check(&kept);  // the default stands, if it is good
    }
    line = text::Trim(line);
    std::string answer = line.empty() ? *value : line;
    refused = check(&answer);
    if (refused.empty()) {
      *value = answer;
      return "";
    }
    out << "  not taken: " << refused << "\n";
  }
}

namespace {

// The repositories `a` names: every one once checked, else the one it was given (a caller that
// built the answers by hand).
std::vector<std::string> RepositoriesOf(const InitAnswers& a) {
  if (!a.repos.empty()) return a.repos;
  if (!a.repo.empty()) return {a.repo};
  return {};
}

}  // namespace

std::string InitNobodyMayAskWords(const InitAnswers& a, const InitPeople& people, const std::string& policy_path) {
  if (a.repo.empty() || !people.logins.empty()) return "";
  return "Nobody may ask for work yet: sources.github.people in " + policy_path +
         " is empty, so every @-mention of the agent on " + text::Join(RepositoriesOf(a), ", ") +
         " will be ignored. Add the GitHub logins of the people who may ask there (people: [alice, bob]; the daemon "
         "reloads the file when it is saved), or run init again with --people alice,bob --force.";
}

InitPeople InitPeopleFromGitHub(const InitAnswers& a, const std::string& token, HttpClient& http) {
  InitPeople out;
  const std::vector<std::string> repos = RepositoriesOf(a);
  const std::string named = text::Join(repos, ", ");
  if (repos.empty()) {
    out.note = "was given no repository";
    return out;
  }
  if (token.empty()) {
    out.note = "found the variable " + a.github_token_env + " unset, so it could not read the collaborators of " + named;
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
  // The writers of every repository (issue 37): whoever may push to one may ask the agent.
  std::vector<std::string> unread, why;
  bool capped = false;
  for (const std::string& repo : repos) {
    HttpResponse r = Get(http, base + "/repos/" + repo + "/collaborators?affiliation=all&per_page=100", token);
    json list = r.status == 200 ? json::parse(r.body, nullptr, false) : json();
    if (!list.is_array()) {
      unread.push_back(repo);
      why.push_back(r.status == 0 ? r.error : r.status == 200 ? "an answer that is not a list" : "HTTP " + std::to_string(r.status));
      continue;
    }
    capped = capped || list.size() >= 100;
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
  }
  std::sort(out.logins.begin(), out.logins.end());
  out.logins.erase(std::unique(out.logins.begin(), out.logins.end()), out.logins.end());
  if (unread.size() == repos.size()) {
    out.note = "could not list the collaborators of " + named + " with the token (" + text::Join(why, "; ") +
               "; it needs push access)";
    return out;
  }
  out.note = "allowed the collaborators with write access to " + named + " when it ran" +
             (capped ? " (the first 100 of each only)" : "") +
             (unread.empty() ? "" : "; could not list those of " + text::Join(unread, ", "));
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
  y += "github:\n";
  if (const std::vector<std::string> repos = RepositoriesOf(a); repos.size() > 1) {
    y += "  # The repositories the agent works on; the first is home to what is asked in a chat.\n"
         "  repos:\n";
    for (const std::string& r : repos) y += "    - " + Quoted(r) + "\n";
  } else {
    y += "  # The repository the agent works on (github.repos lists several); \"\" turns GitHub off.\n";
    y += "  repo: " + Quoted(a.repo) + "\n";
  }
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
  if (people.logins.empty())
    y += "    # Until a login is listed here NOBODY may ask for work: every @-mention of the agent is\n"
         "    # ignored. Add your team's logins, e.g. [alice, bob]; the daemon reloads this file on save.\n";
  std::string list;
  for (const std::string& l : people.logins) list += (list.empty() ? "" : ", ") + Quoted(l);
  y += "    people: [" + list + "]\n";
  return y;
}

}  // namespace superagent::app
