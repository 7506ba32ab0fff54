// FeishuChannel: the only code that writes to Feishu, called by the Effects loop (SPEC §8). The
// receipt id is the request's `uuid`; Feishu sends at most one message per uuid within an hour,
// so a delivery whose outcome is unknown is simply sent again with the same uuid.
#include <spdlog/spdlog.h>

#include "superagent/digest.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"
#include "superagent/json_read.h"
#include "superagent/question.h"
#include "superagent/text.h"

namespace superagent::feishu {

using nlohmann::json;

namespace {

struct Target {
  std::string chat_id, message_id;
  bool in_thread = false;
  bool ok = false;
};

// "feishu:chat:<chat>[:reply:<message>[:thread]]"
Target ParseTarget(const std::string& channel) {
  Target t;
  const std::string prefix = "feishu:chat:";
  if (channel.rfind(prefix, 0) != 0) return t;
  std::string rest = channel.substr(prefix.size());
  auto reply = rest.find(":reply:");
  t.chat_id = rest.substr(0, reply);
  if (reply != std::string::npos) {
    std::string msg = rest.substr(reply + 7);
    if (msg.size() > 7 && msg.compare(msg.size() - 7, 7, ":thread") == 0) {
      t.in_thread = true;
      msg.resize(msg.size() - 7);
    }
    t.message_id = msg;
    if (msg.empty() || msg.find(':') != std::string::npos) return t;
  }
  t.ok = !t.chat_id.empty() && t.chat_id.find(':') == std::string::npos;
  return t;
}

// A question with options, as an interactive card (message card JSON): the question as markdown,
// one button per option, and a note that typing still answers. A button's value comes back in
// the card.action.trigger callback and says which Ticket, option and message it answers, and on
// which Thread it was asked (the callback names only the chat). nullopt: a plain text message.
std::optional<json> QuestionCard(const Receipt& r, const json& payload) {
  if (!r.ticket || !payload.is_object() || !payload.contains("form") || !payload.contains("question")) return std::nullopt;
  auto form = ParseQuestionForm(payload["form"]);
  const std::string question = json_read::StringOr(payload, "question");
  if (!form.ok() || form->options.empty() || question.empty()) return std::nullopt;
  json buttons = json::array();
  for (std::size_t i = 0; i < form->options.size(); ++i) {
    buttons.push_back({{"tag", "button"},
                       {"text", {{"tag", "plain_text"}, {"content", std::to_string(i + 1) + ". " + form->options[i]}}},
                       {"type", "default"},
                       {"value", {{"ticket", *r.ticket}, {"option", i + 1}, {"receipt", r.id}, {"thread", r.thread}}}});
  }
  const std::string note = form->free_text ? "You can also reply with the number of your choice, or in your own words."
                                           : "You can also reply with the number of your choice.";
  return json{{"config", {{"wide_screen_mode", true}}},
              {"elements", json::array({json{{"tag", "markdown"}, {"content", question}},
                                        json{{"tag", "action"}, {"actions", buttons}},
                                        json{{"tag", "note"}, {"elements", json::array({json{{"tag", "plain_text"}, {"content", note}}})}}})}};
}

}  // namespace

std::string RequestUuid(const std::string& install_id, const std::string& receipt_id) {
  if (install_id.empty()) return receipt_id.size() <= 50 ? receipt_id : "sa-" + Sha256Hex(receipt_id).substr(0, 40);
  // Feishu takes at most 50 characters: a digest of both, which no other install or receipt makes.
  return "sa-" + Sha256Hex(install_id + "\n" + receipt_id).substr(0, 40);
}

FeishuChannel::FeishuChannel(Client* client, Clock* clock, std::size_t word_limit, int chat_qps, std::string install_id)
    : client_(client), clock_(clock), word_limit_(word_limit), chat_qps_(chat_qps), install_id_(std::move(install_id)) {}

bool FeishuChannel::Handles(const std::string& channel) const { return channel.rfind("feishu:", 0) == 0; }

Delivery FeishuChannel::Perform(const Effect& effect, bool outcome_unknown) {
  if (effect.kind != "post_message" || !effect.receipt)
    return Delivery::Failed("feishu channel cannot perform " + effect.kind);
  const Receipt& r = *effect.receipt;
  const Target target = ParseTarget(r.channel);
  if (!target.ok) return Delivery::Failed("not a feishu channel: " + r.channel);
  if (text::CountWords(r.body) > word_limit_)
    return Delivery::Failed("chat messages may have at most " + std::to_string(word_limit_) + " words");
  {
    // Feishu allows 5 messages per second per chat, shared by every bot in it: wait our turn
    // instead of spending a request on a 429.
    std::lock_guard<std::mutex> lock(mu_);
    const TimeMs now = clock_->NowMs();
    auto& times = sent_[target.chat_id];
    while (!times.empty() && now - times.front() >= 1000) times.pop_front();
    if (static_cast<int>(times.size()) >= chat_qps_)
      return Delivery::Retry("chat send rate reached", times.front() + 1000 - now);
    times.push_back(now);
  }
  const std::string uuid = RequestUuid(install_id_, r.id);
  // A question with options is a card the asked person answers with one click; anything else is text.
  const std::optional<json> card = QuestionCard(r, effect.payload);
  const std::string msg_type = card ? "interactive" : "text";
  const std::string content = card ? card->dump() : json{{"text", r.body}}.dump();
  ApiResult res;
  if (!target.message_id.empty()) {
    res = client_->Call("POST", "/open-apis/im/v1/messages/" + QueryValue(target.message_id) + "/reply",
                        json{{"content", content}, {"msg_type", msg_type}, {"reply_in_thread", target.in_thread},
                             {"uuid", uuid}});
  } else {
    res = client_->Call("POST", "/open-apis/im/v1/messages?receive_id_type=chat_id",
                        json{{"receive_id", target.chat_id}, {"content", content}, {"msg_type", msg_type}, {"uuid", uuid}});
  }
  if (res.ok()) {
    const std::string id = json_read::StringOr(res.Data(), "message_id");
    // A uuid Feishu saw within the hour returns that earlier message and sends nothing: one in
    // another chat means this message was never posted, whatever the status says (issue 23).
    const std::string chat = json_read::StringOr(res.Data(), "chat_id");
    if (chat != target.chat_id) {
      spdlog::warn("feishu message not posted receipt={} chat={} returned_message={} returned_chat={}", r.id,
                   target.chat_id, id, chat);
      return Delivery::Failed("Feishu answered with message " + (id.empty() ? std::string("(none)") : id) + " in chat " +
                              (chat.empty() ? std::string("(none)") : chat) + ", not in " + target.chat_id +
                              ": the request uuid was used before, and this message was not posted");
    }
    spdlog::info("feishu message sent receipt={} chat={} message={} type={} retried_unknown={}", r.id, target.chat_id, id,
                 msg_type, outcome_unknown);
    return Delivery::Done(id);
  }
  if (res.rate_limited) return Delivery::Retry(res.error, res.retry_after_ms);
  if (res.http_status == 0 || res.http_status >= 500) return Delivery::Retry(res.error);
  // 2300xx codes: the chat or message is gone or the bot was removed (semantics UNCONFIRMED;
  // the node SDK reads 230017/230020 so). 404 likewise.
  if (res.http_status == 404 || res.code == 230017 || res.code == 230020 || res.code == 230002)
    return Delivery::Gone(res.error);
  return Delivery::Failed(res.error);
}

}  // namespace superagent::feishu
