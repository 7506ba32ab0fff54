// The HTTP client's wire (http_internal.h): the watcher thread that ends requests at their
// deadline or when cancelled, the socket waits, the response head as read, and WireStream, the
// socket httplib writes the request to and reads the answer from.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "net/http_internal.h"
#include "superagent/text.h"

namespace superagent::httplib_client {
namespace {

// How often the watcher looks at the cancel flags of the requests that have one.
constexpr std::chrono::milliseconds kCancelPoll{100};
// A response header larger than this, or a line of it longer (httplib refuses lines over 8 KiB
// itself, but only once the whole line is in memory), ends the request.
constexpr std::size_t kMaxHeadBytes = 256 * 1024;
constexpr std::size_t kMaxHeadLine = 8 * 1024 + 2;
// A status line longer than this ends the request before httplib's std::regex sees it (its
// matching recurses once per character).
constexpr std::size_t kMaxStatusLine = 1024;

}  // namespace

// ---------------------------------------------------------------------------------------------
// The watcher.

Watcher& Watcher::Get() {
  static Watcher* const watcher = new Watcher();
  return *watcher;
}

std::uint64_t Watcher::Register(TimePoint deadline, TimePoint connect_deadline, const std::atomic<bool>* cancel) {
  MutexLock lock(&mu_);
  if (!started_) {
    std::thread([this] { Run(); }).detach();
    started_ = true;
  }
  const std::uint64_t id = next_id_++;
  entries_.emplace(id, Entry{deadline, connect_deadline, cancel});
  cv_.notify_all();
  return id;
}

void Watcher::Adopt(std::uint64_t id, int fd) {
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    if (copy >= 0) ::close(copy);
    return;
  }
  Entry& e = it->second;
  if (e.fd >= 0) ::close(e.fd);  // an address httplib gave up on
  e.fd = copy;  // -1 when dup failed (no descriptor left): httplib's own timeouts still end it
  // Stopped already (while the name was being resolved): `fd` is httplib's, alive here.
  if (e.stop != Stop::kNone) ::shutdown(fd, SHUT_RDWR);
}

void Watcher::Connected(std::uint64_t id) {
  MutexLock lock(&mu_);
  if (auto it = entries_.find(id); it != entries_.end()) it->second.connected = true;
}

void Watcher::Expire(std::uint64_t id, Stop why) {
  MutexLock lock(&mu_);
  if (auto it = entries_.find(id); it != entries_.end() && it->second.stop == Stop::kNone) StopLocked(it->second, why);
}

Stop Watcher::Finish(std::uint64_t id) {
  MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Stop::kNone;
  const Stop stop = it->second.stop;
  if (it->second.fd >= 0) ::close(it->second.fd);
  entries_.erase(it);
  return stop;
}

void Watcher::StopLocked(Entry& e, Stop why) {
  e.stop = why;
  // Wakes a connect, a TLS handshake, a read or a write on the socket at once.
  if (e.fd >= 0) ::shutdown(e.fd, SHUT_RDWR);
}

// The thread: stops each request whose time has come, then sleeps until the next deadline (or
// the next look at a cancel flag), or until Register brings a new request.
void Watcher::Run() {
  pthread_setname_np(pthread_self(), "http-watcher");
  MutexLock lock(&mu_);
  MutexWaitable waitable{&mu_};
  for (;;) {
    const TimePoint now = SteadyClock::now();
    TimePoint wake = kNever;
    for (auto& entry : entries_) {
      Entry& e = entry.second;
      if (e.stop != Stop::kNone) continue;
      if (e.cancel != nullptr && e.cancel->load()) {
        StopLocked(e, Stop::kCancel);
      } else if (now >= e.deadline) {
        StopLocked(e, Stop::kTimeout);
      } else if (!e.connected && now >= e.connect_deadline) {
        StopLocked(e, Stop::kConnectTimeout);
      } else {
        wake = std::min(wake, e.deadline);
        if (!e.connected) wake = std::min(wake, e.connect_deadline);
        if (e.cancel != nullptr) wake = std::min(wake, now + kCancelPoll);
      }
    }
    if (wake == kNever) {
      cv_.wait(waitable);
    } else {
      cv_.wait_until(waitable, wake);
    }
  }
}

