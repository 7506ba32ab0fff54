// How the daemon's one HTTP server (panel, webhooks, /healthz, /metrics) holds under abuse: a body
// limit per route refused before the body is read, short read/write/idle timeouts, one request per
// connection, and a pool of connection threads that grows with demand up to a cap. The webhooks
// are reachable from the internet, so nothing a peer sends may size the daemon's memory or hold
// the threads the panel and /healthz need.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <httplib.h>

#include "net/connection_pool.h"

namespace superagent::panel {

// GitHub documents "Payloads are capped at 25 MB"; a bigger delivery is not GitHub's.
inline constexpr std::size_t kGithubHookMaxBody = 25u * 1024 * 1024;
// Feishu's largest message (a 150 KB text) arrives AES-encrypted and base64-encoded (x4/3) in a
// small envelope: about 200 KB.
inline constexpr std::size_t kFeishuHookMaxBody = 256u * 1024;
// Panel commands: the longest is an intercom message, 8 000 characters (at most 4 bytes each in
// UTF-8, 32 000 bytes, plus JSON quoting).
inline constexpr std::size_t kCommandMaxBody = 64u * 1024;

// The largest body `path` accepts.
std::size_t BodyLimit(std::string_view path);

// Why a request's body must not be read, before anything is read: 413 when Content-Length is over
// the route's limit, 411 for a body without a Content-Length (chunked or read-until-close, which
// cpp-httplib 0.11 reads without any limit), 400 for a Content-Length that is not a number.
// status 0: the body may be read.
struct BodyRefusal {
  int status = 0;
  std::string message;
};
BodyRefusal CheckBody(std::string_view method, std::string_view path, bool has_content_length,
                      std::string_view content_length, std::string_view transfer_encoding);

using net::ConnectionPool;  // src/net/connection_pool.h: the worker listener shares it

inline constexpr std::size_t kMaxConnectionThreads = 256;
inline constexpr int kReadTimeoutS = 5;   // per read: a peer that sends nothing for this long is dropped
inline constexpr int kWriteTimeoutS = 5;  // per write: a peer that stops reading is dropped
inline constexpr int kIdleTimeoutS = 2;   // a connection that sends no request within this is closed

// Timeouts, one request per connection (so a refused body is never read as the next request,
// and no idle keep-alive connection holds a thread), the largest route's body limit as the
// server's own, and the ConnectionPool.
void HardenServer(httplib::Server& server);

}  // namespace superagent::panel
