// The communication center's JSON (docs/005-panel.md "Communication center").
#include "panel/intercom_api.h"

#include <algorithm>

#include "panel/guard.h"
#include "panel/panel_json.h"
#include "superagent/json_read.h"
#include "superagent/panel_source.h"
#include "superagent/text.h"
#include "superagent/views.h"
#include "superagent/worker_sessions.h"

namespace superagent::panel {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxEvents = 300;        // the newest transcript events shown
constexpr std::size_t kToolTextChars = 2'000;  // a tool result, cut for the page

std::string Cut(const std::string& s, std::size_t max) { return text::CutNoted(s, max, text::Keep::kHead); }

// Refusals by the intercom's rules are 409 with the exact reason; a malformed request is 400.
ApiReply Refusal(const std::string& why) { return {409, {{"error", why}}}; }
// A read the store failed is 503, as every other panel read (never an empty list or a 404).
ApiReply Unreadable(const char* what, const Status& s) {
  return {503, {{"error", std::string("the store could not be read (") + what + "): " + s.message()}}};
}
// The Intercom's refusal `r`: 503 when it could not read the store, else 409.
ApiReply RefusalOf(const json& r) {
  if (r.value("unreadable", false)) return {503, {{"error", r.value("error", "the store could not be read")}}};
  return Refusal(r.value("error", "refused"));
}
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
    // A message from the intercom shows as its sender wrote it, not as the model reads it.
    if (auto said = UnwrapIntercom(j["text"].get<std::string>())) {
      j["text"] = said->text;
      j["from"] = said->from;
    }
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
    // What ran and how it ended: a worker's shell, the command executor, or a coding CLI's
    // own run (whose output is its transcript; its stderr is what it said when it failed).
    const json* code = json_read::Find(b, "exit_code");
    const std::string command = StringOr(b, "command");
    std::string out = StringOr(b, "stdout_tail");
    if (out.empty()) out = StringOr(b, "stderr_tail");
    j["text"] = (command.empty() ? "" : "$ " + Cut(command, 600) + "\n") + "exit code " +
                (code != nullptr ? code->dump() : std::string("null")) + "\n" + Cut(out, kToolTextChars);
  } else {
    j["text"] = Cut(text::Dump(b), kToolTextChars);
  }
  return j;
}

