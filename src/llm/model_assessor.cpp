// ModelAssessor: prompt → one forced `decide` call → strict validation → Assessment.
#include "superagent/model_assessor.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "superagent/digest.h"
#include "superagent/eval.h"
#include "superagent/text.h"

namespace superagent {

using nlohmann::json;

namespace {

constexpr const char* kDecide = "decide";
const std::vector<std::string> kArguments = {"decision",        "implementation_requested", "target_basis",
                                             "open_design_decision", "evidence",          "rules",
                                             "scope",           "related_ticket",          "acknowledgement"};

// The request as JudgeEval picks it: the newest candidate of the highest strength.
const Candidate* RequestOf(const std::vector<const Candidate*>& candidates) {
  const Candidate* request = nullptr;
  for (const Candidate* c : candidates)
    if (!request || c->gate.strength >= request->gate.strength) request = c;
  return request;
}

// "scope" is one line by contract; a model's stray newline or extra spaces are layout, not a
// different answer, so they are folded rather than rejected.
std::string OneLine(const std::string& s, std::size_t max) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return text::Cut(out, max);
}

// What to tell the model when its answer is rejected.
std::string Rejection(const std::string& problems) {
  return "Your answer was rejected by the host: " + problems +
         ". Call the function decide again, once, with every argument corrected.";
}

}  // namespace

llm::ToolSpec DecideTool(const Policy& policy) {
  json rule_name = {{"type", "string"}};
  std::vector<std::string> names;
  for (const Rule* r : policy.EnabledRules()) names.push_back(r->name);
  if (!names.empty()) rule_name["enum"] = names;
  json rules = {{"type", "array"},
                {"description", "One entry per enabled team rule, each exactly once."},
                {"items",
                 {{"type", "object"},
                  {"properties",
                   {{"name", rule_name},
                    {"matched", {{"type", "boolean"}}},
                    {"reason", {{"type", "string"}, {"description", "One line."}}}}},
                  {"required", {"name", "matched", "reason"}},
                  {"additionalProperties", false}}}};
  if (names.empty()) rules["maxItems"] = 0;
  json params = {
      {"type", "object"},
      {"properties",
       {{"decision", {{"type", "string"}, {"enum", {"accept", "ignore", "stop"}}}},
        {"implementation_requested", {{"type", "boolean"}}},
        {"target_basis", {{"type", "string"}, {"enum", {"stated", "existing_standard", "undetermined"}}}},
        {"open_design_decision", {{"type", "boolean"}}},
        {"evidence", {{"type", "string"}, {"description", "The quoted words of the batch the answer rests on."}}},
        {"rules", rules},
        {"scope", {{"type", "string"}, {"description", "One line: what the work is."}}},
        {"related_ticket",
         {{"type", {"integer", "null"}},
          {"description", "Id of a Ticket on this Thread, only on an explicit reference; else null."}}},
        {"acknowledgement", {{"type", "string"}, {"description", "What the agent says once; \"\" for ignore."}}}}},
      {"required", kArguments},
      {"additionalProperties", false}};
  return {kDecide, "Record your assessment of the batch. The only way to answer.", params};
}

