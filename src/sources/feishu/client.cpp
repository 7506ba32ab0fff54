// Feishu Open Platform REST over the HttpClient seam. One tenant token per process, minted from
// the app credentials and renewed refresh_early_ms before it expires; a token error (the
// 9999166x family) drops it, mints a new one and repeats the call once.
#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>

#include "superagent/feishu.h"
#include "sources/feishu/source.h"
#include "superagent/json_read.h"

namespace superagent::feishu {

using nlohmann::json;

namespace {

std::int64_t ParseInt(const std::string& s, std::int64_t fallback) {
  if (s.empty()) return fallback;
  try {
    std::size_t used = 0;
    long long v = std::stoll(s, &used);
    return used == s.size() ? v : fallback;
  } catch (...) {
    return fallback;
  }
}

}  // namespace

const json& ApiResult::Data() const {
  static const json kEmpty = json::object();
  return body.is_object() && body.contains("data") && body["data"].is_object() ? body["data"] : kEmpty;
}

bool IsTokenError(std::int64_t code) {
  return code == 99991661 || code == 99991663 || code == 99991664 || code == 99991668 || code == 99991677;
}

bool IsPlatformId(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_' && c != '-') return false;
  return true;
}

std::string QueryValue(const std::string& value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

Client::Client(HttpClient* http, Clock* clock, ClientOptions options)
    : http_(http), clock_(clock), options_(std::move(options)) {
  while (!options_.api_url.empty() && options_.api_url.back() == '/') options_.api_url.pop_back();
}

ApiResult Client::Perform(const std::string& method, const std::string& path, const json& body,
                          const std::string& token) {
  // The path without its query: enough to say what failed, and queries may hold ids only.
  const std::string what = method + " " + path.substr(0, path.find('?'));
  ApiResult r;
  if (options_.cancel != nullptr && options_.cancel->load()) {
    r.error = what + ": not sent, shutting down";
    return r;
  }
  HttpRequest req;
  req.method = method;
  req.url = options_.api_url + path;
  req.timeout_ms = options_.timeout_ms;
  req.cancel = options_.cancel;
  if (!token.empty()) req.headers.emplace_back("Authorization", "Bearer " + token);
  if (!body.is_null()) {
    req.headers.emplace_back("Content-Type", "application/json; charset=utf-8");
    req.body = body.dump();
  }
  HttpResponse resp = http_->Send(req);
  r.http_status = resp.status;
  if (resp.cancelled) {
    r.error = what + ": abandoned, shutting down";
    return r;
  }
  if (!resp.error.empty()) {
    r.error = what + ": " + resp.error;
    return r;
  }
  // Feishu answers errors in the envelope even on 4xx/5xx, so the body is read either way.
  r.body = json::parse(resp.body, nullptr, false);
  if (r.body.is_object() && r.body.contains("code") && r.body["code"].is_number_integer()) {
    r.code = r.body["code"].get<std::int64_t>();
    r.msg = json_read::StringOr(r.body, "msg");
  }
  if (resp.status == 429 || r.code == 99991400) {
    r.rate_limited = true;
    r.retry_after_ms = ParseInt(resp.Header("x-ogw-ratelimit-reset"), 1) * 1000;
    r.error = what + ": rate limited (" + std::to_string(resp.status) + ", code " + std::to_string(r.code) + ")";
    return r;
  }
  if (r.body.is_discarded() || !r.body.is_object()) {
    r.error = what + ": HTTP " + std::to_string(resp.status) + ", answer is not JSON";
    return r;
  }
  if (r.code != 0 || resp.status < 200 || resp.status >= 300) {
    r.error = what + ": HTTP " + std::to_string(resp.status) + " code " + std::to_string(r.code) +
              (r.msg.empty() ? "" : " \"" + r.msg + "\"");
  }
  return r;
}

Result<std::string> Client::TenantToken() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  if (!token_.empty() && now < token_expires_at_ - options_.refresh_early_ms) return token_;
  ApiResult r = Perform("POST", "/open-apis/auth/v3/tenant_access_token/internal",
                        json{{"app_id", options_.app_id}, {"app_secret", options_.app_secret}}, "");
  if (!r.ok()) return Status::Unavailable("tenant token: " + r.error);
  // The token endpoint puts its fields at the top level, not under data.
  if (!r.body.contains("tenant_access_token") || !r.body["tenant_access_token"].is_string() ||
      r.body["tenant_access_token"].get<std::string>().empty())
    return Status::Unavailable("tenant token: answer has no tenant_access_token");
  token_ = r.body["tenant_access_token"].get<std::string>();
  std::int64_t expire_s = r.body.contains("expire") && r.body["expire"].is_number_integer()
                              ? r.body["expire"].get<std::int64_t>()
                              : 7200;
  token_expires_at_ = now + expire_s * 1000;
  spdlog::info("feishu tenant token minted expires_in_s={}", expire_s);
  return token_;
}

ApiResult Client::Call(const std::string& method, const std::string& path, const json& body) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto token = TenantToken();
    if (!token.ok()) {
      ApiResult r;
      r.error = token.status().message();
      return r;
    }
    ApiResult r = Perform(method, path, body, *token);
    if (!IsTokenError(r.code) || attempt == 1) return r;
    spdlog::warn("feishu token refused code={}; minting a new one", r.code);
    std::lock_guard<std::mutex> lock(mu_);
    if (token_ == *token) token_.clear();
  }
  return {};
}

