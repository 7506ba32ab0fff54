// Intercom groups (SPEC §10): making and pruning them, broadcasting to them, reading them as one
// feed. Its own file because a group is only a list of parties: its messages go through Deliver.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "intercom/intercom_internal.h"
#include "superagent/assign_or_return.h"
#include "superagent/engine.h"
#include "superagent/intercom.h"
#include "superagent/views.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;
using namespace intercom_internal;

Result<std::vector<IntercomGroup>> Intercom::PrunedGroups() {
  ASSIGN_OR_RETURN(std::vector<IntercomGroup> groups, views_->IntercomGroups());
  for (IntercomGroup& g : groups) {
    if (!g.automatic) continue;
    std::vector<std::string> kept;
    for (const std::string& m : g.members) {
      auto s = host_->Find(m);
      if (s && Live(*s)) {
        kept.push_back(m);
      } else if (Status st = engine_->RemoveIntercomMember(g.id, m); !st.ok()) {
        spdlog::warn("intercom prune failed group={} session={} error=\"{}\"", g.id, m, st.ToString());
        kept.push_back(m);
      }
    }
    g.members = kept;
  }
  return groups;
}

json Intercom::CreateGroup(const std::string& caller, const std::string& name, const std::vector<std::string>& members) {
  if (name.find_first_not_of(' ') == std::string::npos) return Refused("the group needs a name");
  if (text::CountCodePoints(name) > limits_.max_group_name)
    return Refused("group names have at most " + std::to_string(limits_.max_group_name) + " characters");
  auto me = host_->Find(caller);
  std::vector<std::string> all;
  if (me) all.push_back(caller);
  for (const std::string& id : members) {
    auto s = host_->Find(id);
    if (!s) return Refused("unknown session: " + id);
    if (!s->top_level) return Refused(id + " is a sub-agent; groups hold top-level sessions only");
    if (me && s->workspace != me->workspace) return Refused(id + " works on another workspace");
    if (std::find(all.begin(), all.end(), id) == all.end()) all.push_back(id);
  }
  auto g = engine_->CreateIntercomGroup(name, all);
  if (!g.ok()) return Refused(g.status().message());
  return {{"ok", true}, {"group_id", g->id}, {"name", g->name}, {"members", g->members}};
}

json Intercom::AddMember(const std::string& caller, const std::string& group, const std::string& member) {
  if (group == "auto") return Refused("the automatic group is kept by the intercom itself");
  auto me = host_->Find(caller);
  auto s = host_->Find(member);
  if (!s) return Refused("unknown session: " + member);
  if (!s->top_level) return Refused(member + " is a sub-agent; groups hold top-level sessions only");
  if (me && s->workspace != me->workspace) return Refused(member + " works on another workspace");
  if (Status st = engine_->AddIntercomMember(group, member); !st.ok()) return Refused(st.message());
  return {{"ok", true}};
}

json Intercom::RemoveMember(const std::string&, const std::string& group, const std::string& member) {
  if (group == "auto") return Refused("the automatic group is kept by the intercom itself");
  if (Status st = engine_->RemoveIntercomMember(group, member); !st.ok()) return Refused(st.message());
  return {{"ok", true}};
}

json Intercom::DeleteGroup(const std::string&, const std::string& group) {
  if (Status st = engine_->DeleteIntercomGroup(group); !st.ok()) return Refused(st.message());
  return {{"ok", true}};
}

json Intercom::Groups(const std::string&) {
  json list = json::array();
  auto groups = PrunedGroups();
  if (!groups.ok()) return Unreadable(groups.status());
  for (const IntercomGroup& g : *groups) {
    json members = json::array();
    for (const std::string& m : g.members) members.push_back({{"id", m}, {"title", TitleOf(m)}});
    list.push_back({{"id", g.id}, {"name", g.name}, {"automatic", g.automatic}, {"members", members}});
  }
  return {{"ok", true}, {"groups", list}};
}

json Intercom::Broadcast(const std::string& caller, const std::string& group, const std::string& text,
                         const std::string& delivery) {
  auto from = host_->Find(caller);
  if (!from || !Live(*from)) return Refused("the calling session is unknown or dormant");
  auto read = PrunedGroups();
  if (!read.ok()) return Unreadable(read.status());
  const IntercomGroup* g = FindGroup(*read, group);
  if (!g) return Refused("no group " + group);
  if (std::size_t n = text::CountCodePoints(text); n > limits_.max_text)
    return Refused("the message has " + std::to_string(n) + " characters; the limit is " +
                   std::to_string(limits_.max_text) + ". Nothing was sent.");
  json results = json::array();
  int delivered = 0;
  for (const std::string& member : g->members) {
    if (member == caller) continue;
    auto to = host_->Find(member);
    if (std::string why = CheckParties(from, to, member); !why.empty()) {
      results.push_back({{"target", member}, {"ok", false}, {"skipped", true}, {"error", why}});
      continue;
    }
    SendOutcome o = Deliver(caller, "", *to, text, delivery, "", group);
    json r = o.ToJson();
    r["target"] = member;
    delivered += o.ok;
    results.push_back(r);
  }
  return {{"ok", true}, {"group_id", group}, {"delivered", delivered}, {"results", results}};
}

