// The outbound filter (include/superagent/secret_filter.h): every text the daemon publishes — a
// worker's report, a peer's error, a transcript — passes it last, so its promises are checked on
// any bytes: no known secret survives it, valid UTF-8 stays valid UTF-8 (it never splits a
// character), and neither text nor JSON makes it throw. A broken promise aborts (a finding).
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "superagent/secret_filter.h"
#include "superagent/text.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

// Known values as the daemon holds them: a token, a key with a prefix of another, a Chinese one.
const char* const kKnown[] = {"ghp_FUZZtoken0123456789abcdefABCDEF", "hook-secret-4711", "hook-secret-4711-longer",
                              "密码密码-panel-password"};

const superagent::SecretFilter& Filter() {
  static superagent::SecretFilter* f = [] {
    auto* filter = new superagent::SecretFilter();
    for (const char* v : kKnown) filter->Learn("fuzz", v);
    return filter;
  }();
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  const std::string s = fuzz::Bytes(data, size);
  const std::string out = Filter().Redact(s);
  for (const char* v : kKnown) Check(out.find(v) == std::string::npos);
  if (text::IsValid(s)) Check(text::IsValid(out));
  // A secret planted inside the fuzzer's text is always caught, whatever surrounds it.
  const std::string planted = s.substr(0, s.size() / 2) + kKnown[size % 4] + s.substr(s.size() / 2);
  Check(Filter().Redact(planted).find(kKnown[size % 4]) == std::string::npos);
  nlohmann::json j = {{"body", s}, {s, {s, 1, nullptr}}};
  Filter().RedactJson(&j);
  return 0;
}
