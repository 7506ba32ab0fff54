// The HTTP client (http_internal.h says how it is built): httplib's clients on our wire, and
// HttpClient::Send, one request from its checks to its answer or the error that says what failed
// where. MakeHttpClient is here.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "net/http_internal.h"
#include "superagent/http.h"
#include "superagent/text.h"

namespace superagent {
// Named, then anonymous: in a unity batch (cmake/Unity.cmake) these helpers hide, rather than
// clash with, same-named helpers of the sources compiled before this one.
namespace httplib_client {
namespace {

// httplib's own timeouts run this much past ours: they are a backstop, the watcher and the
// streams end a request at its deadline.
constexpr std::chrono::milliseconds kBackstop{100};
// libcurl's CONNECTTIMEOUT of 0: its default.
constexpr long kDefaultConnectTimeoutMs = 300'000;
// Longer timeouts are this long (a deadline must stay a steady_clock time point).
constexpr long kMaxTimeoutMs = 7L * 24 * 3600 * 1000;

// ---------------------------------------------------------------------------------------------
// httplib's clients, with our wire.

class PlainClient final : public httplib::ClientImpl {
 public:
  PlainClient(const HostPort& at, Transfer* t) : httplib::ClientImpl(at.host, at.port), t_(t) {}

 private:
  bool process_socket(const Socket& socket, std::function<bool(httplib::Stream& strm)> callback) override {
    WireStream stream(socket.sock, nullptr, t_);
    return callback(stream);
  }

  Transfer* t_;
};

class TlsClient final : public httplib::SSLClient {
 public:
  // `tunnel`: the proxy to reach the host through (CONNECT), or null.
  TlsClient(const HostPort& at, Transfer* t, const Proxy* tunnel, const std::string& user_agent)
      : httplib::SSLClient(at.host, at.port), t_(t), tunnel_(tunnel), user_agent_(user_agent), target_(at.Show()) {}

 private:
  bool create_and_connect_socket(Socket& socket, httplib::Error& error) override {
    if (!is_valid()) {
      t_->failure = "the TLS context could not be made";
      error = httplib::Error::SSLConnection;
      return false;
    }
    if (tunnel_ == nullptr) return ClientImpl::create_and_connect_socket(socket, error);
    const socket_t sock = httplib::detail::create_client_socket(
        tunnel_->at.host, std::string(), tunnel_->at.port, address_family_, tcp_nodelay_, socket_options_,
        connection_timeout_sec_, connection_timeout_usec_, read_timeout_sec_, read_timeout_usec_, write_timeout_sec_,
        write_timeout_usec_, interface_, error);
    if (sock == INVALID_SOCKET) return false;
    if (!OpenTunnel(sock, t_, *tunnel_, target_, user_agent_)) {
      ::close(sock);
      error = httplib::Error::Connection;
      return false;
    }
    socket.sock = sock;
    return true;
  }

  bool process_socket(const Socket& socket, std::function<bool(httplib::Stream& strm)> callback) override {
    WireStream stream(socket.sock, socket.ssl, t_);
    return callback(stream);
  }

  Transfer* t_;
  const Proxy* tunnel_;
  const std::string& user_agent_;
  std::string target_;
};

// SIGPIPE held back on this thread while a request runs: a write to a peer that has gone (TLS
// writes go through write(2), which MSG_NOSIGNAL cannot reach) must not end the process. One
// raised meanwhile is taken off again (the way libpq does it).
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
    was_blocked_ = sigismember(&old_, SIGPIPE) == 1;
    sigset_t pending;
    sigemptyset(&pending);
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeGuard() {
    if (was_blocked_) return;
    const int saved = errno;
    sigset_t pending;
    sigemptyset(&pending);
    if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved;
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t old_{};
  bool was_blocked_ = false;
  bool was_pending_ = false;
};

// The request's place in the watcher, given up (before its client is destroyed) by Finish or,
// when something threw, by the destructor.
class Registration {
 public:
  explicit Registration(Transfer* t) : id_(Watcher::Get().Register(t->deadline, t->connect_deadline, t->req.cancel)) {
    t->watch = id_;
  }
  ~Registration() {
    if (!done_) Watcher::Get().Finish(id_);
  }
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  Stop Finish() {
    done_ = true;
    return Watcher::Get().Finish(id_);
  }

