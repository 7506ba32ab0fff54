#include "app/logging.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

namespace superagent::app {
namespace {

TEST(LoggingTest, KvLeavesPlainValuesBare) {
  EXPECT_EQ(Kv("ticket", "T-12"), "ticket=T-12");
  EXPECT_EQ(Kv("url", "https://api.github.com/repos/a/b"), "url=https://api.github.com/repos/a/b");
  EXPECT_EQ(Kv("path", "/var/lib/superagent"), "path=/var/lib/superagent");
  EXPECT_EQ(Kv("text", "修复错别字"), "text=修复错别字");  // UTF-8 is not whitespace
}

TEST(LoggingTest, KvQuotesSpacesQuotesAndEquals) {
  EXPECT_EQ(Kv("text", "hello world"), "text=\"hello world\"");
  EXPECT_EQ(Kv("text", "say \"hi\""), "text=\"say \\\"hi\\\"\"");
  EXPECT_EQ(Kv("expr", "a=b"), "expr=\"a=b\"");
  EXPECT_EQ(Kv("url", "https://x/y?page=2"), "url=\"https://x/y?page=2\"");
  EXPECT_EQ(Kv("path", "C:\\dir"), "path=\"C:\\\\dir\"");
  EXPECT_EQ(Kv("tab", "a\tb"), "tab=\"a\\tb\"");
}

TEST(LoggingTest, KvKeepsOneRecordOnOneLine) {
  EXPECT_EQ(Kv("body", "line one\nline two\r"), "body=\"line one\\nline two\\r\"");
  EXPECT_EQ(Kv("bell", std::string("a\x07z")), "bell=\"a\\x07z\"");
  std::string with_nul("a\0b", 3);
  EXPECT_EQ(Kv("nul", with_nul), "nul=\"a\\x00b\"");
}

TEST(LoggingTest, KvQuotesEmptyValues) { EXPECT_EQ(Kv("reason", ""), "reason=\"\""); }

TEST(LoggingTest, KvIntegers) {
  EXPECT_EQ(Kv("slots", 3), "slots=3");
  EXPECT_EQ(Kv("delta", -42), "delta=-42");
  EXPECT_EQ(Kv("bytes", std::int64_t{1} << 40), "bytes=1099511627776");
}

TEST(LoggingTest, ParseLogLevelAcceptsTheFiveDocumentedLevels) {
  spdlog::level::level_enum level = spdlog::level::off;
  ASSERT_TRUE(ParseLogLevel("trace", &level));
  EXPECT_EQ(level, spdlog::level::trace);
  ASSERT_TRUE(ParseLogLevel("debug", &level));
  EXPECT_EQ(level, spdlog::level::debug);
  ASSERT_TRUE(ParseLogLevel("info", &level));
  EXPECT_EQ(level, spdlog::level::info);
  ASSERT_TRUE(ParseLogLevel("warn", &level));
  EXPECT_EQ(level, spdlog::level::warn);
  ASSERT_TRUE(ParseLogLevel("error", &level));
  EXPECT_EQ(level, spdlog::level::err);
}

TEST(LoggingTest, ParseLogLevelRejectsEverythingElse) {
  spdlog::level::level_enum level = spdlog::level::info;
  for (const char* bad : {"", "INFO", "warning", "err", "critical", "off", "verbose", " info"}) {
    EXPECT_FALSE(ParseLogLevel(bad, &level)) << bad;
  }
  EXPECT_EQ(level, spdlog::level::info);  // untouched on failure
}

TEST(LoggingTest, JournalPatternHasPriorityAndNoDate) {
  std::string journal = LogPattern(true);
  EXPECT_EQ(journal.find("%Y"), std::string::npos);
  EXPECT_EQ(journal.rfind("%*", 0), 0u);  // "<N>" first, where journald looks for it
  EXPECT_NE(journal.find("%v"), std::string::npos);
  EXPECT_EQ(LogPattern(false), "%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
}

// Restores JOURNAL_STREAM after a test changes it.
class LoggingJournalStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* v = getenv("JOURNAL_STREAM");
    had_ = v != nullptr;
    if (had_) saved_ = v;
  }
  void TearDown() override {
    if (had_) {
      setenv("JOURNAL_STREAM", saved_.c_str(), 1);
    } else {
      unsetenv("JOURNAL_STREAM");
    }
  }

