// The communication center's JSON (docs/005-panel.md "Communication center").
#include "panel/intercom_api.h"

#include <algorithm>

#include "panel/guard.h"
#include "panel/panel_json.h"
#include "superagent/json_read.h"
#include "superagent/panel_source.h"
#include "superagent/text.h"
#include "superagent/worker_sessions.h"

namespace superagent::panel {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxEvents = 300;        // the newest transcript events shown
constexpr std::size_t kToolTextChars = 2'000;  // a tool result, cut for the page

std::string Cut(const std::string& s, std::size_t max) { return text::CutNoted(s, max, text::Keep::kHead); }

// Refusals by the intercom's rules are 409 with the exact reason; a malformed request is 400.
ApiReply Refusal(const std::string& why) { return {409, {{"error", why}}}; }
ApiReply BadRequest(const std::string& why) { return {400, {{"error", why}}}; }

// The person speaks as themself: a body naming a sender is refused rather than ignored, so a
// client that tries to impersonate a session learns it cannot (the original trusted `from`).
std::string Impersonation(const json& body) {
  for (const char* k : {"from", "from_session", "sender", "caller", "as"})
    if (body.contains(k))
      return std::string("\"") + k + "\" is not accepted: the panel sends as you, the person; it never speaks for a session";
  return "";
}

std::optional<std::string> StringField(const json& body, const char* key) {
  if (!body.contains(key) || !body[key].is_string()) return std::nullopt;
  return body[key].get<std::string>();
}

json EventJson(const SessionEvent& e) {
  json j = {{"id", e.id}, {"kind", e.kind}, {"at", TimeJson(e.at)}, {"assignment", e.assignment}};
  const json& b = e.body;
  if (!b.is_object()) return j;
  // A transcript holds what models and commands wrote: a field of another type reads as absent.
  using json_read::StringOr;
  if (e.kind == "input") {
    j["text"] = StringOr(b, "content");
  } else if (e.kind == "assistant") {
    j["text"] = StringOr(b, "content");
    json tools = json::array();
    if (const json* calls = json_read::Find(b, "tool_calls"); calls != nullptr && calls->is_array())
      for (const json& c : *calls)
        tools.push_back({{"name", StringOr(c, "name")}, {"arguments", Cut(StringOr(c, "arguments"), 600)}});
    if (!tools.empty()) j["tools"] = tools;
  } else if (e.kind == "tool_result") {
    j["text"] = Cut(StringOr(b, "content"), kToolTextChars);
  } else if (e.kind == "report") {
    j["text"] = StringOr(b, "stage", "?") + ": " + StringOr(b, "summary");
  } else if (e.kind == "command") {
    const json* code = json_read::Find(b, "exit_code");
    j["text"] = "exit code " + (code != nullptr ? code->dump() : std::string("null")) + "\n" +
                Cut(StringOr(b, "stdout_tail"), kToolTextChars);
  } else {
    j["text"] = Cut(text::Dump(b), kToolTextChars);
  }
  return j;
}

json MessageJson(const IntercomMessage& m) {
  return {{"id", m.id},
          {"from", m.from_session},
          {"from_person", m.from_person},
          {"to", m.to_session},
          {"text", m.text},
          {"delivery", m.delivery},
          {"applied", m.applied},
          {"state", m.state},
          {"reply_to", m.reply_to},
          {"group", m.group},
          {"at", TimeJson(m.created_at)}};
}

}  // namespace

json IntercomApi::Overview() {
  json sessions = json::array();
  for (const char* part : {"sessions", "dormant"}) {
    json list = std::string(part) == "sessions" ? intercom_->List("")["sessions"] : intercom_->ListDormant("")["sessions"];
    for (json s : list) {
      s["last_activity"] = TimeJson(s["last_activity"].get<TimeMs>());
      s["queued"] = engine_->QueuedIntercom(s["id"].get<std::string>()).size();
      sessions.push_back(std::move(s));
    }
  }
  const IntercomLimits& l = intercom_->limits();
  return {{"sessions", sessions},
          {"groups", intercom_->Groups("")["groups"]},
          {"limits",
           {{"max_text", l.max_text},
            {"per_target_per_minute", l.per_target_per_minute},
            {"per_pair_per_minute", l.per_pair_per_minute},
            {"wake_budget", l.wake_budget}}}};
}

ApiReply IntercomApi::Session(const std::string& id) {
  auto n = exec::ParseIntercomSessionId(id);
  json info;
  for (const char* part : {"sessions", "dormant"}) {
    json list = std::string(part) == "sessions" ? intercom_->List("")["sessions"] : intercom_->ListDormant("")["sessions"];
    for (const json& s : list)
      if (s["id"] == id) info = s;
  }
  if (!n || info.is_null()) return {404, {{"error", "no session " + id}}};
  info["last_activity"] = TimeJson(info["last_activity"].get<TimeMs>());
  json surface = json::array();
  std::vector<SessionEvent> events = engine_->SessionEvents(*n);
  for (const SurfaceEntry& e : exec::SurfaceOf(events))
    surface.push_back({{"role", e.role}, {"text", e.text}, {"at", TimeJson(e.at)}});
  json transcript = json::array();
  const std::size_t start = events.size() > kMaxEvents ? events.size() - kMaxEvents : 0;
  for (std::size_t i = start; i < events.size(); ++i) transcript.push_back(EventJson(events[i]));
  json messages = json::array();
  for (const IntercomMessage& m : engine_->IntercomMessagesOf(id, -1, 200)) messages.push_back(MessageJson(m));
  json body = {{"session", info},
               {"surface", surface},
               {"transcript", transcript},
               {"transcript_cut", start},
               {"messages", messages},
               {"wakes_spent", engine_->IntercomWakesSpent(id)},
               {"wake_budget", intercom_->limits().wake_budget}};
  body["token_usage"] = info["ticket"].is_number() ? engine_->TokenUsage(info["ticket"].get<TicketId>()) : json(nullptr);
  // Whether a person's message could still resume it: a withdrawn or revoked Mandate never does.
  if (info["ticket"].is_number())
    if (auto m = engine_->GetMandate(info["ticket"].get<TicketId>()); m.ok())
      body["mandate"] = m->ended_as.empty() ? "active" : m->ended_as;
  return {200, body};
}

