// A loopback GitHub for tests: speaks the REST wire format (JSON bodies, Link pagination, ETag /
// Last-Modified conditional requests answered with 304, x-ratelimit-* headers, X-Poll-Interval,
// Retry-After) over a real socket, so the real HTTP client and the real Source run against it.
//
// Its data is recorded GitHub data nobody here wrote: objects from @octokit/webhooks-examples
// (webhook payloads carry the same issue/comment/review objects the REST API returns) and whole
// recorded exchanges from @octokit/fixtures, loaded from tests/node_modules at run time
// (cmake/dev.sh runs `npm ci` in tests/). Tests only change what a scenario needs (a body, a time).
#pragma once

#include <set>
#include <condition_variable>
#include <gtest/gtest.h>

#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/github.h"
#include "superagent/text.h"

#include "github_app_keys.h"
#include "hold_gate.h"

namespace superagent::testing {

inline std::string NodeModulesDir() { return std::string(SUPERAGENT_SOURCE_DIR) + "/tests/node_modules"; }

inline nlohmann::json LoadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path << " (run `npm ci` in tests/, as cmake/dev.sh does)";
    return nlohmann::json();
  }
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str(), nullptr, false);
}

// Every example payload of @octokit/webhooks-examples, by event name.
inline const nlohmann::json& WebhookExamples() {
  static const nlohmann::json examples = [] {
    nlohmann::json by_event = nlohmann::json::object();
    nlohmann::json index = LoadJsonFile(NodeModulesDir() + "/@octokit/webhooks-examples/api.github.com/index.json");
    if (index.is_array())
      for (const auto& e : index) by_event[e["name"].get<std::string>()] = e["examples"];
    return by_event;
  }();
  return examples;
}

// The `nth` example of `event` with `action` ("" matches examples without an action).
inline nlohmann::json WebhookExample(const std::string& event, const std::string& action, int nth = 0) {
  const auto& all = WebhookExamples();
  if (!all.contains(event)) {
    ADD_FAILURE() << "no webhook examples for " << event;
    return nlohmann::json::object();
  }
  for (const auto& e : all[event]) {
    if (e.value("action", "") != action) continue;
    if (nth-- == 0) return e;
  }
  ADD_FAILURE() << "no example " << event << "." << action;
  return nlohmann::json::object();
}

// A recorded @octokit/fixtures scenario: [{method, path, status, headers, response}, …].
inline nlohmann::json OctokitScenario(const std::string& name) {
  return LoadJsonFile(NodeModulesDir() + "/@octokit/fixtures/scenarios/api.github.com/" + name +
                      "/normalized-fixture.json");
}

class FakeGitHub {
 public:
  struct Scripted {
    int status = 200;
    std::map<std::string, std::string> headers;
    std::string body;
  };
  struct Logged {
    std::string method, target;
    int status = 0;
    std::map<std::string, std::string> request_headers;  // lower-cased names
    std::string body;
  };

