// The text module (include/superagent/text.h): every byte a process, a peer or a model writes
// passes through it before it is stored, sent or shown, so its promises are checked on any bytes:
// the result is valid UTF-8, within its limit in code points, a prefix (suffix) of the repaired
// input, and repair is idempotent. A broken promise aborts (a finding); nothing may throw.
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_support.h"
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
  const std::size_t max = data[0];
  const std::string s = fuzz::Bytes(data + 1, size - 1);

  const std::string repaired = text::Repair(s);
  Check(text::IsValid(repaired));
  Check(text::Repair(repaired) == repaired);
  if (text::IsValid(s)) Check(repaired == s);
  const std::size_t points = text::CountCodePoints(repaired);

  for (text::Keep keep : {text::Keep::kHead, text::Keep::kTail}) {
    const std::string cut = text::Cut(s, max, keep);
    Check(text::IsValid(cut));
    Check(text::CountCodePoints(cut) <= max);
    if (points <= max) Check(cut == repaired);
    const std::string noted = text::CutNoted(s, max, keep);
    Check(text::IsValid(noted) && text::CountCodePoints(noted) <= max);
  }
  const std::string tail = text::TailLines(s, 1 + max % 8, max);
  Check(text::IsValid(tail) && text::CountCodePoints(tail) <= max);
  const std::string words = text::CutWords(s, max);
  Check(text::IsValid(words) && text::CountWords(words) <= max);
  Check(text::IsValid(text::FirstLine(s, max)));
  Check(text::IsValid(text::CutMiddle(s, max)));

  // JSON: never throws, stays valid JSON within its budget.
  nlohmann::json j = {{"ok", true}, {"status", "done"}, {"text", s}, {"list", {s, s.substr(0, s.size() / 2)}}};
  const std::string dumped = text::Dump(j);
  Check(nlohmann::json::accept(dumped));
  const std::size_t budget = 64 + max * 4;
  const std::string within = text::DumpWithin(j, budget, text::Keep::kTail);
  Check(nlohmann::json::accept(within));
  Check(text::CountCodePoints(within) <= budget);
  text::RepairJson(&j);
  Check(nlohmann::json::accept(j.dump()));
  return 0;
}
