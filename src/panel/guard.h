// The panel's request checks, as pure functions so each refusal is tested precisely: DNS
// rebinding (Host), the password (Authorization), and cross-site commands (Origin + CSRF token).
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

// Accepts "Basic base64(user:token)" (any user name; it becomes who gave a command) and
// "Bearer token". Compares in constant time. Returns false when missing or wrong.
bool CheckToken(std::string_view authorization, std::string_view token, std::string* user);

// A command must come from the panel's own page: an Origin header (browsers send one on every
// POST) must name the same host as the Host header, and Sec-Fetch-Site, when sent, must be
// same-origin. "" when allowed, otherwise why not.
std::string CheckSameOrigin(std::string_view origin, std::string_view sec_fetch_site, std::string_view host_header);

bool ConstantTimeEquals(std::string_view a, std::string_view b);
std::string Base64Decode(std::string_view in);  // "" on malformed input
std::string RandomToken();                      // 32 random bytes, hex

// A display name a person typed: trimmed, at most 64 characters, no control characters.
// "" when nothing usable is left.
std::string CleanName(std::string_view name);

}  // namespace superagent::panel
