// The daemon's one-stop wiring of the GitHub Source and Channel from config.
#include "superagent/github.h"

namespace superagent::github {

SourceOptions SourceOptionsFromConfig(const Config& config) {
  SourceOptions o;
  o.repo = config.github.repo;
  o.bot_login = config.github.bot_login;
  o.webhook_secret = ResolveSecret(config.github.webhook_secret_env);
  o.poll_interval_ms = static_cast<TimeMs>(config.github.poll_interval_seconds) * 1000;
  o.read_issues = config.github.read.issues;
  o.read_pulls = config.github.read.pulls;
  o.read_comments = config.github.read.comments;
  o.read_ci = config.github.read.ci;
  return o;
}

Integration::~Integration() {
  if (source_) source_->Stop();
}

Result<std::unique_ptr<Integration>> Integration::Create(const Config& config, Engine* engine, Clock* clock,
                                                         std::unique_ptr<HttpClient> http) {
  if (config.github.repo.empty()) return Status::InvalidArgument("github.repo is empty: the GitHub Source is disabled");
  const std::string token = ResolveSecret(config.github.token_env);
  if (token.empty())
    return Status::InvalidArgument("github.token_env: environment variable " + config.github.token_env +
                                   " is not set (the GitHub Source needs a token: a classic PAT with repo and "
                                   "notifications scopes)");
  std::unique_ptr<Integration> g(new Integration());
  g->http_ = http ? std::move(http) : MakeCurlHttpClient("superagent/" SUPERAGENT_VERSION);
  ClientOptions co;
  co.api_url = config.github.api_url;
  co.token = token;
  co.user_agent = "superagent/" SUPERAGENT_VERSION;
  SourceOptions so = SourceOptionsFromConfig(config);
  // The poller's client sleeps through short rate-limit waits, cut short on Stop(); the writer's
  // never sleeps: it hands the wait back to the Effects loop as a retry time.
  Integration* self = g.get();
  g->write_client_ = std::make_unique<Client>(g->http_.get(), clock, [](TimeMs) {}, co);
  co.cancel = &g->stopping_;
  g->poll_client_ = std::make_unique<Client>(
      g->http_.get(), clock,
      [self](TimeMs ms) {
        if (self->source_) self->source_->InterruptibleSleep(ms);
      },
      co);
  g->source_ = std::make_unique<Source>(engine, g->poll_client_.get(), clock, so);
  g->channel_ = std::make_unique<GitHubChannel>(g->write_client_.get(), config.github.repo);
  return g;
}

}  // namespace superagent::github