json Intercom::ReadGroup(const std::string& caller, const std::string& group, TimeMs since) {
  auto me = host_->Find(caller);
  auto read = PrunedGroups();
  if (!read.ok()) return Unreadable(read.status());
  const IntercomGroup* g = FindGroup(*read, group);
  if (!g) return Refused("no group " + group);
  struct Line {
    TimeMs at;
    std::size_t order;
    std::string text;
  };
  std::vector<Line> lines;
  for (const std::string& member : g->members) {
    auto s = host_->Find(member);
    if (!s || (me && s->workspace != me->workspace)) continue;
    const std::string title = SafeTitle(s->title.empty() ? member : s->title);
    auto surface = host_->Surface(member);
    if (!surface.ok()) return Unreadable(surface.status());
    for (const SurfaceEntry& e : *surface)
      if (e.at > since) lines.push_back({e.at, lines.size(), title + ": [" + e.role + "] " + e.text});
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.at < b.at; });
  std::string text;
  for (const Line& l : lines) text += (text.empty() ? "" : "\n") + l.text;
  json j = {{"ok", true}, {"group_id", group}, {"text", text}};
  text::FitField(&j, "text", limits_.max_output, text::Keep::kTail);
  return j;
}

json Intercom::BroadcastAsPerson(const std::string& person, const std::string& group, const std::string& text,
                                 const std::string& delivery) {
  if (person.empty()) return Refused("the person is unknown");
  if (std::string why = CheckText(text, delivery); !why.empty()) return Refused(why);
  auto read = PrunedGroups();
  if (!read.ok()) return Unreadable(read.status());
  const IntercomGroup* g = FindGroup(*read, group);
  if (!g) return Refused("no group " + group);
  json results = json::array();
  int delivered = 0;
  for (const std::string& member : g->members) {
    auto to = host_->Find(member);
    // A broadcast never reopens a Ticket: that takes a person's message to that one session.
    if (std::string why = CheckParties(std::nullopt, to, member); !why.empty()) {
      results.push_back({{"target", member}, {"ok", false}, {"skipped", true}, {"error", why}});
      continue;
    }
    SendOutcome o = Deliver("", person, *to, text, delivery, "", group);
    json r = o.ToJson();
    r["target"] = member;
    delivered += o.ok;
    results.push_back(r);
  }
  return {{"ok", true}, {"group_id", group}, {"delivered", delivered}, {"results", results}};
}

json Intercom::GroupFeed(const std::string& group, TimeMs since, int limit) {
  auto read = PrunedGroups();
  if (!read.ok()) return Unreadable(read.status());
  const IntercomGroup* g = FindGroup(*read, group);
  if (!g) return Refused("no group " + group);
  json entries = json::array();
  struct Line {
    TimeMs at;
    json j;
  };
  std::vector<Line> lines;
  json relays = json::array();
  std::vector<std::string> seen;
  for (const std::string& member : g->members) {
    auto s = host_->Find(member);
    if (!s) continue;
    auto surface = host_->Surface(member);
    if (!surface.ok()) return Unreadable(surface.status());
    for (const SurfaceEntry& e : *surface)
      if (e.at > since)
        lines.push_back({e.at, {{"session", member}, {"title", s->title}, {"role", e.role}, {"text", e.text}, {"at", e.at}}});
    auto messages = views_->IntercomMessagesOf(member, since, limit);
    if (!messages.ok()) return Unreadable(messages.status());
    for (const IntercomMessage& m : *messages) {
      if (m.group != group || std::find(seen.begin(), seen.end(), m.id) != seen.end()) continue;
      seen.push_back(m.id);
      relays.push_back({{"id", m.id}, {"from", m.from_session}, {"from_person", m.from_person}, {"to", m.to_session},
                        {"text", m.text}, {"at", m.created_at}});
    }
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.at < b.at; });
  const std::size_t start = lines.size() > static_cast<std::size_t>(limit) ? lines.size() - limit : 0;
  for (std::size_t i = start; i < lines.size(); ++i) entries.push_back(lines[i].j);
  return {{"ok", true}, {"group_id", group}, {"name", g->name}, {"entries", entries}, {"relays", relays}};
}

}  // namespace superagent
