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
// Integration bundles them for the daemon.
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

// True for the token-error family (99991661/63/64/68/77): drop the token, re-mint once, retry.
bool IsTokenError(std::int64_t code);

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

// Whether `s` has the shape of a Feishu id (om_…, omt_…, oc_…): 1 to 128 ASCII letters, digits,
// '_' or '-'. Anything else from the wire is not used as an id (not looked up, not stored in a cursor).
bool IsPlatformId(const std::string& s);

// Percent-encodes a query parameter value.
std::string QueryValue(const std::string& value);

// ---------------------------------------------------------------------------------------------
// Normalization

struct NormalizeContext {
  std::string bot_open_id;  // the agent's open_id ("" until known: nothing counts as addressed)
  std::string app_id;       // history names the agent's own messages by app_id
};

struct Normalized {
  enum class Kind {
    kTrigger,      // `trigger` is set
    kSkip,         // not a message the Source takes (recalled, other event types)
    kUnsupported,  // a message type with no text form (image, file, card…): skipped and counted
    kMalformed,    // missing or wrongly typed fields: skipped and counted (SPEC §3.2)
  };
  Kind kind = Kind::kSkip;
  Trigger trigger;
  std::string why;  // for kSkip / kMalformed
};

// The `event` object of an im.message.receive_v1 envelope (v2 schema).
Normalized NormalizeEvent(const nlohmann::json& event, const NormalizeContext& ctx);
// One item of GET /open-apis/im/v1/messages. History items do not say p2p or group: `direct` is
// what the Source knows of the chat.
Normalized NormalizeHistoryItem(const nlohmann::json& item, const NormalizeContext& ctx, bool direct);
// A card.action.trigger envelope (v2 schema): a press on a question card's button (FeishuChannel
// sends the card) → the Trigger of that click. From the operator's open_id, on the Thread the
// button's value names (this chat or a topic in it) and the chat, its text the option's number —
// so intake reads it exactly like the asked person typing that number, and anyone else's click is
// an ordinary message. Id "feishu:card:<event_id>": a click delivered twice is one Trigger. A
// value that is missing or of the wrong type (option 1..9, ticket ≥ 1, receipt, thread) is
// kMalformed with a `why` naming the field. `direct` is what the Source knows of the chat.
Normalized NormalizeCardAction(const nlohmann::json& envelope, const NormalizeContext& ctx, bool direct);
// Plain text of a message's content (the JSON the `content` string holds) for text and post
// (rich text) messages; mention placeholders become "@Name". nullopt for other types.
std::optional<std::string> RenderContent(const std::string& msg_type, const nlohmann::json& content,
                                         const std::map<std::string, std::string>& mention_names);
// Trigger ids: "feishu:<message_id>", and "feishu:<message_id>@<update_time ms>" for an edited one.
std::string TriggerId(const std::string& message_id, TimeMs update_time, bool edited);
// Thread keys.
inline std::string ChatThread(const std::string& chat_id) { return "feishu:chat:" + chat_id; }
inline std::string TopicThread(const std::string& thread_id) { return "feishu:thread:" + thread_id; }

// ---------------------------------------------------------------------------------------------
// Callback crypto (HTTP callback mode)

// AES-256-CBC with key SHA-256(encrypt_key), IV = first 16 bytes of the base64-decoded input,
// PKCS#7 padding. InvalidArgument on bad base64, length or padding.
Result<std::string> Decrypt(const std::string& encrypt_key, const std::string& encrypted_base64);
// The inverse with a given 16-byte IV (tests and the fake server).
std::string Encrypt(const std::string& encrypt_key, const std::string& plaintext, const std::string& iv16);
// hex(SHA-256(timestamp + nonce + encrypt_key + raw_body)), the X-Lark-Signature.
std::string CallbackSignature(const std::string& timestamp, const std::string& nonce, const std::string& encrypt_key,
                              const std::string& raw_body);

struct CallbackRequest {
  std::string timestamp;  // X-Lark-Request-Timestamp (seconds)
  std::string nonce;      // X-Lark-Request-Nonce
  std::string signature;  // X-Lark-Signature
  std::string body;       // raw bytes as received
};

struct CallbackReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

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

struct RoundReport : IntakeCounts {
  int chats_read = 0, chats_failed = 0, threads_read = 0, threads_failed = 0;
  int threads_deferred = 0;  // due topic threads left for the next round (thread_reads_per_round)
  // Open Tickets' messages looked up for a topic opened on them since (issue 34): asked, failed
  // (the lookup, not the message: retried next round), left for the next round, topics found.
  int messages_checked = 0, messages_failed = 0, messages_deferred = 0, late_threads_found = 0;
};

