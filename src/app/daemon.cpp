#include "app/daemon.h"

#include <signal.h>

#include <chrono>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "app/logging.h"
#include "panel/assets.h"
#include "superagent/eval.h"

namespace superagent::app {

using nlohmann::json;

namespace {

std::filesystem::file_time_type MTime(const std::string& path) {
  std::error_code ec;
  auto t = std::filesystem::last_write_time(path, ec);
  return ec ? std::filesystem::file_time_type{} : t;
}

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

}  // namespace

Daemon::Daemon(Config config) : config_(std::move(config)) {}

Daemon::~Daemon() { Shutdown(); }

Status Daemon::Start() {
  Policy policy = DefaultPolicy();
  std::string origin = "embedded default";
  if (!config_.policy_file.empty()) {
    std::vector<Problem> problems;
    auto loaded = LoadPolicyFile(config_.policy_file, &problems);
    if (!loaded) {
      std::string all;
      for (const Problem& p : problems) all += "\n  " + p.ToString();
      return Status::InvalidArgument("policy has problems:" + all);
    }
    policy = *loaded;
    origin = config_.policy_file;
    policy_mtime_ = MTime(config_.policy_file);
  }

  // Only once the policy is known good is anything created on disk.
  std::error_code ec;
  std::filesystem::create_directories(config_.data_dir, ec);
  if (ec) return Status::IoError("cannot create data_dir " + config_.data_dir + ": " + ec.message());

  EngineOptions options;
  options.eval_timeout_ms = config_.eval.timeout_seconds * 1000LL;
  options.eval_max_attempts = config_.eval.max_attempts;
  const std::string db_path = (std::filesystem::path(config_.data_dir) / "superagent.db").string();
  auto engine = Engine::Open(db_path, SystemClock(), policy, origin, options);
  if (!engine.ok()) return engine.status();
  engine_ = std::move(*engine);
  // The model-backed assessment replaces this once an llm client is wired in.
  assessor_ = std::make_unique<NoModelAssessor>();

  std::string host;
  int port = 0;
  if (!SplitHostPort(config_.panel.listen, &host, &port))
    return Status::InvalidArgument("panel.listen: expected host:port, got \"" + config_.panel.listen + "\"");
  http_ = std::make_unique<httplib::Server>();
  InstallRoutes();
  if (!http_->bind_to_port(host, port))
    return Status::IoError("cannot listen on " + config_.panel.listen + " (is another process using the port?)");
  http_thread_ = std::thread([this] { http_->listen_after_bind(); });
  eval_thread_ = std::thread([this] { EvalLoop(); });
  // Everything the agent says leaves through the outbox. A platform without a Channel keeps its
  // messages pending and raises a system problem instead of dropping them.
  std::vector<Channel*> channels;
  for (auto& c : channels_) channels.push_back(c.get());
  effects_ = std::make_unique<EffectsLoop>(engine_.get(), channels, SystemClock());
  effects_->Start();

  spdlog::info("ready {} {} {} {} {}", Kv("listen", config_.panel.listen), Kv("data_dir", config_.data_dir),
               Kv("policy", origin), Kv("policy_version", engine_->PolicyVersion()),
               Kv("mode", ModeName(engine_->CurrentPolicy().mode)));
  return Status::Ok();
}

void Daemon::InstallRoutes() {
  http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  http_->Get("/api/status", [this](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, engine_->Stats());
  });
  http_->Get("/api/explain", [this](const httplib::Request& req, httplib::Response& res) {
    std::string q = req.get_param_value("q");
    if (q.empty()) return SendJson(res, 400, {{"error", "parameter q (a trigger id or message URL) is required"}});
    auto story = engine_->Explain(q);
    if (!story.ok()) return SendJson(res, 404, {{"error", story.status().message()}});
    SendJson(res, 200, *story);
  });
  http_->Get(R"(/.*)", [](const httplib::Request& req, httplib::Response& res) {
    const panel::Asset* a = panel::FindAsset(req.path);
    if (!a) {
      res.status = 404;
      res.set_content("not found\n", "text/plain");
      return;
    }
    res.set_content(reinterpret_cast<const char*>(a->data), a->size, a->content_type);
  });
}

void Daemon::EvalLoop() {
  while (!stopping_) {
    if (auto expired = engine_->ExpireEvals(); !expired.ok())
      spdlog::error("eval expiry failed {}", Kv("error", expired.status().ToString()));
    while (!stopping_) {
      auto ran = RunOneEval(*engine_, *assessor_);
      if (!ran.ok()) {
        spdlog::error("eval failed {}", Kv("error", ran.status().ToString()));
        break;
      }
      if (!*ran) break;
    }
    std::unique_lock<std::mutex> lock(mu_);
    // Triggers become due on their own schedule (backoff); a short wait bounds the delay.
    wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stopping_.load(); });
  }
}

bool Daemon::ReloadPolicy(const std::string& why) {
  if (config_.policy_file.empty()) {
    spdlog::info("policy reload skipped {} reason=\"no policy_file configured\"", Kv("trigger", why));
    return true;
  }
  policy_mtime_ = MTime(config_.policy_file);
  std::vector<Problem> problems;
  auto loaded = LoadPolicyFile(config_.policy_file, &problems);
  if (!loaded) {
    spdlog::error("policy reload failed {} {} keeping_version={}", Kv("file", config_.policy_file),
                  Kv("problems", static_cast<std::int64_t>(problems.size())), engine_->PolicyVersion());
    for (const Problem& p : problems) spdlog::error("policy problem {}", Kv("at", p.ToString()));
    return false;
  }
  auto change = engine_->ApplyPolicy(*loaded, config_.policy_file);
  if (!change.ok()) {
    spdlog::error("policy reload failed {}", Kv("error", change.status().ToString()));
    return false;
  }
  if (!change->changed) spdlog::info("policy unchanged {} {}", Kv("trigger", why), Kv("version", change->version));
  return true;
}

void Daemon::Run() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  while (true) {
    timespec timeout{1, 0};
    int sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig == SIGINT || sig == SIGTERM) {
      spdlog::info("shutting down {}", Kv("signal", sig == SIGINT ? "SIGINT" : "SIGTERM"));
      return;
    }
    if (sig == SIGHUP) {
      ReloadPolicy("SIGHUP");
      continue;
    }
    // Also pick up edits to policy.yaml without a signal.
    if (!config_.policy_file.empty() && MTime(config_.policy_file) != policy_mtime_) ReloadPolicy("file changed");
  }
}

void Daemon::Shutdown() {
  if (stopping_.exchange(true)) return;
  wake_.notify_all();
  if (effects_) effects_->Stop();
  if (http_) http_->stop();
  if (http_thread_.joinable()) http_thread_.join();
  if (eval_thread_.joinable()) eval_thread_.join();
  engine_.reset();
  spdlog::info("stopped");
}

}  // namespace superagent::app
