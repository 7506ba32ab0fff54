// The doctor's platform checks (doctor_internal.h): GitHub (token, repository, bot, branch
// protection, webhook secret, the App), Feishu (tenant token, bot, chats, realtime path), the
// model endpoint and the coding CLI's model.
#include <map>
#include <string>
#include <vector>

#include "app/doctor_internal.h"
#include "app/wiring.h"
#include "superagent/exec.h"
#include "superagent/gate.h"
#include "superagent/json_read.h"
#include "superagent/text.h"

namespace superagent::app {

using nlohmann::json;
using R = DoctorCheck::Result;

void Doctor::GitHub() {
  const auto& g = config_.github;
  if (!g.On()) {
    for (const char* n : {"github.token", "github.notifications", "github.repo", "github.webhook_secret"})
      Add(n, R::kSkipped, "github.repo is empty: the GitHub Source is disabled");
    return;
  }
  const std::string token = g.auth == "app" ? AppGitHub() : ResolveSecret(g.token_env);
  if (g.installation) {
    if (!token.empty()) InstallationRepositories(token);
  } else if (g.auth == "app") {
    // AppGitHub said what it found; the checks below need the installation token it got.
    if (!token.empty()) {
      HttpResponse r = Get(g.api_url + "/repos/" + g.repo,
                           {{"Authorization", "Bearer " + token}, {"Accept", "application/vnd.github+json"},
                            {"X-GitHub-Api-Version", "2022-11-28"}});
      if (r.ok()) {
        Add("github.repo", R::kOk, g.repo + " readable with the installation token");
        BranchProtection(token, r, true);
      } else {
        Add("github.repo", R::kFailed, "GET /repos/" + g.repo + ": " + Answer(r),
            "install the App on " + g.repo + " (the App's page → Install App → choose the repository)");
      }
      OtherRepositories(token, true);
    }
  } else if (token.empty()) {
    Add("github.token", R::kFailed, "environment variable " + g.token_env + " (github.token_env) is not set",
        "put " + g.token_env + "=<classic token with repo and notifications scopes> in the service's "
        "EnvironmentFile (/etc/superagent/secrets.env)");
    Add("github.notifications", R::kSkipped, "needs the token");
    Add("github.repo", R::kSkipped, "needs the token");
  } else {
    const std::vector<std::pair<std::string, std::string>> auth = {
        {"Authorization", "Bearer " + token}, {"Accept", "application/vnd.github+json"},
        {"X-GitHub-Api-Version", "2022-11-28"}};
    HttpResponse user = Get(g.api_url + "/user", auth);
    std::string login;
    if (user.ok()) {
      json j = json::parse(user.body, nullptr, false);
      if (j.is_object() && j.contains("login") && j["login"].is_string()) login = j["login"];
    }
    if (login.empty()) {
      Add("github.token", R::kFailed, "GET /user: " + Answer(user),
          user.status == 401 ? "the token in " + g.token_env + " is wrong or expired: create a new classic token"
                             : "check github.api_url (" + g.api_url + ") and the network");
      Add("github.notifications", R::kSkipped, "needs an accepted token");
      Add("github.repo", R::kSkipped, "needs an accepted token");
    } else {
      std::string detail = "accepted; the agent acts as " + login;
      if (!g.bot_login.empty() && g.bot_login != login) {
        Add("github.token", R::kFailed, detail + ", but github.bot_login is " + g.bot_login,
            "set github.bot_login to " + login + " (or leave it empty to ask GitHub), or use " + g.bot_login + "'s token");
      } else {
        std::string scopes = user.Header("x-oauth-scopes");
        Add("github.token", R::kOk, detail + (scopes.empty() ? "" : " (scopes: " + scopes + ")"));
      }
      HttpResponse n = Get(g.api_url + "/notifications?per_page=1", auth);
      if (n.ok()) Add("github.notifications", R::kOk, "notifications readable");
      else
        Add("github.notifications", R::kFailed, "GET /notifications: " + Answer(n),
            "mentions are read through notifications, which fine-grained tokens cannot read: use a classic token "
            "with the notifications (and repo) scope");
      HttpResponse r = Get(g.api_url + "/repos/" + g.repo, auth);
      if (r.ok()) {
        Add("github.repo", R::kOk, g.repo + " readable");
        BranchProtection(token, r, false);
      } else
        Add("github.repo", R::kFailed, "GET /repos/" + g.repo + ": " + Answer(r),
            r.status == 404 ? "check github.repo (owner/name) and that " + login + " can see the repository"
                            : "check the token's repo scope");
      OtherRepositories(token, false);
    }
  }
  if (ResolveSecret(g.webhook_secret_env).empty())
    Add("github.webhook_secret", R::kSkipped,
        g.webhook_secret_env + " is not set: webhooks are refused (401) and the agent relies on polling",
        "to receive webhooks, set " + g.webhook_secret_env + " to the secret entered in the repository's webhook settings");
  else
    Add("github.webhook_secret", R::kOk, g.webhook_secret_env + " is set: signed webhooks at /hooks/github are accepted");
}

void Doctor::OtherRepositories(const std::string& token, bool app) {
  // Issue 37: every repository served is read with the same credentials; the first is checked
  // above (with its branch protection), each other one here, by its own line.
  const auto& g = config_.github;
  for (std::size_t i = 1; i < g.repos.size(); ++i) {
    const std::string& repo = g.repos[i];
    HttpResponse r = Get(g.api_url + "/repos/" + repo, {{"Authorization", "Bearer " + token},
                                                        {"Accept", "application/vnd.github+json"},
                                                        {"X-GitHub-Api-Version", "2022-11-28"}});
    const std::string name = "github.repos[" + std::to_string(i) + "]";
    if (r.ok())
      Add(name, R::kOk, repo + " readable" + (app ? " with the installation token" : ""));
    else
      Add(name, R::kFailed, "GET /repos/" + repo + ": " + Answer(r),
          app ? "install the App on " + repo + " too (the App's page → Install App → add the repository)"
              : r.status == 404 ? "check " + repo + " (owner/name) in github.repos and that the token's account can see it"
                                : "check the token's repo scope");
  }
}

void Doctor::InstallationRepositories(const std::string& token) {
  // github.repos: installation: the installation's list is what the daemon serves; each listed
  // repository is readable with its token by GitHub's own word.
  const auto& g = config_.github;
  HttpResponse r = Get(g.api_url + "/installation/repositories?per_page=100",
                       {{"Authorization", "Bearer " + token}, {"Accept", "application/vnd.github+json"},
                        {"X-GitHub-Api-Version", "2022-11-28"}});
  json body = json::parse(r.body, nullptr, false);
  const json* list = r.ok() ? json_read::Find(body, "repositories") : nullptr;
  if (list == nullptr || !list->is_array()) {
    Add("github.repos", R::kFailed,
        "GET /installation/repositories: " + (r.ok() ? std::string("the answer lists no repositories") : Answer(r)),
        "check the installation is not suspended (Settings → Integrations → GitHub Apps)");
    return;
  }
  std::string names;
  int n = 0;
  for (const json& item : *list) {
    const std::string name = json_read::StringOr(item, "full_name");
    if (name.empty()) continue;
    if (++n <= 5) names += (names.empty() ? "" : ", ") + text::Cut(text::Repair(name), 100);
  }
  const std::int64_t total = json_read::IntOr(body, "total_count", n);
  if (total == 0)
    Add("github.repos", R::kFailed, "the installation can see no repository: nothing would be served",
        "the App's installation settings → Repository access: choose the repositories the agent works on");
  else
    Add("github.repos", R::kOk, "the installation serves " + std::to_string(total) + " repositor" +
                                    (total == 1 ? "y" : "ies") + ": " + names + (total > n || n > 5 ? ", …" : ""));
}

void Doctor::BranchProtection(const std::string& token, const HttpResponse& repo, bool app) {
  const auto& g = config_.github;
  const std::string name = "github.branch_protection";
  json info = json::parse(repo.body, nullptr, false);
  const std::string branch = info.is_object() && info.contains("default_branch") && info["default_branch"].is_string()
                                 ? info["default_branch"].get<std::string>()
                                 : "";
  if (branch.empty()) {
    Add(name, R::kSkipped, "GET /repos/" + g.repo + " names no default branch");
    return;
  }
  const std::string shown = text::Cut(text::Repair(branch), 80);
  // Which policy rules let the daemon merge: they decide whether a gap is a warning or a failure.
  std::string auto_merging;
  if (!config_.policy_file.empty()) {
    std::vector<Problem> problems;
    if (auto p = LoadPolicyFile(config_.policy_file, &problems))
      for (const Rule& r : p->rules)
        if (r.enabled && r.auto_merge.enabled) auto_merging += (auto_merging.empty() ? "" : ", ") + r.name;
  }
  const std::string settings = "the repository's Settings → Branches → a rule for " + shown +
                               ": \"Require a pull request before merging\" with at least one approval and "
                               "\"Dismiss stale pull request approvals when new commits are pushed\"";
  auto gap = [&](const std::string& found) {
    if (auto_merging.empty()) {
      Add(name, R::kWarning, found + "; approvals are then the agent's rule, not GitHub's", settings);
    } else {
      Add(name, R::kFailed,
          found + ", and auto-merge is on (rule " + auto_merging +
              "): auto-merge is unsafe without it, since only the daemon's own guard would stand between a change "
              "and " + shown,
          settings + " — or turn auto_merge off in the policy until it is set");
    }
  };
  // Percent-encoded but for '/', which GitHub's branch paths keep.
  std::string path_branch;
  for (unsigned char c : branch) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      path_branch += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      path_branch += buf;
    }
  }
  HttpResponse r = Get(g.api_url + "/repos/" + g.repo + "/branches/" + path_branch + "/protection",
                       {{"Authorization", "Bearer " + token}, {"Accept", "application/vnd.github+json"},
                        {"X-GitHub-Api-Version", "2022-11-28"}});
  // GitHub says "Branch not protected" to a token that may read protection; a bare "Not
  // Found" may also be its answer to one that may not, which tells nothing.
  const json said = json::parse(r.body, nullptr, false);
  const bool unprotected = r.status == 404 && said.is_object() && said.contains("message") &&
                           said["message"] == json("Branch not protected");
  if (unprotected) {
    gap(shown + " is not protected (GitHub: " + Answer(r) + ")");
    return;
  }
  if (r.status == 401 || r.status == 403 || r.status == 404) {
    Add(name, R::kWarning,
        "cannot tell whether " + shown + " is protected: the token may not read its protection (" + Answer(r) + ")" +
            (auto_merging.empty() ? "" : "; auto-merge is on (rule " + auto_merging + "): check it by hand"),
        (app ? "grant the App \"Administration: read\" to have doctor check it, or check "
             : "a token with admin rights on the repository can check it; or check ") +
            settings);
    return;
  }
  json j = r.ok() ? json::parse(r.body, nullptr, false) : json();
  if (!j.is_object()) {
    Add(name, R::kWarning,
        "cannot tell whether " + shown + " is protected: GET …/branches/" + shown + "/protection: " +
            (r.ok() ? "the answer is not an object" : Answer(r)),
        "check " + settings);
    return;
  }
  auto reviews = j.find("required_pull_request_reviews");
  if (reviews == j.end() || !reviews->is_object()) {
    gap(shown + " is protected but requires no pull request review");
    return;
  }
  auto count = reviews->find("required_approving_review_count");
  if (count != reviews->end() && count->is_number_integer() && count->get<std::int64_t>() < 1) {
    gap(shown + " is protected but requires no approving review");
    return;
  }
  auto stale = reviews->find("dismiss_stale_reviews");
  if (stale == reviews->end() || *stale != json(true)) {
    gap(shown + " requires reviews but keeps approvals after a new push (dismiss_stale_reviews is " +
        (stale == reviews->end() ? std::string("missing")
                                  : text::Cut(stale->dump(-1, ' ', false, json::error_handler_t::replace), 40)) +
        ")");
    return;
  }
  Add(name, R::kOk, shown + " requires an approving review and dismisses stale approvals on a new push");
}