// The stage of a session's Ticket beside the session's status: "idle" is all the intercom needs
// (a message wakes it), but a person wants to see that it is blocked, or ready for review.
void AddTicketStage(Views* views, json* session) {
  if (!(*session)["ticket"].is_number()) return;
  auto t = views->GetTicket((*session)["ticket"].get<TicketId>());
  if (t.ok()) (*session)["ticket_stage"] = StageName(t->stage);
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

ApiReply IntercomApi::Overview() {
  json sessions = json::array();
  for (const char* part : {"sessions", "dormant"}) {
    json listed = std::string(part) == "sessions" ? intercom_->List("") : intercom_->ListDormant("");
    if (!listed.value("ok", false)) return RefusalOf(listed);
    for (json s : listed["sessions"]) {
      s["last_activity"] = TimeJson(s["last_activity"].get<TimeMs>());
      auto queued = views_->QueuedIntercom(s["id"].get<std::string>());
      if (!queued.ok()) return Unreadable("intercom", queued.status());
      s["queued"] = queued->size();
      AddTicketStage(views_, &s);
      sessions.push_back(std::move(s));
    }
  }
  json groups = intercom_->Groups("");
  if (!groups.value("ok", false)) return RefusalOf(groups);
  const IntercomLimits& l = intercom_->limits();
  return {200, {{"sessions", sessions},
          {"groups", groups["groups"]},
          {"limits",
           {{"max_text", l.max_text},
            {"per_target_per_minute", l.per_target_per_minute},
            {"per_pair_per_minute", l.per_pair_per_minute},
            {"wake_budget", l.wake_budget}}}}};
}

ApiReply IntercomApi::Session(const std::string& id) {
  auto n = exec::ParseIntercomSessionId(id);
  json info;
  for (const char* part : {"sessions", "dormant"}) {
    json listed = std::string(part) == "sessions" ? intercom_->List("") : intercom_->ListDormant("");
    if (!listed.value("ok", false)) return RefusalOf(listed);
    for (const json& s : listed["sessions"])
      if (s["id"] == id) info = s;
  }
  if (!n || info.is_null()) return {404, {{"error", "no session " + id}}};
  info["last_activity"] = TimeJson(info["last_activity"].get<TimeMs>());
  AddTicketStage(views_, &info);
  json surface = json::array();
  auto read = views_->SessionEvents(*n);
  if (!read.ok()) return Unreadable("transcript", read.status());
  const std::vector<SessionEvent>& events = *read;
  for (const SurfaceEntry& e : exec::SurfaceOf(events)) {
    json entry = {{"role", e.role}, {"text", e.text}, {"at", TimeJson(e.at)}};
    if (auto said = e.role == "user" ? UnwrapIntercom(e.text) : std::nullopt) {
      entry["text"] = said->text;
      entry["from"] = said->from;
    }
    surface.push_back(std::move(entry));
  }
  json transcript = json::array();
  const std::size_t start = events.size() > kMaxEvents ? events.size() - kMaxEvents : 0;
  for (std::size_t i = start; i < events.size(); ++i) transcript.push_back(EventJson(events[i]));
  json messages = json::array();
  auto stored = views_->IntercomMessagesOf(id, -1, 200);
  if (!stored.ok()) return Unreadable("intercom messages", stored.status());
  for (const IntercomMessage& m : *stored) messages.push_back(MessageJson(m));
  auto wakes = views_->IntercomWakesSpent(id);
  if (!wakes.ok()) return Unreadable("wake budget", wakes.status());
  json body = {{"session", info},
               {"surface", surface},
               {"transcript", transcript},
               {"transcript_cut", start},
               {"messages", messages},
               {"wakes_spent", *wakes},
               {"wake_budget", intercom_->limits().wake_budget}};
  body["token_usage"] = nullptr;
  if (info["ticket"].is_number()) {
    auto usage = views_->TokenUsage(info["ticket"].get<TicketId>());
    if (!usage.ok()) return Unreadable("token usage", usage.status());
    body["token_usage"] = *usage;
  }
  // Whether a person's message could still resume it: a withdrawn or revoked Mandate never does.
  if (info["ticket"].is_number())
    if (auto m = views_->GetMandate(info["ticket"].get<TicketId>()); m.ok())
      body["mandate"] = m->ended_as.empty() ? "active" : m->ended_as;
  return {200, body};
}

ApiReply IntercomApi::Group(const std::string& id, TimeMs since) {
  json feed = intercom_->GroupFeed(id, since);
  if (feed.value("unreadable", false)) return RefusalOf(feed);
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
  if (!r.value("ok", false)) return RefusalOf(r);
  return {200, r};
}

ApiReply IntercomApi::AddMember(const std::string& group, const json& body) {
  auto member = StringField(body, "member");
  if (!member) return BadRequest("\"member\" (a session id) is required");
  json r = intercom_->AddMember("", group, *member);
  if (!r.value("ok", false)) return RefusalOf(r);
  return {200, r};
}

ApiReply IntercomApi::RemoveMember(const std::string& group, const json& body) {
  auto member = StringField(body, "member");
  if (!member) return BadRequest("\"member\" (a session id) is required");
  json r = intercom_->RemoveMember("", group, *member);
  if (!r.value("ok", false)) return RefusalOf(r);
  return {200, r};
}

ApiReply IntercomApi::DeleteGroup(const std::string& group) {
  json r = intercom_->DeleteGroup("", group);
  if (!r.value("ok", false)) return RefusalOf(r);
  return {200, r};
}

ApiReply IntercomApi::Broadcast(const std::string& who, const std::string& group, const json& body) {
  if (std::string why = Impersonation(body); !why.empty()) return BadRequest(why);
  auto text = StringField(body, "text");
  if (!text) return BadRequest("\"text\" (a string) is required");
  auto delivery = json_read::OptString(body, "delivery", "wake");
  if (!delivery.ok()) return BadRequest(delivery.status().message());
  json r = intercom_->BroadcastAsPerson(who, group, *text, *delivery);
  if (!r.value("ok", false)) return RefusalOf(r);
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