  // Listening on a loopback port of its own; with `listen` false, a repository answered only
  // through another fake's other_repositories (a host holding 200 repositories needs no 200
  // servers).
  explicit FakeGitHub(Clock* clock, bool listen = true) : clock_(clock), listening_(listen) {
    if (!listen) return;
    for (const char* m : {"GET", "POST", "PATCH", "PUT", "DELETE"}) {
      auto handler = [this, m](const httplib::Request& req, httplib::Response& res) { Dispatch(m, req, res); };
      std::string method = m;
      if (method == "GET") server_.Get(".*", handler);
      if (method == "POST") server_.Post(".*", handler);
      if (method == "PATCH") server_.Patch(".*", handler);
      if (method == "PUT") server_.Put(".*", handler);
      if (method == "DELETE") server_.Delete(".*", handler);
    }
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeGitHub() {
    Release();
    if (!listening_) return;
    // httplib 0.11's stop() does nothing until the listener runs: wait for it first.
    while (!server_.is_running()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The REST base a client is given: url() and the prefix (GitHub Enterprise Server's "/api/v3").
  std::string api_url() const { return url() + prefix; }
  // Set before use: every REST path is answered only under it, as a GHES host answers /api/v3/….
  std::string prefix;
  std::string repo_path() const { return "/repos/" + repo; }

  // --- state (lock with Lock() when changing it while a client may be talking) ---
  std::unique_lock<std::mutex> Lock() { return std::unique_lock<std::mutex>(mu_); }
  std::string repo = "Codertocat/Hello-World";
  // Other repositories this host serves (set before use): "owner/name" → a fake whose `repo` is
  // that name; its paths are answered by it, everything else (/user, /notifications) here.
  std::map<std::string, FakeGitHub*> other_repositories;
  nlohmann::json user = {{"login", "superagent-bot"}, {"id", 4242}, {"type", "User"}};
  // Repositories this host holds that are not in the App's installation (GET /installation/repositories).
  std::set<std::string> not_installed;
  std::vector<std::string> installation_repositories() const {
    std::vector<std::string> out;
    if (!not_installed.count(repo)) out.push_back(repo);
    for (const auto& [name, other] : other_repositories)
      if (!not_installed.count(name)) out.push_back(name);
    return out;
  }
  nlohmann::json repo_info = {{"full_name", "Codertocat/Hello-World"}, {"default_branch", "master"}};
  std::map<std::int64_t, nlohmann::json> issues;  // number → issue object (PRs too, with pull_request)
  std::map<std::int64_t, nlohmann::json> pulls;   // number → pull request object
  // Each body PATCH /pulls/N wrote, in order (the pull request object keeps the last).
  std::map<std::int64_t, std::vector<std::string>> pull_body_edits;
  std::vector<nlohmann::json> comments;           // issue comments (issue_url names the issue)
  std::vector<nlohmann::json> review_comments;    // pull_request_url names the PR
  std::map<std::int64_t, std::vector<nlohmann::json>> reviews;  // GET /pulls/N/reviews, oldest first
  std::set<std::string> collaborators;  // who may be asked to review; empty: anyone
  // GET /collaborators/{login}/permission (issue 33): each login's role ("admin", "maintain",
  // "write", "triage", "read", "none"), looked up ignoring case. A login not in the table is
  // answered as GitHub does: "read" on a public repository (anyone can read it), "none" on a
  // private one. Without push access (agent_can_push false) the asker gets GitHub's 403.
  std::map<std::string, std::string> permissions;
  bool private_repo = false;
  bool agent_can_push = true;
  // GET /branches/{branch}/protection: the protection object by branch; absent is GitHub's 404
  // "Branch not protected".
  std::map<std::string, nlohmann::json> protections;
  std::map<std::int64_t, std::vector<nlohmann::json>> pull_files;  // GET /pulls/N/files
  // GET /pulls/N/commits, oldest first; a pull request not named here lists only its head.
  std::map<std::int64_t, std::vector<nlohmann::json>> pull_commits;
  std::vector<nlohmann::json> notifications;
  std::vector<nlohmann::json> workflow_runs, check_runs, commit_comments;
  int poll_interval = 60;
  int rate_limit = 5000, rate_remaining = 5000;
  // Called for every answered request, under the server's lock (benchmarks time arrivals by it).
  std::function<void(const Logged&)> on_request;
  std::int64_t next_id = 900'000'000;

  // A GitHub App (issue 25). Once UseApp() is called, App endpoints verify JWTs with the public
  // key, every other request needs an unexpired installation token, the agent writes as
  // "<slug>[bot]", and what Apps cannot use (notifications, GET /user) answers 403 as GitHub does.
  struct App {
    EVP_PKEY* key = nullptr;  // not owned; its public half verifies JWTs
    std::string app_id = "12345";
    std::string slug = "team-agent";
    std::string name = "Team Agent";
    std::int64_t installation_id = 42;
    nlohmann::json permissions = {{"issues", "write"}, {"pull_requests", "write"}, {"contents", "write"},
                                  {"checks", "write"}, {"metadata", "read"}};
    std::vector<std::string> events = {"issues", "issue_comment", "pull_request", "pull_request_review",
                                       "pull_request_review_comment", "check_run", "workflow_run"};
    TimeMs token_lifetime_ms = 3'600'000;
  };
  std::optional<App> app;
  std::map<std::string, TimeMs> installation_tokens;  // issued token → expiry
  std::set<std::string> personal_tokens;  // a person's tokens also accepted in App mode (auto-merge's)
  int tokens_issued = 0;
  std::string last_refusal;  // why the last App request was refused ("" none)
  void UseApp(EVP_PKEY* key, const std::string& slug = "team-agent") {
    auto lock = Lock();
    App a;
    a.key = key;
    a.slug = slug;
    app = a;
    user = {{"login", slug + "[bot]"}, {"id", 4343}, {"type", "Bot"}};
  }
  // Makes every installation token issued so far invalid (revoked, or the App's permissions changed).
  void RevokeInstallationTokens() {
    auto lock = Lock();
    installation_tokens.clear();
  }

  // Answers the next `times` requests for (method, path without query) with `r` (-1: always).
  void Script(const std::string& method, const std::string& path, Scripted r, int times = 1) {
    auto lock = Lock();
    scripts_[method + " " + path].push_back({r, times});
  }
  void ClearScripts() {
    auto lock = Lock();
    scripts_.clear();
  }
  // Serves a recorded @octokit/fixtures exchange (its URLs pointed at this server).
  void Replay(const nlohmann::json& scenario) {
    auto lock = Lock();
    for (const auto& r : scenario) replay_.push_back({r, false});
  }

  // Requests for (method, path without query) are held unanswered until Release(): a GitHub
  // that hangs. WaitUntilHolding blocks until one is held (false after 10 s).
  void Hold(const std::string& method, const std::string& path) {
    auto lock = Lock();
    held_.insert(method + " " + path);
  }
  bool WaitUntilHolding() { return hold_.WaitUntilHolding(); }
  bool WaitUntilHoldingAtLeast(int n) { return hold_.WaitUntilHoldingAtLeast(n); }
  bool Holding() { return hold_.Holding(); }
  void Release() { hold_.Release(); }

  std::vector<Logged> log() {
    auto lock = Lock();
    return log_;
  }
  void ClearLog() {
    auto lock = Lock();
    log_.clear();
  }
  // Requests whose method matches and whose target starts with `start`.
  int Count(const std::string& method, const std::string& start) {
    auto lock = Lock();
    int n = 0;
    for (const auto& l : log_)
      if (l.method == method && l.target.rfind(start, 0) == 0) ++n;
    return n;
  }

  // The head commit the fake says a pull request it opened has (the fake knows no git).
  static std::string HeadSha(std::int64_t number) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "c0ffee%034llx", static_cast<long long>(number));
    return buf;
  }

  // Time as GitHub writes it.
  std::string Iso(TimeMs t) const { return github::IsoSeconds(t); }

  // An issue comment object with the shape of the recorded example, on `number`, by `login`.
  nlohmann::json MakeComment(std::int64_t id, std::int64_t number, const std::string& login, const std::string& body,
                             TimeMs at, bool on_pull = false) {
    nlohmann::json c = WebhookExample("issue_comment", "created")["comment"];
    c["id"] = id;
    c["body"] = body;
    c["user"]["login"] = login;
    c["created_at"] = c["updated_at"] = Iso(at);
    c["issue_url"] = "https://api.github.com" + repo_path() + "/issues/" + std::to_string(number);
    c["html_url"] = "https://github.com/" + repo + (on_pull ? "/pull/" : "/issues/") + std::to_string(number) +
                    "#issuecomment-" + std::to_string(id);
    return c;
  }
  // A pull request object with the shape of the recorded example (additions, deletions, head.sha,
  // merged, …), opened by `author` with `body` at head `sha`.
  nlohmann::json MakePull(std::int64_t number, const std::string& author, const std::string& body,
                          const std::string& sha, int additions, int deletions) {
    nlohmann::json pr = WebhookExample("pull_request", "opened")["pull_request"];
    pr["number"] = number;
    pr["user"]["login"] = author;
    pr["body"] = body;
    pr["head"]["sha"] = sha;
    pr["additions"] = additions;
    pr["deletions"] = deletions;
    pr["url"] = "https://api.github.com" + repo_path() + "/pulls/" + std::to_string(number);
    return pr;
  }
  // A submitted review as GET /pulls/N/reviews lists it (state in capitals, unlike webhooks).
  nlohmann::json MakeReview(const std::string& login, const std::string& state, const std::string& commit_id,
                            bool bot = false) {
    nlohmann::json r = WebhookExample("pull_request_review", "submitted")["review"];
    r["id"] = ++next_id;
    r["user"]["login"] = login;
    r["user"]["type"] = bot ? "Bot" : "User";
    r["state"] = state;
    r["commit_id"] = commit_id;
    return r;
  }
  // A branch protection object as GET /branches/{branch}/protection answers it (the shape of the
  // documented example), requiring `approvals` approving reviews (0: no review rule at all).
  nlohmann::json MakeProtection(const std::string& branch, bool dismiss_stale, int approvals = 1) {
    const std::string base = "https://api.github.com" + repo_path() + "/branches/" + branch + "/protection";
    nlohmann::json p = {
        {"url", base},
        {"required_status_checks",
         {{"url", base + "/required_status_checks"}, {"strict", true}, {"contexts", nlohmann::json::array()},
          {"contexts_url", base + "/required_status_checks/contexts"}, {"checks", nlohmann::json::array()}}},
        {"enforce_admins", {{"url", base + "/enforce_admins"}, {"enabled", false}}},
        {"required_linear_history", {{"enabled", false}}},
        {"allow_force_pushes", {{"enabled", false}}},
        {"allow_deletions", {{"enabled", false}}},
        {"required_conversation_resolution", {{"enabled", false}}}};
    if (approvals > 0)
      p["required_pull_request_reviews"] = {{"url", base + "/required_pull_request_reviews"},
                                            {"dismiss_stale_reviews", dismiss_stale},
                                            {"require_code_owner_reviews", false},
                                            {"required_approving_review_count", approvals},
                                            {"require_last_push_approval", false}};
    return p;
  }
  // A changed file as GET /pulls/N/files lists it.
  nlohmann::json MakePullFile(const std::string& filename, const std::string& status = "modified",
                              const std::string& previous = "") {
    nlohmann::json f = {{"sha", "bbcd538c8e72b8c175046e27cc8f907076331401"},
                        {"filename", filename},
                        {"status", status},
                        {"additions", 1},
                        {"deletions", 1},
                        {"changes", 2},
                        {"blob_url", "https://github.com/" + repo + "/blob/HEAD/" + filename},
                        {"raw_url", "https://github.com/" + repo + "/raw/HEAD/" + filename},
                        {"contents_url", "https://api.github.com" + repo_path() + "/contents/" + filename},
                        {"patch", "@@ -1 +1 @@\n-a\n+b"}};
    if (!previous.empty()) f["previous_filename"] = previous;
    return f;
  }
  // How many times GitHub was asked for `login`'s permission.
  int PermissionRequests(const std::string& login) {
    return Count("GET", repo_path() + "/collaborators/" + login + "/permission");
  }

  // A notification thread for an issue or PR of this repository.
  nlohmann::json MakeNotification(const std::string& id, std::int64_t number, bool pull, TimeMs updated,
                                  const std::string& reason = "mention") {
    std::string api = api_url() + repo_path();
    return {{"id", id},
            {"unread", true},
            {"reason", reason},
            {"updated_at", Iso(updated)},
            {"last_read_at", nullptr},
            {"subject",
             {{"title", "t"},
              {"url", api + (pull ? "/pulls/" : "/issues/") + std::to_string(number)},
              {"latest_comment_url", api + "/issues/comments/1"},
              {"type", pull ? "PullRequest" : "Issue"}}},
            {"repository", {{"full_name", repo}}},
            {"url", url() + "/notifications/threads/" + id}};
  }

 private:
  struct Script_ {
    Scripted r;
    int times;
  };
  struct ReplayEntry {
    nlohmann::json r;
    bool used;
  };

  static std::string HttpDate(TimeMs t) {
    std::time_t s = static_cast<std::time_t>(t / 1000);
    std::tm tm{};
    gmtime_r(&s, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return buf;
  }
  static std::string Etag(const std::string& body) {
    return "\"" + std::to_string(std::hash<std::string>{}(body)) + "\"";
  }
  std::string Rewrite(std::string s) const {
    const std::string from = "https://api.github.com";
    const std::string to = api_url();
    for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p)) {
      s.replace(p, from.size(), to);
      p += to.size();
    }
    return s;
  }

  void RateHeaders(httplib::Response& res) {
    res.set_header("x-ratelimit-limit", std::to_string(rate_limit));
    res.set_header("x-ratelimit-remaining", std::to_string(rate_remaining));
    res.set_header("x-ratelimit-used", std::to_string(rate_limit - rate_remaining));
    res.set_header("x-ratelimit-reset", std::to_string(clock_->NowMs() / 1000 + 3600));
    res.set_header("x-ratelimit-resource", "core");
  }

  // A GET answer that honours If-None-Match / If-Modified-Since like GitHub: 304 costs no rate.
  void Answer(const httplib::Request& req, httplib::Response& res, int status, const nlohmann::json& body,
              const std::string& last_modified = "", const std::string& link = "") {
    const std::string text = body.dump();
    const std::string etag = Etag(text);
    res.set_header("Date", HttpDate(clock_->NowMs()));
    bool not_modified = false;
    if (req.method == "GET" && status == 200) {
      if (req.has_header("If-None-Match") && req.get_header_value("If-None-Match") == etag) not_modified = true;
      if (!last_modified.empty() && req.has_header("If-Modified-Since") &&
          req.get_header_value("If-Modified-Since") == last_modified && !req.has_header("If-None-Match"))
        not_modified = true;
    }
    if (!not_modified && rate_remaining > 0) --rate_remaining;
    RateHeaders(res);
    if (not_modified) {
      res.status = 304;
      res.set_header("ETag", etag);
      return;
    }
    res.status = status;
    if (req.method == "GET" && status == 200) res.set_header("ETag", etag);
    if (!last_modified.empty()) res.set_header("Last-Modified", last_modified);
    if (!link.empty()) res.set_header("Link", link);
    res.set_content(text, "application/json; charset=utf-8");
  }

  // Pages a list like GitHub: per_page / page, with a Link header.
  void AnswerList(const httplib::Request& req, httplib::Response& res, const std::vector<nlohmann::json>& items,
                  const std::string& last_modified = "", const std::string& wrap_key = "") {
    int per_page = req.has_param("per_page") ? std::stoi(req.get_param_value("per_page")) : 30;
    int page = req.has_param("page") ? std::stoi(req.get_param_value("page")) : 1;
    if (per_page <= 0) per_page = 30;
    const int total = static_cast<int>(items.size());
    const int last = std::max(1, (total + per_page - 1) / per_page);
    nlohmann::json out = nlohmann::json::array();
    for (int i = (page - 1) * per_page; i < std::min(total, page * per_page); ++i) out.push_back(items[i]);
    std::string link;
    auto page_url = [&](int p) {
      std::string q;
      for (const auto& [k, v] : req.params)
        if (k != "page") q += (q.empty() ? "?" : "&") + k + "=" + v;
      return url() + req.path + q + (q.empty() ? "?" : "&") + "page=" + std::to_string(p);
    };
    if (page < last) link = "<" + page_url(page + 1) + ">; rel=\"next\", <" + page_url(last) + ">; rel=\"last\"";
    if (!wrap_key.empty()) out = nlohmann::json{{"total_count", total}, {wrap_key, out}};
    Answer(req, res, 200, out, last_modified, link);
  }

  static bool Since(const httplib::Request& req, const nlohmann::json& item, const char* field = "updated_at") {
    if (!req.has_param("since")) return true;
    TimeMs since = 0, at = 0;
    if (!ParseTime(req.get_param_value("since"), &since)) return true;
    if (!item.contains(field) || !item[field].is_string() || !ParseTime(item[field].get<std::string>(), &at)) return true;
    return at >= since;
  }
  static std::int64_t Tail(const std::string& url) { return std::atoll(url.substr(url.find_last_of('/') + 1).c_str()); }

  void Dispatch(const std::string& method, const httplib::Request& req, httplib::Response& res) {
    // Issue 37: one host holding several repositories. A path of another repository is answered
    // by that repository's fake, with its own state and log (names compared as GitHub does,
    // ignoring case).
    for (const auto& [name, other] : other_repositories) {
      const std::string path = text::AsciiLower(Unprefixed(req.path)), mine = "/repos/" + text::AsciiLower(name);
      if (path == mine || path.rfind(mine + "/", 0) == 0) return other->Dispatch(method, req, res);
    }
    bool held = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held = held_.count(method + " " + Unprefixed(req.path)) > 0;
    }
    if (held) hold_.Hold();
    std::lock_guard<std::mutex> lock(mu_);
    path_ = Unprefixed(req.path);
    Logged entry{method, req.target, 0, {}, req.body};
    for (const auto& [k, v] : req.headers) {
      std::string name = k;
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      entry.request_headers[name] = v;
    }
    if (!prefix.empty() && req.path.rfind(prefix + "/", 0) != 0) Answer(req, res, 404, {{"message", "Not Found"}});
    else Route(method, req, res);
    entry.status = res.status;
    if (on_request) on_request(entry);
    log_.push_back(entry);
  }