std::string Doctor::AppGitHub() {
  const auto& g = config_.github;
  Add("github.notifications", R::kSkipped,
      "a GitHub App has no notifications: mentions arrive by webhook and by reading the repository's "
      "issues and comments");
  const TimeMs now = SystemClock()->NowMs();
  auto options = GitHubAppOptionsFor(config_, now);
  if (!options.ok()) {
    Add("github.app", R::kFailed, options.status().message(),
        "put the App's .pem in the service's EnvironmentFile (/etc/superagent/secrets.env) as " +
            g.app_private_key_env + "=\"<the whole .pem, quoted over its lines>\", and github.app_id from the "
            "App's settings page (docs/007-operations.md, \"GitHub App\")");
    for (const char* n : {"github.installation", "github.token", "github.repo"}) Add(n, R::kSkipped, "needs the App's key");
    return "";
  }
  github::AppAuthOptions a = *options;
  auto facts = github::ReadApp(&http_, a, now);
  if (!facts.ok()) {
    Add("github.app", R::kFailed, facts.status().message(),
        "check github.app_id (" + g.app_id + ") and that " + g.app_private_key_env +
            " holds that App's current private key (the App's settings → Private keys)");
    for (const char* n : {"github.installation", "github.token", "github.repo"}) Add(n, R::kSkipped, "needs the App");
    return "";
  }
  const std::string login = github::AppBotLogin(facts->slug);
  if (!g.bot_login.empty() && g.bot_login != login)
    Add("github.app", R::kFailed, "the App is " + facts->slug + ", so the agent writes as " + login +
                                      ", but github.bot_login is " + g.bot_login,
        "leave github.bot_login empty with github.auth: app");
  else
    Add("github.app", R::kOk, "App " + facts->slug + " (" + text::Cut(text::Repair(facts->name), 80) +
                                  "); the agent writes as " + login + " and is mentioned as @" + facts->slug);
  auto inst = github::ReadInstallation(&http_, a, g.repo, now);
  const std::string on = g.installation ? std::string("(github.repos: installation)") : "on " + g.repo;
  if (!inst.ok()) {
    Add("github.installation", R::kFailed, inst.status().message(),
        g.installation ? "check github.app_installation_id: the number at the end of the installation's settings page URL"
                       : "install the App on " + g.repo + ": the App's page → Install App → only select repositories → " + g.repo);
    for (const char* n : {"github.token", "github.repo"}) Add(n, R::kSkipped, "needs the installation");
    return "";
  }
  if (a.installation_id > 0 && a.installation_id != inst->id) {
    Add("github.installation", R::kFailed,
        "github.app_installation_id is " + std::to_string(a.installation_id) + " but the App's installation on " +
            g.repo + " is " + std::to_string(inst->id),
        "set github.app_installation_id to " + std::to_string(inst->id) + " or leave it empty");
    for (const char* n : {"github.token", "github.repo"}) Add(n, R::kSkipped, "needs the right installation");
    return "";
  }
  std::vector<std::string> missing = github::MissingAppPermissions(inst->permissions);
  std::string events;
  for (const char* e : {"issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment",
                        "check_run", "workflow_run"})
    if (std::find(inst->events.begin(), inst->events.end(), e) == inst->events.end())
      events += std::string(events.empty() ? "" : ", ") + e;
  std::string lacks;
  for (const std::string& m : missing) lacks += (lacks.empty() ? "" : ", ") + m;
  if (!missing.empty())
    Add("github.installation", R::kFailed,
        "installation " + std::to_string(inst->id) + " " + on + " lacks the permissions " + lacks,
        "the App's settings → Permissions & events: grant " + lacks +
            ", then accept the new permissions on the installation (Settings → Integrations → GitHub Apps)");
  else
    Add("github.installation", R::kOk,
        "installation " + std::to_string(inst->id) + " " + on + " has the permissions the daemon needs" +
            (events.empty() ? "" : "; not subscribed to " + events + " (polling still catches them, later)"));
  a.installation_id = inst->id;
  github::InstallationTokens tokens(&http_, SystemClock(), a);
  auto token = tokens.Token();
  if (!token.ok()) {
    Add("github.token", R::kFailed, token.status().message(),
        "check the installation is not suspended (Settings → Integrations → GitHub Apps)");
    Add("github.repo", R::kSkipped, "needs an installation token");
    return "";
  }
  Add("github.token", R::kOk, "installation token issued (valid an hour; the daemon renews it)");
  return *token;
}

