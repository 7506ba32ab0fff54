// GitHub: the Source that reads one repository (SPEC §3.3, §3.5) and the Channel that writes to it
// (SPEC §3.3 writes, §8). Four parts, each usable alone so tests can drive them with fakes:
//   Client     — REST over the HttpClient seam (github_client.h, its own header: the App's
//                token code and doctor use it without the rest).
//   normalize  — GitHub JSON (REST or webhook payload) → Trigger; stable ids, mentions, scopes.
//                Like every part no other module calls, it is the Source's own and is declared
//                beside its code (src/sources/github/normalize.h, channel.h, source_internal.h).
//   Source     — the poller (notifications, failed items, followed discussions, repo-wide scopes,
//                CI) and the webhook receiver, both feeding Engine::Receive.
//   GitHubChannel — the outbox's writer: comments, review replies, reactions, pull requests, each
//                marked so a retried delivery never posts twice.
// Integration bundles them for the daemon (see MakeIntegration).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/channel.h"
#include "superagent/clock.h"
#include "superagent/engine.h"
#include "superagent/github_client.h"
#include "superagent/http.h"
#include "superagent/periodic.h"
#include "superagent/status.h"
#include "superagent/trigger.h"

namespace httplib { class Server; }

namespace superagent {
class Views;
}  // namespace superagent

namespace superagent::github {

// ---------------------------------------------------------------------------------------------
// Normalization (GitHub JSON → Trigger: the rest is in sources/github/normalize.h)

// A pull request opened for a Ticket, which the Source follows for that Ticket's sake: its
// discussion every round, whether it was merged or closed, and CI on its head branch.
struct TrackedPull {
  std::int64_t ticket = 0;
  std::string repo;  // "owner/name": only its repository's Source follows it
  std::int64_t number = 0;
  std::string head_branch;
};

// Declared in sources/github/normalize.h (the Source's private members take them).
struct NormalizeContext;
struct Normalized;
struct Discussion;

// ---------------------------------------------------------------------------------------------
// Webhooks

// "sha256=" + lower-case hex HMAC-SHA256(secret, body).
std::string WebhookSignature(const std::string& secret, const std::string& body);

struct WebhookRequest {
  std::string event;        // X-GitHub-Event
  std::string delivery;     // X-GitHub-Delivery
  std::string signature;    // X-Hub-Signature-256
  std::string body;         // raw bytes as received
};

struct WebhookReply {
  int status = 200;
  std::string message;      // short, for the sender and the log
};

// ---------------------------------------------------------------------------------------------
// Source

struct SourceOptions {
  std::string repo;                        // "owner/name"
  std::string bot_login;                   // override; "" asks GitHub (`identity`)
  // Asks GitHub who the agent is (its login); empty: GET /user, which a personal token answers.
  // A GitHub App sets it to InstallationTokens::BotLogin ("<slug>[bot]", from GET /app).
  std::function<Result<std::string>()> identity;
  // The login another Source of the same account already learnt, "" while none did (the
  // Integration's): a webhook delivery uses it rather than wait for this repository's own first
  // round. Must not block. Unset: none.
  std::function<std::string()> shared_identity;
  // Notifications exist for users only: a GitHub App reads none (issue 25), and its mentions come
  // from webhooks and the repo-wide reads (which github.auth: app requires).
  bool read_notifications = true;
  std::string webhook_secret;              // "" refuses every webhook delivery (401)
  TimeMs poll_interval_ms = 60'000;        // rounds; notifications never faster than 60 s / X-Poll-Interval
  bool read_issues = true;                 // repo-wide new issues
  bool read_pulls = true;                  // repo-wide new pull requests
  bool read_comments = true;               // repo-wide issue/PR comments and review comments
  bool read_ci = true;                     // default-branch CI results
  TimeMs overlap_ms = 5'000;               // next cursor = read start − overlap (SPEC §3.5)
  TimeMs retry_drop_after_ms = 24LL * 3600 * 1000;   // failed items dropped after 24 h
  TimeMs follow_window_ms = 14LL * 24 * 3600 * 1000; // discussions polled 14 days after activity
  TimeMs recent_poll_interval_ms = 300'000;          // … at most this often (Ticket discussions: every round)
  TimeMs max_inline_wait_ms = 60'000;      // rate-limit waits a round sleeps through; longer ones end the round
  TimeMs first_run_lookback_ms = 0;        // first start reads from now − this (no backfill by default)
  // github.request_budget_per_hour: once the client counted this many answers (not 304s) in the
  // last hour, only what people wait for is read (open Tickets' discussions and pull requests,
  // failed items); the repo-wide listings and quiet discussions wait. 0: no budget of our own.
  std::int64_t request_budget_per_hour = 0;
  int poll_attempts = 3;                   // tries per GET on 5xx / network errors
  // The pull requests opened for Tickets (empty function: none). Called once per round from the
  // poller's thread, and from the webhook's once per completed CI or pull-request-closed
  // delivery; must be thread-safe and must not wait for the Source. Their discussions are read
  // every round, and their head branches' CI even when read_ci is off (it is the Ticket's own
  // work, not repo-wide CI). A failed read is an error, never "none": a round that took it for
  // none would stop following the Tickets' pull requests, a delivery would drop their CI.
  std::function<Result<std::vector<TrackedPull>>()> tracked_pulls;
  // Called at the start of every round, on the poller's thread (Integration: a new round of
  // collaborator permissions). Must not wait for the Source.
  std::function<void()> round_started;
};

// What one polling round did (for tests and logs).
struct RoundReport : IntakeCounts {
  int discussions_read = 0, discussions_failed = 0;
  bool notifications_polled = false;
  bool notifications_changed = false;
  // The repository has an open Ticket, a Ticket's pull request or a failed item: someone waits
  // for what the next round reads, so the Integration reads it every round however quiet it is.
  bool people_waiting = false;
  // The repo-wide listings waited for the rate budget (GitHub's or request_budget_per_hour).
  bool budget_spent = false;
};

class Source {
 public:
  // `engine` (what it receives), `views` (its cursors, the discussions it follows), `client` and
  // `clock` must outlive the Source.
  Source(Engine* engine, Views* views, Client* client, Clock* clock, SourceOptions options);
  ~Source();