  void Route(const std::string& method, const httplib::Request& req, httplib::Response& res) {
    // 1. Scripted answers win.
    auto sit = scripts_.find(method + " " + path_);
    if (sit != scripts_.end() && !sit->second.empty()) {
      Script_& s = sit->second.front();
      res.status = s.r.status;
      res.set_header("Date", HttpDate(clock_->NowMs()));
      bool has_rate = false;
      for (const auto& [k, v] : s.r.headers) {
        res.set_header(k, v);
        if (k.rfind("x-ratelimit", 0) == 0) has_rate = true;
      }
      if (!has_rate) RateHeaders(res);
      if (!s.r.body.empty()) res.set_content(s.r.body, "application/json; charset=utf-8");
      if (s.times > 0 && --s.times == 0) sit->second.pop_front();
      return;
    }
    // 2. A GitHub App's credentials.
    if (app && AppAuth(method, req, res)) return;
    // 3. Recorded exchanges.
    ReplayEntry* match = nullptr;
    for (auto& e : replay_) {
      if (e.r.value("method", "") == Lower(method) && Rewrite(e.r.value("path", "")) == req.target) {
        if (!e.used) {
          match = &e;
          break;
        }
        match = &e;  // the last used one answers repeats
      }
    }
    if (match != nullptr) {
      match->used = true;
      const auto& r = match->r;
      std::string etag;
      for (const auto& [k, v] : r["headers"].items()) {
        if (k == "content-length" || k == "connection" || k == "transfer-encoding" || k == "content-type") continue;
        std::string value = v.is_string() ? v.get<std::string>() : v.dump();
        if (k == "etag") etag = value;
        res.set_header(k, Rewrite(value));
      }
      if (method == "GET" && !etag.empty() && req.get_header_value("If-None-Match") == etag) {
        res.status = 304;
        return;
      }
      res.status = r.value("status", 200);
      const auto& body = r["response"];
      if (!(body.is_string() && body.get<std::string>().empty()))
        res.set_content(Rewrite(body.dump()), "application/json; charset=utf-8");
      return;
    }
    // 4. The model of one repository.
    Model(method, req, res);
  }

  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  nlohmann::json Created(nlohmann::json c) {
    c["id"] = ++next_id;
    c["user"] = user;
    c["created_at"] = c["updated_at"] = Iso(clock_->NowMs());
    return c;
  }

