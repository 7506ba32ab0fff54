// The model gateway (issue 33): how a coding CLI reaches its model without holding the key.
//
// A CLI in a Ticket's sandbox is given the gateway's loopback URL as its base URL and a per-turn
// pass as its "API key". The gateway checks the pass, checks the Ticket's budget, and forwards
// the call to the configured API with the real key, in the CLI's own wire format (Anthropic
// Messages, OpenAI Chat Completions, OpenAI Responses, Gemini), relaying a streamed answer as it
// comes. It reads the token usage from the answer and records it against the Ticket — the one
// count the budget trusts — and refuses calls once a limit is reached. A pass dies when its turn
// ends (Close) or when its lifetime runs out; a forged, closed or expired pass is refused like a
// wrong key. Only the model endpoints of the wire are forwarded, so the key cannot be spent on
// anything else the API offers (docs/011-security.md "The model key").
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "superagent/clock.h"
#include "superagent/domain.h"
#include "superagent/session.h"
#include "superagent/status.h"

namespace superagent {

class Engine;
class Views;
class HttpClient;

namespace exec {

enum class ModelWire {
  kAnthropicMessages,  // Claude Code: POST /v1/messages
  kOpenAiChat,         // Qwen Code: POST <base>/chat/completions
  kOpenAiResponses,    // Codex: POST <base>/responses
  kGemini,             // Gemini CLI: POST /v1beta/models/<model>:streamGenerateContent
};

// The wire `cli` (an execution.executor name) speaks; InvalidArgument for another name.
Result<ModelWire> ModelWireOf(const std::string& cli);
// "anthropic-messages" | "openai-chat" | "openai-responses" | "gemini": for logs and metrics.
const char* ModelWireName(ModelWire wire);
// The vendor's own API, for a CLI whose base_url is not configured.
std::string DefaultUpstream(ModelWire wire);

struct ModelGatewayOptions {
  ModelWire wire = ModelWire::kOpenAiChat;
  std::string upstream;  // the real API's base URL, as the CLI would be given it; "" = DefaultUpstream
  std::string api_key;   // the real key: sent only to `upstream`, never to a worker
  // Prices for the budget's cost_usd, per million tokens (execution.<cli>.usd_per_million_*).
  // Both 0: calls add no cost (the API reports none).
  double usd_per_million_input = 0;
  double usd_per_million_output = 0;
  // Non-empty: also accept on this unix socket, for sandboxes with no network of their own
  // (execution.network: off), where `superagent model-bridge` carries the CLI's connections to it.
  std::string socket_path;
  std::size_t max_request_bytes = 32u << 20;  // a larger request body is refused (413)
  long upstream_timeout_ms = 20 * 60 * 1000;  // one model call, streamed or not
};

// A turn's credentials for the gateway.
struct GatewayPass {
  std::string token;     // the CLI's "API key": 43 random URL-safe characters, "sa-pass-" first
  std::string base_url;  // the CLI's base URL: the gateway's loopback address (with /v1 for OpenAI wires)
};

// What the gateway has done, for tests, the bench and the metrics page.
struct GatewayCounts {
  std::int64_t forwarded = 0;        // calls sent to the upstream API
  std::int64_t refused_pass = 0;     // no pass, a forged, closed or expired one
  std::int64_t refused_budget = 0;   // the Ticket's budget was spent
  std::int64_t refused_path = 0;     // not a model endpoint of the wire
  std::int64_t upstream_failed = 0;  // the upstream could not be reached or the relay broke
};

class ModelGateway {
 public:
  // Listens on 127.0.0.1 (an ephemeral port). `http` sends to the upstream; `engine` keeps the
  // token usage, `views` answers the budgets; `clock` times the passes and is the budget check's
  // "now": the Engine's clock, which stamped the time the Ticket has been working. All must
  // outlive the gateway.
  static Result<std::unique_ptr<ModelGateway>> Start(ModelGatewayOptions options, HttpClient* http, Engine* engine,
                                                     Views* views, Clock* clock);
  virtual ~ModelGateway() = default;

  // A pass for one turn of `ticket` in `session`, valid for `lifetime_ms` or until Close.
  virtual GatewayPass Open(TicketId ticket, SessionId session, TimeMs lifetime_ms) = 0;
  // Ends the pass: later calls with it are refused, and calls in flight are abandoned. Returns
  // how many of its calls were refused because the budget was spent (the turn ended for that).
  virtual std::int64_t Close(const std::string& token) = 0;
  virtual ModelWire wire() const = 0;
  // ModelGatewayOptions::socket_path, or "" when it accepts on loopback TCP only.
  virtual std::string socket_path() const = 0;
  virtual int port() const = 0;
  virtual GatewayCounts counts() const = 0;
};

}  // namespace exec
}  // namespace superagent
