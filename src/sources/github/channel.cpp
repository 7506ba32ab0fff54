// GitHubChannel: the only code that writes to GitHub, called by the Effects loop (SPEC §8).
// Every message starts with the automated-agent line and ends with a hidden receipt marker; when
// an earlier attempt may have reached GitHub, the marker is looked for before posting again, so
// a crash between "posted" and "recorded" still leaves exactly one comment (SPEC §12).
#include <spdlog/spdlog.h>

#include "superagent/github.h"
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

Target ParseTarget(const std::string& channel) {
  Target t;
  auto parts = Split(channel, ':');
  if (parts.size() < 3 || parts[0] != "github") return t;
  if ((parts[1] == "issue" || parts[1] == "pull") && ParsePositive(parts[2], &t.number)) {
    if (parts.size() == 3) {
      t.kind = Target::Kind::kIssueComment;
    } else if (parts.size() == 5 && parts[1] == "pull" && parts[3] == "review" && ParsePositive(parts[4], &t.comment_id)) {
      t.kind = Target::Kind::kReviewReply;
    }
  } else if (parts[1] == "commit" && parts.size() == 3 && parts[2].size() >= 7 &&
             parts[2].find_first_not_of("0123456789abcdefABCDEF") == std::string::npos) {
    t.kind = Target::Kind::kCommitComment;
    t.sha = parts[2];
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

std::string ReceiptMarker(const std::string& id) { return "<!-- superagent-receipt: " + id + " -->"; }

std::string MessageText(const std::string& body, const std::string& marker_id) {
  std::string text = body;
  if (text.rfind(kAutomatedFirstLine, 0) != 0) text = std::string(kAutomatedFirstLine) + "\n\n" + text;
  return text + "\n\n" + ReceiptMarker(marker_id);
}

GitHubChannel::GitHubChannel(Client* client, std::string repo) : client_(client), repo_(std::move(repo)) {}

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

bool GitHubChannel::Handles(const std::string& channel) const { return IsGitHubChannel(channel); }

Delivery GitHubChannel::Perform(const Effect& effect, bool outcome_unknown) {
  if (effect.kind == "post_message") return PostMessage(effect, outcome_unknown);
  if (effect.kind == "add_reaction") return AddReaction(effect);
  if (effect.kind == "open_pull_request") return OpenPullRequest(effect, outcome_unknown);
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
  const std::string marker = ReceiptMarker(receipt.id);
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
  ApiResponse r = client_->Send("POST", post_path, json{{"body", MessageText(receipt.body, receipt.id)}});
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
  const std::string marker = ReceiptMarker(key);
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
  auto find_existing = [&](bool require_marker, std::string* error) -> std::optional<json> {
    ApiResponse r =
        client_->GetAll(repo + "/pulls?state=all&head=" + QueryValue(head_ref) + "&per_page=100", "", CallOptions{0, 2});
    if (!r.ok()) {
      *error = r.error;
      return std::nullopt;
    }
    for (const json& pr : r.body) {
      if (!pr.is_object()) continue;
      std::string body = pr.contains("body") && pr["body"].is_string() ? pr["body"].get<std::string>() : "";
      if (!require_marker || body.find(marker) != std::string::npos) return pr;
    }
    return std::nullopt;
  };
  if (outcome_unknown) {
    std::string error;
    if (auto existing = find_existing(true, &error)) return done(*existing);
    if (!error.empty()) return Delivery::Retry("looking for an earlier pull request: " + error);
  }
  // The PR points back at the discussion that asked for it; GitHub links both ways from this.
  std::string text = p.value("body", "");
  if (std::string url = p.value("discussion_url", ""); !url.empty()) text += (text.empty() ? "" : "\n\n") + ("Requested in " + url);
  json body{{"head", head}, {"base", base}, {"title", title}, {"body", MessageText(text, key)},
            {"draft", p.value("draft", false)}};
  ApiResponse r = client_->Send("POST", repo + "/pulls", body);
  if (r.ok()) {
    Delivery d = done(r.body);
    spdlog::info("github pull request opened number={} head={} base={}", d.external_id, head, base);
    return d;
  }
  if (r.status == 422 && r.error.find("already exists") != std::string::npos) {
    // The branch already has an open PR (ours from an earlier attempt, or a person's): record it.
    std::string error;
    if (auto existing = find_existing(false, &error)) return done(*existing);
  }
  return FromResponse(r, "open pull request " + head + " → " + base);
}

}  // namespace superagent::github
