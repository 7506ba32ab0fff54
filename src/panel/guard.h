// The panel's request checks, as pure functions so each refusal is tested precisely: DNS
// rebinding (Host), the panel token (Authorization or the login cookie), and cross-site
// commands (Origin + CSRF token).
#pragma once

#include <string>
#include <string_view>

namespace superagent::panel {

// The host name of a Host header value ("127.0.0.1:8080" → "127.0.0.1", "[::1]:80" → "::1").
std::string HostName(std::string_view host_header);

// Without a password the panel answers only requests addressed to a loopback name, so a web
// page whose DNS name is rebound to 127.0.0.1 cannot read or command it. "" when allowed,
// otherwise why not.
std::string CheckHost(std::string_view host_header, bool token_required);

// Whether a request needs the panel token. Every request does except /healthz (probes),
// /hooks/* (webhooks carry their own signature) and, for GET and HEAD only, /login (it checks
// the token itself) and the page's own files (embedded; no data). The rule is by method, not by
// a list of command routes: every POST, PUT, DELETE … on any path needs it, so a command route
// added later cannot be left open by forgetting it.
bool NeedsToken(std::string_view method, std::string_view path);

// Accepts "Basic base64(user:token)" (any user name; it becomes who gave a command) and
// "Bearer token". Compares in constant time. Returns false when missing or wrong, and always
// when `token` is empty (no token configured means nobody is let in).
bool CheckToken(std::string_view authorization, std::string_view token, std::string* user);

// The login cookie's value for `token`: a SHA-256 digest of it, so any password fits in a cookie
// and a cookie read out of a browser profile is not the token itself (it does not work as a
// Bearer token or in a login link).
std::string CookieValue(std::string_view token);

// The login cookie: true when a cookie of the `Cookie` header named kCookiePrefix… holds
// CookieValue(token) (constant time; false for an empty token). Several daemons on one host (different
// ports) each set their own cookie name, so the check accepts any of them that matches.
bool CheckCookie(std::string_view cookie_header, std::string_view token);

inline constexpr std::string_view kCookiePrefix = "superagent_panel";

// The Set-Cookie value /login sends: the token in an HttpOnly (the page's scripts never see it),
// SameSite=Strict (no other site's page or link carries it into a request) cookie named after
// the port in `host_header`, valid for 30 days.
std::string LoginCookie(std::string_view host_header, std::string_view token);

// A command must come from the panel's own page: an Origin header (browsers send one on every
// POST) must name the same host as the Host header, and Sec-Fetch-Site, when sent, must be
// same-origin. "" when allowed, otherwise why not.
std::string CheckSameOrigin(std::string_view origin, std::string_view sec_fetch_site, std::string_view host_header);

bool ConstantTimeEquals(std::string_view a, std::string_view b);
std::string RandomToken();                      // 32 random bytes, hex

// A display name a person typed: trimmed, at most 64 characters, no control characters.
// "" when nothing usable is left.
std::string CleanName(std::string_view name);

}  // namespace superagent::panel
