// GitHubChannel: the only code that writes to GitHub, called by the Effects loop (SPEC §8).
// Every message starts with the automated-agent line and ends with a hidden receipt marker; when
// an earlier attempt may have reached GitHub, the marker is looked for before posting again, so
// a crash between "posted" and "recorded" still leaves exactly one comment (SPEC §12).
#include <spdlog/spdlog.h>

#include "superagent/github.h"
#include "superagent/github_threads.h"
#include "sources/github/channel.h"
#include "superagent/json_read.h"
#include "superagent/text.h"

namespace superagent::github {

using nlohmann::json;

namespace {

// Where a post_message goes, derived from the Receipt's channel.
struct Target {
  enum class Kind { kIssueComment, kReviewReply, kCommitComment, kNone } kind = Kind::kNone;
  std::int64_t number = 0;
  std::int64_t comment_id = 0;  // review thread's top comment
  std::string sha;
};

bool ParsePositive(const std::string& s, std::int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return v > 0;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto p = s.find(sep, start);
    parts.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return parts;
}

// What a qualified channel ("github:<repo>:issue:5", github_threads.h) names within its repository.
Target ParseTarget(const std::string& channel) {
  Target t;
  auto place = github_threads::PlaceOf(channel);
  if (!place || place->rest.empty()) return t;
  auto parts = Split(place->rest, ':');
  if (parts.size() < 2) return t;
  if ((parts[0] == "issue" || parts[0] == "pull") && ParsePositive(parts[1], &t.number)) {
    if (parts.size() == 2) {
      t.kind = Target::Kind::kIssueComment;
    } else if (parts.size() == 4 && parts[0] == "pull" && parts[2] == "review" && ParsePositive(parts[3], &t.comment_id)) {
      t.kind = Target::Kind::kReviewReply;
    }
  } else if (parts[0] == "commit" && parts.size() == 2 && parts[1].size() >= 7 &&
             parts[1].find_first_not_of("0123456789abcdefABCDEF") == std::string::npos) {
    t.kind = Target::Kind::kCommitComment;
    t.sha = parts[1];
  }
  return t;
}

std::string IdOf(const json& body, const char* key = "id") {
  if (body.is_object() && body.contains(key)) {
    if (body[key].is_number_integer()) return std::to_string(body[key].get<std::int64_t>());
    if (body[key].is_string()) return body[key].get<std::string>();
  }
  return "";
}

}  // namespace

std::string WebUrlOf(const std::string& api_url) {
  std::string base = api_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base == "https://api.github.com") return "https://github.com";
  const std::string ghes = "/api/v3";
  if (base.size() > ghes.size() && base.compare(base.size() - ghes.size(), ghes.size(), ghes) == 0)
    return base.substr(0, base.size() - ghes.size());
  return base;
}

std::string ReceiptMarker(const std::string& id) { return "<!-- superagent-receipt: " + id + " -->"; }

std::string MessageText(const std::string& body, const std::string& marker_id) {
  std::string text = body;
  if (text.rfind(kAutomatedFirstLine, 0) != 0) text = std::string(kAutomatedFirstLine) + "\n\n" + text;
  return text + "\n\n" + ReceiptMarker(marker_id);
}

std::string WithLinkedPulls(const std::string& body, std::int64_t ticket, const std::vector<PullLink>& links) {
  std::string section = std::string(kLinkedPullsBegin) + "\n**One change across repositories** (Ticket #" +
                        std::to_string(ticket) + "), merged together:\n";
  for (const PullLink& link : links) section += "- " + link.repo + "#" + std::to_string(link.number) + "\n";
  section += kLinkedPullsEnd;
  const std::string begin = kLinkedPullsBegin, end = kLinkedPullsEnd;
  const std::size_t at = body.find(begin);
  if (at == std::string::npos) {
    // A blank line keeps the section from running into the last paragraph (Markdown would join them).
    const auto ends_with = [&body](std::string_view tail) {
      return body.size() >= tail.size() && body.compare(body.size() - tail.size(), tail.size(), tail) == 0;
    };
    const char* gap = body.empty() || ends_with("\n\n") || ends_with("\r\n\r\n") ? ""
                      : ends_with("\n")                                            ? "\n"
                                                                                   : "\n\n";
    return body + gap + section;
  }
  // A begin marker alone is a section whose end was lost (an edit cut it): it runs to the end.
  const std::size_t close = body.find(end, at + begin.size());
  const std::size_t stop = close == std::string::npos ? body.size() : close + end.size();
  return body.substr(0, at) + section + body.substr(stop);
}

