// The text module: repair, counts and cuts of text from people, processes and peers. Property
// tests draw thousands of strings (fixed seed) from Chinese, Japanese, emoji with ZWJ sequences,
// combining marks and random invalid bytes; nlohmann::json is the oracle of validity, since its
// dump() is what threw type_error.316 on invalid UTF-8 and took the daemon down.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "superagent/text.h"

namespace superagent {
namespace {

using nlohmann::json;
using text::Keep;

// What the store and the panel do with a string: true when json can dump it.
bool Dumps(const std::string& s) {
  try {
    (void)json(s).dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool EndsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

const std::string kE = std::string(text::kEllipsis);
const std::string kR = std::string(text::kReplacement);

// Fragments a random string is made of: every kind of text a team or a tool produces.
const std::vector<std::string>& Fragments() {
  static const std::vector<std::string> f = {
      "a", "fix ", "the", " ", "\n", "\t", "\r\n", "README.md", "\"quoted\"", "\\", "{", "}",
      "修复", "错别字", "。", "，", "我来", "中文", "　",                      // Chinese, CJK punctuation
      "ひらがな", "カタカナ", "ｶﾀｶﾅ", "日本語",                              // Japanese
      "안녕하세요", "한국어",                                                // Hangul
      "😀", "👨‍👩‍👧‍👦", "🏳️‍🌈", "👍🏽", "🇨🇳",                               // emoji, ZWJ, modifiers, flags
      "e\xCC\x81", "n\xCC\x83", "\xCC\x88", "\xE0\xA4\xA8\xE0\xA4\xBF",       // combining marks
      "\xF0\xA0\x80\x80",                                                     // U+20000 (extension B)
      "\x80", "\xBF", "\xC0\xAF", "\xC1\x81", "\xE0\x80\xAF", "\xED\xA0\x80", "\xED\xBF\xBF",  // invalid
      "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFE", "\xFF", "\xE4\xB8", "\xF0\x9F\x98", "\xE2\x82",
      std::string("\0", 1),
  };
  return f;
}

std::string RandomText(std::mt19937& rng) {
  std::uniform_int_distribution<int> parts(0, 40), pick(0, static_cast<int>(Fragments().size()) - 1), byte(0, 255),
      coin(0, 9);
  std::string s;
  for (int n = parts(rng); n > 0; --n) {
    if (coin(rng) == 0) s.push_back(static_cast<char>(byte(rng)));  // any byte at all
    else s += Fragments()[static_cast<std::size_t>(pick(rng))];
  }
  return s;
}

TEST(TextTest, RepairFollowsUnicodesReplacementPractice) {
  // Each maximal invalid subpart is one U+FFFD (the same as Python's and browsers' decoders).
  EXPECT_EQ(text::Repair("\xC0\xAF"), kR + kR);                 // overlong '/'
  EXPECT_EQ(text::Repair("\xE0\x80\xAF"), kR + kR + kR);        // overlong, 3 bytes
  EXPECT_EQ(text::Repair("\xED\xA0\x80"), kR + kR + kR);        // a surrogate
  EXPECT_EQ(text::Repair("\xF4\x90\x80\x80"), kR + kR + kR + kR);  // past U+10FFFF
  EXPECT_EQ(text::Repair("\xF5\x80"), kR + kR);
  EXPECT_EQ(text::Repair("\xE4\xB8"), kR);                      // 中 cut after two bytes
  EXPECT_EQ(text::Repair("\xE4\xB8" "a"), kR + "a");
  EXPECT_EQ(text::Repair("\xF0\x9F\x98"), kR);                  // 😀 cut after three bytes
  EXPECT_EQ(text::Repair("a\x80\x80" "b"), "a" + kR + kR + "b");
  EXPECT_EQ(text::Repair("\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41"), kR + kR + kR + kR + "A");  // Unicode table 3-8
  EXPECT_EQ(text::Repair(""), "");
  const std::string good = "中文 😀 👨‍👩‍👧 e\xCC\x81 \xF4\x8F\xBF\xBF \xEF\xBF\xBF";  // incl. U+10FFFF, U+FFFF
  EXPECT_TRUE(text::IsValid(good));
  EXPECT_EQ(text::Repair(good), good);
  EXPECT_FALSE(text::IsValid("\xE4\xB8"));
  EXPECT_EQ(text::CountCodePoints("\xE0\x80\xAF" "中"), 4u);
}

TEST(TextTest, RepairMakesEveryStringDumpableIdempotentlyAndKeepsValidTextUnchanged) {
  std::mt19937 rng(18);
  int invalid_seen = 0;
  for (int i = 0; i < 5'000; ++i) {
    const std::string s = RandomText(rng);
    const std::string r = text::Repair(s);
    ASSERT_TRUE(Dumps(r)) << "case " << i;
    ASSERT_TRUE(text::IsValid(r));
    ASSERT_EQ(text::Repair(r), r);
    ASSERT_EQ(text::IsValid(s), Dumps(s)) << "IsValid disagrees with nlohmann on case " << i;
    if (Dumps(s)) {
      ASSERT_EQ(r, s);
    } else {
      ++invalid_seen;
    }
    ASSERT_EQ(text::CountCodePoints(r), text::CountCodePoints(s));
    ASSERT_LE(text::CountWords(s), text::CountCodePoints(s));
  }
  EXPECT_GT(invalid_seen, 1'000) << "the generator must exercise invalid input";
}

TEST(TextTest, EveryCutIsValidBoundedAndAPrefixOrSuffixOfTheRepairedInput) {
  std::mt19937 rng(1018);
  std::uniform_int_distribution<int> limit(0, 60);
  for (int i = 0; i < 5'000; ++i) {
    const std::string s = RandomText(rng);
    const std::string r = text::Repair(s);
    const std::size_t total = text::CountCodePoints(r), max = static_cast<std::size_t>(limit(rng));

    const std::string head = text::Cut(s, max);
    ASSERT_TRUE(Dumps(head));
    if (total <= max) {
      ASSERT_EQ(head, r);
    } else {
      ASSERT_EQ(text::CountCodePoints(head), max) << "a cut uses its whole budget";
      const std::string kept = max >= 1 ? head.substr(0, head.size() - kE.size()) : head;
      if (max >= 1) {
        ASSERT_TRUE(EndsWith(head, kE));
      }
      ASSERT_TRUE(StartsWith(r, kept)) << "case " << i;
    }

    const std::string tail = text::Cut(s, max, Keep::kTail);
    ASSERT_TRUE(Dumps(tail));
    ASSERT_LE(text::CountCodePoints(tail), max);
    if (total > max && max >= 1) {
      ASSERT_TRUE(StartsWith(tail, kE));
      ASSERT_TRUE(EndsWith(r, tail.substr(kE.size())));
    }

    for (Keep k : {Keep::kHead, Keep::kTail}) {
      const std::string noted = text::CutNoted(s, max + 30, k);
      ASSERT_TRUE(Dumps(noted));
      ASSERT_LE(text::CountCodePoints(noted), max + 30);
      if (total > max + 30) {
        const std::size_t at = k == Keep::kHead ? noted.rfind("\n[") : noted.find("]\n");
        ASSERT_NE(at, std::string::npos) << noted;
        const std::string kept = k == Keep::kHead ? noted.substr(0, at) : noted.substr(at + 2);
        const std::size_t said = std::stoul(noted.substr(noted.find("[\xE2\x80\xA6 ") + 4));
        ASSERT_EQ(said + text::CountCodePoints(kept), total) << "the marker says exactly how much was cut";
        ASSERT_TRUE(k == Keep::kHead ? StartsWith(r, kept) : EndsWith(r, kept));
      } else {
        ASSERT_EQ(noted, r);
      }
    }

    const std::string lines = text::TailLines(s, 3, max);
    ASSERT_TRUE(Dumps(lines));
    ASSERT_LE(text::CountCodePoints(lines), max);
    std::string body = total > max && StartsWith(lines, kE) ? lines.substr(kE.size()) : lines;
    std::string trimmed = r;
    while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
    ASSERT_TRUE(EndsWith(trimmed, body));
    ASSERT_LE(std::count(body.begin(), body.end(), '\n'), 2);

    const std::size_t words = static_cast<std::size_t>(limit(rng)) / 4;
    const std::string few = text::CutWords(s, words);
    ASSERT_TRUE(Dumps(few));
    ASSERT_LE(text::CountWords(few), words) << "case " << i;
    if (text::CountWords(s) <= words) {
      ASSERT_EQ(few, r);
    } else if (words > 0) {
      ASSERT_TRUE(EndsWith(few, kE));
      ASSERT_TRUE(StartsWith(r, few.substr(0, few.size() - kE.size())));
    }

    bool was_cut = false;
    const std::string middle = text::CutMiddle(s, max, &was_cut);
    ASSERT_TRUE(Dumps(middle));
    ASSERT_EQ(was_cut, total > max);
  }
}

TEST(TextTest, CutsCountCodePointsNotBytes) {
  std::string chinese;
  for (int i = 0; i < 1000; ++i) chinese += "汉";  // 3000 bytes, 1000 characters
  EXPECT_EQ(text::Cut(chinese, 1000), chinese) << "1000 characters fit a 1000-character limit";
  EXPECT_EQ(text::CountCodePoints(text::Cut(chinese, 999)), 999u);
  EXPECT_EQ(text::Cut("汉字文本", 3), "汉字" + kE);
  EXPECT_EQ(text::Cut("汉字文本", 3, Keep::kTail), kE + "文本");
  EXPECT_EQ(text::Cut("汉字文本", 3, Keep::kHead, ""), "汉字文");
  EXPECT_EQ(text::Cut("汉字文本", 0), "");
  EXPECT_EQ(text::Cut("👨‍👩‍👧", 2, Keep::kHead, ""), "👨\xE2\x80\x8D") << "a ZWJ sequence is several code points";
  EXPECT_EQ(text::CutNoted("0123456789abcdefghijklmnopqrstuvwxyz", 30, Keep::kTail),
            "[… 30 characters cut …]\nuvwxyz");
  EXPECT_EQ(text::TailLines("one\ntwo\nthree\n\n\n", 2, 100), "two\nthree");
  EXPECT_EQ(text::TailLines("错误一\n错误二\n错误三", 1, 2), kE + "三");
  EXPECT_EQ(text::FirstLine("第一行很长\nsecond", 3), "第一" + kE);
  bool cut = false;
  EXPECT_EQ(text::CutMiddle("一二三四五六七八九十", 8, &cut), "一二三四五六\n[… 2 characters cut here to bound the input …]\n九十");
  EXPECT_TRUE(cut);
}

TEST(TextTest, WordsCountEachCjkCharacterAndSpaceSeparatedRunsOtherwise) {
  EXPECT_EQ(text::CountWords("I'll fix the typo."), 4u);
  EXPECT_EQ(text::CountWords("  spaced\n\tout  "), 2u);
  EXPECT_EQ(text::CountWords("我来修复错别字。"), 7u);
  EXPECT_EQ(text::CountWords("修复 README 的标题"), 6u);
  EXPECT_EQ(text::CountWords("ひらがなとカタカナ"), 9u);
  EXPECT_EQ(text::CountWords("안녕하세요"), 5u);
  EXPECT_EQ(text::CountWords("日本語のテキスト、OK！"), 9u);
  EXPECT_EQ(text::CountWords("👍 done 👨‍👩‍👧"), 3u);
  EXPECT_EQ(text::CountWords("cafe\xCC\x81 ok"), 2u) << "a combining mark stays inside its word";
  EXPECT_EQ(text::CountWords("\xF0\xA0\x80\x80\xF0\xA0\x80\x81"), 2u);
  EXPECT_EQ(text::CountWords(""), 0u);
  EXPECT_EQ(text::CountWords("\xFF\xFE bad"), 2u) << "invalid bytes count as the U+FFFD they become";
  std::string chinese;
  for (int i = 0; i < 3000; ++i) chinese += "字";
  EXPECT_EQ(text::CountWords(chinese), 3000u) << "3000 Chinese characters are not one word";
  EXPECT_EQ(text::CutWords(chinese, 100), chinese.substr(0, 99 * 3) + kE);
  EXPECT_EQ(text::CutWords("one two three four", 3), "one two" + kE);
  EXPECT_EQ(text::CutWords("我来 修复。错别字", 3), "我来" + kE);
  EXPECT_EQ(text::CutWords("short", 3), "short");
}

TEST(TextTest, RepairJsonFixesValuesAndKeysSoDumpNeverThrows) {
  json j = {{"ok", true}, {"text", "good \xE4\xB8"}, {"list", {"\xFF", 5, {{"deep", "\xED\xA0\x80"}}}}};
  j["bad\xC0key"] = "v";
  EXPECT_THROW((void)j.dump(), json::type_error) << "what used to take the daemon down";
  text::RepairJson(&j);
  EXPECT_NO_THROW((void)j.dump());
  EXPECT_EQ(j["text"], "good " + kR);
  EXPECT_EQ(j["list"][0], kR);
  EXPECT_EQ(j["list"][2]["deep"], kR + kR + kR);
  EXPECT_EQ(j["bad" + kR + "key"], "v");
  EXPECT_EQ(j["ok"], true);
}

// A tool result is cut once, as a whole, and stays JSON with its fields (the model used to get
// 16 020 characters of broken JSON without "ok" or "status").
TEST(TextTest, DumpWithinKeepsValidJsonWithEveryFieldAndCutsTheLongestText) {
  std::string big;
  for (int i = 0; i < 20'000; ++i) big += i % 50 == 49 ? "\n" : "读";
  json r = {{"ok", true}, {"target", "session-2"}, {"status", "idle"}, {"text", big + "最新"}};
  for (Keep keep : {Keep::kHead, Keep::kTail}) {
    const std::string out = text::DumpWithin(r, 16'000, keep);
    EXPECT_LE(text::CountCodePoints(out), 16'000u);
    EXPECT_GE(text::CountCodePoints(out), 15'990u) << "the budget is used, not wasted";
    json back = json::parse(out);
    EXPECT_EQ(back["ok"], true);
    EXPECT_EQ(back["status"], "idle");
    EXPECT_EQ(back["target"], "session-2");
    const std::string t = back["text"];
    if (keep == Keep::kTail) EXPECT_TRUE(EndsWith(t, "最新")) << "a read keeps the newest";
    else EXPECT_TRUE(EndsWith(t, kE));
  }
  EXPECT_EQ(text::DumpWithin(json{{"ok", true}}, 100), R"({"ok":true})");
  EXPECT_EQ(text::DumpWithin(json{{"text", "\xE4\xB8"}}, 100), "{\"text\":\"" + kR + "\"}");

  std::mt19937 rng(7);
  std::uniform_int_distribution<int> limit(50, 400);
  for (int i = 0; i < 1'000; ++i) {
    json j = {{"ok", true}, {"a", RandomText(rng)}, {"nested", {{"b", RandomText(rng)}, {"c", {RandomText(rng), 1}}}}};
    const std::size_t max = static_cast<std::size_t>(limit(rng));
    const std::string out = text::DumpWithin(j, max, i % 2 ? Keep::kTail : Keep::kHead);
    ASSERT_LE(text::CountCodePoints(out), max);
    json back = json::parse(out);
    ASSERT_TRUE(back.contains("ok")) << out;
    ASSERT_TRUE(back["nested"].contains("b")) << out;
  }
  json many = json::array();
  for (int i = 0; i < 100; ++i) many.push_back(i);
  const std::string refused = text::DumpWithin(many, 120);
  EXPECT_LE(text::CountCodePoints(refused), 120u);
  EXPECT_FALSE(json::parse(refused).value("ok", true)) << refused;
}

TEST(TextTest, FitFieldCutsOnlyTheNamedField) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "行\n";
  json j = {{"ok", true}, {"status", "working"}, {"text", text}};
  ASSERT_TRUE(text::FitField(&j, "text", 120, Keep::kTail));
  EXPECT_LE(text::CountCodePoints(j.dump()), 120u);
  EXPECT_EQ(j["status"], "working");
  EXPECT_TRUE(StartsWith(j["text"], kE));
  json tiny = {{"ok", true}, {"text", "abc"}};
  EXPECT_FALSE(text::FitField(&tiny, "text", 5, Keep::kTail));
  EXPECT_EQ(tiny["text"], "");
}

// One Trim and one AsciiLower serve every module (they were copied into six files).
TEST(TextTest, TrimAndAsciiLower) {
  EXPECT_EQ(text::Trim(" \t main\r\n"), "main");
  EXPECT_EQ(text::Trim(" \r\n\t"), "");
  EXPECT_EQ(text::Trim("a b"), "a b");
  EXPECT_EQ(text::AsciiLower("Content-Type"), "content-type");
  EXPECT_EQ(text::AsciiLower("Öl-BOT"), "Öl-bot");  // UTF-8 bytes are left as they are
}

}  // namespace
}  // namespace superagent
