// The panel token (issue 19, part 4): the credential a person presents to the panel, kept where a
// worker cannot see it. Generated at the daemon's first start as 32 random bytes in hex and kept
// in `<data_dir>/panel.token` (0600, in the 0700 data_dir that every sandbox hides); reused at
// later starts, so a login link stays good across restarts. `panel.token_env` replaces it with a
// fixed password a team chooses. `serve` prints the login link on a terminal; `superagent
// panel-url` prints it at any time.
#pragma once

#include <string>

#include "app/config.h"
#include "superagent/status.h"

namespace superagent::app {

// "<data_dir>/panel.token".
std::string PanelTokenPath(const std::string& data_dir);

// The token in `data_dir`, created when there is none: written to a temporary file opened with
// O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600 (fchmod'ed, so any umask gives 0600), synced, then
// linked into place, so no reader ever sees a partial file and two starters agree on one token.
// An existing file with wider modes is narrowed to 0600. IoError when it cannot be made or read;
// InvalidArgument when the file holds something that is not a token (the message says to delete
// it so a new one is made).
Result<std::string> LoadOrCreatePanelToken(const std::string& data_dir);

// The token in `data_dir`, never creating one. NotFound (saying to start `serve` once) when
// there is none; otherwise as LoadOrCreatePanelToken.
Result<std::string> ReadPanelToken(const std::string& data_dir);

// What the panel checks: the value of the variable named by panel.token_env when set (a fixed
// password; InvalidArgument when that variable is empty), else the token file's (created when
// `create`). Used by `serve` and by every local command that talks to the panel.
Result<std::string> PanelCredential(const Config& config, bool create);

// The one-click login link for `listen` (a wildcard address becomes the loopback one):
// "http://127.0.0.1:8080/login?token=<token>" (percent-encoded where needed).
std::string PanelLoginUrl(const std::string& listen, const std::string& token);

}  // namespace superagent::app
