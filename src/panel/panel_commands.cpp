// The panel's commands (stop, answer, retry, policy reload, verdicts) and its communication center: what
// people do through the panel, kept apart from what it shows (panel.cpp) as both grow.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "panel/panel_internal.h"
#include "panel/panel_json.h"
#include "superagent/engine.h"
#include "superagent/json_read.h"
#include "superagent/judgement.h"
#include "superagent/views.h"

namespace superagent::panel {

using nlohmann::json;
using httplib::Request;
using httplib::Response;
using panel_internal::HttpStatusOf;
using panel_internal::Q;

// --- Commands ---

void Panel::Impl::Stop(const Request& req, Response& res) {
  json body;
  if (!CommandAllowed(req, res, "stop", &body)) return;
  TicketId id = std::stoll(req.matches[1].str());
  auto confirm = json_read::OptBool(body, "confirm");
  if (!confirm.ok()) return SendError(res, 400, confirm.status().message());
  if (!*confirm) return SendError(res, 400, "a stop must be confirmed: send {\"confirm\": true} (the page asks first)");
  auto mandate = ctx.views->GetMandate(id);
  if (!mandate.ok()) return SendError(res, HttpStatusOf(mandate.status()), "ticket " + std::to_string(id) + " does not exist");
  if (!mandate->ended_as.empty())
    return SendError(res, 409, "ticket " + std::to_string(id) + " is already stopped (mandate " + mandate->ended_as + ")");
  const std::string who = Who(req, body);
  Status s = ctx.engine->StopTicket(id, who);
  spdlog::info("panel command=stop target=ticket:{} by={} remote={} result={}", id, Q(who), req.remote_addr,
               s.ok() ? "ok" : Q(s.ToString()));
  if (!s.ok()) return SendError(res, HttpStatusOf(s), s.message());
  auto detail = ctx.views->Detail(id);
  SendJson(res, 200, {{"ok", true}, {"by", who}, {"ticket", detail.ok() ? TicketRowJson(detail->row) : json(nullptr)}});
}

void Panel::Impl::Answer(const Request& req, Response& res) {
  json body;
  if (!CommandAllowed(req, res, "answer", &body)) return;
  TicketId id = std::stoll(req.matches[1].str());
  const json* answer = json_read::Find(body, "answer");
  if (answer == nullptr || answer->is_null() ||
      (answer->is_string() && answer->get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos))
    return SendError(res, 400, "the answer is empty");
  const std::string who = Who(req, body);
  Status s = ctx.engine->AnswerQuestion(id, who, *answer);
  spdlog::info("panel command=answer target=ticket:{} by={} remote={} result={}", id, Q(who), req.remote_addr,
               s.ok() ? "ok" : Q(s.ToString()));
  if (!s.ok()) return SendError(res, HttpStatusOf(s), s.message());
  SendJson(res, 200, {{"ok", true}, {"by", who}});
}

void Panel::Impl::RetryTicket(const Request& req, Response& res) {
  json body;
  if (!CommandAllowed(req, res, "retry", &body)) return;
  TicketId id = std::stoll(req.matches[1].str());
  const std::string who = Who(req, body);
  Status s = ctx.engine->RetryTicket(id, who);
  spdlog::info("panel command=retry target=ticket:{} by={} remote={} result={}", id, Q(who), req.remote_addr,
               s.ok() ? "ok" : Q(s.ToString()));
  if (!s.ok()) return SendError(res, HttpStatusOf(s), s.message());
  SendJson(res, 200, {{"ok", true}, {"by", who}});
}

void Panel::Impl::RetrySetAside(const Request& req, Response& res) {
  json body;
  if (!CommandAllowed(req, res, "retry", &body)) return;
  auto text = [&](const char* key) {
    auto it = body.find(key);
    return it != body.end() && it->is_string() ? std::optional<std::string>(it->get<std::string>()) : std::nullopt;
  };
  const std::optional<std::string> kind = text("kind"), item = text("item");
  if (!kind || (*kind != kQuarantineEffect && *kind != kQuarantineEval && *kind != kQuarantineTurn))
    return SendError(res, 400, "kind must be \"effect\", \"eval\" or \"turn\"");
  if (!item || item->empty() || item->size() > 1000)
    return SendError(res, 400, "item must be the set-aside item's id (a string of 1 to 1000 bytes)");
  const std::string who = Who(req, body);
  Status s = ctx.engine->RetryQuarantined(*kind, *item, who);
  spdlog::info("panel command=retry target={}:{} by={} remote={} result={}", *kind, Q(item->substr(0, 100)), Q(who),
               req.remote_addr, s.ok() ? "ok" : Q(s.ToString()));
  if (!s.ok()) return SendError(res, HttpStatusOf(s), s.message());
  SendJson(res, 200, {{"ok", true}, {"by", who}});
}

void Panel::Impl::Reload(const Request& req, Response& res) {
  json body;
  if (!CommandAllowed(req, res, "reload_policy", &body)) return;
  if (!ctx.reload_policy) return SendError(res, 501, "this server cannot reload the policy");
  const std::string who = Who(req, body);
  PolicyReloadResult r = ctx.reload_policy();
  json result{{"valid", r.valid}, {"changed", r.changed}, {"version", r.version}, {"origin", r.origin},
              {"problems", r.problems}};
  if (!r.error.empty()) result["error"] = r.error;
  Status recorded = ctx.engine->RecordCommand(who, "reload_policy", "policy", result.dump());
  spdlog::info("panel command=reload_policy by={} remote={} valid={} changed={} version={}", Q(who), req.remote_addr,
               r.valid, r.changed, r.version);
  if (!recorded.ok()) spdlog::error("panel command not recorded error={}", Q(recorded.ToString()));
  result["by"] = who;
  SendJson(res, r.valid && r.error.empty() ? 200 : 422, result);
}

void Panel::Impl::RevokeWorker(const Request& req, Response& res) {
  json body;
  if (!CommandAllowed(req, res, "revoke_worker", &body)) return;
  // The name came from a stranger's announcement and now from a URL: checked before it goes
  // anywhere, the log included.
  const std::string worker = req.matches[1].str();
  if (!IsWorkerName(worker)) {
    spdlog::warn("panel command refused command=revoke_worker remote={} reason=\"not a worker name\"", req.remote_addr);
    return SendError(res, 400, "a worker's name is 1 to 64 of A-Z a-z 0-9 . _ -");
  }
  auto confirm = json_read::OptBool(body, "confirm");
  if (!confirm.ok()) return SendError(res, 400, confirm.status().message());
  if (!*confirm)
    return SendError(res, 400, "a revoke must be confirmed: send {\"confirm\": true} (the page asks first)");
  const std::string who = Who(req, body);
  const bool pool = Pool().has_value();
  const bool revoked = pool && ctx.revoke_worker && ctx.revoke_worker(worker);
  spdlog::info("panel command=revoke_worker target=worker:{} by={} remote={} result={}", worker, Q(who), req.remote_addr,
               revoked ? "ok" : pool ? "unknown" : "no_pool");
  if (!revoked)
    return SendError(res, 404, pool ? "no worker named " + worker + " is known to the daemon"
                                    : "this daemon has no remote workers (execution.placement is local)");
  if (Status s = ctx.engine->RecordCommand(who, "revoke_worker", "worker:" + worker, json{{"worker", worker}}.dump());
      !s.ok())
    spdlog::error("panel command not recorded error={}", Q(s.ToString()));
  SendJson(res, 200, {{"ok", true}, {"worker", worker}, {"by", who}});
}

void Panel::Impl::RecordVerdict(const Request& req, Response& res) {
  json body;
  if (!CommandAllowed(req, res, "verdict", &body)) return;
  const std::string raw = req.matches[1].str();
  std::int64_t id = 0;
  if (raw.empty() || raw.size() > 18 || raw.find_first_not_of("0123456789") != std::string::npos ||
      (id = std::stoll(raw)) <= 0) {
    spdlog::warn("panel command refused command=verdict remote={} reason=\"not a decision id\"", req.remote_addr);
    return SendError(res, 400, "a decision id is a positive whole number (the id /api/needs lists)");
  }
  const std::string word = json_read::StringOr(body, "verdict");
  const std::optional<Verdict> verdict = ParseVerdict(word);
  if (!verdict) return SendError(res, 400, "verdict must be \"yes\", \"no\" or \"unknown\"");
  const std::string who = Who(req, body);
  Status s = ctx.engine->RecordVerdict(id, *verdict, who, "panel");
  spdlog::info("panel command=verdict target=decision:{} verdict={} by={} remote={} result={}", id, word, Q(who),
               req.remote_addr, s.ok() ? "ok" : Q(s.ToString()));
  if (!s.ok()) return SendError(res, HttpStatusOf(s), s.message());
  // Needs-you's batching reads when a rule was last answered from here.
  if (Status recorded = ctx.engine->RecordCommand(who, "verdict", "decision:" + std::to_string(id),
                                                  json{{"decision", id}, {"verdict", word}}.dump());
      !recorded.ok())
    spdlog::error("panel command not recorded error={}", Q(recorded.ToString()));
  SendJson(res, 200, {{"ok", true}, {"decision", id}, {"verdict", word}, {"by", who}});
}

// --- Communication center (SPEC §10) ---

void Panel::Impl::IntercomCommand(const Request& req, Response& res, const char* command, const std::string& target,
                                  const std::function<ApiReply(const std::string& who, const json& body)>& run) {
  json body;
  if (!CommandAllowed(req, res, command, &body)) return;
  if (!intercom) return SendError(res, 503, "the communication center is off: this daemon runs no intercom");
  const std::string who = Who(req, body);
  ApiReply r = run(who, body);
  const std::string outcome = r.status == 200 ? "ok" : Q(json_read::StringOr(r.body, "error", "refused"));
  spdlog::info("panel command={} target={} by={} remote={} result={}", command, target, Q(who), req.remote_addr, outcome);
  if (r.status == 200)
    if (Status s = ctx.engine->RecordCommand(who, command, target, r.body.dump()); !s.ok())
      spdlog::error("panel command not recorded error={}", Q(s.ToString()));
  Reply(res, r);
}

void Panel::Impl::InstallIntercom(httplib::Server& server) {
  auto off = [this](Response& res) {
    if (intercom) return false;
    SendError(res, 503, "the communication center is off: this daemon runs no intercom");
    return true;
  };
  server.Get("/api/intercom", [this, off](const Request&, Response& res) {
    if (off(res)) return;
    ApiReply r = intercom->Overview();
    if (r.status == 200) r.body["enabled"] = true;
    Reply(res, r);
  });
  server.Get(R"(/api/intercom/sessions/([A-Za-z0-9_-]{1,64}))", [this, off](const Request& req, Response& res) {
    if (!off(res)) Reply(res, intercom->Session(req.matches[1].str()));
  });
  server.Get(R"(/api/intercom/groups/([A-Za-z0-9_-]{1,64}))", [this, off](const Request& req, Response& res) {
    if (off(res)) return;
    TimeMs since = 0;
    if (req.has_param("since")) {
      try {
        since = std::max<TimeMs>(0, std::stoll(req.get_param_value("since")));
      } catch (...) {
        return SendError(res, 400, "since must be a time in epoch milliseconds");
      }
    }
    Reply(res, intercom->Group(req.matches[1].str(), since));
  });
  server.Post(R"(/api/intercom/sessions/([A-Za-z0-9_-]{1,64})/send)", [this](const Request& req, Response& res) {
    const std::string id = req.matches[1].str();
    IntercomCommand(req, res, "intercom_send", "session:" + id,
                    [&](const std::string& who, const json& body) { return intercom->Send(who, id, body); });
  });
  server.Post("/api/intercom/sessions", [this](const Request& req, Response& res) {
    IntercomCommand(req, res, "new_session", "panel",
                    [&](const std::string& who, const json& body) { return intercom->NewSession(who, body); });
  });
  server.Post("/api/intercom/groups", [this](const Request& req, Response& res) {
    IntercomCommand(req, res, "intercom_group_create", "intercom_groups",
                    [&](const std::string&, const json& body) { return intercom->CreateGroup(body); });
  });
  server.Post(R"(/api/intercom/groups/([A-Za-z0-9_-]{1,64})/(members|remove|delete|broadcast))",
              [this](const Request& req, Response& res) {
                const std::string group = req.matches[1].str(), verb = req.matches[2].str();
                const std::string command = verb == "members" ? "intercom_group_add"
                                            : verb == "remove" ? "intercom_group_remove_member"
                                            : verb == "delete" ? "intercom_group_delete"
                                                               : "intercom_broadcast";
                IntercomCommand(req, res, command.c_str(), "group:" + group, [&](const std::string& who, const json& body) {
                  if (verb == "members") return intercom->AddMember(group, body);
                  if (verb == "remove") return intercom->RemoveMember(group, body);
                  if (verb == "delete") return intercom->DeleteGroup(group);
                  return intercom->Broadcast(who, group, body);
                });
              });
}

}  // namespace superagent::panel
