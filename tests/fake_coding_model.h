// A loopback model API for the coding CLIs (issue 21), speaking two wire formats:
//   - Anthropic Messages, streamed (POST /v1/messages): what Claude Code calls;
//   - OpenAI Chat Completions, streamed (POST /v1/chat/completions): what Qwen Code calls.
// It is stateless, as the measured CLIs need (../shared/research/coding-clis.md): the next step
// of a small script is decided from the tool results already in the request since its newest
// person-written message — read README.md, edit it, run a shell command, then a final answer
// ending in superagent's report block. A request that offers no tools (titles, probes) gets plain
// text. Requests are validated like the real APIs (key, model, tool-result ids matching calls,
// tool names offered) and each violation is recorded; a test that ends with problems().empty()
// has shown the CLI spoke to it as to the real API.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace superagent::testing {

// What the fake's model does, step by step (see FakeCodingModel).
struct CodingScript {
  std::string old_text = "demo";             // replaced in README.md
  std::string new_text = "demo, edited by the CLI";
  std::string command = "git diff --stat";  // the shell step
  std::string final_words = "Edited README.md and checked the diff.";
  int fail_status = 0;                      // every model call answered with this (500, 401)
  std::string followup_marker = "FOLLOW-UP";  // a newest user text with it gets the follow-up answer
  // The final report block's JSON; empty: ready with a PR.
  std::string report;
};

class FakeCodingModel {
 public:
  using json = nlohmann::json;
  enum class Wire { kAnthropic, kOpenAiChat };