  // One polling round now: identity, saved failed items first, notifications (when due), followed
  // discussions, repo-wide scopes, CI. Each path's cursors and health are saved as it finishes.
  // Its duration and outcome go to the process's poll metrics (docs/007): failed when a path
  // failed or the round threw (the exception is passed on).
  RoundReport RunOnce();
  // Milliseconds until the next round should start (poll interval, X-Poll-Interval, rate-limit block).
  TimeMs NextDelayMs() const;
  // Runs rounds on a thread: the first at once (a restarted daemon catches up immediately), then
  // every NextDelayMs() (poll_interval_ms after a round that threw). Stop() interrupts any wait
  // and joins.
  void Start();
  void Stop();
  // Sleeps up to `ms`, returning early on Stop(). Usable as the Client's Sleeper.
  void InterruptibleSleep(TimeMs ms);

  // Verifies and takes one webhook delivery: one 401 answer for every delivery without a valid
  // signature (nothing stored; counted, and summarized by the next round as "N refused
  // deliveries"), 400 bad JSON, 202 for events it does not take, 200 once the Trigger went
  // through Engine::Receive. Never calls GitHub: before the identity is known it uses the login
  // the last run stored; on a first start with none the delivery is kept in memory (202) and
  // taken by the round that learns the identity (503 once 100 deliveries or 32 MiB wait).
  WebhookReply HandleWebhook(const WebhookRequest& request);

  // Reads the discussions of this repository that the account's notifications named (the
  // Integration reads them once for every repository), each from its own cursor, as a round's
  // notifications step does: a read that fails becomes a failed item, read again by later rounds.
  // Saved in one UpdateSource (path "notifications"). False when nothing could be saved (no
  // identity, the store): the caller must then not move past these notifications.
  bool ReadNotified(const std::vector<Discussion>& notified, TimeMs since, RoundReport* report);

  // Takes the deliveries that waited for the identity (HandleWebhook's 202 on a first start), if
  // it is known now: by this Source's round, or another repository's (options.shared_identity).
  void TakeWaiting();

  // The agent's login ("" until known).
  std::string BotLogin() const;
  const SourceOptions& options() const { return options_; }
  // "github:<owner>/<name>": the name its cursors and read paths' health are kept under.
  const std::string& SourceName() const { return source_name_; }

