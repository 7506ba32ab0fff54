// The text module: UTF-8 decoding with Unicode's replacement practice, and every cut and count
// built on the same decoder, so a count, a cut and a repair always agree on what a "character" is.
#include "superagent/text.h"

#include <nlohmann/json.hpp>

namespace superagent::text {

namespace {

using nlohmann::json;

// One decoded unit: a code point, or an invalid subpart (which stands for one U+FFFD).
struct Unit {
  char32_t cp = 0;
  std::size_t len = 1;
  bool valid = true;
};

bool Between(unsigned char b, unsigned char lo, unsigned char hi) { return b >= lo && b <= hi; }

// The unit at s[i] (i < s.size()). Ranges from the Unicode Standard, table 3-7: they exclude
// overlong forms (C0, C1, E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and values past U+10FFFF
// (F4 90.., F5..FF). A bad byte after a good lead ends the subpart before it, so it is decoded
// again as the start of the next unit.
Unit Decode(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1, true};
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  char32_t cp = 0;
  if (Between(b0, 0xC2, 0xDF)) {
    need = 1;
    cp = b0 & 0x1F;
  } else if (Between(b0, 0xE0, 0xEF)) {
    need = 2;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (Between(b0, 0xF0, 0xF4)) {
    need = 3;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {0xFFFD, 1, false};
  }
  for (std::size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) return {0xFFFD, k, false};
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (!Between(b, k == 1 ? lo : 0x80, k == 1 ? hi : 0xBF)) return {0xFFFD, k, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, need + 1, true};
}

void Append(std::string* out, std::string_view s, std::size_t i, const Unit& u) {
  if (u.valid) out->append(s.substr(i, u.len));
  else out->append(kReplacement);
}

// Byte offset in `s` after its first `n` units.
std::size_t SkipUnits(std::string_view s, std::size_t n) {
  std::size_t i = 0;
  for (; i < s.size() && n > 0; --n) i += Decode(s, i).len;
  return i;
}

// Repair of s[from, to) (unit boundaries).
std::string RepairRange(std::string_view s, std::size_t from, std::size_t to) {
  std::string out;
  out.reserve(to - from);
  for (std::size_t i = from; i < to;) {
    Unit u = Decode(s, i);
    Append(&out, s, i, u);
    i += u.len;
  }
  return out;
}

bool IsWordChar(char32_t c) {
  return (c >= 0x1100 && c <= 0x11FF) ||    // Hangul jamo
         (c >= 0x3040 && c <= 0x30FF) ||    // hiragana, katakana
         (c >= 0x3130 && c <= 0x318F) ||    // Hangul compatibility jamo
         (c >= 0x31F0 && c <= 0x31FF) ||    // katakana phonetic extensions
         (c >= 0x3400 && c <= 0x4DBF) ||    // CJK extension A
         (c >= 0x4E00 && c <= 0x9FFF) ||    // CJK unified ideographs
         (c >= 0xAC00 && c <= 0xD7AF) ||    // Hangul syllables
         (c >= 0xF900 && c <= 0xFAFF) ||    // compatibility ideographs
         (c >= 0xFF66 && c <= 0xFF9F) ||    // half-width katakana
         (c >= 0x20000 && c <= 0x3FFFF);    // extensions B and later
}

bool IsSeparator(char32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 0x00A0 ||
         (c >= 0x2000 && c <= 0x200B) ||                               // spaces, zero-width space
         c == 0x2028 || c == 0x2029 || c == 0x3000 ||                 // line/paragraph/ideographic space
         (c >= 0x3001 && c <= 0x303F) ||                               // CJK punctuation
         (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||  // full-width punctuation
         (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65);
}

// The longest non-empty string value inside `j` (by code points), or null.
json* Longest(json* j, std::size_t* best_len) {
  json* best = nullptr;
  if (j->is_string()) {
    std::size_t n = CountCodePoints(j->get_ref<const std::string&>());
    if (n > *best_len) {
      *best_len = n;
      best = j;
    }
  } else if (j->is_structured()) {
    for (auto& child : *j)
      if (json* b = Longest(&child, best_len)) best = b;
  }
  return best;
}

// Code points of `s` as a JSON string, quotes and escapes included.
std::size_t DumpedLength(const std::string& s) { return CountCodePoints(Dump(json(s))); }

// The longest cut of `s` (keeping `keep`'s end) whose JSON string has at most `room` code points;
// "" when not even a few characters fit.
std::string CutToRoom(const std::string& s, std::size_t room, Keep keep) {
  if (room <= 2) return "";
  std::size_t lo = 0, hi = CountCodePoints(s);  // Cut(s, lo) fits; the answer is in [lo, hi]
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    if (DumpedLength(Cut(s, mid, keep)) <= room) lo = mid;
    else hi = mid - 1;
  }
  return Cut(s, lo, keep);
}

// Cuts the string `field` so that its JSON text is at least `over` code points shorter ("" when
// it cannot be).
void Shrink(json* field, std::size_t over, Keep keep) {
  const std::string& s = field->get_ref<const std::string&>();
  const std::size_t dumped = DumpedLength(s);
  *field = dumped > over ? CutToRoom(s, dumped - over, keep) : std::string();
}

std::string NotedMarker(std::size_t n, Keep keep) {
  const std::string note = "[\xE2\x80\xA6 " + std::to_string(n) + " characters cut \xE2\x80\xA6]";
  return keep == Keep::kHead ? "\n" + note : note + "\n";
}

}  // namespace

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

bool IsValid(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    Unit u = Decode(s, i);
    if (!u.valid) return false;
    i += u.len;
  }
  return true;
}