  FakeCodingModel(Wire wire, std::string api_key, std::string model, CodingScript script = CodingScript())
      : wire_(wire), api_key_(std::move(api_key)), model_(std::move(model)), script_(std::move(script)) {
    auto handle = [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); };
    if (wire_ == Wire::kAnthropic) {
      server_.Post("/v1/messages", handle);
      server_.Post("/v1/messages/count_tokens", [this](const httplib::Request& req, httplib::Response& res) {
        ++calls_;
        if (!KeyOk(req)) return Refuse(res, 401);
        res.set_content(R"({"input_tokens":42})", "application/json");
      });
      // Claude Code probes the base URL before its first call.
      server_.Options("/.*", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
    } else {
      server_.Post("/v1/chat/completions", handle);
    }
    server_.Get("/.*", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
    server_.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      if (req.method == "HEAD") {
        res.status = 200;
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 5'000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ~FakeCodingModel() {
    server_.stop();
    thread_.join();
  }

  // Claude Code wants the bare host (it appends /v1/messages); Qwen Code the /v1 base.
  std::string base_url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + (wire_ == Wire::kAnthropic ? "" : "/v1");
  }
  std::vector<std::string> problems() const {
    std::lock_guard<std::mutex> lock(mu_);
    return problems_;
  }
  int calls() const { return calls_.load(); }
  int tool_calls_made() const { return tool_calls_made_.load(); }
  // A follow-up request that carried the earlier turn's tool results: the CLI resumed its session.
  bool saw_resumed_followup() const { return saw_resumed_followup_.load(); }
  std::vector<json> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  // One normalized view of a request's history, whatever the wire.
  struct Turn {
    std::vector<std::string> user_texts;  // person-written texts, in order
    int results_since_last_user = 0;      // tool results after the newest person-written text
    int results_total = 0;
    std::set<std::string> offered;        // tool names offered
    std::string first_user_text;
  };

  bool KeyOk(const httplib::Request& req) const {
    if (wire_ == Wire::kAnthropic)
      return req.get_header_value("x-api-key") == api_key_ || req.get_header_value("Authorization") == "Bearer " + api_key_;
    return req.get_header_value("Authorization") == "Bearer " + api_key_;
  }

  void Problem(const std::string& p) {
    std::lock_guard<std::mutex> lock(mu_);
    problems_.push_back(p);
  }

  void Refuse(httplib::Response& res, int status) {
    res.status = status;
    if (wire_ == Wire::kAnthropic)
      res.set_content(status == 401 ? R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})"
                                    : R"({"type":"error","error":{"type":"api_error","message":"Internal server error"}})",
                      "application/json");
    else
      res.set_content(status == 401 ? R"({"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}})"
                                    : R"({"error":{"message":"The server had an error","type":"server_error"}})",
                      "application/json");
  }

  // Anthropic: tool_use ids must each be answered by a tool_result in the next user message.
  Turn ReadAnthropic(const json& body) {
    Turn t;
    if (body.contains("tools") && body["tools"].is_array())
      for (const json& tool : body["tools"])
        if (tool.is_object() && tool.contains("name") && tool["name"].is_string()) t.offered.insert(tool["name"].get<std::string>());
    std::set<std::string> open;
    for (const json& m : body.value("messages", json::array())) {
      const std::string role = m.value("role", "");
      const json content = m.contains("content") ? m["content"] : json();
      std::vector<json> blocks;
      if (content.is_string()) blocks.push_back({{"type", "text"}, {"text", content}});
      else if (content.is_array()) blocks.assign(content.begin(), content.end());
      for (const json& b : blocks) {
        const std::string type = b.value("type", "");
        if (role == "assistant" && type == "tool_use") open.insert(b.value("id", ""));
        if (role == "user" && type == "tool_result") {
          if (!open.erase(b.value("tool_use_id", ""))) Problem("tool_result for an unknown tool_use id " + b.value("tool_use_id", ""));
          ++t.results_since_last_user;
          ++t.results_total;
        }
        if (role == "user" && type == "text") {
          const std::string text = b.value("text", "");
          // Claude Code adds its own reminders as user text; a person's text is superagent's prompt.
          if (text.find("superagent") != std::string::npos || text.find(script_.followup_marker) != std::string::npos) {
            if (t.first_user_text.empty()) t.first_user_text = text;
            t.user_texts.push_back(text);
            t.results_since_last_user = 0;
          }
        }
      }
    }
    if (!open.empty()) Problem("a tool_use left unanswered in the history");
    return t;
  }

  Turn ReadOpenAi(const json& body) {
    Turn t;
    if (body.contains("tools") && body["tools"].is_array())
      for (const json& tool : body["tools"])
        if (tool.is_object() && tool.contains("function") && tool["function"].is_object())
          t.offered.insert(tool["function"].value("name", ""));
    std::set<std::string> open;
    for (const json& m : body.value("messages", json::array())) {
      const std::string role = m.value("role", "");
      if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array())
        for (const json& c : m["tool_calls"]) open.insert(c.value("id", ""));
      if (role == "tool") {
        if (!open.erase(m.value("tool_call_id", ""))) Problem("tool message for an unknown call id " + m.value("tool_call_id", ""));
        ++t.results_since_last_user;
        ++t.results_total;
      }
      if (role == "user") {
        std::string text;
        if (m["content"].is_string()) text = m["content"].get<std::string>();
        else if (m["content"].is_array())
          for (const json& part : m["content"]) text += part.value("text", "");
        if (text.find("superagent") != std::string::npos || text.find(script_.followup_marker) != std::string::npos) {
          if (t.first_user_text.empty()) t.first_user_text = text;
          t.user_texts.push_back(text);
          t.results_since_last_user = 0;
        }
      }
    }
    if (!open.empty()) Problem("a tool call left unanswered in the history");
    return t;
  }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    ++calls_;
    if (!KeyOk(req)) {
      Problem("wrong or missing key on " + req.path);
      return Refuse(res, 401);
    }
    if (script_.fail_status != 0) return Refuse(res, script_.fail_status);
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) {
      Problem("body is not JSON");
      return Refuse(res, 400);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(body);
    }
    if (body.value("model", "") != model_) Problem("model " + body.value("model", "") + " instead of " + model_);
    if (body.value("stream", false) != true) Problem("not streamed");
    const Turn t = wire_ == Wire::kAnthropic ? ReadAnthropic(body) : ReadOpenAi(body);
    // What the next step is.
    json step;
    if (t.offered.empty() || t.user_texts.empty()) {
      step = {{"text", "ok"}};  // a title, a probe, a memory pass: nothing to do
    } else if (t.user_texts.back().find(script_.followup_marker) != std::string::npos) {
      if (t.results_total > t.results_since_last_user) saw_resumed_followup_ = true;
      step = {{"text", "Follow-up handled.\n```superagent-report\n" +
                           json({{"stage", "ready"}, {"summary", "Follow-up handled: nothing else to change."}}).dump() +
                           "\n```"}};
    } else {
      static const std::regex kDir("- directory: (\\S+)");
      std::smatch m;
      std::string dir = std::regex_search(t.first_user_text, m, kDir) ? m[1].str() : ".";
      const std::string readme = dir + "/README.md";
      const bool claude = wire_ == Wire::kAnthropic;
      switch (t.results_since_last_user) {
        case 0:
          step = claude ? json{{"tool", "Read"}, {"input", {{"file_path", readme}}}}
                        : json{{"tool", "read_file"}, {"input", {{"absolute_path", readme}, {"file_path", readme}}}};
          break;
        case 1:
          step = claude ? json{{"tool", "Edit"},
                               {"input", {{"file_path", readme}, {"old_string", script_.old_text}, {"new_string", script_.new_text}}}}
                        : json{{"tool", "edit"},
                               {"input", {{"file_path", readme}, {"old_string", script_.old_text}, {"new_string", script_.new_text}}}};
          break;
        case 2:
          step = {{"tool", claude ? "Bash" : "run_shell_command"},
                  {"input", {{"command", script_.command}, {"description", "Show what changed"}}}};
          break;
        default:
          step = {{"text", script_.final_words + "\n\n```superagent-report\n" +
                               (!script_.report.empty()
                                    ? script_.report
                                    : json({{"stage", "ready"},
                                            {"summary", script_.final_words},
                                            {"pr", {{"title", "Edit README"}, {"body", "The CLI edited README.md."}}}})
                                          .dump()) +
                               "\n```"}};
      }
      if (step.contains("tool")) {
        if (!t.offered.count(step["tool"].get<std::string>()))
          Problem("tool " + step["tool"].get<std::string>() + " is not offered");
        ++tool_calls_made_;
      }
    }
    const int n = ++reply_id_;
    res.set_header("Content-Type", "text/event-stream");
    res.set_content(wire_ == Wire::kAnthropic ? AnthropicStream(step, n) : OpenAiStream(step, n), "text/event-stream");
  }

  std::string AnthropicStream(const json& step, int n) const {
    auto ev = [](const std::string& name, const json& data) { return "event: " + name + "\ndata: " + data.dump() + "\n\n"; };
    std::string s = ev("message_start", {{"type", "message_start"},
                                         {"message",
                                          {{"id", "msg_" + std::to_string(n)},
                                           {"type", "message"},
                                           {"role", "assistant"},
                                           {"model", model_},
                                           {"content", json::array()},
                                           {"stop_reason", nullptr},
                                           {"stop_sequence", nullptr},
                                           {"usage", {{"input_tokens", 100}, {"output_tokens", 1}}}}}});
    if (step.contains("tool")) {
      s += ev("content_block_start", {{"type", "content_block_start"},
                                      {"index", 0},
                                      {"content_block",
                                       {{"type", "tool_use"}, {"id", "toolu_" + std::to_string(n)}, {"name", step["tool"]}, {"input", json::object()}}}});
      s += ev("content_block_delta", {{"type", "content_block_delta"},
                                      {"index", 0},
                                      {"delta", {{"type", "input_json_delta"}, {"partial_json", step["input"].dump()}}}});
    } else {
      s += ev("content_block_start",
              {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}});
      s += ev("content_block_delta", {{"type", "content_block_delta"},
                                      {"index", 0},
                                      {"delta", {{"type", "text_delta"}, {"text", step["text"]}}}});
    }
    s += ev("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
    s += ev("message_delta", {{"type", "message_delta"},
                              {"delta", {{"stop_reason", step.contains("tool") ? "tool_use" : "end_turn"}, {"stop_sequence", nullptr}}},
                              {"usage", {{"output_tokens", 20}}}});
    s += ev("message_stop", {{"type", "message_stop"}});
    return s;
  }

  std::string OpenAiStream(const json& step, int n) const {
    auto chunk = [&](const json& delta, const json& finish) {
      json c = {{"id", "chatcmpl-" + std::to_string(n)},
                {"object", "chat.completion.chunk"},
                {"created", 1767225600},
                {"model", model_},
                {"choices", json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}};
      return "data: " + c.dump() + "\n\n";
    };
    std::string s = chunk({{"role", "assistant"}, {"content", ""}}, nullptr);
    if (step.contains("tool")) {
      s += chunk({{"tool_calls", json::array({{{"index", 0},
                                                {"id", "call_" + std::to_string(n)},
                                                {"type", "function"},
                                                {"function", {{"name", step["tool"]}, {"arguments", step["input"].dump()}}}}})}},
                 nullptr);
      s += chunk(json::object(), "tool_calls");
    } else {
      s += chunk({{"content", step["text"]}}, nullptr);
      s += chunk(json::object(), "stop");
    }
    json usage = {{"id", "chatcmpl-" + std::to_string(n)},
                  {"object", "chat.completion.chunk"},
                  {"created", 1767225600},
                  {"model", model_},
                  {"choices", json::array()},
                  {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 20}, {"total_tokens", 120}}}};
    s += "data: " + usage.dump() + "\n\ndata: [DONE]\n\n";
    return s;
  }

  Wire wire_;
  std::string api_key_, model_;
  CodingScript script_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<std::string> problems_;
  std::vector<json> requests_;
  std::atomic<int> calls_{0}, tool_calls_made_{0}, reply_id_{0};
  std::atomic<bool> saw_resumed_followup_{false};
};

}  // namespace superagent::testing