 private:
  struct ReadOutcome;
  struct Intake;
  // RunOnce without the metrics.
  RoundReport Round();
  bool EnsureIdentity(RoundReport* report);
  // The login from options or the identity cursor, without the network; false when neither has one.
  bool AdoptStoredIdentity();
  // The webhook's refusals since the last round, as one health record of path "webhook".
  void ReportRefusedDeliveries();
  // Deliveries that came before the identity was known, taken now that it is.
  void TakeWaitingDeliveries();
  ReadOutcome ReadDiscussion(const Discussion& d, const nlohmann::json& cursor, TimeMs fallback_since,
                             RoundReport* report);
  // `with`: bookkeeping stored in the same transaction as the Trigger (Engine::Receive).
  void ReceiveNormalized(const Normalized& n, const std::string& via, bool followed, Intake* intake,
                         RoundReport* report, const SourceUpdate* with = nullptr);
  void RegisterDiscussion(const Discussion& d, TimeMs since);
  // The cursor that starts following a discussion whose request came at `since`.
  std::string FollowCursor(TimeMs since) const;
  void PollRetries(std::map<std::string, std::string>& cursors, SourceUpdate* update, std::set<std::string>* read,
                   RoundReport* report);
  void PollNotifications(std::map<std::string, std::string>& cursors, SourceUpdate* update,
                         std::set<std::string>* read, RoundReport* report);
  // Each notified discussion read from its cursor into `update` (a failure: a retry item).
  void ReadNotifiedDiscussions(const std::vector<Discussion>& notified, TimeMs since,
                               std::map<std::string, std::string>& cursors, SourceUpdate* update,
                               std::set<std::string>* read, RoundReport* report);
  // Only what people wait for is read now: GitHub's remaining requests are few, or this
  // client's counted requests in the last hour reached options_.request_budget_per_hour.
  bool BudgetLow() const;
  void PollFollowed(std::map<std::string, std::string>& cursors, std::set<std::string>* read,
                    const std::vector<TrackedPull>& tracked, RoundReport* report);
  // CI on the tracked pull requests' head branches (path "pull_ci"), each with its own cursor.
  void PollTrackedCi(std::map<std::string, std::string>& cursors, const std::vector<TrackedPull>& tracked,
                     RoundReport* report);
  // options_.tracked_pulls(), without entries that name no pull request; its error as is.
  Result<std::vector<TrackedPull>> TrackedPulls() const;
  void PollRepoIssues(std::map<std::string, std::string>& cursors, RoundReport* report);
  void PollRepoComments(std::map<std::string, std::string>& cursors, RoundReport* report);
  void PollCi(std::map<std::string, std::string>& cursors, RoundReport* report);
  bool Followed(const Discussion& d, const std::map<std::string, std::string>& cursors) const;
  NormalizeContext Context() const;
  CallOptions PollCall() const;
  // Engine::UpdateSource for a round of reads through client_: a failure once the client's cancel
  // is set is marked `abandoned` (the stop's doing, not a failure of the path).
  Status Report(SourceUpdate u);

