// HttpClient: the seam for outgoing HTTP. Production uses libcurl; tests point it at loopback
// servers that speak the real wire format (GitHub, Feishu, chat completions).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace superagent {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // sent as given
  std::string body;
  long timeout_ms = 30'000;          // whole request
  long connect_timeout_ms = 10'000;
  // When set and it becomes true, the request is abandoned within about a second (a Ticket was
  // stopped or the daemon is shutting down) and comes back with `cancelled`. Must outlive Send.
  const std::atomic<bool>* cancel = nullptr;
  // Streaming (the model gateway relays server-sent events as they come). When set, on_head is
  // called once the final response's status line and headers are in (status, lower-cased
  // headers), and on_body with each piece of the body as it arrives, instead of collecting it in
  // HttpResponse::body; on_body returning false abandons the request (`error` then says so).
  // Called on the thread inside Send.
  std::function<void(int status, const std::map<std::string, std::string>& headers)> on_head;
  std::function<bool(const char* data, std::size_t size)> on_body;
};

struct HttpResponse {
  int status = 0;                                // 0 when no HTTP answer arrived (see error)
  std::map<std::string, std::string> headers;    // names lower-cased; repeated headers joined with ", "
  std::string body;
  std::string error;                             // transport error (DNS, connect, timeout), else ""
  bool timed_out = false;
  bool cancelled = false;                        // abandoned because HttpRequest::cancel became true

  // The header's value, or "" ("name" in any case).
  std::string Header(const std::string& name) const;
  bool ok() const { return error.empty() && status >= 200 && status < 300; }
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // Performs one request synchronously. Never throws; transport failures come back in `error`.
  // Safe to call from several threads at once.
  virtual HttpResponse Send(const HttpRequest& request) = 0;
};

// libcurl-backed client. `user_agent` is sent on every request.
std::unique_ptr<HttpClient> MakeCurlHttpClient(const std::string& user_agent = "superagent");

}  // namespace superagent
