// policy.yaml (src/policy/policy_yaml.cpp): the team's file, edited by hand and hot-reloaded, so
// any bytes must yield a Policy or line-precise problems — never a crash. A Policy that parsed
// is stored as JSON (a version) and read back at start: that round trip must hold too.
#include <vector>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  std::vector<Problem> problems;
  auto policy = ParsePolicy(fuzz::Bytes(data, size), "policy.yaml", &problems);
  if (policy.has_value() != problems.empty()) std::abort();  // the contract: one or the other
  if (policy && !PolicyFromJson(policy->ToJson()).ok()) std::abort();
  return 0;
}