std::string Repair(std::string_view s) {
  if (IsValid(s)) return std::string(s);
  return RepairRange(s, 0, s.size());
}

std::size_t CountCodePoints(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++n) i += Decode(s, i).len;
  return n;
}

std::size_t CountWords(std::string_view s) {
  std::size_t words = 0;
  bool in_word = false;
  for (std::size_t i = 0; i < s.size();) {
    Unit u = Decode(s, i);
    i += u.len;
    if (IsSeparator(u.cp)) {
      in_word = false;
    } else if (IsWordChar(u.cp)) {
      ++words;
      in_word = false;
    } else if (!in_word) {
      ++words;
      in_word = true;
    }
  }
  return words;
}

std::string Cut(std::string_view s, std::size_t max, Keep keep, std::string_view marker) {
  const std::size_t total = CountCodePoints(s);
  if (total <= max) return Repair(s);
  std::size_t mark = CountCodePoints(marker);
  if (mark > max) {
    marker = "";
    mark = 0;
  }
  const std::size_t kept = max - mark;
  if (keep == Keep::kHead) return RepairRange(s, 0, SkipUnits(s, kept)) + Repair(marker);
  return Repair(marker) + RepairRange(s, SkipUnits(s, total - kept), s.size());
}

std::string CutNoted(std::string_view s, std::size_t max, Keep keep) {
  const std::size_t total = CountCodePoints(s);
  if (total <= max) return Repair(s);
  // N has at most as many digits as `total`, so this marker is at least as long as the final one.
  const std::size_t longest = CountCodePoints(NotedMarker(total, keep));
  if (longest > max) return Cut(s, max, keep, "");
  const std::size_t kept = max - longest;
  const std::string marker = NotedMarker(total - kept, keep);
  if (keep == Keep::kHead) return RepairRange(s, 0, SkipUnits(s, kept)) + marker;
  return marker + RepairRange(s, SkipUnits(s, total - kept), s.size());
}

