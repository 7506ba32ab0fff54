// The long connection: the WebSocket event channel the official SDKs use, so the daemon needs no
// public URL. Per connect: POST /callback/ws/endpoint (a fresh, short-lived URL each time), dial
// it with websocketpp, ping every PingInterval s (pongs may retune the ClientConfig), reassemble
// split events, hand each to the Source and acknowledge it on the same frame. After every
// connect the Source is asked for a backfill round, which picks up what was said while the
// connection was down. The WebSocket itself is websocketpp behind wsio (ws_transport.h).
//
// Liveness: a half-open TCP connection (a NAT that forgot us, a server that hung) looks open
// forever, so a session drops itself when nothing at all has arrived for silence_pings ×
// PingInterval (3 × 120 s by default) and the loop dials a fresh endpoint. Pings and that check
// run on one timer that looks at the injected clock every tick_ms, so tests move time by hand.
// Attempts that fail and silent drops are failures of the Source's `realtime` health path; an
// opened connection is its success.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "sources/feishu/ws_transport.h"
#include "superagent/digest.h"
#include "superagent/catch_all.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"
#include "superagent/json_read.h"

namespace superagent::feishu {

using nlohmann::json;

namespace {

TimeMs SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string QueryParam(const std::string& url, const std::string& name) {
  auto q = url.find('?');
  if (q == std::string::npos) return "";
  std::string query = url.substr(q + 1);
  std::size_t start = 0;
  while (start <= query.size()) {
    auto end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    std::string kv = query.substr(start, end - start);
    auto eq = kv.find('=');
    if (eq != std::string::npos && kv.substr(0, eq) == name) return kv.substr(eq + 1);
    start = end + 1;
  }
  return "";
}

void ApplyConfig(const json& j, WsClientConfig* cfg) {
  if (!j.is_object()) return;
  // The server's numbers are bounded before use: a day at most, so no product of them overflows.
  constexpr std::int64_t kDay = 86'400;
  auto take = [&](const char* key, int* out, std::int64_t lo, std::int64_t hi) {
    *out = static_cast<int>(std::clamp(json_read::IntOr(j, key, *out), lo, hi));
  };
  take("PingInterval", &cfg->ping_interval_s, 1, kDay);
  take("ReconnectCount", &cfg->reconnect_count, -1, 1'000'000);
  take("ReconnectInterval", &cfg->reconnect_interval_s, 0, kDay);
  take("ReconnectNonce", &cfg->reconnect_nonce_s, 0, kDay);
}


}  // namespace

// Monotonic milliseconds: the default clock of the watchdog and ping schedule.
class SteadyClock : public Clock {
 public:
  TimeMs NowMs() const override { return SteadyMs(); }
};

struct LongConnection::Impl {
  Client* client;
  Source* source;
  LongConnectionOptions options;
  SteadyClock steady;
  Clock* clock = nullptr;
  std::mt19937 rng;
  std::thread thread;
  std::atomic<bool> stopping{false};
  mutable std::mutex mu;
  std::condition_variable cv;
  WsClientConfig cfg;
  LongConnectionStats stats;
  bool connected = false;

