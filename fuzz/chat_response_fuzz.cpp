// The model API's answer (src/llm/chat_client.cpp): a 200 body from an OpenAI-compatible server,
// which may be a proxy that lies. Any bytes must become a ChatResponse (text, tool calls, usage)
// or an InvalidArgument — never a crash.
#include "fuzz_support.h"
#include "superagent/llm.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  auto r = llm::ParseChatResponse(fuzz::Bytes(data, size));
  if (!r.ok()) {
    if (r.status().message().empty()) std::abort();
    return 0;
  }
  // The answer goes into the transcript and the next request as JSON.
  nlohmann::json stored = {{"id", r->id}, {"content", r->content}, {"finish_reason", r->finish_reason}};
  for (const llm::ToolCall& c : r->tool_calls)
    stored["tool_calls"].push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
  stored.dump();
  return 0;
}
