#include "panel/needs.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "panel/panel_json.h"
#include "superagent/gate.h"
#include "superagent/github_threads.h"
#include "superagent/text.h"
#include "superagent/trigger.h"

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
  if (cause.rfind("github:", 0) == 0) {
    const std::string repo = cause.substr(7);
    return "Only " + repo + " fails, so GitHub and the token work: can the token (or the App's installation) "
           "still see " + repo + "? Was it renamed, transferred, archived or taken out of the installation? If it "
           "is no longer the team's, take it out of github.repos. The daemon keeps retrying; this card goes once "
           "a read succeeds.";
  }
  if (cause.rfind("unexpected:", 0) == 0)
    return "The daemon's log has the whole error (journalctl -u superagent). It goes on and retries.";
  return "The daemon's log has each failure (journalctl -u superagent). It keeps retrying.";
}

}  // namespace

std::string ProblemCause(const std::string& kind) {
  if (kind.rfind("source:", 0) == 0) {
    // A repository's read paths are its own cause (issue 37): "source:github:acme/web:issues" is
    // "github:acme/web", so one repository the token lost is one card, apart from the others.
    const std::size_t end = kind.find(':', 7);
    const std::string platform = kind.substr(7, end == std::string::npos ? std::string::npos : end - 7);
    if (platform == "github" && end != std::string::npos) {
      const std::size_t repo_end = kind.find(':', end + 1);
      const std::string repo = kind.substr(end + 1, repo_end == std::string::npos ? std::string::npos : repo_end - end - 1);
      if (repo_end != std::string::npos && github_threads::IsRepositoryName(repo)) return "github:" + repo;
    }
    return platform;
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
        // A platform's read paths: "github" (the webhook's refusals) and "github:<repo>" each.
        if (h.source != g.piece && h.source.rfind(g.piece + ":", 0) != 0) continue;
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
  // Repositories failing together are GitHub failing, not a card each: past this many, their
  // problems are one GitHub card that counts them.
  constexpr std::size_t kRepositoryCards = 3;
  std::set<std::string> repositories;
  for (const SystemProblem& p : problems)
    if (std::string c = ProblemCause(p.kind); c.rfind("github:", 0) == 0) repositories.insert(c);
  const bool outage = repositories.size() > kRepositoryCards;
  std::vector<std::string> order;  // causes in the order they began (problems come oldest first)
  std::map<std::string, std::vector<const SystemProblem*>> by_cause;
  for (const SystemProblem& p : problems) {
    std::string cause = ProblemCause(p.kind);
    if (cause.rfind("github:", 0) == 0 && (outage || folded.count("github"))) cause = "github";
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
    const bool repository = cause.rfind("github:", 0) == 0;
    std::set<std::string> failing;  // the repositories of a GitHub card
    for (const SystemProblem* p : group)
      if (std::string c = ProblemCause(p->kind); c.rfind("github:", 0) == 0) failing.insert(c.substr(7));
    std::string title;
    if (cause == "github" && failing.size() > 1)
      title = "GitHub unavailable: " + std::to_string(failing.size()) + " repositories failing";
    else if (repository && group.size() > 1)
      title = "GitHub " + cause.substr(7) + ": " + std::to_string(group.size()) + " paths failing";
    else if (repository)
      title = "GitHub " + cause.substr(7) + ": " + PathLabel(group.front()->kind) + " failing";
    else if (platform && group.size() > 1)
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

namespace {

// Whether the policy in force lets this message's sender ask: the Gate's explicit strength.
bool MayAskNow(const Policy& policy, const Trigger& t) { return EvaluateGate(policy, t, false).strength == Strength::kExplicit; }

std::string Where(const Trigger& t) {
  const std::string url = TriggerUrl(t);
  return url.empty() ? t.source + " " + t.scope : url;
}

}  // namespace

json UnansweredCardJson(const std::vector<AnswerFacts>& asked, const Policy& policy, TimeMs now) {
  json items = json::array();
  for (const AnswerFacts& f : asked) {
    const Answer a = AnswerOf(f, MayAskNow(policy, f.record.trigger), now);
    if (a.kind != AnswerKind::kUnanswered) continue;
    const Trigger& t = f.record.trigger;
    items.push_back({{"trigger", t.id},
                     {"from", t.actor.value_or("")},
                     {"where", Where(t)},
                     {"url", TriggerUrl(t)},
                     {"received_at", TimeJson(f.record.received_at)},
                     {"quote", text::CutNoted(t.text, 200, text::Keep::kHead)},
                     {"why", a.words}});
  }
  if (items.empty()) return nullptr;
  const std::size_t n = items.size();
  return {{"count", n},
          {"items", items},
          {"what", std::to_string(n) + (n == 1 ? " person who asked has" : " people who asked have") +
                       " heard nothing for over a minute."},
          {"fix", "Each line says why. A model that does not answer: check llm.base_url and its key (superagent doctor); "
                  "the request is tried again, and its sender is told once the attempts are spent. "
                  "`superagent explain <message URL>` tells one message's whole story."}};
}

json NotAllowedCardJson(const std::vector<AnswerFacts>& asked, const Policy& policy, TimeMs now) {
  constexpr TimeMs kWeekMs = 7LL * 24 * 3600 * 1000;
  std::map<std::string, int> by_person;
  std::map<std::string, int> by_source;
  int total = 0;
  for (const AnswerFacts& f : asked) {
    if (now - f.record.received_at > kWeekMs) continue;
    if (AnswerOf(f, MayAskNow(policy, f.record.trigger), now).kind != AnswerKind::kSilent) continue;
    ++total;
    ++by_person[f.record.trigger.actor.value_or("?")];
    ++by_source[f.record.trigger.source];
  }
  if (total == 0) return nullptr;
  std::vector<std::pair<std::string, int>> people(by_person.begin(), by_person.end());
  std::stable_sort(people.begin(), people.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string list;
  json counts = json::array();
  for (std::size_t i = 0; i < people.size(); ++i) {
    counts.push_back({{"person", people[i].first}, {"mentions", people[i].second}});
    if (i < 8) list += (i ? ", " : "") + text::Cut(people[i].first, 40) + " \u00d7" + std::to_string(people[i].second);
  }
  if (people.size() > 8) list += ", and " + std::to_string(people.size() - 8) + " more";
  std::string keys;
  for (const auto& [source, n] : by_source) keys += (keys.empty() ? "" : " or ") + std::string("sources.") + source + ".people";
  return {{"count", total},
          {"people", counts},
          {"what", std::to_string(total) + (total == 1 ? " mention" : " mentions") +
                       " this week from people not allowed to ask: " + list + "."},
          {"fix", "They were not answered. If they should be able to ask for work, add them to " + keys +
                      " in policy.yaml (or set a row's others_addressed: explicit); to tell them why instead, set "
                      "the Source's tell_others: true."}};
}

namespace {

const char* kNoRule = "(no rule)";

std::string Percent(double fraction) { return std::to_string(static_cast<int>(std::lround(fraction * 100))) + " %"; }

}  // namespace

std::string PrecisionWords(const RulePrecision& r) {
  const int answers = r.yes + r.no;
  if (answers == 0) return "no yes or no answers yet, so no precision";
  return "precision " + Percent(r.precision) + " (at least " + Percent(r.lower_bound) + " with 95 % confidence) over " +
         std::to_string(answers) + (answers == 1 ? " answer" : " answers");
}

json VerdictCardsJson(const std::vector<WouldAcceptRecord>& records, const std::map<std::int64_t, TimeMs>& verdict_at,
                      TimeMs now) {
  // Per rule: its unanswered records (newest first below) and when it was last given a verdict.
  std::map<std::string, std::vector<const WouldAcceptRecord*>> open;
  std::map<std::string, TimeMs> last_verdict;
  for (const WouldAcceptRecord& w : records) {
    if (now - w.created_at > kVerdictWindowMs) continue;
    std::vector<std::string> rules = w.rules;
    if (rules.empty()) rules.push_back(kNoRule);
    const auto at = verdict_at.find(w.decision);
    for (const std::string& rule : rules) {
      if (!w.verdict) open[rule].push_back(&w);
      else if (at != verdict_at.end()) last_verdict[rule] = std::max(last_verdict[rule], at->second);
    }
  }
  std::vector<WouldAcceptRecord> window;
  for (const WouldAcceptRecord& w : records)
    if (now - w.created_at <= kVerdictWindowMs) window.push_back(w);
  std::map<std::string, RulePrecision> precision;
  for (RulePrecision& r : PrecisionByRule(window)) precision[r.rule] = std::move(r);

  json cards = json::array();
  for (auto& [rule, list] : open) {
    const int unanswered = static_cast<int>(list.size());
    const auto last = last_verdict.find(rule);
    // Answered less than a day ago: asked again only once a batch has gathered.
    if (last != last_verdict.end() && now - last->second < kVerdictQuietMs && unanswered < kVerdictBatch) continue;
    std::stable_sort(list.begin(), list.end(), [](const WouldAcceptRecord* a, const WouldAcceptRecord* b) {
      return a->created_at != b->created_at ? a->created_at > b->created_at : a->decision > b->decision;
    });
    json items = json::array();
    for (int i = 0; i < unanswered && i < kVerdictItems; ++i) {
      const WouldAcceptRecord& w = *list[static_cast<std::size_t>(i)];
      items.push_back({{"decision", w.decision},
                       {"thread", w.thread},
                       {"at", TimeJson(w.created_at)},
                       {"text", text::CutNoted(w.text, 500, text::Keep::kHead)}});
    }
    const RulePrecision& r = precision[rule];
    const bool named = rule != kNoRule;
    cards.push_back(
        {{"rule", rule},
         {"unanswered", unanswered},
         {"more", std::max(0, unanswered - kVerdictItems)},
         {"items", items},
         {"yes", r.yes},
         {"no", r.no},
         {"unknown", r.unknown},
         {"answers", r.yes + r.no},
         {"precision", r.precision},
         {"lower_bound", r.lower_bound},
         {"precision_words", PrecisionWords(r)},
         {"last_verdict_at", last != last_verdict.end() ? TimeJson(last->second) : json(nullptr)},
         {"what", std::to_string(unanswered) + (unanswered == 1 ? " message" : " messages") +
                      (named ? " the rule " + rule + " would have acted on in auto mode "
                             : std::string(" observe mode would have acted on, matching no rule, ")) + (unanswered == 1 ? "waits" : "wait") +
                      " for your verdict: was it a request?"},
         {"fix", "Each answer is final and counts toward the rule's precision (`superagent policy report`); "
                 "\"Don't know\" counts neither way. A rule earns auto mode by its lower bound, not by a few yeses."}});
  }
  return cards;
}

json ModeProposalCardsJson(const std::vector<ModeProposal>& proposals, const std::vector<RulePrecision>& rules,
                           const std::string& policy_file) {
  json cards = json::array();
  for (const ModeProposal& p : proposals) {
    RulePrecision r;
    r.rule = p.rule;
    for (const RulePrecision& x : rules)
      if (x.rule == p.rule && !x.explicit_path) r = x;
    const std::string what = p.promote ? "The rule " + p.rule + " has earned auto mode."
                                       : "The rule " + p.rule + " has lost auto mode; its new Tickets are held for a "
                                                                "person until the edit is made.";
    // Without a diff, the proposal's `why` says where the edit goes instead (ProposeModes).
    std::string fix = "Edit policy.yaml yourself; the daemon never edits it.";
    if (!p.diff.empty()) fix += " The change to " + policy_file + " is the diff above; the daemon reloads the file when it is saved.";
    cards.push_back({{"kind", "mode_proposal"},
                     {"proposal", p.promote ? "promote" : "demote"},
                     {"rule", p.rule},
                     {"from", ModeName(p.from)},
                     {"to", ModeName(p.to)},
                     {"would_accept", r.would_accept},
                     {"accepted", r.accepted},
                     {"yes", r.yes},
                     {"no", r.no},
                     {"unknown", r.unknown},
                     {"missed", r.missed},
                     {"answers", p.answers},
                     {"precision", r.precision},
                     {"lower_bound", p.lower_bound},
                     {"precision_words", PrecisionWords(r)},
                     {"held", !p.promote},
                     {"diff", p.diff},
                     {"file", policy_file.empty() ? json(nullptr) : json(policy_file)},
                     {"why", p.why},
                     {"what", what},
                     {"fix", fix}});
  }
  return cards;
}

}  // namespace superagent::panel