  bool Wait(TimeMs ms) {
    std::unique_lock<std::mutex> lock(mu);
    return !cv.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping.load(); });
  }

  wsio::ClientSession* current = nullptr;  // the running session, for Stop()

  struct SessionEnd {
    bool opened = false;     // the handshake completed
    std::string failure;     // why it never opened
    TimeMs silent_ms = 0;    // > 0: dropped by the watchdog after this long without a frame
  };

  // One connection, from dial to close. Handlers and the tick run on the session's thread.
  SessionEnd Session(const std::string& url, std::int32_t service) {
    SessionEnd end;
    wsio::ClientSession ws;
    FragmentBuffer fragments;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return end;
      current = &ws;
    }
    auto send = [&](const WsFrame& f) { ws.Send(EncodeFrame(f)); };
    TimeMs last_heard = 0;  // when the last frame of any kind arrived
    TimeMs next_ping = 0;
    std::function<void()> tick = [&] {
      const TimeMs now = clock->NowMs();
      int interval_s = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        interval_s = cfg.ping_interval_s;
      }
      const TimeMs silence_bound = static_cast<TimeMs>(options.silence_pings) * interval_s * 1000;
      if (now - last_heard >= silence_bound) {
        end.silent_ms = now - last_heard;
        spdlog::warn("feishu long connection silent for {} s ({} x PingInterval {} s); dropping it", end.silent_ms / 1000,
                     options.silence_pings, interval_s);
        ws.Stop();
        return;
      }
      if (now >= next_ping) {
        WsFrame f;
        f.service = service;
        f.method = 0;
        f.headers = {{"type", "ping"}};
        send(f);
        next_ping = now + static_cast<TimeMs>(interval_s) * 1000;
        std::lock_guard<std::mutex> lock(mu);
        ++stats.pings;
      }
      ws.After(static_cast<long>(options.tick_ms), tick);
    };
    wsio::ClientHandlers h;
    h.on_open = [&] {
      end.opened = true;
      {
        std::lock_guard<std::mutex> lock(mu);
        connected = true;
        ++stats.connects;
      }
      spdlog::info("feishu long connection open service={}", service);
      source->RecordRealtime(true);
      source->RequestRound();  // catch up on whatever was said while we were not connected
      last_heard = clock->NowMs();
      next_ping = last_heard;  // the first ping goes out at once
      tick();
    };
    h.on_message = [&](const std::string& bytes) {
      last_heard = clock->NowMs();  // any frame proves the connection alive
      auto frame = DecodeFrame(bytes);
      if (!frame.ok()) {
        spdlog::warn("feishu ws frame dropped: {}", frame.status().message());
        return;
      }
      const std::string type = frame->Header("type");
      if (frame->method == 0) {
        if (type == "pong" && frame->payload) {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.pongs;
          ApplyConfig(json::parse(*frame->payload, nullptr, false), &cfg);
        }
        return;
      }
      if (type != "event" && type != "card") return;
      bool invalid = false;
      auto whole = fragments.Add(*frame, clock->NowMs(), &invalid);
      if (invalid) spdlog::warn("feishu ws fragment with invalid sum/seq dropped");
      if (!whole) return;
      const TimeMs started = SteadyMs();
      if (type == "card") {
        // A card action is a callback: the ack carries its answer (the toast) as base64 JSON in
        // `data`. The click itself is queued for the Engine, so the ack goes out at once.
        json answer;
        if (Status thrown = CatchAll("a feishu card action", [&] {
              answer = source->TakeCardAction(json::parse(*whole, nullptr, false), "realtime:ws");
            });
            !thrown.ok())
          spdlog::error("feishu ws card action failed unexpectedly: {}", thrown.message());
        WsFrame ack = *frame;
        ack.headers.emplace_back("biz_rt", std::to_string(SteadyMs() - started));
        ack.payload = answer.is_object() ? json{{"code", 200}, {"data", Base64(answer.dump())}}.dump()
                                         : json{{"code", 500}}.dump();
        send(ack);
        std::lock_guard<std::mutex> lock(mu);
        ++stats.events;
        ++stats.acks;
        return;
      }
      Result<std::string> outcome = Status::Internal("not handled");
      // An event that makes the handler throw is answered 500 (Feishu sends it again) and recorded.
      if (Status thrown = CatchAll("a feishu event", [&] {
            outcome = source->HandleEvent(json::parse(*whole, nullptr, false), "realtime:ws");
          });
          !thrown.ok()) {
        spdlog::error("feishu ws event failed unexpectedly: {}", thrown.message());
        source->RecordRealtime(false, thrown.message());
        outcome = thrown;
      }
      WsFrame ack = *frame;
      ack.headers.emplace_back("biz_rt", std::to_string(SteadyMs() - started));
      ack.payload = json{{"code", outcome.ok() ? 200 : 500}}.dump();
      send(ack);
      std::lock_guard<std::mutex> lock(mu);
      ++stats.events;
      ++stats.acks;
    };
    end.failure = ws.Run(url, h);
    std::lock_guard<std::mutex> lock(mu);
    current = nullptr;
    connected = false;
    if (!end.opened) ++stats.failures;
    if (end.silent_ms > 0) ++stats.silent_drops;
    return end;
  }

  // True when ReconnectCount (≥ 0) attempts have failed in a row.
  bool GiveUp(const WsClientConfig& c, int failures) {
    if (c.reconnect_count < 0 || failures <= c.reconnect_count) return false;
    spdlog::error("feishu long connection gave up after {} attempts; backfill continues", failures);
    return true;
  }

  void Run() {
    int failures = 0;  // attempts in a row that opened nothing
    bool first = true;
    while (!stopping) {
      WsClientConfig now_cfg;
      {
        std::lock_guard<std::mutex> lock(mu);
        now_cfg = cfg;
      }
      if (!first) {
        // Jitter before reconnecting, so many clients do not come back at the same instant.
        const int nonce = now_cfg.reconnect_nonce_s;
        const TimeMs jitter = nonce > 0 ? std::uniform_int_distribution<TimeMs>(0, nonce * 1000 - 1)(rng) : 0;
        if (!Wait(jitter)) break;
      }
      first = false;
      ApiResult ep = client->WsEndpoint();
      const json& data = ep.Data();
      const std::string url = json_read::StringOr(data, "URL");
      if (!ep.ok() || url.empty()) {
        ++failures;
        {
          std::lock_guard<std::mutex> lock(mu);
          ++stats.failures;
        }
        const std::string why = ep.ok() ? "answer has no URL" : ep.error;
        spdlog::warn("feishu long connection endpoint failed code={} error=\"{}\"", ep.code, why);
        source->RecordRealtime(false, "long connection endpoint: " + why);
        if (GiveUp(now_cfg, failures)) break;
        if (!Wait(static_cast<TimeMs>(now_cfg.reconnect_interval_s) * 1000)) break;
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        const json* client_config = json_read::Find(data, "ClientConfig");
        ApplyConfig(client_config != nullptr ? *client_config : json(), &cfg);
      }
      std::int32_t service = 0;
      try {
        service = static_cast<std::int32_t>(std::stol(QueryParam(url, "service_id")));
      } catch (...) {
      }
      const SessionEnd end = Session(url, service);
      if (stopping) break;
      if (!end.opened) {
        ++failures;
        // The URL is not logged: it carries the connection's ticket.
        spdlog::warn("feishu long connection failed error=\"{}\"", end.failure);
        source->RecordRealtime(false, "long connection: " + end.failure);
      } else {
        failures = 0;
        if (end.silent_ms > 0)
          source->RecordRealtime(false, "long connection silent for " + std::to_string(end.silent_ms / 1000) +
                                            " s (no pong or event); reconnecting");
        spdlog::warn("feishu long connection closed; reconnecting");
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        now_cfg = cfg;  // a pong may have retuned the reconnect settings
      }
      if (GiveUp(now_cfg, failures)) break;
      if (failures > 0 && !Wait(static_cast<TimeMs>(now_cfg.reconnect_interval_s) * 1000)) break;
    }
  }

  LongConnectionStats Stats() const {
    std::lock_guard<std::mutex> lock(mu);
    return stats;
  }
};

