#include "core/explain_words.h"

#include <algorithm>
#include <cctype>

#include "superagent/text.h"
#include "superagent/github_threads.h"

namespace superagent {

namespace {

bool Plain(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

std::string SourceName(const std::string& source) {
  if (source == "github") return "GitHub";
  if (source == "feishu") return "Feishu";
  return source;
}

// A key under the admission table `table` ({"sources", "github"}, or a repository's own).
std::vector<std::string> Under(std::vector<std::string> table, std::initializer_list<std::string> keys) {
  table.insert(table.end(), keys.begin(), keys.end());
  return table;
}

// The scope row's key path for a cell: <table>.scopes.<scope>.<cell>.
PolicyEdit Cell(const std::vector<std::string>& table, const Trigger& t, const std::string& cell, const std::string& to) {
  return {Under(table, {"scopes", t.scope, cell}), to};
}

}  // namespace

std::string DottedKey(const std::vector<std::string>& path) {
  std::string out;
  for (const std::string& p : path) out += (out.empty() ? "" : ".") + (Plain(p) ? p : "\"" + p + "\"");
  return out;
}

std::string PlaceWords(const Trigger& t) {
  const std::string thread = t.threads.empty() ? "" : t.threads.front();
  // GitHub's own way to name an issue of a repository: "acme/api#5".
  if (auto place = github_threads::PlaceOf(thread)) {
    const std::string& rest = place->rest;
    auto number = [&](std::size_t prefix) {
      const std::string tail = rest.substr(prefix);
      return place->repo + "#" + tail.substr(0, tail.find(':'));
    };
    if (rest.rfind("issue:", 0) == 0) return "GitHub issue " + number(6);
    if (rest.rfind("pull:", 0) == 0) return "GitHub pull request " + number(5);
    if (rest.rfind("ci:", 0) == 0) return "GitHub CI on " + rest.substr(3) + " in " + place->repo;
  }
  if (thread.rfind("feishu:thread:", 0) == 0) return "a Feishu topic";
  if (t.source == "feishu" && t.scope == "direct") return "a Feishu direct message";
  if (t.source == "feishu") return "a Feishu chat";
  if (t.source == "panel") return "the panel";
  return SourceName(t.source) + (t.scope.empty() ? "" : " (" + t.scope + ")");
}

std::string SenderWords(const Trigger& t) {
  if (!t.actor) return t.source == "github" && t.scope == "ci" ? "GitHub CI" : "someone unnamed";
  return t.human ? *t.actor : "the bot " + *t.actor;
}

std::string ArrivalWords(const Trigger& t) {
  return SenderWords(t) + " wrote " + (t.source == "github" ? "on " : "in ") + PlaceWords(t) +
         (t.addressed ? ", addressing the agent," : ", not addressing the agent,") + " at " + FormatTime(t.at) + ".";
}

std::string GateWords(const Trigger& t, const std::string& reason, const std::string& strength,
                      const std::vector<std::string>& table, std::optional<PolicyEdit>* change) {
  const std::string who = SenderWords(t), actor = t.actor.value_or("");
  const std::vector<std::string> people = Under(table, {"people"}), bots = Under(table, {"bots"});
  const std::string cell = reason.substr(reason.find(':') + 1);
  if (reason == "own_message") return "It is the agent's own message, which is never a request.";
  if (reason == "panel_operator") return "Typed in the panel by a person logged in to it: an explicit request.";
  if (reason == "source_not_in_policy") {
    *change = PolicyEdit{{"sources", t.source}, "add a " + t.source + " block naming its people"};
    return "The policy has no sources." + t.source + " block, so nothing from " + SourceName(t.source) + " is admitted.";
  }
  if (reason == "mode_off") {
    *change = PolicyEdit{{"mode"}, "observe or auto"};
    return "It could only be inferred work, and inferred work is off (mode: off).";
  }
  if (reason == "allow_listed_addressed")
    return who + " is in " + DottedKey(people) + " and addressed the agent: an explicit request.";
  if (reason == "allow_listed_follow_up")
    return who + " is in " + DottedKey(people) + " and wrote where the agent already has a Ticket: an explicit follow-up.";
  if (reason == "follow_up")
    return who + " is not in " + DottedKey(people) + "; a message where the agent already has a Ticket is inferred work.";
  if (reason == "bot_not_listed") {
    if (!actor.empty()) *change = PolicyEdit{bots, "add " + actor};
    return who + " is not in " + DottedKey(bots) + ", so nothing it writes is admitted.";
  }
  if (reason == "listed_bot") return who + " is in " + DottedKey(bots) + ": at most inferred work.";
  if (reason == "bot_not_addressed") return who + " is a listed bot but did not address the agent, so it was not admitted.";
  if (reason == "not_addressed") {
    *change = Cell(table, t, "receive_all", "true, to read messages that do not address the agent here");
    return who + " did not address the agent (no @-mention) here, so it was not a request.";
  }
  if (cell == "others_addressed") {
    if (reason.rfind("ignored:", 0) == 0) {
      if (!actor.empty()) *change = PolicyEdit{people, "add " + actor};
      return who + " is not in " + DottedKey(people) + ", and an @-mention from someone not listed is ignored here (" +
             DottedKey(Cell(table, t, cell, "").path) + ").";
    }
    return who + " is not in " + DottedKey(people) + "; " + DottedKey(Cell(table, t, cell, "").path) +
           " admits an @-mention from anyone as " + (strength == "explicit" ? "an explicit request." : "inferred work.");
  }
  if (cell == "others_unaddressed" || cell == "allowed_unaddressed") {
    const bool ignored = reason.rfind("ignored:", 0) == 0;
    if (ignored) *change = Cell(table, t, cell, "inferred, to let the agent offer help with such messages");
    return who + " did not address the agent; " + DottedKey(Cell(table, t, cell, "").path) +
           (ignored ? " ignores such messages." : " admits them as inferred work.");
  }
  return "The Gate said " + reason + ".";
}

std::string DecisionWords(const Decision& d, const std::vector<std::string>& mode_key, std::optional<PolicyEdit>* change) {
  const std::string version = " (policy version " + std::to_string(d.policy_version) + ")";
  switch (d.outcome) {
    case DecisionOutcome::kAccept:
      return "The Eval accepted it" + version + (d.ticket ? " for Ticket " + std::to_string(*d.ticket) : "") + ".";
    case DecisionOutcome::kStop: return "It asked the agent to stop: " + d.reason + version + ".";
    case DecisionOutcome::kUnavailable:
      return "It could not be judged: " + text::Cut(d.reason, 200) + version + "; it is tried again.";
    case DecisionOutcome::kIgnore:
      if (d.would_accept) {
        *change = PolicyEdit{mode_key, "auto, to have such work done (read the panel's Observe review first)"};
        const std::string held = mode_key.size() == 1 ? "the policy is in observe mode" : DottedKey(mode_key) + " is observe";
        return "The Eval would have accepted it, but " + held + ", so it was only recorded" + version + ".";
      }
      if (d.reason.rfind("not admitted", 0) == 0) return "Nothing was done with it" + version + ".";
      return "The Eval decided it is not work for the agent: " + text::Cut(d.reason, 200) + version + ".";
  }
  return d.reason;
}

}  // namespace superagent
