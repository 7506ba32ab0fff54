// The HTTP client (cpp-httplib over OpenSSL) against real loopback servers: methods, headers,
// bodies, errors, timeouts and cancelling, streaming, compression, TLS verification, proxies (and
// reading them from the environment), and peers that misbehave.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "app/wiring.h"
#include "superagent/http.h"

namespace superagent {
// Named, then anonymous: in a unity batch (cmake/Unity.cmake) these helpers hide, rather than
// clash with, same-named helpers of the tests compiled before this one, and the using-directive
// stays here.
namespace http_client_test {
namespace {

using namespace std::chrono_literals;

// ---------------------------------------------------------------------------------------------
// Helpers: the environment, a raw TCP peer, certificates.

// The variables OpenSSL and app::HttpProxiesFromEnvironment read, unset for a test and put back
// after it: a developer's or CI's proxy or CA bundle must not change what the tests see.
class CleanEnvironment {
 public:
  CleanEnvironment() {
    for (const char* name : kNames) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      ::unsetenv(name);
    }
  }
  ~CleanEnvironment() {
    for (const char* name : kNames) {
      auto it = saved_.find(name);
      if (it == saved_.end()) {
        ::unsetenv(name);
      } else {
        ::setenv(name, it->second.c_str(), 1);
      }
    }
  }
  CleanEnvironment(const CleanEnvironment&) = delete;
  CleanEnvironment& operator=(const CleanEnvironment&) = delete;

 private:
  static constexpr const char* kNames[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                                           "ALL_PROXY",  "no_proxy",   "NO_PROXY",    "SSL_CERT_FILE", "SSL_CERT_DIR"};
  std::map<std::string, std::string> saved_;
};

bool SendAll(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads a request head (up to the blank line); "" when the peer closed first.
std::string ReadHead(int fd) {
  std::string head;
  char c = 0;
  while (head.size() < 4 || head.compare(head.size() - 4, 4, "\r\n\r\n") != 0) {
    if (::recv(fd, &c, 1, 0) != 1) return "";
    head += c;
  }
  return head;
}

// A header's value in a request head ("" when absent).
std::string Field(const std::string& head, const std::string& name) {
  const auto at = head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const auto start = at + 4 + name.size();
  return head.substr(start, head.find("\r\n", start) - start);
}

// A loopback TCP peer that speaks whatever its handler writes: the hostile servers, the proxy.
// Each connection runs the handler on a thread of its own; Stop (or the destructor) shuts every
// connection down, wakes handlers waiting in WaitForStop, and joins them.
class RawServer {
 public:
  using Handler = std::function<void(int fd, RawServer& server)>;

  // On 127.0.0.1, or on ::1 with `v6` (ok() is false when the host has no IPv6 loopback).
  explicit RawServer(Handler handler, int backlog = 16, bool v6 = false) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_storage storage{};
    auto* addr = reinterpret_cast<sockaddr*>(&storage);
    socklen_t len = 0;
    if (v6) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
      in6->sin6_family = AF_INET6;
      in6->sin6_addr = in6addr_loopback;
      len = sizeof(sockaddr_in6);
    } else {
      auto* in = reinterpret_cast<sockaddr_in*>(&storage);
      in->sin_family = AF_INET;
      in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof(sockaddr_in);
    }
    if (::bind(listen_fd_, addr, len) != 0 || ::listen(listen_fd_, backlog) != 0 || ::getsockname(listen_fd_, addr, &len) != 0) {
      if (!v6) ADD_FAILURE() << "RawServer cannot listen";
      return;
    }
    port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port : reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
  }
  ~RawServer() { Stop(); }
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;

  // Starts accepting (a server for the connect-timeout test never does).
  void Start() {
    acceptor_ = std::thread([this] {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        std::lock_guard<std::mutex> lock(mu_);
        if (fd < 0 || stopping_) {
          if (fd >= 0) ::close(fd);
          return;
        }
        ++accepted_;
        conns_.push_back(fd);
        cv_.notify_all();
        workers_.emplace_back([this, fd] { handler_(fd, *this); });
      }
    });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = stopping_ = true;
      cv_.notify_all();
      ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept
      for (int fd : conns_) ::shutdown(fd, SHUT_RDWR);
    }
    if (acceptor_.joinable()) acceptor_.join();
    for (auto& w : workers_) w.join();
    for (int fd : conns_) ::close(fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }

  bool ok() const { return port_ != 0; }
  int port() const { return port_; }
  std::string Url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  int accepted() {
    std::lock_guard<std::mutex> lock(mu_);
    return accepted_;
  }
  // Blocks until `n` connections were accepted; false after 10 s.
  bool WaitAccepted(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return accepted_ >= n; });
  }
  // For handlers: waits up to `d` for Stop; true when stopping. A held connection waits with a
  // long `d`, a trickle paces itself with a short one.
  bool WaitForStop(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, d, [&] { return stopping_; });
  }

  // What handlers saw, for the test to read.
  void Record(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    records_.push_back(s);
  }
  std::vector<std::string> records() {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

 private:
  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::vector<int> conns_;
  std::vector<std::string> records_;
  int accepted_ = 0;
  bool stopping_ = false, stopped_ = false;
};

// A throwaway PKI made with OpenSSL at test time: a CA, and leaf certificates it signs.
struct KeyAndCert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  KeyAndCert() = default;
  KeyAndCert(KeyAndCert&& o) noexcept : key(o.key), cert(o.cert) {
    o.key = nullptr;
    o.cert = nullptr;
  }
  KeyAndCert(const KeyAndCert&) = delete;
  KeyAndCert& operator=(const KeyAndCert&) = delete;
  KeyAndCert& operator=(KeyAndCert&&) = delete;
  ~KeyAndCert() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