 private:
  std::uint64_t id_;
  bool done_ = false;
};

std::string OpensslReason() {
  const unsigned long e = ERR_peek_last_error();
  const char* reason = e == 0 ? nullptr : ERR_reason_error_string(e);
  return reason == nullptr ? "" : std::string(": ") + reason;
}

class HttplibClient : public HttpClient {
 public:
  HttplibClient(std::string user_agent, HttpProxies proxies)
      : user_agent_(std::move(user_agent)), proxies_(std::move(proxies)) {}

  HttpResponse Send(const HttpRequest& req) override {
    HttpResponse resp;
    const auto started = SteadyClock::now();
    {
      SigpipeGuard sigpipe;
      try {
        Perform(req, started, &resp);
      } catch (const std::exception& e) {
        resp.status = 0;
        resp.error = std::string("HTTP client failure: ") + e.what();
      } catch (...) {
        resp.status = 0;
        resp.error = "HTTP client failure";
      }
      ERR_clear_error();  // this thread's OpenSSL error queue, for whoever uses it next
    }
    // Debug detail for "is it talking to GitHub at all?". The query is left out (it may carry a
    // ticket or a token); headers, which carry the credentials, are never logged.
    if (spdlog::should_log(spdlog::level::debug)) {
      const long ms = static_cast<long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count());
      spdlog::debug("http {} {} status={} ms={} bytes={}{}", req.method, req.url.substr(0, req.url.find('?')),
                    resp.status, ms, resp.body.size(), resp.error.empty() ? "" : " error=\"" + resp.error + "\"");
    }
    return resp;
  }

 private:
  static void Fail(HttpResponse* resp, std::string error) {
    resp->status = 0;
    resp->error = std::move(error);
  }