  std::string Unprefixed(const std::string& path) const {
    return !prefix.empty() && path.rfind(prefix + "/", 0) == 0 ? path.substr(prefix.size()) : path;
  }

  // The App's own endpoints (JWT), and the installation token every other request must carry.
  // True when it answered.
  bool AppAuth(const std::string& method, const httplib::Request& req, httplib::Response& res) {
    const std::string& p = path_;
    const std::string authorization = req.get_header_value("Authorization");
    const bool installation = p.rfind("/repos/", 0) == 0 && p.size() > 13 && p.compare(p.size() - 13, 13, "/installation") == 0;
    const bool jwt_path = p == "/app" || installation || p.rfind("/app/installations/", 0) == 0;
    if (jwt_path) {
      last_refusal = RefuseAppJwt(app->key, authorization, app->app_id, clock_->NowMs() / 1000);
      if (!last_refusal.empty()) {
        Answer(req, res, 401, {{"message", "A JSON web token could not be decoded"}});
        return true;
      }
      if (p == "/app") {
        Answer(req, res, 200, {{"id", std::stoll(app->app_id)}, {"slug", app->slug}, {"name", app->name},
                               {"owner", {{"login", repo.substr(0, repo.find('/'))}}}, {"permissions", app->permissions},
                               {"events", app->events}});
      } else if (p == repo_path() + "/installation" || (method == "GET" && p == "/app/installations/" + std::to_string(app->installation_id))) {
        Answer(req, res, 200, {{"id", app->installation_id}, {"app_id", std::stoll(app->app_id)}, {"app_slug", app->slug},
                               {"account", {{"login", repo.substr(0, repo.find('/'))}}},
                               {"permissions", app->permissions}, {"events", app->events}});
      } else if (p == "/app/installations/" + std::to_string(app->installation_id) + "/access_tokens") {
        const std::string token = "ghs_installation" + std::to_string(++tokens_issued);
        installation_tokens[token] = clock_->NowMs() + app->token_lifetime_ms;
        Answer(req, res, 201, {{"token", token}, {"expires_at", Iso(installation_tokens[token])},
                               {"permissions", app->permissions}, {"repository_selection", "selected"}});
      } else {
        Answer(req, res, 404, {{"message", "Not Found"}});
      }
      return true;
    }
    std::string token = authorization.rfind("Bearer ", 0) == 0 ? authorization.substr(7)
                        : authorization.rfind("token ", 0) == 0 ? authorization.substr(6) : "";
    if (personal_tokens.count(token)) {
      last_refusal.clear();
      return false;
    }
    auto it = installation_tokens.find(token);
    if (it == installation_tokens.end() || it->second <= clock_->NowMs()) {
      last_refusal = it == installation_tokens.end() ? "unknown token" : "expired token";
      Answer(req, res, 401, {{"message", "Bad credentials"}, {"documentation_url", "https://docs.github.com/rest"}});
      return true;
    }
    if (p == "/notifications" || p == "/user") {
      Answer(req, res, 403, {{"message", "Resource not accessible by integration"},
                             {"documentation_url", "https://docs.github.com/rest"}});
      return true;
    }
    last_refusal.clear();
    return false;
  }