Result<Assessment> ParseDecideArguments(const std::string& arguments, const EvalJob& job,
                                        const std::vector<const Candidate*>& candidates, const Policy& policy,
                                        bool cut_long_acknowledgement) {
  json j = json::parse(arguments, nullptr, false);
  if (j.is_discarded()) return Status::InvalidArgument("the arguments of decide are not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument("the arguments of decide must be a JSON object");

  std::vector<std::string> problems;
  for (const std::string& name : kArguments)
    if (!j.contains(name)) problems.push_back("argument " + name + " is missing");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(kArguments.begin(), kArguments.end(), it.key()) == kArguments.end())
      problems.push_back("unknown argument " + it.key());
  if (!problems.empty()) return Status::InvalidArgument(text::Join(problems, "; "));

  Assessment a;
  auto text = [&](const char* key, std::string* out) {
    if (!j[key].is_string()) return problems.push_back(std::string(key) + " must be a string");
    *out = j[key].get<std::string>();
  };
  auto flag = [&](const char* key, bool* out) {
    if (!j[key].is_boolean()) return problems.push_back(std::string(key) + " must be true or false");
    *out = j[key].get<bool>();
  };

  std::string decision;
  text("decision", &decision);
  if (j["decision"].is_string()) {
    if (decision == "accept") a.decision = DecisionOutcome::kAccept;
    else if (decision == "ignore") a.decision = DecisionOutcome::kIgnore;
    else if (decision == "stop") a.decision = DecisionOutcome::kStop;
    else problems.push_back("decision must be accept, ignore or stop (got \"" + decision + "\")");
  }
  flag("implementation_requested", &a.implementation_requested);
  text("target_basis", &a.target_basis);
  if (j["target_basis"].is_string() && a.target_basis != "stated" && a.target_basis != "existing_standard" &&
      a.target_basis != "undetermined")
    problems.push_back("target_basis must be stated, existing_standard or undetermined (got \"" + a.target_basis + "\")");
  flag("open_design_decision", &a.open_design_decision);
  text("evidence", &a.evidence);
  a.evidence = text::Trim(a.evidence);

  if (!j["rules"].is_array()) {
    problems.push_back("rules must be an array of {name, matched, reason}");
  } else {
    for (std::size_t i = 0; i < j["rules"].size(); ++i) {
      const json& r = j["rules"][i];
      const std::string at = "rules[" + std::to_string(i) + "]";
      if (!r.is_object() || !r.contains("name") || !r["name"].is_string() || !r.contains("matched") ||
          !r["matched"].is_boolean() || !r.contains("reason") || !r["reason"].is_string() || r.size() != 3) {
        problems.push_back(at + " must be exactly {\"name\": string, \"matched\": true|false, \"reason\": string}");
        continue;
      }
      a.rules.push_back({r["name"].get<std::string>(), r["matched"].get<bool>(), OneLine(r["reason"], 300)});
    }
  }

  text("scope", &a.scope);
  a.scope = OneLine(a.scope, 200);

  const json& rel = j["related_ticket"];
  if (rel.is_number_integer()) {
    TicketId id = rel.get<TicketId>();
    bool on_thread = std::any_of(job.tickets.begin(), job.tickets.end(), [&](const TicketView& t) { return t.id == id; });
    if (!on_thread) problems.push_back("related_ticket " + std::to_string(id) + " is not a Ticket on this Thread (use null)");
    else a.related_ticket = id;
  } else if (!rel.is_null()) {
    problems.push_back("related_ticket must be a Ticket id (integer) or null");
  }

  text("acknowledgement", &a.acknowledgement);
  a.acknowledgement = text::Trim(a.acknowledgement);
  const Candidate* request = RequestOf(candidates);
  if (request) {
    // SPEC §1: a chat message is one short summary of at most 100 words. Code enforces it, so a
    // wordy model cannot spend the team's attention.
    std::size_t limit = AcknowledgementWordLimit(request->trigger.source);
    std::size_t words = text::CountWords(a.acknowledgement);
    if (words > limit && cut_long_acknowledgement) {
      spdlog::warn("acknowledgement cut words={} limit={}", words, limit);
      a.acknowledgement = text::CutWords(a.acknowledgement, limit);
    } else if (words > limit) {
      problems.push_back("acknowledgement has " + std::to_string(words) + " words; at most " + std::to_string(limit) +
                         " are allowed here");
    }
    // For inferred candidates every enabled rule must be answered exactly once (SPEC §5).
    if (request->gate.strength != Strength::kExplicit && j["rules"].is_array()) {
      if (std::string bad = CheckRuleCoverage(a, policy); !bad.empty()) {
        std::string enabled;
        for (const Rule* r : policy.EnabledRules()) enabled += (enabled.empty() ? "" : ", ") + r->name;
        problems.push_back(bad + " (answer each of: " + (enabled.empty() ? std::string("none") : enabled) + ")");
      }
    }
  }
  if (!problems.empty()) return Status::InvalidArgument(text::Join(problems, "; "));
  return a;
}

ModelAssessor::ModelAssessor(std::unique_ptr<llm::ChatClient> client, ModelAssessorOptions options, Clock* clock)
    : client_(std::move(client)), options_(std::move(options)), clock_(clock) {}

