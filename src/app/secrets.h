// Where the daemon's secrets come from (issue 33 item 6). Each *_env key of the config names a
// variable, e.g. GITHUB_TOKEN. Its value is read
//   1. from $CREDENTIALS_DIRECTORY/GITHUB_TOKEN when that file exists: systemd's convention
//      (LoadCredential=GITHUB_TOKEN:/etc/superagent/credentials/GITHUB_TOKEN in the unit), one
//      file per credential, named by its id, readable only by the service and never part of
//      its environment;
//   2. else from the environment (EnvironmentFile=, or a shell's export, on other hosts).
// A long-running process (serve) reads them all once at start (LoadSecrets) and removes them
// from its environment; ResolveSecret (config.h) then answers from what was read.
//
// Only app/ reads the environment or credential files (cmake/check_modules.sh): the modules get
// secret values in their Options.
#pragma once

#include <string>
#include <vector>

#include "app/config.h"
#include "superagent/status.h"

namespace superagent::app {

// A credential file larger than this is refused: the largest secret the daemon takes (a GitHub
// App's PEM key) is a few KiB.
inline constexpr std::size_t kMaxCredentialBytes = 64 * 1024;

// One secret as read: its value and where it came from. `origin` is the credential file's path,
// "environment", or "" when the variable is set nowhere (then `value` is empty too).
struct SecretValue {
  std::string value;
  std::string origin;
};

// Reads variable `name`: the file $CREDENTIALS_DIRECTORY/<name> when $CREDENTIALS_DIRECTORY is
// set and that file exists (one trailing "\n" or "\r\n" is dropped), else the environment.
// A credential file that exists but cannot be used is an error naming the credential and the
// file, never its content: unreadable (or a dangling link), not a regular file, empty, larger
// than kMaxCredentialBytes, holding a NUL byte or not UTF-8. So is a $CREDENTIALS_DIRECTORY
// that is not a readable directory. An empty environment variable counts as unset.
Result<SecretValue> ReadSecret(const std::string& name);

// What LoadSecrets found for one *_env key (for doctor and the start-up log: never the value).
struct SecretOrigin {
  std::string key;     // "github.token_env"
  std::string name;    // "GITHUB_TOKEN"
  std::string origin;  // as SecretValue::origin
};

// Reads every secret `config` names (SecretEnvNames) with ReadSecret and keeps the values for
// ResolveSecret, which from then on answers from them (a name the config does not name is still
// read on demand). With `scrub`, each variable read is then removed from the process's
// environment: its value's bytes are overwritten in place first, because unsetenv only drops
// the pointer from `environ` and /proc/<pid>/environ shows the block the process started with,
// where the bytes stay. Variables execution.env lists are left in place (the team passes them
// to workers on purpose; `check` warns). The first unusable credential fails the whole load,
// naming its key. Not thread-safe: call at start, before any thread reads a secret.
Result<std::vector<SecretOrigin>> LoadSecrets(const Config& config, bool scrub);

// Forgets what LoadSecrets kept: ResolveSecret reads on demand again (tests).
void ForgetLoadedSecrets();

// "$CREDENTIALS_DIRECTORY/NAME" for a credential file's path, "environment" or "unset": how
// doctor and the log show an origin.
std::string DescribeOrigin(const std::string& origin);

}  // namespace superagent::app
