// GitHub JSON → Trigger (src/sources/github/normalize.cpp, normalize_ci.cpp): a webhook
// payload's object or an item of a REST page. Any JSON, given to every normalizer, must become a
// Trigger, a skip or a counted kMalformed — never a crash. Mention detection and Thread keys take
// the text as well.
#include "fuzz_support.h"
#include "superagent/github.h"
#include "sources/github/normalize.h"

namespace {

void Check(const superagent::github::Normalized& n) {
  if (n.kind != superagent::github::Normalized::Kind::kTrigger) return;
  superagent::fuzz::StoreAndReload(n.trigger);
  for (const std::string& t : n.trigger.threads) superagent::github::DiscussionOf(t);
}

void NormalizeAll(const nlohmann::json& j) {
  using namespace superagent::github;
  static const NormalizeContext ctx{"octo-org/widgets", "superagent-bot"};
  for (auto on_pull : {std::optional<bool>(), std::optional<bool>(true), std::optional<bool>(false)}) {
    Check(NormalizeIssueComment(j, ctx, on_pull));
    Check(NormalizeIssue(j, ctx, on_pull));
  }
  Check(NormalizeReviewComment(j, ctx));
  Check(NormalizeReview(j, ctx));
  Check(NormalizeReview(j, ctx, 7));
  Check(NormalizeWorkflowRun(j, ctx, "main"));
  Check(NormalizeCheckRun(j, ctx, "main"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  using nlohmann::json;
  const std::string bytes = fuzz::Bytes(data, size);
  github::Mentions(bytes, "superagent-bot");
  github::Mentions(bytes, "dependabot[bot]");
  github::DiscussionOf(bytes);
  const json j = json::parse(bytes, nullptr, false);
  if (j.is_discarded()) return 0;
  NormalizeAll(j);
  if (j.is_array()) {
    for (const json& item : j) NormalizeAll(item);  // a REST page
  } else if (j.is_object()) {
    for (const auto& [key, value] : j.items()) NormalizeAll(value);  // a webhook payload's objects
  }
  return 0;
}