void Doctor::Feishu() {
  const auto& f = config_.feishu;
  if (!f.enabled) {
    Add("feishu", R::kSkipped, "no Feishu configured");
    return;
  }
  const std::string env_file = " in the service's EnvironmentFile (/etc/superagent/secrets.env)";
  feishu::ClientOptions co;
  co.api_url = f.api_url;
  co.app_id = ResolveSecret(f.app_id_env);
  co.app_secret = ResolveSecret(f.app_secret_env);
  std::string unset;
  if (co.app_id.empty()) unset = f.app_id_env + " (feishu.app_id_env)";
  if (co.app_secret.empty()) unset += (unset.empty() ? "" : " and ") + f.app_secret_env + " (feishu.app_secret_env)";
  if (!unset.empty()) {
    const bool both = co.app_id.empty() && co.app_secret.empty();
    Add("feishu.token", R::kFailed,
        std::string(both ? "environment variables " : "environment variable ") + unset + (both ? " are" : " is") +
            " not set",
        "put " + f.app_id_env + "=cli_… and " + f.app_secret_env +
            "=<App Secret> (the app's Credentials & Basic Info page)" + env_file);
    FeishuSkipAfterToken("needs the app credentials");
    return;
  }
  feishu::Client client(&http_, SystemClock(), co);
  auto token = client.TenantToken();
  if (!token.ok()) {
    Add("feishu.token", R::kFailed, token.status().message(),
        "check that " + f.app_id_env + " and " + f.app_secret_env +
            " hold the app id and App Secret of the app's Credentials & Basic Info page, and that feishu.api_url (" +
            f.api_url + ") is the app's platform (Feishu https://open.feishu.cn, Lark https://open.larksuite.com)");
    FeishuSkipAfterToken("needs a tenant token");
    return;
  }
  Add("feishu.token", R::kOk, "tenant access token obtained for app " + co.app_id);
  FeishuBot(client);
  FeishuChats(client);
  FeishuRealtime(client);
}

