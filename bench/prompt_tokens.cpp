// Benchmark 5 (issue 10): the Eval's token budget.
//
// A realistic Thread (20 messages, 2 Tickets) is assessed with the real prompt assembly
// (BuildAssessmentPrompt, DecideTool, ChatRequestToJson: exactly what ModelAssessor sends).
// Figures: the prompt's size in tokens by DeepSeek's rule of thumb (1 English character ≈ 0.3
// token, 1 Chinese character ≈ 0.6 token), and the prefix shared between two Evals — the part a
// provider's prompt cache can serve — as a fraction of the prompt. Target: ≥ 70 % stable prefix.
// It also runs JudgeEval on not-admitted messages with a counting Assessor: they must cost
// 0 tokens (no model call). With DEEPSEEK_API_KEY set, one real call reports the API's `usage`.
#include <cstdio>
#include <cstdlib>

#include "app/config.h"
#include "app/wiring.h"
#include "bench_common.h"
#include "superagent/eval.h"
#include "superagent/gate.h"
#include "superagent/http.h"
#include "superagent/llm.h"
#include "superagent/model_assessor.h"
#include "superagent/prompts.h"

using namespace superagent;
using namespace superagent::bench;

namespace {

const char kPolicy[] = R"(mode: auto
sources:
  github:
    people: [alice, bob, carol]
    scopes:
      comments: { others_addressed: inferred }
rules:
  - name: wording
    when: Fix wording, typos and broken links in documentation.
    instructions: Keep the change small; one commit.
  - name: flaky-tests
    when: Make a flaky test deterministic without weakening what it checks.
    instructions: Explain the race in the PR description.
  - name: dependency-bumps
    when: Bump a dependency by a patch or minor version when CI is green.
    instructions: Never bump a major version.
)";

// DeepSeek's published rule of thumb.
double EstimateTokens(const std::string& s) {
  double t = 0;
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    t += (len == 3) ? 0.6 : 0.3;  // 3-byte UTF-8 is where CJK lives
    i += len;
  }
  return t;
}

Trigger Message(int thread, int i, const std::string& actor, const std::string& text, TimeMs at) {
  Trigger t;
  t.id = "github:comment:" + std::to_string(thread * 1000 + i) + "@2026-12-02T10:00:00Z";
  t.source = "github";
  t.scope = "comments";
  t.actor = actor;
  t.human = true;
  t.addressed = text.find("@superagent") != std::string::npos;
  t.text = text;
  t.at = at;
  t.threads = {"github:issue:" + std::to_string(thread)};
  t.channel = t.threads[0];
  t.meta = {{"html_url", "https://github.com/acme/widgets/issues/" + std::to_string(thread) + "#issuecomment-" +
                             std::to_string(thread * 1000 + i)}};
  return t;
}

