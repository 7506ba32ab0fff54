// The GitHub webhook receiver: the fast path. A delivery is verified against the shared secret
// (X-Hub-Signature-256 over the raw body), normalized exactly like a polled item and received;
// polling stays on as the safety net, because GitHub never redelivers a failed webhook.
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cstdint>

#include "superagent/digest.h"
#include "superagent/metrics.h"
#include "sources/github/normalize_internal.h"
#include "sources/github/source_internal.h"
#include "superagent/json_read.h"
#include "superagent/text.h"
#include "superagent/views.h"

namespace superagent::github {

using nlohmann::json;


std::string WebhookSignature(const std::string& secret, const std::string& body) {
  return "sha256=" + Hex(HmacSha256(secret, body));
}

bool VerifyWebhookSignature(const std::string& secret, const std::string& body, const std::string& header) {
  if (secret.empty() || header.empty()) return false;
  const std::string expected = WebhookSignature(secret, body);
  if (header.size() != expected.size()) return false;
  unsigned char diff = 0;  // constant time: no early exit on the first differing byte
  for (std::size_t i = 0; i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(header[i] ^ expected[i]);
  return diff == 0;
}

constexpr std::size_t kMaxWaitingDeliveries = 100;
constexpr std::size_t kMaxWaitingBytes = 32u * 1024 * 1024;

std::optional<Normalized> NormalizeWebhook(const std::string& event, const json& payload, const NormalizeContext& ctx) {
  auto action_field = json_read::OptString(payload, "action");
  if (!action_field.ok()) return normalize_internal::Malformed(action_field.status().message());
  const std::string& action = *action_field;
  auto is = [&](std::initializer_list<const char*> actions) {
    for (const char* a : actions)
      if (action == a) return true;
    return false;
  };
  // The item itself is checked by its normalizer; a part that is absent or not an object reads
  // as an empty one, which the normalizer refuses with its own reason.
  auto obj = [&](const char* key) -> const json& {
    static const json kNull;
    const json* v = json_read::Find(payload, key);
    return v != nullptr && v->is_object() ? *v : kNull;
  };
  if (event == "issue_comment" && is({"created", "edited"}))
    return NormalizeIssueComment(obj("comment"), ctx, json_read::Find(obj("issue"), "pull_request") != nullptr);
  if (event == "pull_request_review_comment" && is({"created", "edited"})) return NormalizeReviewComment(obj("comment"), ctx);
  if (event == "pull_request_review" && is({"submitted", "edited"})) {
    auto number = json_read::OptInt(payload, "pull_request.number");
    if (!number.ok()) return normalize_internal::Malformed(number.status().message());
    return NormalizeReview(obj("review"), ctx, *number);
  }
  if (event == "issues" && is({"opened", "edited", "reopened", "assigned"})) return NormalizeIssue(obj("issue"), ctx, false);
  if (event == "pull_request" &&
      is({"opened", "edited", "reopened", "assigned", "review_requested", "ready_for_review"}))
    return NormalizeIssue(obj("pull_request"), ctx, true);
  if (event == "pull_request" && is({"closed"})) {
    // The sender is who pressed the button; NormalizePullClosed prefers merged_by when merged.
    const json* sender = json_read::Find(payload, "sender");
    return NormalizePullClosed(obj("pull_request"), ctx, sender == nullptr ? json() : *sender);
  }
  const bool ci = (event == "workflow_run" || event == "check_run") && is({"completed"});
  if (!ci) return std::nullopt;
  auto default_branch = json_read::OptString(payload, "repository.default_branch");
  if (!default_branch.ok()) return normalize_internal::Malformed(default_branch.status().message());
  if (event == "workflow_run") return NormalizeWorkflowRun(obj("workflow_run"), ctx, *default_branch);
  return NormalizeCheckRun(obj("check_run"), ctx, *default_branch);
}

WebhookReply Source::HandleWebhook(const WebhookRequest& req) {
  auto health = [&](bool ok, const std::string& error, int skipped = 0) {
    SourceUpdate u;
    u.source = source_name_;
    u.path = "webhook";
    u.ok = ok;
    u.error = error;
    u.skipped = skipped;
    if (Status s = engine_->UpdateSource(u); !s.ok()) spdlog::error("github webhook health update failed: {}", s.ToString());
  };
  const std::string delivery = req.delivery.empty() ? "-" : req.delivery;
  if (options_.webhook_secret.empty() || !VerifyWebhookSignature(options_.webhook_secret, req.body, req.signature)) {
    // Counted, and summarized by the next round (ReportRefusedDeliveries): nothing a stranger
    // sends is written to the store or shown, and a flood costs no write per delivery.
    const char* why = options_.webhook_secret.empty() ? "no webhook secret is configured (github.webhook_secret_env)"
                      : req.signature.empty()        ? "unsigned"
                                                     : "bad signature";
    metrics::ProcessRuntime().CountRefusedDelivery("github");
    if (refused_since_report_.fetch_add(1) == 0) spdlog::warn("github webhook delivery refused: {}", why);
    else spdlog::debug("github webhook delivery refused: {}", why);
    return kRefusedDelivery;
  }
  // Signed, so from GitHub, yet still read field by field: a wrong type is a skipped delivery
  // with its reason, never an exception.
  auto parsed = json_read::ParseObject(req.body, "the body");
  if (!parsed.ok()) {
    spdlog::warn("github webhook skipped delivery={} event={} reason=\"{}\"", delivery, req.event, parsed.status().message());
    health(true, "", 1);
    return {400, parsed.status().message()};
  }
  const json& payload = *parsed;
  if (req.event == "ping") return {200, "pong"};
  auto full_name = json_read::OptString(payload, "repository.full_name");
  auto action_field = json_read::OptString(payload, "action");
  if (!full_name.ok() || !action_field.ok()) {
    const std::string why = (!full_name.ok() ? full_name.status() : action_field.status()).message();
    spdlog::warn("github webhook skipped delivery={} event={} reason=\"{}\"", delivery, req.event, why);
    health(true, "", 1);
    return {400, "skipped: " + why};
  }
  if (text::AsciiLower(*full_name) != text::AsciiLower(options_.repo)) return {202, "not the configured repository"};
  // Never GET /user here: the sender waits at most 10 s and GitHub never redelivers. The login
  // the last run learned (its identity cursor) serves until the round confirms it; on a first
  // start the delivery waits in memory for the round that learns it.
  if (!AdoptStoredIdentity()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (bot_login_.empty()) {  // else the round learned it meanwhile, and took the waiting ones
      if (waiting_.size() >= kMaxWaitingDeliveries || waiting_bytes_ + req.body.size() > kMaxWaitingBytes)
        return {503, "the agent's GitHub identity is not known yet and too many deliveries wait for it"};
      waiting_.push_back(req);
      waiting_bytes_ += req.body.size();
      spdlog::info("github webhook delivery waits for the identity event={} waiting={}", req.event, waiting_.size());
      return {202, "accepted: taken as soon as the agent's GitHub identity is known"};
    }
  }

  const std::string& action = *action_field;
  NormalizeContext ctx = Context();
  // Only the deliveries whose handling depends on it ask which pull requests are tracked.
  const bool ci = (req.event == "workflow_run" || req.event == "check_run") && action == "completed";
  const bool closing = req.event == "pull_request" && action == "closed";
  if (ci || closing) {
    auto tracked = TrackedPulls();
    if (!tracked.ok()) {
      // Taken as "none tracked", a Ticket's own CI or its PR's closing would be dropped here.
      health(false, "tracked pull requests not read: " + tracked.status().message());
      return {503, "the agent's state could not be read; the next polling round takes this event"};
    }
    ctx.tracked = std::move(*tracked);
  }
  std::optional<Normalized> n = NormalizeWebhook(req.event, payload, ctx);
  if (!n) return {202, "event not taken: " + req.event + (action.empty() ? "" : "." + action)};
  if (n->kind == Normalized::Kind::kMalformed) {
    spdlog::warn("github webhook item skipped delivery={} reason=\"{}\"", delivery, n->why);
    health(true, "", 1);
    return {202, "skipped: " + n->why};
  }
  if (n->kind == Normalized::Kind::kSkip) return {202, "not taken: " + n->why};

  // One delivery, one transaction: the Trigger, the path's health and — for a request that
  // addresses the agent in a discussion not yet followed — the cursor that starts following it.
  const auto stored = views_->SourceCursors(source_name_);
  if (!stored.ok()) {
    // Taken as "nothing followed", it would restart a followed discussion from a fresh cursor.
    // Not stored now: the notifications round brings the same comment.
    health(false, "cursors not read: " + stored.status().message());
    return {503, "the agent's state could not be read; the next polling round takes this event"};
  }
  const auto& cursors = *stored;
  bool followed = false;
  auto d = DiscussionOf(n->trigger.threads.back());
  if (d) followed = Followed(*d, cursors);
  // CI on a tracked pull request's head, and its closing, are the Ticket's own: taken even when
  // the repo-wide scope is off, and before any round has read the pull request.
  if (json_read::Find(n->trigger.meta, "pull_number") != nullptr) followed = true;
  for (const TrackedPull& p : ctx.tracked)
    if (closing && d && d->pull && d->number == p.number) followed = true;
  SourceUpdate u;
  u.source = source_name_;
  u.path = "webhook";
  std::optional<Discussion> starts_following;
  if (n->trigger.addressed && !json_read::BoolOr(n->trigger.meta, "own") && !followed) {
    starts_following = DiscussionOf(n->trigger.threads.front());
    if (starts_following && cursors.count(starts_following->Key())) starts_following.reset();
    if (starts_following) u.set_cursors[starts_following->Key()] = FollowCursor(n->trigger.at);
  }
  Intake intake;
  RoundReport report;
  ReceiveNormalized(*n, "webhook", followed, &intake, &report, &u);
  if (!intake.error.empty()) {
    health(false, intake.error);
    return {500, "could not store the event"};
  }
  if (intake.skipped > 0) {
    health(true, "", intake.skipped);  // intake refused the item: nothing of `u` was written
  } else if (starts_following) {
    spdlog::info("github following discussion={} repo={}", starts_following->Key(), options_.repo);
  }
  const char* outcome = report.stored ? "stored" : report.duplicate ? "duplicate" : "filtered";
  spdlog::info("github webhook delivery={} event={}.{} repo={} trigger={} outcome={}", delivery, req.event, action,
               options_.repo, n->trigger.id, outcome);
  return {200, outcome};
}

bool Source::AdoptStoredIdentity() {
  if (!BotLogin().empty()) return true;
  std::string login = options_.bot_login;
  if (login.empty() && options_.shared_identity) login = options_.shared_identity();
  if (login.empty()) {
    auto cursors = views_->SourceCursors(source_name_);
    if (!cursors.ok()) return false;  // unknown for now: the delivery waits for the round
    if (auto it = cursors->find("identity"); it != cursors->end()) {
      json j = json::parse(it->second, nullptr, false);
      if (j.is_object() && j.contains("login") && j["login"].is_string()) login = j["login"].get<std::string>();
    }
  }
  if (login.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (bot_login_.empty()) {
    bot_login_ = login;
    spdlog::info("github identity login={} from=stored (confirmed by the next round)", login);
  }
  return true;
}

void Source::TakeWaiting() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (waiting_.empty()) return;
  }
  if (AdoptStoredIdentity()) TakeWaitingDeliveries();
}

void Source::TakeWaitingDeliveries() {
  std::deque<WebhookRequest> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting.swap(waiting_);
    waiting_bytes_ = 0;
  }
  for (const WebhookRequest& r : waiting) {
    WebhookReply reply = HandleWebhook(r);
    spdlog::info("github webhook delivery taken after the identity event={} status={} outcome={}", r.event, reply.status,
                 reply.message);
  }
}