LongConnection::LongConnection(Client* client, Source* source, LongConnectionOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->client = client;
  impl_->source = source;
  if (options.tick_ms < 1) options.tick_ms = 1;
  if (options.silence_pings < 1) options.silence_pings = 1;
  impl_->options = options;
  impl_->clock = options.clock ? options.clock : &impl_->steady;
  impl_->cfg = options.initial;
  impl_->rng.seed(options.seed != 0 ? options.seed : std::random_device{}());
}

LongConnection::~LongConnection() { Stop(); }

void LongConnection::Start() {
  if (impl_->thread.joinable()) return;
  impl_->stopping = false;
  impl_->thread = std::thread([this] {
    // Run returns only when stopping; one that throws is logged, recorded, and started again.
    while (true) {
      Status s = CatchAll("the feishu long connection", [this] { impl_->Run(); });
      if (s.ok() || impl_->stopping) return;
      spdlog::error("feishu long connection failed unexpectedly, reconnecting in 5 s: {}", s.message());
      CatchAll("recording it", [&] { impl_->source->RecordRealtime(false, s.message()); });
      if (!impl_->Wait(5'000)) return;
    }
  });
}

void LongConnection::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    if (impl_->current) impl_->current->Stop();
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

LongConnectionStats LongConnection::Stats() const { return impl_->Stats(); }

bool LongConnection::Connected() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->connected;
}

WsClientConfig LongConnection::Config() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->cfg;
}

}  // namespace superagent::feishu
