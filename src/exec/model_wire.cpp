// The wires' endpoints, error bodies, names and vendors' URLs: what a new wire adds, kept apart
// from the gateway's passes, threads and relay, which every wire shares.
#include "exec/model_wire.h"

#include <regex>

namespace superagent::exec {

Result<ModelWire> ModelWireOf(const std::string& cli) {
  if (cli == "claude-code") return ModelWire::kAnthropicMessages;
  if (cli == "qwen-code") return ModelWire::kOpenAiChat;
  if (cli == "codex") return ModelWire::kOpenAiResponses;
  if (cli == "gemini-cli") return ModelWire::kGemini;
  return Status::InvalidArgument("no model wire for executor \"" + cli + "\"");
}

const char* ModelWireName(ModelWire wire) {
  switch (wire) {
    case ModelWire::kAnthropicMessages: return "anthropic-messages";
    case ModelWire::kOpenAiChat: return "openai-chat";
    case ModelWire::kOpenAiResponses: return "openai-responses";
    case ModelWire::kGemini: return "gemini";
  }
  return "?";
}

std::string DefaultUpstream(ModelWire wire) {
  switch (wire) {
    case ModelWire::kAnthropicMessages: return "https://api.anthropic.com";
    case ModelWire::kOpenAiChat:
    case ModelWire::kOpenAiResponses: return "https://api.openai.com/v1";
    case ModelWire::kGemini: return "https://generativelanguage.googleapis.com";
  }
  return "";
}

namespace model_wire {

std::string PathPrefix(ModelWire wire) {
  return wire == ModelWire::kOpenAiChat || wire == ModelWire::kOpenAiResponses ? "/v1" : "";
}

bool ModelEndpoint(ModelWire wire, const std::string& rest) {
  switch (wire) {
    case ModelWire::kAnthropicMessages: return rest == "/v1/messages" || rest == "/v1/messages/count_tokens";
    case ModelWire::kOpenAiChat: return rest == "/chat/completions";
    case ModelWire::kOpenAiResponses: return rest == "/responses";
    case ModelWire::kGemini: {
      static const std::regex kGemini(
          R"(/v1(beta|alpha)?/models/[A-Za-z0-9._-]{1,128}:(generateContent|streamGenerateContent|countTokens))");
      return std::regex_match(rest, kGemini);
    }
  }
  return false;
}

json ErrorBody(ModelWire wire, int status, const std::string& message) {
  switch (wire) {
    case ModelWire::kAnthropicMessages: {
      const char* type = status == 401 ? "authentication_error" : status == 403 ? "permission_error"
                         : status == 404 ? "not_found_error" : status == 413 ? "request_too_large" : "api_error";
      return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
    }
    case ModelWire::kOpenAiChat:
    case ModelWire::kOpenAiResponses: {
      const char* code = status == 401 ? "invalid_api_key" : status == 403 ? "budget_exhausted"
                         : status == 404 ? "not_found" : status == 413 ? "request_too_large" : "gateway_error";
      return {{"error", {{"message", message}, {"type", status < 500 ? "invalid_request_error" : "server_error"},
                         {"param", nullptr}, {"code", code}}}};
    }
    case ModelWire::kGemini: {
      const char* s = status == 401 ? "UNAUTHENTICATED" : status == 403 ? "PERMISSION_DENIED"
                      : status == 404 ? "NOT_FOUND" : status == 413 ? "INVALID_ARGUMENT" : "UNAVAILABLE";
      return {{"error", {{"code", status}, {"message", message}, {"status", s}}}};
    }
  }
  return json::object();
}

}  // namespace model_wire

}  // namespace superagent::exec
