// A loopback Feishu Open Platform for tests: the REST wire format of the official API (token at
// the top level, bot info under `bot`, the {code,msg,data} envelope, message lists with chat and
// thread containers and page tokens, send/reply honouring `uuid`, 429 with x-ogw-ratelimit-reset)
// over a real socket, so the real HTTP client and the real Source run against it. The shapes
// follow research/integration-facts.md Part B (checked against @larksuiteoapi/node-sdk types).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "hold_gate.h"
#include "superagent/clock.h"

namespace superagent::testing {

class FakeFeishu {
 public:
  struct Logged {
    std::string method, path;
    std::map<std::string, std::string> params;
    std::string body;
    int status = 0;
  };

  explicit FakeFeishu(Clock* clock) : clock_(clock) {
    server_.Post("/open-apis/auth/v3/tenant_access_token/internal",
                 [this](const httplib::Request& req, httplib::Response& res) { Token(req, res); });
    server_.Get("/open-apis/bot/v3/info", [this](const httplib::Request& req, httplib::Response& res) {
      Guarded(req, res, [&] { return nlohmann::json{{"code", 0}, {"msg", "ok"}, {"bot", {{"activate_status", bot_activate_status}, {"app_name", "superagent"}, {"open_id", bot_open_id}}}}; });
    });
    server_.Get("/open-apis/im/v1/messages", [this](const httplib::Request& req, httplib::Response& res) { List(req, res); });
    server_.Get(R"(/open-apis/im/v1/messages/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      Lookup(req, res, req.matches[1]);
    });
    server_.Post("/open-apis/im/v1/messages", [this](const httplib::Request& req, httplib::Response& res) {
      Create(req, res, req.get_param_value("receive_id_type") == "chat_id" ? "" : "?");
    });
    server_.Post(R"(/open-apis/im/v1/messages/([^/]+)/reply)", [this](const httplib::Request& req, httplib::Response& res) {
      Create(req, res, req.matches[1]);
    });
    server_.Post("/callback/ws/endpoint", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      Log(req, 200);
      ++endpoint_calls;
      auto body = nlohmann::json::parse(req.body, nullptr, false);
      if (!body.is_object() || body.value("AppID", "") != app_id || body.value("AppSecret", "") != app_secret) {
        res.set_content(R"({"code":514,"msg":"auth failed"})", "application/json");
        return;
      }
      res.set_content((ws_endpoint_fn ? ws_endpoint_fn() : ws_endpoint).dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeFeishu() {
    while (!server_.is_running()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::unique_lock<std::mutex> Lock() { return std::unique_lock<std::mutex>(mu_); }

  // --- state ---
  std::string app_id = "cli_a1b2c3d4e5f60718", app_secret = "app-s3cret";
  std::string bot_open_id = "ou_bot0000000000000000000000000000";
  int bot_activate_status = 2;  // 2 = enabled
  std::string token = "t-fake-1";
  int token_expire_s = 7200;
  int token_mints = 0;
  int endpoint_calls = 0;
  nlohmann::json ws_endpoint = nlohmann::json{{"code", 1000040343}, {"msg", "no long connection here"}};
  std::function<nlohmann::json()> ws_endpoint_fn;  // when set, answers /callback/ws/endpoint
  std::vector<nlohmann::json> messages;          // history items, in creation order
  std::map<std::string, int> fail_container;     // container id → HTTP status to answer with
  std::map<std::string, int> fail_message;       // message id → HTTP status its lookup answers with
  // message id → the raw body its lookup answers with (HTTP 200): hostile or broken answers.
  std::map<std::string, std::string> message_answer;
  std::set<std::string> topic_mode_chats;         // chat container also lists topic replies there
  int page_size = 2;                              // small pages so paging is exercised
  int rate_limit_next = 0;                        // answer the next N sends with 429
  int reset_seconds = 3;
  std::map<std::string, std::string> uuids;       // uuid → message_id already sent
  std::vector<nlohmann::json> sent;               // every message actually created by send/reply
  int next_id = 1000;

  // Requests for (method, path) are held unanswered until Release(): a Feishu that hangs.
  // WaitUntilHolding blocks until one is held (false after 10 s).
  void Hold(const std::string& method, const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.insert(method + " " + path);
  }
  bool WaitUntilHolding() { return hold_.WaitUntilHolding(); }
  bool Holding() { return hold_.Holding(); }
  void Release() { hold_.Release(); }

  std::vector<Logged> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  int Count(const std::string& method, const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& l : log_) n += l.method == method && l.path == path;
    return n;
  }

  // A history item (B4 shape): create_time in ms, content as a JSON string in body.content.
  static nlohmann::json Item(const std::string& message_id, const std::string& chat_id, const std::string& sender_open_id,
                             const std::string& text, TimeMs at, const std::string& thread_id = "",
                             const std::string& root_id = "", const nlohmann::json& mentions = nlohmann::json::array()) {
    nlohmann::json item = {{"message_id", message_id},
                           {"msg_type", "text"},
                           {"create_time", std::to_string(at)},
                           {"update_time", std::to_string(at)},
                           {"deleted", false},
                           {"updated", false},
                           {"chat_id", chat_id},
                           {"sender", {{"id", sender_open_id}, {"id_type", "open_id"}, {"sender_type", "user"}, {"tenant_key", "2ca1d211f64f6438"}}},
                           {"body", {{"content", nlohmann::json{{"text", text}}.dump()}}},
                           {"mentions", mentions}};
    if (!thread_id.empty()) item["thread_id"] = thread_id;
    if (!root_id.empty()) {
      item["root_id"] = root_id;
      item["parent_id"] = root_id;
    }
    return item;
  }
  // Someone opens a topic on an existing message: from now on Feishu names the topic in that
  // message's thread_id (GET message-by-id and the listings), and replies carry it too.
  void OpenTopicOn(const std::string& message_id, const std::string& thread_id) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& m : messages)
      if (m["message_id"] == message_id) m["thread_id"] = thread_id;
  }
  // Lookups of one message (GET /open-apis/im/v1/messages/<id>).
  int Lookups(const std::string& message_id) { return Count("GET", "/open-apis/im/v1/messages/" + message_id); }
  int Lookups() {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& l : log_) n += l.method == "GET" && l.path.rfind("/open-apis/im/v1/messages/", 0) == 0;
    return n;
  }

