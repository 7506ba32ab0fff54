// The model's answer to an Eval (src/llm/model_assessor.cpp): the arguments of `decide` are text
// a language model wrote, so any bytes must become an Assessment or an InvalidArgument worded for
// the model — never a crash. Parsed for an inferred GitHub request and an explicit Feishu one
// (the word limit and the rule coverage differ).
#include <vector>

#include "fuzz_support.h"
#include "superagent/model_assessor.h"

namespace {

struct Batch {
  superagent::EvalJob job;
  superagent::Candidate candidate;
  std::vector<const superagent::Candidate*> candidates;
  Batch(const std::string& source, superagent::Strength strength) {
    job.thread = source == "github" ? "github:issue:1" : "feishu:chat:oc_support";
    job.tickets = {{4, superagent::Stage::kIdle, "Fix the link", true}};
    candidate.seq = 1;
    candidate.trigger.source = source;
    candidate.gate = {strength, true, "fuzz"};
    candidates = {&candidate};
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  static const Policy policy = fuzz::TeamPolicy();
  static Batch github("github", Strength::kInferred), feishu("feishu", Strength::kExplicit);
  const std::string args = fuzz::Bytes(data, size);
  for (Batch* b : {&github, &feishu}) {
    auto a = ParseDecideArguments(args, b->job, b->candidates, policy);
    if (!a.ok()) {
      if (a.status().message().empty()) std::abort();  // the model must be told what is wrong
      nlohmann::json{{"role", "user"}, {"content", a.status().message()}}.dump();  // … and it is, as JSON
      continue;
    }
    // The Decision is stored as JSON: every text the model gave must survive that.
    nlohmann::json stored = {{"evidence", a->evidence}, {"scope", a->scope}, {"acknowledgement", a->acknowledgement}};
    for (const RuleVerdict& r : a->rules) stored["rules"].push_back({{"name", r.name}, {"reason", r.reason}});
    stored.dump();
  }
  return 0;
}
