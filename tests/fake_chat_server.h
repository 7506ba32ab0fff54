// A loopback OpenAI-compatible chat-completions server (DeepSeek's wire format) for tests.
// Every request is checked against the wire format — method, path, bearer key, JSON body,
// message roles, tool schema, forced tool choice — and each violation is recorded (and answered
// with HTTP 400), so a test that ends with problems().empty() has shown the client speaks the
// real format. Replies are scripted per test, in order.
#pragma once

#include <condition_variable>
#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "hold_gate.h"

namespace superagent::testing {

struct ChatReply {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  int delay_ms = 0;  // held before answering (timeouts); keep tiny: tests must stay fast
  bool hold = false;  // held until Release() (or the server stops): a model call still in flight
};

class FakeChatServer {
 public:
  using json = nlohmann::json;

  // The nine arguments of `decide` (issue 4).
  static const std::vector<std::string>& DecideArguments() {
    static const std::vector<std::string> names = {"decision", "implementation_requested", "target_basis",
                                                   "open_design_decision", "evidence", "rules", "scope",
                                                   "related_ticket", "acknowledgement"};
    return names;
  }

  // `prefix` is where the API lives: "/v1" (OpenAI style) or "" (DeepSeek's bare base URL).
  explicit FakeChatServer(std::string api_key = "sk-test-0123456789abcdef", std::string prefix = "/v1",
                          std::string model = "deepseek-chat")
      : api_key_(std::move(api_key)), prefix_(std::move(prefix)), model_(std::move(model)) {
    server_.Post(prefix_ + "/chat/completions",
                 [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
    // The model list (GET /models), as `superagent doctor` reads it; 401 on a wrong key.
    server_.Get(prefix_ + "/models", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Authorization") != "Bearer " + api_key_) {
        res.status = 401;
        res.set_content(R"({"error":{"message":"Authentication Fails, Your api key is invalid","type":"authentication_error"}})",
                        "application/json");
        return;
      }
      json list = {{"object", "list"}, {"data", json::array()}};
      for (const std::string& m : {model_, std::string("deepseek-reasoner")})
        list["data"].push_back({{"id", m}, {"object", "model"}, {"owned_by", "deepseek"}});
      res.set_content(list.dump(), "application/json");
    });
    // Anything else is a client bug: record it.
    auto wrong = [this](const httplib::Request& req, httplib::Response& res) {
      Problem("unexpected " + req.method + " " + req.path);
      res.status = 404;
      res.set_content(R"({"error":{"message":"not found"}})", "application/json");
    };
    server_.Get(".*", wrong);
    server_.Post(".*", wrong);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib 0.11's stop() does nothing until the accept loop has set is_running(); a test that
    // never calls the server would otherwise hang in the destructor's join. The loop starts
    // within microseconds, so this is a wait for a thread to start, not for time to pass.
    for (int i = 0; i < 5'000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ~FakeChatServer() {
    Release();
    server_.stop();
    thread_.join();
  }

  // `hold` replies: a request in flight the test lets go (HoldGate).
  bool WaitUntilHolding() { return hold_.WaitUntilHolding(); }
  void Release() { hold_.Release(); }
  bool Holding() { return hold_.Holding(); }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + prefix_; }
  const std::string& api_key() const { return api_key_; }

  void Push(ChatReply r) {
    std::lock_guard<std::mutex> lock(mu_);
    replies_.push_back(std::move(r));
  }
  // A reply for the next request whose body contains `needle` (e.g. "# Ticket 2:"), before the
  // in-order replies: several worker sessions calling at once each get their own script.
  void PushFor(const std::string& needle, ChatReply r) {
    std::lock_guard<std::mutex> lock(mu_);
    keyed_.emplace_back(needle, std::move(r));
  }
  // Called with each well-formed request's body before it is answered (on the server's thread):
  // lets a test act while a worker is known to be mid-turn.
  void OnRequest(std::function<void(const json&)> hook) {
    std::lock_guard<std::mutex> lock(mu_);
    on_request_ = std::move(hook);
  }

  std::vector<json> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<std::string> problems() const {
    std::lock_guard<std::mutex> lock(mu_);
    return problems_;
  }
  std::size_t pending_replies() const {
    std::lock_guard<std::mutex> lock(mu_);
    return replies_.size() + keyed_.size();
  }

  // ---- replies, shaped like DeepSeek's ----

  static json Usage(int prompt = 1200, int completion = 80, int cache_hit = 1024) {
    return {{"prompt_tokens", prompt},
            {"completion_tokens", completion},
            {"total_tokens", prompt + completion},
            {"prompt_tokens_details", {{"cached_tokens", cache_hit}}},
            {"prompt_cache_hit_tokens", cache_hit},
            {"prompt_cache_miss_tokens", prompt - cache_hit}};
  }

