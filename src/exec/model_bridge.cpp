// The way to the model gateway from a sandbox with no network (execution.network: off): a unix
// socket, the one thing both sides can reach. Inside, `superagent model-bridge` listens on the
// sandbox's own 127.0.0.1:<gateway's port> and carries each connection to the socket; outside,
// the gateway accepts on the socket and carries each connection to its TCP port. Both halves are
// the same byte pump: the HTTP, the pass and the budget stay the gateway's (model_gateway.cpp).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "exec/model_bridge.h"

namespace superagent::exec {

namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool WriteAll(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

void PumpBytes(int a, int b) {
  bool a_open = true, b_open = true;  // bytes may still come from that side
  char buf[64 * 1024];
  while (a_open || b_open) {
    // A side whose direction has ended is left out (-1), so its hang-up does not wake poll.
    pollfd fds[2] = {{a_open ? a : -1, POLLIN, 0}, {b_open ? b : -1, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2 && (a_open || b_open); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const int from = i == 0 ? a : b, to = i == 0 ? b : a;
      const ssize_t n = ::recv(from, buf, sizeof buf, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n == 0) {  // that side is done sending: the other reads the end, and may still answer
        (i == 0 ? a_open : b_open) = false;
        ::shutdown(to, SHUT_WR);
        continue;
      }
      if (n < 0 || !WriteAll(to, buf, static_cast<std::size_t>(n))) a_open = b_open = false;  // broken
    }
  }
}

Result<int> ListenUnix(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return Status::InvalidArgument("the gateway's socket path is empty or too long: " + path);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(Errno("socket(AF_UNIX)"));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  ::unlink(path.c_str());  // a socket left by an earlier run
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    Status s = Status::Unavailable(Errno("cannot listen on " + path));
    ::close(fd);
    return s;
  }
  // A worker of another uid (nobody, under a root daemon) connects too; the directory is what
  // the sandbox shows, and a connection still needs a pass.
  ::chmod(path.c_str(), 0666);
  return fd;
}

Result<int> ConnectUnix(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) return Status::InvalidArgument("bad socket path " + path);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(Errno("socket(AF_UNIX)"));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Status s = Status::Unavailable(Errno("cannot connect to " + path));
    ::close(fd);
    return s;
  }
  return fd;
}

Result<int> ConnectLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(Errno("socket(AF_INET)"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Status s = Status::Unavailable(Errno("cannot connect to 127.0.0.1:" + std::to_string(port)));
    ::close(fd);
    return s;
  }
  return fd;
}

Status RunModelBridge(int port, const std::string& socket_path) {
  if (port <= 0 || port > 65535) return Status::InvalidArgument("the port must be 1..65535");
  // Checked before anything listens: a path that cannot be a socket's would fail every call later.
  if (socket_path.empty() || socket_path.size() >= sizeof(sockaddr_un{}.sun_path))
    return Status::InvalidArgument("the socket path must have 1..107 bytes");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(Errno("socket(AF_INET)"));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    Status s = Status::Unavailable(Errno("cannot listen on 127.0.0.1:" + std::to_string(port)));
    ::close(fd);
    return s;
  }
  // Listening: the CLI may start now. The child serves; the parent returns so the caller's
  // script goes on. The child ends with the sandbox (its pid namespace) or its process group.
  const pid_t child = ::fork();
  if (child < 0) return Status::Unavailable(Errno("fork"));
  if (child > 0) {
    ::close(fd);
    return Status::Ok();
  }
  // The child holds none of the CLI's pipes open: whoever reads them sees their end when the CLI
  // ends, not when the sandbox does.
  if (const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    if (null > 2) ::close(null);
  }
  for (;;) {
    const int conn = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      ::_exit(1);
    }
    std::thread([conn, socket_path] {
      auto up = ConnectUnix(socket_path);
      if (!up.ok()) {
        ::close(conn);
        return;
      }
      PumpBytes(conn, *up);
      ::close(conn);
      ::close(*up);
    }).detach();
  }
}

}  // namespace superagent::exec
