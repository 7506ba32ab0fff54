// The model gateway (model_gateway.h): per-turn passes, the budget check, the forward with the
// real key, the relay of a streamed answer, and the usage read from it (as each wire tells it:
// exec/model_wire.h).
//
// Threads: httplib's pool serves the CLIs. Each forwarded call runs its upstream request on a
// thread of its own, which feeds a StreamRelay (stream_relay.h) the serving thread drains — so a streamed answer reaches
// the CLI event by event, as from the API itself. The gateway's destructor abandons every call
// in flight and waits for their threads.
#include "superagent/digest.h"
#include "superagent/model_gateway.h"

#include <httplib.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/model_bridge.h"
#include "exec/model_wire.h"
#include "exec/stream_relay.h"
#include "superagent/engine.h"
#include "superagent/views.h"
#include "superagent/http.h"
#include "superagent/json_read.h"
#include "superagent/metrics.h"
#include "superagent/text.h"

namespace superagent::exec {

using nlohmann::json;

using model_wire::CallUsage;
using model_wire::ErrorBody;
using model_wire::ModelEndpoint;
using model_wire::PathPrefix;
using model_wire::UsageReader;

namespace {


// Passes are kept by their digest, so looking one up takes no time that depends on a secret.
std::string Digest(const std::string& token) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d);
  return std::string(reinterpret_cast<const char*>(d), sizeof d);
}

// One forwarded call: the upstream thread fills it, the serving thread drains it.
struct PassState {
  TicketId ticket = 0;
  SessionId session = 0;
  TimeMs expires = 0;
  std::int64_t refused_budget = 0;
  std::vector<std::weak_ptr<StreamRelay>> relays;  // calls in flight, abandoned at Close
};

class Gateway : public ModelGateway {
 public:
  Gateway(ModelGatewayOptions options, HttpClient* http, Engine* engine, Views* views, Clock* clock)
      : options_(std::move(options)), http_(http), engine_(engine), views_(views), clock_(clock) {
    if (options_.upstream.empty()) options_.upstream = DefaultUpstream(options_.wire);
    while (!options_.upstream.empty() && options_.upstream.back() == '/') options_.upstream.pop_back();
  }

