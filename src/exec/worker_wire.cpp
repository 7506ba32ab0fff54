// The worker endpoints' JSON (worker_pool.h, "The wire"): one parser per message, each refusing
// what the pool could not take, so the endpoints and `superagent worker` read them one way.
#include <algorithm>

#include "superagent/assign_or_return.h"
#include "superagent/digest.h"
#include "superagent/json_read.h"
#include "superagent/worker_pool.h"

namespace superagent::exec {

using nlohmann::json;

namespace {

bool NameOf(const std::string& s, std::size_t max, bool upper_and_dots) {
  if (s.empty() || s.size() > max) return false;
  for (unsigned char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                    (upper_and_dots && ((c >= 'A' && c <= 'Z') || c == '.' || c == '_'));
    if (!ok) return false;
  }
  return true;
}

bool IsLeaseId(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

Result<std::string> WorkerName(const json& j) {
  ASSIGN_OR_RETURN(std::string worker, json_read::String(j, "worker"));
  if (!NameOf(worker, 64, true))
    return Status::InvalidArgument("field \"worker\": 1 to 64 of A-Z, a-z, 0-9, '.', '_', '-'");
  return worker;
}

}  // namespace

Result<Announcement> ParseAnnouncement(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument(std::string("an announcement: expected a JSON object, got ") + json_read::TypeName(j));
  Announcement a;
  ASSIGN_OR_RETURN(a.worker, WorkerName(j));
  ASSIGN_OR_RETURN(const json* executors, json_read::Array(j, "executors"));
  if (executors->empty() || executors->size() > 8)
    return Status::InvalidArgument("field \"executors\": 1 to 8 names");
  for (std::size_t i = 0; i < executors->size(); ++i) {
    const json& e = (*executors)[i];
    const std::string field = "field \"executors[" + std::to_string(i) + "]\"";
    if (!e.is_string() || !NameOf(e.get<std::string>(), 32, false))
      return Status::InvalidArgument(field + ": 1 to 32 of a-z, 0-9, '-'");
    if (std::find(a.executors.begin(), a.executors.end(), e.get<std::string>()) != a.executors.end())
      return Status::InvalidArgument(field + ": named twice");
    a.executors.push_back(e.get<std::string>());
  }
  ASSIGN_OR_RETURN(std::int64_t slots, json_read::Int(j, "slots"));
  if (slots < 1 || slots > 64) return Status::InvalidArgument("field \"slots\": 1 to 64");
  a.slots = static_cast<int>(slots);
  return a;
}

json AnnouncementToJson(const Announcement& a) {
  return json{{"worker", a.worker}, {"executors", a.executors}, {"slots", a.slots}};
}

json LeaseToJson(const Lease& lease) {
  return json{{"lease", lease.id},
              {"offer", lease.offer},
              {"attempt", lease.attempt},
              {"turn",
               {{"assignment", lease.turn.assignment},
                {"ticket", lease.turn.ticket},
                {"executor", lease.turn.executor},
                {"task", lease.turn.task},
                {"code", Base64(lease.turn.code)}}}};
}

Result<Lease> ParseLease(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument(std::string("a lease: expected a JSON object, got ") + json_read::TypeName(j));
  Lease lease;
  ASSIGN_OR_RETURN(lease.id, json_read::String(j, "lease"));
  if (!IsLeaseId(lease.id)) return Status::InvalidArgument("field \"lease\": expected 64 hex digits");
  ASSIGN_OR_RETURN(lease.offer, json_read::Int(j, "offer"));
  ASSIGN_OR_RETURN(std::int64_t attempt, json_read::Int(j, "attempt"));
  ASSIGN_OR_RETURN(lease.turn.assignment, json_read::Int(j, "turn.assignment"));
  ASSIGN_OR_RETURN(lease.turn.ticket, json_read::Int(j, "turn.ticket"));
  if (lease.offer < 1 || attempt < 1 || attempt > 1'000'000 || lease.turn.assignment < 1 || lease.turn.ticket < 1)
    return Status::InvalidArgument("a lease's offer, attempt, assignment and ticket are positive");
  lease.attempt = static_cast<int>(attempt);
  ASSIGN_OR_RETURN(lease.turn.executor, json_read::String(j, "turn.executor"));
  if (!NameOf(lease.turn.executor, 32, false)) return Status::InvalidArgument("field \"turn.executor\": 1 to 32 of a-z, 0-9, '-'");
  ASSIGN_OR_RETURN(const json* task, json_read::Object(j, "turn.task"));
  lease.turn.task = *task;
  ASSIGN_OR_RETURN(std::string code, json_read::String(j, "turn.code"));
  std::optional<std::string> bytes = Base64Decode(code);
  if (!bytes) return Status::InvalidArgument("field \"turn.code\": not base64");
  lease.turn.code = std::move(*bytes);
  return lease;
}

Result<LeaseRef> ParseLeaseRef(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument(std::string("expected a JSON object, got ") + json_read::TypeName(j));
  LeaseRef ref;
  ASSIGN_OR_RETURN(ref.worker, WorkerName(j));
  ASSIGN_OR_RETURN(ref.lease, json_read::String(j, "lease"));
  if (!IsLeaseId(ref.lease)) return Status::InvalidArgument("field \"lease\": expected 64 hex digits");
  return ref;
}

const char* LeaseStateName(LeaseState state) {
  switch (state) {
    case LeaseState::kHeld: return "held";
    case LeaseState::kWithdrawn: return "withdrawn";
    case LeaseState::kLost: return "lost";
  }
  return "lost";
}

Result<std::pair<LeaseRef, TurnReturn>> ParseTurnReturn(const json& j, std::uint64_t max_bundle_bytes) {
  ASSIGN_OR_RETURN(LeaseRef ref, ParseLeaseRef(j));
  TurnReturn r;
  if (const json* report = json_read::Find(j, "report"); report != nullptr && !report->is_null()) {
    if (!report->is_object())
      return Status::InvalidArgument(std::string("field \"report\": expected object or null, got ") + json_read::TypeName(*report));
    r.report = *report;
  }
  ASSIGN_OR_RETURN(std::string bundle, json_read::OptString(j, "bundle"));
  // Checked before decoding: base64 is 4 characters for every 3 bytes.
  if (bundle.size() / 4 * 3 > max_bundle_bytes + 3)
    return Status::InvalidArgument("field \"bundle\": over " + std::to_string(max_bundle_bytes) + " bytes");
  std::optional<std::string> bytes = Base64Decode(bundle);
  if (!bytes) return Status::InvalidArgument("field \"bundle\": not base64");
  if (bytes->size() > max_bundle_bytes)
    return Status::InvalidArgument("field \"bundle\": over " + std::to_string(max_bundle_bytes) + " bytes");
  r.bundle = std::move(*bytes);
  return std::make_pair(std::move(ref), std::move(r));
}

Result<Join> ParseJoin(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument(std::string("a join: expected a JSON object, got ") + json_read::TypeName(j));
  Join join;
  ASSIGN_OR_RETURN(join.worker, WorkerName(j));
  ASSIGN_OR_RETURN(join.join_token, json_read::String(j, "join_token"));
  if (join.join_token.empty() || join.join_token.size() > 512)
    return Status::InvalidArgument("field \"join_token\": 1 to 512 characters");
  return join;
}

Result<std::pair<LeaseRef, std::vector<TurnEvent>>> ParseProgress(const json& j) {
  ASSIGN_OR_RETURN(LeaseRef ref, ParseLeaseRef(j));
  ASSIGN_OR_RETURN(const json* events, json_read::Array(j, "events"));
  if (events->size() > kMaxEventsPerProgress)
    return Status::InvalidArgument("field \"events\": at most " + std::to_string(kMaxEventsPerProgress) + " per call");
  std::vector<TurnEvent> out;
  for (std::size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    const std::string field = "field \"events[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::InvalidArgument(field + "\": expected an object");
    ASSIGN_OR_RETURN(std::string kind, json_read::String(e, "kind"));
    if (kind != "assistant" && kind != "tool_result" && kind != "command")
      return Status::InvalidArgument(field + ".kind\": one of assistant, tool_result, command");
    ASSIGN_OR_RETURN(const json* body, json_read::Object(e, "body"));
    if (body->dump(-1, ' ', false, json::error_handler_t::replace).size() > kMaxEventBytes)
      return Status::InvalidArgument(field + ".body\": over " + std::to_string(kMaxEventBytes) + " bytes");
    out.emplace_back(std::move(kind), *body);
  }
  return std::make_pair(std::move(ref), std::move(out));
}

json ProgressToJson(const LeaseRef& ref, const std::vector<TurnEvent>& events) {
  json list = json::array();
  for (const auto& [kind, body] : events) list.push_back({{"kind", kind}, {"body", body}});
  return json{{"worker", ref.worker}, {"lease", ref.lease}, {"events", list}};
}

json TurnReturnToJson(const LeaseRef& ref, const TurnReturn& r) {
  return json{{"worker", ref.worker}, {"lease", ref.lease}, {"report", r.report}, {"bundle", Base64(r.bundle)}};
}

}  // namespace superagent::exec
