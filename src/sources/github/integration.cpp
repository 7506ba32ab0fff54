// The GitHub Sources and Channels built together, as the daemon runs them: one of each per
// repository served (issue 37), over one HTTP client and one agent identity.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

#include "sources/github/normalize_internal.h"
#include "sources/github/source_internal.h"
#include "superagent/github.h"
#include "superagent/github_threads.h"
#include "superagent/json_read.h"
#include "superagent/metrics.h"
#include "superagent/text.h"
#include "superagent/views.h"

namespace superagent::github {

using nlohmann::json;

Integration::~Integration() { Stop(); }

Result<std::unique_ptr<Integration>> Integration::Create(IntegrationOptions options, Engine* engine, Views* views, Clock* clock,
                                                         std::unique_ptr<HttpClient> http) {
  std::vector<std::string> repos = options.repos;
  if (repos.empty() && !options.source.repo.empty() && !options.installation) repos.push_back(options.source.repo);
  if (options.installation && !repos.empty())
    return Status::InvalidArgument("an installation's repositories are listed, not configured: github.repos is installation");
  if (repos.empty() && !options.installation) return Status::InvalidArgument("no repository: the GitHub Source is disabled");
  if (options.installation && !options.client.token_source)
    return Status::InvalidArgument("github.repos: installation needs a GitHub App (github.auth: app)");
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
  // retry time. The pollers' client below sleeps through short waits, cut short on Stop().
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
  Integration* self = g.get();
  g->engine_ = engine;
  g->views_ = views;
  g->clock_ = clock;
  g->installation_ = options.installation;
  g->installation_id_ = options.installation_id;
  g->read_notifications_ = options.source.read_notifications;
  g->base_interval_ms_ = options.source.poll_interval_ms;
  // Backing off is safe only when a mention still comes in promptly without the repository's
  // own reads: by the account's notifications, or by webhooks.
  g->quiet_max_ms_ = (options.source.read_notifications || !options.source.webhook_secret.empty())
                         ? std::max(options.quiet_read_interval_ms, options.source.poll_interval_ms)
                         : options.source.poll_interval_ms;
  g->budget_per_hour_ = options.source.request_budget_per_hour;
  g->poller_ = std::make_unique<Periodic>(
      PeriodicOptions{"the github poller", options.source.poll_interval_ms, engine, options.loop_wait},
      [self]() -> std::optional<TimeMs> { return self->RunDue(); });
  // Every repository's reads go through one client: one pace for GitHub's secondary limit, one
  // count for the hour's budget, one cache. It sleeps through short rate-limit waits and the
  // pace on the loop's own wait, cut short on Stop().
  auto poll_client_options = co;
  poll_client_options.cancel = &g->stopping_;
  poll_client_options.max_requests_per_minute = options.max_requests_per_minute;
  // Room for every repository's listings and its followed discussions' reads (an installation's
  // count is not known yet: room for 500).
  poll_client_options.cache_entries =
      std::max<std::size_t>(co.cache_entries, 16 * (options.installation ? 500 : repos.size()));
  g->poll_client_ = std::make_unique<Client>(g->http_.get(), clock, [self](TimeMs ms) { self->poller_->Sleep(ms); },
                                             poll_client_options);
  g->source_template_ = options.source;
  // The account's notifications are read once for all repositories (ReadNotifications).
  g->source_template_.read_notifications = false;
  g->channel_template_ = channel_options;
  g->ask_identity_ = options.source.identity;
  for (const std::string& repo : repos) g->repositories_.push_back(g->MakeRepository(repo));
  return g;
}

Integration::RepositoryPtr Integration::MakeRepository(const std::string& repo) {
  auto r = std::make_shared<Repository>();
  r->repo = repo;
  r->reading.repo = repo;
  r->reading.interval_ms = base_interval_ms_;
  SourceOptions source_options = source_template_;
  source_options.repo = repo;
  // Who may approve a merge, asked with the agent's token (it needs push access to ask) and
  // asked again each polling round of this repository, so a permission taken away counts
  // from the next round on.
  r->permissions = std::make_unique<CollaboratorPermissions>(write_client_.get(), repo);
  source_options.round_started = [permissions = r->permissions.get(), then = source_template_.round_started] {
    permissions->NewRound();
    if (then) then();
  };
  if (source_options.bot_login.empty()) {
    // One identity for every repository: the first round to learn the login tells the others,
    // which ask GitHub nothing (an App's comes from GET /app, a token's from GET /user).
    const CallOptions call{source_options.max_inline_wait_ms, source_options.poll_attempts};
    source_options.identity = [this, call]() -> Result<std::string> {
      // Held across the call: the repositories' first rounds may ask together, and one asks.
      std::lock_guard<std::mutex> lock(identity_mu_);
      if (std::string known = KnownIdentity(); !known.empty()) return known;
      Result<std::string> got = Status::Internal("no identity");
      if (ask_identity_) {
        got = ask_identity_();
      } else {
        ApiResponse answer = poll_client_->Get("/user", call);
        auto login = json_read::String(answer.body, "login");
        if (answer.ok() && login.ok() && !login->empty()) got = *login;
        else got = Status::Unavailable(answer.ok() ? "GET /user: answer has no login (" + login.status().message() + ")"
                                                   : answer.error);
      }
      if (got.ok()) {
        std::lock_guard<std::mutex> known(known_mu_);
        identity_ = *got;
      }
      return got;
    };
    source_options.shared_identity = [this] { return KnownIdentity(); };
  }
  r->source = std::make_unique<Source>(engine_, views_, poll_client_.get(), clock_, std::move(source_options));
  ChannelOptions own = channel_template_;
  own.permissions = r->permissions.get();
  // As the Source knows it: learnt in its first round, or github.bot_login, which that round adopts.
  own.agent_login = [source = r->source.get()] {
    std::string login = source->BotLogin();
    return login.empty() ? source->options().bot_login : login;
  };
  r->channel = std::make_unique<GitHubChannel>(write_client_.get(), repo, own);
  return r;  // its saved reading is read by the loop, off the start-up path (RunDue)
}

std::string Integration::KnownIdentity() const {
  std::lock_guard<std::mutex> lock(known_mu_);
  return identity_;
}

std::vector<Integration::RepositoryPtr> Integration::Snapshot() const {
  std::lock_guard<std::mutex> lock(repos_mu_);
  return repositories_;
}

Integration::RepositoryPtr Integration::Find(const std::string& repo) const {
  const std::string wanted = github_threads::Canonical(repo);
  std::lock_guard<std::mutex> lock(repos_mu_);
  for (const RepositoryPtr& r : repositories_)
    if (github_threads::Canonical(r->repo) == wanted) return r;
  return nullptr;
}

Source* Integration::source() {
  std::lock_guard<std::mutex> lock(repos_mu_);
  return repositories_.empty() ? nullptr : repositories_.front()->source.get();
}

Source* Integration::SourceFor(const std::string& repo) {
  RepositoryPtr r = Find(repo);
  return r ? r->source.get() : nullptr;
}

std::vector<std::string> Integration::Repositories() const {
  std::vector<std::string> out;
  for (const RepositoryPtr& r : Snapshot()) out.push_back(r->repo);
  return out;
}

bool Integration::Handles(const std::string& channel) const {
  // Every "github:" channel is this writer's, a repository gone included: its message fails with
  // the reason rather than waiting for a writer that never comes.
  return IsGitHubChannel(channel);
}

Delivery Integration::Perform(const Effect& effect, bool outcome_unknown) {
  const std::string target = effect.receipt ? effect.receipt->channel : effect.payload.value("channel", "");
  for (const RepositoryPtr& r : Snapshot())
    if (r->channel->Handles(target)) return r->channel->Perform(effect, outcome_unknown);
  // A repository no longer configured: its messages wait for a person (the problem card says so).
  return Delivery::Failed("no configured repository serves " + text::Cut(target, 200));
}

WebhookReply Integration::HandleWebhook(const WebhookRequest& request) {
  const std::vector<RepositoryPtr> all = Snapshot();
  // Refusals are counted and reported by one Source; a signed delivery is read only far enough
  // to know its repository, and its Source reads it again whole.
  if (webhook_secret_.empty() || !VerifyWebhookSignature(webhook_secret_, request.body, request.signature)) {
    if (all.empty()) {  // an installation that lists nothing yet: refused alike, counted by /metrics
      metrics::ProcessRuntime().CountRefusedDelivery("github");
      return kRefusedDelivery;
    }
    return all.front()->source->HandleWebhook(request);
  }
  // One configured repository: its Source reads the delivery, once (the acknowledgement's path).
  if (!installation_ && all.size() == 1) {
    WebhookReply reply = all.front()->source->HandleWebhook(request);
    if (reply.status == 200) MarkActive(*all.front());
    return reply;
  }
  json payload = json::parse(request.body, nullptr, false);
  if (installation_ && (request.event == "installation_repositories" || request.event == "installation"))
    return InstallationEvent(request, payload);
  if (all.empty()) return {202, "no repository is served yet"};
  if (request.event == "ping") return all.front()->source->HandleWebhook(request);
  auto full_name = json_read::OptString(payload, "repository.full_name");
  if (!payload.is_object() || !full_name.ok() || full_name->empty()) return all.front()->source->HandleWebhook(request);
  RepositoryPtr r = Find(*full_name);
  if (!r) return {202, "not a repository this daemon serves"};
  WebhookReply reply = r->source->HandleWebhook(request);
  if (reply.status == 200) MarkActive(*r);
  return reply;
}

WebhookReply Integration::InstallationEvent(const WebhookRequest& request, const json& payload) {
  if (!payload.is_object()) return {400, "the body is not a JSON object"};
  const std::int64_t id = json_read::IntOr(payload, "installation.id", -1);
  if (id != installation_id_) return {202, "another installation of the App"};
  const std::string action = json_read::StringOr(payload, "action");
  // The names GitHub sent, each checked: a name that is no repository's is skipped, never served.
  auto names = [&](const char* key) {
    std::vector<std::string> out;
    const json* list = json_read::Find(payload, key);
    if (list == nullptr || !list->is_array()) return out;
    for (const json& item : *list) {
      const std::string name = json_read::StringOr(item, "full_name");
      if (github_threads::IsRepositoryName(name)) out.push_back(name);
      else spdlog::warn("github installation event skipped a repository name=\"{}\"", text::Cut(name, 120));
    }
    return out;
  };
  if (request.event == "installation_repositories") {
    Change(names("repositories_added"), names("repositories_removed"), "installation_repositories");
    return {200, "repositories changed"};
  }
  if (action == "deleted" || action == "suspend") {
    Change({}, Repositories(), action == "deleted" ? "installation deleted" : "installation suspended");
    return {200, "installation " + action};
  }
  // created, unsuspend, new_permissions_accepted: what it sees now is listed at the next step.
  {
    std::lock_guard<std::mutex> lock(reading_mu_);
    next_listing_at_ = 0;
  }
  if (poller_) poller_->Wake();
  return {200, "the installation's repositories are listed again"};
}

void Integration::Change(const std::vector<std::string>& added, const std::vector<std::string>& removed,
                         const char* why) {
  std::vector<std::string> in, out;
  std::vector<RepositoryPtr> made;
  for (const std::string& name : added)
    if (!Find(name)) made.push_back(MakeRepository(name));  // outside the lock: it reads the store
  {
    std::lock_guard<std::mutex> lock(repos_mu_);
    for (RepositoryPtr& r : made) {
      const std::string wanted = github_threads::Canonical(r->repo);
      if (std::any_of(repositories_.begin(), repositories_.end(),
                      [&](const RepositoryPtr& x) { return github_threads::Canonical(x->repo) == wanted; }))
        continue;  // a listing and an event raced: the first one serves it
      in.push_back(r->repo);
      repositories_.push_back(std::move(r));
    }
    for (const std::string& name : removed) {
      const std::string gone = github_threads::Canonical(name);
      auto it = std::find_if(repositories_.begin(), repositories_.end(),
                             [&](const RepositoryPtr& x) { return github_threads::Canonical(x->repo) == gone; });
      if (it == repositories_.end()) continue;
      out.push_back((*it)->repo);
      repositories_.erase(it);  // a round or a delivery holding it finishes with its own copy
    }
  }
  if (in.empty() && out.empty()) return;
  // A repository gone is read no more: its reading leaves the panel with it.
  for (const std::string& gone : out) {
    if (engine_ == nullptr) break;
    SourceUpdate u;
    u.source = github_threads::Repository(gone);
    u.erase_cursors = {"reading"};
    if (Status s = engine_->UpdateSource(u); !s.ok())
      spdlog::error("github reading update failed repo={}: {}", gone, s.ToString());
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
    return s.empty() ? std::string("-") : s;
  };
  spdlog::info("github repositories changed added={} removed={} served={} by=\"{}\"", joined(in), joined(out),
               Snapshot().size(), why);
  if (!in.empty() && poller_) poller_->Wake();  // a new repository is read at once
}

Status Integration::ListInstallation() {
  if (!installation_) return Status::Ok();
  const SourceOptions& o = source_template_;
  ApiResponse r = poll_client_->GetAll("/installation/repositories?per_page=100", "repositories",
                                       CallOptions{o.max_inline_wait_ms, o.poll_attempts});
  SourceUpdate u;
  u.source = polling::kSource;
  u.path = "installation";
  if (!r.ok()) {
    u.ok = false;
    u.error = r.error;
    if (Status s = sources::ReportRound(*engine_, u, &stopping_); !s.ok())
      spdlog::error("github installation update failed: {}", s.ToString());
    return Status::Unavailable(r.error);
  }
  std::vector<std::string> listed;
  std::set<std::string> seen;
  for (const json& item : r.body) {
    const std::string name = json_read::StringOr(item, "full_name");
    if (!github_threads::IsRepositoryName(name)) {
      ++u.skipped;
      spdlog::warn("github installation listing skipped a repository name=\"{}\"", text::Cut(name, 120));
      continue;
    }
    if (seen.insert(github_threads::Canonical(name)).second) listed.push_back(name);
  }
  std::vector<std::string> removed;
  for (const std::string& served : Repositories())
    if (!seen.count(github_threads::Canonical(served))) removed.push_back(served);
  Change(listed, removed, "installation listing");
  if (engine_ != nullptr)
    if (Status s = sources::ReportRound(*engine_, u, &stopping_); !s.ok())
      spdlog::error("github installation update failed: {}", s.ToString());
  return Status::Ok();
}

void Integration::InstallWebhookRoute(httplib::Server& server) {
  InstallWebhookHandler(server, [this](const WebhookRequest& w) { return HandleWebhook(w); });
}

TimeMs ReadIntervalMs(TimeMs base, TimeMs quiet_max, bool people_waiting, int quiet_rounds) {
  if (people_waiting || quiet_rounds <= 0) return base;
  TimeMs interval = base;
  for (int i = 0; i < quiet_rounds && interval < quiet_max; ++i) interval *= 2;
  return std::max(base, std::min(interval, quiet_max));
}

namespace {

json ReadingJson(const RepositoryReading& r) {
  return json{{"interval_ms", r.interval_ms}, {"next_at", r.next_at},   {"last_at", r.last_at},
              {"quiet_rounds", r.quiet_rounds}, {"why", r.why}};
}

}  // namespace

void Integration::LoadReading(Repository& repo) {
  if (views_ == nullptr) return;
  auto cursors = views_->SourceCursors(repo.source->SourceName());
  if (!cursors.ok()) {  // read at once, as on a first start
    spdlog::warn("github reading not read repo={} error=\"{}\"", repo.repo, cursors.status().message());
    return;
  }
  json saved = polling::ParseCursor(*cursors, "reading");
  std::lock_guard<std::mutex> lock(reading_mu_);
  RepositoryReading& r = repo.reading;
  r.quiet_rounds = static_cast<int>(std::clamp<std::int64_t>(json_read::IntOr(saved, "quiet_rounds"), 0, 62));
  r.last_at = json_read::IntOr(saved, "last_at");
  r.why = json_read::StringOr(saved, "why");
  r.interval_ms = ReadIntervalMs(base_interval_ms_, quiet_max_ms_, r.why == "people wait", r.quiet_rounds);
  // Every repository is read at once after a start, as on a first start: its answers are no
  // longer cached, so waiting would only put the same reads later. Those people wait on go
  // first (RunDue); the saved quiet rounds keep the pace after that.
  r.next_at = 0;
}

void Integration::MarkActive(Repository& repo) {
  const TimeMs soon = clock_->NowMs() + base_interval_ms_;
  bool sooner = false;
  {
    std::lock_guard<std::mutex> lock(reading_mu_);
    RepositoryReading& r = repo.reading;
    r.quiet_rounds = 0;
    r.interval_ms = base_interval_ms_;
    if (r.why != "people wait") r.why = "active";
    if (r.next_at > soon) {
      r.next_at = soon;
      sooner = true;
    }
  }
  if (sooner && poller_) poller_->Wake();  // the loop's wait may now be too long
}

std::vector<RepositoryReading> Integration::Readings() const {
  std::vector<RepositoryReading> out;
  const std::vector<RepositoryPtr> all = Snapshot();
  std::lock_guard<std::mutex> lock(reading_mu_);
  for (const RepositoryPtr& r : all) out.push_back(r->reading);
  return out;
}

void Integration::ReadNotifications() {
  const TimeMs now = clock_->NowMs();
  {
    std::lock_guard<std::mutex> lock(reading_mu_);
    next_notifications_at_ =
        now + std::max({polling::kMinNotificationIntervalMs, base_interval_ms_, poll_interval_header_ms_});
  }
  const std::vector<RepositoryPtr> all = Snapshot();
  if (all.empty()) return;
  auto stored = views_->SourceCursors(polling::kSource);
  if (!stored.ok()) {  // read from a guessed cursor, it could skip what came while the daemon was down
    spdlog::error("github notifications not read: cursors not read: {}", stored.status().ToString());
    return;
  }
  json global = polling::ParseCursor(*stored, "notifications");
  if (!global.contains("since")) {
    // Before one read served every repository, the first repository's Source kept this cursor.
    auto home = views_->SourceCursors(all.front()->source->SourceName());
    if (home.ok()) global = polling::ParseCursor(*home, "notifications");
  }
  const SourceOptions& o = source_template_;
  const TimeMs since = polling::CursorSince(global, now - o.first_run_lookback_ms);
  ApiResponse r = poll_client_->GetAll("/notifications?all=true&since=" + IsoSeconds(since) + "&per_page=50", "",
                                       CallOptions{o.max_inline_wait_ms, o.poll_attempts});
  if (std::string h = r.Header("x-poll-interval"); !h.empty() && std::atoll(h.c_str()) > 0) {
    std::lock_guard<std::mutex> lock(reading_mu_);
    poll_interval_header_ms_ = std::atoll(h.c_str()) * 1000;
    next_notifications_at_ = now + std::max({polling::kMinNotificationIntervalMs, base_interval_ms_,
                                             poll_interval_header_ms_});
  }
  SourceUpdate u;
  u.source = polling::kSource;
  u.path = "notifications";
  if (!global.contains("since")) global["since"] = IsoSeconds(since);
  if (!r.ok()) {
    u.ok = false;
    u.error = r.error;
  } else if (!r.not_modified) {
    NotificationListing listing = SortNotifications(r.body);
    bool all_read = true;
    for (const auto& [repo, discussions] : listing.by_repository) {
      RepositoryPtr served = Find(repo);
      if (!served) continue;  // the account hears of more than this daemon serves
      RoundReport report;
      if (!served->source->ReadNotified(discussions, since, &report)) all_read = false;
      MarkActive(*served);
    }
    u.skipped = listing.skipped;
    // Only once every repository saved what it read (or a failed item for it) does the cursor move;
    // and only a thread newer than any seen moves it, so an unchanged URL stays a free 304.
    if (!all_read) {
      u.ok = false;
      u.error = "a repository's notified discussions could not be saved; they are read again next time";
    } else if (listing.newest > json_read::IntOr(global, "newest")) {
      global["since"] = IsoSeconds(polling::ReadStart(r, now) - o.overlap_ms);
      global["newest"] = listing.newest;
    }
  }
  u.set_cursors["notifications"] = global.dump();
  if (Status s = sources::ReportRound(*engine_, u, &stopping_); !s.ok())
    spdlog::error("github notifications update failed: {}", s.ToString());
}

void Integration::RunRound(Repository& repo) {
  const TimeMs started = clock_->NowMs();
  RoundReport report = repo.source->RunOnce();
  const TimeMs now = clock_->NowMs();
  RepositoryReading saved;
  {
    std::lock_guard<std::mutex> lock(reading_mu_);
    RepositoryReading& r = repo.reading;
    const bool brought = report.stored > 0;
    r.last_at = started;
    // A round the budget cut short says nothing of the repository's quiet.
    if (!report.budget_spent) r.quiet_rounds = brought ? 0 : std::min(r.quiet_rounds + 1, 62);
    r.interval_ms = ReadIntervalMs(base_interval_ms_, quiet_max_ms_, report.people_waiting, r.quiet_rounds);
    r.why = report.people_waiting ? "people wait"
            : report.budget_spent  ? "budget"
            : r.quiet_rounds == 0  ? "active"
                                   : "quiet";
    r.next_at = now + r.interval_ms;
    saved = r;
  }
  if (views_ == nullptr) return;
  SourceUpdate u;
  u.source = repo.source->SourceName();
  u.set_cursors["reading"] = ReadingJson(saved).dump();
  if (Status s = engine_->UpdateSource(u); !s.ok())
    spdlog::error("github reading update failed repo={}: {}", repo.repo, s.ToString());
}

void Integration::SaveRate() {
  if (engine_ == nullptr) return;
  const RateBudget b = poll_client_->Budget();
  SourceUpdate u;
  u.source = polling::kSource;
  u.set_cursors["rate"] = json{{"limit", b.limit},
                               {"remaining", b.remaining},
                               {"reset_at", b.reset_at},
                               {"blocked_until", b.blocked_until},
                               {"requests", b.requests},
                               {"not_modified", b.not_modified},
                               {"counted_last_hour", b.counted_last_hour},
                               {"budget_per_hour", budget_per_hour_}}
                              .dump();
  if (Status s = engine_->UpdateSource(u); !s.ok()) spdlog::error("github rate update failed: {}", s.ToString());
}

TimeMs Integration::RunDue() {
  const std::int64_t requests_before = poll_client_->Budget().requests;
  if (installation_) {
    bool due = false;
    {
      std::lock_guard<std::mutex> lock(reading_mu_);
      due = clock_->NowMs() >= next_listing_at_;
      if (due) next_listing_at_ = clock_->NowMs() + kInstallationListMs;
    }
    if (due) {
      if (Status s = ListInstallation(); !s.ok())
        spdlog::warn("github installation not listed, served as before error=\"{}\"", s.message());
    }
  }
  auto notifications_due = [this] {
    std::lock_guard<std::mutex> lock(reading_mu_);
    return read_notifications_ && clock_->NowMs() >= next_notifications_at_;
  };
  if (notifications_due() && views_ != nullptr) ReadNotifications();
  // The due repositories, earliest first, and of those due together, those people wait on.
  const std::vector<RepositoryPtr> all = Snapshot();
  for (const RepositoryPtr& r : all)
    if (!r->reading_loaded) {
      LoadReading(*r);
      r->reading_loaded = true;
    }
  std::vector<std::tuple<TimeMs, bool, std::size_t>> due;
  {
    std::lock_guard<std::mutex> lock(reading_mu_);
    const TimeMs now = clock_->NowMs();
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i]->reading.next_at <= now) due.emplace_back(all[i]->reading.next_at, all[i]->reading.why != "people wait", i);
  }
  std::sort(due.begin(), due.end());
  for (const auto& [at, later, index] : due) {
    if (stopping_.load()) break;
    // A mention waits for no quiet listing: rounds over many repositories take minutes.
    if (notifications_due() && views_ != nullptr) ReadNotifications();
    if (installation_ && !Find(all[index]->repo)) continue;  // it left the installation meanwhile
    RunRound(*all[index]);
    // On a first start, deliveries for repositories whose round is minutes away waited for the
    // identity: once one round learnt it, each is taken now.
    if (!identity_spread_ && !KnownIdentity().empty()) {
      identity_spread_ = true;
      for (const RepositoryPtr& r : Snapshot()) r->source->TakeWaiting();
    }
  }
  if (poll_client_->Budget().requests != requests_before) SaveRate();
  const std::vector<RepositoryPtr> now_served = Snapshot();
  std::lock_guard<std::mutex> lock(reading_mu_);
  TimeMs next = read_notifications_ ? next_notifications_at_ : std::numeric_limits<TimeMs>::max();
  if (installation_) next = std::min(next, next_listing_at_);
  for (const RepositoryPtr& r : now_served) next = std::min(next, r->reading.next_at);
  if (next == std::numeric_limits<TimeMs>::max()) return base_interval_ms_;
  return std::max<TimeMs>(0, next - clock_->NowMs());
}

void Integration::Start() {
  stopping_ = false;
  if (poller_->Start())
    spdlog::info("github polling started repositories={} interval_s={} quiet_interval_s={} budget_per_hour={}",
                 installation_ ? std::string("installation") : std::to_string(Snapshot().size()),
                 base_interval_ms_ / 1000, quiet_max_ms_ / 1000, budget_per_hour_);
}

void Integration::Stop() {
  stopping_ = true;
  if (poller_) poller_->Stop();
}

}  // namespace superagent::github