int WaitFd(int fd, short events, TimePoint until) {
  for (;;) {
    int ms = -1;
    if (until != kNever) {
      const auto now = SteadyClock::now();
      if (now >= until) return 0;
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
      ms = static_cast<int>(std::min<std::int64_t>(left, 60'000));
    }
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, ms);
    if (r > 0) return 1;  // ready, or an error / hang-up the next read or write reports
    if (r < 0 && errno != EINTR) return -1;
  }
}

std::string ErrnoText(int e) { return std::generic_category().message(e); }

// ---------------------------------------------------------------------------------------------
// The response head, and the stream.

void ParseHead(const std::string& raw, std::map<std::string, std::string>* headers) {
  headers->clear();
  bool expect_status = true;
  int status = 0;
  std::size_t pos = 0;
  while (pos < raw.size()) {
    const auto nl = raw.find('\n', pos);
    if (nl == std::string::npos) break;
    std::string_view line(raw.data() + pos, nl - pos);
    pos = nl + 1;
    const bool crlf = !line.empty() && line.back() == '\r';
    if (crlf) line.remove_suffix(1);
    if (expect_status) {
      headers->clear();
      const auto sp = line.find(' ');
      status = sp == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
      expect_status = false;
      continue;
    }
    if (line.empty()) {
      if (status >= 100 && status < 200) {
        expect_status = true;
        continue;
      }
      break;
    }
    if (!crlf || line.front() == ' ' || line.front() == '\t') continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    // A name is a token (RFC 9110 §5.1: no space before the colon either); another line is skipped.
    const std::string_view raw_name = line.substr(0, colon);
    if (!IsToken(raw_name)) continue;
    std::string name = text::AsciiLower(raw_name);
    // RFC 9110 §5.5: CR, LF and NUL in a value are replaced with a space, so nothing a peer sends
    // can become a line of a header the daemon sends back (an ETag in If-None-Match).
    std::string value = text::Trim(line.substr(colon + 1));
    for (char& c : value)
      if (c == '\r' || c == '\n' || c == '\0') c = ' ';
    auto [it, fresh] = headers->try_emplace(std::move(name), value);
    if (!fresh) it->second = it->second.empty() ? value : it->second + ", " + value;
  }
}

WireStream::WireStream(int fd, SSL* ssl, Transfer* t) : fd_(fd), ssl_(ssl), t_(t) {
  Watcher::Get().Connected(t_->watch);
  flags_ = ::fcntl(fd_, F_GETFL, 0);
  if (flags_ >= 0) ::fcntl(fd_, F_SETFL, flags_ | O_NONBLOCK);
}

WireStream::~WireStream() {
  if (flags_ >= 0) ::fcntl(fd_, F_SETFL, flags_);
}

bool WireStream::is_readable() const {
  if (off_ < len_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0)) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

bool WireStream::is_writable() const {
  pollfd p{fd_, POLLOUT, 0};
  return ::poll(&p, 1, 0) > 0;
}

ssize_t WireStream::read(char* ptr, size_t size) {
  if (t_->no_body) return 0;
  if (size == 0) return 0;
  if (off_ == len_) {
    const ssize_t n = Fill();
    if (n <= 0) return n;
  }
  const std::size_t n = std::min(size, len_ - off_);
  if (t_->capturing && !Capture(buf_.data() + off_, n)) return -1;
  std::memcpy(ptr, buf_.data() + off_, n);
  off_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t WireStream::write(const char* ptr, size_t size) {
  if (size == 0) return 0;
  if (ssl_ != nullptr) {
    const int n = static_cast<int>(std::min<std::size_t>(size, INT_MAX));
    for (;;) {
      const int r = SSL_write(ssl_, ptr, n);
      if (r > 0) return r;
      const int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
        if (!Wait(e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN)) return -1;
        continue;
      }
      if (e == SSL_ERROR_SYSCALL) t_->io_errno = errno;
      ERR_clear_error();
      return -1;
    }
  }
  for (;;) {
    const ssize_t r = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r >= 0) return r;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!Wait(POLLOUT)) return -1;
      continue;
    }
    t_->io_errno = errno;
    return -1;
  }
}