std::string CutMiddle(std::string_view s, std::size_t max, bool* cut) {
  if (cut) *cut = false;
  const std::size_t total = CountCodePoints(s);
  if (total <= max) return Repair(s);
  if (cut) *cut = true;
  const std::size_t head = max * 3 / 4, tail = max / 4;
  return RepairRange(s, 0, SkipUnits(s, head)) + "\n[\xE2\x80\xA6 " + std::to_string(total - head - tail) +
         " characters cut here to bound the input \xE2\x80\xA6]\n" + RepairRange(s, SkipUnits(s, total - tail), s.size());
}

std::string TailLines(std::string_view s, std::size_t max_lines, std::size_t max) {
  // '\n' is never part of another unit, even an invalid one, so byte offsets of newlines are
  // unit boundaries.
  std::size_t end = s.size();
  while (end > 0 && s[end - 1] == '\n') --end;
  std::size_t start = end;
  for (std::size_t lines = 0; start > 0 && lines < max_lines; --start)
    if (s[start - 1] == '\n' && ++lines == max_lines) break;
  if (max_lines == 0) start = end;
  return Cut(s.substr(start, end - start), max, Keep::kTail);
}

std::string CutWords(std::string_view s, std::size_t max_words) {
  if (CountWords(s) <= max_words) return Repair(s);
  if (max_words == 0) return "";
  // Keep what comes before the unit that starts word number `max_words`; the ellipsis after it is
  // that word at most (it joins a run it touches, and is one word after CJK or a space).
  std::size_t words = 0, kept = 0;  // kept: the end of the last non-separator before that word
  bool in_word = false;
  for (std::size_t i = 0; i < s.size();) {
    Unit u = Decode(s, i);
    const bool separator = IsSeparator(u.cp), cjk = !separator && IsWordChar(u.cp);
    if (!separator && (cjk || !in_word) && ++words == max_words) break;
    in_word = !separator && !cjk;
    i += u.len;
    if (!separator) kept = i;
  }
  return RepairRange(s, 0, kept) + std::string(kEllipsis);
}

std::string FirstLine(std::string_view s, std::size_t max) { return Cut(s.substr(0, s.find('\n')), max); }

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    out += items[i];
  }
  return out;
}

std::string Trim(std::string_view s) {
  const std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1));
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

void RepairJson(json* j) {
  if (j->is_string()) {
    auto& v = j->get_ref<std::string&>();
    if (!IsValid(v)) v = Repair(v);
  } else if (j->is_array()) {
    for (auto& child : *j) RepairJson(&child);
  } else if (j->is_object()) {
    bool bad_key = false;
    for (auto it = j->begin(); it != j->end(); ++it) {
      bad_key = bad_key || !IsValid(it.key());
      RepairJson(&it.value());
    }
    if (bad_key) {
      json fixed = json::object();
      for (auto it = j->begin(); it != j->end(); ++it) fixed[Repair(it.key())] = std::move(it.value());
      *j = std::move(fixed);
    }
  }
}

std::string DumpWithin(const json& j_in, std::size_t max, Keep keep) {
  json j = j_in;
  RepairJson(&j);
  std::string out = Dump(j);
  const std::size_t first = CountCodePoints(out);
  for (std::size_t n = first; n > max; n = CountCodePoints(out)) {
    std::size_t len = 0;
    json* longest = Longest(&j, &len);
    if (longest == nullptr) {
      out = Dump(json{{"ok", false},
                      {"error", "the result has " + std::to_string(first) + " characters as JSON and cannot be cut to " +
                                    std::to_string(max)}});
      return CountCodePoints(out) <= max ? out : (max >= 2 ? "{}" : "");
    }
    Shrink(longest, n - max, keep);
    out = Dump(j);
  }
  return out;
}

bool FitField(json* j, const std::string& key, std::size_t max, Keep keep) {
  RepairJson(j);
  std::size_t n = CountCodePoints(Dump(*j));
  if (n <= max) return true;
  if (!j->is_object() || !j->contains(key) || !(*j)[key].is_string()) return false;
  Shrink(&(*j)[key], n - max, keep);
  return CountCodePoints(Dump(*j)) <= max;
}

}  // namespace superagent::text
