// Whether a process runs, seen from the outside as a person would look (tests only).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace superagent::testing {

// Whether a process whose command line holds `needle` runs (any pid namespace: /proc shows all).
inline bool ProcessRunning(const std::string& needle) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // read(2), not a stream: a process that exits between open and read makes the read fail
    // with ESRCH, which libstdc++'s filebuf throws as an exception; here it is simply gone.
    std::string cmdline;
    const int fd = ::open((entry.path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) cmdline.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace superagent::testing