 private:
  bool had_ = false;
  std::string saved_;
};

TEST_F(LoggingJournalStreamTest, OnlyTheStreamNamedByJournalStreamCounts) {
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(StderrIsJournal());
  setenv("JOURNAL_STREAM", "garbage", 1);
  EXPECT_FALSE(StderrIsJournal());
  setenv("JOURNAL_STREAM", "1:", 1);
  EXPECT_FALSE(StderrIsJournal());

  struct stat st {};
  ASSERT_EQ(fstat(STDERR_FILENO, &st), 0);
  std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  setenv("JOURNAL_STREAM", mine.c_str(), 1);
  EXPECT_TRUE(StderrIsJournal());
  // Inherited from a parent whose stream this is not (stderr redirected): not the journal.
  std::string other = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
  setenv("JOURNAL_STREAM", other.c_str(), 1);
  EXPECT_FALSE(StderrIsJournal());
}

// Points fd 2 at a temporary file for the lifetime of the object, so tests can read back what
// the real stderr sink wrote; restores the original stderr on destruction.
class CapturedStderr {
 public:
  CapturedStderr() {
    std::fflush(stderr);
    char path[] = "/tmp/superagent-stderr-XXXXXX";
    fd_ = mkstemp(path);
    path_ = path;
    saved_ = dup(STDERR_FILENO);
    dup2(fd_, STDERR_FILENO);
  }
  ~CapturedStderr() {
    Restore();
    close(fd_);
    unlink(path_.c_str());
  }
  // Device and inode of the capture file, as systemd would put them in JOURNAL_STREAM.
  std::string DevIno() const {
    struct stat st {};
    fstat(fd_, &st);
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  // Everything written so far; stderr is restored first.
  std::string Text() {
    Restore();
    std::ifstream in(path_);
    // (not istreambuf_iterator: GCC 12 -O2 -Wnull-dereference warns inside <streambuf> on it)
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  void Restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    saved_ = -1;
  }
  int fd_ = -1;
  int saved_ = -1;
  std::string path_;
};

TEST_F(LoggingJournalStreamTest, UnderJournaldLinesCarryPriorityAndNoDate) {
  std::string text;
  {
    CapturedStderr capture;
    setenv("JOURNAL_STREAM", capture.DevIno().c_str(), 1);
    SetupLogging("debug");
    spdlog::info("ticket.started {}", Kv("title", "fix typo"));
    spdlog::warn("source.slow");
    spdlog::error("effect.failed");
    spdlog::debug("eval.queued");
    text = capture.Text();
  }
  SetupLogging("info");
  EXPECT_EQ(text,
            "<6>info ticket.started title=\"fix typo\"\n"
            "<4>warning source.slow\n"
            "<3>error effect.failed\n"
            "<7>debug eval.queued\n");
}

TEST_F(LoggingJournalStreamTest, ElsewhereLinesCarryATimestampAndNoColourWhenNotATerminal) {
  std::string text;
  {
    CapturedStderr capture;
    unsetenv("JOURNAL_STREAM");
    SetupLogging("info");
    spdlog::info("panel.listening {}", Kv("listen", "127.0.0.1:8080"));
    spdlog::debug("not.shown");
    text = capture.Text();
  }
  SetupLogging("info");
  EXPECT_TRUE(std::regex_match(
      text, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d info panel\.listening listen=127\.0\.0\.1:8080\n)")))
      << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
}

TEST(LoggingTest, SetupLoggingSetsTheLevel) {
  SetupLogging("debug");
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::debug);
  SetupLogging("error");
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::err);
  std::string text;
  {
    CapturedStderr capture;
    SetupLogging("nonsense");
    text = capture.Text();
  }
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::info);
  EXPECT_NE(text.find("log.unknown_level level=nonsense using=info"), std::string::npos) << text;
  EXPECT_EQ(spdlog::default_logger()->name(), "superagent");
}