  ~Gateway() override {
    // Calls in flight are abandoned first: a serving thread waits for its upstream call, and the
    // server's pool joins its threads when it stops.
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      for (auto& [digest, pass] : passes_) Abandon(*pass);
      passes_.clear();
    }
    if (unix_fd_ >= 0) {
      ::shutdown(unix_fd_, SHUT_RDWR);  // wakes the accept below
      if (unix_acceptor_.joinable()) unix_acceptor_.join();
      ::close(unix_fd_);
      ::unlink(options_.socket_path.c_str());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : pumped_) ::shutdown(fd, SHUT_RDWR);
    }
    server_.stop();
    if (listener_.joinable()) listener_.join();
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return upstream_threads_ == 0 && pumps_ == 0; });
  }

  Status Listen() {
    server_.new_task_queue = [] { return new httplib::ThreadPool(32); };
    server_.set_payload_max_length(options_.max_request_bytes);
    server_.set_read_timeout(60, 0);
    server_.set_write_timeout(60, 0);
    auto handle = [this](const httplib::Request& req, httplib::Response& res) { Serve(req, res); };
    server_.Post(".*", handle);
    // Clients probe the base URL (Claude Code sends OPTIONS/HEAD); nothing is forwarded for them.
    server_.Options(".*", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.method == "HEAD") {
        res.status = 200;
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.method != "POST" && req.method != "OPTIONS") {
        Refuse(res, 404, "not a model endpoint", &GatewayCounts::refused_path, 0, req.path);
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) return Status::Unavailable("the model gateway could not listen on 127.0.0.1");
    listener_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 10'000 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (!options_.socket_path.empty()) {
      auto fd = ListenUnix(options_.socket_path);
      if (!fd.ok()) return fd.status();
      unix_fd_ = *fd;
      unix_acceptor_ = std::thread([this] { AcceptUnix(); });
    }
    spdlog::info("model gateway listening address=127.0.0.1:{} socket={} wire={} upstream={}", port_,
                 options_.socket_path.empty() ? "-" : options_.socket_path, ModelWireName(options_.wire), options_.upstream);
    return Status::Ok();
  }

  // The unix socket's connections, each carried to the TCP port by a pump of its own.
  void AcceptUnix() {
    for (;;) {
      const int conn = ::accept4(unix_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // shut down
      }
      auto up = ConnectLoopback(port_);
      if (!up.ok()) {
        ::close(conn);
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) {
          ::close(conn);
          ::close(*up);
          continue;
        }
        ++pumps_;
        pumped_.insert(conn);
      }
      std::thread([this, conn, fd = *up] {
        PumpBytes(conn, fd);
        std::lock_guard<std::mutex> lock(mu_);
        pumped_.erase(conn);
        ::close(conn);
        ::close(fd);
        if (--pumps_ == 0) idle_.notify_all();
      }).detach();
    }
  }

  GatewayPass Open(TicketId ticket, SessionId session, TimeMs lifetime_ms) override {
    unsigned char random[32];
    GatewayPass pass;
    if (RAND_bytes(random, sizeof random) != 1) {
      // No randomness, no pass: an empty token matches nothing, so the turn's calls are refused.
      spdlog::error("model gateway: no random bytes for a pass ticket={}", ticket);
    } else {
      pass.token = "sa-pass-" + Base64(std::string_view(reinterpret_cast<const char*>(random), sizeof random), true);
      OPENSSL_cleanse(random, sizeof random);
    }
    pass.base_url = "http://127.0.0.1:" + std::to_string(port_) + PathPrefix(options_.wire);
    auto state = std::make_shared<PassState>();
    state->ticket = ticket;
    state->session = session;
    state->expires = clock_->NowMs() + lifetime_ms;
    std::lock_guard<std::mutex> lock(mu_);
    const TimeMs now = clock_->NowMs();
    for (auto it = passes_.begin(); it != passes_.end();)
      it = it->second->expires <= now ? passes_.erase(it) : std::next(it);
    if (!pass.token.empty()) passes_[Digest(pass.token)] = std::move(state);
    return pass;
  }

  std::int64_t Close(const std::string& token) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = passes_.find(Digest(token));
    if (it == passes_.end()) return 0;
    Abandon(*it->second);
    const std::int64_t refused = it->second->refused_budget;
    passes_.erase(it);
    return refused;
  }

  ModelWire wire() const override { return options_.wire; }
  std::string socket_path() const override { return options_.socket_path; }
  int port() const override { return port_; }
  GatewayCounts counts() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }

 private:
  static void Abandon(PassState& pass) {
    for (auto& weak : pass.relays)
      if (auto relay = weak.lock()) relay->cancel = true;
    pass.relays.clear();
  }

  void Refuse(httplib::Response& res, int status, const std::string& why, std::int64_t GatewayCounts::*counter,
              TicketId ticket, const std::string& path) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++(counts_.*counter);
    }
    metrics::ProcessRuntime().CountGatewayRefusal(counter == &GatewayCounts::refused_pass     ? "pass"
                                                  : counter == &GatewayCounts::refused_budget ? "budget"
                                                  : counter == &GatewayCounts::refused_path   ? "path"
                                                                                              : "upstream");
    spdlog::warn("model gateway refused a call ticket={} status={} path=\"{}\" reason=\"{}\"", ticket, status,
                 text::Cut(text::Repair(path), 120), why);
    res.status = status;
    res.set_content(ErrorBody(options_.wire, status, "superagent: " + why).dump(), "application/json");
  }

  // The pass the request shows, in whichever of the wire's places the client put its key.
  std::string TokenOf(const httplib::Request& req) const {
    std::string token = req.get_header_value("x-api-key");
    if (token.empty()) token = req.get_header_value("x-goog-api-key");
    if (token.empty()) {
      const std::string auth = req.get_header_value("authorization");
      if (auth.size() > 7 && text::AsciiLower(auth.substr(0, 7)) == "bearer ") token = text::Trim(auth.substr(7));
    }
    if (token.empty() && req.has_param("key")) token = req.get_param_value("key");
    return token;
  }

  void Serve(const httplib::Request& req, httplib::Response& res) {
    const std::string prefix = PathPrefix(options_.wire);
    const std::string rest = req.path.rfind(prefix, 0) == 0 ? req.path.substr(prefix.size()) : "";
    if (!ModelEndpoint(options_.wire, rest))
      return Refuse(res, 404, "not a model endpoint of this gateway", &GatewayCounts::refused_path, 0, req.path);

    std::shared_ptr<PassState> pass;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const std::string token = TokenOf(req);
      auto it = token.empty() ? passes_.end() : passes_.find(Digest(token));
      if (!stopping_ && it != passes_.end() && it->second->expires > clock_->NowMs()) pass = it->second;
    }
    if (pass == nullptr)
      return Refuse(res, 401, "no valid pass for the model gateway (a turn's pass is good only while the turn runs)",
                    &GatewayCounts::refused_pass, 0, req.path);

    if (std::string reached = BudgetReached(pass->ticket); !reached.empty()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++pass->refused_budget;
      }
      return Refuse(res, 403, "this Ticket's " + reached + " budget is spent; the person who asked decides whether to go on",
                    &GatewayCounts::refused_budget, pass->ticket, req.path);
    }

    HttpRequest up;
    up.method = "POST";
    up.url = options_.upstream + rest + QueryWithoutKey(req);
    up.body = BodyFor(req.body);
    up.timeout_ms = options_.upstream_timeout_ms;
    for (const char* name : {"content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta"})
      if (req.has_header(name)) up.headers.emplace_back(name, req.get_header_value(name));
    switch (options_.wire) {
      case ModelWire::kAnthropicMessages: up.headers.emplace_back("x-api-key", options_.api_key); break;
      case ModelWire::kOpenAiChat:
      case ModelWire::kOpenAiResponses: up.headers.emplace_back("Authorization", "Bearer " + options_.api_key); break;
      case ModelWire::kGemini: up.headers.emplace_back("x-goog-api-key", options_.api_key); break;
    }

    auto relay = std::make_shared<StreamRelay>();
    up.cancel = &relay->cancel;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counts_.forwarded;
      ++upstream_threads_;
      pass->relays.push_back(relay);
    }
    std::thread([this, relay, pass, up = std::move(up), path = rest]() mutable { Upstream(relay, *pass, std::move(up), path); })
        .detach();

    std::unique_lock<std::mutex> lock(relay->mu);
    relay->cv.wait(lock, [&] { return relay->head || relay->done; });
    if (!relay->head) {
      lock.unlock();
      return Refuse(res, 502, "the model API could not be reached: " + relay->error, &GatewayCounts::upstream_failed,
                    pass->ticket, req.path);
    }
    res.status = relay->status;
    if (!relay->retry_after.empty()) res.set_header("retry-after", relay->retry_after);
    const std::string type = relay->content_type.empty() ? "application/json" : relay->content_type;
    if (text::AsciiLower(type).find("text/event-stream") == 0) {
      lock.unlock();
      StreamRelayed(relay, type, res);
      return;
    }
    relay->cv.wait(lock, [&] { return relay->done; });
    std::string body;
    for (const std::string& c : relay->chunks) body += c;
    // An API's error may quote the key it was given (masked or not): the CLI never sees it.
    if (!options_.api_key.empty())
      for (std::size_t at = body.find(options_.api_key); at != std::string::npos; at = body.find(options_.api_key, at))
        body.replace(at, options_.api_key.size(), "[superagent model key]");
    res.set_content(body, type);
  }

  // The upstream request, on its own thread; records the call's usage when it has ended.
  void Upstream(std::shared_ptr<StreamRelay> relay, PassState& pass, HttpRequest up, const std::string& path) {
    UsageReader reader(options_.wire);
    up.on_head = [&](int status, const std::map<std::string, std::string>& headers) {
      auto type = headers.find("content-type");
      auto retry = headers.find("retry-after");
      reader.Start(type == headers.end() ? "" : type->second);
      std::lock_guard<std::mutex> l(relay->mu);
      relay->head = true;
      relay->status = status;
      relay->content_type = type == headers.end() ? "" : type->second;
      relay->retry_after = retry == headers.end() ? "" : retry->second;
      relay->cv.notify_all();
    };
    up.on_body = [&](const char* p, std::size_t n) {
      reader.Feed(p, n);
      std::lock_guard<std::mutex> l(relay->mu);
      relay->chunks.emplace_back(p, n);
      relay->cv.notify_all();
      return !relay->cancel.load();
    };
    HttpResponse got = http_->Send(up);
    reader.Finish();
    int status = 0;
    bool answered = false;
    {
      std::lock_guard<std::mutex> l(relay->mu);
      status = relay->status;
      answered = relay->head;
      relay->error = got.error.empty() ? (relay->head ? "" : "no answer") : got.error;
      if (!relay->error.empty() && relay->head)
        spdlog::warn("model gateway: the answer broke off ticket={} path={} error=\"{}\"", pass.ticket, path, relay->error);
    }
    // A call the API answered costs what it says, even when the relay broke off after.
    if (status >= 200 && status < 300 && path.find("count_tokens") == std::string::npos &&
        path.find(":countTokens") == std::string::npos)
      Record(pass, reader.usage());
    {
      std::lock_guard<std::mutex> l(relay->mu);
      relay->done = true;
      relay->cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu_);
    // No answer at all is counted where it is refused (Serve's 502); here, an answer broken off.
    if (answered && !got.error.empty() && !got.cancelled) ++counts_.upstream_failed;
    if (--upstream_threads_ == 0) idle_.notify_all();
  }

  void Record(const PassState& pass, const CallUsage& u) {
    json usage = {{"model", u.model},
                  {"purpose", "worker"},
                  {"calls", 1},
                  {"prompt_tokens", u.input},
                  {"completion_tokens", u.output},
                  {"total_tokens", u.input + u.output}};
    if (u.cached > 0) usage["cache_hit_tokens"] = u.cached;
    if (options_.usd_per_million_input > 0 || options_.usd_per_million_output > 0)
      usage["cost_usd"] = (static_cast<double>(u.input) * options_.usd_per_million_input +
                           static_cast<double>(u.output) * options_.usd_per_million_output) / 1e6;
    if (!u.seen) spdlog::warn("model gateway: the answer carried no usage ticket={} wire={}", pass.ticket,
                              ModelWireName(options_.wire));
    metrics::ProcessRuntime().AddModelUsage("worker", u.input, u.output, u.cached);
    if (Status s = engine_->RecordTokenUsage(pass.ticket, pass.session, usage); !s.ok())
      spdlog::error("model gateway: usage not recorded ticket={} tokens={} error=\"{}\"", pass.ticket,
                    u.input + u.output, s.message());
  }

  // The first budget dimension the Ticket has spent that stops a model call; "" when none (or
  // when the budget cannot be read: the scheduler's own check still stops the turn).
  std::string BudgetReached(TicketId ticket) {
    auto budget = views_->BudgetOf(ticket, clock_->NowMs());
    if (!budget.ok()) {
      spdlog::warn("model gateway: budget not read ticket={} error=\"{}\"", ticket, budget.status().message());
      return "";
    }
    if (!budget->has_value()) return "";
    const std::string& reached = (*budget)->reached;
    return reached == "turns" ? "" : reached;  // the turn that runs may finish: turns stop the next
  }

  // Gemini's clients may also put the key in the query; it does not travel on.
  static std::string QueryWithoutKey(const httplib::Request& req) {
    std::string q;
    for (const auto& [name, value] : req.params) {
      if (name == "key") continue;
      q += (q.empty() ? "?" : "&") + httplib::detail::encode_query_param(name) + "=" +
           httplib::detail::encode_query_param(value);
    }
    return q;
  }

  // A streamed Chat Completions call reports its usage only when asked (stream_options): the
  // gateway asks, so every call is counted. Clients ignore the extra usage-only chunk.
  std::string BodyFor(const std::string& body) const {
    if (options_.wire != ModelWire::kOpenAiChat) return body;
    json j = json::parse(body, nullptr, false);
    if (!j.is_object()) return body;
    const json* stream = json_read::Find(j, "stream");
    if (stream == nullptr || !stream->is_boolean() || !stream->get<bool>()) return body;
    if (!j.contains("stream_options") || !j["stream_options"].is_object()) j["stream_options"] = json::object();
    j["stream_options"]["include_usage"] = true;
    return j.dump();
  }

  ModelGatewayOptions options_;
  HttpClient* http_;
  Engine* engine_;
  Views* views_;
  Clock* clock_;
  httplib::Server server_;
  std::thread listener_;
  int port_ = 0;
  int unix_fd_ = -1;
  std::thread unix_acceptor_;

  mutable std::mutex mu_;
  std::condition_variable idle_;
  int upstream_threads_ = 0;
  int pumps_ = 0;
  std::set<int> pumped_;  // the unix side of each pump, shut down when the gateway stops
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<PassState>> passes_;  // by Digest(token)
  GatewayCounts counts_;
};

}  // namespace

Result<std::unique_ptr<ModelGateway>> ModelGateway::Start(ModelGatewayOptions options, HttpClient* http, Engine* engine, Views* views,
                                                          Clock* clock) {
  auto gateway = std::make_unique<Gateway>(std::move(options), http, engine, views, clock);
  RETURN_IF_ERROR(gateway->Listen());
  return std::unique_ptr<ModelGateway>(std::move(gateway));
}

}  // namespace superagent::exec