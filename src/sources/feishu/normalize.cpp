// Feishu message → Trigger. The realtime event and a history item carry the same message in two
// shapes (content as `content` vs `body.content`, sender_id{open_id} vs sender{id,id_type},
// mention ids as objects vs strings); both are read into one Message first, so the Trigger built
// from it is identical whichever path saw the message first.
#include <algorithm>
#include <cstdlib>

#include "superagent/clock.h"
#include "superagent/feishu.h"
#include "sources/feishu/normalize.h"
#include "superagent/json_read.h"
#include "superagent/question.h"

namespace superagent::feishu {

using nlohmann::json;

namespace {

struct Mention {
  std::string key, open_id, name;
};

struct Message {
  std::string message_id, chat_id, thread_id, root_id, parent_id, msg_type, content;
  TimeMs create_ms = 0, update_ms = 0;
  bool edited = false, direct = false;
  std::string sender_id, sender_id_type, sender_type;
  std::vector<Mention> mentions;
};

// The ids both message shapes (an event's `message`, a listed `item`) carry under the same names;
// only the key of the message's type differs ("message_type" in events, "msg_type" when listed).
Message MessageIds(const json& j, const char* type_key) {
  Message m;
  m.message_id = json_read::StringOr(j, "message_id");
  m.chat_id = json_read::StringOr(j, "chat_id");
  m.thread_id = json_read::StringOr(j, "thread_id");
  m.root_id = json_read::StringOr(j, "root_id");
  m.parent_id = json_read::StringOr(j, "parent_id");
  m.msg_type = json_read::StringOr(j, type_key);
  return m;
}

// Feishu times are millisecond strings; a value that can only be seconds is scaled, so a shape
// that carries seconds still orders and dedupes with the others.
bool ParseStamp(const json& j, const char* key, TimeMs* out) {
  if (!j.is_object() || !j.contains(key)) return false;
  std::int64_t v = 0;
  if (j[key].is_number_integer()) {
    v = j[key].get<std::int64_t>();
  } else if (j[key].is_string()) {
    const std::string s = j[key].get<std::string>();
    if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    v = std::stoll(s);
  } else {
    return false;
  }
  if (v <= 0) return false;  // before 1970, and scaling it could overflow
  if (v < 100'000'000'000LL) v *= 1000;
  // Later than year 9999 no Trigger can carry it (its time would not read back): not a time.
  if (v > kLatestTimeMs) return false;
  *out = v;
  return true;
}

Normalized Malformed(std::string why) {
  Normalized n;
  n.kind = Normalized::Kind::kMalformed;
  n.why = std::move(why);
  return n;
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
}

void RenderPostElement(const json& el, const std::map<std::string, std::string>& names, std::string* out) {
  const std::string tag = json_read::StringOr(el, "tag");
  if (tag == "text" || tag == "md" || tag == "code_block") {
    *out += json_read::StringOr(el, "text");
  } else if (tag == "a") {
    const std::string text = json_read::StringOr(el, "text"), href = json_read::StringOr(el, "href");
    *out += text.empty() ? href : (href.empty() || href == text ? text : text + " (" + href + ")");
  } else if (tag == "at") {
    std::string name = json_read::StringOr(el, "user_name");
    const std::string id = json_read::StringOr(el, "user_id");
    if (name.empty()) {
      auto it = names.find(id);
      name = it != names.end() ? it->second.substr(1) : (id == "all" || id == "@_all" ? "all" : id);
    }
    *out += "@" + name;
  } else if (tag == "img") {
    *out += "[image]";
  } else if (tag == "media") {
    *out += "[video]";
  } else if (tag == "emotion") {
    *out += ":" + json_read::StringOr(el, "emoji_type") + ":";
  } else if (tag == "hr") {
    *out += "---";
  }
}

Normalized Build(const Message& m, const NormalizeContext& ctx) {
  if (m.message_id.empty()) return Malformed("message_id is missing");
  if (m.chat_id.empty()) return Malformed("chat_id is missing (" + m.message_id + ")");
  if (m.msg_type.empty()) return Malformed("message type is missing (" + m.message_id + ")");
  if (m.create_ms <= 0) return Malformed("create_time is missing or not a number (" + m.message_id + ")");
  std::map<std::string, std::string> names;
  bool mentions_bot = false;
  for (const Mention& x : m.mentions) {
    if (!x.key.empty()) names[x.key] = "@" + (x.name.empty() ? x.open_id : x.name);
    if (!ctx.bot_open_id.empty() && x.open_id == ctx.bot_open_id) mentions_bot = true;
  }
  json content = json::parse(m.content, nullptr, false);
  if (content.is_discarded()) return Malformed("content is not JSON (" + m.message_id + ")");
  auto text = RenderContent(m.msg_type, content, names);
  if (!text) {
    Normalized n;
    n.kind = Normalized::Kind::kUnsupported;
    n.why = "message type " + m.msg_type + " has no text form (" + m.message_id + ")";
    return n;
  }
  // Without a sender nothing can be admitted or answered (and the Trigger would not read back).
  if (m.sender_id.empty()) return Malformed("sender is missing (" + m.message_id + ")");
  const bool own = (!ctx.bot_open_id.empty() && m.sender_id == ctx.bot_open_id) ||
                   (!ctx.app_id.empty() && m.sender_id == ctx.app_id);
  Normalized n;
  n.kind = Normalized::Kind::kTrigger;
  Trigger& t = n.trigger;
  t.id = TriggerId(m.message_id, m.update_ms, m.edited);
  t.source = "feishu";
  t.scope = m.direct ? "direct" : "chat:" + m.chat_id;
  if (!m.sender_id.empty()) t.actor = m.sender_id;
  t.human = m.sender_type == "user" && !own;
  t.addressed = !own && (m.direct || mentions_bot);
  t.text = *text;
  t.at = m.create_ms;
  if (!m.thread_id.empty()) t.threads.push_back(TopicThread(m.thread_id));
  t.threads.push_back(ChatThread(m.chat_id));
  t.channel = "feishu:chat:" + m.chat_id;
  if (!m.direct) t.channel += ":reply:" + m.message_id + (m.thread_id.empty() ? "" : ":thread");
  t.meta = json{{"chat_id", m.chat_id},
                {"message_id", m.message_id},
                {"chat_type", m.direct ? "p2p" : "group"},
                {"msg_type", m.msg_type},
                {"own", own}};
  // The mentions as the text shows them ("@Super Agent"): a name with a space is still one mention
  // to whoever reads the words after it (core's ParseVerb).
  if (!names.empty()) {
    json shown = json::array();
    for (const auto& [key, name] : names) shown.push_back(name);
    t.meta["mentions"] = shown;
  }
  if (!m.thread_id.empty()) t.meta["thread_id"] = m.thread_id;
  if (!m.root_id.empty()) t.meta["root_id"] = m.root_id;
  if (!m.parent_id.empty()) t.meta["parent_id"] = m.parent_id;
  if (m.edited) t.meta["update_time"] = m.update_ms;
  return n;
}

}  // namespace

std::string TriggerId(const std::string& message_id, TimeMs update_time, bool edited) {
  return "feishu:" + message_id + (edited ? "@" + std::to_string(update_time) : "");
}

std::optional<std::string> RenderContent(const std::string& msg_type, const json& content,
                                         const std::map<std::string, std::string>& mention_names) {
  if (!content.is_object()) return std::nullopt;
  if (msg_type == "text") {
    if (!content.contains("text") || !content["text"].is_string()) return std::nullopt;
    std::string text = content["text"].get<std::string>();
    // Longest keys first, so "@_user_1" never eats the start of "@_user_10".
    std::vector<std::pair<std::string, std::string>> keys(mention_names.begin(), mention_names.end());
    std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    for (const auto& [key, name] : keys) ReplaceAll(text, key, name);
    ReplaceAll(text, "@_all", "@all");
    return text;
  }
  if (msg_type == "post") {
    // Received posts hold {title, content}; sent ones are wrapped in a locale ({"zh_cn": {…}}).
    const json* post = &content;
    if (!content.contains("content")) {
      for (const auto& [locale, body] : content.items())
        if (body.is_object() && body.contains("content")) {
          post = &body;
          break;
        }
    }
    if (!post->contains("content") || !(*post)["content"].is_array()) return std::nullopt;
    std::string out = json_read::StringOr(*post, "title");
    for (const json& para : (*post)["content"]) {
      if (!para.is_array()) continue;
      std::string line;
      for (const json& el : para)
        if (el.is_object()) RenderPostElement(el, mention_names, &line);
      if (!out.empty()) out += "\n";
      out += line;
    }
    return out;
  }
  return std::nullopt;
}

Normalized NormalizeEvent(const json& event, const NormalizeContext& ctx) {
  if (!event.is_object()) return Malformed("event is not an object");
  if (!event.contains("message") || !event["message"].is_object()) return Malformed("event.message is missing");
  const json& msg = event["message"];
  const json& sender = event.contains("sender") && event["sender"].is_object() ? event["sender"] : json::object();
  Message m = MessageIds(msg, "message_type");
  if (!msg.contains("content") || !msg["content"].is_string()) return Malformed("event.message.content is missing");
  m.content = msg["content"].get<std::string>();
  if (!ParseStamp(msg, "create_time", &m.create_ms)) m.create_ms = 0;
  if (ParseStamp(msg, "update_time", &m.update_ms)) m.edited = m.update_ms > m.create_ms;
  m.direct = json_read::StringOr(msg, "chat_type") == "p2p";
  if (sender.contains("sender_id") && sender["sender_id"].is_object()) {
    m.sender_id = json_read::StringOr(sender["sender_id"], "open_id");
    m.sender_id_type = "open_id";
  }
  m.sender_type = json_read::StringOr(sender, "sender_type");
  if (msg.contains("mentions") && msg["mentions"].is_array()) {
    for (const json& x : msg["mentions"]) {
      if (!x.is_object()) continue;
      Mention mention{json_read::StringOr(x, "key"), "", json_read::StringOr(x, "name")};
      if (x.contains("id") && x["id"].is_object()) mention.open_id = json_read::StringOr(x["id"], "open_id");
      m.mentions.push_back(mention);
    }
  }
  return Build(m, ctx);
}

Normalized NormalizeHistoryItem(const json& item, const NormalizeContext& ctx, bool direct) {
  if (!item.is_object()) return Malformed("history item is not an object");
  if (item.contains("deleted") && item["deleted"].is_boolean() && item["deleted"].get<bool>()) {
    Normalized n;
    n.why = "recalled";
    return n;
  }
  Message m = MessageIds(item, "msg_type");
  if (!item.contains("body") || !item["body"].is_object() || !item["body"].contains("content") ||
      !item["body"]["content"].is_string())
    return Malformed("body.content is missing (" + m.message_id + ")");
  m.content = item["body"]["content"].get<std::string>();
  if (!ParseStamp(item, "create_time", &m.create_ms)) m.create_ms = 0;
  ParseStamp(item, "update_time", &m.update_ms);
  m.edited = item.contains("updated") && item["updated"].is_boolean() ? item["updated"].get<bool>()
                                                                      : m.update_ms > m.create_ms;
  m.direct = direct;
  if (item.contains("sender") && item["sender"].is_object()) {
    m.sender_id = json_read::StringOr(item["sender"], "id");
    m.sender_id_type = json_read::StringOr(item["sender"], "id_type");
    m.sender_type = json_read::StringOr(item["sender"], "sender_type");
  }
  if (item.contains("mentions") && item["mentions"].is_array()) {
    for (const json& x : item["mentions"]) {
      if (!x.is_object()) continue;
      Mention mention{json_read::StringOr(x, "key"), "", json_read::StringOr(x, "name")};
      if (x.contains("id") && x["id"].is_string() && json_read::StringOr(x, "id_type") != "user_id" && json_read::StringOr(x, "id_type") != "union_id")
        mention.open_id = x["id"].get<std::string>();
      else if (x.contains("id") && x["id"].is_object())
        mention.open_id = json_read::StringOr(x["id"], "open_id");
      m.mentions.push_back(mention);
    }
  }
  return Build(m, ctx);
}

Normalized NormalizeCardAction(const json& envelope, const NormalizeContext& ctx, bool direct) {
  // Every value is checked before anything is built: the button values are ours, but what comes
  // back is only as good as the sender, and a wrong one must change nothing.
  if (json_read::StringOr(envelope, "header.event_type") != "card.action.trigger")
    return Malformed("header.event_type: must be card.action.trigger");
  const std::string event_id = json_read::StringOr(envelope, "header.event_id");
  if (event_id.empty() || event_id.size() > 128 || event_id.find(':') != std::string::npos)
    return Malformed("header.event_id: must be the event's id");
  const json* event = json_read::Find(envelope, "event");
  if (event == nullptr || !event->is_object()) return Malformed("event: must be an object");
  const std::string operator_id = json_read::StringOr(*event, "operator.open_id");
  if (operator_id.empty()) return Malformed("event.operator.open_id: missing");
  const std::string chat_id = json_read::StringOr(*event, "context.open_chat_id");
  const std::string card_message = json_read::StringOr(*event, "context.open_message_id");
  if (chat_id.empty() || chat_id.find(':') != std::string::npos) return Malformed("event.context.open_chat_id: missing");
  if (card_message.empty() || card_message.find(':') != std::string::npos)
    return Malformed("event.context.open_message_id: missing");
  const json* value = json_read::Find(*event, "action.value");
  if (value == nullptr || !value->is_object()) return Malformed("event.action.value: must be an object");
  const json* option = json_read::Find(*value, "option");
  if (option == nullptr || !option->is_number_integer() || option->get<std::int64_t>() < 1 ||
      option->get<std::int64_t>() > static_cast<std::int64_t>(kMaxQuestionOptions))
    return Malformed("event.action.value.option: must be a number from 1 to " + std::to_string(kMaxQuestionOptions));
  const json* ticket = json_read::Find(*value, "ticket");
  if (ticket == nullptr || !ticket->is_number_integer() || ticket->get<std::int64_t>() < 1)
    return Malformed("event.action.value.ticket: must be a Ticket number");
  const std::string receipt = json_read::StringOr(*value, "receipt");
  if (receipt.empty() || receipt.size() > 200) return Malformed("event.action.value.receipt: must be the question's message id");
  // The Thread the question was asked on: this chat, or a topic in it (the callback names only the chat).
  const std::string thread = json_read::StringOr(*value, "thread");
  const bool topic = thread.rfind("feishu:thread:", 0) == 0 && thread.size() > 14 && thread.size() <= 200 &&
                     thread.find(':', 14) == std::string::npos;
  if (!topic && thread != ChatThread(chat_id)) return Malformed("event.action.value.thread: must be this chat or a topic in it");

  const bool own = !ctx.bot_open_id.empty() && operator_id == ctx.bot_open_id;
  Normalized n;
  n.kind = Normalized::Kind::kTrigger;
  Trigger& t = n.trigger;
  // One click is one Trigger: Feishu delivers a click again with the same event_id.
  t.id = "feishu:card:" + event_id;
  t.source = "feishu";
  t.scope = direct ? "direct" : "chat:" + chat_id;
  t.actor = operator_id;
  t.human = !own;
  t.addressed = !own;  // pressing the agent's button speaks to the agent
  // The option's number, as if typed: intake's MatchAnswer reads it for the asked person only.
  t.text = std::to_string(option->get<std::int64_t>());
  TimeMs at = 0;
  const json* header = json_read::Find(envelope, "header");
  t.at = header != nullptr && ParseStamp(*header, "create_time", &at) ? at : 0;
  if (topic) t.threads.push_back(thread);
  t.threads.push_back(ChatThread(chat_id));
  t.channel = "feishu:chat:" + chat_id;
  if (!direct) t.channel += ":reply:" + card_message + (topic ? ":thread" : "");
  t.meta = json{{"chat_id", chat_id},
                {"message_id", card_message},
                {"chat_type", direct ? "p2p" : "group"},
                {"msg_type", "card_action"},
                {"own", own},
                {"ticket", ticket->get<std::int64_t>()},
                {"option", option->get<std::int64_t>()},
                {"receipt", receipt}};
  if (topic) t.meta["thread_id"] = thread.substr(14);
  return n;
}

}  // namespace superagent::feishu
