// The HTTP client's proxies (http_internal.h): which proxy a request goes through, by libcurl's
// rules over the HttpProxies the client was made with, and the CONNECT tunnel https goes through
// it by. The tunnel is ours, not httplib's: httplib's takes a refused CONNECT for the TLS server's
// garbage, and sends no credentials for a user without a password.
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "net/http_internal.h"
#include "superagent/text.h"

namespace superagent::httplib_client {
namespace {

// Parses a proxy URL, "[http://][user[:password]@]host[:port][/]" (port 1080 by default, as
// libcurl's); returns what is wrong with it, or "". Never echoes the value: it may hold a
// password.
std::string ParseProxy(std::string_view value, Proxy* p) {
  const std::string trimmed = text::Trim(value);
  std::string_view v(trimmed);
  if (HasSpaceOrControl(v)) return "contains a space or a control character";
  if (const auto sep = v.find("://"); sep != std::string_view::npos) {
    const std::string scheme = text::AsciiLower(v.substr(0, sep));
    if (scheme != "http") return "is not an http:// proxy (only http:// proxies are supported)";
    v.remove_prefix(sep + 3);
  }
  std::string_view authority = v.substr(0, v.find_first_of("/?#"));
  p->auth = TakeUserinfo(&authority, &p->user, &p->password);
  if (!SplitAuthority(authority, 1080, &p->at)) return "is not a proxy URL (http://[user:password@]host[:port])";
  return "";
}

// Whether `host` is in a no_proxy list: "*" (every host), or comma-separated names, each matching
// itself and its subdomains (".example.com" and "example.com" alike), without case; a ":port"
// after an entry is ignored. An address matches only itself.
bool NoProxyCovers(std::string_view list, const std::string& host) {
  if (text::Trim(list) == "*") return true;
  const bool address = IsIpLiteral(host);
  std::size_t start = 0;
  while (start <= list.size()) {
    auto comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    std::string entry = text::Trim(list.substr(start, comma - start));
    start = comma + 1;
    if (entry == "*") return true;
    if (!entry.empty() && entry.front() == '[') {
      const auto close = entry.find(']');
      entry = close == std::string::npos ? "" : entry.substr(1, close - 1);
    } else if (const auto colon = entry.find(':'); colon != std::string::npos && entry.find(':', colon + 1) == std::string::npos) {
      entry.resize(colon);
    }
    while (!entry.empty() && entry.front() == '.') entry.erase(0, 1);
    while (!entry.empty() && entry.back() == '.') entry.pop_back();
    entry = text::AsciiLower(entry);
    if (entry.empty()) continue;
    if (host == entry) return true;
    if (!address && host.size() > entry.size() && host.compare(host.size() - entry.size(), entry.size(), entry) == 0 &&
        host[host.size() - entry.size() - 1] == '.')
      return true;
  }
  return false;
}

}  // namespace

std::string ChooseProxy(const HttpProxies& proxies, const Target& t, std::optional<Proxy>* out) {
  out->reset();
  if (!proxies.no_proxy.empty() && NoProxyCovers(proxies.no_proxy, t.at.host)) return "";
  // The scheme's own proxy, else all_proxy's; an error names the variables the field comes from.
  const std::string& own = t.tls ? proxies.https_proxy : proxies.http_proxy;
  const std::string& value = !own.empty() ? own : proxies.all_proxy;
  if (value.empty()) return "";
  const std::string variable = own.empty() ? "all_proxy (or ALL_PROXY)"
                               : t.tls    ? "https_proxy (or HTTPS_PROXY)"
                                          : "http_proxy";
  Proxy p;
  if (std::string why = ParseProxy(value, &p); !why.empty()) return "the proxy in " + variable + " " + why;
  *out = std::move(p);
  return "";
}

bool OpenTunnel(int fd, Transfer* t, const Proxy& proxy, const std::string& target, const std::string& user_agent) {
  std::string request = "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\nUser-Agent: " + user_agent + "\r\n";
  if (proxy.auth)
    request += "Proxy-Authorization: " + httplib::make_basic_authentication_header(proxy.user, proxy.password, true).second + "\r\n";
  request += "\r\n";
  const bool connect_first = t->connect_deadline < t->deadline;
  const TimePoint until = connect_first ? t->connect_deadline : t->deadline;
  auto wait = [&](short events) {
    const int r = WaitFd(fd, events, until);
    if (r == 0) Watcher::Get().Expire(t->watch, connect_first ? Stop::kConnectTimeout : Stop::kTimeout);
    return r > 0;
  };
  for (std::size_t off = 0; off < request.size();) {
    const ssize_t r = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r > 0) {
      off += static_cast<std::size_t>(r);
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait(POLLOUT)) return false;
    } else {
      t->failure = "sending CONNECT to the proxy " + proxy.at.Show() + " failed: " + ErrnoText(errno);
      return false;
    }
  }
  // The proxy's answer, a byte at a time: what follows it is the TLS server's.
  std::string head;
  while (head.size() < 4 || head.compare(head.size() - 4, 4, "\r\n\r\n") != 0) {
    char c = 0;
    const ssize_t r = ::recv(fd, &c, 1, MSG_DONTWAIT);
    if (r == 1) {
      head += c;
      if (head.size() > 16 * 1024) {
        t->failure = "the proxy " + proxy.at.Show() + " answered CONNECT with a header larger than 16 KiB";
        return false;
      }
    } else if (r == 0) {
      t->failure = "the proxy " + proxy.at.Show() + " closed the connection during CONNECT to " + target;
      return false;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait(POLLIN)) return false;
    } else {
      t->failure = "reading the proxy " + proxy.at.Show() + "'s answer to CONNECT failed: " + ErrnoText(errno);
      return false;
    }
  }
  int status = 0;
  if (head.rfind("HTTP/1.", 0) == 0 && head.size() > 12 && head[8] == ' ') status = std::atoi(head.substr(9, 3).c_str());
  if (status < 200 || status > 299) {
    t->failure = "the proxy " + proxy.at.Show() + " refused CONNECT to " + target +
                 (status > 0 ? ": HTTP " + std::to_string(status) : ": not an HTTP answer");
    return false;
  }
  return true;
}

}  // namespace superagent::httplib_client
