// Policy: who and what is admitted (SPEC §4). Loaded from policy.yaml, validated with
// file:line:column problems, and versioned by the Engine whenever its content changes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/status.h"

namespace superagent {
struct Trigger;
}  // namespace superagent

namespace superagent {

// Ordered: kNone < kInferred < kExplicit. "ignore" in policy.yaml is kNone.
enum class Strength { kNone = 0, kInferred = 1, kExplicit = 2 };
enum class Mode { kOff, kObserve, kAuto };

const char* StrengthName(Strength s);  // "none" | "inferred" | "explicit"
const char* ModeName(Mode m);          // "off" | "observe" | "auto"
bool ParseMode(std::string_view text, Mode* out);
bool ParseStrength(std::string_view text, Strength* out);  // accepts none|ignore|inferred|explicit

// One row of a Source's admission table (SPEC §4.3).
struct ScopePolicy {
  bool receive_all = false;                          // receives every message, not only mentions
  Strength allowed_unaddressed = Strength::kInferred;  // inferred | ignore
  Strength others_addressed = Strength::kNone;         // explicit | inferred | ignore
  Strength others_unaddressed = Strength::kNone;       // inferred | ignore
};

struct SourcePolicy {
  std::vector<std::string> people;  // allow-list, identities as the Source reports them
  std::vector<std::string> bots;    // bot list
  std::map<std::string, ScopePolicy> scopes;  // "issues", "chat:oc_123", "direct", ...
  // A mention from someone not allowed to ask gets one short line ("I can't take requests from
  // you here"), at most once a day per person (issue 34). Off: such mentions stay silent and are
  // only counted on the panel.
  bool tell_others = false;

  bool IsPerson(const std::string& actor) const;
  bool IsBot(const std::string& actor) const;
};

// What one repository decides for itself (issue 37: `repos:` in policy.yaml). What it leaves out
// is the policy's: its `sources.github` block, when written, takes the place of the top-level one
// whole (people, bots, scopes, tell_others) for Triggers in that repository; its `mode` that of
// the top-level mode. Rules are the policy's (a rule's own mode still outranks both).
struct RepositoryPolicy {
  std::optional<Mode> mode;
  std::optional<SourcePolicy> github;
};

// When a rule's pull request may be merged by the daemon (SPEC §6): off by default, because a
// person merges. The SPEC's 200 changed lines is a ceiling a team may lower, never raise.
struct AutoMergePolicy {
  bool enabled = false;
  int max_changed_lines = 200;  // additions + deletions must stay below this; 1..200
  int required_approvals = 1;   // approvals of the head commit by people; 1..10

  bool operator==(const AutoMergePolicy&) const = default;
};

// One class of proactive work the team allows (SPEC §4.4).
struct Rule {
  std::string name;
  bool enabled = true;
  std::string when;          // what the rule covers (shown to the assessment)
  std::string instructions;  // what the worker is told
  bool silent = false;       // communication requirement: no acknowledgement
  std::string approver;      // review requirement: who approves; "" when none
  AutoMergePolicy auto_merge;  // whether and when its pull request may be merged without a person
  // This rule's own mode (observe | auto), overriding the policy's `mode` for work it matches:
  // how one rule earns auto while the others stay in observe (issue 38). nullopt: the policy's.
  std::optional<Mode> mode;
  // Issue 37: a related set of repositories ("owner/name", lower case, 2..kMaxRuleRepositories):
  // a Ticket under this rule whose repository is one of them may change all of them, one pull
  // request each, merged in this order. Empty: its own repository only.
  std::vector<std::string> repos;
};

// The most repositories one rule relates, and one Mandate lists.
inline constexpr std::size_t kMaxRuleRepositories = 5;

// judgement: in policy.yaml (issue 38). When a rule has earned auto, or lost it, by the precision
// of what it did or would have done: the panel proposes the edit, a person makes it.
struct JudgementSettings {
  double promote_at = 0.9;   // propose auto once the 95 % lower bound reaches this (0..1)
  int promote_after = 30;    // ... over at least this many yes/no answers
  double demote_at = 0.5;    // propose observe, and hold its new Tickets, once it falls under this
  int demote_after = 10;     // ... over at least this many yes/no answers
  int window_days = 30;      // answers on Decisions of the last this many days count

  bool operator==(const JudgementSettings&) const = default;
};

// What one Ticket may spend before a person is asked whether it goes on (issue 22). 0 in a
// dimension means no limit there.
struct Budget {
  std::int64_t tokens = 0;              // model tokens, prompt + completion
  double cost_usd = 0;                  // counted only where the model reports a cost
  std::int64_t wall_clock_minutes = 0;  // time the Ticket has spent in stage working
  std::int64_t turns = 0;               // worker turns begun

