// The one SHA-256, HMAC-SHA-256 and hex of the daemon (superagent/digest.h): policy fingerprints,
// receipt uuids, content versions and webhook signatures are made of them, so their output must
// be the standard's, byte for byte.
#include <gtest/gtest.h>

#include <string>

#include "superagent/digest.h"

namespace superagent {
namespace {

TEST(Digest, Sha256KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 55, 56 and 64 bytes straddle the one/two padding block boundary.
  EXPECT_EQ(Sha256Hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(Sha256Hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(Sha256Hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Digest, HmacSha256KnownVectorsOfRfc4231) {
  // Test case 2: a key shorter than the block.
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block is hashed first.
  EXPECT_EQ(Hex(HmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  // An empty key and message are valid input, not an error.
  EXPECT_EQ(Hex(HmacSha256("", "")), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(Digest, RawAndHexAgreeOnAnyBytes) {
  const std::string bytes("\x00\xff\x10 \xe4\xb8\xad\xf0\x9f\x99\x8f", 11);  // NUL, 0xff, 中, 🙏
  EXPECT_EQ(Hex(bytes), "00ff1020e4b8adf09f998f");
  EXPECT_EQ(Hex(""), "");
  EXPECT_EQ(Sha256(bytes).size(), 32u);
  EXPECT_EQ(Hex(Sha256(bytes)), Sha256Hex(bytes));
}

// RFC 4648 §10's vectors, both alphabets; the one encoder of the daemon (git's Basic header, the
// GitHub App's JWT, the gateway's passes, the Feishu long connection's acknowledgements).
TEST(Digest, Base64IsRfc4648InBothAlphabets) {
  const std::pair<std::string, std::string> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [bytes, encoded] : vectors) {
    EXPECT_EQ(Base64(bytes), encoded);
    std::string unpadded = encoded;
    while (!unpadded.empty() && unpadded.back() == '=') unpadded.pop_back();
    EXPECT_EQ(Base64(bytes, true), unpadded);
    EXPECT_EQ(Base64Decode(encoded), bytes);
    EXPECT_EQ(Base64Decode(unpadded), bytes);
  }
  EXPECT_EQ(Base64("\xfb\xff\xbf"), "+/+/");
  EXPECT_EQ(Base64("\xfb\xff\xbf", true), "-_-_");
  EXPECT_EQ(Base64(R"({"alg":"RS256","typ":"JWT"})", true), "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9");
  EXPECT_EQ(Base64Decode("-_-_"), "\xfb\xff\xbf");
}

TEST(Digest, Base64DecodeRefusesWhatNoEncoderWrites) {
  for (const std::string& bad : {std::string("Zg="), std::string("Z"), std::string("Zm9vY"), std::string("Zm=9"),
                                 std::string("Zm9v="), std::string("Zm9v===="), std::string("Zg== "), std::string(" Zg=="),
                                 std::string("Zg\n=="), std::string("汉字"), std::string("Zm\0v", 4)})
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  // Any bytes survive the round trip, NUL and invalid UTF-8 included.
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (std::size_t n = 0; n <= all.size(); n += 37) {
    EXPECT_EQ(Base64Decode(Base64(all.substr(0, n))), all.substr(0, n));
    EXPECT_EQ(Base64Decode(Base64(all.substr(0, n), true)), all.substr(0, n));
  }
}

}  // namespace
}  // namespace superagent
