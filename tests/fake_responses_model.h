// A loopback OpenAI Responses API (POST /v1/responses, SSE) for driving the real Codex CLI
// offline. Stateless script, decided from the tool results already in the request since its
// newest user message: read README.md, fix its typo (apply_patch when Codex offers it — only for a
// model slug it knows — else a sed through exec_command), optionally a command outside the
// allow-list, `git diff --stat`, then a final message with a ```superagent-report``` block.
// Requests are validated like the real API (bearer key, model, stream, every tool output answers
// an earlier call of the same id); each problem is recorded and tests assert there are none.
#pragma once

#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace superagent::testing {

struct FakeCliScript {
  enum class Mode { kWork, kFail500, kFail401 };
  Mode mode = Mode::kWork;
  std::string outside_command;  // run after the edit when set (a command outside the allow-list)
  std::string followup_marker = "FOLLOW-UP-7f3a";  // newest user text has it: the follow-up answer
  std::string final_text = "Fixed the typo in README.md.\n```superagent-report\n"
                           R"({"stage": "ready", "summary": "Fixed the typo; git diff shows one line.", "pr": {"title": "Fix the typo in README", "body": "teh -> the"}})"
                           "\n```";
  std::string followup_text = "Follow-up answered: nothing else to change.\n```superagent-report\n"
                              R"({"stage": "ready", "summary": "Follow-up answered with the earlier work in view."})"
                              "\n```";
};

class FakeResponsesModel {
 public:
  using json = nlohmann::json;