  // GitHub's "Get repository permissions for a user": the legacy `permission` maps maintain to
  // write and triage to read; `role_name` keeps the role; user.permissions spells it out.
  void CollaboratorPermission(const httplib::Request& req, httplib::Response& res, const std::string& login) {
    if (!agent_can_push)
      return Answer(req, res, 403,
                    {{"message", "Must have push access to view collaborator permission."},
                     {"documentation_url",
                      "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user"},
                     {"status", "403"}});
    auto lower = [](std::string v) {
      for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return v;
    };
    std::string role = private_repo ? "none" : "read";
    for (const auto& [name, given] : permissions)
      if (lower(name) == lower(login)) role = given;
    const std::string permission = role == "maintain" ? "write" : role == "triage" ? "read" : role;
    const bool admin = role == "admin", maintain = admin || role == "maintain", push = maintain || role == "write",
               triage = push || role == "triage", pull = triage || role == "read";
    nlohmann::json who = {{"login", login},
                           {"id", 1000 + static_cast<std::int64_t>(std::hash<std::string>{}(lower(login)) % 100000)},
                           {"node_id", "MDQ6VXNlcjE="},
                           {"avatar_url", "https://github.com/images/error/octocat_happy.gif"},
                           {"url", "https://api.github.com/users/" + login},
                           {"html_url", "https://github.com/" + login},
                           {"type", "User"},
                           {"site_admin", false},
                           {"permissions",
                            {{"admin", admin}, {"maintain", maintain}, {"push", push}, {"triage", triage}, {"pull", pull}}},
                           {"role_name", role == "none" ? "" : role}};
    Answer(req, res, 200, {{"permission", permission}, {"role_name", role == "none" ? "" : role}, {"user", who}});
  }

