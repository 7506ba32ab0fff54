#include "superagent/host_port.h"

namespace superagent {

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8, written as a dotted quad.
  if (host.substr(0, 4) != "127.") return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.') ++dots;
    else if (c < '0' || c > '9') return false;
  }
  return dots == 3;
}

bool SplitHostPort(std::string_view listen, std::string* host, int* port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::string_view h = listen.substr(0, colon);
  std::string_view p = listen.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  } else if (h.find(':') != std::string_view::npos) {
    return false;  // an IPv6 address must be bracketed, or the port is ambiguous
  }
  if (h.empty() || p.empty() || p.size() > 5) return false;
  int value = 0;
  for (char c : p) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 65535) return false;
  if (h.find_first_of(" \t/") != std::string_view::npos) return false;
  *host = std::string(h);
  *port = value;
  return true;
}

}  // namespace superagent
