// The OpenAI-compatible chat-completions client: wire format, retries with backoff, accounting.
#include <algorithm>
#include <chrono>
#include <ctime>  // strptime, timegm (POSIX): Retry-After as an HTTP date
#include <thread>

#include <spdlog/spdlog.h>

#include "superagent/clock.h"
#include "superagent/metrics.h"
#include "superagent/llm.h"
#include "superagent/text.h"

namespace superagent::llm {

using nlohmann::json;

namespace {

// The API key must never reach a log line or a Status (which ends up in Decisions and the
// panel), even if an error body echoes it back.
std::string Scrub(std::string text, const std::string& secret) {
  if (secret.size() < 4) return text;
  for (size_t pos = text.find(secret); pos != std::string::npos; pos = text.find(secret, pos)) text.replace(pos, secret.size(), "***");
  return text;
}

// What the API said went wrong: OpenAI and DeepSeek send {"error":{"message":...}}.
std::string ErrorText(const HttpResponse& r) {
  json j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
    if (e.is_string()) return e.get<std::string>();
  }
  // Not JSON: a proxy's page, in any encoding. It becomes part of a Status that is stored and shown.
  std::string body = text::Cut(r.body, 200);
  std::replace(body.begin(), body.end(), '\n', ' ');
  return body;
}

std::optional<std::int64_t> IntAt(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) return std::nullopt;
  return j[key].get<std::int64_t>();
}

json ToolCallToJson(const ToolCall& c) {
  return {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}

json MessageToJson(const Message& m) {
  json j = {{"role", m.role}};
  if (m.role == "assistant" && !m.tool_calls.empty()) {
    // OpenAI wants null, not "", for an assistant turn that only calls tools.
    j["content"] = m.content.empty() ? json(nullptr) : json(m.content);
    j["tool_calls"] = json::array();
    for (const ToolCall& c : m.tool_calls) j["tool_calls"].push_back(ToolCallToJson(c));
  } else {
    j["content"] = m.content;
  }
  if (m.role == "tool") j["tool_call_id"] = m.tool_call_id;
  return j;
}

}  // namespace

Sleeper RealSleeper() {
  return [](TimeMs ms) {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  };
}

void Usage::Add(const Usage& o) {
  if (model.empty()) model = o.model;
  if (purpose.empty()) purpose = o.purpose;
  calls += o.calls;
  http_attempts += o.http_attempts;
  prompt_tokens += o.prompt_tokens;
  completion_tokens += o.completion_tokens;
  total_tokens += o.total_tokens;
  auto add = [](std::optional<std::int64_t>& a, const std::optional<std::int64_t>& b) {
    if (b) a = a.value_or(0) + *b;
  };
  add(cache_hit_tokens, o.cache_hit_tokens);
  add(cache_miss_tokens, o.cache_miss_tokens);
  add(reasoning_tokens, o.reasoning_tokens);
  latency_ms += o.latency_ms;
}

json Usage::ToJson() const {
  json j = {{"purpose", purpose},
            {"model", model},
            {"calls", calls},
            {"http_attempts", http_attempts},
            {"prompt_tokens", prompt_tokens},
            {"completion_tokens", completion_tokens},
            {"total_tokens", total_tokens},
            {"latency_ms", latency_ms}};
  if (cache_hit_tokens) j["cache_hit_tokens"] = *cache_hit_tokens;
  if (cache_miss_tokens) j["cache_miss_tokens"] = *cache_miss_tokens;
  if (reasoning_tokens) j["reasoning_tokens"] = *reasoning_tokens;
  return j;
}

std::string ChatCompletionsUrl(const std::string& base_url) {
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  static const std::string kEndpoint = "/chat/completions";
  if (base.size() >= kEndpoint.size() && base.compare(base.size() - kEndpoint.size(), kEndpoint.size(), kEndpoint) == 0)
    return base;
  return base + kEndpoint;
}

