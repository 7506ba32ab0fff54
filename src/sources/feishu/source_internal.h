// The Feishu Source's private record type and its poller's helpers (namespace polling), shared by
// source.cpp (realtime, backfill, the round) and source_threads.cpp (the followed topics and the
// topics opened later on an open Ticket's messages).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/engine.h"
#include "superagent/feishu.h"
#include "superagent/json_read.h"
#include "superagent/views.h"
#include "sources/feishu/source.h"
#include "sources/intake.h"

namespace superagent::feishu {

// What a read produced beyond the Engine's own records.
struct Source::Intake : sources::ReadTally {
  std::set<std::string> threads_seen;
};

namespace polling {

using nlohmann::json;

// The Source's cursors, or nullopt with "cursors not read: …" in `report`: a path that took a
// failed read for "none" would read its chats again from the start, or follow no thread.
inline std::optional<std::map<std::string, std::string>> CursorsOrReport(Views* views, RoundReport* report) {
  auto read = views->SourceCursors("feishu");
  if (read.ok()) return std::move(*read);
  report->errors.push_back("cursors not read: " + read.status().message());
  return std::nullopt;
}

inline constexpr const char* kSource = "feishu";

inline json ParseCursor(const std::map<std::string, std::string>& cursors, const std::string& name) {
  auto it = cursors.find(name);
  if (it == cursors.end()) return json();
  json j = json::parse(it->second, nullptr, false);
  return j.is_object() ? j : json::object();
}

inline TimeMs Int(const json& c, const char* key, TimeMs fallback = 0) {
  return c.is_object() && c.contains(key) && c[key].is_number_integer() ? c[key].get<TimeMs>() : fallback;
}

inline bool Bool(const json& c, const char* key) {
  return c.is_object() && c.contains(key) && c[key].is_boolean() && c[key].get<bool>();
}

inline std::string ChatOf(const Trigger& t) { return json_read::StringOr(t.meta, "chat_id"); }

// The message a topic grew on: a reply names it as root_id; a topic's root carries thread_id alone.
// "" when it is not an id (the bytes are Feishu's, so hostile until checked).
inline std::string TopicRootOf(const Trigger& t) {
  std::string root = json_read::StringOr(t.meta, "root_id");
  if (root.empty() && !json_read::StringOr(t.meta, "thread_id").empty()) root = json_read::StringOr(t.meta, "message_id");
  return IsPlatformId(root) ? root : "";
}

// "feishu:chat:<chat>[:reply:…]" → the chat.
inline std::string ChatOfChannel(const std::string& channel) {
  const std::string prefix = "feishu:chat:";
  if (channel.rfind(prefix, 0) != 0) return "";
  const std::string rest = channel.substr(prefix.size());
  return rest.substr(0, rest.find(':'));
}

// An open Ticket's message a topic may have been opened on since it was read.
struct Candidate {
  std::string message_id, chat_id, kind;
  std::int64_t ticket = 0;
  TimeMs at = 0;
};

// The messages of `m` to look up (issue 34). Not those already in a topic: a request said in a
// topic has that topic as its Thread, and a reply the daemon posted into a topic stays in it.
inline std::vector<Candidate> CandidatesOf(const TicketMessage& m) {
  std::vector<Candidate> out;
  if (m.request) {
    if (!m.meta.is_object() || !json_read::StringOr(m.meta, "thread_id").empty()) return out;
    const std::string chat = json_read::StringOr(m.meta, "chat_id");
    const std::string id = json_read::StringOr(m.meta, "message_id");
    if (IsPlatformId(id)) out.push_back({id, chat, m.kind, m.ticket, m.at});
    // A request quoting an older message: a topic opened on that one is about the request too.
    const std::string root = json_read::StringOr(m.meta, "root_id");
    if (IsPlatformId(root) && root != id) out.push_back({root, chat, "request's root", m.ticket, m.at});
    return out;
  }
  const std::string suffix = ":thread";
  const bool in_topic = m.channel.size() >= suffix.size() &&
                        m.channel.compare(m.channel.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (!in_topic && IsPlatformId(m.external_id))
    out.push_back({m.external_id, ChatOfChannel(m.channel), m.kind, m.ticket, m.at});
  return out;
}

}  // namespace polling

}  // namespace superagent::feishu
