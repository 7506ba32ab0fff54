// GitHub App identity (issue 25): the App's JWT, signed RS256 with its private key through
// OpenSSL, the installation tokens it is exchanged for (refreshed before they expire and after a
// 401), and what GitHub says of the App and its installation. Neither the key, the JWT nor a
// token is ever logged or stored. The daemon's API calls and its `git push` both take their
// token from one InstallationTokens (app/wiring.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "superagent/clock.h"
#include "superagent/http.h"
#include "superagent/secret_filter.h"
#include "superagent/status.h"

namespace superagent::github {

// The App's JWT for `now`: {"alg":"RS256","typ":"JWT"}, iat a minute in the past (clock drift,
// as GitHub advises), exp nine minutes ahead (GitHub allows ten), iss the App id. InvalidArgument
// when `private_key_pem` is not an RSA private key in PEM; the message never quotes the key.
Result<std::string> AppJwt(const std::string& app_id, const std::string& private_key_pem, TimeMs now);

struct AppAuthOptions {
  std::string api_url = "https://api.github.com";  // GHES: https://HOST/api/v3
  std::string app_id;
  std::string private_key_pem;
  std::int64_t installation_id = 0;  // 0: found from `repo` on first use
  std::string repo;                  // "owner/name": where the installation is looked up
  std::string user_agent = "superagent";
  TimeMs refresh_before_ms = 5 * 60'000;  // a token this close to expiry is replaced
  // The outbound filter (issue 33) learns each installation token as it is issued, so a worker
  // or a peer that prints one publishes the marker. Not owned; null: none (doctor, tests).
  SecretFilter* secrets = nullptr;
};

// The login an App's installation writes as: "<slug>[bot]".
std::string AppBotLogin(const std::string& slug);

// What GET /app (with the JWT) says of the App.
struct AppFacts {
  std::string slug;
  std::string name;
};
Result<AppFacts> ReadApp(HttpClient* http, const AppAuthOptions& options, TimeMs now);

// What GET /repos/{owner}/{name}/installation (with the JWT) says: NotFound when the App is not
// installed on `repo`.
struct InstallationFacts {
  std::int64_t id = 0;
  nlohmann::json permissions = nlohmann::json::object();  // {"issues": "write", …}
  std::vector<std::string> events;                        // webhook events it is subscribed to
};
// The App's installation on `repo` (GET /repos/{repo}/installation), or with `repo` empty the
// installation options.installation_id (GET /app/installations/{id}: github.repos: installation).
// NotFound when the App is not installed there.
Result<InstallationFacts> ReadInstallation(HttpClient* http, const AppAuthOptions& options, const std::string& repo,
                                           TimeMs now);

// The permissions the daemon needs ("issues: write", "pull_requests: write", "contents: write",
// "checks: write", "metadata: read") that `granted` lacks, in that order; empty when none.
std::vector<std::string> MissingAppPermissions(const nlohmann::json& granted);

// The installation token the daemon acts with, and the App's login. Thread-safe; `clock` (and
// `http` when borrowed) must outlive it.
class InstallationTokens {
 public:
  InstallationTokens(HttpClient* http, Clock* clock, AppAuthOptions options);
  InstallationTokens(std::unique_ptr<HttpClient> http, Clock* clock, AppAuthOptions options);
  // A token valid for at least refresh_before_ms more: the one held, or a new one from
  // POST /app/installations/{id}/access_tokens (the id found first when not configured). An
  // error says what GitHub answered.
  Result<std::string> Token();
  // Forgets the token held (GitHub answered 401 to it): the next Token() asks for a new one.
  void Invalidate();
  // AppBotLogin of GET /app's slug, asked once and then remembered.
  Result<std::string> BotLogin();
  // Exchanges made so far (tests count them).
  int exchanges() const;

 private:
  std::unique_ptr<HttpClient> owned_http_;
  HttpClient* http_;
  Clock* clock_;
  AppAuthOptions options_;
  mutable std::mutex mu_;
  std::string token_;
  TimeMs expires_at_ = 0;
  int exchanges_ = 0;
  std::string bot_login_;
};

}  // namespace superagent::github
