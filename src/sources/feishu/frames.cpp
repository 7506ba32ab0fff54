// Long-connection frames (pbbp2.Frame over libprotobuf) and the reassembly of split events.
#include "pbbp2.pb.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"

namespace superagent::feishu {

std::string WsFrame::Header(const std::string& key) const {
  for (const auto& [k, v] : headers)
    if (k == key) return v;
  return "";
}

std::string EncodeFrame(const WsFrame& f) {
  pbbp2::Frame pb;
  pb.set_seqid(f.seq_id);
  pb.set_logid(f.log_id);
  pb.set_service(f.service);
  pb.set_method(f.method);
  for (const auto& [k, v] : f.headers) {
    pbbp2::Header* h = pb.add_headers();
    h->set_key(k);
    h->set_value(v);
  }
  if (f.payload) pb.set_payload(*f.payload);
  return pb.SerializeAsString();
}

Result<WsFrame> DecodeFrame(const std::string& bytes) {
  pbbp2::Frame pb;
  // ParseFromString also fails when a required field (SeqID, LogID, service, method, a header's
  // key or value) is missing, as the SDK's decoder does.
  if (!pb.ParseFromString(bytes)) return Status::InvalidArgument("not a pbbp2.Frame");
  WsFrame f;
  f.seq_id = pb.seqid();
  f.log_id = pb.logid();
  f.service = pb.service();
  f.method = pb.method();
  for (const auto& h : pb.headers()) f.headers.emplace_back(h.key(), h.value());
  if (pb.has_payload()) f.payload = pb.payload();
  return f;
}

namespace {

bool ParseIndex(const std::string& s, int* out) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoi(s);
  return true;
}

}  // namespace

std::optional<std::string> FragmentBuffer::Add(const WsFrame& frame, TimeMs now, bool* invalid) {
  if (invalid) *invalid = false;
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (now - it->second.first_at > ttl_ms_) it = groups_.erase(it);
    else ++it;
  }
  const std::string sum_s = frame.Header("sum"), seq_s = frame.Header("seq");
  int sum = 1, seq = 0;
  if ((!sum_s.empty() && !ParseIndex(sum_s, &sum)) || (!seq_s.empty() && !ParseIndex(seq_s, &seq)) || sum < 1 ||
      seq >= sum) {
    if (invalid) *invalid = true;
    return std::nullopt;
  }
  const std::string payload = frame.payload.value_or("");
  if (sum == 1) return payload;
  const std::string id = frame.Header("message_id");
  Group& g = groups_[id];
  if (g.parts.empty()) {
    g.parts.resize(static_cast<std::size_t>(sum));
    g.first_at = now;
  } else if (g.parts.size() != static_cast<std::size_t>(sum)) {
    groups_.erase(id);
    if (invalid) *invalid = true;
    return std::nullopt;
  }
  g.parts[static_cast<std::size_t>(seq)] = payload;
  std::string whole;
  for (const auto& p : g.parts) {
    if (!p) return std::nullopt;
    whole += *p;
  }
  groups_.erase(id);
  return whole;
}

}  // namespace superagent::feishu