// A certificate for `cn` with the given extensions (name → value, X509V3_EXT_conf_nid's form),
// signed by `issuer` (self-signed when null).
KeyAndCert MakeCert(const std::string& cn, const std::vector<std::pair<int, std::string>>& extensions,
                    const KeyAndCert* issuer, long serial) {
  KeyAndCert kc;
  kc.key = EVP_EC_gen("P-256");
  kc.cert = X509_new();
  X509_set_version(kc.cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(kc.cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(kc.cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(kc.cert), 24 * 3600);
  X509_set_pubkey(kc.cert, kc.key);
  X509_NAME* name = X509_get_subject_name(kc.cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* issuer_cert = issuer != nullptr ? issuer->cert : kc.cert;
  X509_set_issuer_name(kc.cert, X509_get_subject_name(issuer_cert));
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer_cert, kc.cert, nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    EXPECT_NE(ext, nullptr) << value;
    if (ext != nullptr) {
      X509_add_ext(kc.cert, ext, -1);
      X509_EXTENSION_free(ext);
    }
  }
  EXPECT_GT(X509_sign(kc.cert, issuer != nullptr ? issuer->key : kc.key, EVP_sha256()), 0);
  return kc;
}

KeyAndCert MakeLeaf(const std::string& cn, const std::string& san, const KeyAndCert& ca, long serial) {
  return MakeCert(cn,
                  {{NID_basic_constraints, "critical,CA:FALSE"},
                   {NID_ext_key_usage, "serverAuth"},
                   {NID_subject_alt_name, san}},
                  &ca, serial);
}

// An httplib TLS server on loopback with `leaf`'s certificate: GET /hello answers "hello tls".
class TlsServer {
 public:
  explicit TlsServer(const KeyAndCert& leaf) : server_(leaf.cert, leaf.key) {
    server_.Get("/hello", [](const httplib::Request&, httplib::Response& res) { res.set_content("hello tls", "text/plain"); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // As HttpClientTest's server below: httplib 0.11's stop() is lost until is_running().
    for (int i = 0; i < 5'000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ~TlsServer() {
    server_.stop();
    thread_.join();
  }
  TlsServer(const TlsServer&) = delete;
  TlsServer& operator=(const TlsServer&) = delete;
  int port() const { return port_; }
  std::string Url(const std::string& host, const std::string& path) const {
    return "https://" + host + ":" + std::to_string(port_) + path;
  }

 private:
  httplib::SSLServer server_;
  std::thread thread_;
  int port_ = 0;
};

// ---------------------------------------------------------------------------------------------

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_header("X-Seen-Auth", req.get_header_value("Authorization"));
      res.set_header("Link", "<https://x/?page=2>; rel=\"next\"");
      res.status = 201;
      res.set_content(req.body, "application/json");
    });
    server_.Get("/missing", [](const httplib::Request&, httplib::Response& res) { res.status = 404; });
    server_.Get("/nothing", [](const httplib::Request&, httplib::Response& res) {
      res.status = 204;
      res.set_header("X-Why", "empty");
    });
    server_.Get("/hello", [](const httplib::Request& req, httplib::Response& res) {
      res.set_header("X-Seen-Agent", req.get_header_value("User-Agent"));
      res.set_header("X-Seen-Encoding", req.get_header_value("Accept-Encoding"));
      res.set_content("hello", "text/plain");
    });
    // Compressible text: httplib's server brotli-compresses it for a client that offers br.
    server_.Get("/text", [](const httplib::Request&, httplib::Response& res) {
      std::string text;
      for (int i = 0; i < 2'000; ++i) text += "line " + std::to_string(i) + "\n";
      res.set_content(text, "text/plain");
    });
    // Answers only when the test lets it: a slow peer whose request is still in flight.
    server_.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock<std::mutex> lock(mu_);
      arrived_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
      res.set_content("late", "text/plain");
    });
    // Two pieces, the second sent only once the client has told the test it has the first.
    server_.Get("/stream", [this](const httplib::Request&, httplib::Response& res) {
      res.set_header("X-Kind", "stream");
      res.set_chunked_content_provider("text/event-stream", [this](size_t, httplib::DataSink& sink) {
        sink.write("data: one\n\n", 11);
        std::unique_lock<std::mutex> lock(mu_);
        second_waited_ = cv_.wait_for(lock, 10s, [&] { return first_received_ || released_; }) && first_received_;
        lock.unlock();
        sink.write("data: two\n\n", 11);
        sink.done();
        return true;
      });
    });
    // One piece, then held until the test ends.
    server_.Get("/forever", [this](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/event-stream", [this](size_t, httplib::DataSink& sink) {
        sink.write("data: one\n\n", 11);
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return released_; });
        return false;
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Bound already: connections wait in the backlog until the thread accepts them.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib 0.11's stop() is lost until the accept loop has set is_running(): a test that never
    // calls the server would hang in TearDown's join (as the other loopback fakes wait, bounded).
    for (int i = 0; i < 5'000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
      cv_.notify_all();
    }
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  // A CA trusted through SSL_CERT_FILE (OpenSSL reads it when a client loads the default paths).
  void TrustTestCa() {
    const std::filesystem::path file = ca_dir_.path / "ca.pem";
    FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    PEM_write_X509(f, ca_.cert);
    std::fclose(f);
    ::setenv("SSL_CERT_FILE", file.c_str(), 1);
  }

  struct TempDir {
    std::filesystem::path path;
    TempDir() {
      std::string tmpl = (std::filesystem::temp_directory_path() / "superagent-http-XXXXXX").string();
      path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };

  CleanEnvironment env_;  // first in, last out: every test's setenv is undone
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool arrived_ = false, released_ = false;
  bool first_received_ = false, second_waited_ = false;
  KeyAndCert ca_ = MakeCert("superagent test CA",
                            {{NID_basic_constraints, "critical,CA:TRUE"}, {NID_key_usage, "critical,keyCertSign,cRLSign"}},
                            nullptr, 1);
  TempDir ca_dir_;
};

TEST_F(HttpClientTest, ACancelledRequestIsAbandonedWhileThePeerStillHoldsIt) {
  auto client = MakeHttpClient();
  std::atomic<bool> cancel{false};
  HttpRequest req{"GET", Url("/slow"), {}, "", 60'000, 5'000};
  req.cancel = &cancel;
  std::thread canceller([&] {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return arrived_; });
    cancel = true;
  });
  HttpResponse r = client->Send(req);
  canceller.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.error, "cancelled");
  EXPECT_EQ(r.status, 0);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_FALSE(released_) << "Send returned only because the peer answered";
}