  void Model(const std::string& method, const httplib::Request& req, httplib::Response& res) {
    const std::string p = path_;
    const std::string r = repo_path();
    auto not_found = [&] { Answer(req, res, 404, {{"message", "Not Found"}}); };
    auto match = [&](const std::string& pattern, std::vector<std::string>* parts) {
      // pattern segments: "*" matches one segment
      auto split = [](const std::string& s) {
        std::vector<std::string> v;
        std::stringstream ss(s);
        std::string seg;
        while (std::getline(ss, seg, '/'))
          if (!seg.empty()) v.push_back(seg);
        return v;
      };
      auto a = split(pattern), b = split(p);
      if (a.size() != b.size()) return false;
      parts->clear();
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == "*") parts->push_back(b[i]);
        else if (a[i] != b[i]) return false;
      }
      return true;
    };
    std::vector<std::string> m;
    if (method == "GET") {
      if (p == "/user") return Answer(req, res, 200, user);
      if (p == "/installation/repositories") {
        // The installation's repositories (issue 37): this one and every other one this host
        // holds, but those taken out of the installation.
        nlohmann::json listed = nlohmann::json::array();
        for (const std::string& name : installation_repositories())
          listed.push_back({{"id", listed.size() + 1}, {"full_name", name}, {"name", name.substr(name.find('/') + 1)},
                            {"private", true}});
        return AnswerList(req, res, std::vector<nlohmann::json>(listed.begin(), listed.end()), "", "repositories");
      }
      if (p == "/notifications") {
        std::vector<nlohmann::json> items;
        TimeMs newest = 0;
        for (const auto& n : notifications) {
          if (!Since(req, n)) continue;
          items.push_back(n);
          TimeMs at = 0;
          ParseTime(n["updated_at"].get<std::string>(), &at);
          newest = std::max(newest, at);
        }
        std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a["updated_at"] > b["updated_at"]; });
        res.set_header("X-Poll-Interval", std::to_string(poll_interval));
        return AnswerList(req, res, items, HttpDate(newest));
      }
      if (p == r) return Answer(req, res, 200, repo_info);
      if (p == r + "/issues") {
        std::vector<nlohmann::json> items;
        for (const auto& [n, i] : issues)
          if (Since(req, i)) items.push_back(i);
        return AnswerList(req, res, items);
      }
      if (p == r + "/issues/comments") {
        std::vector<nlohmann::json> items;
        for (const auto& c : comments)
          if (Since(req, c)) items.push_back(c);
        return AnswerList(req, res, items);
      }
      if (p == r + "/pulls/comments") {
        std::vector<nlohmann::json> items;
        for (const auto& c : review_comments)
          if (Since(req, c)) items.push_back(c);
        return AnswerList(req, res, items);
      }
      if (p == r + "/pulls") {
        std::vector<nlohmann::json> items;
        std::string head = req.get_param_value("head");
        for (const auto& [n, pr] : pulls)
          if (head.empty() || pr["head"].value("label", "") == head) items.push_back(pr);
        return AnswerList(req, res, items);
      }
      if (p == r + "/actions/runs") {
        std::vector<nlohmann::json> items;
        for (const auto& run : workflow_runs)
          if (!req.has_param("branch") || run.value("head_branch", "") == req.get_param_value("branch"))
            items.push_back(run);
        return AnswerList(req, res, items, "", "workflow_runs");
      }
      if (match(r + "/commits/*/check-runs", &m)) {
        // One commit's check runs (named by its sha or a branch); items without either field
        // (a test's malformed ones) are listed everywhere.
        auto text = [](const nlohmann::json& j, const char* key) -> std::optional<std::string> {
          if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return std::nullopt;
          return j[key].get<std::string>();
        };
        std::vector<nlohmann::json> items;
        for (const auto& run : check_runs) {
          auto sha = text(run, "head_sha");
          auto branch = run.is_object() && run.contains("check_suite") ? text(run["check_suite"], "head_branch")
                                                                       : std::nullopt;
          if (req.has_param("check_name") && run.value("name", "") != req.get_param_value("check_name")) continue;
          if ((!sha && !branch) || sha == m[0] || branch == m[0]) items.push_back(run);
        }
        return AnswerList(req, res, items, "", "check_runs");
      }
      if (match(r + "/commits/*/comments", &m)) return AnswerList(req, res, commit_comments);
      if (match(r + "/issues/*", &m)) {
        auto it = issues.find(std::atoll(m[0].c_str()));
        return it == issues.end() ? not_found() : Answer(req, res, 200, it->second);
      }
      if (match(r + "/pulls/*", &m)) {
        auto it = pulls.find(std::atoll(m[0].c_str()));
        return it == pulls.end() ? not_found() : Answer(req, res, 200, it->second);
      }
      if (match(r + "/issues/*/comments", &m)) {
        std::vector<nlohmann::json> items;
        for (const auto& c : comments)
          if (Tail(c["issue_url"].get<std::string>()) == std::atoll(m[0].c_str()) && Since(req, c)) items.push_back(c);
        return AnswerList(req, res, items);
      }
      if (match(r + "/pulls/*/comments", &m)) {
        std::vector<nlohmann::json> items;
        for (const auto& c : review_comments)
          if (Tail(c["pull_request_url"].get<std::string>()) == std::atoll(m[0].c_str()) && Since(req, c))
            items.push_back(c);
        return AnswerList(req, res, items);
      }
      if (match(r + "/pulls/*/reviews", &m)) return AnswerList(req, res, reviews[std::atoll(m[0].c_str())]);
      if (match(r + "/pulls/*/files", &m)) return AnswerList(req, res, pull_files[std::atoll(m[0].c_str())]);
      if (match(r + "/pulls/*/commits", &m)) {
        auto it = pulls.find(std::atoll(m[0].c_str()));
        if (it == pulls.end()) return not_found();
        if (auto listed = pull_commits.find(it->first); listed != pull_commits.end())
          return AnswerList(req, res, listed->second);
        const nlohmann::json* head = it->second.is_object() && it->second.contains("head") ? &it->second["head"] : nullptr;
        const bool has_sha = head != nullptr && head->is_object() && head->contains("sha") && (*head)["sha"].is_string();
        std::vector<nlohmann::json> only_head;
        if (has_sha) only_head.push_back(nlohmann::json::object({{"sha", (*head)["sha"]}}));
        return AnswerList(req, res, only_head);
      }
      if (match(r + "/collaborators/*/permission", &m)) return CollaboratorPermission(req, res, m[0]);
      if (match(r + "/branches/*/protection", &m)) {
        // Reading protection takes the Administration permission, which an App may not have.
        if (app && !app->permissions.contains("administration"))
          return Answer(req, res, 403,
                        {{"message", "Resource not accessible by integration"},
                         {"documentation_url", "https://docs.github.com/rest/branches/branch-protection#get-branch-protection"},
                         {"status", "403"}});
        auto it = protections.find(m[0]);
        if (it == protections.end())
          return Answer(req, res, 404,
                        {{"message", "Branch not protected"},
                         {"documentation_url", "https://docs.github.com/rest/branches/branch-protection#get-branch-protection"},
                         {"status", "404"}});
        return Answer(req, res, 200, it->second);
      }
      return not_found();
    }
    if (method == "POST") {
      nlohmann::json in = nlohmann::json::parse(req.body, nullptr, false);
      if (match(r + "/issues/*/comments", &m)) {
        std::int64_t n = std::atoll(m[0].c_str());
        if (!issues.count(n)) return not_found();
        nlohmann::json c = Created({{"body", in.value("body", "")}});
        c["issue_url"] = "https://api.github.com" + r + "/issues/" + m[0];
        c["html_url"] = "https://github.com/" + repo + "/issues/" + m[0] + "#issuecomment-" + std::to_string(c["id"].get<std::int64_t>());
        comments.push_back(c);
        return Answer(req, res, 201, c);
      }
      if (match(r + "/pulls/*/comments/*/replies", &m)) {
        nlohmann::json c = Created({{"body", in.value("body", "")}});
        c["in_reply_to_id"] = std::atoll(m[1].c_str());
        c["pull_request_url"] = "https://api.github.com" + r + "/pulls/" + m[0];
        c["path"] = "README.md";
        review_comments.push_back(c);
        return Answer(req, res, 201, c);
      }
      if (match(r + "/commits/*/comments", &m)) {
        nlohmann::json c = Created({{"body", in.value("body", "")}});
        commit_comments.push_back(c);
        return Answer(req, res, 201, c);
      }
      if (match(r + "/issues/comments/*/reactions", &m) || match(r + "/pulls/comments/*/reactions", &m) ||
          match(r + "/issues/*/reactions", &m))
        return Answer(req, res, 201, {{"id", ++next_id}, {"content", in.value("content", "")}, {"user", user}});
      if (match(r + "/pulls/*/requested_reviewers", &m)) {
        // GitHub's answers: 422 for the PR's author or a login that is not a collaborator,
        // 201 with the pull request (its requested_reviewers) otherwise.
        auto it = pulls.find(std::atoll(m[0].c_str()));
        if (it == pulls.end()) return not_found();
        nlohmann::json& pr = it->second;
        if (!in.is_object() || !in.contains("reviewers") || !in["reviewers"].is_array())
          return Answer(req, res, 422, {{"message", "Invalid request.\n\nNo subschema in \"anyOf\" matched."}});
        for (const auto& login : in["reviewers"]) {
          if (!login.is_string()) return Answer(req, res, 422, {{"message", "Invalid request."}});
          if (login == pr["user"].value("login", ""))
            return Answer(req, res, 422, {{"message", "Review cannot be requested from pull request author."}});
          if (!collaborators.empty() && !collaborators.count(login.get<std::string>()))
            return Answer(req, res, 422,
                          {{"message", "Reviews may only be requested from collaborators. One or more of the users or "
                                       "teams you specified is not a collaborator of the " + repo + " repository."}});
        }
        if (!pr.contains("requested_reviewers") || !pr["requested_reviewers"].is_array())
          pr["requested_reviewers"] = nlohmann::json::array();
        for (const auto& login : in["reviewers"])
          pr["requested_reviewers"].push_back({{"login", login}, {"type", "User"}});
        return Answer(req, res, 201, pr);
      }
      if (p == r + "/check-runs") {
        // Only an App may create check runs; GitHub tells anyone else so.
        if (!app) return Answer(req, res, 403, {{"message", "You must authenticate via a GitHub App."}});
        if (!in.is_object() || !in.contains("name") || !in["name"].is_string() || !in.contains("head_sha") ||
            !in["head_sha"].is_string())
          return Answer(req, res, 422, {{"message", "Invalid request.\n\n\"name\", \"head_sha\" weren't supplied."}});
        nlohmann::json run = in;
        run["id"] = ++next_id;
        run["app"] = {{"slug", app->slug}, {"id", std::stoll(app->app_id)}};
        if (!run.contains("status")) run["status"] = run.contains("conclusion") ? "completed" : "queued";
        if (run.contains("conclusion")) run["status"] = "completed";
        run["started_at"] = Iso(clock_->NowMs());
        if (run["status"] == "completed") run["completed_at"] = Iso(clock_->NowMs());
        check_runs.push_back(run);
        return Answer(req, res, 201, run);
      }
      if (p == r + "/pulls") {
        std::string owner = repo.substr(0, repo.find('/'));
        std::string label = owner + ":" + in.value("head", "");
        for (const auto& [n, pr] : pulls)
          if (pr["head"].value("label", "") == label && pr.value("state", "") == "open")
            return Answer(req, res, 422,
                          {{"message", "Validation Failed"},
                           {"errors", {{{"resource", "PullRequest"}, {"code", "custom"},
                                        {"message", "A pull request already exists for " + label + "."}}}}});
        std::int64_t number = 100 + static_cast<std::int64_t>(pulls.size());
        nlohmann::json pr = {{"id", ++next_id},
                             {"number", number},
                             {"html_url", "https://github.com/" + repo + "/pull/" + std::to_string(number)},
                             {"state", "open"},
                             {"title", in.value("title", "")},
                             {"body", in.value("body", "")},
                             {"draft", in.value("draft", false)},
                             {"head", {{"ref", in.value("head", "")}, {"label", label}, {"sha", HeadSha(number)}}},
                             {"base", {{"ref", in.value("base", "")}}},
                             {"user", user}};
        pulls[number] = pr;
        return Answer(req, res, 201, pr);
      }
      return not_found();
    }
    if (method == "PATCH" && match(r + "/check-runs/*", &m)) {
      if (!app) return Answer(req, res, 403, {{"message", "You must authenticate via a GitHub App."}});
      nlohmann::json in = nlohmann::json::parse(req.body, nullptr, false);
      for (auto& run : check_runs) {
        if (!run.is_object() || run.value("id", std::int64_t{0}) != std::atoll(m[0].c_str())) continue;
        if (in.is_object())
          for (const auto& [k, v] : in.items()) run[k] = v;
        if (in.is_object() && in.contains("conclusion")) {
          run["status"] = "completed";
          run["completed_at"] = Iso(clock_->NowMs());
        } else if (in.is_object() && in.value("status", "") != "completed") {
          run.erase("conclusion");
          run.erase("completed_at");
        }
        return Answer(req, res, 200, run);
      }
      return not_found();
    }
    if (method == "PATCH" && match(r + "/pulls/*", &m)) {
      // "Update a pull request" as GitHub answers it: 422 for a field of the wrong type or a body
      // over its 65536 characters, else 200 with the pull request as it now is.
      auto it = pulls.find(std::atoll(m[0].c_str()));
      if (it == pulls.end()) return not_found();
      nlohmann::json in = nlohmann::json::parse(req.body, nullptr, false);
      if (!in.is_object()) return Answer(req, res, 400, {{"message", "Problems parsing JSON"}});
      for (const char* field : {"title", "body", "state"})
        if (in.contains(field) && !in[field].is_string() && !(in[field].is_null() && std::string(field) == "body"))
          return Answer(req, res, 422,
                        {{"message", "Invalid request.\n\nFor 'properties/" + std::string(field) + "', " + in[field].dump() +
                                         " is not a string."}});
      if (in.contains("body") && in["body"].is_string() &&
          text::CountCodePoints(in["body"].get<std::string>()) > 65'536)
        return Answer(req, res, 422,
                      {{"message", "Validation Failed"},
                       {"errors", {{{"resource", "Issue"}, {"code", "custom"}, {"field", "body"},
                                    {"message", "body is too long (maximum is 65536 characters)"}}}}});
      nlohmann::json& pr = it->second;
      for (const char* field : {"title", "body", "state"})
        if (in.contains(field)) pr[field] = in[field];
      if (in.contains("body")) pull_body_edits[it->first].push_back(in["body"].is_string() ? in["body"].get<std::string>() : "");
      pr["updated_at"] = Iso(clock_->NowMs());
      return Answer(req, res, 200, pr);
    }
    if (method == "PUT" && match(r + "/pulls/*/merge", &m)) {
      // PUT /pulls/N/merge as GitHub answers it: 405 when it cannot be merged (already merged,
      // closed, draft), 409 when `sha` is not the head any more, 200 with the merge commit.
      auto it = pulls.find(std::atoll(m[0].c_str()));
      if (it == pulls.end()) return not_found();
      nlohmann::json& pr = it->second;
      nlohmann::json in = nlohmann::json::parse(req.body, nullptr, false);
      if (pr.value("merged", false) || pr.value("state", "") != "open" || pr.value("draft", false))
        return Answer(req, res, 405,
                      {{"message", "Pull Request is not mergeable"},
                       {"documentation_url", "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request"}});
      if (in.is_object() && in.contains("sha") && in["sha"] != pr["head"]["sha"])
        return Answer(req, res, 409,
                      {{"message", "Head branch was modified. Review and try the merge again."},
                       {"documentation_url", "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request"}});
      const std::string merge_sha = "5e1ec7ed" + std::to_string(++next_id) + "00000000000000000000";
      pr["merged"] = true;
      pr["state"] = "closed";
      pr["merge_commit_sha"] = merge_sha;
      pr["merged_at"] = pr["closed_at"] = Iso(clock_->NowMs());
      return Answer(req, res, 200, {{"sha", merge_sha}, {"merged", true}, {"message", "Pull Request successfully merged"}});
    }
    not_found();
  }

  Clock* clock_;
  bool listening_ = true;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, std::deque<Script_>> scripts_;
  std::set<std::string> held_;  // "METHOD path" answered only after Release()
  HoldGate hold_;
  std::vector<ReplayEntry> replay_;
  std::vector<Logged> log_;
  std::string path_;  // the request being answered, without the prefix (under mu_)
};

}  // namespace superagent::testing
