// The panel's HTTP surface: the checks every route shares, read routes over Views, the route table
// and the embedded page; commands are in panel_commands.cpp, live updates (Server-Sent Events) in
// panel_stream.cpp. docs/005-panel.md documents every route.
#include "superagent/panel.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "panel/assets.h"
#include "panel/guard.h"
#include "panel/http_limits.h"
#include "panel/judgement_api.h"
#include "panel/metrics_gather.h"
#include "panel/needs.h"
#include "panel/panel_internal.h"
#include "panel/panel_json.h"
#include "policy/policy_lines.h"
#include "superagent/assign_or_return.h"
#include "superagent/clock.h"
#include "superagent/engine.h"
#include "superagent/github_threads.h"
#include "superagent/host_port.h"
#include "superagent/json_read.h"
#include "superagent/secret_filter.h"
#include "superagent/views.h"

namespace superagent::panel {

using nlohmann::json;
using httplib::Request;
using httplib::Response;
using panel_internal::HttpStatusOf;
using panel_internal::Q;

namespace {

// How many of the last week's messages addressing the agent Needs-you's answer cards read: enough
// for a busy team's week; older ones beyond it are what `explain` is for.
constexpr int kAnswerCardScan = 500;


void WriteJson(Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  // Text from outside (a name, a transcript) may hold invalid UTF-8; it is shown replaced.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// The request this server thread is answering ("GET /api/tickets/1"), set before routing: what
// the outbound filter's warning names. httplib answers a request on one thread from its
// pre-routing handler to its last write.
thread_local std::string t_answering;

int IntParam(const Request& req, const char* name, int fallback, int lo, int hi) {
  if (!req.has_param(name)) return fallback;
  try {
    return std::clamp(std::stoi(req.get_param_value(name)), lo, hi);
  } catch (...) {
    return fallback;
  }
}

// How GitHub is read (issue 37): each repository's saved reading (the Integration's cursor
// "reading" of github:<owner>/<name>) and the account's rate budget (the cursor "rate" of
// "github"). Values of the wrong type read as absent: cursors are the Source's, not the panel's.
json GitHubReadingJson(const std::vector<CursorRecord>& rows) {
  json repositories = json::array(), rate = nullptr;
  for (const CursorRecord& cr : rows) {
    const json v = json::parse(cr.value, nullptr, false);
    if (!v.is_object()) continue;
    if (cr.name == "reading" && cr.source.rfind("github:", 0) == 0) {
      const TimeMs next = json_read::IntOr(v, "next_at"), last = json_read::IntOr(v, "last_at");
      const TimeMs interval = json_read::IntOr(v, "interval_ms");
      if (interval <= 0) continue;  // not a reading the Integration wrote
      repositories.push_back({{"repo", cr.source.substr(7)},
                              {"interval_s", interval / 1000},
                              {"why", json_read::StringOr(v, "why")},
                              {"next_at", next > 0 ? TimeJson(next) : json(nullptr)},
                              {"last_at", last > 0 ? TimeJson(last) : json(nullptr)}});
    } else if (cr.name == "rate" && cr.source == "github") {
      rate = {{"counted_last_hour", json_read::IntOr(v, "counted_last_hour")},
              {"budget_per_hour", json_read::IntOr(v, "budget_per_hour")},
              {"remaining", json_read::IntOr(v, "remaining", -1)},
              {"limit", json_read::IntOr(v, "limit", -1)}};
    }
  }
  return json{{"repositories", repositories}, {"rate", rate}};
}

}  // namespace

// --- Checks shared by every route ---

bool Panel::Impl::Refuse(const Request& req, Response& res) {
  t_answering = req.method + " " + req.path.substr(0, 100);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  // Before anything else, and before the body is read (httplib reads it after this handler).
  if (BodyRefusal b = CheckBody(req.method, req.path, req.has_header("Content-Length"),
                                req.get_header_value("Content-Length"), req.get_header_value("Transfer-Encoding"));
      b.status != 0) {
    spdlog::warn("http request refused reason=body status={} path={} remote={}", b.status, Q(req.path.substr(0, 100)),
                 req.remote_addr);
    SendError(res, b.status, b.message);
    return true;
  }
  // Webhooks arrive through a public proxy with its own Host and carry their own proof (a
  // signature over the body, checked by their Source), so the panel's checks do not apply.
  if (req.path == "/healthz" || req.path.rfind("/hooks/", 0) == 0) return false;
  if (std::string why = CheckHost(req.get_header_value("Host"), fixed_password); !why.empty()) {
    spdlog::warn("panel request refused reason=host host={} remote={}", Q(req.get_header_value("Host").substr(0, 100)),
                 req.remote_addr);
    SendError(res, 403, why);
    return true;
  }
  // No ambient authority (issue 19): a process on this host that cannot read the token — a
  // worker — can neither read nor command, with or without the CSRF token.
  if (NeedsToken(req.method, req.path) && !Authenticated(req)) {
    const bool command = req.method != "GET" && req.method != "HEAD";
    if (command)
      spdlog::warn("panel request refused reason=not_logged_in method={} path={} remote={}", req.method,
                   Q(req.path.substr(0, 100)), req.remote_addr);
    if (fixed_password) {
      res.set_header("WWW-Authenticate", "Basic realm=\"superagent panel\", charset=\"UTF-8\"");
      SendError(res, 401, "this panel needs its password (the value of the variable named by panel.token_env)");
    } else {
      SendError(res, 401,
                "not logged in: on the daemon's host run `superagent panel-url --config <config>` and open the link "
                "it prints (or send Authorization: Bearer <data_dir/panel.token>)");
    }
    return true;
  }
  return false;
}

bool Panel::Impl::Authenticated(const Request& req) const {
  return CheckToken(req.get_header_value("Authorization"), token, nullptr) ||
         CheckCookie(req.get_header_value("Cookie"), token);
}

void Panel::Impl::Login(const Request& req, Response& res) {
  res.set_header("Cache-Control", "no-store");
  if (!ConstantTimeEquals(req.get_param_value("token"), token)) {
    spdlog::warn("panel login refused reason=wrong_token remote={}", req.remote_addr);
    res.status = 401;
    res.set_content("This login link is wrong or out of date.\n"
                    "On the daemon's host, run: superagent panel-url --config <your config>\n"
                    "and open the link it prints.\n",
                    "text/plain; charset=utf-8");
    return;
  }
  spdlog::info("panel login remote={}", req.remote_addr);
  res.set_header("Set-Cookie", LoginCookie(req.get_header_value("Host"), token));
  res.set_redirect("/", 303);
}

std::string Panel::Impl::Who(const Request& req, const json& body) {
  std::string user;
  CheckToken(req.get_header_value("Authorization"), token, &user);
  if (user.empty()) user = CleanName(json_read::StringOr(body, "name"));
  return user.empty() ? "panel user at " + req.remote_addr : user + " (panel)";
}

bool Panel::Impl::CommandAllowed(const Request& req, Response& res, const char* command, json* body) {
  auto refuse = [&](int status, const std::string& why) {
    spdlog::warn("panel command refused command={} remote={} reason={}", command, req.remote_addr, Q(why));
    SendError(res, status, why);
    return false;
  };
  if (std::string why = CheckSameOrigin(req.get_header_value("Origin"), req.get_header_value("Sec-Fetch-Site"),
                                        req.get_header_value("Host"));
      !why.empty())
    return refuse(403, why);
  if (!ConstantTimeEquals(req.get_header_value("X-CSRF-Token"), csrf))
    return refuse(403, "missing or stale CSRF token: reload the panel (GET /api/session gives the current one)");
  if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0)
    return refuse(415, "commands take a JSON body (Content-Type: application/json)");
  auto parsed = json_read::ParseObject(req.body.empty() ? "{}" : req.body, "the body");
  if (!parsed.ok()) return refuse(400, parsed.status().message());
  *body = std::move(*parsed);
  return true;
}

// --- The outbound filter ---

void Panel::Impl::SendJson(Response& res, int status, json body) {
  if (ctx.secrets != nullptr) ctx.secrets->CleanJson(&body, "panel", t_answering);
  WriteJson(res, status, body);
}

json Panel::Impl::SecretsCard() const {
  if (ctx.secrets == nullptr) return nullptr;
  std::optional<RedactionEvent> last = ctx.secrets->Last();
  if (!last) return nullptr;
  std::int64_t total = 0;
  for (const auto& [path, n] : ctx.secrets->Counts()) total += n;
  std::string what;
  for (const std::string& w : last->what) what += (what.empty() ? "" : ", ") + w;
  return {{"count", total},
          {"last_at", TimeJson(last->at)},
          {"path", last->path},
          {"where", last->where},
          {"kinds", last->what},
          {"what", "The daemon kept a secret out of what it published " + std::to_string(total) +
                       (total == 1 ? " time" : " times") + " since it started; last in " + last->path + " (" +
                       last->where + "): " + what + "."},
          {"fix", "Nothing left the host with it: the marker [REDACTED] stands where it was. Find who printed it "
                  "(a worker's transcript, a message) and why; a worker that can print a key can also send it, so "
                  "rotate that secret if the worker had network (execution.network: on). The warning lines "
                  "\"secret redacted\" in the daemon's log list each occasion."}};
}

// --- Reads ---

json Panel::Impl::Session(const Request& req) {
  std::string user;
  CheckToken(req.get_header_value("Authorization"), token, &user);
  return {{"csrf_token", csrf},
          {"boot_id", boot_id},
          {"version", SUPERAGENT_VERSION},
          {"auth", fixed_password ? "password" : "token"},
          {"user", user.empty() ? json(nullptr) : json(user)}};
}

void Panel::Impl::SendRead(Response& res, const char* what, const Result<json>& body) {
  if (body.ok()) return SendJson(res, 200, *body);
  if (body.status().code() == Status::Code::kNotFound) return SendError(res, 404, body.status().message());
  spdlog::error("panel read failed what={} error=\"{}\"", what, body.status().ToString());
  SendError(res, 503, std::string("the store could not be read (") + what + "): " + body.status().message());
}

Result<json> Panel::Impl::StatusJson() {
  ASSIGN_OR_RETURN(StatusCounts c, ctx.views->Counts());
  ASSIGN_OR_RETURN(auto policy, ctx.views->CurrentPolicy());
  ASSIGN_OR_RETURN(auto health, ctx.views->SourcesHealth());
  ASSIGN_OR_RETURN(auto cursor_rows, ctx.views->Cursors());
  json j;
  j["mode"] = ModeName(ctx.engine->CurrentPolicy().mode);
  j["policy_version"] = ctx.engine->PolicyVersion();
  // Issue 37: History filters by them when there are several.
  j["repositories"] = ctx.repositories ? ctx.repositories() : std::vector<std::string>();
  if (const auto& p = policy)
    j["policy"] = {{"version", p->version}, {"origin", p->origin}, {"since", TimeJson(p->created_at)}};
  j["triggers"] = c.triggers;
  j["tickets"] = c.tickets;
  j["decisions"] = c.decisions;
  j["would_accept"] = c.would_accept;
  j["eval_queue"] = c.eval_queue;
  j["receipts_pending"] = c.receipts_pending;
  j["receipts_failed"] = c.receipts_failed;
  std::optional<SlotsView> live = ctx.slots ? ctx.slots() : std::nullopt;
  // The scheduler's own count when it runs: with execution.placement remote or any it holds the
  // workers' turns too (workers.max_turns), not only execution.slots.
  j["slots"] = {{"configured", live ? live->worker_slots : ctx.slots_configured},
                {"reserved_for_people", 1},
                {"in_use", live ? live->worker_used : c.assignments_running},
                {"reserved_in_use", live && live->reserved_used},
                {"waiting", c.assignments_pending},
                {"execution_running", live.has_value()}};
  json sources = json::array();
  for (const SourceHealth& h : health) sources.push_back(HealthJson(h));
  j["sources"] = sources;
  json cursors = json::array();
  for (const CursorRecord& cr : cursor_rows)
    cursors.push_back(
        {{"source", cr.source}, {"name", cr.name}, {"value", cr.value}, {"updated_at", TimeJson(cr.updated_at)}});
  j["cursors"] = cursors;
  j["github_reading"] = GitHubReadingJson(cursor_rows);
  return j;
}

Result<json> Panel::Impl::Needs() {
  json questions = json::array(), decisions = json::array(), set_aside = json::array();
  ASSIGN_OR_RETURN(auto waiting, ctx.views->TicketsInStage(Stage::kWaitingForPerson, 50));
  ASSIGN_OR_RETURN(auto blocked, ctx.views->TicketsInStage(Stage::kBlocked, 50));
  ASSIGN_OR_RETURN(auto problem_rows, ctx.views->Problems(ctx.problem_threshold));
  ASSIGN_OR_RETURN(auto set_aside_rows, ctx.views->SetAside(50));
  ASSIGN_OR_RETURN(auto health, ctx.views->SourcesHealth());
  for (const TicketRow& r : waiting) questions.push_back(TicketRowJson(r));
  for (const TicketRow& r : blocked) decisions.push_back(TicketRowJson(r));
  for (const QuarantineItem& q : set_aside_rows) set_aside.push_back(SetAsideJson(q));
  std::set<std::string> folded;
  std::vector<SetupGap> gaps = ctx.setup;
  if (ctx.live_setup)
    for (SetupGap& g : ctx.live_setup()) gaps.push_back(std::move(g));
  json setup = SetupCardsJson(gaps, health, &folded);
  json problems = ProblemCardsJson(problem_rows, folded);
  json policy_file = nullptr;
  if (ctx.policy_on_disk)
    if (auto on_disk = ctx.policy_on_disk()) policy_file = PolicyFileCardJson(*on_disk);
  json secrets = SecretsCard();
  const TimeMs now = Now();
  // Turns no connected worker can take (issue 36): they would wait for ever, and quietly.
  const std::optional<exec::PoolView> pool = Pool();
  json workers = pool ? UnservedCardJson(unserved.Update(pool, now), *pool) : json(nullptr);
  // The answer invariant's backstop (issue 34): the last week's messages that address the agent.
  ASSIGN_OR_RETURN(auto asked, ctx.views->AddressedSince(now - 7LL * 24 * 3600 * 1000, kAnswerCardScan));
  const Policy policy = ctx.engine->CurrentPolicy();
  json unanswered = UnansweredCardJson(asked, policy, now);
  json not_allowed = NotAllowedCardJson(asked, policy, now);
  ASSIGN_OR_RETURN(json verdicts, VerdictCards(now));
  // A rule that earned auto, or lost it (issue 38): the edit is proposed here, a person makes it.
  ASSIGN_OR_RETURN(auto precision, ReadRulePrecision(*ctx.views, policy.judgement, now));
  json mode_proposals = ModeProposalCardsJson(
      ProposalsFor(precision, policy, ctx.policy_file, PolicyFileText(ctx.policy_file)), precision, ctx.policy_file);
  std::size_t count = setup.size() + questions.size() + decisions.size() + problems.size() + set_aside.size() +
                      (policy_file.is_null() ? 0 : 1) + (secrets.is_null() ? 0 : 1) + (unanswered.is_null() ? 0 : 1) +
                      (not_allowed.is_null() ? 0 : 1) + (workers.is_null() ? 0 : 1) + verdicts.size() +
                      mode_proposals.size();
  return json{{"count", count},         {"setup", setup},         {"questions", questions},
              {"decisions", decisions}, {"problems", problems},   {"set_aside", set_aside},
              {"policy_file", policy_file}, {"secrets", secrets}, {"unanswered", unanswered},
              {"not_allowed", not_allowed}, {"workers", workers}, {"verdicts", verdicts},
              {"mode_proposals", mode_proposals}};
}

Result<json> Panel::Impl::VerdictCards(TimeMs now) {
  ASSIGN_OR_RETURN(auto records, ctx.views->WouldAccepts(now - kVerdictWindowMs));
  // When each verdict was given, by the panel or in a discussion: the store's own record.
  std::map<std::int64_t, TimeMs> verdict_at;
  for (const WouldAcceptRecord& w : records)
    if (w.verdict) verdict_at.emplace(w.decision, w.verdict_at);
  return VerdictCardsJson(records, verdict_at, now);
}

TimeMs Panel::Impl::Now() const { return (ctx.clock ? ctx.clock : SystemClock())->NowMs(); }

std::string Panel::Impl::PoolState() {
  if (!ctx.worker_pool) return "";
  const std::optional<exec::PoolView> pool = Pool();
  std::string state = PoolFingerprint(pool);
  for (const auto& [executor, since] : unserved.Update(pool, Now())) state += "\nunserved " + executor;
  return state;
}

// --- The route table ---

void Panel::Impl::Install(httplib::Server& server) {
  // Every connection holds a thread (streams for up to 30 minutes): the pool grows with them.
  HardenServer(server);
  // What a handler throws is a fault of ours, not the caller's: a generic 500 with the details
  // in the log only (httplib would put the exception's text in a response header).
  server.set_exception_handler([this](const Request& req, Response& res, std::exception_ptr ep) {
    std::string what = "an exception of unknown type";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("request failed unexpectedly method={} path={} remote={} error={}", req.method,
                  Q(req.path.substr(0, 100)), req.remote_addr, Q(what));
    SendError(res, 500, "internal error: the request failed; the daemon's log says why");
  });
  server.set_pre_routing_handler([this](const Request& req, Response& res) {
    return Refuse(req, res) ? httplib::Server::HandlerResponse::Handled : httplib::Server::HandlerResponse::Unhandled;
  });
  server.Get("/healthz", [](const Request&, Response& res) { res.set_content("ok\n", "text/plain"); });
  server.Get("/login", [this](const Request& req, Response& res) { Login(req, res); });
  server.Get("/api/session", [this](const Request& req, Response& res) { SendJson(res, 200, Session(req)); });
  server.Get("/api/status", [this](const Request&, Response& res) { SendRead(res, "status", StatusJson()); });
  server.Get("/api/needs", [this](const Request&, Response& res) { SendRead(res, "needs", Needs()); });
  server.Get("/api/tickets", [this](const Request& req, Response& res) {
    std::optional<Stage> stage;
    if (std::string s = req.get_param_value("stage"); !s.empty()) {
      Stage parsed;
      if (!ParseStage(s, &parsed))
        return SendError(res, 400, "stage must be one of working, idle, waiting_for_person, ready, blocked, ended");
      stage = parsed;
    }
    std::optional<TicketId> before;
    if (int b = IntParam(req, "before", 0, 0, INT32_MAX); b > 0) before = b;
    const std::string repo = req.get_param_value("repo");
    if (!repo.empty() && !github_threads::IsRepositoryName(repo))
      return SendError(res, 400, "repo must be a repository's owner/name");
    auto rows = ctx.views->Tickets(stage, IntParam(req, "limit", 50, 1, 200), before, repo);
    if (!rows.ok()) return SendRead(res, "tickets", rows.status());
    json list = json::array();
    for (const TicketRow& r : *rows) list.push_back(TicketRowJson(r));
    SendJson(res, 200, {{"tickets", list}});
  });
  server.Get(R"(/api/tickets/(\d{1,18}))", [this](const Request& req, Response& res) {
    auto d = ctx.views->Detail(std::stoll(req.matches[1].str()));
    if (!d.ok()) return SendRead(res, "ticket", d.status());
    SendJson(res, 200, DetailJson(*d));
  });
  server.Get("/api/observe", [this](const Request& req, Response& res) {
    auto rows = ctx.views->WouldAccept(IntParam(req, "limit", 50, 1, 200));
    if (!rows.ok()) return SendRead(res, "observe", rows.status());
    json list = json::array();
    for (const DecisionView& d : *rows) list.push_back(DecisionJson(d));
    SendJson(res, 200, {{"mode", ModeName(ctx.engine->CurrentPolicy().mode)}, {"decisions", list}});
  });
  // Each rule's record, the policy edits it earns, and the week's outcomes (issue 38).
  server.Get("/api/judgement", [this](const Request&, Response& res) {
    SendRead(res, "judgement", ReadJudgement(*ctx.views, ctx.engine->CurrentPolicy(), ctx.policy_file, Now()));
  });
  server.Get("/api/commands", [this](const Request& req, Response& res) {
    auto rows = ctx.views->Commands(IntParam(req, "limit", 50, 1, 200));
    if (!rows.ok()) return SendRead(res, "commands", rows.status());
    json list = json::array();
    for (const CommandRecord& c : *rows) list.push_back(CommandJson(c));
    SendJson(res, 200, {{"commands", list}});
  });
  server.Get("/api/explain", [this](const Request& req, Response& res) {
    std::string q = req.get_param_value("q");
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t\r\n"));
      s.erase(s.find_last_not_of(" \t\r\n") + 1);
      return s;
    };
    q = trim(q);
    if (q.empty()) return SendError(res, 400, "parameter q (a trigger id or message URL) is required");
    auto story = ctx.views->Explain(q, ctx.engine->CurrentPolicy(), Now());
    if (!story.ok()) return SendError(res, HttpStatusOf(story.status()), story.status().message());
    // Where the key that would change the verdict is written, as the CLI says it.
    auto policy = ctx.views->CurrentPolicy();
    std::error_code ec;
    if (story->contains("change") && policy.ok() && *policy && std::filesystem::is_regular_file((*policy)->origin, ec)) {
      std::vector<std::string> path;
      for (const json& p : (*story)["change"]["path"])
        if (p.is_string()) path.push_back(p.get<std::string>());
      const std::string where = KeyLineWords((*policy)->origin, path);
      (*story)["change"]["where"] = where;
      (*story)["told"].push_back(where);
    }
    SendJson(res, 200, *story);
  });
  // Prometheus scrapes: behind the same Host and password checks as the API (pre-routing).
  server.Get("/metrics", [this](const Request&, Response& res) {
    res.set_header("Cache-Control", "no-store");
    auto snapshot = GatherMetrics(*ctx.engine, *ctx.views, ctx.slots_configured, ctx.problem_threshold,
                                  ctx.slots ? ctx.slots() : std::nullopt, Pool(), Now(), &outcomes);
    // A scrape of made-up zeros would hide an outage from the alert meant to catch it.
    if (!snapshot.ok()) return SendRead(res, "metrics", snapshot.status());
    if (ctx.secrets != nullptr) snapshot->secrets_redacted = ctx.secrets->Counts();
    res.set_content(metrics::RenderPrometheus(*snapshot), metrics::kContentType);
  });
  // The remote workers' pool (issue 36): in memory, not in the store, so read here at each call.
  server.Get("/api/workers", [this](const Request&, Response& res) { SendJson(res, 200, WorkersJson(Pool(), Now())); });
  server.Get("/api/events", [this](const Request& req, Response& res) { Stream(req, res); });
  server.Post(R"(/api/tickets/(\d{1,18})/stop)", [this](const Request& req, Response& res) { Stop(req, res); });
  server.Post(R"(/api/tickets/(\d{1,18})/answer)", [this](const Request& req, Response& res) { Answer(req, res); });
  server.Post("/api/policy/reload", [this](const Request& req, Response& res) { Reload(req, res); });
  server.Post(R"(/api/tickets/(\d{1,18})/retry)", [this](const Request& req, Response& res) { RetryTicket(req, res); });
  // Any id is routed here, so a bad one is a precise 400 rather than "no such route".
  server.Post(R"(/api/decisions/([^/]*)/verdict)", [this](const Request& req, Response& res) { RecordVerdict(req, res); });
  server.Post("/api/set-aside/retry", [this](const Request& req, Response& res) { RetrySetAside(req, res); });
  // Any name is routed here (a line break too: ECMAScript's "." stops at one), so a bad one is a
  // precise 400 rather than "no such route".
  server.Post(R"(/api/workers/([\s\S]*)/revoke)",
              [this](const Request& req, Response& res) { RevokeWorker(req, res); });
  InstallIntercom(server);
  server.Get(R"(/api/.*)", [this](const Request& req, Response& res) {
    SendError(res, 404, "no such API route: " + req.path.substr(0, 100));
  });
  server.Get(R"(/.*)", [](const Request& req, Response& res) {
    const Asset* a = FindAsset(req.path);
    if (!a) {
      res.status = 404;
      res.set_content("not found\n", "text/plain");
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_content(reinterpret_cast<const char*>(a->data), a->size, a->content_type);
  });
}

Panel::Panel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Panel::~Panel() { Stop(); }

void Panel::Stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->cv.notify_all();
}

