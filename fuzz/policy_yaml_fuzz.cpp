// policy.yaml (src/policy/policy_yaml.cpp): the team's file, edited by hand and hot-reloaded, so
// any bytes must yield a Policy or line-precise problems — never a crash. A Policy that parsed
// is stored as JSON (a version) and read back at start: that round trip must hold too. The one
// edit the daemon proposes (RuleModeEditDiff, issue 38) is made on these same bytes: it must
// never crash, and any diff it makes adds or changes exactly one line.
#include <string>
#include <vector>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  std::vector<Problem> problems;
  auto policy = ParsePolicy(fuzz::Bytes(data, size), "policy.yaml", &problems);
  if (policy.has_value() != problems.empty()) std::abort();  // the contract: one or the other
  if (policy && !PolicyFromJson(policy->ToJson()).ok()) std::abort();
  if (!policy) return 0;
  const std::string yaml = fuzz::Bytes(data, size);
  for (const Rule& r : policy->rules)
    for (Mode to : {Mode::kAuto, Mode::kObserve}) {
      const std::string diff = RuleModeEditDiff(yaml, "policy.yaml", r.name, to);
      if (diff.empty()) continue;
      int plus = 0;
      for (std::size_t at = 0; (at = diff.find("\n+", at)) != std::string::npos; ++at) ++plus;
      if (plus != 2) std::abort();  // "+++ b/policy.yaml" and the one line
    }
  return 0;
}