class Source {
 public:
  // `engine` (what it receives), `views` (its cursors, the topics it follows), `client`, `clock`
  // must outlive the Source.
  Source(Engine* engine, Views* views, Client* client, Clock* clock, SourceOptions options);
  ~Source();

  // One round now: identity, backfill of every configured chat and known allowed direct chat
  // (each from its own cursor; one chat failing leaves the others advancing), then subscribed
  // topic threads (each with its own pollError). Its duration and outcome go to the process's
  // poll metrics (docs/007): failed when a path failed or the round threw (passed on).
  RoundReport RunOnce();
  // Runs rounds on a thread (first at once), every poll_interval_ms or sooner after RequestRound().
  // Stop() interrupts the wait and joins.
  void Start();
  void Stop();
  // Asks the running loop for a round now (e.g. after the long connection reconnected).
  void RequestRound();

  // Takes one realtime event envelope (v2 schema; plaintext). `via` is "realtime:ws" or
  // "realtime:callback". Returns the intake outcome name ("stored", "duplicate", "filtered"),
  // "skipped" for events or message types it does not take, or an error.
  Result<std::string> HandleEvent(const nlohmann::json& envelope, const std::string& via);
  // The HTTP callback: signature over the raw body and timestamp freshness first, then
  // decryption, verification token, the URL-verification challenge (the one unsigned request).
  // Every failed proof gets the same 401 and nothing is stored (counted; summarized by the next
  // round as "N refused deliveries"). Never calls Feishu: before the bot's identity is known
  // (none stored by an earlier run) an event is answered 503 at once and Feishu redelivers it.
  CallbackReply HandleCallback(const CallbackRequest& request);
  // A card.action.trigger envelope from either path (`via` as for HandleEvent): checked at once and
  // answered with the callback's body — {"toast": {"type": "success", "content": "Answer recorded"}},
  // or an error toast naming the refused field (nothing is stored). An accepted click is queued and
  // taken by the Engine on the card-action thread (DrainCardActions), so Feishu's 3-second answer
  // never waits for the Engine.
  nlohmann::json TakeCardAction(const nlohmann::json& envelope, const std::string& via);
  // Takes every queued click into the Engine (normalized with the bot's identity and whether the
  // chat is a direct one); returns how many were taken. When the Source's cursors cannot be read
  // none is taken: they stay queued for the next pass. The card-action loop's step; tests call it.
  int DrainCardActions();

  // Records the `realtime` path's health for the event channel itself (the long connection):
  // ok clears its consecutive failures and the system problem; 3 failures in a row raise one.
  void RecordRealtime(bool ok, const std::string& error = "");

  std::string BotOpenId() const;
  const SourceOptions& options() const { return options_; }

 private:
  struct Intake;
  // RunOnce without the metrics.
  RoundReport Round();
  bool EnsureIdentity(RoundReport* report);
  // The open_id the identity cursor holds, without the network; false when there is none.
  bool AdoptStoredIdentity();
  // HandleEvent; without `may_fetch_identity` an unknown identity is Unavailable at once.
  Result<std::string> TakeEvent(const nlohmann::json& envelope, const std::string& via, bool may_fetch_identity);
  // The callback's refusals since the last round, as one health record of path "callback".
  void ReportRefusedCallbacks();
  void Receive(const Normalized& n, const std::string& via, Intake* intake, RoundReport* report);
  std::string FilterReason(const Trigger& t) const;
  void Backfill(RoundReport* report);
  struct LateThreads;
  // Looks up the open Tickets' messages whose topic is not known (issue 34); a topic found is
  // followed from that message on (its cursor added to `cursors` and `u`) and marked to be read now.
  void FindLateThreads(std::map<std::string, std::string>* cursors, SourceUpdate* u, LateThreads* late,
                       RoundReport* report);
  void PollThreads(RoundReport* report);
  Status ReadThread(const std::string& thread_id, TimeMs since, bool direct, Intake* intake, RoundReport* report);
  void NoteChat(const Trigger& t);
  NormalizeContext Context() const;
  // Engine::UpdateSource for a round of reads through client_: a failure once the client's cancel
  // is set is marked `abandoned` (the stop's doing, not a failure of the path).
  Status Report(SourceUpdate u);