void Source::ReportRefusedDeliveries() {
  sources::ReportRefused(*engine_, "github", "webhook", refused_since_report_.exchange(0),
                         options_.webhook_secret.empty()
                             ? "no webhook secret is configured: set github.webhook_secret_env"
                             : "unsigned or not signed with github.webhook_secret_env's secret",
                         &refusals_reported_);
}

void InstallWebhookRoute(httplib::Server& server, Source* source) {
  InstallWebhookHandler(server, [source](const WebhookRequest& w) { return source->HandleWebhook(w); });
}

void InstallWebhookHandler(httplib::Server& server, std::function<WebhookReply(const WebhookRequest&)> handle) {
  server.Post("/hooks/github", [handle = std::move(handle)](const httplib::Request& req, httplib::Response& res) {
    WebhookRequest w;
    w.event = req.get_header_value("X-GitHub-Event");
    w.delivery = req.get_header_value("X-GitHub-Delivery");
    w.signature = req.get_header_value("X-Hub-Signature-256");
    w.body = req.body;
    const WebhookReply reply = handle(w);
    res.status = reply.status;
    // The message may quote the event header, which is any bytes the sender chose.
    res.set_content(json{{"status", reply.status}, {"message", reply.message}}.dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
  });
}

}  // namespace superagent::github
