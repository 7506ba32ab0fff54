// The outbound filter (issue 33, item 3): every known value and every token shape becomes the
// marker, ordinary text around it (Chinese, emoji, invalid UTF-8) stays byte for byte, and words
// that merely contain a prefix are left alone. Tokens are built at run time so no literal in the
// repository looks like a credential to a scanner.
#include "superagent/secret_filter.h"
#include "superagent/text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include <cstdlib>

#include <nlohmann/json.hpp>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "app/config.h"
#include "app/logging.h"
#include "app/wiring.h"
#include "github_app_keys.h"

namespace superagent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kM(kRedactedMarker);

// A body of `n` base62 characters with letters and digits, as real tokens have.
std::string Body(std::size_t n, char salt = 'a') {
  static const std::string kAlphabet = "aB3dE5gH7jK9mN1pQ2sT4vW6yZ8";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(kAlphabet[(i + static_cast<std::size_t>(salt)) % kAlphabet.size()]);
  return out;
}

std::string Ghp() { return "gh" + std::string("p_") + Body(36); }

std::string Redacted(const SecretFilter& f, const std::string& text, std::vector<std::string>* found = nullptr) {
  return f.Redact(text, found);
}

// ---- token shapes ----

TEST(SecretFilterTest, EachTokenShapeBecomesTheMarker) {
  SecretFilter f;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gh" + std::string("p_") + Body(36), "ghp_ token"},
      {"gh" + std::string("o_") + Body(36), "gho_ token"},
      {"gh" + std::string("u_") + Body(36), "ghu_ token"},
      {"gh" + std::string("s_") + Body(36), "ghs_ token"},
      {"gh" + std::string("r_") + Body(36), "ghr_ token"},
      {"github" + std::string("_pat_") + Body(22) + "_" + Body(59, 'c'), "github_pat_ token"},
      {"s" + std::string("k-") + Body(48), "sk- key"},
      {"s" + std::string("k-proj-") + Body(40) + "-" + Body(20, 'x'), "sk- key"},
      {"s" + std::string("k-ant-api03-") + Body(80) + "-" + Body(6) + "AA", "sk- key"},
      {"xo" + std::string("xb-") + "1234567890-1234567890123-" + Body(24), "Slack token"},
      {"xo" + std::string("xp-") + "1234567890-" + Body(24), "Slack token"},
      {"xo" + std::string("xa-2-") + Body(24), "Slack token"},
      {"xo" + std::string("xr-") + Body(30), "Slack token"},
      {"AK" + std::string("IA") + "IOSFODNN7EXAMPLE", "AWS access key id"},
      {"AS" + std::string("IA") + "IOSFODNN7EXAMPL3", "AWS access key id"},
  };
  for (const auto& [token, name] : cases) {
    std::vector<std::string> found;
    EXPECT_EQ(Redacted(f, "token: " + token + " (used)", &found), "token: " + kM + " (used)") << token;
    EXPECT_THAT(found, ElementsAre(name)) << token;
    // At the very start and end of a text, and alone.
    EXPECT_EQ(Redacted(f, token), kM) << token;
    EXPECT_EQ(Redacted(f, "export KEY=" + token + "\n"), "export KEY=" + kM + "\n") << token;
  }
}

