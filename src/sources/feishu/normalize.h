// Feishu message JSON (realtime event, history item, card action) → Trigger, and the thread keys.
// The Feishu Source's own (its files and tests), not for other modules.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/trigger.h"

namespace superagent::feishu {

struct NormalizeContext {
  std::string bot_open_id;  // the agent's open_id ("" until known: nothing counts as addressed)
  std::string app_id;       // history names the agent's own messages by app_id
};

struct Normalized {
  enum class Kind {
    kTrigger,      // `trigger` is set
    kSkip,         // not a message the Source takes (recalled, other event types)
    kUnsupported,  // a message type with no text form (image, file, card…): skipped and counted
    kMalformed,    // missing or wrongly typed fields: skipped and counted (SPEC §3.2)
  };
  Kind kind = Kind::kSkip;
  Trigger trigger;
  std::string why;  // for kSkip / kMalformed
};

// The `event` object of an im.message.receive_v1 envelope (v2 schema).
Normalized NormalizeEvent(const nlohmann::json& event, const NormalizeContext& ctx);
// One item of GET /open-apis/im/v1/messages. History items do not say p2p or group: `direct` is
// what the Source knows of the chat.
Normalized NormalizeHistoryItem(const nlohmann::json& item, const NormalizeContext& ctx, bool direct);
// A card.action.trigger envelope (v2 schema): a press on a question card's button (FeishuChannel
// sends the card) → the Trigger of that click. From the operator's open_id, on the Thread the
// button's value names (this chat or a topic in it) and the chat, its text the option's number —
// so intake reads it exactly like the asked person typing that number, and anyone else's click is
// an ordinary message. Id "feishu:card:<event_id>": a click delivered twice is one Trigger. A
// value that is missing or of the wrong type (option 1..9, ticket ≥ 1, receipt, thread) is
// kMalformed with a `why` naming the field. `direct` is what the Source knows of the chat.
Normalized NormalizeCardAction(const nlohmann::json& envelope, const NormalizeContext& ctx, bool direct);
// Plain text of a message's content (the JSON the `content` string holds) for text and post
// (rich text) messages; mention placeholders become "@Name". nullopt for other types.
std::optional<std::string> RenderContent(const std::string& msg_type, const nlohmann::json& content,
                                         const std::map<std::string, std::string>& mention_names);
// Trigger ids: "feishu:<message_id>", and "feishu:<message_id>@<update_time ms>" for an edited one.
std::string TriggerId(const std::string& message_id, TimeMs update_time, bool edited);
// Thread keys.
inline std::string ChatThread(const std::string& chat_id) { return "feishu:chat:" + chat_id; }
inline std::string TopicThread(const std::string& thread_id) { return "feishu:thread:" + thread_id; }

}  // namespace superagent::feishu