void WireStream::get_remote_ip_and_port(std::string& ip, int& port) const { Address(true, ip, port); }
void WireStream::get_local_ip_and_port(std::string& ip, int& port) const { Address(false, ip, port); }

// One read from the wire into buf_: its size, 0 at the end, -1 on a failure or the deadline.
ssize_t WireStream::Fill() {
  off_ = len_ = 0;
  for (;;) {
    if (ssl_ != nullptr) {
      const int r = SSL_read(ssl_, buf_.data(), static_cast<int>(buf_.size()));
      if (r > 0) return Got(static_cast<std::size_t>(r));
      const int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        if (!Wait(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT)) return -1;
        continue;
      }
      // A close without close_notify is an end too (the body's framing tells a cut one).
      const int saved = errno;
      const bool unclean_eof = (e == SSL_ERROR_SYSCALL && r == 0) ||
                               (e == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING);
      ERR_clear_error();
      if (e == SSL_ERROR_ZERO_RETURN || unclean_eof) {
        t_->eof = true;
        return 0;
      }
      if (e == SSL_ERROR_SYSCALL) t_->io_errno = saved;
      return -1;
    }
    const ssize_t r = ::recv(fd_, buf_.data(), buf_.size(), MSG_DONTWAIT);
    if (r > 0) return Got(static_cast<std::size_t>(r));
    if (r == 0) {
      t_->eof = true;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!Wait(POLLIN)) return -1;
      continue;
    }
    t_->io_errno = errno;
    return -1;
  }
}

ssize_t WireStream::Got(std::size_t n) {
  len_ = n;
  t_->bytes_in += n;
  return static_cast<ssize_t>(n);
}

// Waits for the socket until the request's deadline; at the deadline the request is stopped.
bool WireStream::Wait(short events) {
  const int r = WaitFd(fd_, events, t_->deadline);
  if (r == 0) Watcher::Get().Expire(t_->watch, Stop::kTimeout);
  if (r < 0) t_->io_errno = errno;
  return r > 0;
}

// Keeps the bytes httplib reads of the response head (it reads it a byte at a time), bounded.
bool WireStream::Capture(const char* p, std::size_t n) {
  if (t_->head.size() + n > kMaxHeadBytes) {
    t_->failure = "the response header from " + t_->where + " is larger than 256 KiB";
    return false;
  }
  for (std::size_t i = 0; i < n; ++i) {
    t_->head.push_back(p[i]);
    // Not an HTTP answer (an SSH banner, a TLS record): said at once, not after a timeout
    // waiting for a line end that may never come.
    if (t_->head.size() <= 5 && t_->head.back() != "HTTP/"[t_->head.size() - 1]) {
      t_->failure = "the answer from " + t_->where + " is not HTTP";
      return false;
    }
    if (p[i] == '\n') {
      t_->line_len = 0;
      t_->line_start = t_->head.size();
      continue;
    }
    ++t_->line_len;
    if (t_->line_len > kMaxHeadLine) {
      t_->failure = "a line of the response header from " + t_->where + " is longer than 8 KiB";
      return false;
    }
    if (t_->line_len == kMaxStatusLine + 1 && t_->head.compare(t_->line_start, 5, "HTTP/") == 0) {
      t_->failure = "the status line from " + t_->where + " is longer than 1 KiB";
      return false;
    }
  }
  return true;
}

// The address at the socket's far end (`remote`) or ours; "" and -1 when it has none.
void WireStream::Address(bool remote, std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  ip.clear();
  port = -1;
  if ((remote ? ::getpeername(fd_, sa, &len) : ::getsockname(fd_, sa, &len)) != 0) return;
  std::array<char, INET6_ADDRSTRLEN> buf{};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    if (inet_ntop(AF_INET, &in->sin_addr, buf.data(), buf.size()) != nullptr) ip = buf.data();
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    if (inet_ntop(AF_INET6, &in6->sin6_addr, buf.data(), buf.size()) != nullptr) ip = buf.data();
    port = ntohs(in6->sin6_port);
  }
}


}  // namespace superagent::httplib_client