TEST_F(HttpClientTest, SendsMethodHeadersAndBodyAndReadsTheAnswer) {
  auto client = MakeHttpClient("superagent-test");
  HttpRequest req;
  req.method = "POST";
  req.url = Url("/echo");
  req.headers = {{"Authorization", "Bearer t0k"}, {"Content-Type", "application/json"}};
  req.body = R"({"a":1})";
  HttpResponse r = client->Send(req);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 201);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.body, R"({"a":1})");
  EXPECT_EQ(r.Header("x-seen-auth"), "Bearer t0k");
  EXPECT_EQ(r.Header("LINK"), "<https://x/?page=2>; rel=\"next\"");
}

TEST_F(HttpClientTest, TheUserAgentIsSentAndCompressedAnswersAreDecoded) {
  auto client = MakeHttpClient("superagent-test/1");
  HttpResponse hello = client->Send({"GET", Url("/hello"), {}, "", 5000, 5000});
  EXPECT_EQ(hello.error, "");
  EXPECT_EQ(hello.Header("x-seen-agent"), "superagent-test/1");
  EXPECT_NE(hello.Header("x-seen-encoding").find("gzip"), std::string::npos);
  EXPECT_NE(hello.Header("x-seen-encoding").find("br"), std::string::npos);
  // A request's own User-Agent wins.
  HttpResponse own = client->Send({"GET", Url("/hello"), {{"user-agent", "mine"}}, "", 5000, 5000});
  EXPECT_EQ(own.Header("x-seen-agent"), "mine");
  // The server brotli-compresses text for a client that offers br.
  HttpResponse text = client->Send({"GET", Url("/text"), {}, "", 5000, 5000});
  EXPECT_EQ(text.error, "");
  EXPECT_EQ(text.Header("content-encoding"), "br");
  EXPECT_EQ(text.body.substr(0, 14), "line 0\nline 1\n");
  EXPECT_EQ(text.body.substr(text.body.size() - 10), "line 1999\n");
}

TEST_F(HttpClientTest, HttpErrorsAreStatusesAndTransportErrorsAreErrors) {
  auto client = MakeHttpClient();
  HttpResponse missing = client->Send({"GET", Url("/missing"), {}, "", 5000, 5000});
  EXPECT_EQ(missing.status, 404);
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.error, "");
  server_.stop();
  thread_.join();
  thread_ = std::thread([] {});
  HttpResponse refused = client->Send({"GET", Url("/missing"), {}, "", 5000, 5000});
  EXPECT_EQ(refused.status, 0);
  EXPECT_FALSE(refused.error.empty());
  EXPECT_NE(refused.error.find("connect to 127.0.0.1:" + std::to_string(port_) + " failed"), std::string::npos)
      << refused.error;
}

// A URL a peer handed back is fetched only over http(s): file:// would hand the daemon's own
// files to whoever parses the answer.
TEST_F(HttpClientTest, OnlyHttpAndHttpsAreFetched) {
  const std::filesystem::path secret = std::filesystem::temp_directory_path() / "superagent-http-file-test";
  { std::ofstream(secret) << "{\"token\": \"do-not-read\"}"; }
  auto client = MakeHttpClient();
  for (const std::string& url : {"file://" + secret.string(), std::string("gopher://127.0.0.1:1/x"),
                                std::string("dict://127.0.0.1:1/x"), std::string("ldap://127.0.0.1:1/x"),
                                std::string("127.0.0.1:1/x")}) {
    HttpResponse r = client->Send({"GET", url, {}, "", 5000, 5000});
    EXPECT_EQ(r.status, 0) << url;
    EXPECT_FALSE(r.error.empty()) << url;
    EXPECT_EQ(r.body.find("do-not-read"), std::string::npos) << url;
  }
  std::filesystem::remove(secret);
}

// ---------------------------------------------------------------------------------------------
// Streaming.

TEST_F(HttpClientTest, StreamingTellsTheHeadFirstAndEachPieceAsItArrives) {
  auto client = MakeHttpClient();
  std::vector<std::string> events;
  HttpRequest req{"GET", Url("/stream"), {}, "", 20'000, 5'000};
  req.on_head = [&](int status, const std::map<std::string, std::string>& headers) {
    auto kind = headers.find("x-kind");
    events.push_back("head " + std::to_string(status) + " " + (kind == headers.end() ? "-" : kind->second));
  };
  req.on_body = [&](const char* data, std::size_t size) {
    events.push_back(std::string(data, size));
    std::lock_guard<std::mutex> lock(mu_);
    first_received_ = true;  // the server sends the second piece only now
    cv_.notify_all();
    return true;
  };
  HttpResponse r = client->Send(req);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "") << "a streamed body is not collected";
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], "head 200 stream");
  EXPECT_EQ(events[1], "data: one\n\n");
  EXPECT_EQ(events[2], "data: two\n\n");
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(second_waited_) << "the first piece reached on_body only after the second was sent";
}

TEST_F(HttpClientTest, OnBodyReturningFalseAbandonsTheRequest) {
  auto client = MakeHttpClient();
  int heads = 0, pieces = 0;
  HttpRequest req{"GET", Url("/forever"), {}, "", 60'000, 5'000};
  req.on_head = [&](int, const std::map<std::string, std::string>&) { ++heads; };
  req.on_body = [&](const char*, std::size_t) {
    ++pieces;
    return false;
  };
  HttpResponse r = client->Send(req);
  EXPECT_EQ(heads, 1);
  EXPECT_EQ(pieces, 1);
  EXPECT_FALSE(r.error.empty());
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_FALSE(released_) << "Send returned only because the peer finished";
}