  Engine* engine_;
  Views* views_;
  Client* client_;
  Clock* clock_;
  SourceOptions options_;
  const std::string source_name_;  // SourceName()
  mutable std::mutex mu_;          // bot_login_, timing, open-ticket set
  std::mutex round_mu_;            // one round at a time; webhooks take it only to register discussions
  std::string bot_login_;
  bool identity_confirmed_ = false;  // bot_login_ came from GET /user (or options) this run
  std::atomic<std::int64_t> refused_since_report_{0};
  bool refusals_reported_ = false;   // the round thread's: the last summary was a failure
  std::deque<WebhookRequest> waiting_;  // verified deliveries waiting for the identity (mu_)
  std::size_t waiting_bytes_ = 0;
  TimeMs next_notifications_at_ = 0;
  TimeMs poll_interval_header_ms_ = 0;  // last X-Poll-Interval
  std::set<std::string> ticket_discussions_;
  std::set<std::string> tracked_discussions_;  // "pull:<n>" of this round's tracked pulls (round thread only)
  Periodic poller_;  // RunOnce, then NextDelayMs(); last member: it stops before the rest goes
};

// Installs `POST /hooks/github` on the daemon's HTTP server, answering with Source::HandleWebhook.
// `source` must outlive the server's use of the route.
void InstallWebhookRoute(httplib::Server& server, Source* source);

// ---------------------------------------------------------------------------------------------
// Channel

// The channels GitHubChannel delivers to: "github:…".
bool IsGitHubChannel(const std::string& channel);
// The web address of the GitHub whose REST API is `api_url`: "https://github.com" for
// api.github.com, "https://HOST" for GitHub Enterprise Server's "https://HOST/api/v3"; no
// trailing slash. Links and git remotes are derived from it.
std::string WebUrlOf(const std::string& api_url);
// GitHub's length rule for one message body: at most `max_chars` characters — code points, not
// bytes (a Chinese comment is three times longer in UTF-8) — cut with "…" when it must fit.
// app/ hands it to the Engine (EngineOptions::message_limit) with github.message_max_chars.
MessageLimit MessageLimitOf(std::size_t max_chars);

// ---------------------------------------------------------------------------------------------
// Auto-merge guard (SPEC §6): the one place that decides whether the daemon may merge a PR.
// Who may approve lives here (GitHubChannel keeps it); the guard is in sources/github/channel.h.

// One person's standing on the repository as GitHub's collaborator permission API answers it.
struct WriteAccess {
  bool writer = false;  // admin, maintain or write: may push, so may approve a merge
  std::string why;      // what was found ("write", "read", "none") or why it could not be read
};

// Who may approve a merge (issue 33): each login's permission on the repository, asked of GitHub
// with `client` (the agent's token, which needs push access to ask) and kept until NewRound(), so
// a polling round with many approvals asks once per person and a revoked permission counts again
// from the next round. A login that is not a GitHub login (other than letters, digits, '-' and
// '_', or longer than 100) is not a writer and is never put into a URL. Thread-safe.
class CollaboratorPermissions {
 public:
  // `client` must outlive this.
  CollaboratorPermissions(Client* client, std::string repo);
  WriteAccess Of(const std::string& login);
  // Forgets every answer: the next Of() for each login asks GitHub again.
  void NewRound();

 private:
  Client* client_;
  std::string repo_;
  std::mutex mu_;
  std::map<std::string, WriteAccess> known_;  // folded login → answer this round
};

// The merge account (SPEC §6: by default never merge as the agent account).
struct ChannelOptions {
  std::string install_id;          // Views::InstallId: in every receipt marker; "" keeps the id alone
  // What a Ticket's PR says of where it was asked for (github.pull_request_origin): "link" — the
  // discussion's URL, or only its platform when it has none (a chat); "source" — only the
  // platform; "none" — nothing. Never the chat's words.
  std::string pull_request_origin = "link";
  Client* merge_client = nullptr;  // a person's or merge bot's token (github.merge_token_env); null: none
  bool merge_as_agent = false;     // github.merge_as_agent: without a merge client, merge with the agent's
  // Who may approve a merge, cached per polling round (Integration's, reset by its Source). Null:
  // the channel keeps its own and asks again at every merge_pull_request.
  CollaboratorPermissions* permissions = nullptr;
  // The agent's own login (Source::BotLogin): its approval never counts. Unset, or "" until the
  // first round learns it: merge_pull_request waits (Retry) rather than guess.
  std::function<std::string()> agent_login;
  // Whether a repository path is a UI path (execution.ui_paths, the screenshot rule): a change
  // touching one needs the rule's named approver to merge. Unset: no path is.
  std::function<bool(const std::string& path)> ui_path;
};

// Delivers Effects whose channel starts with "github:". Kinds:
//   post_message       — the Receipt's body to its channel: "github:issue:<n>" / "github:pull:<n>"
//                        (issue comment), "github:pull:<n>:review:<comment id>" (review reply),
//                        "github:commit:<sha>" (commit comment);
//   add_reaction       — payload {"channel", "idempotency_key", "content": "eyes"|"+1"|…,
//                        "target": "issue_comment"|"review_comment"|"issue", "comment_id"?};
//   open_pull_request  — payload {"channel", "idempotency_key", "head", "base", "title", "body", "draft"?,
//                        "reviewers"?: ["login", …]}; the reviewers are requested once the PR exists
//                        (a refused request is a warning, not a failed PR);
//   merge_pull_request — payload {"channel": "github:repo", "idempotency_key", "ticket", "number",
//                        "head_sha", "max_changed_lines"?, "required_approvals"?, "approver"?,
//                        "pull_key"?, "check_only"?}: reads the PR, all its reviews and (with
//                        ui_path) its files, asks each approver's permission, applies
//                        AutoMergeRefusal (a refusal is Failed and final: a new head needs a new
//                        action), then squash-merges pinned to head_sha with the merge account.
//                        Already merged is Done. The PR must carry the receipt marker of
//                        open_pull_request's key `pull_key` ("pr:ticket:…", at most 200 bytes;
//                        absent: "pr:ticket:<ticket>"). With check_only true every step but the
//                        merge runs and Done's external_id is the head sha the guard passed;
//                        head_sha may then be absent or "" (the PR's current head is expected), and
//                        an already merged PR is Done with its head sha;
//   link_pull_requests — payload {"channel": "github:repo", "ticket", "number", "links": [{"repo":
//                        "owner/name", "number"}, …] (1 to 10)}: the PR's body gets (or has
//                        replaced) its section between kLinkedPullsBegin/End listing the links as
//                        GitHub cross-references them; an unchanged body is Done unsent, one over
//                        GitHub's 65536 characters is Failed unsent.
//   check_run          — payload {"channel": "github:repo", "idempotency_key", "ticket", "number", "stage",
//                        "title", "summary", "at", "details_url"?}: the check run kCheckRunName on the
//                        PR's current head shows the Ticket's stage (GitHub App only: GitHub refuses
//                        check runs to any other token). One check run per head commit, created once
//                        and then updated; an update older (`at`) than the one shown is Done unsent.
//                        When the head moved (no run of the Ticket's on it yet), the Ticket's
//                        unfinished run on the previous head is completed `neutral` as superseded
//                        first, so no old commit says "in progress" forever.
// With outcome_unknown it first looks for its own marker (comments) or an existing PR from the
// same head carrying the marker, and records that instead of writing twice.
class GitHubChannel : public Channel {
 public:
  // `client` (and options.merge_client) must outlive the channel.
  GitHubChannel(Client* client, std::string repo, ChannelOptions options = {});
  bool Handles(const std::string& channel) const override;
  Delivery Perform(const Effect& effect, bool outcome_unknown) override;

