// The daemon's wiring of the Feishu Source, Channel and realtime path from config.
#include <spdlog/spdlog.h>

#include "superagent/feishu.h"

namespace superagent::feishu {

SourceOptions SourceOptionsFromConfig(const Config& config) {
  SourceOptions o;
  o.encrypt_key = ResolveSecret(config.feishu.encrypt_key_env);
  o.verification_token = ResolveSecret(config.feishu.verification_token_env);
  o.poll_interval_ms = static_cast<TimeMs>(config.feishu.poll_interval_seconds) * 1000;
  return o;
}

Integration::~Integration() { Stop(); }

Result<std::unique_ptr<Integration>> Integration::Create(const Config& config, Engine* engine, Clock* clock,
                                                         std::unique_ptr<HttpClient> http) {
  if (!config.feishu.enabled) return Status::InvalidArgument("feishu.enabled is false: the Feishu Source is disabled");
  ClientOptions co;
  co.api_url = config.feishu.api_url;
  co.app_id = ResolveSecret(config.feishu.app_id_env);
  co.app_secret = ResolveSecret(config.feishu.app_secret_env);
  if (co.app_id.empty())
    return Status::InvalidArgument("feishu.app_id_env: environment variable " + config.feishu.app_id_env + " is not set");
  if (co.app_secret.empty())
    return Status::InvalidArgument("feishu.app_secret_env: environment variable " + config.feishu.app_secret_env +
                                   " is not set");
  std::unique_ptr<Integration> f(new Integration());
  f->http_ = http ? std::move(http) : MakeCurlHttpClient("superagent/" SUPERAGENT_VERSION);
  f->write_client_ = std::make_unique<Client>(f->http_.get(), clock, co);
  co.cancel = &f->stopping_;
  f->read_client_ = std::make_unique<Client>(f->http_.get(), clock, co);
  f->source_ = std::make_unique<Source>(engine, f->read_client_.get(), clock, SourceOptionsFromConfig(config));
  f->channel_ = std::make_unique<FeishuChannel>(f->write_client_.get(), clock);
  if (config.feishu.realtime == "long_connection")
    f->ws_ = std::make_unique<LongConnection>(f->read_client_.get(), f->source_.get());
  return f;
}

void Integration::Start() {
  source_->Start();
  if (ws_) ws_->Start();
}

void Integration::Stop() {
  stopping_ = true;
  if (ws_) ws_->Stop();
  if (source_) source_->Stop();
}

}  // namespace superagent::feishu