TEST(SecretFilterTest, PemPrivateKeyBlocksAreReplacedWhole) {
  SecretFilter f;
  const std::string body = Body(64) + "\n" + Body(64, 'q') + "\n" + Body(20, 'z') + "==\n";
  for (std::string kind : {"RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"}) {
    const std::string pem = "-----BEGIN " + kind + "-----\n" + body + "-----END " + kind + "-----";
    std::vector<std::string> found;
    EXPECT_EQ(Redacted(f, "key:\n" + pem + "\nafter", &found), "key:\n" + kM + "\nafter") << kind;
    EXPECT_THAT(found, ElementsAre("PEM private key"));
  }
  // Cut short (no END): everything from BEGIN on, since the body is the secret.
  EXPECT_EQ(Redacted(f, "x -----BEGIN PRIVATE KEY-----\n" + Body(64)), "x " + kM);
  // As a JSON string or a log value (line breaks written as \n).
  EXPECT_EQ(Redacted(f, "\"-----BEGIN PRIVATE KEY-----\\n" + Body(64) + "\\n-----END PRIVATE KEY-----\""),
            "\"" + kM + "\"");
  // A certificate or a public key is not a secret.
  const std::string cert = "-----BEGIN CERTIFICATE-----\n" + Body(64) + "\n-----END CERTIFICATE-----";
  EXPECT_EQ(Redacted(f, cert), cert);
  const std::string pub = "-----BEGIN PUBLIC KEY-----\n" + Body(64) + "\n-----END PUBLIC KEY-----";
  EXPECT_EQ(Redacted(f, pub), pub);
}

TEST(SecretFilterTest, AuthorizationCredentialsAreReplacedAndTheSchemeKept) {
  SecretFilter f;
  const std::string cred = Body(40);
  EXPECT_EQ(Redacted(f, "Authorization: Bearer " + cred), "Authorization: Bearer " + kM);
  EXPECT_EQ(Redacted(f, "authorization: basic dXNlcjpwYXNzd29yZA=="), "authorization: basic " + kM);
  EXPECT_EQ(Redacted(f, "AUTHORIZATION: token " + cred + "\r\n"), "AUTHORIZATION: token " + kM + "\r\n");
  EXPECT_EQ(Redacted(f, "{\"Authorization\": \"Bearer " + cred + "\"}"), "{\"Authorization\": \"Bearer " + kM + "\"}");
  // git's form, as a worker's `git config -l` prints it.
  EXPECT_EQ(Redacted(f, "http.https://github.com/.extraheader=AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hz"),
            "http.https://github.com/.extraheader=AUTHORIZATION: basic " + kM);
  EXPECT_EQ(Redacted(f, "curl -H 'Bearer " + cred + "' x"), "curl -H 'Bearer " + kM + "' x");
  // Words, placeholders and prose are not credentials.
  for (std::string plain : {"Authorization: Bearer <token>", "Authorization: Bearer ${TOKEN}",
                            "Authorization: required for every request", "the bearer of bad news arrived yesterday",
                            "Authorization: Bearer token", "authorization is checked by code"})
    EXPECT_EQ(Redacted(f, plain), plain) << plain;
}

TEST(SecretFilterTest, OrdinaryWordsThatHoldAPrefixStay) {
  SecretFilter f;
  const std::vector<std::string> plain = {
      "the task-list-renderer-component-for-the-panel is done",  // "sk-" inside a word
      "desk-top, risk-free, whisk-and-fold, ask-me-anything-about-it-later",
      "sk-learn is scikit-learn; sk-short; sk-this-is-a-long-hyphenated-name-without-digits",
      "ghp_short and ghp_ alone", "ghs_x", "the xoxb- prefix is Slack's",
      "github_pat_ is the prefix of fine-grained tokens",
      "AKIA alone, AKIAIOSFODNN7 too short, XAKIAIOSFODNN7EXAMPLE inside a word",
      "a_ghp_" + Body(36),  // glued to a word before it
      "my-sk-ant-api03 is a branch name", "-----BEGIN SOMETHING ELSE-----",
      "中文 sk- 说明 🙂 ghp_ 前缀", "",
  };
  for (const std::string& text : plain) EXPECT_EQ(Redacted(f, text), text) << text;
}

// ---- known values ----

TEST(SecretFilterTest, KnownValuesAreReplacedWhereverTheyAppear) {
  SecretFilter f;
  f.Learn("llm.api_key_env", "model-key-0123456789");
  f.Learn("panel token", "PaNeLtOkEn_abcdefghijklmnop");
  std::vector<std::string> found;
  EXPECT_EQ(Redacted(f, "key=model-key-0123456789 panel=PaNeLtOkEn_abcdefghijklmnop again model-key-0123456789", &found),
            "key=" + kM + " panel=" + kM + " again " + kM);
  EXPECT_THAT(found, ElementsAre("panel token", "llm.api_key_env"));
  // Glued to other text: a known value is replaced wherever it is, word boundary or not.
  EXPECT_EQ(Redacted(f, "xmodel-key-0123456789y"), "x" + kM + "y");
}