namespace {

// The id in a receipt marker: the install's first 12 hex digits before it, so a marker another
// install of the daemon left on the same issue (or this one before a data_dir reset) is not ours.
std::string MarkerId(const std::string& install_id, const std::string& id) {
  return install_id.empty() ? id : install_id.substr(0, 12) + "/" + id;
}

// Where a Ticket's PR was asked for, as much as `mode` (github.pull_request_origin) allows: a
// discussion's link, or only the platform — never what was said in a chat (issue 23).
std::string OriginLine(const std::string& mode, const json& p) {
  if (mode == "none") return "";
  const std::string url = json_read::StringOr(p, "discussion_url"), via = json_read::StringOr(p, "requested_via");
  if (mode == "link" && !url.empty()) return "Requested in " + url;
  if (via == "github") return "Requested in a GitHub discussion.";
  if (via == "feishu") return "Requested in a Feishu chat.";
  if (via == "panel") return "Requested in the superagent panel.";
  return "";
}

}  // namespace

GitHubChannel::GitHubChannel(Client* client, std::string repo, ChannelOptions options)
    : client_(client), repo_(std::move(repo)), options_(options) {
  if (options_.permissions == nullptr) own_permissions_ = std::make_unique<CollaboratorPermissions>(client_, repo_);
}

bool IsGitHubChannel(const std::string& channel) { return channel.rfind("github:", 0) == 0; }

MessageLimit MessageLimitOf(std::size_t max_chars) {
  MessageLimit limit;
  limit.too_long = [max_chars](const std::string& body) -> std::string {
    if (std::size_t chars = text::CountCodePoints(body); chars > max_chars)
      return "GitHub messages may have at most " + std::to_string(max_chars) + " characters; this one has " +
             std::to_string(chars);
    return "";
  };
  limit.cut = [max_chars](const std::string& body) { return text::Cut(body, max_chars); };
  return limit;
}

bool GitHubChannel::Handles(const std::string& channel) const {
  auto place = github_threads::PlaceOf(channel);
  return place && place->repo == github_threads::Canonical(repo_);
}

Delivery GitHubChannel::Perform(const Effect& effect, bool outcome_unknown) {
  if (effect.kind == "post_message") return PostMessage(effect, outcome_unknown);
  if (effect.kind == "add_reaction") return AddReaction(effect);
  if (effect.kind == "open_pull_request") return OpenPullRequest(effect, outcome_unknown);
  if (effect.kind == "merge_pull_request") return MergePullRequest(effect);
  if (effect.kind == "check_run") return CheckRun(effect);
  if (effect.kind == "link_pull_requests") return LinkPullRequests(effect);
  return Delivery::Failed("the GitHub channel does not perform \"" + effect.kind + "\"");
}

Delivery GitHubChannel::FromResponse(const ApiResponse& r, const std::string& what) {
  if (r.ok()) return Delivery::Done(IdOf(r.body));
  if (r.rate_limited) return Delivery::Retry(what + ": " + r.error, std::max<TimeMs>(0, r.retry_after_ms));
  if (r.status == 404 || r.status == 410) return Delivery::Gone(what + ": " + r.error);
  // 0 = no answer (timeout, connection): it may have arrived, so the next attempt looks first.
  if (r.status == 0 || r.status >= 500) return Delivery::Retry(what + ": " + r.error);
  // A bad or expired token is fixed by a person; keep the message until then.
  if (r.status == 401) return Delivery::Retry(what + ": " + r.error + " (check the GitHub token)");
  return Delivery::Failed(what + ": " + r.error);
}

std::optional<std::string> GitHubChannel::FindMarker(const std::string& list_path, const std::string& marker,
                                                     std::string* error) {
  ApiResponse r = client_->GetAll(list_path, "", CallOptions{0, 2});
  if (!r.ok()) {
    *error = r.error;
    return std::nullopt;
  }
  for (const json& c : r.body) {
    if (c.is_object() && c.contains("body") && c["body"].is_string() &&
        c["body"].get<std::string>().find(marker) != std::string::npos)
      return IdOf(c);
  }
  return std::nullopt;
}

