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

void HardenServer(httplib::Server& server) {
  server.set_read_timeout(kReadTimeoutS, 0);
  server.set_write_timeout(kWriteTimeoutS, 0);
  server.set_keep_alive_timeout(kIdleTimeoutS);
  server.set_keep_alive_max_count(1);
  server.set_payload_max_length(kGithubHookMaxBody);
  server.new_task_queue = [] { return new ConnectionPool(kMaxConnectionThreads); };
}

}  // namespace superagent::panel
