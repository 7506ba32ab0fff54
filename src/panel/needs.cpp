#include "panel/needs.h"

#include <algorithm>
#include <map>

#include "panel/panel_json.h"

namespace superagent::panel {

using nlohmann::json;

namespace {

std::string PlatformName(const std::string& cause) {
  if (cause == "github") return "GitHub";
  if (cause == "feishu") return "Feishu";
  return cause;
}

// What the failing path was doing, as a person says it: "reading ci", "sending post_message".
std::string PathLabel(const std::string& kind) {
  const std::size_t first = kind.find(':'), last = kind.rfind(':');
  if (kind.rfind("source:", 0) == 0 && last != first) return "reading " + kind.substr(last + 1);
  if (kind.rfind("effect:", 0) == 0 && last != first) return "sending " + kind.substr(first + 1, last - first - 1);
  if (kind.rfind("unexpected:", 0) == 0) return kind.substr(first + 1) + " failing unexpectedly";
  return kind;
}

// What a person can check for each cause; the daemon retries on its own either way.
std::string CheckFor(const std::string& cause) {
  if (cause == "github")
    return "Is GitHub up (https://www.githubstatus.com)? Does the token in the variable named by github.token_env "
           "still work, with the repo and notifications scopes, and does github.api_url point at the right host? "
           "`superagent doctor --config …` tries both. The daemon keeps retrying; this card goes once a read "
           "or a delivery succeeds.";
  if (cause == "feishu")
    return "Is Feishu up? Do feishu.app_id and the secret in the variable named by feishu.app_secret_env still "
           "work, and is the app still in its chats? `superagent doctor --config …` tries them. The daemon keeps "
           "retrying; this card goes once a read or a delivery succeeds.";
  if (cause.rfind("unexpected:", 0) == 0)
    return "The daemon's log has the whole error (journalctl -u superagent). It goes on and retries.";
  return "The daemon's log has each failure (journalctl -u superagent). It keeps retrying.";
}

}  // namespace

std::string ProblemCause(const std::string& kind) {
  if (kind.rfind("source:", 0) == 0) {
    const std::size_t end = kind.find(':', 7);
    return kind.substr(7, end == std::string::npos ? std::string::npos : end - 7);
  }
  if (kind.rfind("effect:", 0) == 0) return kind.substr(kind.rfind(':') + 1);
  return kind;
}

json SetupCardsJson(const std::vector<SetupGap>& gaps, const std::vector<SourceHealth>& health,
                    std::set<std::string>* folded) {
  json cards = json::array();
  for (const SetupGap& g : gaps) {
    json card{{"piece", g.piece}, {"what", g.what}, {"fix", g.fix}};
    if (g.until_first_contact) {
      const SourceHealth* latest = nullptr;
      bool ever_read = false, seen = false;
      for (const SourceHealth& h : health) {
        if (h.source != g.piece) continue;
        seen = true;
        ever_read = ever_read || h.last_success_at.has_value();
        if (h.last_error_at && (!latest || *h.last_error_at > *latest->last_error_at)) latest = &h;
      }
      if (!seen || ever_read || !latest) continue;
      card["last_error"] = latest->last_error;
      card["path"] = latest->path;
      card["since"] = TimeJson(latest->last_error_at);
      folded->insert(g.piece);
    }
    cards.push_back(std::move(card));
  }
  return cards;
}

json ProblemCardsJson(const std::vector<SystemProblem>& problems, const std::set<std::string>& folded) {
  std::vector<std::string> order;  // causes in the order they began (problems come oldest first)
  std::map<std::string, std::vector<const SystemProblem*>> by_cause;
  for (const SystemProblem& p : problems) {
    const std::string cause = ProblemCause(p.kind);
    if (folded.count(cause)) continue;
    if (!by_cause.count(cause)) order.push_back(cause);
    by_cause[cause].push_back(&p);
  }
  json cards = json::array();
  for (const std::string& cause : order) {
    const auto& group = by_cause[cause];
    const SystemProblem* latest = group.front();
    TimeMs since = group.front()->first_at;
    int failures = 0;
    json paths = json::array();
    for (const SystemProblem* p : group) {
      if (p->last_at > latest->last_at) latest = p;
      since = std::min(since, p->first_at);
      failures = std::max(failures, p->failures);
      json path = ProblemJson(*p);
      path["label"] = PathLabel(p->kind);
      paths.push_back(std::move(path));
    }
    const bool platform = cause == "github" || cause == "feishu";
    std::string title;
    if (platform && group.size() > 1)
      title = PlatformName(cause) + " unavailable: " + std::to_string(group.size()) + " paths failing";
    else if (platform)
      title = PlatformName(cause) + ": " + PathLabel(group.front()->kind) + " failing";
    else
      title = PathLabel(group.front()->kind);
    // Not an outage: the daemon has no Channel for the platform, so its messages wait.
    std::string check = CheckFor(cause);
    if (latest->message.find("no channel is configured for") != std::string::npos)
      check = "This daemon does not talk to " + PlatformName(cause) +
              " (github.repo is empty or feishu.enabled is false), so what it would send there waits in the outbox. "
              "Turn it on and restart, or stop the Tickets whose messages wait.";
    cards.push_back({{"cause", cause},
                     {"title", title},
                     {"since", TimeJson(since)},
                     {"last_at", TimeJson(latest->last_at)},
                     {"failures", failures},
                     {"last_error", latest->message},
                     {"check", check},
                     {"paths", std::move(paths)}});
  }
  return cards;
}

json PolicyFileCardJson(const PolicyReloadResult& on_disk) {
  std::string what;
  if (!on_disk.valid)
    what = on_disk.origin + " has " + std::to_string(on_disk.problems.size()) +
           (on_disk.problems.size() == 1 ? " problem" : " problems") + ": version " + std::to_string(on_disk.version) +
           " stays in force, and the next start of the daemon will refuse the file.";
  else
    what = on_disk.origin + " is valid but not in force (" + on_disk.error + "): version " +
           std::to_string(on_disk.version) + " stays in force.";
  return {{"file", on_disk.origin},
          {"version", on_disk.version},
          {"valid", on_disk.valid},
          {"problems", on_disk.problems},
          {"error", on_disk.error},
          {"what", what},
          {"fix", on_disk.valid ? "Press Reload policy, or fix what the error names and save the file again."
                                : "Correct the file where each problem says; it is read again when saved "
                                  "(or press Reload policy). `superagent check --config …` shows the same problems."}};
}

}  // namespace superagent::panel