  bool operator==(const Budget&) const = default;
  // {"tokens","cost_usd","wall_clock_minutes","turns"}: the one JSON shape (policy, Mandate, panel).
  nlohmann::json ToJson() const;
  // Inverse of ToJson; a missing member is 0. InvalidArgument names the member that is wrong.
  static Result<Budget> FromJson(const nlohmann::json& j);
};

// budgets: in policy.yaml, by how the work was admitted.
struct Budgets {
  Budget for_explicit{2'000'000, 10, 480, 40};  // a person addressed the agent
  Budget for_inferred{300'000, 2, 120, 10};     // rule-matched, proactive, and bots

  bool operator==(const Budgets&) const = default;
  // The budget a Mandate of `strength` gets at accept.
  const Budget& For(Strength strength) const { return strength == Strength::kExplicit ? for_explicit : for_inferred; }
};

// circuit_breaker: in policy.yaml (issue 22). A runaway loop — a worker, a bot, a script — must not
// open Tickets faster than people can look: past `per_sender` new Tickets from one sender, or
// `per_source` from one Source, within `window_minutes`, each further Ticket is held in Needs-you
// until a person starts or drops it in the panel. 0 turns that limit off.
inline constexpr std::int64_t kMaxCircuitBreakerWindowMinutes = 10'080;  // a week
struct CircuitBreaker {
  std::int64_t per_sender = 10;
  std::int64_t per_source = 30;
  std::int64_t window_minutes = 60;  // 1 to kMaxCircuitBreakerWindowMinutes

  bool operator==(const CircuitBreaker&) const = default;
};

struct Policy {
  Mode mode = Mode::kObserve;
  Budgets budgets;
  CircuitBreaker circuit_breaker;
  std::map<std::string, SourcePolicy> sources;  // "github", "feishu"
  std::vector<Rule> rules;
  JudgementSettings judgement;
  // Issue 37: rows of single repositories, by "owner/name" in lower case (github_threads.h).
  std::map<std::string, RepositoryPolicy> repos;

  // The mode work under `rule` runs in: the rule's own, else the policy's.
  Mode ModeOf(const Rule& rule) const { return rule.mode.value_or(mode); }
  // … in repository `repo` ("" none): the rule's own, else the repository's, else the policy's.
  Mode ModeOf(const Rule& rule, const std::string& repo) const { return rule.mode.value_or(ModeIn(repo)); }
  // The mode of repository `repo` ("" none): its own, else the policy's.
  Mode ModeIn(const std::string& repo) const;
  // Where the mode of work under the rule named `rule` ("" none, or a rule no longer written) in
  // `repo` is written, as a key path: {"rules", name, "mode"}, {"repos", repo, "mode"} or
  // {"mode"} (explain names the row to change).
  std::vector<std::string> ModePath(const std::string& rule, const std::string& repo) const;
  // Whether inferred candidates in repository `repo` ("" none) enter Eval: its mode (the
  // policy's unless it writes one) is not off, or an enabled rule's is.
  bool InferredWanted(const std::string& repo) const;
  // The admission table of `source` for a Trigger in repository `repo` ("" none): the
  // repository's own GitHub block, else sources.<source>; nullptr when neither is written.
  const SourcePolicy* SourceIn(const std::string& source, const std::string& repo) const;
  // Where that table is written, as a key path: {"sources", "github"} or
  // {"repos", "acme/api", "sources", "github"} (explain names the row that decided).
  std::vector<std::string> SourcePath(const std::string& source, const std::string& repo) const;
  // The repository a Trigger was written in: its first Thread's, "" for any other platform.
  static std::string RepositoryOf(const Trigger& t);
  // The rule named `name`, or nullptr.
  const Rule* FindRule(const std::string& name) const;
  // Enabled rules in file order.
  std::vector<const Rule*> EnabledRules() const;
  // The admission row for a Trigger's scope. A Feishu "chat:<id>" that the policy does not
  // configure falls to "other_mentions". Returns nullptr when the Source or row is absent.
  const ScopePolicy* FindScope(const std::string& source, const std::string& scope) const;
  // … in the table `src` (SourceIn's).
  static const ScopePolicy* FindScopeIn(const SourcePolicy& src, const std::string& source, const std::string& scope);
  // Canonical JSON (stable key order); equal policies give byte-equal dumps.
  nlohmann::json ToJson() const;
  // Hex digest of ToJson().dump(): the Engine makes a new version exactly when it changes.
  std::string Fingerprint() const;
};

// A problem found while validating, always pointing at a place in a file.
struct Problem {
  std::string file;
  int line = 0;    // 1-based; 0 when the problem concerns the whole file
  int column = 0;  // 1-based; 0 when unknown
  std::string message;
  // "policy.yaml:12:7: mode: must be one of off, observe, auto (got \"fast\")"
  std::string ToString() const;
};

// The unified diff ("--- a/<file>", "+++ b/<file>", one hunk) that sets rule `rule`'s own mode to
// `to` in `yaml`, the text of policy file `file`: its `mode:` line changed, or one added under its
// name. "" when the file does not parse, has no block-style rules entry of that name, or the
// edited text would not parse to that mode. The daemon only proposes it (issue 38).
std::string RuleModeEditDiff(std::string_view yaml, const std::string& file, const std::string& rule, Mode to);

// Embedded defaults: mode observe, no sources, the two default rules of SPEC §4.4.
Policy DefaultPolicy();

// Parses and validates policy YAML. On success returns the Policy and leaves problems empty;
// otherwise returns nullopt and appends *every* problem found (not only the first).
std::optional<Policy> ParsePolicy(std::string_view yaml, const std::string& file, std::vector<Problem>* problems);
// Reads `path` and parses it; an unreadable file is one Problem with line 0.
std::optional<Policy> LoadPolicyFile(const std::string& path, std::vector<Problem>* problems);
// Inverse of Policy::ToJson (used for stored versions).
Result<Policy> PolicyFromJson(const nlohmann::json& j);

}  // namespace superagent