void Doctor::FeishuSkipAfterToken(const std::string& why) {
  for (const char* n : {"feishu.bot", "feishu.chats", "feishu.realtime"}) Add(n, R::kSkipped, why);
}

void Doctor::FeishuBot(feishu::Client& client) {
  const std::string fix = "enable the app's Bot capability (Features > Bot) and publish a version of the app";
  feishu::ApiResult r = client.Call("GET", "/open-apis/bot/v3/info");
  // bot/v3/info answers with `bot` at the top level, not under data.
  const json bot = r.body.is_object() && r.body.contains("bot") && r.body["bot"].is_object() ? r.body["bot"] : json();
  const std::string open_id = bot.is_object() ? bot.value("open_id", "") : "";
  if (!r.ok() || open_id.empty()) {
    Add("feishu.bot", R::kFailed, r.ok() ? "GET /open-apis/bot/v3/info: answer has no bot.open_id" : r.error, fix);
    return;
  }
  const std::string name = bot.value("app_name", "");
  const std::string who = (name.empty() ? "the bot" : name) + " (open_id " + open_id + ")";
  // activate_status 2 = enabled; other values mean the bot cannot be reached in chats.
  if (bot.contains("activate_status") && bot["activate_status"].is_number_integer() && bot["activate_status"] != 2) {
    Add("feishu.bot", R::kFailed,
        who + " is not activated (activate_status " + std::to_string(bot["activate_status"].get<int>()) + ")", fix);
    return;
  }
  Add("feishu.bot", R::kOk, who + "; mentions are recognised by this open_id");
}

