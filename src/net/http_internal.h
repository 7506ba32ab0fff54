// The HTTP client's insides, shared by its four sources (private to src/net/).
//
// The client is cpp-httplib's HTTP/1.1 client (0.11.4, Debian's compiled library) over OpenSSL,
// in place of libcurl, whose ~25 dependent libraries cost ~3.7 MB of the idle daemon's memory
// (docs/008). httplib writes the request, reads the status line, the body's framing (length,
// chunks, close) and its compression; what it does not do, or does otherwise than libcurl did, is
// done here:
//
//  * The wire is ours (WireStream, for http and https): httplib 0.11.4 percent-decodes response
//    header values ("%41" comes back "A"), so the header bytes are kept as read and parsed here,
//    byte-exact; and every wait on the socket ends at the request's deadline.
//  * One watcher thread (Watcher) ends requests whose deadline has passed or whose cancel flag
//    became true, by shutting their socket down, in whatever phase they are (connect, proxy
//    tunnel, TLS handshake, body). It holds a dup of the socket, so a socket httplib has closed
//    (and the kernel may have handed out again) is never touched. httplib's ClientImpl::stop()
//    is not used: it waits on the mutex send() holds while connecting and handshaking, and does
//    nothing when called before the request has its socket.
//  * The host name is verified by OpenSSL (X509_VERIFY_PARAM_set1_host / _ip_asc) besides
//    httplib's own check, which falls back to the subject's CN even when the certificate names
//    other hosts in its SANs, and compares names case-sensitively.
//  * Proxies follow libcurl's rules, from the HttpProxies the client was made with (app/ reads
//    them from the environment; the client reads no variable), and https goes through the proxy
//    with a CONNECT tunnel of our own (httplib's treats a refused CONNECT as the TLS server's
//    garbage, and sends no credentials without a password).
//
// Where each part lives:
//   http_url.cpp     URLs, tokens, authorities: what a request may ask for.
//   http_proxy.cpp   which proxy a request goes through, and the CONNECT tunnel.
//   http_wire.cpp    the watcher, the socket waits, the response head, WireStream.
//   http_client.cpp  httplib's clients on our wire, and HttpClient::Send: one request start to end.
//
// Everything here is in namespace superagent::httplib_client; each source keeps its own helpers
// in an anonymous namespace inside it, under names no other source of the client uses (the
// library is compiled in unity batches, cmake/Unity.cmake: the sources may share one
// translation unit).
#pragma once

#include <openssl/ssl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <httplib.h>

#include "superagent/http.h"
#include "superagent/mutex.h"

namespace superagent::httplib_client {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
// A deadline that never comes (a request without a timeout).
inline constexpr TimePoint kNever = TimePoint::max();

// ---------------------------------------------------------------------------------------------
// Text: URLs, tokens, authorities (http_url.cpp).

// An RFC 9110 token: what a method and a header name are made of.
bool IsToken(std::string_view s);
// Whether `s` holds CR, LF or NUL (never in a header value we send: header injection).
bool HasCrLfOrNul(std::string_view s);
// Whether `s` holds a byte 0x00–0x20 or 0x7F: never in a URL we send (header injection, request
// splitting).
bool HasSpaceOrControl(std::string_view s);
// "%XX" decoded; anything else (a '%' not followed by two hex digits too) kept as it is.
std::string PercentDecode(std::string_view s);
// Whether `host` is an IPv4 or IPv6 address (without brackets) rather than a name.
bool IsIpLiteral(const std::string& host);

struct HostPort {
  std::string host;  // lower-cased; an IPv6 literal without its brackets
  int port = 0;
  // "host:port", "[v6]:port": for messages, Host headers and CONNECT targets.
  std::string Show() const { return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port); }
};

// Splits "host", "host:port", "[v6]" or "[v6]:port" into `out` (`default_port` when none is
// given). False, leaving `out` as it was, on anything else: an empty host, a host with
// characters no host name or address has, an IPv6 address without brackets, a port outside
// 1..65535.
bool SplitAuthority(std::string_view a, int default_port, HostPort* out);

// What a URL asks for.
struct Target {
  bool tls = false;
  HostPort at;
  std::string path;  // origin-form: "/" path ["?" query], bytes from 0x80 up percent-encoded
  bool has_userinfo = false;
  std::string user, password;  // percent-decoded
};

// Takes "user[:password]@" (the last '@' ends it) off the front of `authority` into `user` and
// `password`, percent-decoded; whether there was one.
bool TakeUserinfo(std::string_view* authority, std::string* user, std::string* password);

// Parses `url` (http:// or https:// only) into `t`; returns why it cannot be fetched, or "".
// The reason echoes no more of the URL than its scheme (the rest may hold credentials).
std::string ParseUrl(const std::string& url, Target* t);

// ---------------------------------------------------------------------------------------------
// Proxies (http_proxy.cpp).

// An http proxy to go through.
struct Proxy {
  HostPort at;
  bool auth = false;
  std::string user, password;  // percent-decoded
};

// The proxy `proxies` name for `t` in `out` (reset when none does, or when no_proxy covers the
// host), by libcurl's rules (see HttpProxies). Returns "" or, when the field that applies holds
// no usable http:// proxy URL, why the request cannot be sent, naming the variable and never
// echoing its value (it may hold a password): a configured proxy is never bypassed.
std::string ChooseProxy(const HttpProxies& proxies, const Target& t, std::optional<Proxy>* out);

struct Transfer;

