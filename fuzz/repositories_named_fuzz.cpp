// The repositories a request names (github_threads::RepositoriesNamed, issue 37): a message's text
// decides which repositories a Ticket's Mandate may list, so on any bytes each name returned must
// be one GitHub would take, in its canonical (lower-case) spelling, once, written in the text, and
// no more of them than the limit. A broken promise aborts (a finding); nothing may throw.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "superagent/github_threads.h"
#include "superagent/text.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  if (size == 0) return 0;
  // The first byte picks the limit, the rest is the text.
  const std::size_t limit = data[0] % 24;
  const std::string text = fuzz::Bytes(data + 1, size - 1);
  const std::vector<std::string> named = github_threads::RepositoriesNamed(text, limit);
  Check(named.size() <= limit);
  const std::string lower = text::AsciiLower(text);
  for (std::size_t i = 0; i < named.size(); ++i) {
    Check(github_threads::IsRepositoryName(named[i]));
    Check(named[i] == github_threads::Canonical(named[i]));
    Check(lower.find(named[i]) != std::string::npos);
    Check(std::find(named.begin(), named.begin() + static_cast<std::ptrdiff_t>(i), named[i]) ==
          named.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return 0;
}
