// The daemon's worker listener (workers.listen, issue 36): the WorkerPool's calls over HTTP for
// `superagent worker` processes on other machines, the join that turns the team's join token into
// a per-worker credential, and the model gateway's endpoints for the CLIs those workers run.
//
// A worker is a stranger that once knew the join token. Everything it sends is parsed by the
// wire's parsers (worker_wire.cpp), sized before it is read, and checked against the credential
// it presents: a worker acts only as itself, and the pool decides what its leases allow.
#include <spdlog/spdlog.h>

#include <openssl/crypto.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "exec/stream_relay.h"
#include "net/connection_pool.h"
#include "superagent/digest.h"
#include "superagent/http.h"
#include "superagent/host_port.h"
#include "superagent/text.h"
#include "superagent/worker_pool.h"

namespace superagent::exec {

using nlohmann::json;

namespace {

constexpr std::size_t kWorkerSmallBody = 64u << 10;  // join, claim, heartbeat
constexpr std::size_t kWorkerEventsBody = kMaxEventsPerProgress * kMaxEventBytes + (64u << 10);
constexpr std::size_t kWorkerModelBody = 32u << 20;  // the gateway's own limit
constexpr const char* kWorkerApiPrefix = "/workers/v1/";
constexpr const char* kWorkerModelPrefix = "/workers/v1/model";

// The largest body `path` takes; the return's is the bundle's limit in base64 and its JSON.
std::size_t WorkerBodyLimit(const std::string& path, std::uint64_t max_bundle_bytes) {
  if (path == "/workers/v1/return") return static_cast<std::size_t>(max_bundle_bytes / 3 * 4 + (1u << 20));
  if (path == "/workers/v1/events") return kWorkerEventsBody;
  if (path.rfind(kWorkerModelPrefix, 0) == 0) return kWorkerModelBody;
  return kWorkerSmallBody;
}

void WorkerReply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void WorkerRefuse(httplib::Response& res, int status, const std::string& why) { WorkerReply(res, status, {{"error", why}}); }

class WorkerServerImpl : public WorkerServer {
 public:
  WorkerServerImpl(WorkerServerOptions options, WorkerPool* pool, HttpClient* http)
      : options_(std::move(options)), pool_(pool), http_(http) {}

  ~WorkerServerImpl() override {
    stopping_ = true;
    if (server_) server_->stop();
    if (listener_.joinable()) listener_.join();
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return relays_ == 0; });
  }

