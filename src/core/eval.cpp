#include "superagent/eval.h"

#include <set>

#include <spdlog/spdlog.h>

#include "superagent/github_threads.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

std::string CheckRuleCoverage(const Assessment& a, const Policy& policy) {
  std::set<std::string> seen;
  for (const RuleVerdict& v : a.rules) {
    const Rule* r = policy.FindRule(v.name);
    if (!r || !r->enabled) return "assessment names unknown or disabled rule \"" + v.name + "\"";
    if (!seen.insert(v.name).second) return "assessment answers rule \"" + v.name + "\" twice";
  }
  for (const Rule* r : policy.EnabledRules())
    if (!seen.count(r->name)) return "assessment does not answer rule \"" + r->name + "\"";
  return "";
}

nlohmann::json AssessmentToJson(const Assessment& a) {
  json rules = json::array();
  for (const RuleVerdict& v : a.rules) rules.push_back({{"name", v.name}, {"matched", v.matched}, {"reason", v.reason}});
  return json{{"decision", DecisionOutcomeName(a.decision)},
              {"implementation_requested", a.implementation_requested},
              {"target_basis", a.target_basis},
              {"open_design_decision", a.open_design_decision},
              {"evidence", a.evidence},
              {"rules", rules},
              {"scope", a.scope},
              {"related_ticket", a.related_ticket ? json(*a.related_ticket) : json(nullptr)},
              {"acknowledgement", a.acknowledgement},
              {"usage", a.usage}};
}

Result<Assessment> NoModelAssessor::Assess(const EvalJob&, const std::vector<const Candidate*>& candidates,
                                           const Policy&) {
  const Candidate* request = nullptr;
  for (const Candidate* c : candidates)
    if (c->gate.strength == Strength::kExplicit) request = c;
  if (!request) return Status::Unavailable("no assessment model is configured (llm.base_url / llm.api_key_env)");
  Assessment a;
  a.decision = DecisionOutcome::kAccept;
  a.implementation_requested = true;
  a.target_basis = "stated";
  a.evidence = text::FirstLine(request->trigger.text, 120);
  a.scope = text::FirstLine(request->trigger.text, 120);
  a.acknowledgement = "On it: " + a.scope;
  return a;
}

std::optional<Verb> ParseVerb(const std::string& text_arg, const std::vector<std::string>& mentions) {
  std::string text_in = text_arg;
  for (const std::string& m : mentions) {
    if (m.empty()) continue;
    for (std::size_t at = text_in.find(m); at != std::string::npos; at = text_in.find(m, at)) text_in.replace(at, m.size(), " ");
  }
  std::vector<std::string> words;
  for (std::size_t i = 0; i < text_in.size();) {
    const std::size_t b = text_in.find_first_not_of(" \t\r\n", i);
    if (b == std::string::npos) break;
    std::size_t e = text_in.find_first_of(" \t\r\n", b);
    if (e == std::string::npos) e = text_in.size();
    std::string word = text_in.substr(b, e - b);
    i = e;
    if (word.front() == '@') continue;  // a mention: who is addressed, not what is said
    words.push_back(text::AsciiLower(word));
    if (words.size() > 3) return std::nullopt;  // no verb is longer: a sentence is the model's
  }
  if (words.empty()) return std::nullopt;
  std::string& last = words.back();
  for (const std::string tail : {"!", ".", "\xE3\x80\x82", "\xEF\xBC\x81"}) {
    while (last.size() > tail.size() && last.ends_with(tail)) last.resize(last.size() - tail.size());
  }
  std::string rest;
  for (const std::string& w : words) rest += (rest.empty() ? "" : " ") + w;
  if (rest == "stop" || rest == "/stop" || rest == "\xE5\x81\x9C\xE6\xAD\xA2") return Verb::kStop;        // 停止
  if (rest == "status" || rest == "/status" || rest == "\xE7\x8A\xB6\xE6\x80\x81") return Verb::kStatus;  // 状态
  // Issue 38: a verdict on what observe mode would have done here.
  if (rest == "was a request" || rest == "a request" || rest == "\xE6\x98\xAF\xE8\xAF\xB7\xE6\xB1\x82")  // 是请求
    return Verb::kWasARequest;
  if (rest == "not a request" || rest == "\xE4\xB8\x8D\xE6\x98\xAF\xE8\xAF\xB7\xE6\xB1\x82")  // 不是请求
    return Verb::kNotARequest;
  return std::nullopt;
}

