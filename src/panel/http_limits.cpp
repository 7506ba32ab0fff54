#include "panel/http_limits.h"

#include <spdlog/spdlog.h>

#include <exception>

namespace superagent::panel {

std::size_t BodyLimit(std::string_view path) {
  if (path == "/hooks/github") return kGithubHookMaxBody;
  if (path == "/hooks/feishu") return kFeishuHookMaxBody;
  return kCommandMaxBody;
}

BodyRefusal CheckBody(std::string_view method, std::string_view path, bool has_content_length,
                      std::string_view content_length, std::string_view transfer_encoding) {
  const std::size_t limit = BodyLimit(path);
  const std::string limit_text = std::to_string(limit) + " bytes";
  if (!transfer_encoding.empty())
    return {411, "send the body with a Content-Length (at most " + limit_text + " here), not a transfer encoding"};
  if (!has_content_length) {
    // httplib reads a POST without Content-Length until the peer closes: refuse instead.
    if (method == "POST" || method == "PUT" || method == "PATCH")
      return {411, "a " + std::string(method) + " needs a Content-Length (at most " + limit_text + " here)"};
    return {};
  }
  if (content_length.empty() || content_length.size() > 19 ||
      content_length.find_first_not_of("0123456789") != std::string_view::npos)
    return {400, "Content-Length is not a number of bytes"};
  const unsigned long long n = std::stoull(std::string(content_length));
  if (n > limit)
    return {413, "the body has " + std::string(content_length) + " bytes; this route takes at most " + limit_text};
  return {};
}

ConnectionPool::ConnectionPool(std::size_t max_threads) : max_threads_(max_threads == 0 ? 1 : max_threads) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(fn));
  if (idle_ < queue_.size() && threads_.size() < max_threads_) {
    threads_.emplace_back([this] { Work(); });
  } else {
    cv_.notify_one();
  }
}

void ConnectionPool::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads)
    if (t.joinable()) t.join();
}

std::size_t ConnectionPool::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

void ConnectionPool::Work() {
  while (true) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++idle_;
      cv_.wait(lock, [this] { return shutdown_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;  // shut down, nothing left
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      fn();
    } catch (const std::exception& e) {
      spdlog::error("http connection ended by an exception error=\"{}\"", e.what());
    } catch (...) {
      spdlog::error("http connection ended by an unknown exception");
    }
  }
}

void HardenServer(httplib::Server& server) {
  server.set_read_timeout(kReadTimeoutS, 0);
  server.set_write_timeout(kWriteTimeoutS, 0);
  server.set_keep_alive_timeout(kIdleTimeoutS);
  server.set_keep_alive_max_count(1);
  server.set_payload_max_length(kGithubHookMaxBody);
  server.new_task_queue = [] { return new ConnectionPool(kMaxConnectionThreads); };
}

}  // namespace superagent::panel