Result<std::string> Client::BotOpenId() {
  ApiResult r = Call("GET", "/open-apis/bot/v3/info");
  if (!r.ok()) return Status::Unavailable(r.error);
  // bot/v3/info answers with `bot` at the top level, not under data.
  const json& bot = r.body.contains("bot") && r.body["bot"].is_object() ? r.body["bot"] : r.Data();
  if (!bot.contains("open_id") || !bot["open_id"].is_string() || bot["open_id"].get<std::string>().empty())
    return Status::Unavailable("GET /open-apis/bot/v3/info: answer has no bot.open_id");
  return bot["open_id"].get<std::string>();
}

Result<std::vector<json>> Client::ListMessages(const std::string& container_type, const std::string& container_id,
                                               std::optional<std::int64_t> start_time_s, int max_pages) {
  std::vector<json> items;
  std::string page_token;
  for (int page = 0; page < max_pages; ++page) {
    std::string path = "/open-apis/im/v1/messages?container_id_type=" + container_type +
                       "&container_id=" + QueryValue(container_id) + "&sort_type=ByCreateTimeAsc&page_size=50";
    if (start_time_s) path += "&start_time=" + std::to_string(*start_time_s);
    if (!page_token.empty()) path += "&page_token=" + QueryValue(page_token);
    ApiResult r = Call("GET", path);
    if (!r.ok()) return Status::Unavailable(r.error);
    const json& data = r.Data();
    if (data.contains("items") && data["items"].is_array())
      for (const json& item : data["items"]) items.push_back(item);
    const bool more = data.contains("has_more") && data["has_more"].is_boolean() && data["has_more"].get<bool>();
    page_token = data.contains("page_token") && data["page_token"].is_string() ? data["page_token"].get<std::string>()
                                                                                 : "";
    if (!more || page_token.empty()) return items;
  }
  return Status::Unavailable("message list of " + container_id + " exceeded " + std::to_string(max_pages) + " pages");
}

Result<std::string> Client::MessageThread(const std::string& message_id) {
  if (!IsPlatformId(message_id)) return Status::InvalidArgument("not a message id");
  const std::string what = "GET /open-apis/im/v1/messages/" + message_id;
  ApiResult r = Call("GET", "/open-apis/im/v1/messages/" + message_id);
  // A recalled or deleted message: nothing can grow on it any more (code UNCONFIRMED, read as the
  // reply API's "message not found").
  if (r.http_status == 404 || r.code == 230011) return Status::NotFound(r.error.empty() ? what + ": gone" : r.error);
  if (!r.ok()) return Status::Unavailable(r.error);
  // data.items[]: the message, in the listing's shape (a merged forward lists its parts after it).
  const json& data = r.Data();
  if (!data.contains("items") || !data["items"].is_array())
    return Status::Unavailable(what + ": answer has no data.items list");
  for (const json& item : data["items"]) {
    if (!item.is_object() || !item.contains("message_id") || !item["message_id"].is_string() ||
        item["message_id"].get<std::string>() != message_id)
      continue;
    if (!item.contains("thread_id") || item["thread_id"].is_null()) return std::string();
    const json& tid = item["thread_id"];
    if (!tid.is_string()) return Status::Unavailable(what + ": thread_id is " + std::string(tid.type_name()) + ", not text");
    const std::string id = tid.get<std::string>();
    if (id.empty()) return std::string();
    if (!IsPlatformId(id))
      return Status::Unavailable(what + ": thread_id is not an id (" + std::to_string(id.size()) + " bytes)");
    return id;
  }
  return Status::Unavailable(what + ": answer holds no item for this message");
}

ApiResult Client::WsEndpoint() {
  // PascalCase credentials, and not under /open-apis: this is how the official SDKs ask.
  return Perform("POST", "/callback/ws/endpoint",
                 json{{"AppID", options_.app_id}, {"AppSecret", options_.app_secret}}, "");
}

}  // namespace superagent::feishu
