// Feishu/Lark: the Source that reads the team's chats (SPEC §3.4, §3.5) and the Channel that
// answers there (SPEC §8). Parts, each usable alone so tests drive them against a loopback Feishu:
//   Client        — Open Platform REST over the HttpClient seam: tenant token (cached, refreshed
//                   before expiry, re-minted on token errors), envelope {code,msg,data}, 429s.
//   normalize     — realtime event and history item → the identical Trigger.
//   crypto        — the HTTP callback's AES-256-CBC body and SHA-256 signature.
//   Source        — history backfill (per-chat cursors), subscribed-thread polling, and the
//                   realtime intake both event paths (long connection, HTTP callback) feed.
//   LongConnection— the WebSocket event channel the official SDKs use (protobuf frames).
//   FeishuChannel — the outbox's writer: replies and chat messages, the receipt id as `uuid`.
// Integration bundles them for the daemon. Only what other modules call is declared here; the
// rest is the Source's own, beside its code (src/sources/feishu/normalize.h, source.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/channel.h"
#include "superagent/chat.h"
#include "superagent/clock.h"
#include "superagent/engine.h"
#include "superagent/http.h"
#include "superagent/periodic.h"
#include "superagent/status.h"
#include "superagent/trigger.h"

namespace httplib { class Server; }

namespace superagent {
class Views;
}  // namespace superagent

namespace superagent::feishu {

// ---------------------------------------------------------------------------------------------
// Client

struct ClientOptions {
  std::string api_url = "https://open.feishu.cn";  // Lark: https://open.larksuite.com
  std::string app_id;                              // cli_…
  std::string app_secret;                          // never logged
  long timeout_ms = 15'000;
  TimeMs refresh_early_ms = 180'000;               // a token is renewed this long before it expires
  // When it becomes true, a request in flight is abandoned and no new one is sent (the Source's
  // client, at shutdown: a hanging Feishu must not hold `systemctl stop`). Must outlive the Client.
  const std::atomic<bool>* cancel = nullptr;
};

struct ApiResult {
  int http_status = 0;          // 0 = no HTTP answer
  std::int64_t code = -1;       // Feishu's envelope code; 0 = success
  std::string msg;
  nlohmann::json body;          // the whole parsed answer
  std::string error;            // empty on success; never contains a secret
  bool rate_limited = false;    // 429 / code 99991400
  TimeMs retry_after_ms = 0;    // from x-ogw-ratelimit-reset when rate limited
  bool ok() const { return error.empty(); }
  // body["data"], or an empty object.
  const nlohmann::json& Data() const;
};

class Client {
 public:
  // `http` and `clock` must outlive the Client. Thread-safe.
  Client(HttpClient* http, Clock* clock, ClientOptions options);

  // The cached tenant access token, minted when missing or within refresh_early_ms of expiry.
  Result<std::string> TenantToken();
  // One authorized call to `path` ("/open-apis/…", query included). `body` null → no body. A
  // token error re-mints the token once and repeats the call.
  ApiResult Call(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr);
  // GET /open-apis/bot/v3/info → the bot's open_id.
  Result<std::string> BotOpenId();
  // Every item of a message list: `container_type` "chat" or "thread"; `start_time_s` (chat only,
  // seconds) limits to messages created at or after it; ascending by creation time.
  Result<std::vector<nlohmann::json>> ListMessages(const std::string& container_type, const std::string& container_id,
                                                   std::optional<std::int64_t> start_time_s, int max_pages = 50);
  // GET /open-apis/im/v1/messages/<message_id> → the id of the topic (thread) the message roots or
  // sits in, "" when it has none. How a topic opened later on an old message is found: no listing
  // shows it (issue 34). NotFound when Feishu says the message is gone (404, code 230011 —
  // UNCONFIRMED); Unavailable for every other failure, a malformed answer included, whose message
  // names the field and never quotes its bytes. `message_id` must be an id (IsPlatformId).
  Result<std::string> MessageThread(const std::string& message_id);
  // POST /callback/ws/endpoint (app credentials, not the token): {URL, ClientConfig}.
  ApiResult WsEndpoint();

  const ClientOptions& options() const { return options_; }

