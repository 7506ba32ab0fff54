// Feishu message JSON → Trigger (src/sources/feishu/normalize.cpp): the `event` of a realtime
// envelope and the items of a history page, both written by Feishu or by whoever reached the
// endpoint. Any JSON must become a Trigger, a skip or a counted kMalformed — never a crash.
#include "fuzz_support.h"
#include "superagent/feishu.h"
#include "sources/feishu/normalize.h"

namespace {

void Check(const superagent::feishu::Normalized& n) {
  if (n.kind == superagent::feishu::Normalized::Kind::kTrigger) superagent::fuzz::StoreAndReload(n.trigger);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  using nlohmann::json;
  const json j = json::parse(fuzz::Bytes(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  static const feishu::NormalizeContext ctx{"ou_bot", "cli_app"};
  // An envelope's event, the envelope itself, a page's items: each shape the Source feeds it.
  const json& event = j.is_object() && j.contains("event") ? j["event"] : j;
  Check(feishu::NormalizeEvent(event, ctx));
  Check(feishu::NormalizeEvent(j, ctx));
  const json& items = j.is_object() && j.contains("data") && j["data"].is_object() && j["data"].contains("items")
                          ? j["data"]["items"]
                          : j;
  if (items.is_array()) {
    for (const json& item : items) {
      Check(feishu::NormalizeHistoryItem(item, ctx, false));
      Check(feishu::NormalizeHistoryItem(item, ctx, true));
    }
  } else {
    Check(feishu::NormalizeHistoryItem(j, ctx, false));
  }
  // A message's content is a JSON string inside the JSON: rendered on its own too.
  static const std::map<std::string, std::string> mentions = {{"@_user_1", "Agent"}, {"@_user_2", "张三"}};
  for (const char* type : {"text", "post", "image", "interactive"})
    if (auto text = feishu::RenderContent(type, j, mentions)) nlohmann::json(*text).dump();  // stored as JSON
  return 0;
}