// A published text is often cut to a platform's limit before it reaches the filter: a known value
// the cut split leaves its head before the cut's marker (or the text's end), or its tail after it.
// Either part of 8 bytes or more is replaced; a part of a value in running text, not at a cut, is
// not (that would mangle ordinary words that share a secret's first letters).
TEST(SecretFilterTest, AKnownValueACutLeftOnlyPartOfIsReplacedToo) {
  SecretFilter f;
  const std::string key = "model-key-0123456789abcdef";  // 26 bytes, no token shape
  f.Learn("llm.api_key_env", key);
  const std::string text = "环境变量 MODEL=" + key + " 之后还有很多文字 ✅ and more words after it";
  // Every cut through the key, from each end, with each of the text module's cutters.
  const std::size_t before = text::CountCodePoints("环境变量 MODEL=");
  for (std::size_t keep = 1; keep < key.size(); ++keep) {
    SCOPED_TRACE(keep);
    const std::string head = text::Cut(text, before + keep + 1);  // the key's first `keep` bytes, then "…"
    const std::string head_noted = text::CutNoted(text, before + keep + 1 + 30, text::Keep::kHead);
    for (const std::string& cut : {head, head_noted}) {
      const std::size_t at = cut.find("MODEL=") + 6;
      std::size_t kept = 0;
      while (kept < key.size() && at + kept < cut.size() && cut[at + kept] == key[kept]) ++kept;
      const std::string out = f.Redact(cut);
      if (kept >= kMinSecretLength) {
        EXPECT_EQ(out.substr(at, kM.size()), kM) << cut << " -> " << out;
        EXPECT_EQ(out.find(key.substr(0, kept)), std::string::npos) << out;
      } else {
        EXPECT_EQ(out, cut);
      }
    }
    // The tail kept: "…" then the key's last bytes.
    const std::size_t after = text::CountCodePoints(" 之后还有很多文字 ✅ and more words after it");
    const std::string tail = text::Cut(text, after + keep + 1, text::Keep::kTail);
    const std::string out = f.Redact(tail);
    if (keep >= kMinSecretLength) {
      EXPECT_EQ(out.find(key.substr(key.size() - keep)), std::string::npos) << out;
      EXPECT_THAT(out, HasSubstr(kM)) << tail;
    } else {
      EXPECT_EQ(out, tail);
    }
  }
  // CutMiddle's marker in the middle of the key: both parts go.
  std::string middle = "x " + key.substr(0, 12) + "[\xE2\x80\xA6 40 characters cut here to bound the input \xE2\x80\xA6]" +
                       key.substr(12) + " y";
  EXPECT_EQ(f.Redact(middle), "x " + kM + "[\xE2\x80\xA6 40 characters cut here to bound the input \xE2\x80\xA6]" + kM + " y");
  // Not at a cut: the same first bytes in running text stay.
  EXPECT_EQ(f.Redact("model-key-0123 is how the docs spell it"), "model-key-0123 is how the docs spell it");
  EXPECT_EQ(f.Redact("see model-key-0123456789abcdeX"), "see model-key-0123456789abcdeX");
  // Shorter than kMinSecretLength at the cut: kept (it gives away too little to matter).
  EXPECT_EQ(f.Redact("MODEL=model-k\xE2\x80\xA6"), "MODEL=model-k\xE2\x80\xA6");
}