void Doctor::FeishuChats(feishu::Client& client) {
  std::vector<std::string> chats;
  if (!config_.policy_file.empty()) {
    std::vector<Problem> problems;
    auto p = LoadPolicyFile(config_.policy_file, &problems);
    if (!p) {
      Add("feishu.chats", R::kSkipped, "needs a valid policy (see the policy check)");
      return;
    }
    if (auto src = p->sources.find("feishu"); src != p->sources.end())
      for (const auto& [scope, row] : src->second.scopes)
        if (scope.rfind("chat:", 0) == 0 && scope.size() > 5) chats.push_back(scope.substr(5));
  }
  if (chats.empty()) {
    Add("feishu.chats", R::kSkipped,
        "the policy configures no chat:<chat_id> rows: no group is backfilled; group messages reach the agent "
        "only when they @-mention it",
        "to read a group, add \"chat:<chat_id>\" under sources.feishu.scopes in the policy");
    return;
  }
  const std::string now_s = std::to_string(SystemClock()->NowMs() / 1000);
  for (const std::string& chat : chats) {
    feishu::ApiResult r = client.Call("GET", "/open-apis/im/v1/messages?container_id_type=chat&container_id=" +
                                                 feishu::QueryValue(chat) + "&start_time=" + now_s + "&page_size=1");
    if (r.ok()) Add("feishu.chat:" + chat, R::kOk, "history readable");
    else
      Add("feishu.chat:" + chat, R::kFailed, r.error,
          "add the bot to chat " + chat +
              " and give the app the message history scope (im:message.history:readonly) and \"read all group "
              "messages\", then publish a version of the app; or check the chat id in the policy");
  }
}

