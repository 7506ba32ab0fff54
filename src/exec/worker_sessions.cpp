// Worker sessions as intercom parties: ids, status from the Ticket, the surface transcript, and
// a wake delivered the way every input reaches a session (a pending Ticket input; docs/003).
#include "superagent/worker_sessions.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "superagent/assign_or_return.h"
#include "superagent/views.h"
#include "superagent/json_read.h"

namespace superagent::exec {

using nlohmann::json;

namespace {
constexpr const char* kPrefix = "session-";
}  // namespace

std::string IntercomSessionId(SessionId id) { return kPrefix + std::to_string(id); }

std::optional<SessionId> ParseIntercomSessionId(const std::string& id) {
  const std::string p = kPrefix;
  if (id.size() <= p.size() || id.compare(0, p.size(), p) != 0 || id.size() > p.size() + 18) return std::nullopt;
  SessionId n = 0;
  for (std::size_t i = p.size(); i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9') return std::nullopt;
    n = n * 10 + (id[i] - '0');
  }
  if (n <= 0 || id[p.size()] == '0') return std::nullopt;
  return n;
}

std::vector<SurfaceEntry> SurfaceOf(const std::vector<SessionEvent>& events) {
  std::vector<SurfaceEntry> out;
  auto add = [&](const char* role, std::string text, TimeMs at) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) return;
    out.push_back({role, std::move(text), at});
  };
  for (const SessionEvent& e : events) {
    if (!e.body.is_object()) continue;
    // The transcript holds what a model or a command wrote (a refused call too): a field of
    // another type reads as absent.
    using json_read::StringOr;
    if (e.kind == "input") {
      // The command executor's input is its task JSON; it records what was said beside it.
      add("user", e.body.contains("surface") ? StringOr(e.body, "surface") : StringOr(e.body, "content"), e.at);
    } else if (e.kind == "assistant") {
      add("assistant", StringOr(e.body, "content"), e.at);
      // How a built-in turn ends is a tool call; its words are what the session concluded.
      const json* calls = json_read::Find(e.body, "tool_calls");
      if (calls == nullptr || !calls->is_array()) continue;
      for (const json& c : *calls) {
        const std::string name = StringOr(c, "name");
        if (name != "report" && name != "human_action") continue;
        json a = json::parse(StringOr(c, "arguments"), nullptr, false);
        if (!a.is_object()) continue;
        if (name == "report")
          add("assistant", "[report: " + StringOr(a, "stage", "?") + "] " + StringOr(a, "summary"), e.at);
        else
          add("assistant", "[question] " + StringOr(a, "question"), e.at);
      }
    } else if (e.kind == "report") {
      add("assistant", "[report: " + StringOr(e.body, "stage", "?") + "] " + StringOr(e.body, "summary"), e.at);
    }
  }
  return out;
}

WorkerSessionHost::WorkerSessionHost(Engine* engine, Views* views, std::string workspace, std::function<void()> wake,
                                     SecretFilter* secrets)
    : engine_(engine), views_(views), workspace_(std::move(workspace)), wake_(std::move(wake)), secrets_(secrets) {}

std::optional<SessionInfo> WorkerSessionHost::Describe(const Session& s) {
  SessionInfo info;
  info.id = IntercomSessionId(s.id);
  info.title = s.title;
  info.ticket = s.ticket;
  info.workspace = workspace_;
  info.last_activity = s.updated_at;
  info.top_level = true;  // worker sessions are top-level; the built-in worker has no sub-agents
  if (!s.ticket) {
    info.status = s.status == "running" ? SessionStatus::kWorking : SessionStatus::kIdle;
    return info;
  }
  auto t = views_->GetTicket(*s.ticket);
  if (!t.ok()) {
    info.status = SessionStatus::kDormant;  // a session whose Ticket cannot be read is never woken
    return info;
  }
  info.last_activity = std::max(info.last_activity, t->updated_at);
  if (!t->open()) info.status = SessionStatus::kDormant;
  else if (t->stage == Stage::kWaitingForPerson) info.status = SessionStatus::kWaitingForPerson;
  else if (t->stage == Stage::kWorking || s.status == "running") info.status = SessionStatus::kWorking;
  else info.status = SessionStatus::kIdle;
  return info;
}

Result<std::vector<SessionInfo>> WorkerSessionHost::Sessions() {
  ASSIGN_OR_RETURN(std::vector<Session> sessions, views_->Sessions());
  std::vector<SessionInfo> out;
  for (const Session& s : sessions)
    if (auto d = Describe(s)) out.push_back(std::move(*d));
  return out;
}

std::optional<SessionInfo> WorkerSessionHost::Find(const std::string& id) {
  auto n = ParseIntercomSessionId(id);
  if (!n) return std::nullopt;
  auto s = views_->GetSession(*n);
  if (!s.ok()) return std::nullopt;
  return Describe(*s);
}

Result<std::vector<SurfaceEntry>> WorkerSessionHost::Surface(const std::string& id) {
  auto n = ParseIntercomSessionId(id);
  if (!n) return std::vector<SurfaceEntry>{};
  ASSIGN_OR_RETURN(std::vector<SessionEvent> events, views_->SessionEvents(*n));
  std::vector<SurfaceEntry> surface = SurfaceOf(events);
  // What one session reads of another leaves this one's hands: the intercom's reads pass the
  // outbound filter like everything else the daemon publishes.
  if (secrets_ != nullptr)
    for (SurfaceEntry& e : surface) e.text = secrets_->Clean(e.text, "intercom", "surface of " + id);
  return surface;
}

void WorkerSessionHost::InboxChanged(const std::string& id, bool start_turn) {
  if (!start_turn) return;  // a running turn takes the inbox at its next model step
  auto n = ParseIntercomSessionId(id);
  if (!n) return;
  auto s = views_->GetSession(*n);
  if (!s.ok() || !s->ticket) return;
  // Unread, the waiting mail counts as a session's: the wake never takes the slot kept for people.
  auto queued = views_->QueuedIntercom(id);
  if (!queued.ok())
    spdlog::error("intercom inbox not read; woken as a session's mail session={} error=\"{}\"", id,
                  queued.status().message());
  bool from_person = false;
  if (queued.ok())
    for (const IntercomMessage& m : *queued) from_person |= !m.from_person.empty();
  if (Status st = engine_->WakeForIntercom(*s->ticket, from_person); !st.ok()) {
    spdlog::warn("intercom wake not delivered session={} ticket={} error=\"{}\"", id, *s->ticket, st.message());
    return;
  }
  if (wake_) wake_();
}

}  // namespace superagent::exec