TEST(SecretFilterTest, ChineseEmojiAndInvalidUtf8AroundASecretStayByteForByte) {
  SecretFilter f;
  f.Learn("feishu.app_secret_env", "秘密值-secret-9876543210");  // a non-ASCII value too
  const std::string bad = "\xFF\xC3(\xE2\x82";                   // invalid and truncated sequences
  const std::string text = "中文🙂" + Ghp() + "后文" + bad + "秘密值-secret-9876543210" + bad + "🙂";
  EXPECT_EQ(Redacted(f, text), "中文🙂" + kM + "后文" + bad + kM + bad + "🙂");
}

TEST(SecretFilterTest, ShortValuesAreNotLearnt) {
  SecretFilter f;
  f.Learn("feishu.app_id_env", "1234567");  // kMinSecretLength - 1
  f.Learn("x", "");
  EXPECT_EQ(f.known_values(), 0u);
  EXPECT_EQ(Redacted(f, "issue 1234567 is fixed"), "issue 1234567 is fixed");
  f.Learn("feishu.app_id_env", "12345678");
  EXPECT_EQ(Redacted(f, "id 12345678."), "id " + kM + ".");
}

TEST(SecretFilterTest, OverlappingSecretsAndAPrefixOfAnotherBecomeOneMarker) {
  SecretFilter f;
  f.Learn("a", "abcdefgh12345678");
  f.Learn("b", "abcdefgh");  // a prefix of a
  f.Learn("c", "12345678XYZWVUTS");  // overlaps a's end
  std::vector<std::string> found;
  EXPECT_EQ(Redacted(f, "<abcdefgh12345678XYZWVUTS>", &found), "<" + kM + ">");
  EXPECT_THAT(found, ElementsAre("a", "c", "b"));
  EXPECT_EQ(Redacted(f, "<abcdefgh->"), "<" + kM + "->");
  // A known value inside a token shape, and a shape glued to a known value.
  f.Learn("d", Body(36));
  EXPECT_EQ(Redacted(f, "(" + Ghp() + ")"), "(" + kM + ")");
  EXPECT_EQ(Redacted(f, Ghp() + "abcdefgh"), kM);
}

TEST(SecretFilterTest, TrimmedValuesAndEachPemLineAreLearntToo) {
  SecretFilter f;
  f.Learn("github.token_env", "  tok-with-spaces-42\n");
  EXPECT_EQ(Redacted(f, "[tok-with-spaces-42]"), "[" + kM + "]");
  const std::string line1 = Body(64), line2 = Body(64, 'k');
  // As an EnvironmentFile holds it: one line, "\n" written out.
  f.Learn("github.app_private_key_env", "-----BEGIN RSA PRIVATE KEY-----\\n" + line1 + "\\n" + line2 +
                                            "\\n-----END RSA PRIVATE KEY-----\\n");
  // A worker that prints part of the key, one line of it, without the armour.
  EXPECT_EQ(Redacted(f, "leak: " + line2 + "\n"), "leak: " + kM + "\n");
  // A fragment shorter than a line, in running text, stays; where a cut could have left it (at the
  // text's end) it goes (AKnownValueACutLeftOnlyPartOfIsReplacedToo).
  EXPECT_EQ(Redacted(f, "on " + line1.substr(0, 30) + " and on"), "on " + line1.substr(0, 30) + " and on");
  EXPECT_EQ(Redacted(f, line1.substr(0, 30)), kM);
}

TEST(SecretFilterTest, KeepLastForgetsTheOldestValuesOfAName) {
  SecretFilter f;
  f.Learn("panel token", "stays-forever-0001");
  for (int i = 0; i < 10; ++i) f.Learn("github installation token", "ghs-installation-" + std::to_string(100 + i), 3);
  EXPECT_EQ(f.known_values(), 4u);
  EXPECT_EQ(Redacted(f, "ghs-installation-100"), "ghs-installation-100");
  EXPECT_EQ(Redacted(f, "ghs-installation-109 ghs-installation-107"), kM + " " + kM);
  EXPECT_EQ(Redacted(f, "stays-forever-0001"), kM);
}