 private:
  Delivery PostMessage(const Effect& effect, bool outcome_unknown);
  Delivery AddReaction(const Effect& effect);
  Delivery OpenPullRequest(const Effect& effect, bool outcome_unknown);
  Delivery MergePullRequest(const Effect& effect);
  Delivery CheckRun(const Effect& effect);
  Delivery LinkPullRequests(const Effect& effect);
  // Completes Ticket `ticket`'s unfinished check runs on the newest earlier commit of PR `number`
  // that has any of its runs (head_sha took over). Done when there is nothing to do or it is done.
  Delivery SupersedeEarlierCheckRuns(std::int64_t ticket, std::int64_t number, const std::string& head_sha);
  // Asks `reviewers` to review PR `number`; logs a warning when GitHub refuses.
  void RequestReviewers(const std::string& number, const nlohmann::json& reviewers);
  std::optional<std::string> FindMarker(const std::string& list_path, const std::string& marker, std::string* error);
  Delivery FromResponse(const ApiResponse& r, const std::string& what);

  Client* client_;
  std::string repo_;
  ChannelOptions options_;
  std::unique_ptr<CollaboratorPermissions> own_permissions_;  // when options_.permissions is null
};

// ---------------------------------------------------------------------------------------------
// Integration: what the daemon wires (one per process).

// The pollers' pace: GitHub's secondary limit is 900 REST points a minute per account (a GET,
// 304 or not, costs one); the pollers take a third, leaving room for the writes people wait for.
inline constexpr int kPollRequestsPerMinute = 300;

// What the Integration is built from, secrets already resolved (app/wiring.h).
struct IntegrationOptions {
  // api_url and token, or token_source for a GitHub App (one is required); Create sets
  // user_agent and the poller's cancel.
  ClientOptions client;
  // Every repository's Source is made from this one: the webhook secret, polling and read
  // scopes; `source.repo` is replaced by each of `repos`.
  SourceOptions source;
  // The repositories served (github.repos), the first the home of keys from before issue 37;
  // empty: source.repo alone.
  std::vector<std::string> repos;
  std::string merge_token;      // github.merge_token_env's value: the account auto-merge uses ("" none)
  bool merge_as_agent = false;  // github.merge_as_agent
  std::string pull_request_origin = "link";  // github.pull_request_origin (ChannelOptions)
  std::function<bool(const std::string& path)> ui_path;  // execution.ui_paths (ChannelOptions)
  // github.quiet_read_interval_seconds: a repository read every source.poll_interval_ms while
  // people wait on it or it is active is read half as often after each quiet round, down to
  // this — when mentions have a prompt way in (notifications, or webhooks); without one, every
  // repository is read every round.
  TimeMs quiet_read_interval_ms = 600'000;
  // Every poller's requests together, in any 60 s (Client::max_requests_per_minute).
  int max_requests_per_minute = kPollRequestsPerMinute;
  // How the polling loop waits, between steps and inside one (the pace, a rate-limit wait);
  // null: the real clock. Tests pass one that moves their FakeClock. Must outlive the Integration.
  LoopWait* loop_wait = nullptr;
  // github.repos: installation (a GitHub App, `repos` empty): every repository installation
  // `installation_id` can see, listed at the first step and every kInstallationListMs, and
  // changed at once by its `installation_repositories` and `installation` webhooks.
  bool installation = false;
  std::int64_t installation_id = 0;  // deliveries naming another installation of the App are not ours
};

// How often an installation's repositories are listed again (a conditional request: free while
// nothing changed), so a lost installation_repositories delivery is made up for.
inline constexpr TimeMs kInstallationListMs = 10 * 60'000;

// How one repository is read (issue 37): what the Integration's schedule says of it, kept as the
// repository Source's cursor "reading" so a restart keeps the pace and the panel can show it.
struct RepositoryReading {
  std::string repo;          // as configured
  TimeMs interval_ms = 0;    // between its rounds, as of its last one
  TimeMs next_at = 0;        // its next round (0: at once)
  TimeMs last_at = 0;        // its last round began (0: none yet)
  int quiet_rounds = 0;      // its rounds in a row that brought nothing new
  // Why that interval: "people wait" (an open Ticket, a Ticket's pull request or a failed item),
  // "active" (its last round, a notification or a webhook brought something), "quiet",
  // "budget" (the rate budget is spent: only what people wait for is read), "" before a round.
  std::string why;
};

// The wait before a repository's next round: `base` while people wait on it or it is active
// (`quiet_rounds` 0); after n quiet rounds base·2ⁿ, never more than `quiet_max` nor less than base.
TimeMs ReadIntervalMs(TimeMs base, TimeMs quiet_max, bool people_waiting, int quiet_rounds);

class Integration : public Channel {
 public:
  // A Source (poller and webhook receiver) and a GitHubChannel per repository, over one
  // HttpClient (`http`; null: a new one) and one identity: the agent's login is asked of GitHub
  // once, whichever repository's round asks first. InvalidArgument when there is no repository
  // (and no installation), one is not "owner/name", or there is neither a token nor a
  // token_source.
  static Result<std::unique_ptr<Integration>> Create(IntegrationOptions options, Engine* engine, Views* views,
                                                     Clock* clock,
                                                     std::unique_ptr<HttpClient> http = nullptr);
  ~Integration() override;

