// The Feishu Source, Channel and realtime path built together, as the daemon runs them.
#include <spdlog/spdlog.h>

#include "superagent/feishu.h"
#include "sources/feishu/source.h"
#include "superagent/views.h"

namespace superagent::feishu {

Integration::~Integration() { Stop(); }

Result<std::unique_ptr<Integration>> Integration::Create(IntegrationOptions options, Engine* engine, Views* views, Clock* clock,
                                                         std::unique_ptr<HttpClient> http) {
  ClientOptions co = std::move(options.client);
  if (co.app_id.empty()) return Status::InvalidArgument("the Feishu Source needs an app id");
  if (co.app_secret.empty()) return Status::InvalidArgument("the Feishu Source needs an app secret");
  std::unique_ptr<Integration> f(new Integration());
  f->http_ = http ? std::move(http) : MakeHttpClient("superagent/" SUPERAGENT_VERSION);
  f->write_client_ = std::make_unique<Client>(f->http_.get(), clock, co);
  co.cancel = &f->stopping_;
  f->read_client_ = std::make_unique<Client>(f->http_.get(), clock, co);
  f->source_ = std::make_unique<Source>(engine, views, f->read_client_.get(), clock, std::move(options.source));
  std::string install_id;  // none without an Engine (config checks build the Integration alone)
  if (views) {
    auto id = views->InstallId();
    if (!id.ok()) return id.status();
    install_id = *id;
  }
  f->channel_ = std::make_unique<FeishuChannel>(f->write_client_.get(), clock, kChatWordLimit, 5, install_id);
  if (options.long_connection)
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