// Issue 34: an outage must not fill the log with the same warning; once a minute, with a count.
TEST(LoggingTest, AnIdenticalWarningIsWrittenOnceAMinuteWithHowManyWereHeldBack) {
  std::ostringstream out;
  auto inner = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  inner->set_pattern("%l %v");
  auto sink = OncePerMinute(inner);
  const auto t0 = spdlog::log_clock::now();
  auto line = [&](spdlog::level::level_enum level, const std::string& text, std::chrono::seconds after) {
    spdlog::details::log_msg msg(t0 + after, spdlog::source_loc{}, "superagent", level, text);
    sink->log(msg);
  };
  const std::string down = "github poll failed path=issues error=\"HTTP 502 网关错误 🙃\"";
  for (int i = 0; i < 28; ++i) line(spdlog::level::warn, down, std::chrono::seconds(i * 2));
  line(spdlog::level::warn, "another warning", std::chrono::seconds(3));
  line(spdlog::level::err, down, std::chrono::seconds(4));  // another level is another line
  line(spdlog::level::info, "trigger stored id=1", std::chrono::seconds(5));
  line(spdlog::level::info, "trigger stored id=1", std::chrono::seconds(6));  // events are never held back
  line(spdlog::level::warn, down, std::chrono::seconds(61));
  line(spdlog::level::warn, down, std::chrono::seconds(130));
  const std::string expected = "warning " + down + "\n" + "warning another warning\n" + "error " + down + "\n" +
                               "info trigger stored id=1\ninfo trigger stored id=1\n" + "warning " + down +
                               " repeated=27\n" + "warning " + down + "\n";
  EXPECT_EQ(out.str(), expected);
}

// Whatever a caller passes — a stage's cause quoting a command's stderr, a chat message — one
// record is one line: a person tails and greps lines, and journald splits on newlines.
TEST(LoggingTest, EveryRecordIsOneLineWhateverItsTextHolds) {
  std::ostringstream out;
  auto inner = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  inner->set_pattern("%l %v");
  auto sink = FilteredSink(inner);
  auto line = [&](const std::string& text) {
    sink->log(spdlog::details::log_msg(spdlog::source_loc{}, "superagent", spdlog::level::info, text));
  };
  line("ticket stage id=1 cause=\"reported blocked: exited 2. … \n/srv/x/.cache/tool: 权限不够 🙃\r\n\"");
  line("trigger stored id=1");
  EXPECT_EQ(out.str(),
            "info ticket stage id=1 cause=\"reported blocked: exited 2. … \\n/srv/x/.cache/tool: 权限不够 🙃\\r\\n\"\n"
            "info trigger stored id=1\n");
}

TEST(LoggingTest, AFloodOfDistinctWarningsStaysBoundedAndAllAreWritten) {
  std::ostringstream out;
  auto inner = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  inner->set_pattern("%v");
  auto sink = OncePerMinute(inner);
  const auto t0 = spdlog::log_clock::now();
  for (int i = 0; i < 2000; ++i) {
    const std::string text = "warning number " + std::to_string(i);
    spdlog::details::log_msg msg(t0, spdlog::source_loc{}, "superagent", spdlog::level::warn, text);
    sink->log(msg);
  }
  std::size_t lines = 0;
  for (char c : out.str()) lines += c == '\n';
  EXPECT_EQ(lines, 2000u);
}

}  // namespace
}  // namespace superagent::app
