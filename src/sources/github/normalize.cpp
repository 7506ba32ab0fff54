// GitHub JSON → Trigger (SPEC §3.1). REST answers and webhook payloads carry the same objects,
// so one normalizer serves both paths, and the same event gets the same id whichever way it came.
#include <cctype>

#include "sources/github/normalize.h"
#include "sources/github/normalize_internal.h"
#include "superagent/digest.h"
#include "superagent/github.h"
#include "superagent/text.h"

namespace superagent::github {

using nlohmann::json;
using namespace normalize_internal;

namespace {

// The number at the end of ".../issues/57" or ".../pulls/12".
bool NumberFromUrl(const std::string& url, std::int64_t* out) {
  auto slash = url.find_last_of('/');
  if (slash == std::string::npos || slash + 1 >= url.size()) return false;
  std::int64_t v = 0;
  for (std::size_t i = slash + 1; i < url.size(); ++i) {
    char c = url[i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return v > 0;
}

bool SameLogin(const std::string& a, const std::string& b) { return !a.empty() && text::AsciiLower(a) == text::AsciiLower(b); }

// Who wrote it, as the Source reports people: login, human or not, own or not.
struct Author {
  std::optional<std::string> login;
  bool human = false;
  bool own = false;
};

bool ReadAuthor(const json& item, const NormalizeContext& ctx, Author* a) {
  const json* user = Field(item, "user");
  if (user == nullptr || user->is_null()) {
    // A deleted account: GitHub shows "ghost". Nobody can be allow-listed as that.
    a->login = "ghost";
    a->human = false;
    return true;
  }
  std::string login, type;
  if (!ReqString(*user, "login", &login) || !OptString(*user, "type", &type)) return false;
  a->login = login;
  bool bot_suffix = login.size() > 5 && login.compare(login.size() - 5, 5, "[bot]") == 0;
  a->human = (type.empty() || type == "User") && !bot_suffix;
  a->own = SameLogin(login, ctx.bot_login);
  return true;
}

Trigger Base(const Author& a, const std::string& scope) {
  Trigger t;
  t.source = "github";
  t.scope = scope;
  t.actor = a.login;
  t.human = a.human;
  if (a.own) t.meta["own"] = true;
  return t;
}

bool LoginIn(const json& item, const char* list_key, const std::string& login) {
  const json* list = Field(item, list_key);
  if (list == nullptr || !list->is_array() || login.empty()) return false;
  for (const json& u : *list) {
    std::string l;
    if (u.is_object() && ReqString(u, "login", &l) && SameLogin(l, login)) return true;
  }
  return false;
}

// The last lines of a diff hunk: the comment sits on the hunk's last line, so its end is the
// nearby code. The "@@" header stays for orientation.
std::string HunkTail(const std::string& hunk, std::size_t max_lines = 12) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= hunk.size()) {
    auto nl = hunk.find('\n', start);
    lines.push_back(hunk.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  if (lines.size() <= max_lines) return hunk;
  std::string out = lines.front() + "\n…";
  for (std::size_t i = lines.size() - (max_lines - 1); i < lines.size(); ++i) out += "\n" + lines[i];
  return out;
}

}  // namespace

std::optional<Discussion> DiscussionOf(const std::string& key) {
  // github:<repo>:issue:<n>[...] | github:<repo>:pull:<n>[:review:<id>]
  auto place = github_threads::PlaceOf(key);
  if (!place) return std::nullopt;
  Discussion d;
  d.repo = place->repo;
  std::string_view rest = place->rest;
  if (rest.substr(0, 6) == "issue:") {
    rest.remove_prefix(6);
  } else if (rest.substr(0, 5) == "pull:") {
    d.pull = true;
    rest.remove_prefix(5);
  } else {
    return std::nullopt;
  }
  std::size_t i = 0;
  while (i < rest.size() && i < 18 && rest[i] >= '0' && rest[i] <= '9') {
    d.number = d.number * 10 + (rest[i] - '0');
    ++i;
  }
  if (i == 0 || d.number <= 0 || (i < rest.size() && rest[i] != ':')) return std::nullopt;
  return d;
}

bool Mentions(const std::string& text, const std::string& login_in) {
  std::string login = text::AsciiLower(login_in);
  if (login.size() > 5 && login.compare(login.size() - 5, 5, "[bot]") == 0) login.resize(login.size() - 5);
  if (login.empty()) return false;
  const std::string lower = text::AsciiLower(text);
  bool in_fence = false, in_comment = false;
  std::string fence;
  std::size_t start = 0;
  while (start <= lower.size()) {
    auto nl = lower.find('\n', start);
    std::string line = lower.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? lower.size() + 1 : nl + 1;
    std::size_t first = line.find_first_not_of(" \t");
    std::string trimmed = first == std::string::npos ? "" : line.substr(first);
    if (!in_comment) {
      if (in_fence) {
        if (trimmed.rfind(fence, 0) == 0) in_fence = false;
        continue;
      }
      if (trimmed.rfind("```", 0) == 0 || trimmed.rfind("~~~", 0) == 0) {
        in_fence = true;
        fence = trimmed.substr(0, 3);
        continue;
      }
      if (!trimmed.empty() && trimmed[0] == '>') continue;  // quoted: someone else's words
    }
    // Blank out inline code spans and HTML comments, then look for @login.
    std::string visible;
    for (std::size_t i = 0; i < line.size();) {
      if (in_comment) {
        auto end = line.find("-->", i);
        if (end == std::string::npos) { i = line.size(); break; }
        in_comment = false;
        i = end + 3;
        continue;
      }
      if (line.compare(i, 4, "<!--") == 0) {
        in_comment = true;
        i += 4;
        continue;
      }
      if (line[i] == '`') {
        std::size_t run = 0;
        while (i + run < line.size() && line[i + run] == '`') ++run;
        auto close = line.find(std::string(run, '`'), i + run);
        if (close != std::string::npos) {
          visible += ' ';
          i = close + run;
          continue;
        }
        i += run;
        visible += ' ';
        continue;
      }
      visible += line[i++];
    }
    for (std::size_t at = visible.find('@'); at != std::string::npos; at = visible.find('@', at + 1)) {
      if (at > 0) {
        unsigned char p = static_cast<unsigned char>(visible[at - 1]);
        if (std::isalnum(p) || p == '_' || p == '-' || p == '.' || p == '/' || p == '@') continue;
      }
      if (visible.compare(at + 1, login.size(), login) != 0) continue;
      std::size_t after = at + 1 + login.size();
      if (after < visible.size()) {
        unsigned char n = static_cast<unsigned char>(visible[after]);
        if (std::isalnum(n) || n == '-' || n == '_' || n == '/') continue;
      }
      return true;
    }
  }
  return false;
}

Normalized NormalizeIssueComment(const json& c, const NormalizeContext& ctx, std::optional<bool> on_pull) {
  std::int64_t id = 0, number = 0;
  std::string body, html_url, issue_url, version;
  TimeMs at = 0;
  Author author;
  if (!ReqInt(c, "id", &id)) return Malformed("issue comment: no integer id");
  if (!OptString(c, "body", &body)) return Malformed("issue comment " + std::to_string(id) + ": body is not text");
  if (!ReqString(c, "issue_url", &issue_url) || !NumberFromUrl(issue_url, &number))
    return Malformed("issue comment " + std::to_string(id) + ": no issue_url ending in a number");
  if (!ReqTime(c, "updated_at", &at, &version))
    return Malformed("issue comment " + std::to_string(id) + ": no valid updated_at");
  if (!ReadAuthor(c, ctx, &author)) return Malformed("issue comment " + std::to_string(id) + ": user has no login");
  OptString(c, "html_url", &html_url);
  Discussion d;
  d.repo = ctx.repo;
  d.number = number;
  d.pull = on_pull.value_or(html_url.find("/pull/") != std::string::npos);

  Normalized n;
  n.kind = Normalized::Kind::kTrigger;
  Trigger& t = n.trigger;
  t = Base(author, "comments");
  t.id = "github:comment:" + std::to_string(id) + "@" + version;
  t.addressed = Mentions(body, ctx.bot_login);
  t.text = body;
  t.at = at;
  t.threads = {d.Thread()};
  t.channel = d.Thread();
  t.meta["type"] = "issue_comment";
  t.meta["comment_id"] = id;
  t.meta["number"] = number;
  t.meta["pull"] = d.pull;
  t.meta["updated_at"] = version;
  if (!html_url.empty()) t.meta["html_url"] = html_url;
  std::string created, assoc;
  if (OptString(c, "created_at", &created) && !created.empty()) t.meta["created_at"] = created;
  if (OptString(c, "author_association", &assoc) && !assoc.empty()) t.meta["author_association"] = assoc;
  return n;
}

Normalized NormalizeReviewComment(const json& c, const NormalizeContext& ctx) {
  std::int64_t id = 0, number = 0;
  std::string body, html_url, pr_url, path, hunk, version;
  TimeMs at = 0;
  Author author;
  if (!ReqInt(c, "id", &id)) return Malformed("review comment: no integer id");
  const std::string what = "review comment " + std::to_string(id);
  if (!OptString(c, "body", &body)) return Malformed(what + ": body is not text");
  if (!ReqString(c, "pull_request_url", &pr_url) || !NumberFromUrl(pr_url, &number))
    return Malformed(what + ": no pull_request_url ending in a number");
  if (!ReqString(c, "path", &path)) return Malformed(what + ": no path");
  if (!OptString(c, "diff_hunk", &hunk)) return Malformed(what + ": diff_hunk is not text");
  if (!ReqTime(c, "updated_at", &at, &version)) return Malformed(what + ": no valid updated_at");
  if (!ReadAuthor(c, ctx, &author)) return Malformed(what + ": user has no login");
  OptString(c, "html_url", &html_url);
  std::int64_t top = id, reply_to = 0, line = 0, start_line = 0;
  if (ReqInt(c, "in_reply_to_id", &reply_to)) top = reply_to;
  bool has_line = ReqInt(c, "line", &line) || ReqInt(c, "original_line", &line);
  bool has_start = ReqInt(c, "start_line", &start_line);

  Discussion d{ctx.repo, true, number};
  const std::string review_thread = d.Thread() + ":review:" + std::to_string(top);
  Normalized n;
  n.kind = Normalized::Kind::kTrigger;
  Trigger& t = n.trigger;
  t = Base(author, "comments");
  t.id = "github:review_comment:" + std::to_string(id) + "@" + version;
  t.addressed = Mentions(body, ctx.bot_login);
  std::string where = path;
  if (has_line) where += has_start && start_line != line ? ":" + std::to_string(start_line) + "-" + std::to_string(line)
                                                         : ":" + std::to_string(line);
  t.text = "Review comment on " + where + "\n";
  if (!hunk.empty()) t.text += "```diff\n" + HunkTail(hunk) + "\n```\n";
  t.text += body;
  t.at = at;
  t.threads = {review_thread, d.Thread()};
  t.channel = review_thread;
  t.meta["type"] = "review_comment";
  t.meta["comment_id"] = id;
  t.meta["review_thread_id"] = top;
  t.meta["number"] = number;
  t.meta["pull"] = true;
  t.meta["path"] = path;
  if (has_line) t.meta["line"] = line;
  if (has_start) t.meta["start_line"] = start_line;
  t.meta["diff_hunk"] = hunk;
  t.meta["updated_at"] = version;
  if (!html_url.empty()) t.meta["html_url"] = html_url;
  std::string commit;
  if (OptString(c, "commit_id", &commit) && !commit.empty()) t.meta["commit_id"] = commit;
  return n;
}

Normalized NormalizeReview(const json& r, const NormalizeContext& ctx, std::int64_t pull_number) {
  std::int64_t id = 0, number = pull_number;
  std::string body, state, pr_url, html_url, version;
  TimeMs at = 0;
  Author author;
  if (!ReqInt(r, "id", &id)) return Malformed("review: no integer id");
  const std::string what = "review " + std::to_string(id);
  if (!ReqString(r, "state", &state)) return Malformed(what + ": no state");
  state = text::AsciiLower(state);
  if (state == "pending") return Skip(what + ": pending (not submitted)");
  const json* submitted = Field(r, "submitted_at");
  if (submitted == nullptr || submitted->is_null()) return Skip(what + ": not submitted");
  if (!ReqTime(r, "submitted_at", &at, &version)) return Malformed(what + ": no valid submitted_at");
  if (!OptString(r, "body", &body)) return Malformed(what + ": body is not text");
  if (OptString(r, "pull_request_url", &pr_url) && !pr_url.empty() && !NumberFromUrl(pr_url, &number))
    return Malformed(what + ": pull_request_url does not end in a number");
  if (number <= 0) return Malformed(what + ": no pull request number");
  if (!ReadAuthor(r, ctx, &author)) return Malformed(what + ": user has no login");
  // Words are what a person reads: a body of spaces (ideographic ones too) or punctuation says
  // nothing. A plain "commented" review without words only wraps inline comments, which arrive
  // by themselves.
  const bool says_something = text::CountWords(body) > 0;
  if (state == "commented" && !says_something) return Skip(what + ": no text of its own");
  OptString(r, "html_url", &html_url);

  Discussion d{ctx.repo, true, number};
  Normalized n;
  n.kind = Normalized::Kind::kTrigger;
  Trigger& t = n.trigger;
  t = Base(author, "comments");
  t.id = "github:review:" + std::to_string(id) + "@" + version;
  t.addressed = Mentions(body, ctx.bot_login);
  t.text = state == "commented" ? body : "Review: " + state + (body.empty() ? "" : "\n" + body);
  t.at = at;
  t.threads = {d.Thread()};
  t.channel = d.Thread();
  t.meta["type"] = "review";
  t.meta["review_id"] = id;
  t.meta["state"] = state;
  t.meta["number"] = number;
  t.meta["pull"] = true;
  t.meta["submitted_at"] = version;
  if (!html_url.empty()) t.meta["html_url"] = html_url;
  std::string commit;
  if (OptString(r, "commit_id", &commit) && !commit.empty()) t.meta["commit_id"] = commit;
  // Issue 34: a review asks for something when it requests changes or says something. A bare
  // approval (or a dismissed review without words) asks for nothing: stored all the same (the
  // auto-merge guard counts approvals), it is context for a Ticket and never starts a turn.
  // Its inline comments, if any, arrive as Triggers of their own and ask for themselves.
  if (state != "changes_requested" && !says_something) t.meta["asks_nothing"] = true;
  return n;
}

Normalized NormalizeIssue(const json& issue, const NormalizeContext& ctx, std::optional<bool> is_pull) {
  std::int64_t number = 0;
  std::string title, body, html_url, created_text;
  TimeMs created = 0;
  Author author;
  if (!ReqInt(issue, "number", &number) || number <= 0) return Malformed("issue: no number");
  const std::string what = "issue " + std::to_string(number);
  if (!ReqString(issue, "title", &title)) return Malformed(what + ": no title");
  if (!OptString(issue, "body", &body)) return Malformed(what + ": body is not text");
  if (!ReqTime(issue, "created_at", &created, &created_text)) return Malformed(what + ": no valid created_at");
  if (!ReadAuthor(issue, ctx, &author)) return Malformed(what + ": user has no login");
  OptString(issue, "html_url", &html_url);
  Discussion d;
  d.repo = ctx.repo;
  d.number = number;
  d.pull = is_pull.value_or(Field(issue, "pull_request") != nullptr || html_url.find("/pull/") != std::string::npos);

  Normalized n;
  n.kind = Normalized::Kind::kTrigger;
  Trigger& t = n.trigger;
  t = Base(author, d.pull ? "pulls" : "issues");
  // The version is the text itself: the issue's updated_at moves with every comment and label,
  // so it cannot tell an edit of the body from anything else.
  const std::string digest = Sha256Hex(title + "\n" + body).substr(0, 12);
  t.id = d.Thread() + "@" + digest;
  t.addressed = Mentions(title + "\n" + body, ctx.bot_login) || LoginIn(issue, "assignees", ctx.bot_login) ||
                LoginIn(issue, "requested_reviewers", ctx.bot_login);
  if (const json* a = Field(issue, "assignee"); a != nullptr && a->is_object()) {
    std::string l;
    if (ReqString(*a, "login", &l) && SameLogin(l, ctx.bot_login)) t.addressed = true;
  }
  t.text = title + (body.empty() ? "" : "\n\n" + body);
  t.at = created;
  t.threads = {d.Thread()};
  t.channel = d.Thread();
  t.meta["type"] = d.pull ? "pull" : "issue";
  t.meta["number"] = number;
  t.meta["pull"] = d.pull;
  t.meta["title"] = title;
  t.meta["digest"] = digest;
  t.meta["created_at"] = created_text;
  if (!html_url.empty()) t.meta["html_url"] = html_url;
  std::string state;
  if (OptString(issue, "state", &state) && !state.empty()) t.meta["state"] = state;
  if (const json* draft = Field(issue, "draft"); draft != nullptr && draft->is_boolean()) t.meta["draft"] = *draft;
  if (const json* labels = Field(issue, "labels"); labels != nullptr && labels->is_array()) {
    json names = json::array();
    for (const json& l : *labels) {
      std::string name;
      if (l.is_object() && ReqString(l, "name", &name)) names.push_back(name);
    }
    if (!names.empty()) t.meta["labels"] = names;
  }
  for (const char* side : {"head", "base"}) {
    const json* ref = Field(issue, side);
    std::string r;
    if (ref != nullptr && ref->is_object() && ReqString(*ref, "ref", &r)) t.meta[std::string(side) + "_ref"] = r;
  }
  return n;
}

Normalized NormalizePullClosed(const json& pull, const NormalizeContext& ctx, const json& closer) {
  std::int64_t number = 0;
  std::string state, title, html_url, closed_text;
  TimeMs closed = 0;
  if (!ReqInt(pull, "number", &number) || number <= 0) return Malformed("pull request: no number");
  const std::string what = "pull request " + std::to_string(number);
  if (!ReqString(pull, "state", &state)) return Malformed(what + ": no state");
  if (state != "closed") return Skip(what + ": not closed");
  if (!ReqTime(pull, "closed_at", &closed, &closed_text)) return Malformed(what + ": no valid closed_at");
  if (!OptString(pull, "title", &title)) return Malformed(what + ": title is not text");
  bool merged = false;
  if (const json* m = Field(pull, "merged"); m != nullptr && !m->is_null()) {
    if (!m->is_boolean()) return Malformed(what + ": merged is not true or false");
    merged = m->get<bool>();
  } else {
    // Some listings leave `merged` out; merged_at says the same.
    std::string merged_at;
    if (!OptString(pull, "merged_at", &merged_at)) return Malformed(what + ": merged_at is not text");
    merged = !merged_at.empty();
  }
  // Who did it, read as ReadAuthor reads a comment's user: {"user": <account>}.
  json who;
  if (const json* by = Field(pull, "merged_by"); merged && by != nullptr && !by->is_null()) {
    if (!by->is_object()) return Malformed(what + ": merged_by is not an account");
    who = *by;
  } else if (!closer.is_null()) {
    if (!closer.is_object()) return Malformed(what + ": the closing account is not an account");
    who = closer;
  }
  Author author;
  if (!who.is_null() && !ReadAuthor(json{{"user", who}}, ctx, &author))
    return Malformed(what + ": the closing account has no login");
  OptString(pull, "html_url", &html_url);

  Discussion d{ctx.repo, true, number};
  Normalized n;
  n.kind = Normalized::Kind::kTrigger;
  Trigger& t = n.trigger;
  t = Base(author, "pulls");
  t.id = d.Thread() + ":closed@" + closed_text;
  t.addressed = false;  // an event on the Thread, not a message to the agent
  t.text = "Pull request #" + std::to_string(number) + " was " + (merged ? "merged" : "closed") +
           (author.login ? " by " + *author.login : "") + "." + (title.empty() ? "" : "\n" + title);
  t.at = closed;
  t.threads = {d.Thread()};
  t.channel = d.Thread();
  t.meta["type"] = "pull_request_closed";
  t.meta["number"] = number;
  t.meta["pull"] = true;
  t.meta["merged"] = merged;
  t.meta["merged_by"] = merged && author.login ? *author.login : "";
  t.meta["closed_at"] = closed_text;
  if (!html_url.empty()) t.meta["html_url"] = html_url;
  return n;
}

}  // namespace superagent::github
