// What differs between the model wires, apart from the gateway that serves them all; the
// UsageReader whole, as the gateway holds one per call. Private to src/exec; see model_wire.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "superagent/json_read.h"
#include "superagent/model_gateway.h"
#include "superagent/text.h"

namespace superagent::exec::model_wire {

using nlohmann::json;

// The OpenAI wires' clients append their endpoint to a base that ends in /v1; the others append
// a path that starts with their API version.
std::string PathPrefix(ModelWire wire);

// The endpoints a wire's CLI calls (after the prefix); nothing else is forwarded.
bool ModelEndpoint(ModelWire wire, const std::string& rest);

// An error in the wire's own shape, so the CLI shows its message instead of a parse failure.
// 401 for a pass, 403 for the budget (clients retry neither), 404 for another endpoint.
json ErrorBody(ModelWire wire, int status, const std::string& message);

inline std::int64_t IntAt(const json& j, const char* key) {
  const json* v = json_read::Find(j, key);
  return v != nullptr && v->is_number() ? v->get<std::int64_t>() : 0;
}

inline const json* ObjectAt(const json& j, const char* key) {
  const json* v = json_read::Find(j, key);
  return v != nullptr && v->is_object() ? v : nullptr;
}

// One call's usage as the answer tells it. The APIs repeat running totals (a stream's last usage
// covers the whole call), so every figure keeps its largest value.
struct CallUsage {
  std::string model;
  std::int64_t input = 0;   // every prompt token, cached ones included
  std::int64_t output = 0;  // every generated token, reasoning included
  std::int64_t cached = 0;  // of `input`, read from the API's cache
  bool seen = false;        // some usage figure was in the answer

  void Take(std::int64_t in, std::int64_t out, std::int64_t cache) {
    input = std::max(input, in);
    output = std::max(output, out);
    cached = std::max(cached, cache);
    seen = true;
  }
};

// Reads the usage out of an answer as it streams by: server-sent events line by line, or a JSON
// body at the end. Memory stays bounded: a line or body past kMaxKept is not kept (its usage is
// then not read — the counts stay what earlier events said).
class UsageReader {
 public:
  static constexpr std::size_t kMaxKept = 16u << 20;
  explicit UsageReader(ModelWire wire) : wire_(wire) {}

  void Start(const std::string& content_type) { sse_ = text::AsciiLower(content_type).find("text/event-stream") == 0; }
  void Feed(const char* p, std::size_t n) {
    if (!sse_) {
      if (body_.size() + n <= kMaxKept) body_.append(p, n);
      else overflow_ = true;
      return;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (p[i] != '\n') {
        if (line_.size() < kMaxKept) line_ += p[i];
        continue;
      }
      Line();
    }
  }
  void Finish() {
    if (sse_) {
      Line();
    } else if (!overflow_) {
      json j = json::parse(body_, nullptr, false);
      if (j.is_array()) {  // Gemini's streamGenerateContent without alt=sse: an array of chunks
        for (const json& e : j) OnJson(e);
      } else {
        OnJson(j);
      }
    }
  }
  const CallUsage& usage() const { return usage_; }

 private:
  void Line() {
    std::string l = std::move(line_);
    line_.clear();
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (l.rfind("data:", 0) != 0) return;
    json j = json::parse(l.substr(5), nullptr, false);
    if (j.is_object()) OnJson(j);
  }

  void OnJson(const json& j) {
    if (!j.is_object()) return;
    switch (wire_) {
      case ModelWire::kAnthropicMessages: {
        // message_start carries the message (model, usage); message_delta the running output;
        // a whole (non-streamed) message carries both at the top.
        const json* message = ObjectAt(j, "message");
        const json& m = message != nullptr ? *message : j;
        if (std::string model = json_read::StringOr(m, "model"); !model.empty()) usage_.model = model;
        const json* u = ObjectAt(m, "usage");
        if (u == nullptr) u = ObjectAt(j, "usage");
        if (u == nullptr) return;
        const std::int64_t cache_read = IntAt(*u, "cache_read_input_tokens");
        usage_.Take(IntAt(*u, "input_tokens") + IntAt(*u, "cache_creation_input_tokens") + cache_read,
                    IntAt(*u, "output_tokens"), cache_read);
        return;
      }
      case ModelWire::kOpenAiChat: {
        if (std::string model = json_read::StringOr(j, "model"); !model.empty()) usage_.model = model;
        const json* u = ObjectAt(j, "usage");
        if (u == nullptr) return;
        const json* details = ObjectAt(*u, "prompt_tokens_details");
        usage_.Take(IntAt(*u, "prompt_tokens"), IntAt(*u, "completion_tokens"),
                    details != nullptr ? IntAt(*details, "cached_tokens") : 0);
        return;
      }
      case ModelWire::kOpenAiResponses: {
        // Streamed: response.completed (or .incomplete / .failed) carries the response with its
        // usage; not streamed: the response itself.
        const json* response = ObjectAt(j, "response");
        const json& r = response != nullptr ? *response : j;
        if (std::string model = json_read::StringOr(r, "model"); !model.empty()) usage_.model = model;
        const json* u = ObjectAt(r, "usage");
        if (u == nullptr) return;
        const json* details = ObjectAt(*u, "input_tokens_details");
        usage_.Take(IntAt(*u, "input_tokens"), IntAt(*u, "output_tokens"),
                    details != nullptr ? IntAt(*details, "cached_tokens") : 0);
        return;
      }
      case ModelWire::kGemini: {
        if (std::string model = json_read::StringOr(j, "modelVersion"); !model.empty()) usage_.model = model;
        const json* u = ObjectAt(j, "usageMetadata");
        if (u == nullptr) return;
        usage_.Take(IntAt(*u, "promptTokenCount"), IntAt(*u, "candidatesTokenCount") + IntAt(*u, "thoughtsTokenCount"),
                    IntAt(*u, "cachedContentTokenCount"));
        return;
      }
    }
  }

  ModelWire wire_;
  bool sse_ = false;
  bool overflow_ = false;
  std::string line_;
  std::string body_;
  CallUsage usage_;
};

}  // namespace superagent::exec::model_wire