Result<std::unique_ptr<Panel>> InstallRoutes(httplib::Server& server, PanelContext context) {
  if (!context.engine || !context.views) return Status::InvalidArgument("the panel needs an Engine and Views");
  std::string host;
  int port = 0;
  if (!SplitHostPort(context.listen, &host, &port))
    return Status::InvalidArgument("panel.listen: expected host:port, got \"" + context.listen + "\"");
  auto impl = std::make_unique<Panel::Impl>();
  const std::string& env = context.password_env;
  if (!env.empty()) {
    impl->token = context.password;
    impl->fixed_password = true;
    if (impl->token.empty())
      return Status::InvalidArgument("panel.token_env names " + env +
                                     ", which is unset or empty: export the panel password in that variable");
  } else if (!IsLoopbackHost(host)) {
    return Status::InvalidArgument("panel.listen " + context.listen +
                                   " is not a loopback address: set panel.token_env to the NAME of an environment "
                                   "variable holding the panel password, or listen on 127.0.0.1 behind a proxy");
  } else {
    impl->token = context.token;
  }
  if (impl->token.empty())
    return Status::InvalidArgument("the panel has no token: the daemon passes data_dir/panel.token (or set panel.token_env)");
  impl->csrf = RandomToken();
  impl->boot_id = RandomToken().substr(0, 12);
  impl->ctx = std::move(context);
  if (impl->ctx.intercom) impl->intercom = std::make_unique<IntercomApi>(impl->ctx.intercom, impl->ctx.engine, impl->ctx.views, SystemClock());
  impl->Install(server);
  return std::make_unique<Panel>(std::move(impl));
}

}  // namespace superagent::panel