  // The first repository's Source (the one tests and single-repository setups talk to); null
  // while an installation has listed none.
  Source* source();
  // The Source serving `repo` (any case), or null. It stays valid while the repository is
  // served: in installation mode only until the repository leaves the installation.
  Source* SourceFor(const std::string& repo);
  // The repositories served now, in order (configured, or as the installation lists them).
  std::vector<std::string> Repositories() const;
  // Whether `repo` ("owner/name", any case) is one of them. Takes only a leaf lock: callable
  // with the Engine's held.
  bool Serves(const std::string& repo) const { return Find(repo) != nullptr; }
  // The outbox's writer for every repository: each channel goes to its repository's GitHubChannel.
  Channel* channel() { return this; }
  bool Handles(const std::string& channel) const override;
  Delivery Perform(const Effect& effect, bool outcome_unknown) override;

  // Takes a webhook delivery for any repository (a repository's hook, an organisation's or the
  // App's): verified, then handed to the Source of the repository it names. A delivery for a
  // repository not served is answered 202 and taken by nobody. In installation mode the
  // `installation_repositories` and `installation` events of this installation change the
  // repositories served at once (200); another installation's are answered 202.
  WebhookReply HandleWebhook(const WebhookRequest& request);
  void InstallWebhookRoute(httplib::Server& server);
  // Runs the polling loop on a thread: RunDue() at once, then whenever the next step is due.
  void Start();
  // Stops the loop; a poll request in flight is abandoned. The Channels' writes are not: the
  // Effects loop stops after this and finishes (or times out) what it is sending.
  void Stop();

