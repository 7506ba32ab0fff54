// The GitHub Source and Channel built together, as the daemon runs them.
#include "superagent/github.h"
#include "superagent/views.h"

namespace superagent::github {

Integration::~Integration() {
  if (source_) source_->Stop();
}

Result<std::unique_ptr<Integration>> Integration::Create(IntegrationOptions options, Engine* engine, Views* views, Clock* clock,
                                                         std::unique_ptr<HttpClient> http) {
  if (options.source.repo.empty()) return Status::InvalidArgument("no repository: the GitHub Source is disabled");
  if (options.client.token.empty() && !options.client.token_source)
    return Status::InvalidArgument("the GitHub Source needs a token or a GitHub App");
  std::unique_ptr<Integration> g(new Integration());
  g->http_ = http ? std::move(http) : MakeHttpClient("superagent/" SUPERAGENT_VERSION);
  ClientOptions co = std::move(options.client);
  co.user_agent = "superagent/" SUPERAGENT_VERSION;
  const std::string repo = options.source.repo;
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
  // Who may approve a merge, asked with the agent's token (it needs push access to ask) and
  // asked again each polling round, so a permission taken away counts from the next round on.
  g->permissions_ = std::make_unique<CollaboratorPermissions>(g->write_client_.get(), repo);
  SourceOptions source_options = std::move(options.source);
  source_options.round_started = [permissions = g->permissions_.get(), then = std::move(source_options.round_started)] {
    permissions->NewRound();
    if (then) then();
  };
  g->source_ = std::make_unique<Source>(engine, views, g->poll_client_.get(), clock, std::move(source_options));
  ChannelOptions channel_options;
  channel_options.permissions = g->permissions_.get();
  // As the Source knows it: learnt in its first round, or github.bot_login, which that round adopts.
  channel_options.agent_login = [source = g->source_.get()] {
    std::string login = source->BotLogin();
    return login.empty() ? source->options().bot_login : login;
  };
  channel_options.ui_path = options.ui_path;
  if (views) {  // none without a store (config checks build the Integration alone)
    auto install_id = views->InstallId();
    if (!install_id.ok()) return install_id.status();
    channel_options.install_id = *install_id;
  }
  channel_options.merge_as_agent = options.merge_as_agent;
  channel_options.pull_request_origin = options.pull_request_origin;
  if (!options.merge_token.empty()) {
    // Auto-merge's own account (SPEC §6): a person's or merge bot's token, never the poller's.
    co.token = options.merge_token;
    co.token_source = nullptr;  // never the App's installation token: auto-merge is a person's act
    co.token_rejected = nullptr;
    co.cancel = nullptr;
    g->merge_client_ = std::make_unique<Client>(g->http_.get(), clock, [](TimeMs) {}, co);
    channel_options.merge_client = g->merge_client_.get();
  }
  g->channel_ = std::make_unique<GitHubChannel>(g->write_client_.get(), repo, channel_options);
  return g;
}

}  // namespace superagent::github