  // History mention entry (id is a string + id_type).
  static nlohmann::json HistoryMention(const std::string& key, const std::string& open_id, const std::string& name) {
    return {{"key", key}, {"id", open_id}, {"id_type", "open_id"}, {"name", name}, {"tenant_key", "2ca1d211f64f6438"}};
  }
  // The same message as an im.message.receive_v1 envelope (v2 schema) — the realtime shape.
  static nlohmann::json EventFor(const nlohmann::json& item, const std::string& chat_type, const std::string& event_id) {
    nlohmann::json mentions = nlohmann::json::array();
    for (const auto& m : item.value("mentions", nlohmann::json::array()))
      mentions.push_back({{"key", m["key"]}, {"id", {{"open_id", m["id"]}, {"union_id", "on_x"}, {"user_id", "u_x"}}}, {"name", m["name"]}, {"tenant_key", "2ca1d211f64f6438"}});
    nlohmann::json message = {{"message_id", item["message_id"]},
                              {"create_time", item["create_time"]},
                              {"update_time", item["update_time"]},
                              {"chat_id", item["chat_id"]},
                              {"chat_type", chat_type},
                              {"message_type", item["msg_type"]},
                              {"content", item["body"]["content"]},
                              {"mentions", mentions}};
    for (const char* k : {"thread_id", "root_id", "parent_id"})
      if (item.contains(k)) message[k] = item[k];
    return {{"schema", "2.0"},
            {"header", {{"event_id", event_id}, {"event_type", "im.message.receive_v1"}, {"create_time", item["create_time"]}, {"token", "v-token"}, {"app_id", "cli_a1b2c3d4e5f60718"}, {"tenant_key", "2ca1d211f64f6438"}}},
            {"event", {{"sender", {{"sender_id", {{"open_id", item["sender"]["id"]}, {"union_id", "on_x"}, {"user_id", "u_x"}}}, {"sender_type", "user"}, {"tenant_key", "2ca1d211f64f6438"}}}, {"message", message}}}};
  }

