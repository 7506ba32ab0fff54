// The panel's live updates: a Server-Sent Events stream per open page, saying when the data
// changed. Its own file because its threads, waits and lifetimes are a concern of their own.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "panel/panel_internal.h"
#include "superagent/catch_all.h"
#include "superagent/views.h"

namespace superagent::panel {

using nlohmann::json;
using httplib::Request;
using httplib::Response;

namespace {

constexpr int kMaxStreams = 8;           // each stream holds one of httplib's worker threads
// A comment line now and then: proxies keep the stream open, and a closed tab is noticed (its
// second write fails) within a few seconds, which frees its thread.
constexpr int kKeepaliveMs = 2'000;
constexpr int kStreamLifetimeMs = 30 * 60'000;  // then the browser reconnects (EventSource does)

}  // namespace

struct Panel::Impl::StreamState {
  std::int64_t version = -1;
  // The remote workers' pool (PoolState): it lives in memory, not in the store, so the store's
  // version does not see a worker join, leave or take a turn.
  std::string pool;
  bool hello = false;
  std::chrono::steady_clock::time_point started, last_write;
};

void Panel::Impl::Stream(const Request& req, Response& res) {
  if (streams.fetch_add(1) >= kMaxStreams) {
    streams.fetch_sub(1);
    res.set_header("Retry-After", "30");
    return SendError(res, 503, "too many live-update streams; the page falls back to refreshing now and then");
  }
  auto state = std::make_shared<StreamState>();
  state->started = state->last_write = std::chrono::steady_clock::now();
  state->version = ctx.views->DataVersion();
  state->pool = PoolState();
  spdlog::debug("panel stream opened remote={}", req.remote_addr);
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      // httplib calls the provider outside its handler's try block: a throw here would end the
      // daemon. One that escapes ends only this stream (the page reconnects) and is logged.
      [this, state](std::size_t offset, httplib::DataSink& sink) {
        bool more = false;
        Status s = CatchAll("the panel's live-update stream", [&] { more = StreamStep(*state, offset, sink); });
        if (!s.ok()) spdlog::error("panel stream ended error=\"{}\"", s.message());
        return s.ok() && more;
      },
      [this](bool) { streams.fetch_sub(1); });
}

bool Panel::Impl::StreamStep(StreamState& state, std::size_t, httplib::DataSink& sink) {
  auto write = [&](const std::string& text) {
    state.last_write = std::chrono::steady_clock::now();
    return sink.write(text.data(), text.size());
  };
  if (!state.hello) {
    state.hello = true;
    // retry: how soon EventSource reconnects after the stream ends or breaks.
    std::string hello = "retry: 2000\nevent: hello\ndata: " +
                        json{{"boot_id", boot_id}, {"version", SUPERAGENT_VERSION}}.dump() + "\n\n";
    return write(hello);
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::milliseconds(ctx.poll_ms), [this] { return stopping.load(); });
  }
  if (stopping) {
    sink.done();
    return true;
  }
  auto now = std::chrono::steady_clock::now();
  std::int64_t v = ctx.views->DataVersion();
  std::string pool = PoolState();
  if (v != state.version || pool != state.pool) {
    state.version = v;
    state.pool = std::move(pool);
    return write("event: change\ndata: {}\n\n");
  }
  if (now - state.started > std::chrono::milliseconds(kStreamLifetimeMs)) {
    sink.done();
    return true;
  }
  if (now - state.last_write > std::chrono::milliseconds(kKeepaliveMs)) return write(": keepalive\n\n");
  return true;
}

}  // namespace superagent::panel
