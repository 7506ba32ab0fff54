// HttpClient: the seam for outgoing HTTP. Production uses MakeHttpClient's client (cpp-httplib over
// OpenSSL, src/net/), with the proxies app/ reads from the environment; tests point it at loopback
// servers that speak the real wire format (GitHub, Feishu, chat completions), with no proxy.
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

// The proxies requests go through, by libcurl's rules for its environment variables (the daemon
// fills this from them: app::HttpProxiesFromEnvironment; the client itself reads no variable).
// Each proxy field holds a proxy URL, "[http://][user[:password]@]host[:port][/]": only http://
// proxies, port 1080 when none is given, the user and password percent-encoded (sent as Basic
// Proxy-Authorization). "" is unset. A field that is set but holds no such URL fails every request
// it would carry, with an error naming the variable (never its value, which may hold a password):
// a configured proxy is never bypassed.
struct HttpProxies {
  // For http:// URLs (the request goes to the proxy in absolute form): the variable http_proxy,
  // lower-case only. HTTP_PROXY is never read: in a CGI program it comes from the request's
  // "Proxy:" header (httpoxy).
  std::string http_proxy;
  // For https:// URLs (through a CONNECT tunnel; the server's certificate is still verified):
  // https_proxy, else HTTPS_PROXY.
  std::string https_proxy;
  // For either scheme when its own field is "": all_proxy, else ALL_PROXY.
  std::string all_proxy;
  // Hosts reached directly, whatever the fields above say: no_proxy, else NO_PROXY. "*" (every
  // host), or a comma-separated list of names, each covering itself and its subdomains
  // (".example.com" and "example.com" alike), without case; a ":port" after an entry is ignored;
  // an address (127.0.0.1, [::1]) covers only itself.
  std::string no_proxy;
};

// The client. `user_agent` is sent on every request (unless the request sets User-Agent).
// `proxies`: none by default, which is what tests and benchmarks want (a loopback fake must never
// be reached through a proxy the machine happens to set); the daemon passes the environment's.
std::unique_ptr<HttpClient> MakeHttpClient(const std::string& user_agent = "superagent", HttpProxies proxies = {});

}  // namespace superagent
