// Secrets from systemd credentials or the environment (app/secrets.h).
#include "app/secrets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "superagent/text.h"

namespace superagent {

namespace {

// What LoadSecrets read, by variable name; null until it ran. ResolveSecret may be called from
// any thread (a token refreshed by a Source), so the map is only ever read under the lock.
std::mutex g_mu;
std::map<std::string, std::string>* g_loaded = nullptr;

}  // namespace

std::string ResolveSecret(const std::string& env_name) {
  if (env_name.empty()) return "";
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_loaded != nullptr) {
      if (auto it = g_loaded->find(env_name); it != g_loaded->end()) return it->second;
    }
  }
  // Not loaded at start (a short command: check, doctor, init): read now. An unusable credential
  // file reads as unset here; doctor and serve report why (LoadSecrets, ReadSecret).
  auto v = app::ReadSecret(env_name);
  return v.ok() ? v->value : "";
}

namespace app {

namespace {

std::string Why(int err) { return std::strerror(err); }

// The credential directory, "" when $CREDENTIALS_DIRECTORY is unset or empty.
Result<std::string> CredentialsDirectory() {
  const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
  if (dir == nullptr || *dir == '\0') return std::string();
  struct stat st {};
  if (::stat(dir, &st) != 0)
    return Status::InvalidArgument(std::string("CREDENTIALS_DIRECTORY=") + dir + ": " + Why(errno));
  if (!S_ISDIR(st.st_mode))
    return Status::InvalidArgument(std::string("CREDENTIALS_DIRECTORY=") + dir + ": not a directory");
  return std::string(dir);
}

// The content of credential file `path` for variable `name`, checked; the messages name the
// credential and the file, never what is in it.
Result<std::string> ReadCredentialFile(const std::string& name, const std::string& path) {
  const std::string what = "credential " + name + " (" + path + ")";
  // O_NONBLOCK: a FIFO put there must not hang the start; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return Status::InvalidArgument(what + ": cannot read: " + Why(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(what + ": not a regular file");
  }
  std::string data;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::InvalidArgument(what + ": cannot read: " + Why(err));
    }
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
    if (data.size() > kMaxCredentialBytes) {
      std::fill(data.begin(), data.end(), '\0');
      ::close(fd);
      return Status::InvalidArgument(what + ": larger than " + std::to_string(kMaxCredentialBytes) +
                                     " bytes; a credential is one token or key");
    }
  }
  ::close(fd);
  // The newline an editor or `echo` leaves is not part of the secret; only one is dropped.
  if (!data.empty() && data.back() == '\n') data.pop_back();
  if (!data.empty() && data.back() == '\r') data.pop_back();
  if (data.empty()) return Status::InvalidArgument(what + ": empty; put the secret in it or remove the file");
  if (data.find('\0') != std::string::npos) return Status::InvalidArgument(what + ": holds a NUL byte");
  if (!text::IsValid(data)) return Status::InvalidArgument(what + ": not valid UTF-8 (a binary file?)");
  return data;
}

}  // namespace

Result<SecretValue> ReadSecret(const std::string& name) {
  SecretValue out;
  if (name.empty()) return out;
  auto dir = CredentialsDirectory();
  if (!dir.ok()) return dir.status();
  if (!dir->empty() && IsEnvVarName(name)) {
    const std::string path = *dir + "/" + name;
    struct stat st {};
    // lstat: a link whose target is gone is a credential that is there and broken, not absent.
    if (::lstat(path.c_str(), &st) == 0) {
      auto content = ReadCredentialFile(name, path);
      if (!content.ok()) return content.status();
      out.value = std::move(*content);
      out.origin = path;
      return out;
    }
    if (errno != ENOENT)
      return Status::InvalidArgument("credential " + name + " (" + path + "): cannot read: " + Why(errno));
  }
  if (const char* v = std::getenv(name.c_str()); v != nullptr && *v != '\0') {
    out.value = v;
    out.origin = "environment";
  }
  return out;
}

Result<std::vector<SecretOrigin>> LoadSecrets(const Config& config, bool scrub) {
  std::map<std::string, std::string> values;
  std::vector<SecretOrigin> origins;
  for (const auto& [key, name] : SecretEnvNames(config)) {
    auto v = ReadSecret(name);
    if (!v.ok()) return Status::InvalidArgument(key + ": " + v.status().message());
    values[name] = v->value;
    origins.push_back({key, name, v->origin});
  }
  if (scrub) {
    for (const auto& [name, value] : values) {
      if (std::find(config.execution.env.begin(), config.execution.env.end(), name) != config.execution.env.end())
        continue;
      // The bytes first: /proc/<pid>/environ reads the block the process was started with,
      // which unsetenv leaves as it was.
      if (char* v = std::getenv(name.c_str())) ::explicit_bzero(v, std::strlen(v));
      ::unsetenv(name.c_str());
    }
  }
  std::lock_guard<std::mutex> lock(g_mu);
  delete g_loaded;
  g_loaded = new std::map<std::string, std::string>(std::move(values));
  return origins;
}

void ForgetLoadedSecrets() {
  std::lock_guard<std::mutex> lock(g_mu);
  delete g_loaded;
  g_loaded = nullptr;
}

std::string DescribeOrigin(const std::string& origin) {
  if (origin.empty()) return "unset";
  if (origin == "environment") return "environment";
  return "credential file " + origin;
}

}  // namespace app
}  // namespace superagent
