// SHA-256 of a byte string, for Policy fingerprints. Small and dependency-free on purpose: the
// fingerprint only has to be stable and collision-resistant, not fast, and pulling in a crypto
// library for one digest is not worth a new dependency.
#pragma once

#include <string>
#include <string_view>

namespace superagent {

// Lower-case hex SHA-256 (FIPS 180-4) of `data`: 64 characters.
std::string Sha256Hex(std::string_view data);

}  // namespace superagent
