// A streamed HTTP answer carried from the thread that reads it (an upstream request) to the
// httplib response that writes it, chunk by chunk as it comes: the model gateway's relay to the
// model API and the worker listener's relay to the gateway share it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include <httplib.h>

namespace superagent::exec {

struct StreamRelay {
  std::mutex mu;
  std::condition_variable cv;
  bool head = false;  // status and headers are in
  bool done = false;  // the upstream request has ended
  int status = 0;
  std::string content_type;
  std::string retry_after;
  std::deque<std::string> chunks;
  std::string error;  // a transport failure, when done without an answer
  std::atomic<bool> cancel{false};
};

// Makes `res` write `relay`'s chunks as they arrive, as `content_type`, ending once the relay is
// done; a client that goes away sets relay->cancel, so the upstream request is abandoned too.
inline void StreamRelayed(std::shared_ptr<StreamRelay> relay, const std::string& content_type, httplib::Response& res) {
  res.set_chunked_content_provider(
      content_type,
      [relay](std::size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> l(relay->mu);
        relay->cv.wait(l, [&] { return !relay->chunks.empty() || relay->done; });
        if (relay->chunks.empty()) {
          sink.done();
          return true;
        }
        std::string chunk = std::move(relay->chunks.front());
        relay->chunks.pop_front();
        l.unlock();
        return sink.write(chunk.data(), chunk.size());
      },
      [relay](bool success) {
        if (!success) relay->cancel = true;
      });
}

}  // namespace superagent::exec