  Engine* engine_;
  Views* views_;
  Client* client_;
  Clock* clock_;
  SourceOptions options_;
  mutable std::mutex mu_;
  std::string bot_open_id_;
  bool identity_confirmed_ = false;  // bot_open_id_ came from Feishu this run
  std::atomic<std::int64_t> refused_since_report_{0};
  bool refusals_reported_ = false;   // the round thread's: the last summary was a failure
  std::mutex round_mu_;
  // The round's own (under round_mu_): the turn at which each open Ticket's message was last looked
  // up this run (a count, not a time: lookups of one round share a time), so a capped round takes
  // them in strict rotation; and those Feishu says are gone (never asked again).
  std::map<std::string, std::int64_t> looked_up_;
  std::int64_t lookup_turn_ = 0;
  std::set<std::string> gone_;
  std::mutex clicks_mu_;
  std::deque<std::pair<nlohmann::json, std::string>> clicks_;  // card actions waiting for the Engine, with via
  Periodic click_loop_;  // DrainCardActions, woken by each click
  Periodic poller_;  // RunOnce every poll_interval_ms; last member: it stops before the rest goes
};

// Installs `POST /hooks/feishu` answering with Source::HandleCallback.
void InstallCallbackRoute(httplib::Server& server, Source* source);

// ---------------------------------------------------------------------------------------------
// Long connection (WebSocket event channel)

struct WsClientConfig {  // seconds, as the server sends them
  int ping_interval_s = 120;
  int reconnect_count = -1;      // -1 = forever
  int reconnect_interval_s = 120;
  int reconnect_nonce_s = 30;    // first reconnect waits random [0, nonce)
};

// One protobuf Frame (package pbbp2), decoupled from the generated class.
struct WsFrame {
  std::uint64_t seq_id = 0, log_id = 0;
  std::int32_t service = 0, method = 0;  // method 0 = control, 1 = data
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<std::string> payload;
  std::string Header(const std::string& key) const;
};
std::string EncodeFrame(const WsFrame& frame);
// InvalidArgument when the bytes are not a Frame (required fields missing, bad wire format).
Result<WsFrame> DecodeFrame(const std::string& bytes);

// Reassembles split events (headers message_id / sum / seq); incomplete groups expire.
class FragmentBuffer {
 public:
  explicit FragmentBuffer(TimeMs ttl_ms = 10'000) : ttl_ms_(ttl_ms) {}
  // The whole payload once the frame completes its group; nullopt while parts are missing or the
  // headers are invalid (`*invalid` set then).
  std::optional<std::string> Add(const WsFrame& frame, TimeMs now, bool* invalid = nullptr);

 private:
  struct Group {
    std::vector<std::optional<std::string>> parts;
    TimeMs first_at = 0;
  };
  TimeMs ttl_ms_;
  std::map<std::string, Group> groups_;
};

struct LongConnectionStats {
  int connects = 0, events = 0, acks = 0, pings = 0, pongs = 0;
  int failures = 0;        // endpoint or dial attempts that did not open a connection
  int silent_drops = 0;    // connections the watchdog dropped for silence
};

struct LongConnectionOptions {
  unsigned seed = 0;       // reconnect jitter; 0 = random (tests pass one to reproduce it)
  // Time for the ping schedule, the silence watchdog and fragment expiry. nullptr = a monotonic
  // clock (not the wall clock: a clock step must not drop a live connection).
  Clock* clock = nullptr;
  TimeMs tick_ms = 1'000;  // how often a session looks at that clock to ping or drop
  // A connection on which nothing (no pong, no event, no frame at all) arrived for this many
  // PingIntervals is dead: dropped and redialled with a fresh endpoint. 3 lets two pongs go
  // missing before a healthy but slow connection is given up.
  int silence_pings = 3;
  WsClientConfig initial;  // the SDK's defaults, until an endpoint answer or a pong retunes it
};

class LongConnection {
 public:
  // `client` and `source` must outlive it (and `options.clock` when set).
  LongConnection(Client* client, Source* source, LongConnectionOptions options = {});
  ~LongConnection();
  // Connects in the background and keeps reconnecting per the server's ClientConfig; each
  // reconnect fetches a fresh endpoint and asks the Source for a backfill round. Every attempt
  // that fails (endpoint refused, dial or handshake failed) and every connection dropped for
  // silence is a failure of the Source's `realtime` health path; an opened connection is a
  // success and clears it.
  void Start();
  void Stop();
  LongConnectionStats Stats() const;
  bool Connected() const;
  WsClientConfig Config() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Channel

// The request uuid for a receipt id: the id itself when ≤ 50 characters, else a digest of it.
std::string RequestUuid(const std::string& install_id, const std::string& receipt_id);

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
  // (`http`; null: libcurl). InvalidArgument when the app id or secret is empty.
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
