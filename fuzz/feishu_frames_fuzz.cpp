// The Feishu long connection's frames (src/sources/feishu/frames.cpp): protobuf bytes off a
// WebSocket. Any bytes must decode to a Frame or an InvalidArgument; a decoded Frame must encode
// and decode to itself; split events are reassembled by a FragmentBuffer whose headers (sum, seq,
// message_id) are the peer's word — never a crash, never unbounded memory.
#include "fuzz_support.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  static feishu::FragmentBuffer fragments(10'000);
  static TimeMs now = 0;
  auto frame = feishu::DecodeFrame(fuzz::Bytes(data, size));
  if (!frame.ok()) return 0;
  auto again = feishu::DecodeFrame(feishu::EncodeFrame(*frame));
  if (!again.ok() || again->seq_id != frame->seq_id || again->headers != frame->headers ||
      again->payload != frame->payload)
    std::abort();
  bool invalid = false;
  now += 1'000;  // groups expire as the run goes on, as they do on a live connection
  fragments.Add(*frame, now, &invalid);
  return 0;
}
