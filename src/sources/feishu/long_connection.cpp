// The long connection: the WebSocket event channel the official SDKs use, so the daemon needs no
// public URL. Per connect: POST /callback/ws/endpoint (a fresh, short-lived URL each time), dial
// it with websocketpp, ping every PingInterval s (pongs may retune the ClientConfig), reassemble
// split events, hand each to the Source and acknowledge it on the same frame. After every
// connect the Source is asked for a backfill round, which picks up what was said while the
// connection was down. The WebSocket itself is websocketpp behind wsio (ws_transport.h).
#include <spdlog/spdlog.h>

#include <chrono>
#include <random>

#include "sources/feishu/ws_transport.h"
#include "superagent/feishu.h"

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
  auto take = [&](const char* key, int* out) {
    if (j.contains(key) && j[key].is_number_integer()) *out = j[key].get<int>();
  };
  take("PingInterval", &cfg->ping_interval_s);
  take("ReconnectCount", &cfg->reconnect_count);
  take("ReconnectInterval", &cfg->reconnect_interval_s);
  take("ReconnectNonce", &cfg->reconnect_nonce_s);
  if (cfg->ping_interval_s < 1) cfg->ping_interval_s = 1;
  if (cfg->reconnect_interval_s < 0) cfg->reconnect_interval_s = 0;
  if (cfg->reconnect_nonce_s < 0) cfg->reconnect_nonce_s = 0;
}

}  // namespace

struct LongConnection::Impl {
  Client* client;
  Source* source;
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

  // One connection, from dial to close. Handlers run on the session's thread.
  void Session(const std::string& url, std::int32_t service) {
    wsio::ClientSession ws;
    FragmentBuffer fragments;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;
      current = &ws;
    }
    auto send = [&](const WsFrame& f) { ws.Send(EncodeFrame(f)); };
    std::function<void()> ping = [&] {
      WsFrame f;
      f.service = service;
      f.method = 0;
      f.headers = {{"type", "ping"}};
      send(f);
      int interval = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        ++stats.pings;
        interval = cfg.ping_interval_s;
      }
      ws.After(static_cast<long>(interval) * 1000, ping);
    };
    wsio::ClientHandlers h;
    h.on_open = [&] {
      {
        std::lock_guard<std::mutex> lock(mu);
        connected = true;
        ++stats.connects;
      }
      spdlog::info("feishu long connection open service={}", service);
      source->RequestRound();  // catch up on whatever was said while we were not connected
      ping();
    };
    h.on_message = [&](const std::string& bytes) {
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
      if (type != "event") return;  // cards and others are not subscribed to
      bool invalid = false;
      auto whole = fragments.Add(*frame, SteadyMs(), &invalid);
      if (invalid) spdlog::warn("feishu ws fragment with invalid sum/seq dropped");
      if (!whole) return;
      const TimeMs started = SteadyMs();
      auto outcome = source->HandleEvent(json::parse(*whole, nullptr, false), "realtime:ws");
      WsFrame ack = *frame;
      ack.headers.emplace_back("biz_rt", std::to_string(SteadyMs() - started));
      ack.payload = json{{"code", outcome.ok() ? 200 : 500}}.dump();
      send(ack);
      std::lock_guard<std::mutex> lock(mu);
      ++stats.events;
      ++stats.acks;
    };
    const std::string failure = ws.Run(url, h);
    if (!failure.empty()) spdlog::warn("feishu long connection failed error=\"{}\"", failure);
    std::lock_guard<std::mutex> lock(mu);
    current = nullptr;
    connected = false;
  }

  void Run() {
    int failures = 0;
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
      const std::string url = data.value("URL", "");
      if (!ep.ok() || url.empty()) {
        ++failures;
        spdlog::warn("feishu long connection endpoint failed code={} error=\"{}\"", ep.code,
                     ep.ok() ? "answer has no URL" : ep.error);
        if (now_cfg.reconnect_count >= 0 && failures > now_cfg.reconnect_count) {
          spdlog::error("feishu long connection gave up after {} attempts; backfill continues", failures);
          break;
        }
        if (!Wait(static_cast<TimeMs>(now_cfg.reconnect_interval_s) * 1000)) break;
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        ApplyConfig(data.contains("ClientConfig") ? data["ClientConfig"] : json(), &cfg);
      }
      std::int32_t service = 0;
      try {
        service = static_cast<std::int32_t>(std::stol(QueryParam(url, "service_id")));
      } catch (...) {
      }
      const TimeMs opened_before = Stats().connects;
      Session(url, service);
      if (Stats().connects > opened_before) failures = 0;
      else ++failures;
      if (stopping) break;
      spdlog::warn("feishu long connection closed; reconnecting");
      if (now_cfg.reconnect_count >= 0 && failures > now_cfg.reconnect_count) {
        spdlog::error("feishu long connection gave up after {} attempts; backfill continues", failures);
        break;
      }
      if (failures > 0 && !Wait(static_cast<TimeMs>(now_cfg.reconnect_interval_s) * 1000)) break;
    }
  }

  LongConnectionStats Stats() const {
    std::lock_guard<std::mutex> lock(mu);
    return stats;
  }
};

LongConnection::LongConnection(Client* client, Source* source, unsigned seed) : impl_(std::make_unique<Impl>()) {
  impl_->client = client;
  impl_->source = source;
  impl_->rng.seed(seed != 0 ? seed : std::random_device{}());
}

LongConnection::~LongConnection() { Stop(); }

void LongConnection::Start() {
  if (impl_->thread.joinable()) return;
  impl_->stopping = false;
  impl_->thread = std::thread([this] { impl_->Run(); });
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
