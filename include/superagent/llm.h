// llm: a client for OpenAI-compatible chat-completions APIs (DeepSeek's by default), with
// tool/function calling, timeouts, retries and token accounting. It owns the wire format only;
// what the model is told belongs to prompts/, what its answer means to the caller.
//
// Time and sleeping are injected (Clock, Sleeper) so tests never really wait, and HTTP goes
// through the HttpClient seam so tests talk to a loopback server speaking the real format.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/http.h"
#include "superagent/status.h"

namespace superagent::llm {

// One call of a function the model asked for. `arguments` is the raw JSON text the model
// wrote: it is the caller's job to parse and validate it (the model may write anything).
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

// One chat message. Roles: "system", "user", "assistant", "tool".
struct Message {
  std::string role;
  std::string content;              // may be empty for an assistant message that only calls tools
  std::vector<ToolCall> tool_calls;  // assistant only
  std::string tool_call_id;          // tool only: which call this answers

  static Message System(std::string text) { return {"system", std::move(text), {}, ""}; }
  static Message User(std::string text) { return {"user", std::move(text), {}, ""}; }
  static Message Tool(std::string call_id, std::string text) { return {"tool", std::move(text), {}, std::move(call_id)}; }
};

// A function the model may call; `parameters` is a JSON Schema object.
struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters;
};

struct ChatRequest {
  std::string model;
  std::vector<Message> messages;
  std::vector<ToolSpec> tools;
  // "" leaves the choice to the API ("auto" when tools are given); "none" | "auto" | "required"
  // are sent as given; any other value forces a call of the function with that name.
  std::string tool_choice;
  std::optional<double> temperature;
  std::optional<int> max_tokens;
  // What the call is for ("assessment", "router", "worker"): copied into Usage for accounting.
  std::string purpose;
  // Absolute time (Clock) after which no attempt starts and no wait is begun; 0: none. Lets a
  // caller keep several calls inside one overall budget (e.g. the Eval's deadline).
  TimeMs deadline_ms = 0;
  // When it becomes true the call is abandoned — the HTTP request in flight too — and Complete
  // returns Unavailable("cancelled"). A worker's Stop must not wait for a slow model.
  const std::atomic<bool>* cancel = nullptr;
};

// Token accounting of one or more calls, as the API reported it.
struct Usage {
  std::string model;    // the model the API says answered
  std::string purpose;
  int calls = 0;        // completions that returned (HTTP 200 with a parsable body)
  int http_attempts = 0;  // requests sent, retries included
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::int64_t total_tokens = 0;
  // Prompt tokens served from the provider's cache: DeepSeek's prompt_cache_hit_tokens or
  // OpenAI's prompt_tokens_details.cached_tokens. Unset when the API does not report it.
  std::optional<std::int64_t> cache_hit_tokens;
  std::optional<std::int64_t> cache_miss_tokens;  // DeepSeek's prompt_cache_miss_tokens
  std::optional<std::int64_t> reasoning_tokens;   // completion_tokens_details.reasoning_tokens
  TimeMs latency_ms = 0;                          // wall time spent, waits included

  // Adds another call's numbers (optional counters stay unset only if both are unset).
  void Add(const Usage& other);
  // {"purpose","model","calls","http_attempts","prompt_tokens","completion_tokens",
  //  "total_tokens","latency_ms"} plus the optional counters when known.
  nlohmann::json ToJson() const;
};

struct ChatResponse {
  std::string id;
  std::string content;  // the assistant's text, "" when it only called tools
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;
  Usage usage;
};

struct ChatOptions {
  std::string base_url;  // e.g. https://api.deepseek.com or https://api.openai.com/v1
  std::string api_key;   // never logged, never put into a Status message
  long timeout_ms = 60'000;          // one HTTP request
  long connect_timeout_ms = 10'000;
  int max_retries = 3;               // extra attempts after a 429, a 5xx or a connection failure
  TimeMs backoff_initial_ms = 1'000;  // first wait, doubled for each further retry
  // Longest single wait. A Retry-After asking for more is not waited out: the call fails
  // (Unavailable) so the caller's own, longer backoff takes over instead of blocking a thread.
  TimeMs max_retry_wait_ms = 10'000;
};

// Waits `ms` milliseconds. Production sleeps; tests record the wait and return at once.
using Sleeper = std::function<void(TimeMs ms)>;
Sleeper RealSleeper();

class ChatClient {
 public:
  virtual ~ChatClient() = default;
  // One chat completion. Non-ok when no usable completion arrived: Unavailable for transient
  // failures (timeout, 429/5xx after retries, unreadable body), InvalidArgument when the API
  // refused the request itself (400, 401, 403, 404, 422).
  virtual Result<ChatResponse> Complete(const ChatRequest& request) = 0;
};

// The OpenAI-compatible implementation. `http` and `clock` are not owned and must outlive it.
class OpenAiChatClient : public ChatClient {
 public:
  OpenAiChatClient(ChatOptions options, HttpClient* http, Clock* clock, Sleeper sleeper);
  Result<ChatResponse> Complete(const ChatRequest& request) override;

 private:
  ChatOptions options_;
  HttpClient* http_;
  Clock* clock_;
  Sleeper sleeper_;
};

// "{base}/chat/completions", whether or not `base_url` ends in "/v1" or "/"; a base that already
// names the endpoint is used as is.
std::string ChatCompletionsUrl(const std::string& base_url);

// The request body as sent (exposed for tests and docs).
nlohmann::json ChatRequestToJson(const ChatRequest& request);

// Parses a 200 response body. InvalidArgument names what is missing.
Result<ChatResponse> ParseChatResponse(const std::string& body);

// How long a 429/503 asks to wait: "retry-after-ms" (OpenAI), else "retry-after" as seconds or
// an HTTP date. nullopt when absent or unreadable.
std::optional<TimeMs> RetryAfterMs(const HttpResponse& response, TimeMs now);


}  // namespace superagent::llm