std::optional<Verb> VerbOf(const Trigger& t) {
  std::vector<std::string> mentions;
  if (auto it = t.meta.find("mentions"); it != t.meta.end() && it->is_array())
    for (const json& m : *it)
      if (m.is_string()) mentions.push_back(m.get<std::string>());
  return ParseVerb(t.text, mentions);
}

EvalOutcome JudgeEval(const EvalJob& job, const Policy& policy, Assessor& assessor) {
  EvalOutcome out;
  out.gated = job.batch;
  const bool thread_has_ticket = !job.tickets.empty();
  std::vector<const Candidate*> candidates;
  for (Candidate& c : out.gated) {
    c.gate = EvaluateGate(policy, c.trigger, thread_has_ticket);
    out.strength = std::max(out.strength, c.gate.strength);
    if (c.gate.candidate) candidates.push_back(&c);
  }
  if (candidates.empty()) {
    out.outcome = DecisionOutcome::kIgnore;
    out.reason = "not admitted: " + (out.gated.empty() ? std::string("empty batch") : out.gated.back().gate.reason);
    return out;
  }
  // The request is the newest candidate of the highest strength.
  const Candidate* request = candidates.front();
  for (const Candidate* c : candidates)
    if (c->gate.strength >= request->gate.strength) request = c;
  out.strength = request->gate.strength;
  out.request_seq = request->seq;
  out.admission = request->gate.reason;

  // A person's verb is decided by code: no model call, so "stop" works when the model does not.
  if (request->gate.strength == Strength::kExplicit && request->trigger.human && request->trigger.addressed) {
    if (auto verb = VerbOf(request->trigger)) {
      const std::string who = request->trigger.actor.value_or("?");
      if (*verb == Verb::kStop) {
        out.outcome = DecisionOutcome::kStop;
        out.verb = "stop";
        out.reason = "stop command from " + who;
      } else if (*verb == Verb::kWasARequest || *verb == Verb::kNotARequest) {
        out.outcome = DecisionOutcome::kIgnore;
        out.verb = *verb == Verb::kWasARequest ? "verdict-yes" : "verdict-no";
        out.reason = "verdict from " + who;
      } else {
        out.outcome = DecisionOutcome::kIgnore;
        out.verb = "status";
        out.reason = "status command from " + who;
      }
      return out;
    }
  }

  // A throw is not caught here: RunOneEval records it against the Thread (RecordEvalError),
  // which requeues it with backoff and sets a poison Thread aside after quarantine.after in a row.
  Result<Assessment> assessed = assessor.Assess(job, candidates, policy);
  if (!assessed.ok()) {
    out.outcome = DecisionOutcome::kUnavailable;
    out.retry = true;
    out.reason = "assessment failed: " + assessed.status().message();
    return out;
  }
  const Assessment& a = *assessed;
  out.assessment = a;
  out.scope = a.scope.empty() ? text::FirstLine(request->trigger.text, 120) : a.scope;
  out.acknowledgement = a.acknowledgement;
  if (a.related_ticket) {
    for (const TicketView& t : job.tickets)
      if (t.id == *a.related_ticket) out.related_ticket = t.id;  // only Tickets on this Thread
  }

  if (a.decision == DecisionOutcome::kStop) {
    if (out.strength == Strength::kExplicit) {
      out.outcome = DecisionOutcome::kStop;
      out.reason = "stop requested by " + request->trigger.actor.value_or("?");
    } else {
      out.outcome = DecisionOutcome::kIgnore;
      out.reason = "stop needs an explicit sender";
    }
    return out;
  }

  if (out.strength == Strength::kExplicit) {
    // Permission came from the Gate; the model only shaped the work.
    out.outcome = DecisionOutcome::kAccept;
    out.reason = "explicit request (" + request->gate.reason + ")";
    return out;
  }

  // Inferred: code checks the structured answer before anything is granted. Each check and its
  // result is kept with the Decision, so a verdict on it can be traced to what decided (issue 38).
  out.checks = json::array();
  auto check = [&out](const char* name, bool passed) {
    out.checks.push_back({{"check", name}, {"passed", passed}});
    return passed;
  };
  if (std::string bad = CheckRuleCoverage(a, policy); !check("rule_coverage", bad.empty())) {
    out.outcome = DecisionOutcome::kUnavailable;
    out.retry = true;
    out.reason = "invalid assessment: " + bad;
    return out;
  }
  if (!check("model_accepts", a.decision == DecisionOutcome::kAccept)) {
    out.outcome = DecisionOutcome::kIgnore;
    out.reason = "assessment: not a request for work";
    return out;
  }
  const bool direction_allowed =
      a.implementation_requested && a.target_basis != "undetermined" && !a.open_design_decision;
  for (const RuleVerdict& v : a.rules)
    if (v.matched) out.matched_rules.push_back(v.name);
  std::string refusal;
  if (!check("direction_allowed", direction_allowed))
    refusal = "direction not allowed (implementation requested, target determined, no open design decision)";
  else if (!check("rule_matched", !out.matched_rules.empty())) refusal = "no enabled rule matched";
  else if (!check("evidence", !a.evidence.empty())) refusal = "no evidence of intent";
  if (!refusal.empty()) {
    out.outcome = DecisionOutcome::kIgnore;
    out.reason = refusal;
    out.matched_rules.clear();
    return out;
  }
  for (const std::string& name : out.matched_rules)
    if (const Rule* r = policy.FindRule(name); r && r->silent) out.silent = true;
  // Each rule has its own mode (the policy's unless it sets one): the work is done when a rule
  // that covers it is in auto, and otherwise only recorded (issue 38: a rule earns auto alone).
  // A repository's own mode stands between them (issue 37).
  const std::string repo = github_threads::HomeRepository(job.thread, "");
  std::vector<std::string> auto_rules;
  for (const std::string& name : out.matched_rules)
    if (const Rule* r = policy.FindRule(name); r && policy.ModeOf(*r, repo) == Mode::kAuto) auto_rules.push_back(name);
  if (check("rule_in_auto", !auto_rules.empty())) {
    out.outcome = DecisionOutcome::kAccept;
    out.reason = "proactive work under rules (auto: " + text::Join(auto_rules, ", ") + ")";
  } else {
    out.outcome = DecisionOutcome::kIgnore;
    out.would_accept = true;
    const Mode mode = policy.ModeIn(repo);
    out.reason = std::string(ModeName(mode == Mode::kAuto ? Mode::kObserve : mode)) +
                 " mode: recorded as would_accept";
  }
  return out;
}

Result<bool> RunOneEval(Engine& engine, Assessor& assessor) {
  auto job = engine.BeginEval();
  if (!job.ok()) return job.status();
  if (!job->has_value()) return false;
  // Judged under the version the Eval started with; if a newer version arrives meanwhile,
  // ApplyPolicy discards the Eval and FinishEval below answers Conflict.
  const EvalId id = (*job)->id;
  Result<FinishResult> finished = Status::Internal("not judged");
  try {
    EvalOutcome outcome = JudgeEval(**job, (*job)->policy, assessor);
    finished = engine.FinishEval(id, outcome);
  } catch (const std::exception& e) {
    finished = Status::Internal(std::string("judging threw: ") + e.what());
  } catch (...) {
    finished = Status::Internal("judging threw a non-standard exception");
  }
  if (finished.ok()) return true;
  if (finished.status().code() == Status::Code::kConflict) {
    spdlog::info("eval outcome dropped id={} reason=\"{}\"", id, finished.status().message());
    return true;
  }
  // Not left running until it times out: counted against its Thread now (poison after N).
  if (Status s = engine.RecordEvalError(id, finished.status().ToString()); !s.ok()) return s;
  return true;
}

}  // namespace superagent