TEST(SecretFilterTest, EmptyAndHugeTexts) {
  SecretFilter f;
  f.Learn("llm.api_key_env", "model-key-0123456789");
  EXPECT_EQ(Redacted(f, ""), "");
  // 8 MiB with a secret every 64 KiB and at both ends.
  std::string filler(65'536 - 20, 'x');
  std::string huge, want;
  for (int i = 0; i < 128; ++i) {
    huge += "model-key-0123456789" + filler;
    want += kM + filler;
  }
  huge += " " + Ghp();
  want += " " + kM;
  std::vector<std::string> found;
  EXPECT_EQ(Redacted(f, huge, &found), want);
  EXPECT_THAT(found, ElementsAre("llm.api_key_env", "ghp_ token"));
}

TEST(SecretFilterTest, RedactingTwiceChangesNothingMore) {
  SecretFilter f;
  f.Learn("k", "model-key-0123456789");
  const std::string once = Redacted(f, "Authorization: Bearer " + Body(30) + " model-key-0123456789 " + Ghp());
  EXPECT_EQ(Redacted(f, once), once);
}

TEST(SecretFilterTest, JsonStringsAndKeysAreRedactedAtAnyDepth) {
  SecretFilter f;
  f.Learn("llm.api_key_env", "va\"lue-with-quote\\1");  // escaped in JSON text: found only in the values
  nlohmann::json j = {{"a", {{"b", nlohmann::json::array({"x", "y va\"lue-with-quote\\1 z"})}}},
                      {Ghp(), 1},
                      {"n", 42},
                      {"ok", "plain"}};
  std::vector<std::string> found;
  EXPECT_TRUE(f.RedactJson(&j, &found));
  const std::string dumped = j.dump();
  EXPECT_THAT(dumped, Not(HasSubstr("lue-with-quote")));
  EXPECT_THAT(dumped, Not(HasSubstr(Ghp())));
  EXPECT_EQ(j["a"]["b"][1], "y " + kM + " z");
  EXPECT_EQ(j[kM], 1);
  EXPECT_EQ(j["n"], 42);
  EXPECT_EQ(j["ok"], "plain");
  nlohmann::json clean = {{"ok", "plain"}, {"list", {1, 2, "three"}}};
  EXPECT_FALSE(f.RedactJson(&clean));
}

// ---- records ----

TEST(SecretFilterTest, CleanRecordsCountsTheEventAndLogsWithoutTheValue) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto before = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", sink));
  FakeClock clock(1'800'000'000'000);
  SecretFilter f(&clock);
  f.Learn("llm.api_key_env", "model-key-0123456789");
  EXPECT_EQ(f.Counts(), (std::map<std::string, std::int64_t>{{"outbox", 0}, {"panel", 0}, {"intercom", 0}, {"log", 0}}));
  EXPECT_FALSE(f.Last().has_value());
  EXPECT_EQ(f.Clean("nothing here", "outbox", "post_message effect=1"), "nothing here");
  EXPECT_FALSE(f.Last().has_value());
  EXPECT_EQ(f.Clean("k=model-key-0123456789", "outbox", "post_message effect=7 ticket=3"), "k=" + kM);
  spdlog::set_default_logger(before);
  EXPECT_EQ(f.Counts()["outbox"], 1);
  ASSERT_TRUE(f.Last().has_value());
  EXPECT_EQ(f.Last()->at, 1'800'000'000'000);
  EXPECT_EQ(f.Last()->where, "post_message effect=7 ticket=3");
  EXPECT_THAT(f.Last()->what, ElementsAre("llm.api_key_env"));
  auto lines = sink->last_formatted();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("secret redacted path=outbox where=\"post_message effect=7 ticket=3\""));
  EXPECT_THAT(lines[0], HasSubstr("llm.api_key_env"));
  EXPECT_THAT(lines[0], Not(HasSubstr("model-key")));
  f.Record("log", "a log line", {"ghp_ token"}, /*log=*/false);
  EXPECT_EQ(f.Counts()["log"], 1);
  EXPECT_EQ(sink->last_formatted().size(), 1u);
}

