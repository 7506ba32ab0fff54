// GitHub App identity (issue 25): the App's JWT, signed RS256 with its private key through
// OpenSSL, and the installation tokens it is exchanged for, refreshed before they expire and
// after a 401. Neither the key, the JWT nor a token is ever logged or stored.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "superagent/clock.h"
#include "superagent/http.h"
#include "superagent/status.h"

namespace superagent::github {

// RFC 4648 §5 base64url without padding, as JWTs use.
std::string Base64Url(std::string_view bytes);

// The App's JWT for `now`: {"alg":"RS256","typ":"JWT"}, iat a minute in the past (clock drift,
// as GitHub advises), exp nine minutes ahead (GitHub allows ten), iss the App id. InvalidArgument
// when `private_key_pem` is not an RSA private key in PEM; the message never quotes the key.
Result<std::string> AppJwt(const std::string& app_id, const std::string& private_key_pem, TimeMs now);

struct AppAuthOptions {
  std::string api_url = "https://api.github.com";  // GHES: https://HOST/api/v3
  std::string app_id;
  std::string private_key_pem;
  std::int64_t installation_id = 0;
  std::string user_agent = "superagent";
  TimeMs refresh_before_ms = 5 * 60'000;  // a token this close to expiry is replaced
};

// The installation token the daemon acts with. Thread-safe; `http` and `clock` must outlive it.
class InstallationTokens {
 public:
  InstallationTokens(HttpClient* http, Clock* clock, AppAuthOptions options);
  // A token valid for at least refresh_before_ms more: the one held, or a new one from
  // POST /app/installations/{id}/access_tokens. An error says what GitHub answered.
  Result<std::string> Token();
  // Forgets the token held (GitHub answered 401 to it): the next Token() asks for a new one.
  void Invalidate();
  // Exchanges made so far (tests and /metrics).
  int exchanges() const;

 private:
  HttpClient* http_;
  Clock* clock_;
  AppAuthOptions options_;
  mutable std::mutex mu_;
  std::string token_;
  TimeMs expires_at_ = 0;
  int exchanges_ = 0;
};

// The installation of the App on `repo` ("owner/name"): GET /repos/{owner}/{name}/installation
// with the App's JWT. NotFound when the App is not installed there.
Result<std::int64_t> DiscoverInstallation(HttpClient* http, const AppAuthOptions& options, const std::string& repo,
                                          TimeMs now);

}  // namespace superagent::github
