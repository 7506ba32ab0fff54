#include "superagent/digest.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace superagent {

std::string Sha256(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // Fails only when OpenSSL cannot allocate: then nothing the daemon does would work either.
  if (EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr) != 1) return std::string();
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string Sha256Hex(std::string_view data) { return Hex(Sha256(data)); }

std::string HmacSha256(std::string_view key, std::string_view message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
           message.size(), out, &len) == nullptr)
    return std::string();
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xF]);
  }
  return out;
}

std::string RandomHex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  if (bytes == 0 || RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) return "";
  std::string out = Hex(raw);
  OPENSSL_cleanse(raw.data(), raw.size());
  return out;
}

}  // namespace superagent
