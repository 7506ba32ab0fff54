// A GitHub App's key pair for tests, and the check GitHub makes of an App's JWT: the signature
// verified with the public half alone (RS256), then the claims (issuer, issued-at in the past,
// expiry in the future and at most ten minutes after issue).
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace superagent::testing {

// A fresh 2048-bit RSA key: its private half in PEM (what GitHub hands an App's owner), and the key.
struct TestKey {
  EVP_PKEY* key = nullptr;
  std::string pem;
  TestKey() {
    key = EVP_RSA_gen(2048);
    BIO* b = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    const long n = BIO_get_mem_data(b, &data);
    pem.assign(data, static_cast<std::size_t>(n));
    BIO_free(b);
  }
  ~TestKey() { EVP_PKEY_free(key); }
  TestKey(const TestKey&) = delete;
  TestKey& operator=(const TestKey&) = delete;
};

inline std::string FromBase64Url(std::string s) {
  for (char& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (s.size() % 4) s += '=';
  std::string out(s.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(s.data()),
                                static_cast<int>(s.size()));
  out.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
  while (!s.empty() && s.back() == '=' && !out.empty()) {  // DecodeBlock counts padding as zero bytes
    out.pop_back();
    s.pop_back();
  }
  return out;
}

// "" when `authorization` ("Bearer <jwt>") carries a JWT `key` signed for App `app_id` and valid
// at `now_seconds`; else why not, as a short phrase.
inline std::string RefuseAppJwt(EVP_PKEY* key, const std::string& authorization, const std::string& app_id,
                                std::int64_t now_seconds) {
  const std::string jwt = authorization.rfind("Bearer ", 0) == 0 ? authorization.substr(7) : "";
  const std::size_t a = jwt.find('.'), b = jwt.rfind('.');
  if (a == std::string::npos || a == b) return "not a JWT";
  const std::string input = jwt.substr(0, b), signature = FromBase64Url(jwt.substr(b + 1));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool signed_by_key = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
                             EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                                              signature.size(), reinterpret_cast<const unsigned char*>(input.data()),
                                              input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  if (!signed_by_key) return "bad signature";
  const nlohmann::json header = nlohmann::json::parse(FromBase64Url(jwt.substr(0, a)), nullptr, false);
  const nlohmann::json claims = nlohmann::json::parse(FromBase64Url(jwt.substr(a + 1, b - a - 1)), nullptr, false);
  if (!header.is_object() || !claims.is_object()) return "undecodable header or claims";
  const std::int64_t iat = claims.value("iat", std::int64_t{0}), exp = claims.value("exp", std::int64_t{0});
  if (header.value("alg", "") != "RS256" || claims.value("iss", "") != app_id || iat > now_seconds ||
      exp <= now_seconds || exp - iat > 600)
    return "claims refused: " + claims.dump();
  return "";
}

}  // namespace superagent::testing
