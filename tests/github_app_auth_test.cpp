// GitHub App identity (issue 25), its first part: the App's JWT as GitHub verifies it (RS256,
// checked here with the public key alone), installation tokens fetched, reused, refreshed before
// expiry and after a 401, under GitHub Enterprise Server's /api/v3 prefix too — against a
// loopback server speaking GitHub's App endpoints.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <atomic>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "sources/github/app_auth.h"
#include "superagent/clock.h"
#include "superagent/http.h"

namespace superagent::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

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
};

std::string FromBase64Url(std::string s) {
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

// GitHub's App endpoints on loopback, under `prefix` ("" or "/api/v3"). It verifies each JWT
// with the public key and its claims against `clock`, and hands out numbered tokens for an hour.
class FakeAppGitHub {
 public:
  FakeAppGitHub(EVP_PKEY* key, Clock* clock, std::string prefix) : key_(key), clock_(clock), prefix_(std::move(prefix)) {
    server_.Post(prefix_ + R"(/app/installations/(\d+)/access_tokens)", [this](const httplib::Request& req, httplib::Response& res) {
      std::string why;
      if (!Verify(req.get_header_value("Authorization"), &why)) return Answer(res, 401, {{"message", why}});
      if (req.matches[1] != "42") return Answer(res, 404, {{"message", "Not Found"}});
      const int n = ++issued_;
      Answer(res, 201, {{"token", "ghs_installation" + std::to_string(n)},
                        {"expires_at", FormatTime(clock_->NowMs() + 3'600'000).substr(0, 19) + "Z"},
                        {"permissions", {{"issues", "write"}, {"contents", "write"}}}});
    });
    server_.Get(prefix_ + R"(/repos/([^/]+)/([^/]+)/installation)", [this](const httplib::Request& req, httplib::Response& res) {
      std::string why;
      if (!Verify(req.get_header_value("Authorization"), &why)) return Answer(res, 401, {{"message", why}});
      if (req.matches[1] != "octo" || req.matches[2] != "hello") return Answer(res, 404, {{"message", "Not Found"}});
      Answer(res, 200, {{"id", 42}, {"app_slug", "team-agent"}, {"account", {{"login", "octo"}}}});
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeAppGitHub() {
    while (!server_.is_running()) std::this_thread::yield();
    server_.stop();
    thread_.join();
  }
  std::string api_url() const { return "http://127.0.0.1:" + std::to_string(port_) + prefix_; }
  int issued() const { return issued_; }
  std::string last_refusal;

 private:
  static void Answer(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  }
  bool Verify(const std::string& authorization, std::string* why) {
    const std::string jwt = authorization.rfind("Bearer ", 0) == 0 ? authorization.substr(7) : "";
    const std::size_t a = jwt.find('.'), b = jwt.rfind('.');
    if (a == std::string::npos || a == b) return (*why = "A JSON web token could not be decoded", last_refusal = *why, false);
    const std::string input = jwt.substr(0, b), signature = FromBase64Url(jwt.substr(b + 1));
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    const bool signed_by_key = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key_) == 1 &&
                               EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                                                reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
    EVP_MD_CTX_free(ctx);
    if (!signed_by_key) return (*why = "'Issuer' claim ('iss') must be an Integer", last_refusal = "bad signature", false);
    const json header = json::parse(FromBase64Url(jwt.substr(0, a)), nullptr, false);
    const json claims = json::parse(FromBase64Url(jwt.substr(a + 1, b - a - 1)), nullptr, false);
    const std::int64_t now = clock_->NowMs() / 1000;
    if (header.value("alg", "") != "RS256" || claims.value("iss", "") != "12345" ||
        claims.value("iat", std::int64_t{0}) > now || claims.value("exp", std::int64_t{0}) <= now ||
        claims.value("exp", std::int64_t{0}) - claims.value("iat", std::int64_t{0}) > 600)
      return (*why = "claims refused: " + claims.dump(), last_refusal = *why, false);
    return true;
  }
  EVP_PKEY* key_;
  Clock* clock_;
  std::string prefix_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> issued_{0};
};

class AppClock : public Clock {
 public:
  TimeMs NowMs() const override { return now; }
  std::atomic<TimeMs> now{1'764'900'000'000};
};

class AppAuthTest : public ::testing::TestWithParam<std::string> {
 protected:
  github::AppAuthOptions Options(const FakeAppGitHub& fake) {
    github::AppAuthOptions o;
    o.api_url = fake.api_url();
    o.app_id = "12345";
    o.private_key_pem = key_.pem;
    o.installation_id = 42;
    return o;
  }
  TestKey key_;
  AppClock clock_;
  std::unique_ptr<HttpClient> http_ = MakeCurlHttpClient("superagent-test");
};

TEST_P(AppAuthTest, AJwtGitHubVerifiesBuysATokenThatIsReusedAndRefreshedBeforeItExpires) {
  FakeAppGitHub fake(key_.key, &clock_, GetParam());
  auto installation = github::DiscoverInstallation(http_.get(), Options(fake), "octo/hello", clock_.NowMs());
  ASSERT_TRUE(installation.ok()) << installation.status().ToString() << " " << fake.last_refusal;
  EXPECT_EQ(*installation, 42);
  EXPECT_EQ(github::DiscoverInstallation(http_.get(), Options(fake), "octo/other", clock_.NowMs()).status().code(),
            Status::Code::kNotFound);

  github::InstallationTokens tokens(http_.get(), &clock_, Options(fake));
  auto first = tokens.Token();
  ASSERT_TRUE(first.ok()) << first.status().ToString() << " " << fake.last_refusal;
  EXPECT_EQ(*first, "ghs_installation1");
  clock_.now += 50 * 60'000;  // ten minutes left: still good
  EXPECT_EQ(*tokens.Token(), "ghs_installation1");
  EXPECT_EQ(fake.issued(), 1) << "a token is reused while it has time left";
  clock_.now += 6 * 60'000;  // four minutes left: replaced before it can expire mid-request
  EXPECT_EQ(*tokens.Token(), "ghs_installation2");
  tokens.Invalidate();  // GitHub answered 401 to it (revoked, or the App's permissions changed)
  EXPECT_EQ(*tokens.Token(), "ghs_installation3");
  EXPECT_EQ(tokens.exchanges(), 3);
}

INSTANTIATE_TEST_SUITE_P(ApiUrls, AppAuthTest, ::testing::Values("", "/api/v3"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param.empty() ? "github_com" : "ghes"; });

TEST_F(AppAuthTest, AWrongKeyOrAnUnknownInstallationIsRefusedSayingWhyAndNeverQuotingTheKey) {
  FakeAppGitHub fake(key_.key, &clock_, "");
  github::AppAuthOptions bad = Options(fake);
  bad.private_key_pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEnotakey\n-----END RSA PRIVATE KEY-----\n";
  auto jwt = github::AppJwt(bad.app_id, bad.private_key_pem, clock_.NowMs());
  ASSERT_FALSE(jwt.ok());
  EXPECT_THAT(jwt.status().message(), HasSubstr("not an RSA private key in PEM"));
  EXPECT_THAT(jwt.status().message(), ::testing::Not(HasSubstr("MIIE")));
  EXPECT_FALSE(github::AppJwt("", key_.pem, clock_.NowMs()).ok());

  TestKey other;  // a key GitHub does not know: the signature does not verify
  github::AppAuthOptions stranger = Options(fake);
  stranger.private_key_pem = other.pem;
  auto refused = github::InstallationTokens(http_.get(), &clock_, stranger).Token();
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("was refused: HTTP 401"));
  EXPECT_EQ(fake.last_refusal, "bad signature");

  github::AppAuthOptions elsewhere = Options(fake);
  elsewhere.installation_id = 7;
  auto missing = github::InstallationTokens(http_.get(), &clock_, elsewhere).Token();
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("installation 7 was refused: HTTP 404: Not Found"));
}

TEST(Base64Url, MatchesRfc4648WithoutPadding) {
  EXPECT_EQ(github::Base64Url(""), "");
  EXPECT_EQ(github::Base64Url("f"), "Zg");
  EXPECT_EQ(github::Base64Url("fo"), "Zm8");
  EXPECT_EQ(github::Base64Url("foo"), "Zm9v");
  EXPECT_EQ(github::Base64Url("\xfb\xff\xbf"), "-_-_");
  EXPECT_EQ(github::Base64Url(R"({"alg":"RS256","typ":"JWT"})"), "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9");
}

}  // namespace
}  // namespace superagent::testing