  // A completion whose message calls tools: [{name, arguments-json-text}].
  ChatReply ToolCalls(const std::vector<std::pair<std::string, std::string>>& calls, const json& usage = Usage()) {
    json tool_calls = json::array();
    int i = 0;
    for (const auto& [name, args] : calls) {
      tool_calls.push_back({{"index", i},
                            {"id", "call_" + std::to_string(++next_call_)},
                            {"type", "function"},
                            {"function", {{"name", name}, {"arguments", args}}}});
      ++i;
    }
    json body = {{"id", "chatcmpl-" + std::to_string(next_call_)},
                 {"object", "chat.completion"},
                 {"created", 1767225600},
                 {"model", model_},
                 {"choices",
                  {{{"index", 0},
                    {"message", {{"role", "assistant"}, {"content", ""}, {"tool_calls", tool_calls}}},
                    {"logprobs", nullptr},
                    {"finish_reason", "tool_calls"}}}},
                 {"usage", usage},
                 {"system_fingerprint", "fp_test"}};
    return {200, body.dump(), {}, 0};
  }

  // A completion that calls decide with `args` (serialised as the API does: a JSON string).
  ChatReply Decide(const json& args, const json& usage = Usage()) { return ToolCalls({{"decide", args.dump()}}, usage); }

  // A plain text completion (no tool call).
  ChatReply Text(const std::string& content, const json& usage = Usage()) {
    json body = {{"id", "chatcmpl-text"},
                 {"object", "chat.completion"},
                 {"model", model_},
                 {"choices",
                  {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", "stop"}}}},
                 {"usage", usage}};
    return {200, body.dump(), {}, 0};
  }

  static ChatReply Error(int status, const std::string& message,
                         std::vector<std::pair<std::string, std::string>> headers = {}) {
    json body = {{"error", {{"message", message}, {"type", "test_error"}, {"param", nullptr}, {"code", nullptr}}}};
    return {status, body.dump(), std::move(headers), 0};
  }

  // decide's arguments answering every rule in `rules` ({name, matched}).
  static json DecideArgs(const std::string& decision, const std::vector<std::pair<std::string, bool>>& rules,
                         const std::string& evidence = "please fix the typo",
                         const std::string& ack = "I'll fix the typo in the README heading.") {
    json r = json::array();
    for (const auto& [name, matched] : rules)
      r.push_back({{"name", name}, {"matched", matched}, {"reason", matched ? "it is that kind of fix" : "not this"}});
    return {{"decision", decision},
            {"implementation_requested", decision == "accept"},
            {"target_basis", decision == "accept" ? "stated" : "undetermined"},
            {"open_design_decision", false},
            {"evidence", evidence},
            {"rules", r},
            {"scope", "Fix the typo in the README heading"},
            {"related_ticket", nullptr},
            {"acknowledgement", decision == "ignore" ? "" : ack}};
  }

 private:
  void Problem(const std::string& p) {
    std::lock_guard<std::mutex> lock(mu_);
    problems_.push_back(p);
  }

  // The wire format of POST /chat/completions as OpenAI documents it and DeepSeek accepts it.
  std::vector<std::string> Check(const httplib::Request& req, const json& body) const {
    std::vector<std::string> p;
    if (req.get_header_value("Authorization") != "Bearer " + api_key_) p.push_back("missing or wrong bearer key");
    if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) p.push_back("content type is not JSON");
    if (!body.is_object()) return {"body is not a JSON object"};
    static const std::set<std::string> known = {"model", "messages", "tools", "tool_choice", "temperature",
                                                "max_tokens", "stream"};
    for (auto it = body.begin(); it != body.end(); ++it)
      if (!known.count(it.key())) p.push_back("unexpected field " + it.key());
    if (!body.contains("model") || !body["model"].is_string() || body["model"].get<std::string>().empty())
      p.push_back("model must be a non-empty string");
    if (body.contains("stream") && body["stream"] != false) p.push_back("stream must be false");
    if (body.contains("temperature") && !body["temperature"].is_number()) p.push_back("temperature must be a number");
    if (body.contains("max_tokens") && !body["max_tokens"].is_number_integer()) p.push_back("max_tokens must be an integer");

    // messages: roles, content, tool-call pairing
    if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
      p.push_back("messages must be a non-empty array");
    } else {
      std::set<std::string> open_calls;
      const json& msgs = body["messages"];
      if (msgs[0].value("role", "") != "system") p.push_back("the first message must be the system message");
      for (std::size_t i = 0; i < msgs.size(); ++i) {
        const json& m = msgs[i];
        const std::string at = "messages[" + std::to_string(i) + "]";
        std::string role = m.is_object() ? m.value("role", "") : "";
        if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
          p.push_back(at + " has role \"" + role + "\"");
          continue;
        }
        bool calls = role == "assistant" && m.contains("tool_calls");
        if (!(m.contains("content") && (m["content"].is_string() || (calls && m["content"].is_null()))))
          p.push_back(at + " content must be a string");
        if (calls) {
          for (const json& c : m["tool_calls"]) {
            if (!c.contains("id") || !c["id"].is_string() || c.value("type", "") != "function" ||
                !c.contains("function") || !c["function"].contains("name") || !c["function"].contains("arguments") ||
                !c["function"]["arguments"].is_string())
              p.push_back(at + " has a malformed tool call");
            else
              open_calls.insert(c["id"].get<std::string>());
          }
        }
        if (role == "tool") {
          if (!m.contains("tool_call_id") || !m["tool_call_id"].is_string() ||
              !open_calls.count(m["tool_call_id"].get<std::string>()))
            p.push_back(at + " answers no earlier tool call");
          else
            open_calls.erase(m["tool_call_id"].get<std::string>());
        } else if (role != "assistant" && !open_calls.empty()) {
          p.push_back(at + " follows tool calls that were never answered");
        }
      }
      if (msgs.back().value("role", "") == "assistant") p.push_back("the last message must not be the assistant's");
    }