  Status Start() {
    // Anyone who guesses the token can join: it must be long enough not to be guessed.
    if (!options_.join_token.empty() && options_.join_token.size() < kMinJoinTokenBytes)
      return Status::InvalidArgument("workers.join_token_env: the join token has " +
                                     std::to_string(options_.join_token.size()) + " characters; give it at least " +
                                     std::to_string(kMinJoinTokenBytes) +
                                     " random ones (e.g. `openssl rand -hex 32`): whoever guesses it can join");
    if (options_.tls_cert_file.empty() != options_.tls_key_file.empty())
      return Status::InvalidArgument("workers.tls_cert_file and workers.tls_key_file go together: set both or neither");
    if (options_.tls_cert_file.empty()) {
      server_ = std::make_unique<httplib::Server>();
    } else {
      auto tls = std::make_unique<httplib::SSLServer>(options_.tls_cert_file.c_str(), options_.tls_key_file.c_str());
      if (!tls->is_valid())
        return Status::InvalidArgument("workers.tls_cert_file / tls_key_file: " + options_.tls_cert_file + " and " +
                                       options_.tls_key_file +
                                       " are not a readable PEM certificate (chain) and its private key");
      server_ = std::move(tls);
    }
    server_->new_task_queue = [this] { return new net::ConnectionPool(options_.max_connections); };
    server_->set_read_timeout(10, 0);
    server_->set_write_timeout(10, 0);
    // One request per connection: a body refused unread is never taken for the next request.
    server_->set_keep_alive_max_count(1);
    server_->set_payload_max_length(WorkerBodyLimit("/workers/v1/return", options_.max_bundle_bytes));
    server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.path.rfind(kWorkerApiPrefix, 0) != 0) {
        WorkerRefuse(res, 404, "not a worker endpoint");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.path.rfind(kWorkerModelPrefix, 0) == 0 && (req.method == "HEAD" || req.method == "OPTIONS")) {
        res.status = req.method == "HEAD" ? 200 : 204;  // a CLI probing its base URL (as the gateway answers)
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.method != "POST") {
        WorkerRefuse(res, 405, "worker endpoints take POST");
        return httplib::Server::HandlerResponse::Handled;
      }
      // Sized before the body is read: httplib reads a body without a length until the peer closes.
      const std::size_t limit = WorkerBodyLimit(req.path, options_.max_bundle_bytes);
      if (!req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
        WorkerRefuse(res, 411, "send the body with a Content-Length (at most " + std::to_string(limit) + " bytes here)");
        return httplib::Server::HandlerResponse::Handled;
      }
      const std::string length = req.get_header_value("Content-Length");
      if (length.empty() || length.size() > 19 || length.find_first_not_of("0123456789") != std::string::npos ||
          std::stoull(length) > limit) {
        WorkerRefuse(res, 413, "this route takes at most " + std::to_string(limit) + " bytes");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server_->Post("/workers/v1/join", [this](const httplib::Request& req, httplib::Response& res) { Join(req, res); });
    server_->Post("/workers/v1/claim", [this](const httplib::Request& req, httplib::Response& res) { Claim(req, res); });
    server_->Post("/workers/v1/heartbeat",
                 [this](const httplib::Request& req, httplib::Response& res) { Heartbeat(req, res); });
    server_->Post("/workers/v1/events", [this](const httplib::Request& req, httplib::Response& res) { Events(req, res); });
    server_->Post("/workers/v1/return", [this](const httplib::Request& req, httplib::Response& res) { Return(req, res); });
    server_->Post("/workers/v1/model/.*", [this](const httplib::Request& req, httplib::Response& res) { Model(req, res); });

    std::string host;
    int port = 0;
    const std::string& listen = options_.listen;
    const std::size_t colon = listen.rfind(':');
    if (colon != std::string::npos && listen.substr(colon) == ":0") {
      host = listen.substr(0, colon);
      if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
      port_ = server_->bind_to_any_port(host);
    } else if (SplitHostPort(listen, &host, &port)) {
      port_ = server_->bind_to_port(host, port) ? port : -1;
    } else {
      return Status::InvalidArgument("workers.listen: expected host:port, got \"" + listen + "\"");
    }
    if (port_ <= 0) return Status::Unavailable("the worker listener could not listen on " + listen);
    // A whole pool reconnects at once after a restart: queue them rather than drop them.
    if (!net::WidenListenBacklog(port_, 1024)) spdlog::warn("worker listener: its listen queue stays at 5");
    listener_ = std::thread([this] { server_->listen_after_bind(); });
    // A stop() before the loop runs would be lost and the destructor's join would hang.
    for (int i = 0; i < 10'000 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
    spdlog::info("worker listener listening address={}:{} tls={} joins={}", host, port_,
                 options_.tls_cert_file.empty() ? "off (put TLS in front of it)" : "on",
                 options_.join_token.empty() ? "refused (no join token set)" : "open to the join token");
    return Status::Ok();
  }

  int port() const override { return port_; }

  bool Revoke(const std::string& worker) override {
    bool had = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = credentials_.begin(); it != credentials_.end();) {
        if (it->second == worker) {
          it = credentials_.erase(it);
          had = true;
        } else {
          ++it;
        }
      }
    }
    const bool leased = pool_->Revoke(worker);
    if (had) spdlog::warn("worker credential revoked worker={}", worker);
    return had || leased;
  }

  std::vector<std::string> Joined() const override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> names;
    for (const auto& [digest, name] : credentials_) names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  static json Body(const httplib::Request& req) { return json::parse(req.body, nullptr, false); }

  // The worker whose credential the request carries; "" (and a 401 written) when none is valid.
  std::string Authenticated(const httplib::Request& req, httplib::Response& res) {
    const std::string auth = req.get_header_value("Authorization");
    std::string credential;
    if (auth.size() > 7 && text::AsciiLower(auth.substr(0, 7)) == "bearer ") credential = text::Trim(auth.substr(7));
    if (!credential.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = credentials_.find(Sha256Hex(credential)); it != credentials_.end()) return it->second;
    }
    WorkerRefuse(res, 401, "no valid worker credential: join again with the join token");
    return "";
  }

  // The request's worker must be the credential's: a worker acts only as itself.
  static bool SameWorker(const std::string& named, const std::string& credential_of, httplib::Response& res) {
    if (named == credential_of) return true;
    WorkerRefuse(res, 403, "this credential is worker \"" + credential_of + "\"'s, not \"" + named + "\"'s");
    return false;
  }

  void Join(const httplib::Request& req, httplib::Response& res) {
    auto join = ParseJoin(Body(req));
    if (!join.ok()) return WorkerRefuse(res, 400, join.status().message());
    const std::string& want = options_.join_token;
    const bool good = !want.empty() && join->join_token.size() == want.size() &&
                      CRYPTO_memcmp(join->join_token.data(), want.data(), want.size()) == 0;
    if (!good) {
      spdlog::warn("worker join refused worker={} address={}: wrong join token", join->worker, req.remote_addr);
      return WorkerRefuse(res, 401, "the join token is not this daemon's");
    }
    const std::string random = RandomHex(32);
    if (random.empty()) return WorkerRefuse(res, 503, "no random bytes for a credential");
    const std::string credential = "sa-worker-" + random;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // A worker joining again (restarted) replaces its old credential, which dies here.
      for (auto it = credentials_.begin(); it != credentials_.end();)
        it = it->second == join->worker ? credentials_.erase(it) : std::next(it);
      credentials_[Sha256Hex(credential)] = join->worker;
    }
    spdlog::info("worker joined worker={} address={}", join->worker, req.remote_addr);
    WorkerReply(res, 200,
          {{"worker", join->worker},
           {"credential", credential},
           {"lease_ms", pool_->lease_ms()},
           {"claim_wait_ms", options_.claim_wait_ms}});
  }

  void Claim(const httplib::Request& req, httplib::Response& res) {
    const std::string worker = Authenticated(req, res);
    if (worker.empty()) return;
    auto a = ParseAnnouncement(Body(req));
    if (!a.ok()) return WorkerRefuse(res, 400, a.status().message());
    if (!SameWorker(a->worker, worker, res)) return;
    pool_->Announce(worker, a->executors, a->slots);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.claim_wait_ms);
    for (;;) {
      auto lease = pool_->Claim(worker);
      if (!lease.ok()) return WorkerRefuse(res, 409, lease.status().message());
      if (lease->has_value()) return WorkerReply(res, 200, {{"lease", LeaseToJson(**lease)}});
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || stopping_) return WorkerReply(res, 200, {{"lease", nullptr}});
      pool_->WaitForWork(std::min<TimeMs>(left.count(), 1000));
      pool_->Announce(worker, a->executors, a->slots);  // still here: seen while it waits
    }
  }

  void Heartbeat(const httplib::Request& req, httplib::Response& res) {
    const std::string worker = Authenticated(req, res);
    if (worker.empty()) return;
    auto ref = ParseLeaseRef(Body(req));
    if (!ref.ok()) return WorkerRefuse(res, 400, ref.status().message());
    if (!SameWorker(ref->worker, worker, res)) return;
    WorkerReply(res, 200, {{"state", LeaseStateName(pool_->Heartbeat(worker, ref->lease))}});
  }

  void Events(const httplib::Request& req, httplib::Response& res) {
    const std::string worker = Authenticated(req, res);
    if (worker.empty()) return;
    auto progress = ParseProgress(Body(req));
    if (!progress.ok()) return WorkerRefuse(res, 400, progress.status().message());
    if (!SameWorker(progress->first.worker, worker, res)) return;
    const LeaseState state = pool_->Progress(worker, progress->first.lease, std::move(progress->second));
    WorkerReply(res, 200, {{"state", LeaseStateName(state)}});
  }

  void Return(const httplib::Request& req, httplib::Response& res) {
    const std::string worker = Authenticated(req, res);
    if (worker.empty()) return;
    auto r = ParseTurnReturn(Body(req), options_.max_bundle_bytes);
    if (!r.ok()) return WorkerRefuse(res, 400, r.status().message());
    if (!SameWorker(r->first.worker, worker, res)) return;
    if (Status s = pool_->Return(worker, r->first.lease, std::move(r->second)); !s.ok())
      return WorkerRefuse(res, 409, s.message());
    WorkerReply(res, 200, {{"ok", true}});
  }

  // A CLI's model call: relayed to the gateway, which checks the turn's pass (the CLI's key) and
  // the budget and holds the real key. No worker credential here: the CLI does not have one.
  void Model(const httplib::Request& req, httplib::Response& res) {
    if (options_.gateway_port <= 0) return WorkerRefuse(res, 404, "this daemon's workers run no coding CLI");
    auto relay = std::make_shared<StreamRelay>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++relays_;
    }
    std::string path = req.path.substr(std::string(kWorkerModelPrefix).size());
    std::string query;
    for (const auto& [k, v] : req.params)
      query += (query.empty() ? "?" : "&") + httplib::detail::encode_query_param(k) + "=" +
               httplib::detail::encode_query_param(v);
    HttpRequest up;
    up.method = "POST";
    up.url = "http://127.0.0.1:" + std::to_string(options_.gateway_port) + path + query;
    up.body = req.body;
    up.timeout_ms = 20 * 60 * 1000;
    up.connect_timeout_ms = 5'000;
    up.cancel = &relay->cancel;
    for (const auto& [k, v] : req.headers) {
      const std::string name = text::AsciiLower(k);
      if (name == "host" || name == "content-length" || name == "connection" || name == "transfer-encoding" ||
          name == "accept-encoding" || name.rfind("remote_", 0) == 0 || name.rfind("local_", 0) == 0)
        continue;
      up.headers.emplace_back(k, v);
    }
    up.on_head = [relay](int status, const std::map<std::string, std::string>& headers) {
      std::lock_guard<std::mutex> l(relay->mu);
      relay->head = true;
      relay->status = status;
      if (auto t = headers.find("content-type"); t != headers.end()) relay->content_type = t->second;
      if (auto r = headers.find("retry-after"); r != headers.end()) relay->retry_after = r->second;
      relay->cv.notify_all();
    };
    up.on_body = [relay](const char* data, std::size_t n) {
      std::lock_guard<std::mutex> l(relay->mu);
      relay->chunks.emplace_back(data, n);
      relay->cv.notify_all();
      return !relay->cancel.load();
    };
    std::thread([this, relay, up = std::move(up)]() mutable {
      http_->Send(up);
      {
        std::lock_guard<std::mutex> l(relay->mu);
        relay->done = true;
        relay->cv.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (--relays_ == 0) idle_.notify_all();
    }).detach();
    std::unique_lock<std::mutex> lock(relay->mu);
    relay->cv.wait(lock, [&] { return relay->head || relay->done; });
    if (!relay->head) return WorkerRefuse(res, 502, "the model gateway could not be reached");
    res.status = relay->status;
    if (!relay->retry_after.empty()) res.set_header("retry-after", relay->retry_after);
    const std::string content_type = relay->content_type.empty() ? "application/json" : relay->content_type;
    lock.unlock();
    StreamRelayed(relay, content_type, res);
  }

  const WorkerServerOptions options_;
  WorkerPool* const pool_;
  HttpClient* const http_;
  std::unique_ptr<httplib::Server> server_;  // an SSLServer with workers.tls_cert_file
  std::thread listener_;
  int port_ = -1;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::condition_variable idle_;
  int relays_ = 0;
  std::map<std::string, std::string> credentials_;  // SHA-256 of a credential (hex) -> its worker
};

}  // namespace

Result<std::unique_ptr<WorkerServer>> WorkerServer::Start(WorkerServerOptions options, WorkerPool* pool,
                                                          HttpClient* http) {
  if (options.gateway_port > 0 && http == nullptr) return Status::InvalidArgument("the model relay needs an HTTP client");
  auto server = std::make_unique<WorkerServerImpl>(std::move(options), pool, http);
  if (Status s = server->Start(); !s.ok()) return s;
  return std::unique_ptr<WorkerServer>(std::move(server));
}

}  // namespace superagent::exec
