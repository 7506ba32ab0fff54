// A loopback Gemini REST API (POST /v1beta/models/{m}:streamGenerateContent?alt=sse,
// :generateContent, :countTokens) for driving the real Gemini CLI offline. The same stateless
// script as fake_responses_model.h (FakeCliScript), decided from the function responses already in
// the request since its newest user text: read_file README.md, replace the typo, optionally a
// command outside the allow-list, run_shell_command `git diff --stat`, a final text with the
// report block. Validated like the real API (x-goog-api-key or ?key=, the model in the path,
// roles, every functionResponse answers an earlier functionCall of the same id); problems are
// recorded and tests assert there are none.
#pragma once

#include <chrono>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "fake_responses_model.h"

namespace superagent::testing {

class FakeGeminiModel {
 public:
  using json = nlohmann::json;

  FakeGeminiModel(FakeCliScript script, std::string model = "gemini-2.5-pro", std::string key = "gk-gemini-test-5678")
      : script_(std::move(script)), model_(std::move(model)), key_(std::move(key)) {
    server_.Post(R"(/v1beta/models/([^/:]+):([A-Za-z]+))",
                 [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); });
    auto wrong = [this](const httplib::Request& req, httplib::Response& res) {
      Problem("unexpected " + req.method + " " + req.path);
      res.status = 404;
      res.set_content(R"({"error":{"code":404,"message":"not found","status":"NOT_FOUND"}})", "application/json");
    };
    server_.Get(".*", wrong);
    server_.Post(".*", wrong);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 5'000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ~FakeGeminiModel() {
    server_.stop();
    thread_.join();
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
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
  bool followup_saw_history() const {
    std::lock_guard<std::mutex> lock(mu_);
    return followup_saw_history_;
  }

 private:
  void Problem(const std::string& p) {
    std::lock_guard<std::mutex> lock(mu_);
    problems_.push_back(p);
  }

  static json Error(int code, const std::string& message, const std::string& status) {
    return {{"error", {{"code", code}, {"message", message}, {"status", status}}}};
  }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++requests_;
    }
    const std::string model = req.matches[1];
    const std::string method = req.matches[2];
    std::vector<std::string> p;
    const std::string key = req.has_header("x-goog-api-key") ? req.get_header_value("x-goog-api-key")
                                                              : req.get_param_value("key");
    if (key != key_) p.push_back("wrong or missing API key");
    if (model != model_) p.push_back("model in the path is \"" + model + "\"");
    if (method != "streamGenerateContent" && method != "generateContent" && method != "countTokens")
      p.push_back("unknown method " + method);
    if (method == "streamGenerateContent" && req.get_param_value("alt") != "sse") p.push_back("stream without alt=sse");
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) p.push_back("body is not a JSON object");
    const json contents = body.is_object() && body.contains("contents") ? body["contents"] : json();
    if (!contents.is_array() || contents.empty()) p.push_back("no contents");

    std::set<std::string> calls, answered;
    std::size_t answered_before_user = 0;
    std::string newest_user;
    if (contents.is_array())
      for (const json& c : contents) {
        const std::string role = c.is_object() ? c.value("role", "") : "";
        if (role != "user" && role != "model") p.push_back("a content has role \"" + role + "\"");
        if (!c.is_object() || !c.contains("parts") || !c["parts"].is_array()) {
          p.push_back("a content without parts");
          continue;
        }
        for (const json& part : c["parts"]) {
          if (!part.is_object()) continue;
          if (part.contains("functionCall")) {
            const json& f = part["functionCall"];
            if (role != "model") p.push_back("functionCall outside a model content");
            if (f.contains("id") && f["id"].is_string()) calls.insert(f["id"].get<std::string>());
          } else if (part.contains("functionResponse")) {
            const json& f = part["functionResponse"];
            const std::string id = f.is_object() ? f.value("id", "") : "";
            if (role != "user") p.push_back("functionResponse outside a user content");
            if (!calls.count(id)) p.push_back("functionResponse " + id + " answers no earlier functionCall");
            answered.insert(id);
          } else if (role == "user" && part.contains("text") && part["text"].is_string()) {
            const std::string text = part["text"].get<std::string>();
            if (text.find("<session_context>") == std::string::npos) {
              newest_user = text;
              answered_before_user = answered.size();
            }
          }
        }
      }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const std::string& s : p) problems_.push_back(s);
    }
    if (!p.empty()) {
      res.status = 400;
      res.set_content(Error(400, p.front(), "INVALID_ARGUMENT").dump(), "application/json");
      return;
    }
    if (method == "countTokens") {
      res.set_content(R"({"totalTokens": 1200})", "application/json");
      return;
    }
    if (script_.mode == FakeCliScript::Mode::kFail500) {
      res.status = 500;
      res.set_content(Error(500, "Internal error encountered.", "INTERNAL").dump(), "application/json");
      return;
    }
    if (script_.mode == FakeCliScript::Mode::kFail401) {
      res.status = 401;
      res.set_content(Error(401, "API key not valid. Please pass a valid API key.", "UNAUTHENTICATED").dump(),
                      "application/json");
      return;
    }

    bool tools = false;
    if (body.contains("tools") && body["tools"].is_array())
      for (const json& t : body["tools"]) tools = tools || (t.is_object() && t.contains("functionDeclarations"));
    const std::size_t step = answered.size() - answered_before_user;
    const std::string n = std::to_string(answered.size() + 1);
    auto call = [&](const std::string& name, json args) {
      return json{{"functionCall", {{"id", "call_" + n}, {"name", name}, {"args", std::move(args)}}}};
    };
    std::vector<std::string> later = {"git diff --stat"};
    if (!script_.outside_command.empty()) later.insert(later.begin(), script_.outside_command);
    const bool followup = newest_user.find(script_.followup_marker) != std::string::npos;
    if (followup) {
      std::lock_guard<std::mutex> lock(mu_);
      followup_saw_history_ = followup_saw_history_ || !answered.empty();
    }
    json part;
    if (!tools) part = {{"text", "ok"}};  // a side request (a check, a summary): plain text
    else if (followup && step == 0) part = {{"text", script_.followup_text}};
    else if (step == 0) part = call("read_file", {{"file_path", "README.md"}});
    else if (step == 1)
      part = call("replace", {{"file_path", "README.md"}, {"instruction", "Fix the typo."},
                              {"old_string", "There is teh typo."}, {"new_string", "There is the typo."}});
    else if (step - 2 < later.size())
      part = call("run_shell_command", {{"command", later[step - 2]}, {"description", "run it"}});
    else part = {{"text", script_.final_text}};
    json chunk = {{"candidates", json::array({{{"content", {{"role", "model"}, {"parts", json::array({part})}}},
                                               {"finishReason", "STOP"}, {"index", 0}}})},
                  {"usageMetadata", {{"promptTokenCount", 900}, {"candidatesTokenCount", 40}, {"totalTokenCount", 940}}},
                  {"modelVersion", model_}};
    if (method == "generateContent") res.set_content(chunk.dump(), "application/json");
    else res.set_content("data: " + chunk.dump() + "\r\n\r\n", "text/event-stream");
  }

  FakeCliScript script_;
  std::string model_, key_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<std::string> problems_;
  int requests_ = 0;
  bool followup_saw_history_ = false;
};

}  // namespace superagent::testing