  void Perform(const HttpRequest& req, TimePoint started, HttpResponse* resp) {
    ERR_clear_error();
    // What is refused is refused before anything is sent.
    Target target;
    if (std::string why = ParseUrl(req.url, &target); !why.empty()) return Fail(resp, why);
    if (!IsToken(req.method)) return Fail(resp, "the method is not an HTTP token");
    if (req.method == "CONNECT") return Fail(resp, "the CONNECT method is not supported");
    for (const auto& [name, value] : req.headers) {
      if (!IsToken(name)) return Fail(resp, "a header name is empty or holds a character no header name has");
      if (HasCrLfOrNul(value)) return Fail(resp, "the value of header " + name + " holds CR, LF or NUL");
    }
    if (HasCrLfOrNul(user_agent_)) return Fail(resp, "the user agent holds CR, LF or NUL");
    if (req.cancel != nullptr && req.cancel->load()) {
      resp->cancelled = true;
      return Fail(resp, "cancelled");
    }
    std::optional<Proxy> proxy;
    if (std::string why = ChooseProxy(proxies_, target, &proxy); !why.empty()) return Fail(resp, why);

    Transfer t(req, *resp);
    t.where = target.at.Show();
    // libcurl's meaning: a timeout of 0 (or less) is none, a connect timeout of 0 its default.
    const long timeout_ms = std::min(req.timeout_ms, kMaxTimeoutMs);
    const long connect_ms = req.connect_timeout_ms > 0 ? std::min(req.connect_timeout_ms, kMaxTimeoutMs) : kDefaultConnectTimeoutMs;
    const long effective_connect_ms = timeout_ms > 0 ? std::min(connect_ms, timeout_ms) : connect_ms;
    if (timeout_ms > 0) t.deadline = started + std::chrono::milliseconds(timeout_ms);
    t.connect_deadline = started + std::chrono::milliseconds(effective_connect_ms);

    std::unique_ptr<httplib::ClientImpl> client;
    TlsClient* tls = nullptr;
    if (target.tls) {
      auto c = std::make_unique<TlsClient>(target.at, &t, proxy ? &*proxy : nullptr, user_agent_);
      tls = c.get();
      if (SSL_CTX* ctx = c->ssl_context(); ctx != nullptr) {
        // The name (or address) is checked by OpenSSL while it verifies the chain; its result is
        // what httplib reads after the handshake.
        X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
        bool set = false;
        if (IsIpLiteral(target.at.host)) {
          set = X509_VERIFY_PARAM_set1_ip_asc(param, target.at.host.c_str()) == 1;
        } else {
          X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
          set = X509_VERIFY_PARAM_set1_host(param, target.at.host.c_str(), target.at.host.size()) == 1;
        }
        if (!set) return Fail(resp, "the TLS host check for " + target.at.host + " could not be set up");
      }
      c->enable_server_certificate_verification(true);
      client = std::move(c);
    } else {
      auto c = std::make_unique<PlainClient>(target.at, &t);
      if (proxy) c->set_proxy(proxy->at.host, proxy->at.port);  // absolute-form request line
      client = std::move(c);
    }
    client->set_keep_alive(false);
    client->set_follow_location(false);
    client->set_url_encode(false);  // the path as given: httplib would rewrite '+', ',' and ';'
    client->set_decompress(true);
    client->set_tcp_nodelay(true);  // the head and the body are two writes
    // httplib's own timeouts, a backstop: the watcher and the streams act first.
    const long backstop_connect_ms = effective_connect_ms + kBackstop.count();
    const long backstop_io_ms = (timeout_ms > 0 ? timeout_ms : kDefaultConnectTimeoutMs) + kBackstop.count();
    client->set_connection_timeout(backstop_connect_ms / 1000, (backstop_connect_ms % 1000) * 1000);
    client->set_read_timeout(backstop_io_ms / 1000, (backstop_io_ms % 1000) * 1000);
    client->set_write_timeout(backstop_io_ms / 1000, (backstop_io_ms % 1000) * 1000);
    client->set_socket_options([&t](socket_t sock) {
      t.socket_made = true;
      Watcher::Get().Adopt(t.watch, sock);
    });

    httplib::Request hreq;
    hreq.method = req.method;
    hreq.path = target.path;
    for (const auto& [name, value] : req.headers) hreq.headers.emplace(name, value);
    if (!hreq.has_header("Host")) {
      // httplib's would be "::1" for https://[::1]/.
      const std::string host_port = target.at.Show();
      const bool default_port = target.at.port == (target.tls ? 443 : 80);
      hreq.headers.emplace("Host", default_port ? host_port.substr(0, host_port.rfind(':')) : host_port);
    }
    if (!hreq.has_header("User-Agent")) hreq.headers.emplace("User-Agent", user_agent_);
    // httplib decodes these (set_decompress) but never asks for them.
    if (!hreq.has_header("Accept-Encoding")) hreq.headers.emplace("Accept-Encoding", "gzip, deflate, br");
    if (target.has_userinfo && !hreq.has_header("Authorization"))
      hreq.headers.insert(httplib::make_basic_authentication_header(target.user, target.password, false));
    if (proxy && !target.tls && proxy->auth && !hreq.has_header("Proxy-Authorization"))
      hreq.headers.insert(httplib::make_basic_authentication_header(proxy->user, proxy->password, true));
    if (!req.body.empty() || req.method == "POST" || req.method == "PATCH" || req.method == "PUT") {
      hreq.body = req.body;
      // libcurl's type for a body sent without one.
      if (!req.body.empty() && !hreq.has_header("Content-Type"))
        hreq.headers.emplace("Content-Type", "application/x-www-form-urlencoded");
    }
    // Called when the status line and the headers are in, before any of the body (not for a 204
    // or a HEAD: those are told after send).
    hreq.response_handler = [&t](const httplib::Response& res) {
      ParseHead(t.head, &t.resp.headers);
      t.head_parsed = true;
      t.capturing = false;
      if (res.status == 304 || (res.status >= 100 && res.status < 200)) {
        // No body, whatever the headers say (httplib would wait for one). `res` is send()'s own
        // Response, handed over as const.
        auto& framing = const_cast<httplib::Response&>(res).headers;
        framing.erase("Content-Length");
        framing.erase("Transfer-Encoding");
        t.no_body = true;
      }
      if (t.req.on_head) {
        t.head_told = true;
        t.req.on_head(res.status, t.resp.headers);
      }
      return true;
    };
    hreq.content_receiver = [&t](const char* data, std::size_t size, std::uint64_t, std::uint64_t) {
      if (!t.req.on_body) {
        t.resp.body.append(data, size);
        return true;
      }
      if (t.req.on_body(data, size)) return true;
      t.abandoned = true;
      return false;
    };

    httplib::Response hres;
    httplib::Error err = httplib::Error::Success;
    Registration registration(&t);
    const bool ok = client->send(hreq, hres, err);
    const Stop stop = registration.Finish();  // before the client (and its socket) goes

    if (!t.head_parsed && !t.head.empty()) ParseHead(t.head, &resp->headers);
    // Where a connection was being made: the proxy's when there is one.
    const std::string where = proxy ? "the proxy " + proxy->at.Show() : t.where;
    if (stop == Stop::kCancel) {
      resp->cancelled = true;
      return Fail(resp, "cancelled");
    }
    if (stop == Stop::kTimeout) {
      resp->timed_out = true;
      return Fail(resp, "timed out after " + std::to_string(req.timeout_ms) + " ms");
    }
    if (stop == Stop::kConnectTimeout || (!ok && err == httplib::Error::ConnectionTimeout)) {
      resp->timed_out = true;
      return Fail(resp, "connect to " + where + " timed out after " + std::to_string(effective_connect_ms) + " ms");
    }
    if (!ok) return Fail(resp, Describe(t, err, tls, proxy ? &*proxy : nullptr, target));
    resp->status = hres.status;
    if (req.on_head && !t.head_told) {
      t.head_told = true;
      req.on_head(resp->status, resp->headers);
    }
  }