ApiReply IntercomApi::Group(const std::string& id, TimeMs since) {
  json feed = intercom_->GroupFeed(id, since);
  if (!feed.value("ok", false)) return {404, {{"error", feed.value("error", "no group " + id)}}};
  for (json& e : feed["entries"]) e["at"] = TimeJson(e["at"].get<TimeMs>());
  for (json& r : feed["relays"]) r["at"] = TimeJson(r["at"].get<TimeMs>());
  return {200, feed};
}

ApiReply IntercomApi::Send(const std::string& who, const std::string& session, const json& body) {
  if (std::string why = Impersonation(body); !why.empty()) return BadRequest(why);
  auto text = StringField(body, "text");
  if (!text) return BadRequest("\"text\" (a string) is required");
  auto delivery = json_read::OptString(body, "delivery", "wake");
  if (!delivery.ok()) return BadRequest(delivery.status().message());
  SendOutcome o = intercom_->SendAsPerson(who, session, *text, *delivery);
  if (!o.ok) return Refusal(o.error);
  json j = o.ToJson();
  j["by"] = who;
  return {200, j};
}

ApiReply IntercomApi::CreateGroup(const json& body) {
  auto name = StringField(body, "group_name");
  if (!name) return BadRequest("\"group_name\" (a string) is required");
  std::vector<std::string> members;
  if (body.contains("members")) {
    if (!body["members"].is_array()) return BadRequest("\"members\" must be an array of session ids");
    for (const json& m : body["members"]) {
      if (!m.is_string()) return BadRequest("\"members\" must be an array of session ids");
      members.push_back(m.get<std::string>());
    }
  }
  json r = intercom_->CreateGroup("", *name, members);
  if (!r.value("ok", false)) return Refusal(r.value("error", "refused"));
  return {200, r};
}

ApiReply IntercomApi::AddMember(const std::string& group, const json& body) {
  auto member = StringField(body, "member");
  if (!member) return BadRequest("\"member\" (a session id) is required");
  json r = intercom_->AddMember("", group, *member);
  if (!r.value("ok", false)) return Refusal(r.value("error", "refused"));
  return {200, r};
}

ApiReply IntercomApi::RemoveMember(const std::string& group, const json& body) {
  auto member = StringField(body, "member");
  if (!member) return BadRequest("\"member\" (a session id) is required");
  json r = intercom_->RemoveMember("", group, *member);
  if (!r.value("ok", false)) return Refusal(r.value("error", "refused"));
  return {200, r};
}

ApiReply IntercomApi::DeleteGroup(const std::string& group) {
  json r = intercom_->DeleteGroup("", group);
  if (!r.value("ok", false)) return Refusal(r.value("error", "refused"));
  return {200, r};
}

ApiReply IntercomApi::Broadcast(const std::string& who, const std::string& group, const json& body) {
  if (std::string why = Impersonation(body); !why.empty()) return BadRequest(why);
  auto text = StringField(body, "text");
  if (!text) return BadRequest("\"text\" (a string) is required");
  auto delivery = json_read::OptString(body, "delivery", "wake");
  if (!delivery.ok()) return BadRequest(delivery.status().message());
  json r = intercom_->BroadcastAsPerson(who, group, *text, *delivery);
  if (!r.value("ok", false)) return Refusal(r.value("error", "refused"));
  r["by"] = who;
  return {200, r};
}

ApiReply IntercomApi::NewSession(const std::string& who, const json& body) {
  if (std::string why = Impersonation(body); !why.empty()) return BadRequest(why);
  auto text = StringField(body, "text");
  if (!text) return BadRequest("\"text\" (a string) is required");
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) return Refusal("the request is empty");
  std::size_t chars = 0;
  for (unsigned char c : *text) chars += (c & 0xC0) != 0x80;
  if (chars > intercom_->limits().max_text)
    return Refusal("the request has " + std::to_string(chars) + " characters; the limit is " +
                   std::to_string(intercom_->limits().max_text));
  const std::string id = RandomToken().substr(0, 16);
  Trigger t = PanelRequest(id, who, *text, clock_->NowMs());
  auto r = engine_->Receive(t, "panel");
  if (!r.ok()) return {500, {{"error", r.status().message()}}};
  return {200, {{"ok", true}, {"trigger_id", t.id}, {"thread", t.threads[0]}, {"by", who}, {"queued_for_eval", r->queued_for_eval}}};
}

}  // namespace superagent::panel