    // tools and tool_choice
    bool has_decide = false;
    if (body.contains("tools")) {
      if (!body["tools"].is_array()) {
        p.push_back("tools must be an array");
      } else {
        for (const json& t : body["tools"]) {
          if (t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object()) {
            p.push_back("a tool is not {type: function, function: {...}}");
            continue;
          }
          const json& f = t["function"];
          if (!f.contains("name") || !f["name"].is_string() || !f.contains("description") ||
              !f.contains("parameters") || !f["parameters"].is_object() || f["parameters"].value("type", "") != "object" ||
              !f["parameters"].contains("properties"))
            p.push_back("a tool's function needs name, description and an object schema");
          if (f.value("name", "") != "decide") continue;
          has_decide = true;
          const json& params = f["parameters"];
          std::set<std::string> props, required, expected(DecideArguments().begin(), DecideArguments().end());
          for (auto it = params["properties"].begin(); it != params["properties"].end(); ++it) props.insert(it.key());
          if (params.contains("required"))
            for (const json& r : params["required"]) required.insert(r.get<std::string>());
          if (props != expected) p.push_back("decide's properties are not exactly the nine arguments");
          if (required != expected) p.push_back("decide does not require all nine arguments");
          if (params.value("additionalProperties", true) != false) p.push_back("decide allows additional properties");
        }
      }
    }
    if (has_decide) {
      json forced = {{"type", "function"}, {"function", {{"name", "decide"}}}};
      if (!body.contains("tool_choice") || body["tool_choice"] != forced) p.push_back("tool_choice does not force decide");
    }
    return p;
  }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body, nullptr, false);
    std::vector<std::string> found = body.is_discarded() ? std::vector<std::string>{"body is not JSON"} : Check(req, body);
    std::function<void(const json&)> hook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      hook = on_request_;
    }
    if (hook && found.empty()) hook(body);
    ChatReply reply;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(body.is_discarded() ? json(req.body) : body);
      for (const std::string& f : found) problems_.push_back(f);
      const std::string text = found.empty() && !keyed_.empty() ? body.dump() : "";
      auto keyed = keyed_.end();
      for (auto it = keyed_.begin(); it != keyed_.end() && keyed == keyed_.end(); ++it)
        if (text.find(it->first) != std::string::npos) keyed = it;
      if (!found.empty()) {
        reply = Error(400, "wire format: " + found.front());
      } else if (keyed != keyed_.end()) {
        reply = keyed->second;
        keyed_.erase(keyed);
      } else if (replies_.empty()) {
        problems_.push_back("request with no scripted reply left");
        reply = Error(500, "no scripted reply");
      } else {
        reply = replies_.front();
        replies_.pop_front();
      }
    }
    if (reply.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(reply.delay_ms));
    if (reply.hold) hold_.Hold();
    res.status = reply.status;
    for (const auto& [k, v] : reply.headers) res.set_header(k.c_str(), v);
    res.set_content(reply.body, "application/json");
  }

  std::string api_key_, prefix_, model_;
  HoldGate hold_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  int next_call_ = 0;
  mutable std::mutex mu_;
  std::deque<ChatReply> replies_;
  std::deque<std::pair<std::string, ChatReply>> keyed_;
  std::function<void(const json&)> on_request_;
  std::vector<json> requests_;
  std::vector<std::string> problems_;
};

}  // namespace superagent::testing
