// docs/007's table of log lines is what a person greps for at 3 a.m.: every event it lists must
// be one the daemon's code writes (issue 24). Each documented line's event — its words before the
// first key=value — must open a log format string somewhere under src/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;

std::string ReadDocFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The event words of a documented line: "trigger stored id=… source=…" → "trigger stored";
// "ticket stopped … by=…" → "ticket stopped"; "" when it starts with a key.
std::string EventOf(const std::string& line) {
  std::istringstream words(line);
  std::string word, event;
  while (words >> word) {
    if (word.find('=') != std::string::npos || word.find("\xE2\x80\xA6") != std::string::npos) break;
    event += (event.empty() ? "" : " ") + word;
  }
  return event;
}

TEST(LogDocs, EveryDocumentedLogEventIsWrittenByTheCode) {
  const fs::path root = SUPERAGENT_SOURCE_DIR;
  const std::string doc = ReadDocFile(root / "docs" / "007-operations.md");
  const std::size_t start = doc.find("\n## Logs\n");
  ASSERT_NE(start, std::string::npos);
  const std::size_t end = doc.find("\n## ", start + 1);
  std::string code;
  for (const auto& e : fs::recursive_directory_iterator(root / "src"))
    if (e.is_regular_file() && e.path().extension() == ".cpp") code += ReadDocFile(e.path());

  std::vector<std::string> events;
  std::istringstream lines(doc.substr(start, end - start));
  const std::regex span("`([^`]+)`");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0 || line.find("| event |") == 0 || line.rfind("|---", 0) == 0) continue;
    const std::string written = line.substr(line.find('|', 2) + 1);  // the second column
    for (std::sregex_iterator it(written.begin(), written.end(), span), stop; it != stop; ++it) {
      const std::string event = EventOf((*it)[1]);
      if (!event.empty()) events.push_back(event);
    }
  }
  ASSERT_GE(events.size(), 15u) << "the table was not read";
  for (const std::string& event : events) {
    // As a format string opens: "ticket stage id={}", "stopped", "ready {} {}".
    const bool written = code.find("(\"" + event + " ") != std::string::npos ||
                         code.find("(\"" + event + "\"") != std::string::npos ||
                         code.find("(\"" + event + "{") != std::string::npos;
    EXPECT_TRUE(written) << "docs/007 lists the log event \"" << event << "\" but no spdlog call under src/ writes it";
  }
}

}  // namespace
}  // namespace superagent::testing