// The CONNECT exchange with the http proxy connected on `fd`, for a tunnel to `target`
// ("host:port"): sends the request (with `proxy`'s credentials and `user_agent`), reads the
// proxy's answer up to its blank line and no further (what follows is the TLS server's). True
// on a 2xx. Otherwise false, with t->failure saying why, or with the watcher told of the
// connect timeout or the deadline (whichever comes first) when that passed.
bool OpenTunnel(int fd, Transfer* t, const Proxy& proxy, const std::string& target, const std::string& user_agent);

// ---------------------------------------------------------------------------------------------
// The watcher: ends requests at their deadline or when cancelled (http_wire.cpp).

// Why a request was stopped.
enum class Stop { kNone, kTimeout, kConnectTimeout, kCancel };

// One thread for every client, ending requests by shutting their socket down. Thread-safe.
class Watcher {
 public:
  // Made on first use and never destroyed: a request still running on another thread while the
  // process exits must not find it gone. Its thread starts with the first request.
  static Watcher& Get();

  // Watches a new request: stopped with kTimeout at `deadline` (kNever: none), kConnectTimeout
  // at `connect_deadline` unless Connected came first, kCancel once `cancel` (may be null; must
  // outlive Finish) reads true. Returns its id, for the calls below.
  std::uint64_t Register(TimePoint deadline, TimePoint connect_deadline, const std::atomic<bool>* cancel) EXCLUDES(mu_);
  // httplib made a socket for request `id` (before connecting it): the watcher keeps a dup of
  // it, which it may shut down until Finish, whatever httplib has done with its own descriptor.
  // A request stopped before it had a socket has `fd` shut down at once.
  void Adopt(std::uint64_t id, int fd) EXCLUDES(mu_);
  // The connection is up (TCP, proxy tunnel and TLS handshake): the connect deadline is over.
  void Connected(std::uint64_t id) EXCLUDES(mu_);
  // A stream saw a deadline pass before the watcher did: stops the request for `why` (unless it
  // was stopped already).
  void Expire(std::uint64_t id, Stop why) EXCLUDES(mu_);
  // The request is over: forgets it, closes the dup, and says whether (and why) it was stopped.
  // Call it before the socket's owner closes the socket.
  Stop Finish(std::uint64_t id) EXCLUDES(mu_);

 private:
  struct Entry {
    TimePoint deadline;
    TimePoint connect_deadline;
    const std::atomic<bool>* cancel = nullptr;
    int fd = -1;
    bool connected = false;
    Stop stop = Stop::kNone;
  };

  Watcher() = default;
  void StopLocked(Entry& e, Stop why) REQUIRES(mu_);
  void Run() EXCLUDES(mu_);

  Mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::uint64_t, Entry> entries_ GUARDED_BY(mu_);
  std::uint64_t next_id_ GUARDED_BY(mu_) = 1;
  bool started_ GUARDED_BY(mu_) = false;
};

// Waits until `fd` is ready for `events` (poll's) or `until` passes (kNever: no limit): 1 ready
// (or an error the next read or write reports), 0 timed out, -1 failed (errno says why).
int WaitFd(int fd, short events, TimePoint until);

// errno in words.
std::string ErrnoText(int e);

// ---------------------------------------------------------------------------------------------
// One request in flight: what the callbacks, the streams and the clients share (http_wire.cpp
// fills most of it; http_client.cpp reads it to say what happened).

struct Transfer {
  Transfer(const HttpRequest& request, HttpResponse& response) : req(request), resp(response) {}
  const HttpRequest& req;
  HttpResponse& resp;
  std::uint64_t watch = 0;  // the Watcher's id
  TimePoint deadline = kNever;
  TimePoint connect_deadline = kNever;
  std::string where;  // "host:port" of the origin, for messages

  // The response head as read from the wire (httplib's parsed headers are percent-decoded).
  std::string head;
  bool capturing = true;
  std::size_t line_len = 0;
  std::size_t line_start = 0;
  bool head_parsed = false;  // head parsed into resp.headers (on_head's turn)
  bool head_told = false;    // on_head called
  bool no_body = false;      // a 304 or 1xx: whatever its headers say, nothing follows

  bool socket_made = false;  // the host name resolved and httplib made a socket
  bool eof = false;          // the peer closed its side
  std::uint64_t bytes_in = 0;
  int io_errno = 0;
  bool abandoned = false;  // on_body returned false
  std::string failure;     // a reason of our own: the header too large, the proxy refused CONNECT
};

// Fills `headers` from the raw head `raw`: the last response's (a 100 Continue's are dropped),
// names lower-cased, values trimmed and otherwise byte-exact but for CR, LF and NUL (each a
// space), repeated names joined with ", ". Lines not ending in CRLF, and lines whose name is not
// a token, are skipped.
void ParseHead(const std::string& raw, std::map<std::string, std::string>* headers);

// The socket after the connection is up (`ssl` null for plain http), for httplib to write the
// request and read the answer through: every wait ends at t->deadline (the watcher is then told);
// the response head is kept in t->head as read, bounded (256 KiB, 8 KiB a line, 1 KiB for the
// status line; t->failure says which was exceeded); writes raise no SIGPIPE. Making one tells the
// watcher the request is connected. The socket is non-blocking while the stream lives.
class WireStream : public httplib::Stream {
 public:
  WireStream(int fd, SSL* ssl, Transfer* t);
  ~WireStream() override;
  WireStream(const WireStream&) = delete;
  WireStream& operator=(const WireStream&) = delete;

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  ssize_t Fill();
  ssize_t Got(std::size_t n);
  bool Wait(short events);
  bool Capture(const char* p, std::size_t n);
  void Address(bool remote, std::string& ip, int& port) const;

  int fd_;
  SSL* ssl_;
  Transfer* t_;
  int flags_ = -1;
  std::array<char, 16 * 1024> buf_{};
  std::size_t off_ = 0, len_ = 0;
};

}  // namespace superagent::httplib_client
