// A loopback Feishu long-connection server for tests: a real WebSocket server (websocketpp, the
// library the client uses) speaking the pbbp2 protobuf frame protocol — pongs carrying a
// ClientConfig, events split into fragments, acknowledgements recorded, forced disconnects,
// refused handshakes and a server that goes silent (stops answering pings).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "ws/ws_server.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"

namespace superagent::testing {

class FakeFeishuWs {
 public:
  static constexpr std::int32_t kService = 12345;

  FakeFeishuWs()
      : server_(WsServer::Handlers{
            [this](const std::string&) {
              std::lock_guard<std::mutex> lock(mu_);
              if (refuse_status != 0) ++refused;
              cv_.notify_all();
              return refuse_status;
            },
            [this](int conn, const std::string& resource) {
              std::lock_guard<std::mutex> lock(mu_);
              resources.push_back(resource);
              open_.insert(conn);
              ++connections;
              cv_.notify_all();
            },
            [this](int conn, const std::string& bytes) { OnMessage(conn, bytes); },
            [this](int conn) {
              std::lock_guard<std::mutex> lock(mu_);
              open_.erase(conn);
              cv_.notify_all();
            }}) {}

  // The endpoint answer a FakeFeishu serves at /callback/ws/endpoint.
  nlohmann::json EndpointAnswer(int ping_interval_s = 120) const {
    return {{"code", 0},
            {"msg", "ok"},
            {"data",
             {{"URL", "ws://127.0.0.1:" + std::to_string(server_.Port()) + "/ws?device_id=dev1&service_id=" + std::to_string(kService) +
                          "&ticket=t" + std::to_string(++tickets_)},
              {"ClientConfig",
               {{"PingInterval", ping_interval_s}, {"ReconnectCount", -1}, {"ReconnectInterval", 0}, {"ReconnectNonce", 0}}}}}};
  }

  // Sends `envelope` as one event split into `parts` fragments (sent last-first when `reverse`).
  // `type` "card" sends a card callback (card.action.trigger) the way Feishu does.
  void SendEvent(const nlohmann::json& envelope, int parts, bool reverse = false, const std::string& message_id = "m1",
                 const std::string& type = "event") {
    const std::string payload = envelope.dump();
    std::vector<superagent::feishu::WsFrame> frames;
    const std::size_t step = (payload.size() + parts - 1) / static_cast<std::size_t>(parts);
    for (int i = 0; i < parts; ++i) {
      superagent::feishu::WsFrame f;
      f.seq_id = 7;
      f.log_id = 99;
      f.service = kService;
      f.method = 1;
      f.headers = {{"type", type}, {"message_id", message_id}, {"sum", std::to_string(parts)},
                   {"seq", std::to_string(i)}, {"trace_id", "tr1"}};
      f.payload = payload.substr(static_cast<std::size_t>(i) * step, step);
      frames.push_back(f);
    }
    if (reverse) std::reverse(frames.begin(), frames.end());
    for (const auto& f : frames) SendRaw(superagent::feishu::EncodeFrame(f));
  }
  void SendRaw(const std::string& bytes) {
    std::set<int> conns;
    {
      std::lock_guard<std::mutex> lock(mu_);
      conns = open_;
    }
    for (int c : conns) server_.Send(c, bytes);
  }
  // Closes every open connection (a network drop, from the client's point of view).
  void Disconnect() { server_.CloseAll(); }

  // Waits (bounded) until `pred` holds; every server event re-checks it. Returns pred().
  template <typename P>
  bool WaitFor(P pred, int timeout_ms = 10'000) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return pred(); });
  }
  std::unique_lock<std::mutex> Lock() { return std::unique_lock<std::mutex>(mu_); }

  // --- observed (read under Lock or inside WaitFor) ---
  int connections = 0, pings = 0, refused = 0;
  std::vector<superagent::feishu::WsFrame> acks;
  std::vector<std::string> resources;
  nlohmann::json pong_config = {{"PingInterval", 120}, {"ReconnectCount", -1}, {"ReconnectInterval", 0}, {"ReconnectNonce", 0}};
  std::size_t open_count() const { return open_.size(); }

  // --- behaviour (set under Lock) ---
  int refuse_status = 0;      // non-zero: every handshake is refused with this HTTP status
  bool answer_pings = true;   // false: pings are counted but never answered (a silent server)

 private:
  void OnMessage(int conn, const std::string& bytes) {
    auto frame = superagent::feishu::DecodeFrame(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    if (!frame.ok()) {
      ADD_FAILURE() << "client sent a frame that is not pbbp2";
      return;
    }
    if (frame->method == 0 && frame->Header("type") == "ping") {
      EXPECT_EQ(frame->service, kService);
      ++pings;
      cv_.notify_all();
      if (!answer_pings) return;
      superagent::feishu::WsFrame pong;
      pong.service = kService;
      pong.method = 0;
      pong.headers = {{"type", "pong"}};
      pong.payload = pong_config.dump();
      server_.Send(conn, superagent::feishu::EncodeFrame(pong));
    } else if (frame->method == 1) {
      acks.push_back(*frame);
    }
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> open_;
  mutable int tickets_ = 0;
  WsServer server_;  // last: destroyed first, while the state above lives
};

}  // namespace superagent::testing