TEST_F(HttpClientTest, ABodylessAnswerStillCallsOnHead) {
  auto client = MakeHttpClient();
  for (const std::string method : {"GET", "HEAD"}) {
    std::vector<int> statuses;
    std::string why;
    int pieces = 0;
    HttpRequest req{method, Url(method == "GET" ? "/nothing" : "/hello"), {}, "", 5000, 5000};
    req.on_head = [&](int status, const std::map<std::string, std::string>& headers) {
      statuses.push_back(status);
      auto it = headers.find(method == "GET" ? "x-why" : "x-seen-agent");
      why = it == headers.end() ? "" : it->second;
    };
    req.on_body = [&](const char*, std::size_t) {
      ++pieces;
      return true;
    };
    HttpResponse r = client->Send(req);
    EXPECT_EQ(r.error, "") << method;
    EXPECT_EQ(statuses, std::vector<int>{method == "GET" ? 204 : 200}) << method;
    EXPECT_EQ(why, method == "GET" ? "empty" : "superagent") << method;
    EXPECT_EQ(pieces, 0) << method;
    EXPECT_EQ(r.body, "") << method;
  }
}

// ---------------------------------------------------------------------------------------------
// Timeouts.

// A peer that keeps the connection busy, a byte at a time, never finishing: no single read
// waits long, so only a whole-request deadline ends it.
TEST_F(HttpClientTest, TheTimeoutCoversTheWholeRequestAgainstATricklingPeer) {
  for (const bool in_head : {false, true}) {
    RawServer trickler([in_head](int fd, RawServer& s) {
      ReadHead(fd);
      SendAll(fd, in_head ? "HTTP/1.1 200 OK\r\nX-Slow: " : "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
      while (!s.WaitForStop(20ms))
        if (!SendAll(fd, "a")) return;
    });
    trickler.Start();
    auto client = MakeHttpClient();
    std::size_t bytes = 0;
    HttpRequest req{"GET", trickler.Url("/drip"), {}, "", 300, 5'000};
    req.on_body = [&](const char*, std::size_t n) {
      bytes += n;
      return true;
    };
    HttpResponse r = client->Send(req);
    EXPECT_TRUE(r.timed_out) << r.error;
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.error, "timed out after 300 ms");
    EXPECT_FALSE(r.cancelled);
    if (!in_head) {
      EXPECT_GT(bytes, 0u) << "the trickle reached on_body as it came";
    }
  }
}

TEST_F(HttpClientTest, APeerThatAcceptsButNeverAnswersTimesOut) {
  RawServer silent([](int, RawServer& s) { s.WaitForStop(60s); });
  silent.Start();
  auto client = MakeHttpClient();
  HttpResponse r = client->Send({"GET", silent.Url("/"), {}, "", 300, 5'000});
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.error.empty());
  // The same peer for https: the TLS handshake never completes.
  HttpResponse tls = client->Send({"GET", "https://127.0.0.1:" + std::to_string(silent.port()) + "/", {}, "", 300, 5'000});
  EXPECT_TRUE(tls.timed_out) << tls.error;
  EXPECT_EQ(tls.status, 0);
}

// The connect timeout: a listener whose backlog is full drops the SYN, so the connect hangs.
TEST_F(HttpClientTest, AConnectThatHangsEndsAtTheConnectTimeout) {
  std::ifstream abort_on_overflow("/proc/sys/net/ipv4/tcp_abort_on_overflow");
  int abort_flag = 0;
  if (abort_on_overflow >> abort_flag && abort_flag != 0) GTEST_SKIP() << "tcp_abort_on_overflow refuses instead";
  RawServer full([](int, RawServer&) {}, 0);  // never accepts
  // Fill the accept queue (a backlog of 0 holds one connection).
  std::vector<int> fillers;
  for (int i = 0; i < 2; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(full.port()));
    ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    fillers.push_back(fd);
  }
  auto client = MakeHttpClient();
  HttpResponse r = client->Send({"GET", full.Url("/"), {}, "", 60'000, 300});
  EXPECT_TRUE(r.timed_out) << r.error;
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("connect to 127.0.0.1:" + std::to_string(full.port()) + " timed out after 300 ms"),
            std::string::npos)
      << r.error;
  for (int fd : fillers) ::close(fd);
}

TEST_F(HttpClientTest, ARequestCancelledBeforeItStartsIsNotSent) {
  RawServer raw([](int fd, RawServer&) { ::shutdown(fd, SHUT_RDWR); });
  raw.Start();
  auto client = MakeHttpClient();
  std::atomic<bool> cancel{true};
  HttpRequest req{"GET", raw.Url("/"), {}, "", 5000, 5000};
  req.cancel = &cancel;
  HttpResponse r = client->Send(req);
  EXPECT_TRUE(r.cancelled);
  EXPECT_EQ(r.error, "cancelled");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(raw.accepted(), 0);
}

TEST_F(HttpClientTest, ACancelledTlsHandshakeIsAbandoned) {
  RawServer silent([](int, RawServer& s) { s.WaitForStop(60s); });
  silent.Start();
  auto client = MakeHttpClient();
  std::atomic<bool> cancel{false};
  HttpRequest req{"GET", "https://127.0.0.1:" + std::to_string(silent.port()) + "/", {}, "", 60'000, 60'000};
  req.cancel = &cancel;
  std::thread canceller([&] {
    silent.WaitAccepted(1);  // the client is in its handshake
    cancel = true;
  });
  HttpResponse r = client->Send(req);
  canceller.join();
  EXPECT_TRUE(r.cancelled) << r.error;
  EXPECT_EQ(r.error, "cancelled");
  EXPECT_EQ(r.status, 0);
}

// ---------------------------------------------------------------------------------------------
// What comes back, byte for byte.

TEST_F(HttpClientTest, AGzipEncodedAnswerComesBackDecoded) {
  static const std::string kGzip(
      "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\x4b\x49\x4d\xce\x4f\x49\x4d\xb1\x52\xc8\x48\xcd\xc9\xc9\xd7\x51\x48"
      "\xaf\xca\x2c\x50\xe4\x02\x00\x74\x15\xd5\x5f\x16\x00\x00\x00",
      42);
  RawServer gz([](int fd, RawServer& s) {
    s.Record(ReadHead(fd));
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 42\r\nConnection: close\r\n\r\n" + kGzip);
  });
  gz.Start();
  auto client = MakeHttpClient();
  HttpResponse r = client->Send({"GET", gz.Url("/gz"), {}, "", 5000, 5000});
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "decoded: hello, gzip!\n");
  ASSERT_EQ(gz.records().size(), 1u);
  EXPECT_NE(gz.records()[0].find("Accept-Encoding: gzip"), std::string::npos) << gz.records()[0];
}

TEST_F(HttpClientTest, RepeatedHeadersAreJoinedAndBytesComeBackExact) {
  // Invalid UTF-8, a NUL in the body, and percent signs httplib's own parser would decode.
  const std::string value = "caf\xc3\xa9 \xff\xfe %41%u0041 %zz";
  const std::string body("\x00\xff\xc3(\r\nend", 8);
  RawServer raw([&](int fd, RawServer&) {
    ReadHead(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nX-Multi: a\r\nx-MULTI: b\r\nX-Bytes: " + value + "\r\nX-Empty:\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body);
  });
  raw.Start();
  auto client = MakeHttpClient();
  HttpResponse r = client->Send({"GET", raw.Url("/"), {}, "", 5000, 5000});
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, body);
  EXPECT_EQ(r.headers.at("x-multi"), "a, b");
  EXPECT_EQ(r.headers.at("x-bytes"), value);
  EXPECT_EQ(r.headers.count("X-Multi"), 0u) << "names are lower-cased";
  // The same, streamed.
  std::map<std::string, std::string> told;
  std::string streamed;
  HttpRequest req{"GET", raw.Url("/"), {}, "", 5000, 5000};
  req.on_head = [&](int, const std::map<std::string, std::string>& headers) { told = headers; };
  req.on_body = [&](const char* data, std::size_t size) {
    streamed.append(data, size);
    return true;
  };
  HttpResponse s = client->Send(req);
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(told, r.headers);
  EXPECT_EQ(streamed, body);
}

// What a peer may not put in a header (RFC 9110 §5.5): a bare CR or a NUL in a value becomes a
// space, so a value taken back (an ETag sent as If-None-Match) cannot carry a line of its own; a
// line whose name is not a token ("Bad Name:", ":empty") is dropped. Found by http_client_fuzz.
TEST_F(HttpClientTest, ABareCrOrNulInAHeaderIsASpaceAndANameThatIsNoTokenIsDropped) {
  RawServer raw([&](int fd, RawServer&) {
    ReadHead(fd);
    SendAll(fd, std::string("HTTP/1.1 200 OK\r\nETag: \"a\rInjected: 1\"\r\nX-Nul: a\0b\r\nBad Name: v\r\n:empty\r\n"
                            "Content-Length: 0\r\n\r\n", 94));
  });
  raw.Start();
  HttpResponse r = MakeHttpClient()->Send({"GET", raw.Url("/"), {}, "", 5000, 5000});
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.headers.at("etag"), "\"a Injected: 1\"");
  EXPECT_EQ(r.headers.at("x-nul"), "a b");
  EXPECT_EQ(r.headers.count("bad name"), 0u);
  EXPECT_EQ(r.headers.count(""), 0u);
  EXPECT_EQ(r.headers.count("injected"), 0u);
}

// No CR or LF reaches the wire from a header or the URL: such a request is refused before it
// connects, so a value a peer supplied cannot add a header or a request of its own.
TEST_F(HttpClientTest, CrOrLfInAHeaderOrTheUrlIsRefusedBeforeAnythingIsSent) {
  RawServer raw([](int fd, RawServer& s) {
    s.Record(ReadHead(fd));
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
  });
  raw.Start();
  auto client = MakeHttpClient();
  const std::vector<HttpRequest> bad = {
      {"GET", raw.Url("/"), {{"X-Token", "a\r\nX-Injected: 1"}}, "", 5000, 5000},
      {"GET", raw.Url("/"), {{"X-Token", "a\nb"}}, "", 5000, 5000},
      {"GET", raw.Url("/"), {{"X-Token", std::string("a\0b", 3)}}, "", 5000, 5000},
      {"GET", raw.Url("/"), {{"X-Bad\r\nX-Injected", "1"}}, "", 5000, 5000},
      {"GET", raw.Url("/"), {{"", "1"}}, "", 5000, 5000},
      {"GET", raw.Url("/x\r\nX-Injected: 1"), {}, "", 5000, 5000},
      {"GET", raw.Url("/x HTTP/1.1\r\n\r\nGET /y"), {}, "", 5000, 5000},
      {"GET", raw.Url("/a b"), {}, "", 5000, 5000},
      {"GET", "http://127.0.0.1\r\n:" + std::to_string(raw.port()) + "/", {}, "", 5000, 5000},
      {"GET\r\nX", raw.Url("/"), {}, "", 5000, 5000},
  };
  for (const HttpRequest& req : bad) {
    HttpResponse r = client->Send(req);
    EXPECT_EQ(r.status, 0) << req.url;
    EXPECT_FALSE(r.error.empty()) << req.url;
  }
  // A good request after them is the first the peer accepted (connections are accepted in order).
  HttpResponse ok = client->Send({"GET", raw.Url("/fine?q=a+b%2Fc"), {}, "", 5000, 5000});
  EXPECT_EQ(ok.body, "ok");
  EXPECT_EQ(raw.accepted(), 1);
  ASSERT_EQ(raw.records().size(), 1u);
  EXPECT_EQ(raw.records()[0].rfind("GET /fine?q=a+b%2Fc HTTP/1.1\r\n", 0), 0u) << raw.records()[0];
}

// The request line carries the URL's path and query as given (httplib's own encoding would turn
// '+' into %2B, and ',' and ';' into escapes), without the fragment; raw UTF-8 is percent-encoded.
TEST_F(HttpClientTest, TheRequestLineAndHostAreWhatTheUrlSays) {
  for (const bool v6 : {false, true}) {
    RawServer raw(
        [](int fd, RawServer& s) {
          s.Record(ReadHead(fd));
          SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        },
        16, v6);
    if (!raw.ok()) continue;  // no IPv6 loopback here
    raw.Start();
    const std::string host = (v6 ? "[::1]:" : "127.0.0.1:") + std::to_string(raw.port());
    auto client = MakeHttpClient();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"/fine;v=1?q=a+b%2Fc,d#fragment", "/fine;v=1?q=a+b%2Fc,d"},
        {"?x=1", "/?x=1"},
        {"", "/"},
        {"/caf\xc3\xa9", "/caf%C3%A9"},
    };
    for (const auto& [path, sent] : cases) {
      HttpResponse r = client->Send({"GET", "http://" + host + path, {}, "", 5000, 5000});
      EXPECT_EQ(r.body, "ok") << path << " " << r.error;
      const std::string head = raw.records().back();
      EXPECT_EQ(head.rfind("GET " + sent + " HTTP/1.1\r\n", 0), 0u) << head;
      EXPECT_EQ(Field(head, "Host"), host) << head;
    }
    // Credentials in the URL become Basic authentication.
    HttpResponse r = client->Send({"GET", "http://alice:s%40cret@" + host + "/", {}, "", 5000, 5000});
    EXPECT_EQ(r.body, "ok") << r.error;
    EXPECT_EQ(Field(raw.records().back(), "Authorization"), "Basic YWxpY2U6c0BjcmV0");  // alice:s@cret
  }
}