  // A card.action.trigger callback as Feishu delivers it (v2 envelope; the oapi-sdk-go callback
  // model): `operator_open_id` pressed a button whose value is `value` on card `card_message_id`.
  static nlohmann::json CardActionFor(const std::string& card_message_id, const std::string& chat_id,
                                      const std::string& operator_open_id, const nlohmann::json& value,
                                      const std::string& event_id, TimeMs at) {
    return {{"schema", "2.0"},
            {"header", {{"event_id", event_id}, {"event_type", "card.action.trigger"}, {"create_time", std::to_string(at)}, {"token", "v-token"}, {"app_id", "cli_a1b2c3d4e5f60718"}, {"tenant_key", "2ca1d211f64f6438"}}},
            {"event", {{"operator", {{"tenant_key", "2ca1d211f64f6438"}, {"user_id", "u_x"}, {"open_id", operator_open_id}, {"union_id", "on_x"}}},
                       {"token", "c-" + event_id},
                       {"action", {{"value", value}, {"tag", "button"}}},
                       {"host", "im_message"},
                       {"context", {{"open_message_id", card_message_id}, {"open_chat_id", chat_id}}}}}};
  }

 private:
  void Log(const httplib::Request& req, int status) {
    Logged l{req.method, req.path, {}, req.body, status};
    for (const auto& [k, v] : req.params) l.params[k] = v;
    log_.push_back(l);
  }

  void Token(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    Log(req, 200);
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (!body.is_object() || body.value("app_id", "") != app_id || body.value("app_secret", "") != app_secret) {
      res.set_content(R"({"code":10014,"msg":"app secret invalid"})", "application/json");
      return;
    }
    ++token_mints;
    res.set_content(nlohmann::json{{"code", 0}, {"msg", "ok"}, {"tenant_access_token", token}, {"expire", token_expire_s}}.dump(),
                    "application/json");
  }

  template <typename F>
  void Guarded(const httplib::Request& req, httplib::Response& res, F&& answer) {
    bool held = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held = held_.count(req.method + " " + req.path) > 0;
    }
    if (held) hold_.Hold();
    std::lock_guard<std::mutex> lock(mu_);
    if (req.get_header_value("Authorization") != "Bearer " + token) {
      Log(req, 400);
      res.status = 400;
      res.set_content(R"({"code":99991663,"msg":"Invalid access token for authorization."})", "application/json");
      return;
    }
    nlohmann::json j = answer();
    int status = j.contains("_status") ? j["_status"].get<int>() : 200;
    j.erase("_status");
    Log(req, status);
    res.status = status;
    if (j.contains("_reset")) {
      res.set_header("x-ogw-ratelimit-reset", std::to_string(j["_reset"].get<int>()));
      j.erase("_reset");
    }
    res.set_content(j.dump(), "application/json");
  }

  void List(const httplib::Request& req, httplib::Response& res) {
    Guarded(req, res, [&]() -> nlohmann::json {
      const std::string type = req.get_param_value("container_id_type");
      const std::string id = req.get_param_value("container_id");
      if (auto f = fail_container.find(id); f != fail_container.end())
        return {{"_status", f->second}, {"code", 230001}, {"msg", "internal error"}};
      if (type == "thread" && req.has_param("start_time"))
        return {{"_status", 400}, {"code", 230001}, {"msg", "thread container does not support start_time"}};
      const std::int64_t start_ms = req.has_param("start_time") ? std::stoll(req.get_param_value("start_time")) * 1000 : 0;
      std::vector<nlohmann::json> matching;
      for (const auto& m : messages) {
        if (type == "chat") {
          if (m["chat_id"] != id) continue;
          // A normal group's chat container lists only a topic's root, never its replies.
          if (m.contains("root_id") && m.contains("thread_id") && !topic_mode_chats.count(id)) continue;
        } else if (type == "thread") {
          if (!m.contains("thread_id") || m["thread_id"] != id) continue;
        } else {
          return {{"_status", 400}, {"code", 230001}, {"msg", "bad container_id_type"}};
        }
        if (std::stoll(m["create_time"].get<std::string>()) < start_ms) continue;
        matching.push_back(m);
      }
      std::size_t offset = req.has_param("page_token") ? std::stoul(req.get_param_value("page_token").substr(2)) : 0;
      nlohmann::json items = nlohmann::json::array();
      for (std::size_t i = offset; i < matching.size() && i < offset + static_cast<std::size_t>(page_size); ++i)
        items.push_back(matching[i]);
      const bool more = offset + static_cast<std::size_t>(page_size) < matching.size();
      nlohmann::json data = {{"has_more", more}, {"items", items}};
      if (more) data["page_token"] = "pt" + std::to_string(offset + static_cast<std::size_t>(page_size));
      return {{"code", 0}, {"msg", "success"}, {"data", data}};
    });
  }

