// The worker endpoints' JSON (include/superagent/worker_pool.h, "The wire": an announcement, a
// lease, a heartbeat, a return, a join, streamed events): any bytes, as a
// body a worker (or anyone reaching the endpoint) sends. No parser throws; what one accepts keeps
// its promises (names of their alphabet and length, a 64-hex-digit lease, a bundle within the
// limit) and survives the trip back to JSON and through the parser again unchanged.
#include <string>

#include "fuzz_support.h"
#include "superagent/json_read.h"
#include "superagent/worker_pool.h"

namespace {

using namespace superagent;
using namespace superagent::exec;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = json_read::Parse(fuzz::Bytes(data, size));
  if (!j.ok()) return 0;
  if (auto a = ParseAnnouncement(*j); a.ok()) {
    Check(!a->worker.empty() && a->worker.size() <= 64);
    Check(!a->executors.empty() && a->executors.size() <= 8);
    Check(a->slots >= 1 && a->slots <= 64);
    auto again = ParseAnnouncement(AnnouncementToJson(*a));
    Check(again.ok() && again->worker == a->worker && again->executors == a->executors && again->slots == a->slots);
  }
  if (auto lease = ParseLease(*j); lease.ok()) {
    Check(lease->id.size() == 64 && lease->turn.ticket > 0 && lease->turn.task.is_object());
    auto again = ParseLease(LeaseToJson(*lease));
    Check(again.ok() && again->id == lease->id && again->turn.code == lease->turn.code &&
          again->turn.task == lease->turn.task);
  }
  if (auto ref = ParseLeaseRef(*j); ref.ok()) Check(ref->lease.size() == 64 && !ref->worker.empty());
  if (auto r = ParseTurnReturn(*j, 4096); r.ok()) {
    Check(r->second.bundle.size() <= 4096);
    Check(r->second.report.is_null() || r->second.report.is_object());
    auto again = ParseTurnReturn(TurnReturnToJson(r->first, r->second), 4096);
    Check(again.ok() && again->second.bundle == r->second.bundle && again->second.report == r->second.report);
  }
  if (auto join = ParseJoin(*j); join.ok())
    Check(!join->worker.empty() && join->worker.size() <= 64 && !join->join_token.empty() && join->join_token.size() <= 512);
  if (auto p = ParseProgress(*j); p.ok()) {
    Check(p->second.size() <= kMaxEventsPerProgress);
    for (const auto& [kind, body] : p->second)
      Check((kind == "assistant" || kind == "tool_result" || kind == "command") && body.is_object());
    auto again = ParseProgress(ProgressToJson(p->first, p->second));
    Check(again.ok() && again->second == p->second);
  }
  return 0;
}
