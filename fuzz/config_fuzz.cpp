// The daemon's config file (src/app/config_parse.cpp): YAML written by an operator. Any bytes yield a
// Config or problems naming the key — never a crash.
#include <vector>

#include "app/config.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  std::vector<Problem> problems;
  auto config = ParseConfig(fuzz::Bytes(data, size), "/etc/superagent/superagent.yaml", &problems);
  if (config.has_value() != problems.empty()) std::abort();  // the contract: one or the other
  return 0;
}