// A Thread of 20 messages by three people with realistic lengths; the last one asks the agent.
EvalJob MakeJob(int thread, const Policy& policy, std::mt19937_64& rng, int messages = 20) {
  EvalJob job;
  job.id = thread;
  job.thread = "github:issue:" + std::to_string(thread);
  job.policy = policy;
  const char* people[] = {"alice", "bob", "carol"};
  TimeMs at = 1'796'000'000'000;
  for (int i = 0; i < messages - 1; ++i) {
    at += 600'000;
    job.history.push_back(Message(thread, i, people[i % 3], Words(rng, MessageLength(rng)), at));
  }
  Trigger ask = Message(thread, messages - 1, "alice",
                        "@superagent-bot please fix the broken link to the install guide in README and the typo in "
                        "its heading",
                        at + 600'000);
  job.history.push_back(ask);
  Candidate c;
  c.seq = thread * 1000 + messages;
  c.trigger = ask;
  job.batch.push_back(c);
  job.tickets = {{thread * 10 + 1, Stage::kEnded, "Fix the flaky parser test", true},
                 {thread * 10 + 2, Stage::kWorking, "Bump yaml-cpp to 0.8.1", true}};
  return job;
}

// What ModelAssessor sends, as the model reads it: tools, then system, then user.
std::string Rendered(const EvalJob& job, const Policy& policy, std::vector<const Candidate*>* candidates,
                     std::size_t* system_chars) {
  AssessmentPromptInput in;
  in.job = &job;
  in.candidates = candidates;
  in.policy = &policy;
  in.agent_name = "superagent";
  in.repo = "acme/widgets";
  Prompt prompt = BuildAssessmentPrompt(in);
  llm::ChatRequest req;
  req.model = "deepseek-chat";
  req.messages = {llm::Message::System(prompt.system), llm::Message::User(prompt.user)};
  req.tools = {DecideTool(policy)};
  req.tool_choice = "decide";
  const nlohmann::json body = llm::ChatRequestToJson(req);
  const std::string tools = body["tools"].dump();
  *system_chars = tools.size() + prompt.system.size();
  return tools + prompt.system + prompt.user;
}

std::size_t CommonPrefix(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

class CountingAssessor : public Assessor {
 public:
  int calls = 0;
  Result<Assessment> Assess(const EvalJob&, const std::vector<const Candidate*>&, const Policy&) override {
    ++calls;
    return Status::Unavailable("counted");
  }
};

}  // namespace

int main() {
  std::vector<Problem> problems;
  auto policy = ParsePolicy(kPolicy, "bench", &problems);
  if (!policy) {
    std::fprintf(stderr, "policy: %s\n", problems.empty() ? "?" : problems[0].ToString().c_str());
    return 1;
  }
  std::mt19937_64 rng(7);
  auto gated = [&](EvalJob& job) {
    std::vector<const Candidate*> c;
    for (Candidate& x : job.batch) {
      x.gate = EvaluateGate(*policy, x.trigger, !job.tickets.empty());
      if (x.gate.candidate) c.push_back(&x);
    }
    return c;
  };
  EvalJob a = MakeJob(57, *policy, rng), b = MakeJob(58, *policy, rng);
  EvalJob a_next = a;  // the same Thread one message later (a follow-up Eval)
  {
    Trigger more = Message(57, 20, "bob", "@superagent-bot also the one in CONTRIBUTING.md please", a.history.back().at + 60'000);
    a_next.history.push_back(more);
    a_next.batch[0].trigger = more;
    a_next.batch[0].seq += 1;
  }
  auto ca = gated(a), cb = gated(b), cn = gated(a_next);
  if (ca.empty()) {
    std::fprintf(stderr, "the request was not admitted by the Gate: %s\n", a.batch[0].gate.reason.c_str());
    return 1;
  }
  std::size_t sys_a = 0, sys_b = 0, sys_n = 0;
  const std::string pa = Rendered(a, *policy, &ca, &sys_a), pb = Rendered(b, *policy, &cb, &sys_b),
                    pn = Rendered(a_next, *policy, &cn, &sys_n);
  const double tokens = EstimateTokens(pa);
  const double other_thread = static_cast<double>(CommonPrefix(pa, pb)) / static_cast<double>(pa.size());
  const double same_thread = static_cast<double>(CommonPrefix(pa, pn)) / static_cast<double>(pn.size());
  // The target is about the next Eval of the same Thread: that is the call a prompt cache can
  // serve beyond the system message (another Thread's history is other text by definition).
  const double stable = same_thread;

  // Not admitted: an unknown person's unaddressed chatter on a Thread without Tickets.
  EvalJob noise = MakeJob(59, *policy, rng, 3);
  noise.tickets.clear();
  noise.batch[0].trigger.actor = "stranger";
  noise.batch[0].trigger.addressed = false;
  noise.batch[0].trigger.text = "thanks, looks good to me";
  CountingAssessor counter;
  EvalOutcome out = JudgeEval(noise, *policy, counter);

  std::printf("prompt of one Eval (20 messages, 2 Tickets): %zu chars ≈ %.0f tokens (DeepSeek rule of thumb)\n",
              pa.size(), tokens);
  std::printf("  tools + system message (policy- and team-stable): %zu chars, %.1f %% of the prompt\n", sys_a,
              100.0 * static_cast<double>(sys_a) / static_cast<double>(pa.size()));
  std::printf("  prefix shared with an Eval of another Thread: %.1f %%\n", 100 * other_thread);
  std::printf("  prefix shared with the next Eval of the same Thread: %.1f %%\n", 100 * same_thread);
  std::printf("  not-admitted message: model calls %d, tokens 0 (outcome %s, reason \"%s\")\n", counter.calls,
              DecisionOutcomeName(out.outcome), out.reason.c_str());

  std::string live = "not_configured";
  long live_prompt = -1, live_cached = -1;
  if (const char* key = std::getenv("DEEPSEEK_API_KEY"); key && *key) {
    Config config;
    auto http = MakeHttpClient("superagent-bench");
    auto assessor = app::MakeAssessor(config, http.get());
    auto r = assessor->Assess(a, ca, *policy);
    if (r.ok()) {
      live = "ok";
      live_prompt = r->usage.value("prompt_tokens", -1L);
      live_cached = r->usage.value("cache_hit_tokens", -1L);
      std::printf("  live %s: usage %s\n", config.llm.base_url.c_str(), r->usage.dump().c_str());
    } else {
      live = "failed";
      std::printf("  live call failed: %s\n", r.status().ToString().c_str());
    }
  } else {
    std::printf("  live usage: DEEPSEEK_API_KEY unset, estimate only\n");
  }
  Summary("prompt_tokens")
      .Add("prompt_chars", pa.size())
      .Add("prompt_tokens_est", tokens)
      .Add("stable_prefix_other_thread", other_thread)
      .Add("stable_prefix_same_thread", same_thread)
      .Add("target", 0.7)
      .Add("pass", stable >= 0.7 && counter.calls == 0 ? 1 : 0)
      .Add("not_admitted_model_calls", counter.calls)
      .Add("live", live)
      .Add("live_prompt_tokens", live_prompt)
      .Add("live_cache_hit_tokens", live_cached)
      .Print();
  return 0;
}
