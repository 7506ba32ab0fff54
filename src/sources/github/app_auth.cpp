#include "sources/github/app_auth.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>

#include <nlohmann/json.hpp>

#include "superagent/assign_or_return.h"
#include "superagent/text.h"

namespace superagent::github {

namespace {

using nlohmann::json;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string Base(const std::string& api_url) {
  std::string b = api_url;
  while (!b.empty() && b.back() == '/') b.pop_back();
  return b;
}

HttpRequest AppRequest(const std::string& method, const std::string& url, const std::string& jwt_or_token,
                       const std::string& user_agent) {
  HttpRequest r;
  r.method = method;
  r.url = url;
  r.headers = {{"Accept", "application/vnd.github+json"},
               {"Authorization", "Bearer " + jwt_or_token},
               {"X-GitHub-Api-Version", "2022-11-28"},
               {"User-Agent", user_agent}};
  return r;
}

// GitHub's error message from a JSON body, or the status.
std::string Why(const HttpResponse& r) {
  if (r.status == 0) return r.error.empty() ? "no answer" : r.error;
  json b = json::parse(r.body, nullptr, false);
  std::string message = b.is_object() && b.contains("message") && b["message"].is_string() ? b["message"].get<std::string>() : "";
  return "HTTP " + std::to_string(r.status) + (message.empty() ? "" : ": " + text::Cut(text::Repair(message), 200));
}

}  // namespace

std::string Base64Url(std::string_view bytes) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out += kAlphabet[(v >> s) & 63];
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    for (int s : {18, 12, 6}) out += kAlphabet[(v >> s) & 63];
  }
  return out;
}

Result<std::string> AppJwt(const std::string& app_id, const std::string& private_key_pem, TimeMs now) {
  if (app_id.empty()) return Status::InvalidArgument("the App id is empty");
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())));
  std::unique_ptr<EVP_PKEY, KeyFree> key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA)
    return Status::InvalidArgument("the App's private key is not an RSA private key in PEM (as GitHub gives it)");
  const std::int64_t seconds = now / 1000;
  const std::string signing_input =
      Base64Url(R"({"alg":"RS256","typ":"JWT"})") + "." +
      Base64Url(json{{"iat", seconds - 60}, {"exp", seconds + 9 * 60}, {"iss", app_id}}.dump());
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  std::size_t length = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSignUpdate(ctx.get(), signing_input.data(), signing_input.size()) != 1 ||
      EVP_DigestSignFinal(ctx.get(), nullptr, &length) != 1)
    return Status::Internal("signing the App's JWT failed");
  std::string signature(length, '\0');
  if (EVP_DigestSignFinal(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length) != 1)
    return Status::Internal("signing the App's JWT failed");
  signature.resize(length);
  return signing_input + "." + Base64Url(signature);
}

InstallationTokens::InstallationTokens(HttpClient* http, Clock* clock, AppAuthOptions options)
    : http_(http), clock_(clock), options_(std::move(options)) {}

Result<std::string> InstallationTokens::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  if (!token_.empty() && expires_at_ - now > options_.refresh_before_ms) return token_;
  token_.clear();
  if (options_.installation_id <= 0) return Status::InvalidArgument("the App's installation id is not known");
  ASSIGN_OR_RETURN(std::string jwt, AppJwt(options_.app_id, options_.private_key_pem, now));
  HttpResponse r = http_->Send(AppRequest(
      "POST", Base(options_.api_url) + "/app/installations/" + std::to_string(options_.installation_id) + "/access_tokens",
      jwt, options_.user_agent));
  ++exchanges_;
  if (r.status != 201 && r.status != 200)
    return Status::Unavailable("an installation token for installation " + std::to_string(options_.installation_id) +
                               " was refused: " + Why(r));
  json body = json::parse(r.body, nullptr, false);
  TimeMs expires = 0;
  if (!body.is_object() || !body.contains("token") || !body["token"].is_string() || body["token"].get<std::string>().empty() ||
      !body.contains("expires_at") || !body["expires_at"].is_string() || !ParseTime(body["expires_at"].get<std::string>(), &expires))
    return Status::Unavailable("GitHub's installation token answer has no token or no expires_at");
  token_ = body["token"].get<std::string>();
  expires_at_ = expires;
  return token_;
}

void InstallationTokens::Invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  token_.clear();
  expires_at_ = 0;
}

int InstallationTokens::exchanges() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exchanges_;
}

Result<std::int64_t> DiscoverInstallation(HttpClient* http, const AppAuthOptions& options, const std::string& repo,
                                          TimeMs now) {
  ASSIGN_OR_RETURN(std::string jwt, AppJwt(options.app_id, options.private_key_pem, now));
  HttpResponse r = http->Send(AppRequest("GET", Base(options.api_url) + "/repos/" + repo + "/installation", jwt,
                                         options.user_agent));
  if (r.status == 404) return Status::NotFound("the App is not installed on " + repo);
  if (r.status != 200) return Status::Unavailable("finding the App's installation on " + repo + " failed: " + Why(r));
  json body = json::parse(r.body, nullptr, false);
  if (!body.is_object() || !body.contains("id") || !body["id"].is_number_integer())
    return Status::Unavailable("GitHub's installation answer for " + repo + " has no id");
  return body["id"].get<std::int64_t>();
}

}  // namespace superagent::github