void Doctor::FeishuRealtime(feishu::Client& client) {
  const auto& f = config_.feishu;
  if (f.realtime == "callback") {
    if (ResolveSecret(f.encrypt_key_env).empty())
      Add("feishu.realtime", R::kFailed,
          f.encrypt_key_env + " (feishu.encrypt_key_env) is not set: every callback at /hooks/feishu is refused (401)",
          "set " + f.encrypt_key_env + " to the Encrypt Key of the app's Event Subscriptions page, or use "
          "feishu.realtime: long_connection (needs no public URL)");
    else
      Add("feishu.realtime", R::kOk,
          "callbacks at /hooks/feishu are decrypted and verified with " + f.encrypt_key_env);
    return;
  }
  // Asking for an endpoint opens nothing; the URL it returns (a ticket) is not printed.
  feishu::ApiResult r = client.WsEndpoint();
  const json& data = r.Data();
  if (r.ok() && data.contains("URL") && data["URL"].is_string() && !data["URL"].get<std::string>().empty()) {
    Add("feishu.realtime", R::kOk, "long connection endpoint answers");
    return;
  }
  std::string fix;
  switch (r.code) {
    case 514: fix = "Feishu refused the app credentials for the long connection: check the app id and secret"; break;
    case 403: fix = "the long connection is for self-built apps: check the app type, or use feishu.realtime: callback"; break;
    case 1000040350: fix = "Feishu allows 50 long connections per app: stop other clients of this app"; break;
    default:
      fix = r.http_status == 0 ? "check feishu.api_url (" + f.api_url + ") and outgoing HTTPS"
                               : "Feishu answered with an error; try again, and check the app's event settings";
  }
  Add("feishu.realtime", R::kFailed, r.ok() ? "POST /callback/ws/endpoint: answer has no URL" : r.error, fix);
}

void Doctor::Model() {
  const auto& l = config_.llm;
  const std::string key = ResolveSecret(l.api_key_env);
  if (key.empty()) {
    Add("model", R::kSkipped, l.api_key_env + " (llm.api_key_env) is not set: explicit requests are accepted "
                              "without a model; inferred work is never assessed",
        "to enable assessments, put " + l.api_key_env + "=<key> in the service's EnvironmentFile");
    return;
  }
  std::string base = l.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  HttpResponse r = Get(base + "/models", {{"Authorization", "Bearer " + key}});
  json j = r.ok() ? json::parse(r.body, nullptr, false) : json();
  if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) {
    Add("model", R::kFailed, "GET " + base + "/models: " + (r.ok() ? "not an OpenAI-style model list" : Answer(r)),
        r.status == 401 ? "the key in " + l.api_key_env + " is refused: check it"
                        : "check llm.base_url (an OpenAI-compatible endpoint, e.g. https://api.deepseek.com)");
    return;
  }
  std::vector<std::string> ids;
  for (const json& m : j["data"])
    if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"]);
  auto has = [&](const std::string& id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
  std::string missing;
  for (const std::string& m : {l.assessment_model, l.EffectiveExecutionModel()})
    if (!has(m) && missing.find(m) == std::string::npos) missing += (missing.empty() ? "" : ", ") + m;
  if (!missing.empty()) {
    std::string available;
    for (const std::string& id : ids) available += (available.empty() ? "" : ", ") + id;
    Add("model", R::kFailed, "the endpoint does not offer " + missing + " (it offers: " + available + ")",
        "set llm.assessment_model / llm.execution_model to a model the endpoint lists");
    return;
  }
  Add("model", R::kOk, base + " answers; " + l.assessment_model + " is available");
}

