// The Feishu Source's own declarations, for its files and tests (not for other modules): id and
// token checks, the callback's crypto, the Source, the long connection and its frames, the
// channel's request uuid. Normalization is in normalize.h; source_internal.h is the poller's.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/engine.h"
#include "superagent/feishu.h"
#include "superagent/periodic.h"
#include "superagent/status.h"
#include "superagent/trigger.h"
#include "sources/feishu/normalize.h"

namespace superagent::feishu {

// ---------------------------------------------------------------------------------------------
// Client

// True for the token-error family (99991661/63/64/68/77): drop the token, re-mint once, retry.
bool IsTokenError(std::int64_t code);

// Whether `s` has the shape of a Feishu id (om_…, omt_…, oc_…): 1 to 128 ASCII letters, digits,
// '_' or '-'. Anything else from the wire is not used as an id (not looked up, not stored in a cursor).
bool IsPlatformId(const std::string& s);

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

}  // namespace superagent::feishu
