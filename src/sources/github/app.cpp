#include "superagent/digest.h"
#include "superagent/github_app.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <algorithm>
#include <memory>

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include "superagent/assign_or_return.h"
#include "superagent/json_read.h"
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


Result<std::string> AppJwt(const std::string& app_id, const std::string& private_key_pem, TimeMs now) {
  if (app_id.empty()) return Status::InvalidArgument("the App id is empty");
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(private_key_pem.data(), static_cast<int>(private_key_pem.size())));
  std::unique_ptr<EVP_PKEY, KeyFree> key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA)
    return Status::InvalidArgument("the App's private key is not an RSA private key in PEM (as GitHub gives it)");
  const std::int64_t seconds = now / 1000;
  const std::string signing_input =
      Base64(R"({"alg":"RS256","typ":"JWT"})", true) + "." +
      Base64(json{{"iat", seconds - 60}, {"exp", seconds + 9 * 60}, {"iss", app_id}}.dump(), true);
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
  return signing_input + "." + Base64(signature, true);
}

std::string AppBotLogin(const std::string& slug) { return slug + "[bot]"; }

Result<AppFacts> ReadApp(HttpClient* http, const AppAuthOptions& options, TimeMs now) {
  ASSIGN_OR_RETURN(std::string jwt, AppJwt(options.app_id, options.private_key_pem, now));
  HttpResponse r = http->Send(AppRequest("GET", Base(options.api_url) + "/app", jwt, options.user_agent));
  if (r.status != 200) return Status::Unavailable("GET /app with the App's JWT: " + Why(r));
  json body = json::parse(r.body, nullptr, false);
  AppFacts f;
  f.slug = json_read::StringOr(body, "slug");
  f.name = json_read::StringOr(body, "name");
  // A slug is what GitHub makes of the name: lower-case letters, digits and dashes. Anything else
  // would make a login the daemon cannot be mentioned by.
  const bool plain = !f.slug.empty() && f.slug.size() <= 100 &&
                     std::all_of(f.slug.begin(), f.slug.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (c >= 'A' && c <= 'Z');
                     });
  if (!plain) return Status::Unavailable("GitHub's answer to GET /app has no usable slug");
  return f;
}

Result<InstallationFacts> ReadInstallation(HttpClient* http, const AppAuthOptions& options, const std::string& repo,
                                           TimeMs now) {
  ASSIGN_OR_RETURN(std::string jwt, AppJwt(options.app_id, options.private_key_pem, now));
  // Without a repository (github.repos: installation) the installation is asked by its id.
  const std::string id = std::to_string(options.installation_id);
  const std::string path = repo.empty() ? "/app/installations/" + id : "/repos/" + repo + "/installation";
  const std::string what = repo.empty() ? "installation " + id : repo;
  HttpResponse r = http->Send(AppRequest("GET", Base(options.api_url) + path, jwt, options.user_agent));
  if (r.status == 404) return Status::NotFound(repo.empty() ? "the App has no installation " + id : "the App is not installed on " + repo);
  if (r.status != 200) return Status::Unavailable("finding the App's installation on " + what + " failed: " + Why(r));
  json body = json::parse(r.body, nullptr, false);
  InstallationFacts f;
  f.id = json_read::IntOr(body, "id", 0);
  if (f.id <= 0) return Status::Unavailable("GitHub's installation answer for " + what + " has no id");
  if (body.contains("permissions") && body["permissions"].is_object()) f.permissions = body["permissions"];
  if (body.contains("events") && body["events"].is_array())
    for (const json& e : body["events"])
      if (e.is_string()) f.events.push_back(e.get<std::string>());
  return f;
}

std::vector<std::string> MissingAppPermissions(const json& granted) {
  // What each part of the daemon does with them: read and answer discussions (issues), open and
  // merge pull requests (pull_requests), push Ticket branches (contents), show a Ticket's stage
  // on its PR (checks); metadata every App has.
  static const std::pair<const char*, const char*> kNeeded[] = {
      {"issues", "write"}, {"pull_requests", "write"}, {"contents", "write"}, {"checks", "write"}, {"metadata", "read"}};
  std::vector<std::string> missing;
  for (const auto& [name, level] : kNeeded) {
    const std::string have = json_read::StringOr(granted, name);
    const bool enough = have == "write" || have == "admin" || (std::string(level) == "read" && have == "read");
    if (!enough) missing.push_back(std::string(name) + ": " + level);
  }
  return missing;
}

InstallationTokens::InstallationTokens(HttpClient* http, Clock* clock, AppAuthOptions options)
    : http_(http), clock_(clock), options_(std::move(options)) {}

InstallationTokens::InstallationTokens(std::unique_ptr<HttpClient> http, Clock* clock, AppAuthOptions options)
    : owned_http_(std::move(http)), http_(owned_http_.get()), clock_(clock), options_(std::move(options)) {}

Result<std::string> InstallationTokens::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  const TimeMs now = clock_->NowMs();
  if (!token_.empty() && expires_at_ - now > options_.refresh_before_ms) return token_;
  token_.clear();
  if (options_.installation_id <= 0) {
    if (options_.repo.empty()) return Status::InvalidArgument("the App's installation id is not known");
    ASSIGN_OR_RETURN(InstallationFacts found, ReadInstallation(http_, options_, options_.repo, now));
    options_.installation_id = found.id;
    spdlog::info("github app installation id={} repo={}", found.id, options_.repo);
  }
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
  const std::string token = json_read::StringOr(body, "token");
  if (token.empty() || !ParseTime(json_read::StringOr(body, "expires_at"), &expires))
    return Status::Unavailable("GitHub's installation token answer has no token or no expires_at");
  token_ = token;
  expires_at_ = expires;
  // Before anyone can use it: the filter knows the token from the moment it exists. The newest
  // few are kept (one is issued an hour), so a token that was just replaced is still caught.
  if (options_.secrets != nullptr) options_.secrets->Learn("github installation token", token_, 4);
  return token_;
}

void InstallationTokens::Invalidate() {
  std::lock_guard<std::mutex> lock(mu_);
  token_.clear();
  expires_at_ = 0;
}

Result<std::string> InstallationTokens::BotLogin() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!bot_login_.empty()) return bot_login_;
  ASSIGN_OR_RETURN(AppFacts app, ReadApp(http_, options_, clock_->NowMs()));
  bot_login_ = AppBotLogin(app.slug);
  return bot_login_;
}

int InstallationTokens::exchanges() const {
  std::lock_guard<std::mutex> lock(mu_);
  return exchanges_;
}

}  // namespace superagent::github