// ---------------------------------------------------------------------------------------------
// Hostile peers: each an error with status 0, nothing worse.

TEST_F(HttpClientTest, APeerThatClosesMidBodyIsAnError) {
  RawServer raw([](int fd, RawServer&) {
    ReadHead(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part");
    ::shutdown(fd, SHUT_RDWR);
  });
  raw.Start();
  auto client = MakeHttpClient();
  HttpResponse r = client->Send({"GET", raw.Url("/"), {}, "", 5000, 5000});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("broke off"), std::string::npos) << r.error;
  EXPECT_FALSE(r.timed_out);
}

TEST_F(HttpClientTest, APeerThatAnswersGarbageIsAnError) {
  for (const std::string& garbage : {std::string("SSH-2.0-OpenSSH_9.2p1\r\n"), std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03", 10),
                                     std::string("HTTP/1.1 200 OK\r\n") + std::string(100'000, 'x'),
                                     std::string("HTTP/1.1 200 ") + std::string(100'000, 'x')}) {
    RawServer raw([&](int fd, RawServer& s) {
      ReadHead(fd);
      SendAll(fd, garbage);
      s.WaitForStop(60s);  // and holds the connection: the error must not wait for a timeout
    });
    raw.Start();
    auto client = MakeHttpClient();
    HttpResponse r = client->Send({"GET", raw.Url("/"), {}, "", 20'000, 5000});
    EXPECT_EQ(r.status, 0) << garbage.substr(0, 20);
    EXPECT_FALSE(r.error.empty());
    EXPECT_FALSE(r.timed_out) << r.error;
  }
}

TEST_F(HttpClientTest, APeerThatClosesWithoutAnsweringIsAnError) {
  RawServer raw([](int fd, RawServer&) {
    ReadHead(fd);
    ::shutdown(fd, SHUT_RDWR);
  });
  raw.Start();
  auto client = MakeHttpClient();
  HttpResponse r = client->Send({"GET", raw.Url("/"), {}, "", 5000, 5000});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("closed the connection"), std::string::npos) << r.error;
}

// ---------------------------------------------------------------------------------------------
// TLS: the server's certificate and name are verified against the system's CAs (OpenSSL's
// default paths, so SSL_CERT_FILE / SSL_CERT_DIR as with libcurl).

TEST_F(HttpClientTest, TlsWithATrustedCertificateForTheHostSucceeds) {
  KeyAndCert leaf = MakeLeaf("127.0.0.1", "IP:127.0.0.1,DNS:localhost", ca_, 2);
  TlsServer tls(leaf);
  TrustTestCa();
  auto client = MakeHttpClient();
  for (const std::string host : {"127.0.0.1", "localhost", "LocalHost"}) {
    HttpResponse r = client->Send({"GET", tls.Url(host, "/hello"), {}, "", 5000, 5000});
    EXPECT_EQ(r.error, "") << host;
    EXPECT_EQ(r.status, 200) << host;
    EXPECT_EQ(r.body, "hello tls") << host;
  }
}

TEST_F(HttpClientTest, TlsWithAnUntrustedCertificateFails) {
  KeyAndCert leaf = MakeLeaf("127.0.0.1", "IP:127.0.0.1", ca_, 3);
  TlsServer tls(leaf);
  auto client = MakeHttpClient();  // the test CA is not trusted
  HttpResponse r = client->Send({"GET", tls.Url("127.0.0.1", "/hello"), {}, "", 5000, 5000});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.body, "");
  EXPECT_NE(r.error.find("certificate verification failed for host 127.0.0.1"), std::string::npos) << r.error;
}

TEST_F(HttpClientTest, TlsWithACertificateForAnotherHostFails) {
  TrustTestCa();
  auto client = MakeHttpClient();
  {
    KeyAndCert other = MakeLeaf("other.example", "DNS:other.example", ca_, 4);
    TlsServer tls(other);
    for (const std::string host : {"127.0.0.1", "localhost"}) {
      HttpResponse r = client->Send({"GET", tls.Url(host, "/hello"), {}, "", 5000, 5000});
      EXPECT_EQ(r.status, 0) << host;
      EXPECT_NE(r.error.find("certificate verification failed for host " + host), std::string::npos) << r.error;
    }
  }
  {
    // The address only in the subject's CN, the SANs naming another host: httplib alone would
    // accept it (it falls back to the CN); the name is the SANs' alone.
    KeyAndCert cn_only = MakeLeaf("127.0.0.1", "DNS:other.example", ca_, 5);
    TlsServer tls(cn_only);
    HttpResponse r = client->Send({"GET", tls.Url("127.0.0.1", "/hello"), {}, "", 5000, 5000});
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.error.find("certificate verification failed"), std::string::npos) << r.error;
  }
}

// ---------------------------------------------------------------------------------------------
// Proxies: HttpProxies, by libcurl's rules, and how the daemon reads them from the environment.

// A loopback proxy that records each request's head: CONNECT is tunnelled to the target (on
// loopback), anything else answered "proxied" itself.
class RecordingProxy {
 public:
  RecordingProxy()
      : server_([](int fd, RawServer& s) {
          const std::string head = ReadHead(fd);
          s.Record(head);
          if (head.rfind("CONNECT ", 0) != 0) {
            SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nproxied");
            return;
          }
          const std::string target = head.substr(8, head.find(' ', 8) - 8);
          const int port = std::atoi(target.substr(target.rfind(':') + 1).c_str());
          const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in addr{};
          addr.sin_family = AF_INET;
          addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          addr.sin_port = htons(static_cast<uint16_t>(port));
          if (::connect(up, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
            SendAll(fd, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
            ::close(up);
            return;
          }
          SendAll(fd, "HTTP/1.1 200 Connection established\r\n\r\n");
          char buf[16384];
          for (;;) {
            pollfd p[2] = {{fd, POLLIN, 0}, {up, POLLIN, 0}};
            if (::poll(p, 2, -1) <= 0) break;
            const int from = (p[0].revents != 0) ? fd : up;
            const int to = from == fd ? up : fd;
            const ssize_t n = ::recv(from, buf, sizeof(buf), 0);
            if (n <= 0 || !SendAll(to, std::string(buf, static_cast<std::size_t>(n)))) break;
          }
          ::close(up);
        }) {
    server_.Start();
  }
  std::string Address() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  std::vector<std::string> heads() { return server_.records(); }

 private:
  RawServer server_;
};

TEST_F(HttpClientTest, HttpGoesThroughHttpProxyInAbsoluteForm) {
  RecordingProxy proxy;
  auto client = MakeHttpClient("superagent", {.http_proxy = "http://" + proxy.Address()});
  // The origin's name is never resolved by the client: the proxy is asked for it.
  HttpResponse r = client->Send({"GET", "http://origin.invalid/x?y=1", {}, "", 5000, 5000});
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.body, "proxied");
  ASSERT_EQ(proxy.heads().size(), 1u);
  const std::string head = proxy.heads()[0];
  EXPECT_EQ(head.rfind("GET http://origin.invalid", 0), 0u) << head;
  EXPECT_NE(head.find("/x?y=1 HTTP/1.1\r\n"), std::string::npos) << head;
  EXPECT_EQ(Field(head, "Host"), "origin.invalid");
  EXPECT_EQ(Field(head, "Proxy-Authorization"), "");
}

TEST_F(HttpClientTest, ProxyCredentialsAreSentAsBasicAuth) {
  RecordingProxy proxy;
  // "user" and "p@ss", percent-encoded in the URL; no scheme: http:// is assumed.
  auto client = MakeHttpClient("superagent", {.http_proxy = "us%65r:p%40ss@" + proxy.Address()});
  HttpResponse r = client->Send({"GET", "http://origin.invalid/", {}, "", 5000, 5000});
  EXPECT_EQ(r.body, "proxied") << r.error;
  ASSERT_EQ(proxy.heads().size(), 1u);
  EXPECT_EQ(Field(proxy.heads()[0], "Proxy-Authorization"), "Basic dXNlcjpwQHNz");  // user:p@ss
}

// The daemon's proxies come from app::HttpProxiesFromEnvironment, by libcurl's rules: the
// lower-case name first, an empty variable unset, and HTTP_PROXY never read.
TEST_F(HttpClientTest, HttpProxiesFromEnvironmentFollowsLibcurlsRules) {
  HttpProxies none = app::HttpProxiesFromEnvironment();  // the fixture unset every variable
  EXPECT_EQ(none.http_proxy + none.https_proxy + none.all_proxy + none.no_proxy, "");

  ::setenv("HTTP_PROXY", "http://upper:1", 1);  // httpoxy: a CGI program's "Proxy:" header
  ::setenv("HTTPS_PROXY", "http://upper:2", 1);
  ::setenv("ALL_PROXY", "http://upper:3", 1);
  ::setenv("NO_PROXY", "upper.example", 1);
  HttpProxies upper = app::HttpProxiesFromEnvironment();
  EXPECT_EQ(upper.http_proxy, "");
  EXPECT_EQ(upper.https_proxy, "http://upper:2");
  EXPECT_EQ(upper.all_proxy, "http://upper:3");
  EXPECT_EQ(upper.no_proxy, "upper.example");

  ::setenv("http_proxy", "http://lower:1", 1);
  ::setenv("https_proxy", "http://lower:2", 1);
  ::setenv("all_proxy", "http://lower:3", 1);
  ::setenv("no_proxy", "lower.example", 1);
  HttpProxies lower = app::HttpProxiesFromEnvironment();
  EXPECT_EQ(lower.http_proxy, "http://lower:1");
  EXPECT_EQ(lower.https_proxy, "http://lower:2");
  EXPECT_EQ(lower.all_proxy, "http://lower:3");
  EXPECT_EQ(lower.no_proxy, "lower.example");

  for (const char* name : {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}) ::setenv(name, "", 1);
  HttpProxies empty = app::HttpProxiesFromEnvironment();
  EXPECT_EQ(empty.http_proxy, "");
  EXPECT_EQ(empty.https_proxy, "http://upper:2");
  EXPECT_EQ(empty.all_proxy, "http://upper:3");
  EXPECT_EQ(empty.no_proxy, "upper.example");

  // End to end: a malformed variable fails the request, naming it; it is not skipped.
  ::setenv("ALL_PROXY", "socks5://127.0.0.1:1080", 1);
  HttpResponse r = MakeHttpClient("superagent", app::HttpProxiesFromEnvironment())
                       ->Send({"GET", Url("/hello"), {}, "", 5000, 5000});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("ALL_PROXY"), std::string::npos) << r.error;
}

TEST_F(HttpClientTest, UpperCaseHttpProxyIsIgnoredForHttp) {
  RecordingProxy proxy;
  ::setenv("HTTP_PROXY", ("http://" + proxy.Address()).c_str(), 1);  // httpoxy: a CGI's header
  auto client = MakeHttpClient("superagent", app::HttpProxiesFromEnvironment());
  HttpResponse r = client->Send({"GET", Url("/hello"), {}, "", 5000, 5000});
  EXPECT_EQ(r.body, "hello") << r.error;
  EXPECT_TRUE(proxy.heads().empty());
}

TEST_F(HttpClientTest, AllProxyIsTheFallbackAndNoProxyBypasses) {
  RecordingProxy proxy;
  const std::string all = "http://" + proxy.Address();
  {
    auto client = MakeHttpClient("superagent", {.all_proxy = all});
    EXPECT_EQ(client->Send({"GET", Url("/hello"), {}, "", 5000, 5000}).body, "proxied");
  }
  for (const std::string no_proxy : {"*", "example.com, 127.0.0.1", " .EXAMPLE.com,127.0.0.1:99 "}) {
    auto client = MakeHttpClient("superagent", {.all_proxy = all, .no_proxy = no_proxy});
    HttpResponse r = client->Send({"GET", Url("/hello"), {}, "", 5000, 5000});
    EXPECT_EQ(r.body, "hello") << no_proxy << " " << r.error;
  }
  // Names: with or without a leading dot, any case; a name's tail that is not whole labels
  // ("calhost") does not cover it. (localhost is in /etc/hosts: no DNS is asked.)
  const std::string local = "http://localhost:" + std::to_string(port_) + "/hello";
  for (const auto& [no_proxy, bypassed] : std::vector<std::pair<std::string, bool>>{
           {".localhost", true}, {"LOCALHOST", true}, {"calhost", false}, {"other.example", false}}) {
    auto client = MakeHttpClient("superagent", {.all_proxy = all, .no_proxy = no_proxy});
    HttpResponse r = client->Send({"GET", local, {}, "", 5000, 5000});
    EXPECT_EQ(r.body, bypassed ? "hello" : "proxied") << no_proxy << " " << r.error;
  }
}

TEST_F(HttpClientTest, HttpsGoesThroughTheProxyWithConnect) {
  KeyAndCert leaf = MakeLeaf("127.0.0.1", "IP:127.0.0.1", ca_, 6);
  TlsServer tls(leaf);
  TrustTestCa();
  RecordingProxy proxy;
  const HttpProxies proxies{.http_proxy = "http://127.0.0.1:1",  // not for https
                            .https_proxy = "http://agent:s3cret@" + proxy.Address()};
  auto client = MakeHttpClient("superagent", proxies);
  HttpResponse r = client->Send({"GET", tls.Url("127.0.0.1", "/hello"), {}, "", 5000, 5000});
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.body, "hello tls");
  ASSERT_EQ(proxy.heads().size(), 1u);
  const std::string head = proxy.heads()[0];
  const std::string target = "127.0.0.1:" + std::to_string(tls.port());
  EXPECT_EQ(head.rfind("CONNECT " + target + " HTTP/1.1\r\n", 0), 0u) << head;
  EXPECT_EQ(Field(head, "Host"), target);
  EXPECT_EQ(Field(head, "Proxy-Authorization"), "Basic YWdlbnQ6czNjcmV0");  // agent:s3cret
  // The tunnel's far end still has its certificate checked: untrusted, it fails.
  ::unsetenv("SSL_CERT_FILE");
  HttpResponse untrusted = MakeHttpClient("superagent", proxies)->Send({"GET", tls.Url("127.0.0.1", "/hello"), {}, "", 5000, 5000});
  EXPECT_EQ(untrusted.status, 0);
  EXPECT_NE(untrusted.error.find("certificate verification failed"), std::string::npos) << untrusted.error;
}

TEST_F(HttpClientTest, AProxyThatRefusesConnectIsAnError) {
  RawServer refusing([](int fd, RawServer&) {
    ReadHead(fd);
    SendAll(fd, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n");
  });
  refusing.Start();
  auto client = MakeHttpClient("superagent", {.https_proxy = "127.0.0.1:" + std::to_string(refusing.port())});
  HttpResponse r = client->Send({"GET", "https://origin.invalid/", {}, "", 5000, 5000});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("refused CONNECT to origin.invalid:443: HTTP 407"), std::string::npos) << r.error;
}

// A configured proxy the client cannot use is an error naming its variable, never a bypass: not
// to the origin directly, nor through all_proxy when the scheme's own proxy is the unusable one.
TEST_F(HttpClientTest, AnUnusableProxyIsAnErrorNamingTheVariable) {
  RecordingProxy fallback;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"https_proxy", "https://127.0.0.1:3128"}, {"http_proxy", "socks5://127.0.0.1:1080"},
      {"http_proxy", "http://127.0.0.1:99999"},  {"all_proxy", "http://:3128"},
      {"http_proxy", "http://[::1"},
  };
  for (const auto& [variable, value] : cases) {
    HttpProxies proxies;
    if (variable == "http_proxy") proxies.http_proxy = value;
    if (variable == "https_proxy") proxies.https_proxy = value;
    if (variable == "all_proxy") proxies.all_proxy = value;
    if (variable != "all_proxy") proxies.all_proxy = "http://" + fallback.Address();  // a usable one, not taken
    auto client = MakeHttpClient("superagent", proxies);
    HttpResponse r = client->Send({"GET", variable == "https_proxy" ? "https://127.0.0.1:1/" : Url("/hello"), {}, "", 5000, 5000});
    EXPECT_EQ(r.status, 0) << variable << "=" << value;
    EXPECT_NE(r.error.find(variable), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find(value), std::string::npos) << "the value is not echoed (it may hold a password)";
  }
  EXPECT_TRUE(fallback.heads().empty());
}

}  // namespace
}  // namespace http_client_test
}  // namespace superagent
