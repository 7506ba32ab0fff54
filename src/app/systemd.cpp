#include "app/systemd.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace superagent::app {
namespace {

// A whole decimal number, or nothing: "20000x", "", "-1" are not intervals.
bool ParseUnsigned(const char* text, std::uint64_t* out) {
  if (text == nullptr || *text < '0' || *text > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

bool NotifySocketAddress(const std::string& address, const std::string& state) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // A path must fit with its terminating NUL; an abstract name ('@' becomes the leading NUL)
  // is counted by length instead.
  if (address.size() < 2 || address.size() >= sizeof addr.sun_path) return false;
  if (address[0] != '/' && address[0] != '@') return false;
  std::memcpy(addr.sun_path, address.data(), address.size());
  if (address[0] == '@') addr.sun_path[0] = '\0';
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size() +
                                               (address[0] == '@' ? 0 : 1));
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr), len);
  ::close(fd);
  return sent == static_cast<ssize_t>(state.size());
}

bool NotifyServiceManager(const std::string& state) {
  const char* address = std::getenv("NOTIFY_SOCKET");
  return address != nullptr && NotifySocketAddress(address, state);
}

std::chrono::milliseconds WatchdogKeepAliveIntervalFrom(const char* usec, const char* pid, pid_t self) {
  std::uint64_t interval = 0;
  if (!ParseUnsigned(usec, &interval) || interval == 0) return std::chrono::milliseconds(0);
  // WATCHDOG_PID names the main process; a child that inherited the environment must not
  // think the watchdog is its own.
  std::uint64_t owner = 0;
  if (pid != nullptr && (!ParseUnsigned(pid, &owner) || owner != static_cast<std::uint64_t>(self)))
    return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(std::max<std::uint64_t>(1, interval / 2000));
}

std::chrono::milliseconds WatchdogKeepAliveInterval() {
  return WatchdogKeepAliveIntervalFrom(std::getenv("WATCHDOG_USEC"), std::getenv("WATCHDOG_PID"), ::getpid());
}

}  // namespace superagent::app