  FakeResponsesModel(FakeCliScript script, std::string model = "gpt-5.5", std::string key = "sk-codex-test-1234")
      : script_(std::move(script)), model_(std::move(model)), key_(std::move(key)) {
    server_.Post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
    auto wrong = [this](const httplib::Request& req, httplib::Response& res) {
      Problem("unexpected " + req.method + " " + req.path);
      res.status = 404;
      res.set_content(R"({"error":{"message":"not found"}})", "application/json");
    };
    server_.Get(".*", wrong);
    server_.Post(".*", wrong);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 5'000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ~FakeResponsesModel() {
    server_.stop();
    thread_.join();
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  const std::string& key() const { return key_; }
  const std::string& model() const { return model_; }
  std::vector<std::string> problems() const {
    std::lock_guard<std::mutex> lock(mu_);
    return problems_;
  }
  int requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // A follow-up request arrived carrying the earlier turn's tool outputs (the resumed history).
  bool followup_saw_history() const {
    std::lock_guard<std::mutex> lock(mu_);
    return followup_saw_history_;
  }
  bool offered_apply_patch() const {
    std::lock_guard<std::mutex> lock(mu_);
    return offered_apply_patch_;
  }

 private:
  void Problem(const std::string& p) {
    std::lock_guard<std::mutex> lock(mu_);
    problems_.push_back(p);
  }

  static std::string Sse(const json& ev) {
    return "event: " + ev.value("type", "") + "\ndata: " + ev.dump() + "\n\n";
  }

  // The text of an input message's content (a string or input_text parts).
  static std::string MessageText(const json& item) {
    const json& c = item.contains("content") ? item["content"] : json();
    if (c.is_string()) return c.get<std::string>();
    std::string s;
    if (c.is_array())
      for (const json& part : c)
        if (part.is_object() && part.contains("text") && part["text"].is_string()) s += part["text"].get<std::string>();
    return s;
  }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++requests_;
    }
    std::vector<std::string> p;
    if (req.get_header_value("Authorization") != "Bearer " + key_) p.push_back("wrong or missing bearer key");
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) {
      Problem("body is not a JSON object");
      res.status = 400;
      return;
    }
    if (body.value("model", "") != model_) p.push_back("model is \"" + body.value("model", "") + "\"");
    if (body.value("stream", false) != true) p.push_back("stream is not true");
    if (!body.contains("input") || !body["input"].is_array() || body["input"].empty()) p.push_back("no input items");
    bool apply_patch = false;
    if (body.contains("tools") && body["tools"].is_array())
      for (const json& t : body["tools"])
        if (t.is_object() && t.value("name", "") == "apply_patch") apply_patch = true;

    // Walk the history: calls and their outputs, and where the newest user message is.
    std::set<std::string> calls;
    int outputs_since_user = 0, outputs_total = 0;
    std::string newest_user;
    if (body.contains("input") && body["input"].is_array())
      for (const json& item : body["input"]) {
        if (!item.is_object()) {
          p.push_back("an input item is not an object");
          continue;
        }
        const std::string type = item.value("type", "message");
        if (type == "function_call" || type == "custom_tool_call") {
          if (!item.contains("call_id") || !item["call_id"].is_string()) p.push_back(type + " without call_id");
          else calls.insert(item["call_id"].get<std::string>());
        } else if (type == "function_call_output" || type == "custom_tool_call_output") {
          const std::string id = item.value("call_id", "");
          if (!calls.count(id)) p.push_back(type + " " + id + " answers no earlier call");
          ++outputs_since_user;
          ++outputs_total;
        } else if (type == "message" && item.value("role", "") == "user") {
          const std::string text = MessageText(item);
          if (text.find("<environment_context>") == std::string::npos) {
            newest_user = text;
            outputs_since_user = 0;
          }
        }
      }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const std::string& s : p) problems_.push_back(s);
      offered_apply_patch_ = offered_apply_patch_ || apply_patch;
    }
    if (!p.empty()) {
      res.status = 400;
      res.set_content(json{{"error", {{"message", p.front()}, {"type", "invalid_request_error"}}}}.dump(), "application/json");
      return;
    }
    if (script_.mode == FakeCliScript::Mode::kFail500) {
      res.status = 500;
      res.set_content(R"({"error":{"message":"The server had an error while processing your request.","type":"server_error"}})",
                      "application/json");
      return;
    }
    if (script_.mode == FakeCliScript::Mode::kFail401) {
      res.status = 401;
      res.set_content(R"({"error":{"message":"Incorrect API key provided: sk-wrong.","type":"invalid_request_error","code":"invalid_api_key"}})",
                      "application/json");
      return;
    }

    json out;
    const std::string n = std::to_string(outputs_total + 1);
    auto exec = [&](const std::string& cmd) {
      return json{{"type", "function_call"}, {"id", "fc_" + n}, {"call_id", "call_" + n}, {"name", "exec_command"},
                  {"arguments", json{{"cmd", cmd}}.dump()}, {"status", "completed"}};
    };
    std::vector<std::string> later = {"git diff --stat"};
    if (!script_.outside_command.empty()) later.insert(later.begin(), script_.outside_command);
    const bool followup = newest_user.find(script_.followup_marker) != std::string::npos;
    if (followup) {
      std::lock_guard<std::mutex> lock(mu_);
      followup_saw_history_ = followup_saw_history_ || outputs_total > 0;
    }
    if (followup && outputs_since_user == 0) {
      out = Message(script_.followup_text);
    } else if (outputs_since_user == 0) {
      out = exec("cat README.md");
    } else if (outputs_since_user == 1) {
      if (apply_patch)
        out = {{"type", "custom_tool_call"}, {"id", "ctc_" + n}, {"call_id", "call_" + n}, {"name", "apply_patch"},
               {"status", "completed"},
               {"input", "*** Begin Patch\n*** Update File: README.md\n@@\n-There is teh typo.\n+There is the typo.\n*** End Patch\n"}};
      else
        out = exec("sed -i 's/teh typo/the typo/' README.md");
    } else if (static_cast<std::size_t>(outputs_since_user - 2) < later.size()) {
      out = exec(later[outputs_since_user - 2]);
    } else {
      out = Message(script_.final_text);
    }
    const std::string rid = "resp_" + n;
    std::string sse = Sse({{"type", "response.created"}, {"response", {{"id", rid}, {"status", "in_progress"}, {"output", json::array()}}}});
    sse += Sse({{"type", "response.output_item.added"}, {"output_index", 0}, {"item", out}});
    if (out["type"] == "message")
      sse += Sse({{"type", "response.output_text.delta"}, {"output_index", 0}, {"item_id", out["id"]}, {"content_index", 0},
                  {"delta", out["content"][0]["text"]}});
    sse += Sse({{"type", "response.output_item.done"}, {"output_index", 0}, {"item", out}});
    sse += Sse({{"type", "response.completed"},
                {"response",
                 {{"id", rid}, {"status", "completed"}, {"output", json::array({out})},
                  {"usage", {{"input_tokens", 1000}, {"input_tokens_details", {{"cached_tokens", 200}}}, {"output_tokens", 50},
                             {"output_tokens_details", {{"reasoning_tokens", 0}}}, {"total_tokens", 1050}}}}}});
    res.set_content(sse, "text/event-stream");
  }

  json Message(const std::string& text) {
    return {{"type", "message"}, {"id", "msg_" + std::to_string(++messages_)}, {"role", "assistant"}, {"status", "completed"},
            {"content", json::array({{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
  }

  FakeCliScript script_;
  std::string model_, key_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  int messages_ = 0;
  mutable std::mutex mu_;
  std::vector<std::string> problems_;
  int requests_ = 0;
  bool followup_saw_history_ = false;
  bool offered_apply_patch_ = false;
};

}  // namespace superagent::testing