Delivery GitHubChannel::PostMessage(const Effect& effect, bool outcome_unknown) {
  if (!effect.receipt) return Delivery::Failed("post_message without a receipt");
  const Receipt& receipt = *effect.receipt;
  Target t = ParseTarget(receipt.channel);
  if (t.kind == Target::Kind::kNone) t = ParseTarget(receipt.thread);
  const std::string repo = "/repos/" + repo_;
  std::string post_path, list_path;
  // `since` bounds the search to comments written after the receipt existed (minus clock skew).
  const std::string since = IsoSeconds(receipt.created_at - 10 * 60'000);
  switch (t.kind) {
    case Target::Kind::kIssueComment:
      post_path = repo + "/issues/" + std::to_string(t.number) + "/comments";
      list_path = post_path + "?since=" + since + "&per_page=100";
      break;
    case Target::Kind::kReviewReply:
      post_path = repo + "/pulls/" + std::to_string(t.number) + "/comments/" + std::to_string(t.comment_id) + "/replies";
      list_path = repo + "/pulls/" + std::to_string(t.number) + "/comments?sort=created&direction=asc&since=" + since +
                  "&per_page=100";
      break;
    case Target::Kind::kCommitComment:
      post_path = repo + "/commits/" + t.sha + "/comments";
      list_path = post_path + "?per_page=100";
      break;
    case Target::Kind::kNone:
      return Delivery::Failed("no GitHub place to post for channel \"" + receipt.channel + "\"");
  }
  const std::string marker_id = MarkerId(options_.install_id, receipt.id);
  const std::string marker = ReceiptMarker(marker_id);
  if (outcome_unknown) {
    std::string error;
    auto existing = FindMarker(list_path, marker, &error);
    if (existing) {
      spdlog::info("github message already posted receipt={} comment={}", receipt.id, *existing);
      return Delivery::Done(*existing);
    }
    // Without knowing, posting could make a second copy: try again later instead.
    if (!error.empty()) return Delivery::Retry("looking for an earlier delivery: " + error);
  }
  ApiResponse r = client_->Send("POST", post_path, json{{"body", MessageText(receipt.body, marker_id)}});
  Delivery d = FromResponse(r, "post " + receipt.id);
  if (d.outcome == Delivery::Outcome::kDone)
    spdlog::info("github message posted receipt={} channel={} comment={}", receipt.id, receipt.channel, d.external_id);
  return d;
}

Delivery GitHubChannel::AddReaction(const Effect& effect) {
  static const std::set<std::string> kContents = {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"};
  const json& p = effect.payload;
  const std::string content = p.value("content", "");
  if (!kContents.count(content)) return Delivery::Failed("add_reaction: content must be one of +1 -1 laugh confused heart hooray rocket eyes");
  const std::string target = p.value("target", "");
  const std::string repo = "/repos/" + repo_;
  std::string path;
  std::int64_t comment_id = p.value("comment_id", std::int64_t{0});
  if (target == "issue_comment" && comment_id > 0) {
    path = repo + "/issues/comments/" + std::to_string(comment_id) + "/reactions";
  } else if (target == "review_comment" && comment_id > 0) {
    path = repo + "/pulls/comments/" + std::to_string(comment_id) + "/reactions";
  } else if (target == "issue") {
    Target t = ParseTarget(p.value("channel", ""));
    if (t.number <= 0) return Delivery::Failed("add_reaction: channel names no issue or pull request");
    path = repo + "/issues/" + std::to_string(t.number) + "/reactions";
  } else {
    return Delivery::Failed("add_reaction: target must be issue_comment, review_comment (with comment_id) or issue");
  }
  // 201 created, 200 already there: a reaction is idempotent by nature.
  return FromResponse(client_->Send("POST", path, json{{"content", content}}), "reaction " + content);
}

Delivery GitHubChannel::OpenPullRequest(const Effect& effect, bool outcome_unknown) {
  const json& p = effect.payload;
  const std::string head = p.value("head", ""), base = p.value("base", ""), title = p.value("title", "");
  if (head.empty() || base.empty() || title.empty())
    return Delivery::Failed("open_pull_request: head, base and title are required");
  const std::string key = p.value("idempotency_key", "effect:" + std::to_string(effect.id));
  const std::string marker = ReceiptMarker(MarkerId(options_.install_id, key));
  const std::string owner = repo_.substr(0, repo_.find('/'));
  const std::string head_ref = head.find(':') == std::string::npos ? owner + ":" + head : head;
  const std::string repo = "/repos/" + repo_;
  // An existing PR from the same head that carries our marker is this very action, done before.
  // Done with the PR's number and its web address, which the Ticket's result links to.
  auto done = [](const json& pr) {
    Delivery d = Delivery::Done(IdOf(pr, "number"));
    if (pr.is_object() && pr.contains("html_url") && pr["html_url"].is_string()) d.url = pr["html_url"].get<std::string>();
    return d;
  };
  // The pull request from the same head that carries this action's marker — this install's, for
  // this Ticket (issue 34: never another install's, nor a person's, from a branch of the same
  // name). `others` names the pull requests from that head that are not.
  auto find_existing = [&](std::string* error, std::string* others = nullptr) -> std::optional<json> {
    ApiResponse r =
        client_->GetAll(repo + "/pulls?state=all&head=" + QueryValue(head_ref) + "&per_page=100", "", CallOptions{0, 2});
    if (!r.ok()) {
      *error = r.error;
      return std::nullopt;
    }
    for (const json& pr : r.body) {
      if (!pr.is_object()) continue;
      if (json_read::StringOr(pr, "body").find(marker) != std::string::npos) return pr;
      const std::string number = IdOf(pr, "number");
      if (others != nullptr && others->size() < 60 && !number.empty() && number.size() <= 12 &&
          number.find_first_not_of("0123456789") == std::string::npos)
        *others += (others->empty() ? "#" : ", #") + number;
    }
    return std::nullopt;
  };
  if (outcome_unknown) {
    std::string error;
    if (auto existing = find_existing(&error)) return done(*existing);
    if (!error.empty()) return Delivery::Retry("looking for an earlier pull request: " + error);
  }
  // The PR points back at the discussion that asked for it; GitHub links both ways from this.
  std::string text = json_read::StringOr(p, "body");
  if (std::string origin = OriginLine(options_.pull_request_origin, p); !origin.empty())
    text += (text.empty() ? "" : "\n\n") + origin;
  json body{{"head", head}, {"base", base}, {"title", title}, {"body", MessageText(text, MarkerId(options_.install_id, key))},
            {"draft", p.value("draft", false)}};
  Delivery d = [&] {
    ApiResponse r = client_->Send("POST", repo + "/pulls", body);
    if (r.ok()) {
      Delivery opened = done(r.body);
      spdlog::info("github pull request opened number={} head={} base={} repo={}", opened.external_id, head, base, repo_);
      return opened;
    }
    if (r.status == 422 && r.error.find("already exists") != std::string::npos) {
      // The branch already has an open PR. Ours from an earlier attempt is recorded; anyone
      // else's is left alone, and the Ticket is told why in the daemon's words.
      std::string error, others;
      if (auto existing = find_existing(&error, &others)) return done(*existing);
      if (!error.empty()) return Delivery::Retry("looking for the pull request that already exists: " + error);
      spdlog::warn("github pull request not adopted head={} existing=\"{}\"", head, others);
      return Delivery::Failed("a pull request from " + head + " already exists" +
                              (others.empty() ? "" : " (" + others + ")") +
                              " and was not opened by this install for this Ticket, so it was left as it is");
    }
    return FromResponse(r, "open pull request " + head + " → " + base);
  }();
  // Also when the PR was found rather than opened: a crash may have come between the two writes,
  // and asking the same person again is harmless.
  if (d.outcome == Delivery::Outcome::kDone && p.contains("reviewers")) RequestReviewers(d.external_id, p["reviewers"]);
  return d;
}

// The rule's approver is asked to review. A refusal here (a login that is not a collaborator, the
// PR's own author, a typo in policy.yaml) does not fail the delivery: the PR exists and is the
// Ticket's result, a retry would not make GitHub accept the login, and without the request the
// approver still sees the PR in the discussion. The warning says why for whoever fixes the policy.
void GitHubChannel::RequestReviewers(const std::string& number, const json& reviewers) {
  json logins = json::array();
  if (reviewers.is_array()) {
    for (const json& r : reviewers)
      if (r.is_string() && !r.get<std::string>().empty()) logins.push_back(r);
  }
  if (logins.size() != (reviewers.is_array() ? reviewers.size() : 1))
    spdlog::warn("github pull request {}: reviewers must be a list of logins; requesting {} of them", number,
                 logins.size());
  if (logins.empty()) return;
  ApiResponse r = client_->Send("POST", "/repos/" + repo_ + "/pulls/" + number + "/requested_reviewers",
                                json{{"reviewers", logins}});
  if (r.ok()) {
    spdlog::info("github pull request {}: review requested from {}", number, logins.dump());
  } else {
    spdlog::warn("github pull request {}: could not request review from {}: {}", number, logins.dump(), r.error);
  }
}

Delivery GitHubChannel::MergePullRequest(const Effect& effect) {
  json_read::Fields f(effect.payload, "merge_pull_request");
  const std::int64_t ticket = f.Int("ticket");
  const std::int64_t number = f.Int("number");
  const bool check_only = f.OptBool("check_only");
  // A check may be asked before anyone named a head: it then vouches for whatever head is there.
  const std::string head_sha = check_only ? f.OptString("head_sha") : f.String("head_sha");
  AutoMergeRule rule;
  const std::int64_t max_lines = f.OptInt("max_changed_lines", rule.max_changed_lines);
  const std::int64_t approvals = f.OptInt("required_approvals", rule.required_approvals);
  rule.approver = f.OptString("approver");
  const std::string given_pull_key = f.OptString("pull_key");
  if (!f.ok()) return Delivery::Failed(f.status().message());
  // The same bounds as the policy's: an action built from anything else is a bug, not a wish.
  if (ticket <= 0 || number <= 0) return Delivery::Failed("merge_pull_request: ticket and number must be positive");
  if (max_lines < 1 || max_lines > 200)
    return Delivery::Failed("merge_pull_request: max_changed_lines must be from 1 to 200");
  if (approvals < 1 || approvals > 10)
    return Delivery::Failed("merge_pull_request: required_approvals must be from 1 to 10");
  rule.max_changed_lines = static_cast<int>(max_lines);
  rule.required_approvals = static_cast<int>(approvals);
  // Which open_pull_request the PR must come from: the Ticket's only one, or (a change across
  // repositories) the one of this repository. Only a PR key ("pr:ticket:…") may name it: a
  // message's receipt or another action's key, whose markers a body can also carry, never can.
  const json* pull_key_field = json_read::Find(effect.payload, "pull_key");
  const bool pull_key_given = pull_key_field != nullptr && !pull_key_field->is_null();
  const std::string pull_key = pull_key_given ? given_pull_key : "pr:ticket:" + std::to_string(ticket);
  // … and only this Ticket's: another Ticket's PR key would let one Ticket's approval merge the
  // other's pull request.
  const std::string own_key = "pr:ticket:" + std::to_string(ticket);
  if (pull_key_given && (pull_key.size() > 200 || (pull_key != own_key && pull_key.rfind(own_key + ":", 0) != 0)))
    return Delivery::Failed("merge_pull_request: pull_key must be \"" + own_key + "\" or start with \"" + own_key +
                            ":\", at most 200 bytes; it is \"" + text::Cut(text::Repair(pull_key), 60) + "\" (" +
                            std::to_string(pull_key.size()) + " bytes)");

  Client* merger = options_.merge_client != nullptr ? options_.merge_client : options_.merge_as_agent ? client_ : nullptr;
  if (merger == nullptr)
    return Delivery::Failed(
        "auto-merge needs a merge account: set github.merge_token_env (the agent account never merges by default)");

  const std::string what = "merge pull request #" + std::to_string(number);
  const std::string path = "/repos/" + repo_ + "/pulls/" + std::to_string(number);
  ApiResponse pr = client_->Get(path, CallOptions{0, 2});
  if (!pr.ok()) return FromResponse(pr, what);
  // Merged by us before the answer came back, or by a person: either way the work is done.
  if (json_read::BoolOr(pr.body, "merged")) {
    if (!check_only) return Delivery::Done(json_read::StringOr(pr.body, "merge_commit_sha"));
    // A check asks whether this PR stands in the way of merging its change: a merged one does
    // not, and its head is what was merged.
    const std::string merged_head = json_read::StringOr(pr.body, "head.sha");
    spdlog::info("github auto-merge check: already merged number={} ticket={} head={}", number, ticket, merged_head);
    return Delivery::Done(merged_head);
  }
  // Every review, page by page until a page is not full. Not by the Link header: a page answered
  // 304 brings back its cached Link, so the page that was last when the list was shorter would
  // hide reviews added since — and a hidden "changes requested" must never let a merge through.
  constexpr int kPerPage = 100, kMaxPages = 30;
  json reviews = json::array();
  for (int page = 1;; ++page) {
    if (page > kMaxPages)
      return Delivery::Failed(what + ": more than " + std::to_string(kPerPage * kMaxPages) +
                              " reviews; a person merges this one");
    ApiResponse r = client_->Get(path + "/reviews?per_page=" + std::to_string(kPerPage) + "&page=" + std::to_string(page),
                                 CallOptions{0, 2});
    if (!r.ok()) return FromResponse(r, what + ": reading its reviews");
    if (!r.body.is_array())
      return Delivery::Failed(what + ": reading its reviews: page " + std::to_string(page) + " is not a list");
    for (const json& review : r.body) reviews.push_back(review);
    if (r.body.size() < static_cast<std::size_t>(kPerPage)) break;
  }
  Result<PullFacts> facts = PullFactsFromJson(pr.body, reviews);
  if (!facts.ok()) return Delivery::Failed(what + ": " + facts.status().message());
  // The agent's own approval never counts; until the first round has learnt who the agent is,
  // wait rather than guess (a refusal would be final for this head).
  facts->agent_login = options_.agent_login ? options_.agent_login() : "";
  if (facts->agent_login.empty()) return Delivery::Retry(what + ": the agent's own login is not known yet");
  // The files it changes, for the screenshot rule: a UI change needs the rule's named approver.
  if (options_.ui_path) {
    constexpr int kMaxFilePages = 30;  // GitHub lists at most 3000 files of a pull request
    for (int page = 1;; ++page) {
      ApiResponse r = client_->Get(path + "/files?per_page=" + std::to_string(kPerPage) + "&page=" + std::to_string(page),
                                   CallOptions{0, 2});
      if (!r.ok()) return FromResponse(r, what + ": reading its files");
      if (!r.body.is_array())
        return Delivery::Failed(what + ": reading its files: page " + std::to_string(page) + " is not a list");
      for (const json& file : r.body) {
        // A file whose name cannot be read might be anything: taken as a UI change.
        const std::string name = json_read::StringOr(file, "filename");
        const std::string before = json_read::StringOr(file, "previous_filename");
        if (name.empty() || options_.ui_path(name) || (!before.empty() && options_.ui_path(before)))
          facts->ui_files.push_back(name.empty() ? "a file without a readable name" : name);
      }
      if (r.body.size() < static_cast<std::size_t>(kPerPage)) break;
      if (page == kMaxFilePages)
        return Delivery::Failed(what + ": " + std::to_string(kPerPage * kMaxFilePages) +
                                " files or more, more than GitHub lists; a person merges this one");
    }
  }
  CollaboratorPermissions* permissions = options_.permissions;
  if (permissions == nullptr) {
    // Without the Integration's rounds, each merge decision is its own round.
    permissions = own_permissions_.get();
    permissions->NewRound();
  }
  const std::string marker = ReceiptMarker(MarkerId(options_.install_id, pull_key));
  const std::string expected_head = head_sha.empty() && check_only ? facts->head_sha : head_sha;
  if (std::string refusal = AutoMergeRefusal(*facts, rule, expected_head, marker,
                                             [permissions](const std::string& login) { return permissions->Of(login); });
      !refusal.empty()) {
    spdlog::info("github auto-merge refused pull={} ticket={}{}: {}", number, ticket, check_only ? " (check only)" : "",
                 refusal);
    return Delivery::Failed("auto-merge refused: " + refusal);
  }
  if (check_only) {
    spdlog::info("github auto-merge check passed number={} ticket={} head={}", number, ticket, expected_head);
    return Delivery::Done(expected_head);
  }
  // Pinned to the head the guard saw: GitHub refuses (409) when a push came in between.
  ApiResponse merged = merger->Send("PUT", path + "/merge", json{{"sha", head_sha}, {"merge_method", "squash"}});
  if (merged.ok()) {
    spdlog::info("github pull request merged number={} ticket={} head={}", number, ticket, head_sha);
    return Delivery::Done(json_read::StringOr(merged.body, "sha"));
  }
  // 405 not mergeable (conflicts, failing required checks, branch protection), 409 head moved:
  // GitHub's own words say which, and only a new action with a new head can change them.
  if (merged.status == 405 || merged.status == 409) return Delivery::Failed(what + ": " + merged.error);
  return FromResponse(merged, what);
}

Delivery GitHubChannel::LinkPullRequests(const Effect& effect) {
  json_read::Fields f(effect.payload, "link_pull_requests");
  const std::int64_t ticket = f.Int("ticket");
  const std::int64_t number = f.Int("number");
  if (!f.ok()) return Delivery::Failed(f.status().message());
  if (ticket <= 0 || number <= 0) return Delivery::Failed("link_pull_requests: ticket and number must be positive");
  Result<const json*> listed = json_read::Array(effect.payload, "links");
  if (!listed.ok()) return Delivery::Failed("link_pull_requests: " + listed.status().message());
  // A change spans a few repositories; more is a bug upstream, and the section must stay short.
  constexpr std::size_t kMaxLinks = 10;
  const json& entries = **listed;
  if (entries.empty() || entries.size() > kMaxLinks)
    return Delivery::Failed("link_pull_requests: links must have 1 to " + std::to_string(kMaxLinks) +
                            " entries; it has " + std::to_string(entries.size()));
  std::vector<PullLink> links;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string what = "link_pull_requests: links[" + std::to_string(i) + "]";
    json_read::Fields lf(entries[i], what);
    PullLink link{lf.String("repo"), lf.Int("number")};
    if (!lf.ok()) return Delivery::Failed(lf.status().message());
    // The name goes into the body as Markdown: only a real repository name may, nothing that
    // could carry a link, a mention or a closing marker of its own.
    if (!github_threads::IsRepositoryName(link.repo))
      return Delivery::Failed(what + ": repo \"" + text::Cut(text::Repair(link.repo), 60) +
                              "\" is not a repository name (owner/name)");
    if (link.number <= 0) return Delivery::Failed(what + ": number must be positive");
    links.push_back(std::move(link));
  }

  const std::string what = "linking pull request #" + std::to_string(number);
  const std::string path = "/repos/" + repo_ + "/pulls/" + std::to_string(number);
  ApiResponse pr = client_->Get(path, CallOptions{0, 2});
  if (!pr.ok()) return FromResponse(pr, what);
  // Only a body that was read may be rewritten: writing the section over an answer without one
  // would wipe what a person wrote.
  const json* read = pr.body.is_object() ? json_read::Find(pr.body, "body") : nullptr;
  if (read == nullptr || !(read->is_string() || read->is_null()))
    return Delivery::Failed(what + ": GitHub's answer has no readable body (" +
                            (read == nullptr ? std::string("missing") : json_read::TypeName(*read)) + ")");
  const std::string old_body = read->is_string() ? read->get<std::string>() : "";
  const std::string new_body = WithLinkedPulls(old_body, ticket, links);
  Delivery done = Delivery::Done(std::to_string(number));
  done.url = json_read::StringOr(pr.body, "html_url");
  if (new_body == old_body) return done;
  if (const std::size_t chars = text::CountCodePoints(new_body); chars > kMaxPullBodyChars)
    return Delivery::Failed(what + ": its body with the links would have " + std::to_string(chars) +
                            " characters, more than GitHub's " + std::to_string(kMaxPullBodyChars));
  ApiResponse patched = client_->Send("PATCH", path, json{{"body", new_body}});
  if (!patched.ok()) return FromResponse(patched, what);
  std::string named;
  for (const PullLink& link : links) named += (named.empty() ? "" : ",") + link.repo + "#" + std::to_string(link.number);
  spdlog::info("github pull request links updated number={} ticket={} links={}", number, ticket, named);
  return done;
}

namespace {

// A check run's external_id: which Ticket's stage it shows, and as of when.
std::string CheckRunExternalId(std::int64_t ticket, std::int64_t at) {
  return "superagent-ticket-" + std::to_string(ticket) + "@" + std::to_string(at);
}

// The `at` of a check run this daemon made for `ticket`, or -1 for anyone else's.
std::int64_t CheckRunAt(const json& run, std::int64_t ticket) {
  const std::string id = json_read::StringOr(run, "external_id");
  const std::string prefix = "superagent-ticket-" + std::to_string(ticket) + "@";
  std::int64_t at = 0;
  if (id.rfind(prefix, 0) != 0 || !ParsePositive(id.substr(prefix.size()), &at)) return -1;
  return at;
}

}  // namespace

Delivery GitHubChannel::CheckRun(const Effect& effect) {
  json_read::Fields f(effect.payload, "check_run");
  const std::int64_t ticket = f.Int("ticket");
  const std::int64_t number = f.Int("number");
  const std::string stage = f.String("stage");
  const std::int64_t at = f.Int("at");
  const std::string title = f.OptString("title");
  const std::string summary = f.OptString("summary");
  const std::string cause = f.OptString("cause");
  const std::string details_url = f.OptString("details_url");
  if (!f.ok()) return Delivery::Failed(f.status().message());
  if (ticket <= 0 || number <= 0 || at <= 0) return Delivery::Failed("check_run: ticket, number and at must be positive");

  // Its stage in the words GitHub shows: a Ticket still at work is in progress; ready passes;
  // blocked needs a person (action_required links to the panel); a stopped Ticket was cancelled.
  json run = {{"name", kCheckRunName}, {"external_id", CheckRunExternalId(ticket, at)}};
  if (stage == "working" || stage == "idle" || stage == "waiting_for_person") {
    run["status"] = "in_progress";
  } else if (stage == "ready") {
    run["conclusion"] = "success";
  } else if (stage == "blocked") {
    run["conclusion"] = "action_required";
  } else if (stage == "ended") {
    run["conclusion"] = cause == "stopped" ? "cancelled" : "neutral";
  } else {
    return Delivery::Failed("check_run: unknown stage \"" + text::Cut(text::Repair(stage), 40) + "\"");
  }
  // A conclusion marks the run completed; GitHub stamps the time itself.
  const bool completed = run.contains("conclusion");
  if (!details_url.empty()) run["details_url"] = details_url;
  // GitHub's own limits: a title of 255 characters would be refused, a summary of 65535.
  run["output"] = {{"title", text::Cut(text::Repair(title.empty() ? stage : title), 200)},
                   {"summary", text::Cut(text::Repair(summary.empty() ? title : summary), 60'000)}};

  const std::string what = "check run for pull request #" + std::to_string(number);
  ApiResponse pull = client_->Get("/repos/" + repo_ + "/pulls/" + std::to_string(number), CallOptions{0, 2});
  if (!pull.ok()) return FromResponse(pull, what);
  const std::string head_sha = json_read::StringOr(pull.body, "head.sha");
  if (head_sha.size() < 7 || head_sha.find_first_not_of("0123456789abcdef") != std::string::npos)
    return Delivery::Failed(what + ": GitHub's answer names no head commit");

  // One check run per head commit: the one made earlier is updated, unless it already shows a
  // later stage (an Effect retried after a newer one went through) or this very update (a retry
  // after an answer was lost).
  ApiResponse listed = client_->Get("/repos/" + repo_ + "/commits/" + head_sha + "/check-runs?check_name=" +
                                        QueryValue(kCheckRunName) + "&per_page=100",
                                    CallOptions{0, 2});
  if (!listed.ok()) return FromResponse(listed, what);
  const json* mine = nullptr;
  std::int64_t mine_at = -1;
  if (listed.body.is_object() && listed.body.contains("check_runs") && listed.body["check_runs"].is_array())
    for (const json& r : listed.body["check_runs"]) {
      const std::int64_t r_at = CheckRunAt(r, ticket);
      if (r_at > mine_at) {
        mine = &r;
        mine_at = r_at;
      }
    }
  if (mine != nullptr && mine_at >= at) return Delivery::Done(IdOf(*mine));
  if (mine == nullptr) {
    // A head without a run of this Ticket's: the first, or new commits were pushed. The run on
    // the head before it would otherwise say "in progress" forever (issue 34).
    if (Delivery d = SupersedeEarlierCheckRuns(ticket, number, head_sha); d.outcome != Delivery::Outcome::kDone)
      return d;
  }
  ApiResponse written;
  // A finished check run is not reopened: a new one shows the Ticket at work again (GitHub shows
  // the newest of a name).
  if (mine != nullptr && (completed || json_read::StringOr(*mine, "status") != "completed")) {
    written = client_->Send("PATCH", "/repos/" + repo_ + "/check-runs/" + IdOf(*mine), run);
  } else {
    run["head_sha"] = head_sha;
    written = client_->Send("POST", "/repos/" + repo_ + "/check-runs", run);
  }
  if (written.status == 403)
    return Delivery::Failed(what + ": " + written.error +
                            " (check runs need a GitHub App with the checks: write permission)");
  Delivery d = FromResponse(written, what);
  if (d.outcome == Delivery::Outcome::kDone)
    spdlog::info("github check run shown ticket={} number={} stage={} check_run={}", ticket, number, stage,
                 d.external_id);
  return d;
}

Delivery GitHubChannel::SupersedeEarlierCheckRuns(std::int64_t ticket, std::int64_t number, const std::string& head_sha) {
  // Each new head completes the runs of the one before it, so only the newest earlier commit that
  // has a run of this Ticket's needs looking at, and a few commits back is far enough (one push
  // rarely adds more). A head a force push dropped is not among the pull request's commits: its
  // run stays as it was.
  constexpr int kMaxCommitsBack = 10;
  const std::string what = "superseding the check run of pull request #" + std::to_string(number);
  auto failed = [&](const ApiResponse& r, const std::string& step) {
    // Worth another try (the next attempt looks again); anything else is not worth holding the
    // new head's run for: it is logged and the new run shown.
    Delivery d = FromResponse(r, what + ": " + step);
    if (d.outcome == Delivery::Outcome::kRetry) return d;
    spdlog::warn("github check run not superseded ticket={} number={} error=\"{}\"", ticket, number, d.error);
    return Delivery::Done("");
  };
  ApiResponse commits = client_->GetAll("/repos/" + repo_ + "/pulls/" + std::to_string(number) + "/commits?per_page=100",
                                        "", CallOptions{0, 2});
  if (!commits.ok()) return failed(commits, "listing its commits");
  std::vector<std::string> earlier;  // newest first
  if (commits.body.is_array())
    for (const json& c : commits.body) {
      const std::string sha = json_read::StringOr(c, "sha");
      if (sha.size() >= 7 && sha.size() <= 64 && sha != head_sha &&
          sha.find_first_not_of("0123456789abcdef") == std::string::npos)
        earlier.insert(earlier.begin(), sha);
    }
  if (earlier.size() > static_cast<std::size_t>(kMaxCommitsBack)) earlier.resize(kMaxCommitsBack);
  for (const std::string& sha : earlier) {
    ApiResponse listed = client_->Get("/repos/" + repo_ + "/commits/" + sha + "/check-runs?check_name=" +
                                          QueryValue(kCheckRunName) + "&per_page=100",
                                      CallOptions{0, 2});
    if (!listed.ok()) return failed(listed, "listing the check runs of " + sha.substr(0, 7));
    const json* runs = json_read::Find(listed.body, "check_runs");
    if (runs == nullptr || !runs->is_array()) continue;
    bool any = false;
    for (const json& r : *runs) {
      if (CheckRunAt(r, ticket) < 0) continue;
      any = true;
      if (json_read::StringOr(r, "status") == "completed") continue;
      const std::string id = IdOf(r);
      if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) continue;
      const json done = {{"conclusion", "neutral"},
                         {"output",
                          {{"title", "Superseded by a newer commit"},
                           {"summary", "Pull request #" + std::to_string(number) + " moved on to " +
                                           head_sha.substr(0, 7) + "; Ticket #" + std::to_string(ticket) +
                                           "'s stage is shown on that commit."}}}};
      ApiResponse patched = client_->Send("PATCH", "/repos/" + repo_ + "/check-runs/" + id, done);
      if (!patched.ok()) return failed(patched, "completing check run " + id);
      spdlog::info("github check run superseded ticket={} number={} check_run={} head={} by={}", ticket, number, id,
                   sha.substr(0, 7), head_sha.substr(0, 7));
    }
    if (any) break;
  }
  return Delivery::Done("");
}

}  // namespace superagent::github
