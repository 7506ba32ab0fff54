// The HTTP callback's crypto, as the Feishu docs and the official SDKs define it: the body is
// AES-256-CBC under SHA-256(encrypt key) with the IV in front, base64-encoded; the signature is
// plain SHA-256 (not HMAC) over timestamp + nonce + encrypt key + the raw body.
#include <openssl/evp.h>

#include <memory>

#include "superagent/digest.h"
#include "superagent/feishu.h"
#include "sources/feishu/source.h"

namespace superagent::feishu {

namespace {

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

}  // namespace

Result<std::string> Decrypt(const std::string& encrypt_key, const std::string& encrypted_base64) {
  std::string b64;
  for (char c : encrypted_base64)
    if (c != '\n' && c != '\r' && c != ' ') b64.push_back(c);
  if (b64.empty() || b64.size() % 4 != 0) return Status::InvalidArgument("encrypt: not base64");
  std::string raw(b64.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(raw.data()),
                          reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  if (n < 0) return Status::InvalidArgument("encrypt: not base64");
  // EVP_DecodeBlock counts padding bytes as data; '=' at the end removes them again.
  std::size_t len = static_cast<std::size_t>(n);
  if (b64.back() == '=') --len;
  if (b64.size() >= 2 && b64[b64.size() - 2] == '=') --len;
  raw.resize(len);
  if (raw.size() < 32 || (raw.size() - 16) % 16 != 0)
    return Status::InvalidArgument("encrypt: wrong length for AES-256-CBC with IV");
  const std::string key = Sha256(encrypt_key);
  CipherCtx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  std::string out(raw.size(), '\0');
  int l1 = 0, l2 = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(raw.data());
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_cbc(), nullptr,
                                 reinterpret_cast<const unsigned char*>(key.data()), in) != 1 ||
      EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &l1, in + 16,
                        static_cast<int>(raw.size() - 16)) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + l1, &l2) != 1)
    return Status::InvalidArgument("encrypt: does not decrypt with the configured encrypt key");
  out.resize(static_cast<std::size_t>(l1 + l2));
  return out;
}

std::string Encrypt(const std::string& encrypt_key, const std::string& plaintext, const std::string& iv16) {
  const std::string key = Sha256(encrypt_key);
  std::string iv = iv16;
  iv.resize(16, '\0');
  CipherCtx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  std::string out(plaintext.size() + 32, '\0');
  int l1 = 0, l2 = 0;
  EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_cbc(), nullptr, reinterpret_cast<const unsigned char*>(key.data()),
                     reinterpret_cast<const unsigned char*>(iv.data()));
  EVP_EncryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &l1,
                    reinterpret_cast<const unsigned char*>(plaintext.data()), static_cast<int>(plaintext.size()));
  EVP_EncryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + l1, &l2);
  out.resize(static_cast<std::size_t>(l1 + l2));
  const std::string raw = iv + out;
  std::string b64(4 * ((raw.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                          reinterpret_cast<const unsigned char*>(raw.data()), static_cast<int>(raw.size()));
  b64.resize(static_cast<std::size_t>(n));
  return b64;
}

std::string CallbackSignature(const std::string& timestamp, const std::string& nonce, const std::string& encrypt_key,
                              const std::string& raw_body) {
  return Sha256Hex(timestamp + nonce + encrypt_key + raw_body);
}

}  // namespace superagent::feishu