Result<Assessment> ModelAssessor::Assess(const EvalJob& job, const std::vector<const Candidate*>& candidates,
                                         const Policy& policy) {
  const TimeMs started = clock_->NowMs();
  AssessmentPromptInput in;
  in.job = &job;
  in.candidates = &candidates;
  in.policy = &policy;
  in.agent_name = options_.agent_name;
  in.repo = options_.repo;
  in.limits = options_.limits;
  // Read now, not at start-up: a team's edit applies to this very call (SPEC §7).
  in.team = LoadTeamFiles(options_.team_dir, options_.limits.team_file_chars);
  Prompt prompt = BuildAssessmentPrompt(in);
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string problems = text::Join(prompt.problems, "; ");
    if (problems != last_team_problems_) {
      if (!problems.empty()) spdlog::warn("prompts.team_dir problems dir=\"{}\" problems=\"{}\"", options_.team_dir, problems);
      last_team_problems_ = problems;
    }
  }

  llm::ChatRequest req;
  req.model = options_.model;
  req.purpose = "assessment";
  req.messages = {llm::Message::System(prompt.system), llm::Message::User(prompt.user)};
  req.tools = {DecideTool(policy)};
  req.tool_choice = kDecide;  // forced: a text answer is not an answer
  req.temperature = 0.0;
  req.max_tokens = options_.max_tokens;
  req.deadline_ms = started + options_.budget_ms;

  llm::Usage usage;
  usage.purpose = req.purpose;
  usage.model = req.model;
  auto usage_json = [&] {
    json u = usage.ToJson();
    u["prompt_chars"] = prompt.system.size() + prompt.user.size();
    // The prompt's version: its instructions as sent (built-in text, team files, rules), so two
    // Decisions with one version were judged by the same words (issue 38).
    u["prompt_version"] = Sha256Hex(prompt.system).substr(0, 16);
    if (!prompt.cuts.empty()) u["input_cut"] = prompt.cuts;
    return u;
  };

  std::string last_problem;
  for (int answer = 1; answer <= options_.max_answers; ++answer) {
    auto resp = client_->Complete(req);
    if (!resp.ok()) return Status::Unavailable("model call failed: " + resp.status().message());
    usage.Add(resp->usage);

    std::string problem;
    Result<Assessment> parsed = Status::InvalidArgument("no answer");
    if (resp->tool_calls.empty()) {
      problem = "no function was called; the answer must be one call of decide";
    } else if (resp->tool_calls.size() > 1) {
      problem = "decide must be called exactly once (got " + std::to_string(resp->tool_calls.size()) + " calls)";
    } else if (resp->tool_calls[0].name != kDecide) {
      problem = "unknown function \"" + resp->tool_calls[0].name + "\"; the answer must be one call of decide";
    } else {
      // The first answer is held to the acknowledgement's limit (the model may shorten it well);
      // after that a long one is cut, so a wordy model never costs the request its answer.
      parsed = ParseDecideArguments(resp->tool_calls[0].arguments, job, candidates, policy, /*cut_long_acknowledgement=*/answer > 1);
      if (!parsed.ok()) problem = parsed.status().message();
    }
    if (problem.empty()) {
      Assessment a = std::move(*parsed);
      a.usage = usage_json();
      return a;
    }

    last_problem = problem;
    spdlog::warn("assessment answer rejected eval={} answer={} problem=\"{}\"", job.id, answer, problem);
    // Show the model its own answer and what was wrong, in the protocol's terms: every tool call
    // gets a tool reply; a text-only answer gets a user turn written by the host.
    llm::Message said{"assistant", resp->content, resp->tool_calls, ""};
    req.messages.push_back(said);
    if (resp->tool_calls.empty()) {
      req.messages.push_back(llm::Message::User(Rejection(problem)));
    } else {
      for (const llm::ToolCall& c : resp->tool_calls) req.messages.push_back(llm::Message::Tool(c.id, Rejection(problem)));
    }
  }
  spdlog::warn("assessment unavailable eval={} usage={}", job.id, usage_json().dump());
  return Status::Unavailable("malformed assessment after " + std::to_string(options_.max_answers) +
                             " answers: " + last_problem);
}

}  // namespace superagent
