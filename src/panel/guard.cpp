#include "panel/guard.h"

#include <cctype>
#include <random>

#include "superagent/digest.h"
#include "superagent/host_port.h"
#include "superagent/text.h"

namespace superagent::panel {

std::string HostName(std::string_view h) {
  if (!h.empty() && h.front() == '[') {
    auto close = h.find(']');
    return close == std::string_view::npos ? std::string() : std::string(h.substr(1, close - 1));
  }
  auto colon = h.rfind(':');
  if (colon != std::string_view::npos && h.find(':') == colon) h = h.substr(0, colon);
  std::string out(h);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string CheckHost(std::string_view host_header, bool token_required) {
  if (token_required || host_header.empty()) return "";
  if (IsLoopbackHost(HostName(host_header))) return "";
  return "this panel has no password, so it answers only requests to 127.0.0.1 or localhost (got Host \"" +
         std::string(host_header.substr(0, 100)) +
         "\"); open it by that address, or set panel.token_env to expose it under another name";
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;  // the length is not the secret
  unsigned diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned>(static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]));
  return diff == 0;
}


bool NeedsToken(std::string_view method, std::string_view path) {
  if (path == "/healthz" || path.rfind("/hooks/", 0) == 0) return false;
  if (method != "GET" && method != "HEAD") return true;
  if (path == "/login") return false;
  return path.rfind("/api/", 0) == 0 || path == "/api" || path == "/metrics";  // else a file of the page
}

bool CheckToken(std::string_view authorization, std::string_view token, std::string* user) {
  if (token.empty()) return false;
  auto starts = [&](std::string_view p) {
    if (authorization.size() < p.size()) return false;
    for (std::size_t i = 0; i < p.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(authorization[i])) != p[i]) return false;
    return true;
  };
  if (starts("bearer ")) return ConstantTimeEquals(authorization.substr(7), token);
  if (starts("basic ")) {
    std::string decoded = superagent::Base64Decode(authorization.substr(6)).value_or("");
    auto colon = decoded.find(':');
    if (colon == std::string::npos) return false;
    if (!ConstantTimeEquals(std::string_view(decoded).substr(colon + 1), token)) return false;
    if (user) *user = CleanName(decoded.substr(0, colon));
    return true;
  }
  return false;
}

std::string CookieValue(std::string_view token) {
  return Sha256Hex("superagent panel login cookie\n" + std::string(token));
}

bool CheckCookie(std::string_view header, std::string_view token) {
  if (token.empty()) return false;
  const std::string expected = CookieValue(token);
  bool found = false;
  while (!header.empty()) {
    std::size_t semi = header.find(';');
    std::string_view pair = header.substr(0, semi);
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = pair.substr(0, eq), value = pair.substr(eq + 1);
    if (name.substr(0, kCookiePrefix.size()) != kCookiePrefix) continue;
    found |= ConstantTimeEquals(value, expected);  // no early exit: every candidate is compared
  }
  return found;
}

std::string LoginCookie(std::string_view host_header, std::string_view token) {
  std::string name(kCookiePrefix);
  // The port: cookies are shared by every port of a host, and two daemons must not log each
  // other's browser out.
  std::size_t colon = host_header.rfind(':');
  if (colon != std::string_view::npos && host_header.find(']', colon) == std::string_view::npos) {
    std::string_view port = host_header.substr(colon + 1);
    if (!port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string_view::npos)
      name += "_" + std::string(port);
  }
  return name + "=" + CookieValue(token) + "; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000";
}

std::string CheckSameOrigin(std::string_view origin, std::string_view sec_fetch_site, std::string_view host_header) {
  if (!sec_fetch_site.empty() && sec_fetch_site != "same-origin")
    return "commands are accepted only from the panel's own page (Sec-Fetch-Site: " +
           std::string(sec_fetch_site.substr(0, 40)) + ")";
  if (origin.empty()) return "";  // not a browser (curl, tests): the CSRF token alone decides
  std::string_view rest = origin;
  if (rest.substr(0, 7) == "http://") rest.remove_prefix(7);
  else if (rest.substr(0, 8) == "https://") rest.remove_prefix(8);
  else return "commands are accepted only from the panel's own page (Origin " + std::string(origin.substr(0, 100)) + ")";
  if (rest != host_header)
    return "commands are accepted only from the panel's own page (Origin " + std::string(origin.substr(0, 100)) +
           " is not http://" + std::string(host_header.substr(0, 100)) + ")";
  return "";
}

std::string RandomToken() {
  std::random_device rd;
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 8; ++i) {
    unsigned v = rd();
    for (int j = 0; j < 8; ++j) {
      out.push_back(kHex[v & 0xF]);
      v >>= 4;
    }
  }
  return out;
}

std::string CleanName(std::string_view name) {
  while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
  std::string out;
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) continue;
    out.push_back(c);
  }
  // A name is stored and shown as JSON: valid UTF-8, at most 64 characters.
  return text::Cut(out, 64, text::Keep::kHead, "");
}

}  // namespace superagent::panel