  // A transport failure in words: what failed, where.
  static std::string Describe(const Transfer& t, httplib::Error err, const TlsClient* tls, const Proxy* proxy,
                              const Target& target) {
    if (!t.failure.empty()) return t.failure;
    if (t.abandoned) return "the response from " + t.where + " was abandoned (on_body returned false)";
    switch (err) {
      case httplib::Error::Connection:
        if (!t.socket_made)
          return proxy != nullptr ? "could not resolve the proxy's host " + proxy->at.host
                                  : "could not resolve host " + target.at.host;
        // httplib connects inside its own call and keeps no errno: these are what it covers.
        return "connect to " + (proxy != nullptr ? "the proxy " + proxy->at.Show() : t.where) +
               " failed (refused, unreachable or reset)";
      case httplib::Error::SSLConnection:
        return "TLS handshake with " + t.where + " failed" + OpensslReason();
      case httplib::Error::SSLServerVerification: {
        const long result = tls != nullptr ? tls->get_openssl_verify_result() : X509_V_OK;
        return "certificate verification failed for host " + target.at.host + ": " +
               (result != X509_V_OK ? X509_verify_cert_error_string(result) : "the certificate does not name the host");
      }
      case httplib::Error::SSLLoadingCerts:
        return "loading the CA certificates failed" + OpensslReason();
      case httplib::Error::Write:
        return "sending the request to " + t.where + " failed" + (t.io_errno ? std::string(": ") + ErrnoText(t.io_errno) : "");
      case httplib::Error::Read:
        if (t.bytes_in == 0 && t.eof) return t.where + " closed the connection without answering";
        if (t.bytes_in == 0 && t.io_errno) return "reading the answer from " + t.where + " failed: " + ErrnoText(t.io_errno);
        if (!t.head_parsed) return "malformed or incomplete response header from " + t.where;
        if (t.eof) return "the response body from " + t.where + " broke off (connection closed)";
        return "reading the response body from " + t.where + " failed" +
               (t.io_errno ? std::string(": ") + ErrnoText(t.io_errno) : " (bad chunk or bad compression)");
      default:
        return "request to " + t.where + " failed: " + httplib::to_string(err);
    }
  }

  std::string user_agent_;
  HttpProxies proxies_;
};

}  // namespace
}  // namespace httplib_client

std::string HttpResponse::Header(const std::string& name) const {
  auto it = headers.find(text::AsciiLower(name));
  return it == headers.end() ? "" : it->second;
}

std::unique_ptr<HttpClient> MakeHttpClient(const std::string& user_agent, HttpProxies proxies) {
  return std::make_unique<httplib_client::HttplibClient>(user_agent, std::move(proxies));
}

}  // namespace superagent