TEST(SecretFilterTest, LearningWhileOtherThreadsRedactIsSafe) {
  SecretFilter f;
  f.Learn("panel token", "permanent-secret-0001");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&f, t] {
      for (int i = 0; i < 200; ++i) {
        f.Learn("github installation token", "installation-" + std::to_string(t) + "-" + std::to_string(i) + "-xxxx", 8);
        EXPECT_EQ(f.Redact("<permanent-secret-0001>"), "<" + kM + ">");
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(f.known_values(), 9u);  // the panel token and the newest 8 installation tokens
}

// ---- the daemon's filter (app/wiring.cpp) and its log ----

TEST(SecretFilterWiringTest, TheDaemonsFilterKnowsEveryEnvValueTheAppKeyAndThePanelToken) {
  testing::TestKey key;
  Config c = DefaultConfig();
  c.github.auth = "app";
  c.github.app_private_key_env = "SUPERAGENT_TEST_APP_KEY";
  std::vector<std::pair<std::string, std::string>> set;  // variable, value
  int n = 0;
  for (const auto& [config_key, env] : SecretEnvNames(c)) {
    if (env == "SUPERAGENT_TEST_APP_KEY") continue;
    set.emplace_back(env, "value-of-" + config_key + "-" + std::to_string(++n));
  }
  ASSERT_GE(set.size(), 7u) << "each *_env key of the table";
  for (const auto& [env, value] : set) ASSERT_EQ(setenv(env.c_str(), value.c_str(), 1), 0);
  // As an EnvironmentFile holds a PEM: one line, its breaks written "\n".
  std::string one_line;
  for (char ch : key.pem) one_line += ch == '\n' ? std::string("\\n") : std::string(1, ch);
  ASSERT_EQ(setenv("SUPERAGENT_TEST_APP_KEY", one_line.c_str(), 1), 0);
  auto filter = app::MakeSecretFilter(c, "panel-token-from-data-dir-0123");
  for (const auto& [env, value] : set) unsetenv(env.c_str());
  unsetenv("SUPERAGENT_TEST_APP_KEY");

  for (const auto& [env, value] : set) EXPECT_EQ(filter->Redact("<" + value + ">"), "<" + kM + ">") << env;
  EXPECT_EQ(filter->Redact("<panel-token-from-data-dir-0123>"), "<" + kM + ">");
  // The key's body, a line at a time, without its armour (a worker printing part of it).
  const std::string second_line = key.pem.substr(key.pem.find('\n') + 1, 64);
  ASSERT_EQ(second_line.size(), 64u);
  EXPECT_EQ(filter->Redact("part: " + second_line), "part: " + kM);
}

TEST(SecretFilterWiringTest, TheLogWritesTheMarkerAndCountsWithoutLoggingAgain) {
  auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(16);
  auto before = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("captured", app::FilteredSink(ring)));
  auto filter = std::make_shared<SecretFilter>();
  filter->Learn("llm.api_key_env", "model-key-0123456789");
  app::FilterLogLines(filter);
  spdlog::warn("peer said error=\"bad key model-key-0123456789\" with {}", Ghp());
  spdlog::info("nothing secret here");
  app::FilterLogLines(nullptr);
  spdlog::info("after: model-key-0123456789");
  spdlog::set_default_logger(before);
  const auto lines = ring->last_formatted();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("peer said error=\"bad key " + kM + "\" with " + kM));
  EXPECT_THAT(lines[0], Not(HasSubstr("model-key")));
  EXPECT_THAT(lines[1], HasSubstr("nothing secret here"));
  EXPECT_THAT(lines[2], HasSubstr("after: model-key-0123456789")) << "with no filter set, lines pass";
  EXPECT_EQ(filter->Counts()["log"], 1);
  ASSERT_TRUE(filter->Last().has_value());
  EXPECT_EQ(filter->Last()->path, "log");
}

}  // namespace
}  // namespace superagent
