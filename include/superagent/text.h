// Text: the one place that decides how text from outside is repaired, counted and cut.
// Every length limit on text in this daemon is in code points (what a person calls characters),
// never bytes, and no cut ever splits a UTF-8 sequence. Text from processes and peers may be
// invalid UTF-8 (a binary file, a GBK terminal, a cut pipe); it is repaired before it is stored,
// sent or shown, because nlohmann::json refuses to dump invalid UTF-8 (type_error.316).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace superagent::text {

// U+2026, the marker Cut puts where it cut (one code point).
inline constexpr std::string_view kEllipsis = "\xE2\x80\xA6";
// U+FFFD, what Repair puts in place of each invalid sequence.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates, values past U+10FFFF or
// truncated sequences).
bool IsValid(std::string_view s);

// `s` as well-formed UTF-8: each maximal invalid subpart (Unicode's "best practice": a bad lead
// byte, or a lead byte with the valid continuation bytes that follow it) becomes one U+FFFD.
// Valid input comes back unchanged; Repair(Repair(s)) == Repair(s).
std::string Repair(std::string_view s);

// Code points in `s`, each invalid subpart counted as the one U+FFFD Repair makes of it.
std::size_t CountCodePoints(std::string_view s);

// Words as people count them (SPEC §1 "at most 100 words"): every CJK ideograph, Japanese kana
// and Hangul syllable is one word, as word processors count East Asian text; other text counts
// its runs between spaces (CJK punctuation and ideographic spaces separate too).
std::size_t CountWords(std::string_view s);

// Which end of a text a cut keeps.
enum class Keep { kHead, kTail };

// `s` repaired and, when it has more than `max` code points, cut to exactly `max`: the first
// (kHead) or last (kTail) code points with `marker` on the side that was cut (after the head,
// before the tail). The marker counts toward `max`; when it alone does not fit, the cut has no
// marker. The kept part is always a prefix (suffix) of Repair(s).
std::string Cut(std::string_view s, std::size_t max, Keep keep = Keep::kHead,
                std::string_view marker = kEllipsis);

// Cut whose marker says how much was left out: "\n[… N characters cut …]" after a head,
// "[… N characters cut …]\n" before a tail (N in code points). Also at most `max` code points.
std::string CutNoted(std::string_view s, std::size_t max, Keep keep);

// Cuts the middle out (the start of a message holds its address, the end often the ask): about
// three quarters of `max` from the start, a quarter from the end, and "[… N characters cut here
// to bound the input …]" between; repaired. Sets *cut when it shortened. The result may exceed
// `max` by the marker's length.
std::string CutMiddle(std::string_view s, std::size_t max, bool* cut = nullptr);

// The last `max_lines` non-empty-trailing lines of `s`, then at most `max` code points of them
// (the newest kept, "…" in front when cut). For error reports and command tails.
std::string TailLines(std::string_view s, std::size_t max_lines, std::size_t max);

// `s` repaired and, when it has more than `max_words` words (CountWords), its first words with
// "…" after them, so that CountWords of the result is at most `max_words` (0: "").
std::string CutWords(std::string_view s, std::size_t max_words);

// The first line of `s`, at most `max` code points ("…" at the end when cut).
std::string FirstLine(std::string_view s, std::size_t max);

// `s` without leading and trailing ASCII whitespace (space, tab, CR, LF).
std::string Trim(std::string_view s);

// `items` with `separator` between each two ("" for none).
std::string Join(const std::vector<std::string>& items, std::string_view separator);

// `s` with ASCII letters lowered and every other byte (UTF-8 included) unchanged: for names that
// compare without case by protocol — HTTP header names, GitHub logins and repositories.
std::string AsciiLower(std::string_view s);

// Repairs every string (values and keys) inside `j` in place.
void RepairJson(nlohmann::json* j);

// The JSON text of `j` (compact, UTF-8); invalid UTF-8 inside becomes U+FFFD. Never throws,
// unlike json::dump().
std::string Dump(const nlohmann::json& j);

// The JSON text of `j` (compact, UTF-8) in at most `max` code points, still valid JSON with every
// field: while it is too long, its longest string value is cut (keeping `keep`'s end, "…" on the
// cut side). Invalid UTF-8 inside is repaired. Only when it cannot fit with every string cut does
// it become {"ok":false,"error":"<why>"}. Never throws.
std::string DumpWithin(const nlohmann::json& j, std::size_t max, Keep keep = Keep::kHead);

// Cuts the string `(*j)[key]` (keeping `keep`'s end) so that j's JSON text has at most `max` code
// points. False, with the field emptied, when even that does not fit; true when nothing needed
// cutting or the cut fits. A missing or non-string field is left alone (false when j is too long).
bool FitField(nlohmann::json* j, const std::string& key, std::size_t max, Keep keep);

}  // namespace superagent::text
