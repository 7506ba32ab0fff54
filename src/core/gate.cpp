// Gate: the admission table of SPEC §4.2–4.4 as code. Pure: a Policy, a Trigger and one fact
// about its Thread in, a strength and a token out. Every branch ends in a stable reason token,
// because "why didn't it answer" must be answerable later from the recorded Decision.
#include "superagent/gate.h"

namespace superagent {
namespace {

GateResult Make(Strength s, std::string reason) {
  GateResult r;
  r.strength = s;
  r.reason = std::move(reason);
  return r;
}

// A cell's value as a result: admitted as "cell:<name>", ignored as "ignored:<name>".
GateResult FromCell(Strength cell, const char* name) {
  return Make(cell, std::string(cell == Strength::kNone ? "ignored:" : "cell:") + name);
}

// The strength for everything except the panel: SPEC §4.2 and the cells of §4.3.
GateResult Admit(const SourcePolicy& src, const ScopePolicy& row, bool receive_all, const Trigger& t,
                 bool thread_has_ticket) {
  // CI has no sender, so nobody is allow-listed or addressing anyone: only its one cell decides.
  if (t.source == "github" && t.scope == "ci") return FromCell(row.others_unaddressed, "others_unaddressed");

  const std::string actor = t.actor.value_or("");
  if (!t.human) {
    // Bots go by the bot list alone. They are never explicit, whatever a cell says (an explicit
    // cell is about people), and a bot's follow-up is not special: otherwise two bots could keep
    // a Thread's Ticket busy forever.
    if (!t.actor || !src.IsBot(actor)) return Make(Strength::kNone, "bot_not_listed");
    if (t.addressed || receive_all) return Make(Strength::kInferred, "listed_bot");
    return Make(Strength::kNone, "bot_not_addressed");
  }

  if (t.actor && src.IsPerson(actor)) {
    // Allow-listed and addressed is always explicit: not a cell (SPEC §4.3).
    if (t.addressed) return Make(Strength::kExplicit, "allow_listed_addressed");
    if (thread_has_ticket) return Make(Strength::kExplicit, "allow_listed_follow_up");
    // The unaddressed cells exist only in rows that receive every message; elsewhere an
    // unaddressed message from the row is not ours to take, whatever the cell says.
    if (receive_all) return FromCell(row.allowed_unaddressed, "allowed_unaddressed");
    return Make(Strength::kNone, "not_addressed");
  }

  // Not allow-listed.
  if (t.addressed && row.others_addressed == Strength::kExplicit)
    return FromCell(Strength::kExplicit, "others_addressed");
  // A follow-up on a Thread that already has a Ticket is inferred (SPEC §4.2) before any cell is
  // consulted. Choice: an "ignore" cell does not block it — the cell governs new requests from
  // strangers, while a follow-up continues work a person already asked for; the mode (off drops
  // inferred) and the assessment still stand between it and any action.
  if (thread_has_ticket) return Make(Strength::kInferred, "follow_up");
  if (t.addressed) return FromCell(row.others_addressed, "others_addressed");
  if (receive_all) return FromCell(row.others_unaddressed, "others_unaddressed");
  return Make(Strength::kNone, "not_addressed");
}

}  // namespace

GateResult EvaluateGate(const Policy& policy, const Trigger& trigger, bool thread_has_ticket) {
  // Sources drop their own bot's messages before Intake; this is defence in depth, so an echo of
  // the agent's own reply can never become a request, even from the panel.
  auto own = trigger.meta.find("own");
  if (own != trigger.meta.end() && own->is_boolean() && own->get<bool>())
    return Make(Strength::kNone, "own_message");

  // The panel authenticates its operator; what they type is a direct request.
  if (trigger.source == "panel") {
    GateResult r = Make(Strength::kExplicit, "panel_operator");
    r.candidate = true;
    return r;
  }

  // A repository's own table, when it writes one (issue 37), else the Source's.
  const std::string repo = Policy::RepositoryOf(trigger);
  const SourcePolicy* src = policy.SourceIn(trigger.source, repo);
  if (src == nullptr) return Make(Strength::kNone, "source_not_in_policy");

  // A row the policy does not write uses the table's defaults (SPEC §4.3).
  const ScopePolicy* found = Policy::FindScopeIn(*src, trigger.source, trigger.scope);
  const ScopePolicy row = found != nullptr ? *found : ScopePolicy{};
  bool receive_all = row.receive_all;
  if (trigger.source == "feishu") {
    // Only addressed messages reach the other_mentions and direct rows (an unconfigured chat falls
    // to other_mentions), so "receive all" has no meaning there.
    bool configured_chat = trigger.scope.rfind("chat:", 0) == 0 && src->scopes.count(trigger.scope) > 0;
    if (!configured_chat) receive_all = false;
  }

  GateResult r = Admit(*src, row, receive_all, trigger, thread_has_ticket);

  // Modes govern inferred work only; explicit works in every mode (SPEC §4.4).
  switch (r.strength) {
    case Strength::kExplicit:
      r.candidate = true;
      break;
    case Strength::kInferred:
      if (!policy.InferredWanted(repo)) {
        r.candidate = false;
        r.reason = "mode_off";  // strength stays inferred so the record shows what off cost
      } else {
        r.candidate = true;
      }
      break;
    case Strength::kNone:
      r.candidate = false;
      break;
  }
  return r;
}

bool AnyoneMayAsk(const Policy& policy, const std::string& source) {
  auto admits = [&](const SourcePolicy& src) {
    if (!src.people.empty()) return true;
    // The same rows Admit reads: a row the policy does not write has the table's default (ignore).
    for (const auto& [scope, row] : src.scopes)
      if (row.others_addressed == Strength::kExplicit && !(source == "github" && scope == "ci")) return true;
    return false;
  };
  if (auto src = policy.sources.find(source); src != policy.sources.end() && admits(src->second)) return true;
  // A repository's own table may let someone ask there (issue 37).
  for (const auto& [repo, rows] : policy.repos)
    if (source == "github" && rows.github && admits(*rows.github)) return true;
  return false;
}

nlohmann::json GateResultToJson(const GateResult& r) {
  return nlohmann::json{{"strength", StrengthName(r.strength)}, {"candidate", r.candidate}, {"reason", r.reason}};
}

}  // namespace superagent
