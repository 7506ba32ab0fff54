// The HTTP client's text (http_internal.h): what a request may ask for. URLs are parsed here, and
// refused here, before anything is sent: only http and https, no space or control byte anywhere
// (header injection, request splitting), a host that is a name or an address.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "net/http_internal.h"
#include "superagent/text.h"

namespace superagent::httplib_client {
namespace {

// A byte RFC 9110's tchar allows.
bool IsTchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// A hex digit's value, or -1.
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Bytes from 0x80 up percent-encoded (what libcurl sent for a URL holding raw UTF-8); the rest,
// '%' included, as given.
std::string EncodeHighBytes(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80) {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  return out;
}

}  // namespace

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return IsTchar(static_cast<unsigned char>(c)); });
}

bool HasCrLfOrNul(std::string_view s) { return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos; }

bool HasSpaceOrControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f;
  });
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

bool IsIpLiteral(const std::string& host) {
  in6_addr v6{};
  in_addr v4{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 || inet_pton(AF_INET, host.c_str(), &v4) == 1;
}

bool SplitAuthority(std::string_view a, int default_port, HostPort* out) {
  std::string host;
  std::string_view port;
  if (!a.empty() && a.front() == '[') {
    const auto close = a.find(']');
    if (close == std::string_view::npos) return false;
    host = std::string(a.substr(1, close - 1));
    const std::string_view rest = a.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
    }
    in6_addr v6{};
    if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  } else {
    const auto colon = a.rfind(':');
    if (colon != std::string_view::npos) {
      if (a.find(':') != colon) return false;  // an IPv6 literal needs its brackets
      host = std::string(a.substr(0, colon));
      port = a.substr(colon + 1);
    } else {
      host = std::string(a);
    }
    if (host.empty()) return false;
    for (char c : host) {
      const auto u = static_cast<unsigned char>(c);
      const bool ok = (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u == '-' ||
                      u == '.' || u == '_';
      if (!ok) return false;
    }
  }
  int p = default_port;
  if (!port.empty()) {
    if (port.size() > 5) return false;
    p = 0;
    for (char c : port) {
      if (c < '0' || c > '9') return false;
      p = p * 10 + (c - '0');
    }
  }
  if (p < 1 || p > 65535) return false;
  out->host = text::AsciiLower(host);
  out->port = p;
  return true;
}

bool TakeUserinfo(std::string_view* authority, std::string* user, std::string* password) {
  const auto at = authority->rfind('@');
  if (at == std::string_view::npos) return false;
  const std::string_view userinfo = authority->substr(0, at);
  const auto colon = userinfo.find(':');
  *user = PercentDecode(userinfo.substr(0, colon));
  *password = colon == std::string_view::npos ? "" : PercentDecode(userinfo.substr(colon + 1));
  authority->remove_prefix(at + 1);
  return true;
}

std::string ParseUrl(const std::string& url, Target* t) {
  if (HasSpaceOrControl(url)) return "the URL contains a space or a control character";
  const auto sep = url.find("://");
  if (sep == std::string::npos || sep == 0) return "not an absolute http:// or https:// URL";
  const std::string scheme = text::AsciiLower(url.substr(0, sep));
  if (scheme != "http" && scheme != "https") {
    const bool plain = std::all_of(scheme.begin(), scheme.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
    });
    return plain && scheme.size() <= 32 ? "unsupported URL scheme \"" + scheme + "\": only http and https are fetched"
                                        : "unsupported URL scheme: only http and https are fetched";
  }
  t->tls = scheme == "https";
  std::string_view rest(url);
  rest.remove_prefix(sep + 3);
  const auto end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, end);
  std::string_view tail = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  t->has_userinfo = TakeUserinfo(&authority, &t->user, &t->password);
  if (!SplitAuthority(authority, t->tls ? 443 : 80, &t->at)) return "the URL's host or port is malformed";
  if (const auto hash = tail.find('#'); hash != std::string_view::npos) tail = tail.substr(0, hash);
  std::string path(tail);
  if (path.empty() || path.front() == '?') path.insert(0, "/");
  t->path = EncodeHighBytes(path);
  return "";
}

}  // namespace superagent::httplib_client