json ChatRequestToJson(const ChatRequest& r) {
  json j = {{"model", r.model}, {"messages", json::array()}, {"stream", false}};
  for (const Message& m : r.messages) j["messages"].push_back(MessageToJson(m));
  if (!r.tools.empty()) {
    j["tools"] = json::array();
    for (const ToolSpec& t : r.tools)
      j["tools"].push_back(
          {{"type", "function"},
           {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
  }
  if (r.tool_choice == "none" || r.tool_choice == "auto" || r.tool_choice == "required") {
    j["tool_choice"] = r.tool_choice;
  } else if (!r.tool_choice.empty()) {
    j["tool_choice"] = {{"type", "function"}, {"function", {{"name", r.tool_choice}}}};
  }
  if (r.temperature) j["temperature"] = *r.temperature;
  if (r.max_tokens) j["max_tokens"] = *r.max_tokens;
  return j;
}

Result<ChatResponse> ParseChatResponse(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("response is not a JSON object");
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    return Status::InvalidArgument("response has no choices");
  const json& choice = j["choices"][0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
    return Status::InvalidArgument("choices[0] has no message");
  const json& msg = choice["message"];
  ChatResponse out;
  if (j.contains("id") && j["id"].is_string()) out.id = j["id"];
  if (msg.contains("content") && msg["content"].is_string()) out.content = msg["content"];
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) out.finish_reason = choice["finish_reason"];
  if (msg.contains("tool_calls") && msg["tool_calls"].is_array()) {
    for (const json& c : msg["tool_calls"]) {
      if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
        return Status::InvalidArgument("a tool call has no function");
      const json& f = c["function"];
      ToolCall call;
      if (c.contains("id") && c["id"].is_string()) call.id = c["id"];
      if (f.contains("name") && f["name"].is_string()) call.name = f["name"];
      // The standard sends arguments as a JSON string; a few compatible servers send the object.
      if (f.contains("arguments")) call.arguments = f["arguments"].is_string() ? f["arguments"].get<std::string>() : f["arguments"].dump();
      out.tool_calls.push_back(std::move(call));
    }
  }
  if (j.contains("model") && j["model"].is_string()) out.usage.model = j["model"];
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    out.usage.prompt_tokens = IntAt(u, "prompt_tokens").value_or(0);
    out.usage.completion_tokens = IntAt(u, "completion_tokens").value_or(0);
    out.usage.total_tokens = IntAt(u, "total_tokens").value_or(out.usage.prompt_tokens + out.usage.completion_tokens);
    // DeepSeek reports its disk cache at top level; OpenAI under prompt_tokens_details.
    out.usage.cache_hit_tokens = IntAt(u, "prompt_cache_hit_tokens");
    if (!out.usage.cache_hit_tokens && u.contains("prompt_tokens_details"))
      out.usage.cache_hit_tokens = IntAt(u["prompt_tokens_details"], "cached_tokens");
    out.usage.cache_miss_tokens = IntAt(u, "prompt_cache_miss_tokens");
    if (u.contains("completion_tokens_details"))
      out.usage.reasoning_tokens = IntAt(u["completion_tokens_details"], "reasoning_tokens");
  }
  out.usage.calls = 1;
  return out;
}

std::optional<TimeMs> RetryAfterMs(const HttpResponse& r, TimeMs now) {
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 12 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (std::string ms = r.Header("retry-after-ms"); digits(ms)) return std::stoll(ms);
  std::string v = r.Header("retry-after");
  if (v.empty()) return std::nullopt;
  if (digits(v)) return std::stoll(v) * 1000;
  // An HTTP date, e.g. "Wed, 21 Oct 2026 07:28:00 GMT".
  std::tm tm{};
  const char* end = strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  TimeMs at = static_cast<TimeMs>(timegm(&tm)) * 1000;
  return std::max<TimeMs>(0, at - now);
}

constexpr TimeMs kCancelCheckMs = 200;

OpenAiChatClient::OpenAiChatClient(ChatOptions options, HttpClient* http, Clock* clock, Sleeper sleeper)
    : options_(std::move(options)), http_(http), clock_(clock), sleeper_(std::move(sleeper)) {}

Result<ChatResponse> OpenAiChatClient::Complete(const ChatRequest& req) {
  const TimeMs started = clock_->NowMs();
  Usage usage;
  usage.purpose = req.purpose;
  usage.model = req.model;
  HttpRequest http;
  http.method = "POST";
  http.url = ChatCompletionsUrl(options_.base_url);
  http.headers = {{"Authorization", "Bearer " + options_.api_key},
                  {"Content-Type", "application/json"},
                  {"Accept", "application/json"}};
  // Message text comes from chats and may hold invalid UTF-8; replace it rather than throw.
  http.body = ChatRequestToJson(req).dump(-1, ' ', false, json::error_handler_t::replace);

  // Every failure leaves the same trace: one log line with what the call cost so far.
  auto fail = [&](Status s) -> Result<ChatResponse> {
    usage.latency_ms = clock_->NowMs() - started;
    spdlog::warn("llm call failed purpose={} model={} attempts={} error=\"{}\"", req.purpose, req.model,
                 usage.http_attempts, s.message());
    return s;
  };

  auto cancelled = [&] { return req.cancel != nullptr && req.cancel->load(); };
  for (int attempt = 0;; ++attempt) {
    if (cancelled()) return fail(Status::Unavailable("cancelled"));
    const TimeMs now = clock_->NowMs();
    long timeout = options_.timeout_ms;
    if (req.deadline_ms > 0) {
      if (now >= req.deadline_ms) return fail(Status::Unavailable("model call out of time before attempt " + std::to_string(attempt + 1)));
      timeout = std::min<long>(timeout, static_cast<long>(req.deadline_ms - now));
    }
    http.timeout_ms = timeout;
    http.connect_timeout_ms = std::min(options_.connect_timeout_ms, timeout);
    http.cancel = req.cancel;
    HttpResponse resp = http_->Send(http);
    ++usage.http_attempts;
    if (resp.cancelled) return fail(Status::Unavailable("cancelled"));

    if (resp.ok()) {
      auto parsed = ParseChatResponse(resp.body);
      if (!parsed.ok()) return fail(Status::Unavailable("unreadable chat completion: " + parsed.status().message()));
      ChatResponse out = std::move(*parsed);
      std::string answered_by = out.usage.model.empty() ? req.model : out.usage.model;
      int attempts = usage.http_attempts;
      out.usage.purpose = req.purpose;
      out.usage.model = answered_by;
      out.usage.http_attempts = attempts;
      out.usage.latency_ms = clock_->NowMs() - started;
      metrics::ProcessRuntime().AddModelUsage(req.purpose, out.usage.prompt_tokens, out.usage.completion_tokens,
                                              out.usage.cache_hit_tokens.value_or(0));
      spdlog::info("llm call purpose={} model={} attempts={} prompt_tokens={} completion_tokens={} cache_hit_tokens={} latency_ms={}",
                   req.purpose, answered_by, attempts, out.usage.prompt_tokens, out.usage.completion_tokens,
                   out.usage.cache_hit_tokens ? std::to_string(*out.usage.cache_hit_tokens) : "-", out.usage.latency_ms);
      return out;
    }

    std::string what;
    if (!resp.error.empty()) {
      // A timed-out request already used its whole time; repeating it here would only push the
      // Eval past its deadline. The Eval is requeued with its own (longer) backoff instead.
      if (resp.timed_out) return fail(Status::Unavailable("model API timed out after " + std::to_string(timeout) + " ms"));
      what = "connection failed: " + resp.error;
    } else if (resp.status == 429 || resp.status >= 500) {
      what = "HTTP " + std::to_string(resp.status) + ": " + Scrub(ErrorText(resp), options_.api_key);
    } else {
      // 400/401/403/404/422: the same request will be refused again.
      return fail(Status::InvalidArgument("model API refused the request: HTTP " + std::to_string(resp.status) + ": " +
                                          Scrub(ErrorText(resp), options_.api_key)));
    }
    if (attempt >= options_.max_retries)
      return fail(Status::Unavailable(what + " (after " + std::to_string(attempt + 1) +
                                      (attempt == 0 ? " attempt)" : " attempts)")));

    TimeMs wait = DoublingDelay(options_.backoff_initial_ms, attempt, options_.max_retry_wait_ms);
    if (auto asked = RetryAfterMs(resp, now)) {
      if (*asked > options_.max_retry_wait_ms)
        return fail(Status::Unavailable(what + " (server asks to retry after " + std::to_string(*asked / 1000) +
                                        " s, longer than llm.max_retry_wait_seconds)"));
      wait = *asked;
    }
    if (req.deadline_ms > 0 && clock_->NowMs() + wait >= req.deadline_ms)
      return fail(Status::Unavailable(what + " (no time left to retry)"));
    spdlog::warn("llm call retry purpose={} attempt={} wait_ms={} error=\"{}\"", req.purpose, attempt + 1, wait, what);
    if (req.cancel == nullptr) {
      sleeper_(wait);
    } else {
      // In steps, so a cancel is seen during a long Retry-After too.
      for (TimeMs waited = 0; waited < wait && !cancelled(); waited += kCancelCheckMs)
        sleeper_(std::min(kCancelCheckMs, wait - waited));
    }
  }
}

}  // namespace superagent::llm
