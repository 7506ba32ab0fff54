// The HTTP callback path (realtime alternative to the long connection): POST /hooks/feishu.
// Order of checks: a body that does not decrypt with our key is refused; the URL-verification
// challenge is answered after the token check (Feishu does not sign it); every event must carry
// a valid signature over the raw body and a fresh timestamp, else 401 and nothing is stored.
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "superagent/feishu.h"
#include "superagent/json_read.h"

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
  if (options_.encrypt_key.empty()) {
    spdlog::warn("feishu callback refused: no encrypt key configured");
    return Reply(401, "callbacks need an encrypt key (feishu.encrypt_key_env)");
  }
  json outer = json::parse(req.body, nullptr, false);
  if (!outer.is_object()) return Reply(400, "body is not a JSON object");
  json payload = outer;
  if (outer.contains("encrypt")) {
    if (!outer["encrypt"].is_string()) return Reply(400, "encrypt is not a string");
    auto plain = Decrypt(options_.encrypt_key, outer["encrypt"].get<std::string>());
    if (!plain.ok()) {
      spdlog::warn("feishu callback refused: {}", plain.status().message());
      return Reply(401, "body does not decrypt with the configured encrypt key");
    }
    payload = json::parse(*plain, nullptr, false);
    if (!payload.is_object()) return Reply(400, "decrypted body is not a JSON object");
  }
  // A field of another type reads as absent: a token that is not text matches nothing.
  const bool verification = json_read::StringOr(payload, "type") == "url_verification";
  const json* header = json_read::Find(payload, "header");
  const std::string token = !verification && header != nullptr && header->is_object()
                                ? json_read::StringOr(payload, "header.token")
                                : json_read::StringOr(payload, "token");
  if (!options_.verification_token.empty() && !ConstantTimeEqual(token, options_.verification_token)) {
    spdlog::warn("feishu callback refused: verification token mismatch");
    return Reply(401, "verification token mismatch");
  }
  if (verification) {
    spdlog::info("feishu callback url verification answered");
    return {200, "application/json", json{{"challenge", json_read::StringOr(payload, "challenge")}}.dump()};
  }
  if (req.signature.empty() ||
      !ConstantTimeEqual(req.signature, CallbackSignature(req.timestamp, req.nonce, options_.encrypt_key, req.body))) {
    spdlog::warn("feishu callback refused: bad signature");
    return Reply(401, "bad signature");
  }
  char* end = nullptr;
  const long long ts = std::strtoll(req.timestamp.c_str(), &end, 10);
  const TimeMs skew = ts * 1000 - clock_->NowMs();
  if (req.timestamp.empty() || *end != '\0' || skew > options_.callback_max_skew_ms ||
      -skew > options_.callback_max_skew_ms) {
    spdlog::warn("feishu callback refused: stale timestamp");
    return Reply(401, "timestamp is not fresh");
  }
  auto outcome = HandleEvent(payload, "realtime:callback");
  if (!outcome.ok()) return Reply(500, "could not take the event");
  return Reply(200, *outcome);
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
