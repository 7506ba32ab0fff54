// Long-connection frames (pbbp2.Frame, src/sources/feishu/pbbp2.proto, in protobuf's wire format)
// and the reassembly of split events. The codec is written out here rather than generated: one
// message of nine fields did not need libprotobuf (and its half a megabyte in every daemon's
// memory). The bytes are the peer's: every length is checked against what is left.
#include "superagent/feishu.h"
#include "sources/feishu/source.h"

namespace superagent::feishu {

std::string WsFrame::Header(const std::string& key) const {
  for (const auto& [k, v] : headers)
    if (k == key) return v;
  return "";
}

namespace {

// Wire types (protobuf encoding): varint, 64-bit, length-delimited, group start and end, 32-bit.
constexpr int kVarint = 0, kFixed64 = 1, kBytes = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5;

void PutVarint(std::string* out, std::uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutTag(std::string* out, int field, int wire) { PutVarint(out, static_cast<std::uint64_t>(field) << 3 | wire); }

void PutBytes(std::string* out, int field, const std::string& bytes) {
  PutTag(out, field, kBytes);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

// Reads protobuf fields off a string; every read fails (false) rather than run past the end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}
  bool done() const { return rest_.empty(); }

  bool Varint(std::uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (rest_.empty()) return false;
      const auto byte = static_cast<unsigned char>(rest_.front());
      rest_.remove_prefix(1);
      // The tenth byte's bits above the 64th are dropped, as protobuf reads them.
      *v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  // A tag is a varint of at most five bytes read as 32 bits (the bits above dropped), as
  // protobuf reads it; field 0 does not exist.
  bool Tag(int* field, int* wire) {
    std::uint64_t tag = 0;
    const std::size_t before = rest_.size();
    if (!Varint(&tag) || before - rest_.size() > 5) return false;
    const auto tag32 = static_cast<std::uint32_t>(tag);
    if (tag32 >> 3 == 0) return false;
    *field = static_cast<int>(tag32 >> 3);
    *wire = static_cast<int>(tag32 & 7);
    return true;
  }
  bool Bytes(std::string_view* out) {
    std::uint64_t n = 0;
    if (!Varint(&n) || n > rest_.size()) return false;
    *out = rest_.substr(0, static_cast<std::size_t>(n));
    rest_.remove_prefix(static_cast<std::size_t>(n));
    return true;
  }
  // A field this codec does not keep, skipped by its wire type: a (deprecated) group up to its
  // own end tag, nested at most 100 deep as protobuf allows; an end tag without its start fails.
  bool Skip(int field, int wire, int depth = 0) {
    std::uint64_t ignored = 0;
    std::string_view bytes;
    switch (wire) {
      case kVarint: return Varint(&ignored);
      case kBytes: return Bytes(&bytes);
      case kFixed64: return Fixed(8);
      case kFixed32: return Fixed(4);
      case kStartGroup:
        if (depth >= 100) return false;
        for (;;) {
          int inner = 0, inner_wire = 0;
          if (!Tag(&inner, &inner_wire)) return false;
          if (inner_wire == kEndGroup) return inner == field;
          if (!Skip(inner, inner_wire, depth + 1)) return false;
        }
      default: return false;
    }
  }

 private:
  bool Fixed(std::size_t n) {
    if (rest_.size() < n) return false;
    rest_.remove_prefix(n);
    return true;
  }
  std::string_view rest_;
};

// pbbp2.Header {required string key = 1; required string value = 2;}
bool ReadHeader(std::string_view bytes, std::pair<std::string, std::string>* out) {
  Reader r(bytes);
  bool key = false, value = false;
  while (!r.done()) {
    int field = 0, wire = 0;
    if (!r.Tag(&field, &wire)) return false;
    std::string_view s;
    if ((field == 1 || field == 2) && wire == kBytes) {
      if (!r.Bytes(&s)) return false;
      (field == 1 ? out->first : out->second) = std::string(s);
      (field == 1 ? key : value) = true;
    } else if (!r.Skip(field, wire)) {
      return false;
    }
  }
  return key && value;
}

}  // namespace

std::string EncodeFrame(const WsFrame& f) {
  std::string out;
  PutTag(&out, 1, kVarint);
  PutVarint(&out, f.seq_id);
  PutTag(&out, 2, kVarint);
  PutVarint(&out, f.log_id);
  // int32 as protobuf writes it: a negative value sign-extended to ten bytes.
  PutTag(&out, 3, kVarint);
  PutVarint(&out, static_cast<std::uint64_t>(static_cast<std::int64_t>(f.service)));
  PutTag(&out, 4, kVarint);
  PutVarint(&out, static_cast<std::uint64_t>(static_cast<std::int64_t>(f.method)));
  for (const auto& [k, v] : f.headers) {
    std::string header;
    PutBytes(&header, 1, k);
    PutBytes(&header, 2, v);
    PutBytes(&out, 5, header);
  }
  if (f.payload) PutBytes(&out, 8, *f.payload);
  return out;
}

Result<WsFrame> DecodeFrame(const std::string& bytes) {
  // As libprotobuf parses a proto2 message: fields in any order, the last of a repeated singular
  // field wins, a known field of another wire type and any unknown field are skipped; it fails
  // when a required field (SeqID, LogID, service, method, a header's key or value) is missing,
  // as the SDK's decoder does.
  const Status bad = Status::InvalidArgument("not a pbbp2.Frame");
  WsFrame f;
  bool seq = false, log = false, service = false, method = false;
  Reader r(bytes);
  while (!r.done()) {
    int field = 0, wire = 0;
    if (!r.Tag(&field, &wire)) return bad;
    if (field >= 1 && field <= 4 && wire == kVarint) {
      std::uint64_t v = 0;
      if (!r.Varint(&v)) return bad;
      switch (field) {
        case 1: f.seq_id = v, seq = true; break;
        case 2: f.log_id = v, log = true; break;
        // int32 keeps the low 32 bits, as protobuf reads it.
        case 3: f.service = static_cast<std::int32_t>(static_cast<std::uint32_t>(v)), service = true; break;
        default: f.method = static_cast<std::int32_t>(static_cast<std::uint32_t>(v)), method = true; break;
      }
    } else if ((field == 5 || field == 8) && wire == kBytes) {
      std::string_view s;
      if (!r.Bytes(&s)) return bad;
      if (field == 8) {
        f.payload = std::string(s);
      } else {
        std::pair<std::string, std::string> header;
        if (!ReadHeader(s, &header)) return bad;
        f.headers.push_back(std::move(header));
      }
    } else if (!r.Skip(field, wire)) {
      return bad;
    }
  }
  if (!seq || !log || !service || !method) return bad;
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
