// The GitHub Sources and Channels built together, as the daemon runs them: one of each per
// repository served (issue 37), over one HTTP client and one agent identity.
#include <spdlog/spdlog.h>

#include <set>

#include "sources/github/normalize_internal.h"
#include "sources/github/source_internal.h"
#include "superagent/github.h"
#include "superagent/github_threads.h"
#include "superagent/json_read.h"
#include "superagent/text.h"
#include "superagent/views.h"

namespace superagent::github {

using nlohmann::json;

Integration::~Integration() { Stop(); }

Result<std::unique_ptr<Integration>> Integration::Create(IntegrationOptions options, Engine* engine, Views* views, Clock* clock,
                                                         std::unique_ptr<HttpClient> http) {
  std::vector<std::string> repos = options.repos;
  if (repos.empty() && !options.source.repo.empty()) repos.push_back(options.source.repo);
  if (repos.empty()) return Status::InvalidArgument("no repository: the GitHub Source is disabled");
  std::set<std::string> seen;
  for (const std::string& repo : repos) {
    if (!github_threads::IsRepositoryName(repo))
      return Status::InvalidArgument("\"" + text::Cut(repo, 120) + "\" is not a GitHub repository (owner/name)");
    if (!seen.insert(github_threads::Canonical(repo)).second)
      return Status::InvalidArgument("repository " + repo + " is listed twice");
  }
  if (options.client.token.empty() && !options.client.token_source)
    return Status::InvalidArgument("the GitHub Source needs a token or a GitHub App");
  std::unique_ptr<Integration> g(new Integration());
  g->http_ = http ? std::move(http) : MakeHttpClient("superagent/" SUPERAGENT_VERSION);
  g->webhook_secret_ = options.source.webhook_secret;
  ClientOptions co = std::move(options.client);
  co.user_agent = "superagent/" SUPERAGENT_VERSION;
  // The writer's client never sleeps: it hands a rate-limit wait back to the Effects loop as a
  // retry time. Each repository's poller has a client of its own below, which sleeps through
  // short waits, cut short on Stop().
  g->write_client_ = std::make_unique<Client>(g->http_.get(), clock, [](TimeMs) {}, co);
  ChannelOptions channel_options;
  if (views) {  // none without a store (config checks build the Integration alone)
    auto install_id = views->InstallId();
    if (!install_id.ok()) return install_id.status();
    channel_options.install_id = *install_id;
  }
  channel_options.merge_as_agent = options.merge_as_agent;
  channel_options.pull_request_origin = options.pull_request_origin;
  channel_options.ui_path = options.ui_path;
  if (!options.merge_token.empty()) {
    // Auto-merge's own account (SPEC §6): a person's or merge bot's token, never the poller's.
    ClientOptions mo = co;
    mo.token = options.merge_token;
    mo.token_source = nullptr;  // never the App's installation token: auto-merge is a person's act
    mo.token_rejected = nullptr;
    mo.cancel = nullptr;
    g->merge_client_ = std::make_unique<Client>(g->http_.get(), clock, [](TimeMs) {}, mo);
    channel_options.merge_client = g->merge_client_.get();
  }
  // One identity for every repository: the first round to learn the login tells the others,
  // which ask GitHub nothing (an App's comes from GET /app, a token's from GET /user).
  Integration* self = g.get();
  std::function<Result<std::string>()> ask = options.source.identity;
  auto poll_client_options = co;
  poll_client_options.cancel = &g->stopping_;
  g->repositories_.reserve(repos.size());
  for (const std::string& repo : repos) {
    const std::size_t index = g->repositories_.size();
    // This repository's poller: it sleeps through short rate-limit waits, cut short on Stop().
    Client* client = g->poll_clients_
                         .emplace_back(std::make_unique<Client>(
                             g->http_.get(), clock,
                             [self, index](TimeMs ms) {
                               if (index < self->repositories_.size() && self->repositories_[index].source)
                                 self->repositories_[index].source->InterruptibleSleep(ms);
                             },
                             poll_client_options))
                         .get();
    Repository& r = g->repositories_.emplace_back();
    r.repo = repo;
    SourceOptions source_options = options.source;
    source_options.repo = repo;
    // Who may approve a merge, asked with the agent's token (it needs push access to ask) and
    // asked again each polling round of this repository, so a permission taken away counts
    // from the next round on.
    r.permissions = std::make_unique<CollaboratorPermissions>(g->write_client_.get(), repo);
    source_options.round_started = [permissions = r.permissions.get(), then = options.source.round_started] {
      permissions->NewRound();
      if (then) then();
    };
    if (source_options.bot_login.empty()) {
      const CallOptions call{source_options.max_inline_wait_ms, source_options.poll_attempts};
      source_options.identity = [self, ask, client, call]() -> Result<std::string> {
        // Held across the call: the repositories' first rounds start together, and one asks.
        std::lock_guard<std::mutex> lock(self->identity_mu_);
        if (!self->identity_.empty()) return self->identity_;
        Result<std::string> got = Status::Internal("no identity");
        if (ask) {
          got = ask();
        } else {
          ApiResponse answer = client->Get("/user", call);
          auto login = json_read::String(answer.body, "login");
          if (answer.ok() && login.ok() && !login->empty()) got = *login;
          else got = Status::Unavailable(answer.ok() ? "GET /user: answer has no login (" + login.status().message() + ")"
                                                     : answer.error);
        }
        if (got.ok()) self->identity_ = *got;
        return got;
      };
    }
    r.source = std::make_unique<Source>(engine, views, client, clock, std::move(source_options));
    ChannelOptions own = channel_options;
    own.permissions = r.permissions.get();
    // As the Source knows it: learnt in its first round, or github.bot_login, which that round adopts.
    own.agent_login = [source = r.source.get()] {
      std::string login = source->BotLogin();
      return login.empty() ? source->options().bot_login : login;
    };
    r.channel = std::make_unique<GitHubChannel>(g->write_client_.get(), repo, own);
  }
  return g;
}

Source* Integration::SourceFor(const std::string& repo) {
  const std::string wanted = github_threads::Canonical(repo);
  for (Repository& r : repositories_)
    if (github_threads::Canonical(r.repo) == wanted) return r.source.get();
  return nullptr;
}

std::vector<Source*> Integration::sources() {
  std::vector<Source*> out;
  for (Repository& r : repositories_) out.push_back(r.source.get());
  return out;
}

bool Integration::Handles(const std::string& channel) const {
  for (const Repository& r : repositories_)
    if (r.channel->Handles(channel)) return true;
  return false;
}

Delivery Integration::Perform(const Effect& effect, bool outcome_unknown) {
  const std::string target = effect.receipt ? effect.receipt->channel : effect.payload.value("channel", "");
  for (Repository& r : repositories_)
    if (r.channel->Handles(target)) return r.channel->Perform(effect, outcome_unknown);
  // A repository no longer configured: its messages wait for a person (the problem card says so).
  return Delivery::Failed("no configured repository serves " + text::Cut(target, 200));
}

WebhookReply Integration::HandleWebhook(const WebhookRequest& request) {
  Source& home = *repositories_.front().source;
  // Refusals are counted and reported by one Source; a signed delivery is read only far enough
  // to know its repository, and its Source reads it again whole.
  if (webhook_secret_.empty() || !VerifyWebhookSignature(webhook_secret_, request.body, request.signature))
    return home.HandleWebhook(request);
  if (repositories_.size() == 1 || request.event == "ping") return home.HandleWebhook(request);
  json payload = json::parse(request.body, nullptr, false);
  auto full_name = json_read::OptString(payload, "repository.full_name");
  if (!payload.is_object() || !full_name.ok() || full_name->empty()) return home.HandleWebhook(request);
  if (Source* s = SourceFor(*full_name)) return s->HandleWebhook(request);
  return {202, "not a repository this daemon serves"};
}

void Integration::InstallWebhookRoute(httplib::Server& server) {
  InstallWebhookHandler(server, [this](const WebhookRequest& w) { return HandleWebhook(w); });
}

void Integration::Start() {
  for (Repository& r : repositories_) r.source->Start();
}

void Integration::Stop() {
  stopping_ = true;
  for (Repository& r : repositories_)
    if (r.source) r.source->Stop();
}

}  // namespace superagent::github
