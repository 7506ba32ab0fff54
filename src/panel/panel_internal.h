// Panel::Impl, declared once for the files that define it: panel.cpp (checks, outbound filter,
// reads, route table), panel_commands.cpp (commands, intercom), panel_stream.cpp (live updates).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "panel/intercom_api.h"
#include "panel/metrics_gather.h"
#include "panel/workers.h"
#include "superagent/panel.h"
#include "superagent/status.h"

namespace superagent::panel {

namespace panel_internal {

inline int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk: return 200;
    case Status::Code::kInvalidArgument: return 400;
    case Status::Code::kNotFound: return 404;
    case Status::Code::kConflict: return 409;
    case Status::Code::kUnavailable: return 503;
    default: return 500;
  }
}

// A log value: quoted when it has spaces or quotes, so lines split back into key=value pairs.
inline std::string Q(const std::string& v) {
  if (!v.empty() && v.find_first_of(" \t\"=\\\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c == '\n' ? ' ' : c);
  }
  return out + "\"";
}

}  // namespace panel_internal

struct Panel::Impl {
  using json = nlohmann::json;
  using Request = httplib::Request;
  using Response = httplib::Response;

  PanelContext ctx;
  std::string token;       // the panel token, or the fixed password of panel.token_env; never ""
  bool fixed_password = false;  // token is panel.token_env's: any Host, and the browser's Basic prompt
  std::string csrf;        // per-process CSRF token, handed to the page by /api/session
  std::string boot_id;     // tells the page the daemon restarted (new CSRF token, maybe new assets)
  std::unique_ptr<IntercomApi> intercom;  // null when the daemon runs no intercom
  UnservedWatch unserved;  // turns waiting for an executor no connected worker offers (workers.h)
  TicketOutcomeCache outcomes;  // settled Ticket outcomes, kept between /metrics scrapes
  std::atomic<bool> stopping{false};
  std::atomic<int> streams{0};
  std::mutex mu;
  std::condition_variable cv;

  // --- Checks shared by every route (panel.cpp) ---

  // Host and password, before routing. Handled means refused (the response is set).
  bool Refuse(const Request& req, Response& res);

  // The panel token in an Authorization header (Bearer, or Basic with any user name) or in the
  // cookie /login sets. Compared in constant time.
  bool Authenticated(const Request& req) const;

  // The one-click login link: the token as a query parameter, answered with the login cookie and
  // a redirect to the page (so the token leaves the address bar at once).
  void Login(const Request& req, Response& res);

  // Who gave a command: the user name the browser authenticated with, else a name the person
  // typed, else where the request came from.
  std::string Who(const Request& req, const json& body);

  // A command must be a same-origin JSON request carrying the CSRF token. On refusal the response
  // is set, a warning logged, and nothing changes.
  bool CommandAllowed(const Request& req, Response& res, const char* command, json* body);

  // --- The outbound filter (panel.cpp) ---

  // Every JSON answer of every route — a transcript, a report, an error quoting a peer — leaves
  // through here, so the outbound filter (issue 33) is the last thing before its bytes: no route
  // can forget it. Strings are filtered before the JSON is written, where a value with a quote or
  // a line break would be escaped and not found; and before httplib compresses the body (a
  // post-routing handler would see gzip).
  void SendJson(Response& res, int status, json body);
  void SendError(Response& res, int status, const std::string& message) { SendJson(res, status, {{"error", message}}); }

  // Needs-you's one card for what the filter kept out of published text: quiet (one card however
  // many times), and never the value, only where and what kind.
  json SecretsCard() const;

  // --- Reads (panel.cpp) ---

  // `user`: the name the browser authenticated with (HTTP Basic), so the page need not ask.
  json Session(const Request& req);

  // A read the store failed: 503 with the reason (the page says the store cannot be read, never
  // "Nothing needs you"), and the log line a person tailing it looks for.
  void SendRead(Response& res, const char* what, const Result<json>& body);

  Result<json> StatusJson();

  // Everything a person is needed for, one card per cause: what is not set up first, then
  // questions, decisions, problems (a platform's failing paths as one card), the policy file.
  Result<json> Needs();

  // Needs-you's verdict cards (issue 38; needs.h's VerdictCardsJson) at `now`: the last week's
  // would_accept records, and when each recent verdict was given (the panel's commands).
  Result<json> VerdictCards(TimeMs now);

  // "Now" for Needs-you and the worker pool: ctx.clock, or the system clock.
  TimeMs Now() const;

  // The remote workers' pool (issue 36) as it is now; nullopt when there is none.
  std::optional<exec::PoolView> Pool() const { return ctx.worker_pool ? ctx.worker_pool() : std::nullopt; }

  // What the live-update stream watches of the pool: its fingerprint (workers.h) and the
  // executors whose turns wait unserved long enough for Needs-you's card; "" without a pool.
  std::string PoolState();

  // --- Live updates (panel_stream.cpp) ---

  void Stream(const Request& req, Response& res);

  struct StreamState;

  // One turn of a live-update stream: hello first, then a change event whenever another
  // connection committed, keepalives between, and the end after kStreamLifetimeMs. False ends it.
  bool StreamStep(StreamState& state, std::size_t, httplib::DataSink& sink);

  // --- Commands (panel_commands.cpp) ---

  void Stop(const Request& req, Response& res);

  void Answer(const Request& req, Response& res);

  // Retry of a blocked Ticket (issue 34): a new turn now, recorded as the person's command.
  void RetryTicket(const Request& req, Response& res);

  // Retry of a set-aside item (issue 18): the Engine clears it and requeues it in one transaction.
  void RetrySetAside(const Request& req, Response& res);

  void Reload(const Request& req, Response& res);

  // Revoke of a remote worker's credential (issue 36): its leases end and their turns are offered
  // again; it must join again with the join token.
  void RevokeWorker(const Request& req, Response& res);

  // A person's verdict on a would_accept Decision (issue 38): "yes" (it was a request), "no" or
  // "unknown"; final. Recorded as the command "verdict" (target decision:<id>), which Needs-you's
  // batching reads for when a rule was last answered.
  void RecordVerdict(const Request& req, Response& res);

  // --- Communication center (SPEC §10) (panel_commands.cpp) ---

  void Reply(Response& res, const ApiReply& r) { SendJson(res, r.status, r.body); }

  // An intercom command: the usual command checks, then `run` as the person `who`; logged with
  // who and what. What was done is recorded in the commands table; a refusal changed nothing and
  // is only logged, like every other refused command.
  void IntercomCommand(const Request& req, Response& res, const char* command, const std::string& target,
                       const std::function<ApiReply(const std::string& who, const json& body)>& run);

  void InstallIntercom(httplib::Server& server);

  // --- The route table (panel.cpp) ---

  void Install(httplib::Server& server);
};

}  // namespace superagent::panel
