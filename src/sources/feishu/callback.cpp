// The HTTP callback path (realtime alternative to the long connection): POST /hooks/feishu.
// Order of checks: the signature over the raw body and a fresh timestamp first, before anything
// is parsed or decrypted; the URL-verification challenge (which Feishu does not sign) is answered
// only after it decrypted and its token matched; every event must be signed. Every refusal is
// the same 401 and nothing is stored.
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "superagent/feishu.h"
#include "sources/feishu/source.h"
#include "superagent/metrics.h"
#include "superagent/json_read.h"
#include "sources/intake.h"

namespace superagent::feishu {

using nlohmann::json;

namespace {

CallbackReply Reply(int status, const std::string& msg) { return {status, "application/json", json{{"msg", msg}}.dump()}; }

bool ConstantTimeEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

CallbackReply Source::HandleCallback(const CallbackRequest& req) {
  // One answer for every failed proof (no key, bad signature, stale timestamp, undecryptable,
  // wrong token, missing headers): the sender learns nothing about which check failed, so an
  // undecryptable body is no padding oracle. Counted, summarized by the next round.
  auto refuse = [&](const char* why) {
    metrics::ProcessRuntime().CountRefusedDelivery("feishu");
    if (refused_since_report_.fetch_add(1) == 0) spdlog::warn("feishu callback refused: {}", why);
    else spdlog::debug("feishu callback refused: {}", why);
    return Reply(401, "refused: the request is not signed with this app's encrypt key");
  };
  if (options_.encrypt_key.empty()) return refuse("no encrypt key configured (feishu.encrypt_key_env)");
  // Events are signed over the raw body: checked before the body is decrypted or parsed. Only
  // the URL-verification challenge comes unsigned; it is answered only when it decrypts with
  // our key and carries our verification token.
  const bool is_signed = !req.signature.empty();
  if (is_signed) {
    if (!ConstantTimeEqual(req.signature, CallbackSignature(req.timestamp, req.nonce, options_.encrypt_key, req.body)))
      return refuse("bad signature");
    char* end = nullptr;
    const long long ts = std::strtoll(req.timestamp.c_str(), &end, 10);
    const TimeMs skew = ts * 1000 - clock_->NowMs();
    if (req.timestamp.empty() || *end != '\0' || skew > options_.callback_max_skew_ms ||
        -skew > options_.callback_max_skew_ms)
      return refuse("stale timestamp");
  }
  json outer = json::parse(req.body, nullptr, false);
  if (!outer.is_object()) return is_signed ? Reply(400, "body is not a JSON object") : refuse("unsigned, not JSON");
  json payload = outer;
  if (outer.contains("encrypt")) {
    if (!outer["encrypt"].is_string())
      return is_signed ? Reply(400, "encrypt is not a string") : refuse("unsigned, encrypt is not a string");
    auto plain = Decrypt(options_.encrypt_key, outer["encrypt"].get<std::string>());
    if (!plain.ok()) return is_signed ? Reply(400, "encrypt does not decrypt") : refuse("unsigned, does not decrypt");
    payload = json::parse(*plain, nullptr, false);
    if (!payload.is_object())
      return is_signed ? Reply(400, "decrypted body is not a JSON object") : refuse("unsigned, decrypts to no JSON object");
  }
  // A field of another type reads as absent: a token that is not text matches nothing.
  const bool challenge = json_read::StringOr(payload, "type") == "url_verification";
  const json* header = json_read::Find(payload, "header");
  const std::string token = !challenge && header != nullptr && header->is_object()
                                ? json_read::StringOr(payload, "header.token")
                                : json_read::StringOr(payload, "token");
  if (!options_.verification_token.empty() && !ConstantTimeEqual(token, options_.verification_token))
    return refuse("verification token mismatch");
  if (challenge) {
    spdlog::info("feishu callback url verification answered");
    return {200, "application/json", json{{"challenge", json_read::StringOr(payload, "challenge")}}.dump()};
  }
  if (!is_signed) return refuse("unsigned event");
  // A press on a question card's button: answered with a toast at once, taken by the Engine after.
  if (json_read::StringOr(payload, "header.event_type") == "card.action.trigger")
    return {200, "application/json", TakeCardAction(payload, "realtime:callback").dump()};
  auto outcome = TakeEvent(payload, "realtime:callback", /*may_fetch_identity=*/false);
  if (!outcome.ok()) {
    if (outcome.status().code() == Status::Code::kUnavailable) {
      // Feishu redelivers an event that was not answered 200 (after 15 s, 5 min, 1 h, 6 h).
      RequestRound();
      return Reply(503, "the bot's identity is not known yet; Feishu delivers this event again");
    }
    return Reply(500, "could not take the event");
  }
  return Reply(200, *outcome);
}

void Source::ReportRefusedCallbacks() {
  sources::ReportRefused(*engine_, "feishu", "callback", refused_since_report_.exchange(0),
                         "not signed with feishu.encrypt_key_env's key, stale or wrong token", &refusals_reported_);
}

void InstallCallbackRoute(httplib::Server& server, Source* source) {
  server.Post("/hooks/feishu", [source](const httplib::Request& req, httplib::Response& res) {
    CallbackRequest c;
    c.timestamp = req.get_header_value("X-Lark-Request-Timestamp");
    c.nonce = req.get_header_value("X-Lark-Request-Nonce");
    c.signature = req.get_header_value("X-Lark-Signature");
    c.body = req.body;
    CallbackReply reply = source->HandleCallback(c);
    res.status = reply.status;
    res.set_content(reply.body, reply.content_type);
  });
}

}  // namespace superagent::feishu