  // One step of the polling loop, on the caller's thread (Start() runs it on its own; call it
  // directly only while the loop is not started): in installation mode the installation's
  // repositories listed when due; the account's notifications when due, read once for every
  // repository and handed to each repository's Source; then the round of every repository that
  // is due, earliest first, the notifications looked at again between rounds. All requests go
  // through one client, paced to max_requests_per_minute. Returns the wait until the next step.
  TimeMs RunDue();
  // Each repository's reading, in the order of Repositories() (a copy).
  std::vector<RepositoryReading> Readings() const;
  // Installation mode: lists the installation's repositories now (GET /installation/repositories)
  // and serves exactly those: a new one is read at once, one gone is no longer read nor written
  // to. An error (the list could not be read) changes nothing. Outside installation mode: OK,
  // nothing done.
  Status ListInstallation();

 private:
  struct Repository {
    std::string repo;  // as configured or listed
    std::unique_ptr<CollaboratorPermissions> permissions;  // its channel's, reset at each of its rounds
    std::unique_ptr<Source> source;
    std::unique_ptr<GitHubChannel> channel;
    RepositoryReading reading;  // reading_mu_
    bool reading_loaded = false;  // the loop's: the saved reading was read (LoadReading)
  };
  using RepositoryPtr = std::shared_ptr<Repository>;
  Integration() = default;
  // A Repository for `repo` built from the templates; the loop reads its saved reading.
  RepositoryPtr MakeRepository(const std::string& repo);
  // The repositories now (a copy: a webhook thread or the outbox may hold one being removed).
  std::vector<RepositoryPtr> Snapshot() const;
  // The agent's login once any repository's round learnt it, else "" (never waits for GitHub).
  std::string KnownIdentity() const;
  RepositoryPtr Find(const std::string& repo) const;
  // Installation mode: serves `added` too and `removed` no longer; logs what changed.
  void Change(const std::vector<std::string>& added, const std::vector<std::string>& removed, const char* why);
  // An installation or installation_repositories delivery, already verified.
  WebhookReply InstallationEvent(const WebhookRequest& request, const nlohmann::json& payload);
  // The account's notifications, once for every repository (SPEC §3.3).
  void ReadNotifications();
  // One repository's round, then its reading saved.
  void RunRound(Repository& r);
  // The repository's next round comes within the base interval: something happened there.
  void MarkActive(Repository& r);
  // The reading saved by an earlier run, read before its first round.
  void LoadReading(Repository& r);
  // The poll client's budget as the cursor "rate" of the platform ("github"), for /metrics.
  void SaveRate();

  std::unique_ptr<HttpClient> http_;
  Engine* engine_ = nullptr;
  Views* views_ = nullptr;
  Clock* clock_ = nullptr;
  std::atomic<bool> stopping_{false};  // the poll client's cancel: set by Stop()
  std::unique_ptr<Client> write_client_, merge_client_;
  std::unique_ptr<Client> poll_client_;  // every repository's reads, one pace and one budget
  std::string webhook_secret_;
  bool read_notifications_ = false;
  bool installation_ = false;
  std::int64_t installation_id_ = 0;
  TimeMs base_interval_ms_ = 60'000, quiet_max_ms_ = 600'000;
  std::int64_t budget_per_hour_ = 0;
  SourceOptions source_template_;    // each repository's Source is made from it
  ChannelOptions channel_template_;  // and its channel from this
  std::function<Result<std::string>()> ask_identity_;  // options.source.identity as given
  std::mutex identity_mu_;  // one identity call at a time
  mutable std::mutex known_mu_;
  std::string identity_;  // the login the first successful identity call answered (known_mu_)
  mutable std::mutex repos_mu_;               // repositories_
  std::vector<RepositoryPtr> repositories_;
  mutable std::mutex reading_mu_;             // each Repository's reading and the loop's timing below
  TimeMs next_notifications_at_ = 0;
  TimeMs poll_interval_header_ms_ = 0;        // the last X-Poll-Interval
  TimeMs next_listing_at_ = 0;                // installation mode: the next GET /installation/repositories
  bool identity_spread_ = false;              // the loop's: every Source took its waiting deliveries
  std::unique_ptr<Periodic> poller_;          // RunDue(); stopped before the rest goes
};

}  // namespace superagent::github