  // GET /open-apis/im/v1/messages/<id>: data.items[] holding the message in the listing's shape
  // (research B4: "same item shape"), thread_id included once a topic grew on it.
  void Lookup(const httplib::Request& req, httplib::Response& res, const std::string& id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto raw = message_answer.find(id); raw != message_answer.end()) {
        if (req.get_header_value("Authorization") == "Bearer " + token) {
          Log(req, 200);
          res.set_content(raw->second, "application/json");
          return;
        }
      }
    }
    Guarded(req, res, [&]() -> nlohmann::json {
      if (auto f = fail_message.find(id); f != fail_message.end())
        return {{"_status", f->second}, {"code", 230001}, {"msg", "internal error"}};
      for (const auto& m : messages)
        if (m["message_id"] == id) return {{"code", 0}, {"msg", "success"}, {"data", {{"items", nlohmann::json::array({m})}}}};
      return {{"_status", 400}, {"code", 230011}, {"msg", "message not found"}};
    });
  }

  // reply_to: "" = send to a chat, "?" = unsupported receive_id_type, else the replied message.
  void Create(const httplib::Request& req, httplib::Response& res, const std::string& reply_to) {
    Guarded(req, res, [&]() -> nlohmann::json {
      if (rate_limit_next > 0) {
        --rate_limit_next;
        return {{"_status", 429}, {"_reset", reset_seconds}, {"code", 99991400}, {"msg", "request trigger frequency limit"}};
      }
      if (reply_to == "?") return {{"_status", 400}, {"code", 230001}, {"msg", "bad receive_id_type"}};
      auto body = nlohmann::json::parse(req.body, nullptr, false);
      if (!body.is_object() || !body.contains("content") || !body["content"].is_string())
        return {{"_status", 400}, {"code", 230001}, {"msg", "content is required"}};
      const std::string uuid = body.value("uuid", "");
      if (!uuid.empty() && uuids.count(uuid)) {
        for (const auto& m : sent)
          if (m["message_id"] == uuids[uuid]) return {{"code", 0}, {"msg", "success"}, {"data", m}};
      }
      std::string chat_id;
      std::string thread_id;
      if (reply_to.empty()) {
        chat_id = body.value("receive_id", "");
      } else {
        const nlohmann::json* parent = nullptr;
        for (const auto& m : messages)
          if (m["message_id"] == reply_to) parent = &m;
        if (parent == nullptr) return {{"_status", 400}, {"code", 230011}, {"msg", "message not found"}};
        chat_id = (*parent)["chat_id"];
        if (body.value("reply_in_thread", false))
          thread_id = parent->contains("thread_id") ? (*parent)["thread_id"].get<std::string>() : "omt_new" + std::to_string(next_id);
      }
      const std::string mid = "om_sent" + std::to_string(next_id++);
      nlohmann::json m = {{"message_id", mid},
                          {"msg_type", body.value("msg_type", "text")},
                          {"create_time", std::to_string(clock_->NowMs())},
                          {"update_time", std::to_string(clock_->NowMs())},
                          {"deleted", false},
                          {"updated", false},
                          {"chat_id", chat_id},
                          {"sender", {{"id", app_id}, {"id_type", "app_id"}, {"sender_type", "app"}, {"tenant_key", "2ca1d211f64f6438"}}},
                          {"body", {{"content", body["content"]}}},
                          {"uuid", uuid}};
      if (!reply_to.empty()) {
        m["parent_id"] = reply_to;
        m["root_id"] = reply_to;
      }
      if (!thread_id.empty()) m["thread_id"] = thread_id;
      if (body.contains("reply_in_thread")) m["reply_in_thread"] = body["reply_in_thread"];
      sent.push_back(m);
      messages.push_back(m);
      if (!uuid.empty()) uuids[uuid] = mid;
      return {{"code", 0}, {"msg", "success"}, {"data", m}};
    });
  }

  Clock* clock_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Logged> log_;
  std::set<std::string> held_;  // "GET /open-apis/im/v1/messages"
  HoldGate hold_;
};

}  // namespace superagent::testing