 private:
  ApiResult Perform(const std::string& method, const std::string& path, const nlohmann::json& body,
                    const std::string& token);
  HttpClient* http_;
  Clock* clock_;
  ClientOptions options_;
  std::mutex mu_;
  std::string token_;
  TimeMs token_expires_at_ = 0;
};

// Percent-encodes a query parameter value.
std::string QueryValue(const std::string& value);

// ---------------------------------------------------------------------------------------------
// Source

struct SourceOptions {
  std::string encrypt_key;                 // callback: decrypt + signature; "" → callbacks refused (401)
  std::string verification_token;          // callback: header.token must equal it when set
  TimeMs poll_interval_ms = 60'000;        // backfill + thread polling rounds
  TimeMs overlap_ms = 5'000;               // next cursor = read start − overlap (SPEC §3.5)
  TimeMs follow_window_ms = 14LL * 24 * 3600 * 1000;  // topic threads polled 14 days after activity
  TimeMs callback_max_skew_ms = 300'000;   // callback timestamp freshness
  int max_pages = 50;                      // per listing
  // Topic threads read per round at most (feishu.thread_reads_per_round): the threads of open
  // Tickets first, then the followed ones due longest; the rest wait for the next round.
  int thread_reads_per_round = 20;
  // Open Tickets' Feishu messages (the request, and what the daemon posted for it) looked up per
  // round at most for a topic opened on them since (issue 34); the least lately looked up first.
  int message_checks_per_round = 20;
};

// Declared in sources/feishu/source.h (the Source's own); the Integration holds them.
class Source;
class LongConnection;

// Installs `POST /hooks/feishu` answering with Source::HandleCallback.
void InstallCallbackRoute(httplib::Server& server, Source* source);

// ---------------------------------------------------------------------------------------------
// Channel

// Delivers post_message Effects whose channel starts with "feishu:":
//   "feishu:chat:<chat_id>:reply:<message_id>"        — reply API (quoted reply in the chat);
//   "feishu:chat:<chat_id>:reply:<message_id>:thread" — reply API with reply_in_thread (topics);
//   "feishu:chat:<chat_id>"                           — plain chat message (direct chats).
// The receipt id is the request uuid (Feishu sends one message per uuid within an hour), so a
// retried delivery cannot post twice. Per-chat rate (5 per second) and 429 resets are honoured;
// bodies over 100 words are refused (SPEC §1).
class FeishuChannel : public Channel {
 public:
  // `install_id` (Views::InstallId) goes into every request uuid; "" keeps the receipt id alone.
  FeishuChannel(Client* client, Clock* clock, std::size_t word_limit = kChatWordLimit, int chat_qps = 5,
                std::string install_id = "");
  bool Handles(const std::string& channel) const override;
  Delivery Perform(const Effect& effect, bool outcome_unknown) override;

 private:
  Client* client_;
  Clock* clock_;
  std::size_t word_limit_;
  int chat_qps_;
  std::string install_id_;
  std::mutex mu_;
  std::map<std::string, std::deque<TimeMs>> sent_;  // per target: recent send times
};

// ---------------------------------------------------------------------------------------------
// Integration

// What the Integration is built from, secrets already resolved (app/wiring.h).
struct IntegrationOptions {
  ClientOptions client;  // api_url, app_id and app_secret (both required); Create sets the reader's cancel
  SourceOptions source;  // the callback's encrypt key and verification token, polling
  bool long_connection = true;  // realtime events over a WebSocket the daemon opens; false: callbacks
};

class Integration {
 public:
  // The Source, the Channel and (with long_connection) the WebSocket, over one HttpClient
  // (`http`; null: a new one). InvalidArgument when the app id or secret is empty.
  static Result<std::unique_ptr<Integration>> Create(IntegrationOptions options, Engine* engine, Views* views,
                                                     Clock* clock,
                                                     std::unique_ptr<HttpClient> http = nullptr);
  ~Integration();

  Source& source() { return *source_; }
  Channel* channel() { return channel_.get(); }
  void InstallCallbackRoute(httplib::Server& server) { feishu::InstallCallbackRoute(server, source_.get()); }
  void Start();
  // Stops the long connection and the poller; their requests in flight are abandoned. The
  // Channel's sends are not: the Effects loop stops after this and finishes what it is sending.
  void Stop();

 private:
  Integration() = default;
  std::unique_ptr<HttpClient> http_;
  std::atomic<bool> stopping_{false};  // the read client's cancel: set by Stop()
  // Two clients (each keeps its own tenant token), so that a stop can cancel the reads alone.
  std::unique_ptr<Client> read_client_, write_client_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<FeishuChannel> channel_;
  std::unique_ptr<LongConnection> ws_;
};

}  // namespace superagent::feishu
