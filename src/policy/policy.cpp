// Policy value type: names, lookups, canonical JSON, fingerprint and the embedded defaults.
// YAML parsing and validation live in policy_yaml.cpp.
#include "superagent/policy.h"

#include <algorithm>
#include <cmath>

#include "superagent/digest.h"
#include "superagent/github_threads.h"
#include "superagent/trigger.h"

namespace superagent {
namespace {

using nlohmann::json;

// The word policy.yaml uses for a cell value. "ignore" rather than "none", so the stored JSON
// reads like the file a person wrote.
const char* CellWord(Strength s) { return s == Strength::kNone ? "ignore" : StrengthName(s); }

// People and bots are sets: their order and repetitions in the file carry no meaning, so the
// canonical form sorts and deduplicates them and reordering a list does not make a new version.
json SortedSet(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return json(v);
}

bool IsCi(const std::string& source, const std::string& scope) { return source == "github" && scope == "ci"; }

Status JsonError(const std::string& path, const std::string& what) {
  return Status::InvalidArgument("policy" + (path.empty() ? std::string() : "." + path) + ": " + what);
}

// Reads an optional member of an object: absent or null leaves *out untouched.
Status OptString(const json& obj, const char* key, const std::string& path, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return JsonError(path + "." + key, "must be a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status OptBool(const json& obj, const char* key, const std::string& path, bool* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) return JsonError(path + "." + key, "must be true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

Status OptStringList(const json& obj, const char* key, const std::string& path, std::vector<std::string>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return JsonError(path + "." + key, "must be an array of strings");
  for (const auto& e : *it) {
    if (!e.is_string() || e.get<std::string>().empty()) return JsonError(path + "." + key, "must be an array of non-empty strings");
    out->push_back(e.get<std::string>());
  }
  return Status::Ok();
}

// A cell value restricted to the options its cell allows (SPEC §4.3).
Status OptCell(const json& obj, const char* key, const std::string& path, bool allow_explicit, Strength* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  Strength s;
  if (!it->is_string() || !ParseStrength(it->get<std::string>(), &s) || (s == Strength::kExplicit && !allow_explicit))
    return JsonError(path + "." + key, allow_explicit ? "must be one of explicit, inferred, ignore" : "must be one of inferred, ignore");
  *out = s;
  return Status::Ok();
}

Result<ScopePolicy> ScopeFromJson(const json& j, const std::string& path) {
  if (!j.is_object()) return JsonError(path, "must be an object");
  ScopePolicy sp;
  for (Status s : {OptBool(j, "receive_all", path, &sp.receive_all),
                   OptCell(j, "allowed_unaddressed", path, false, &sp.allowed_unaddressed),
                   OptCell(j, "others_addressed", path, true, &sp.others_addressed),
                   OptCell(j, "others_unaddressed", path, false, &sp.others_unaddressed)}) {
    if (!s.ok()) return s;
  }
  return sp;
}

Result<SourcePolicy> SourceFromJson(const json& j, const std::string& path) {
  if (!j.is_object()) return JsonError(path, "must be an object");
  SourcePolicy sp;
  for (Status s : {OptStringList(j, "people", path, &sp.people), OptStringList(j, "bots", path, &sp.bots),
                   OptBool(j, "tell_others", path, &sp.tell_others)})
    if (!s.ok()) return s;
  auto scopes = j.find("scopes");
  if (scopes != j.end() && !scopes->is_null()) {
    if (!scopes->is_object()) return JsonError(path + ".scopes", "must be an object");
    for (const auto& [name, cell] : scopes->items()) {
      Result<ScopePolicy> row = ScopeFromJson(cell, path + ".scopes." + name);
      if (!row.ok()) return row.status();
      sp.scopes[name] = *row;
    }
  }
  return sp;
}

// An integer member within [min, max]; absent or null leaves *out untouched.
Status OptBoundedInt(const json& obj, const char* key, const std::string& path, int min, int max, int* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  const std::string range = "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  if (!it->is_number_integer()) return JsonError(path + "." + key, range);
  const auto v = it->get<std::int64_t>();
  if (v < min || v > max) return JsonError(path + "." + key, range);
  *out = static_cast<int>(v);
  return Status::Ok();
}

Result<AutoMergePolicy> AutoMergeFromJson(const json& j, const std::string& path) {
  if (!j.is_object()) return JsonError(path, "must be an object");
  AutoMergePolicy a;
  for (Status s : {OptBool(j, "enabled", path, &a.enabled),
                   OptBoundedInt(j, "max_changed_lines", path, 1, 200, &a.max_changed_lines),
                   OptBoundedInt(j, "required_approvals", path, 1, 10, &a.required_approvals)}) {
    if (!s.ok()) return s;
  }
  return a;
}

Result<Rule> RuleFromJson(const json& j, const std::string& path) {
  if (!j.is_object()) return JsonError(path, "must be an object");
  Rule r;
  for (Status s : {OptString(j, "name", path, &r.name), OptBool(j, "enabled", path, &r.enabled),
                   OptString(j, "when", path, &r.when), OptString(j, "instructions", path, &r.instructions),
                   OptBool(j, "silent", path, &r.silent), OptString(j, "approver", path, &r.approver)}) {
    if (!s.ok()) return s;
  }
  if (r.name.empty()) return JsonError(path + ".name", "is required");
  if (auto m = j.find("mode"); m != j.end() && !m->is_null()) {
    Mode mode = Mode::kObserve;
    if (!m->is_string() || !ParseMode(m->get<std::string>(), &mode) || mode == Mode::kOff)
      return JsonError(path + ".mode", "must be observe or auto");
    r.mode = mode;
  }
  if (Status s = OptStringList(j, "repos", path, &r.repos); !s.ok()) return s;
  for (std::string& repo : r.repos) {
    if (!github_threads::IsRepositoryName(repo)) return JsonError(path + ".repos", "must list repositories as owner/name");
    repo = github_threads::Canonical(repo);
  }
  if (!r.repos.empty() && (r.repos.size() < 2 || r.repos.size() > kMaxRuleRepositories))
    return JsonError(path + ".repos", "must list 2 to " + std::to_string(kMaxRuleRepositories) + " repositories");
  if (auto am = j.find("auto_merge"); am != j.end() && !am->is_null()) {
    Result<AutoMergePolicy> a = AutoMergeFromJson(*am, path + ".auto_merge");
    if (!a.ok()) return a.status();
    r.auto_merge = *a;
  }
  return r;
}

Status BudgetsFromJson(const json& j, Budgets* out) {
  if (!j.is_object()) return JsonError("budgets", "must be an object");
  for (const auto& [kind, b] : j.items()) {
    if (kind != "explicit" && kind != "inferred") return JsonError("budgets." + kind, "unknown kind (expected explicit or inferred)");
    Result<Budget> budget = Budget::FromJson(b);
    if (!budget.ok()) return JsonError("budgets." + kind, budget.status().message());
    (kind == "explicit" ? out->for_explicit : out->for_inferred) = *budget;
  }
  return Status::Ok();
}

Status CircuitBreakerFromJson(const json& j, CircuitBreaker* out) {
  if (!j.is_object()) return JsonError("circuit_breaker", "must be an object");
  for (const auto& [key, v] : j.items()) {
    std::int64_t* field = key == "per_sender" ? &out->per_sender
                          : key == "per_source" ? &out->per_source
                          : key == "window_minutes" ? &out->window_minutes : nullptr;
    if (field == nullptr) return JsonError("circuit_breaker." + key, "unknown member");
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
      return JsonError("circuit_breaker." + key, "must be a whole number of 0 or more");
    *field = v.get<std::int64_t>();
  }
  if (out->window_minutes < 1 || out->window_minutes > kMaxCircuitBreakerWindowMinutes)
    return JsonError("circuit_breaker.window_minutes", "must be from 1 to " + std::to_string(kMaxCircuitBreakerWindowMinutes));
  return Status::Ok();
}

}  // namespace

json Budget::ToJson() const {
  return json{{"tokens", tokens}, {"cost_usd", cost_usd}, {"wall_clock_minutes", wall_clock_minutes}, {"turns", turns}};
}

Result<Budget> Budget::FromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a budget must be an object");
  Budget b;
  for (const auto& [key, v] : j.items()) {
    if (key == "cost_usd") {
      if (!v.is_number() || v.get<double>() < 0 || !std::isfinite(v.get<double>()))
        return Status::InvalidArgument("cost_usd: must be a number of 0 or more");
      b.cost_usd = v.get<double>();
      continue;
    }
    std::int64_t* field = key == "tokens" ? &b.tokens
                          : key == "wall_clock_minutes" ? &b.wall_clock_minutes
                          : key == "turns" ? &b.turns : nullptr;
    if (field == nullptr) return Status::InvalidArgument(key + ": unknown budget member");
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
      return Status::InvalidArgument(key + ": must be a whole number of 0 or more");
    *field = v.get<std::int64_t>();
  }
  return b;
}

const char* StrengthName(Strength s) {
  switch (s) {
    case Strength::kNone: return "none";
    case Strength::kInferred: return "inferred";
    case Strength::kExplicit: return "explicit";
  }
  return "none";
}

const char* ModeName(Mode m) {
  switch (m) {
    case Mode::kOff: return "off";
    case Mode::kObserve: return "observe";
    case Mode::kAuto: return "auto";
  }
  return "observe";
}

bool ParseMode(std::string_view text, Mode* out) {
  if (text == "off") *out = Mode::kOff;
  else if (text == "observe") *out = Mode::kObserve;
  else if (text == "auto") *out = Mode::kAuto;
  else return false;
  return true;
}

bool ParseStrength(std::string_view text, Strength* out) {
  if (text == "none" || text == "ignore") *out = Strength::kNone;
  else if (text == "inferred") *out = Strength::kInferred;
  else if (text == "explicit") *out = Strength::kExplicit;
  else return false;
  return true;
}

bool SourcePolicy::IsPerson(const std::string& actor) const {
  return std::find(people.begin(), people.end(), actor) != people.end();
}

bool SourcePolicy::IsBot(const std::string& actor) const {
  return std::find(bots.begin(), bots.end(), actor) != bots.end();
}

const Rule* Policy::FindRule(const std::string& name) const {
  for (const Rule& r : rules)
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<const Rule*> Policy::EnabledRules() const {
  std::vector<const Rule*> out;
  for (const Rule& r : rules)
    if (r.enabled) out.push_back(&r);
  return out;
}

const ScopePolicy* Policy::FindScope(const std::string& source, const std::string& scope) const {
  auto src = sources.find(source);
  if (src == sources.end()) return nullptr;
  return FindScopeIn(src->second, source, scope);
}

const ScopePolicy* Policy::FindScopeIn(const SourcePolicy& src, const std::string& source, const std::string& scope) {
  auto row = src.scopes.find(scope);
  if (row != src.scopes.end()) return &row->second;
  // A Feishu group the policy does not list only reaches us when it @-mentions the agent, which
  // is exactly what the "other_mentions" row is about.
  if (source == "feishu" && scope.rfind("chat:", 0) == 0) {
    row = src.scopes.find("other_mentions");
    if (row != src.scopes.end()) return &row->second;
  }
  return nullptr;
}

std::string Policy::RepositoryOf(const Trigger& t) {
  if (t.source != "github" || t.threads.empty()) return "";
  auto place = github_threads::PlaceOf(t.threads.front());
  return place ? place->repo : "";
}

Mode Policy::ModeIn(const std::string& repo) const {
  if (auto it = repos.find(repo); !repo.empty() && it != repos.end() && it->second.mode) return *it->second.mode;
  return mode;
}

std::vector<std::string> Policy::ModePath(const std::string& rule, const std::string& repo) const {
  if (const Rule* r = FindRule(rule); r != nullptr && r->mode) return {"rules", rule, "mode"};
  if (auto it = repos.find(repo); !repo.empty() && it != repos.end() && it->second.mode) return {"repos", repo, "mode"};
  return {"mode"};
}

const SourcePolicy* Policy::SourceIn(const std::string& source, const std::string& repo) const {
  if (auto it = repos.find(repo); source == "github" && !repo.empty() && it != repos.end() && it->second.github)
    return &*it->second.github;
  auto src = sources.find(source);
  return src == sources.end() ? nullptr : &src->second;
}

std::vector<std::string> Policy::SourcePath(const std::string& source, const std::string& repo) const {
  if (auto it = repos.find(repo); source == "github" && !repo.empty() && it != repos.end() && it->second.github)
    return {"repos", repo, "sources", source};
  return {"sources", source};
}

namespace {

// One admission table as the canonical JSON writes it.
json SourceJson(const std::string& name, const SourcePolicy& sp) {
  json scopes = json::object();
  for (const auto& [row, cell] : sp.scopes) {
    if (IsCi(name, row)) {
      // CI has no sender: its row has only this cell, so the others are not part of its meaning.
      scopes[row] = json{{"others_unaddressed", CellWord(cell.others_unaddressed)}};
      continue;
    }
    scopes[row] = json{{"receive_all", cell.receive_all},
                       {"allowed_unaddressed", CellWord(cell.allowed_unaddressed)},
                       {"others_addressed", CellWord(cell.others_addressed)},
                       {"others_unaddressed", CellWord(cell.others_unaddressed)}};
  }
  json out{{"people", SortedSet(sp.people)}, {"bots", SortedSet(sp.bots)}, {"scopes", scopes}};
  // Only when set: a policy written before the key existed keeps its fingerprint (no new version).
  if (sp.tell_others) out["tell_others"] = true;
  return out;
}

}  // namespace

json Policy::ToJson() const {
  json j = json::object();
  j["mode"] = ModeName(mode);
  json srcs = json::object();
  for (const auto& [name, sp] : sources) srcs[name] = SourceJson(name, sp);
  j["sources"] = srcs;
  // Only when written: a policy from before issue 37 keeps its fingerprint (no new version).
  if (!repos.empty()) {
    json rj = json::object();
    for (const auto& [repo, rows] : repos) {
      json one = json::object();
      if (rows.mode) one["mode"] = ModeName(*rows.mode);
      if (rows.github) one["sources"] = json{{"github", SourceJson("github", *rows.github)}};
      rj[repo] = std::move(one);
    }
    j["repos"] = std::move(rj);
  }

  // Rules keep file order: EnabledRules() promises it and prompts list them in that order.
  json rules_json = json::array();
  for (const Rule& r : rules) {
    json rule{{"name", r.name},
              {"enabled", r.enabled},
              {"when", r.when},
              {"instructions", r.instructions},
              {"silent", r.silent},
              {"approver", r.approver}};
    // Written only when a team set it: versions stored before auto-merge existed keep their
    // fingerprint, so upgrading the daemon does not make a new policy version out of nothing.
    if (r.auto_merge != AutoMergePolicy{})
      rule["auto_merge"] = json{{"enabled", r.auto_merge.enabled},
                                {"max_changed_lines", r.auto_merge.max_changed_lines},
                                {"required_approvals", r.auto_merge.required_approvals}};
    if (r.mode) rule["mode"] = ModeName(*r.mode);  // only when set, as for auto_merge
    if (!r.repos.empty()) rule["repos"] = r.repos;  // likewise
    rules_json.push_back(std::move(rule));
  }
  j["rules"] = rules_json;
  j["budgets"] = json{{"explicit", budgets.for_explicit.ToJson()}, {"inferred", budgets.for_inferred.ToJson()}};
  // Written only when a team set it, as for auto_merge: an upgrade keeps the policy's fingerprint.
  if (circuit_breaker != CircuitBreaker{})
    j["circuit_breaker"] = json{{"per_sender", circuit_breaker.per_sender},
                                {"per_source", circuit_breaker.per_source},
                                {"window_minutes", circuit_breaker.window_minutes}};
  if (judgement != JudgementSettings{})
    j["judgement"] = json{{"promote_at", judgement.promote_at},
                          {"promote_after", judgement.promote_after},
                          {"demote_at", judgement.demote_at},
                          {"demote_after", judgement.demote_after},
                          {"window_days", judgement.window_days}};
  return j;
}

bool Policy::InferredWanted(const std::string& repo) const {
  if (ModeIn(repo) != Mode::kOff) return true;
  for (const Rule& r : rules)
    if (r.enabled && r.mode && *r.mode != Mode::kOff) return true;
  return false;
}

std::string Policy::Fingerprint() const { return Sha256Hex(ToJson().dump()); }

std::string Problem::ToString() const {
  std::string where = file;
  if (line > 0) {
    where += ":" + std::to_string(line);
    if (column > 0) where += ":" + std::to_string(column);
  }
  return where + ": " + message;
}

Policy DefaultPolicy() {
  Policy p;
  p.mode = Mode::kObserve;
  Rule wording;
  wording.name = "wording";
  wording.when = "Fix wording, typos, punctuation and existing translations.";
  wording.instructions =
      "Keep the change to the text in question: no rephrasing beyond the fix, no change in behaviour.";
  Rule visual;
  visual.name = "visual_fix";
  visual.when =
      "Targeted visual fixes with a clear goal, such as restoring spacing or alignment to an existing standard.";
  visual.instructions =
      "Change only what restores the existing standard and name that standard; a UI change is not ready "
      "without before/after screenshots.";
  p.rules = {wording, visual};
  return p;
}

Result<Policy> PolicyFromJson(const json& j) {
  if (!j.is_object()) return JsonError("", "must be a JSON object");
  Policy p;
  auto mode = j.find("mode");
  if (mode != j.end() && !mode->is_null()) {
    if (!mode->is_string() || !ParseMode(mode->get<std::string>(), &p.mode))
      return JsonError("mode", "must be one of off, observe, auto");
  }
  auto srcs = j.find("sources");
  if (srcs != j.end() && !srcs->is_null()) {
    if (!srcs->is_object()) return JsonError("sources", "must be an object");
    for (const auto& [name, sj] : srcs->items()) {
      Result<SourcePolicy> sp = SourceFromJson(sj, "sources." + name);
      if (!sp.ok()) return sp.status();
      p.sources[name] = std::move(*sp);
    }
  }
  if (auto rj = j.find("repos"); rj != j.end() && !rj->is_null()) {
    if (!rj->is_object()) return JsonError("repos", "must be an object");
    for (const auto& [repo, one] : rj->items()) {
      const std::string path = "repos." + repo;
      if (!github_threads::IsRepositoryName(repo) || github_threads::Canonical(repo) != repo)
        return JsonError(path, "is not a repository's owner/name in lower case");
      if (!one.is_object()) return JsonError(path, "must be an object");
      RepositoryPolicy rows;
      for (const auto& [key, v] : one.items()) {
        if (key == "mode") {
          Mode m = Mode::kObserve;
          if (!v.is_string() || !ParseMode(v.get<std::string>(), &m)) return JsonError(path + ".mode", "must be one of off, observe, auto");
          rows.mode = m;
        } else if (key == "sources") {
          if (!v.is_object()) return JsonError(path + ".sources", "must be an object");
          for (const auto& [name, sj] : v.items()) {
            if (name != "github") return JsonError(path + ".sources." + name, "a repository's rows are GitHub's");
            Result<SourcePolicy> sp = SourceFromJson(sj, path + ".sources.github");
            if (!sp.ok()) return sp.status();
            rows.github = std::move(*sp);
          }
        } else {
          return JsonError(path + "." + key, "unknown member");
        }
      }
      p.repos[repo] = std::move(rows);
    }
  }
  // Versions stored before budgets existed have none: they read as the defaults.
  if (auto budgets = j.find("budgets"); budgets != j.end() && !budgets->is_null()) {
    if (Status s = BudgetsFromJson(*budgets, &p.budgets); !s.ok()) return s;
  }
  if (auto cb = j.find("circuit_breaker"); cb != j.end() && !cb->is_null()) {
    if (Status s = CircuitBreakerFromJson(*cb, &p.circuit_breaker); !s.ok()) return s;
  }
  if (auto jd = j.find("judgement"); jd != j.end() && !jd->is_null()) {
    if (!jd->is_object()) return JsonError("judgement", "must be an object");
    JudgementSettings& js = p.judgement;
    for (const auto& [key, v] : jd->items()) {
      if (key == "promote_at" || key == "demote_at") {
        if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1) return JsonError("judgement." + key, "must be from 0 to 1");
        (key == "promote_at" ? js.promote_at : js.demote_at) = v.get<double>();
        continue;
      }
      int* field = key == "promote_after" ? &js.promote_after
                   : key == "demote_after" ? &js.demote_after
                   : key == "window_days" ? &js.window_days : nullptr;
      if (field == nullptr) return JsonError("judgement." + key, "unknown member");
      if (Status s = OptBoundedInt(*jd, key.c_str(), "judgement", 1, key == "window_days" ? 365 : 10'000, field); !s.ok())
        return s;
    }
  }
  auto rules = j.find("rules");
  if (rules != j.end() && !rules->is_null()) {
    if (!rules->is_array()) return JsonError("rules", "must be an array");
    for (std::size_t i = 0; i < rules->size(); ++i) {
      Result<Rule> r = RuleFromJson((*rules)[i], "rules[" + std::to_string(i) + "]");
      if (!r.ok()) return r.status();
      p.rules.push_back(std::move(*r));
    }
  }
  return p;
}

}  // namespace superagent
