// SHA-256, HMAC-SHA-256, lower-case hex and base64: the one place the daemon computes each
// (OpenSSL's digests, which the daemon links anyway for TLS and the GitHub App's JWT).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace superagent {

// The 32 raw bytes of SHA-256 (FIPS 180-4) of `data`.
std::string Sha256(std::string_view data);

// Lower-case hex of Sha256(data): 64 characters. Policy fingerprints, receipt uuids and content
// versions are made of it, so its output never changes.
std::string Sha256Hex(std::string_view data);

// The 32 raw bytes of HMAC-SHA-256 (RFC 2104) of `message` under `key` (any length).
std::string HmacSha256(std::string_view key, std::string_view message);

// Lower-case hex of `bytes`, two characters each.
std::string Hex(std::string_view bytes);

// RFC 4648 base64 of `bytes`: the standard alphabet with '=' padding (§4), or with `url` the
// URL-safe alphabet without padding (§5: JWTs, tokens in URLs).
std::string Base64(std::string_view bytes, bool url = false);

// The bytes `text` encodes, in either alphabet, padded or not; nullopt when it holds any other
// character, padding anywhere but at the end, or a length no encoding has (4n + 1).
std::optional<std::string> Base64Decode(std::string_view text);

// `bytes` bytes from OpenSSL's random generator as lower-case hex (two characters each); "" when
// the generator fails, which a caller treats as no token at all (it matches nothing).
std::string RandomHex(std::size_t bytes);

}  // namespace superagent