void Doctor::CodingCli() {
  const Config::CodingCli* cli = config_.execution.ChosenCli();
  if (cli == nullptr) return;
  const std::string& executor = config_.execution.executor;
  const std::string block = "execution." + std::string(executor == "claude-code" ? "claude_code"
                                                        : executor == "gemini-cli" ? "gemini_cli"
                                                        : executor == "qwen-code"  ? "qwen_code"
                                                                                   : "codex");
  static const std::map<std::string, std::string> kPackage = {{"claude-code", "@anthropic-ai/claude-code"},
                                                              {"codex", "@openai/codex"},
                                                              {"gemini-cli", "@google/gemini-cli"},
                                                              {"qwen-code", "@qwen-code/qwen-code"}};
  const exec::CliExecutorOptions o = CliExecutorOptionsFor(executor, *cli);
  // The key and the API are the model gateway's: the same call the gateway would forward.
  const exec::ModelGatewayOptions g = ModelGatewayOptionsFor(executor, *cli);
  if (FindProgram(o.binary).empty()) {
    Add("cli", R::kFailed, executor + ": program \"" + o.binary + "\" not found",
        "install it (npm install -g " + kPackage.at(executor) + ") or set " + block + ".binary to its path");
    Add("cli.model", R::kSkipped, "needs the program");
    return;
  }
  std::string version;
  if (RunCommand({o.binary, "--version"}, {}, &version) != 0) {
    Add("cli", R::kFailed, o.binary + " --version failed: " + text::TailLines(version, 3, 300),
        "run it by hand as the service user; " + block + ".binary must be the CLI itself");
    Add("cli.model", R::kSkipped, "needs a runnable program");
    return;
  }
  Add("cli", R::kOk, executor + ": " + o.binary + " (" + text::FirstLine(version, 100) + ")");
  if (!cli->api_key_env.empty() && g.api_key.empty()) {
    Add("cli.model", R::kFailed, "environment variable " + cli->api_key_env + " (" + block + ".api_key_env) is not set",
        "put " + cli->api_key_env + "=<key> in the service's EnvironmentFile");
    return;
  }
  if (o.model.empty() || g.upstream.empty()) {
    Add("cli.model", R::kSkipped, "the CLI's default " + std::string(o.model.empty() ? "model" : "endpoint") +
                                      " is used; set " + block + ".model and .base_url to have it checked");
    return;
  }
  HttpRequest req;
  req.method = "POST";
  req.timeout_ms = 30'000;
  req.connect_timeout_ms = 5'000;
  std::string base = g.upstream;
  while (!base.empty() && base.back() == '/') base.pop_back();
  json body;
  if (executor == "claude-code") {
    req.url = base + "/v1/messages";
    req.headers = {{"x-api-key", g.api_key}, {"anthropic-version", "2023-06-01"}, {"Content-Type", "application/json"}};
    body = {{"model", o.model}, {"max_tokens", 1}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", "ping"}}}}};
  } else if (executor == "codex") {
    req.url = base + "/responses";
    req.headers = {{"Authorization", "Bearer " + g.api_key}, {"Content-Type", "application/json"}};
    body = {{"model", o.model},
            {"input", {{{"role", "user"}, {"content", "ping"}}}},
            {"max_output_tokens", 16},
            {"store", false},
            {"stream", true}};
  } else if (executor == "gemini-cli") {
    req.url = base + "/v1beta/models/" + o.model + ":generateContent";
    req.headers = {{"x-goog-api-key", g.api_key}, {"Content-Type", "application/json"}};
    body = {{"contents", {{{"role", "user"}, {"parts", {{{"text", "ping"}}}}}}},
            {"generationConfig", {{"maxOutputTokens", 1}}}};
  } else {
    req.url = base + "/chat/completions";
    req.headers = {{"Authorization", "Bearer " + g.api_key}, {"Content-Type", "application/json"}};
    body = {{"model", o.model}, {"max_tokens", 1}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", "ping"}}}}};
  }
  // Streamed, as the CLI itself asks: only the status is read, and the call costs one token.
  req.body = body.dump();
  HttpResponse r = http_.Send(req);
  if (r.ok()) {
    Add("cli.model", R::kOk, "POST " + req.url + " answers for " + o.model);
    return;
  }
  Add("cli.model", R::kFailed, "POST " + req.url + ": " + Answer(r),
      r.status == 401 || r.status == 403 ? "the key in " + cli->api_key_env + " is refused: check it"
                                         : "check " + block + ".base_url and .model");
}

}  // namespace superagent::app
