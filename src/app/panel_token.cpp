#include "app/panel_token.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "superagent/digest.h"
#include "superagent/host_port.h"

namespace superagent::app {

namespace {

constexpr std::size_t kTokenBytes = 32;

// 32 bytes from the kernel's CSPRNG (getrandom blocks only until it is seeded, once per boot).
Result<std::string> NewToken() {
  unsigned char bytes[kTokenBytes];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError(std::string("cannot get random bytes for the panel token: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  return Hex(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

// A token a login URL can carry as it is: 32..256 characters of [A-Za-z0-9._~-].
bool Plausible(const std::string& t) {
  if (t.size() < 32 || t.size() > 256) return false;
  for (char c : t)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '~' || c == '-'))
      return false;
  return true;
}

// Reads the token file; `narrow` makes a wider mode 0600. NotFound when absent.
Result<std::string> ReadTokenFile(const std::string& path, bool narrow) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("there is no panel token yet (" + path + "): start `superagent serve` once, it makes one");
    return Status::IoError("cannot read the panel token " + path + ": " + std::strerror(errno));
  }
  struct stat st;
  std::string text;
  Status status = Status::Ok();
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    status = Status::IoError("the panel token " + path + " is not a regular file");
  } else if (st.st_uid != ::geteuid()) {
    status = Status::IoError("the panel token " + path + " belongs to another user (uid " + std::to_string(st.st_uid) +
                             "); it must be the daemon's own");
  } else {
    if (narrow && (st.st_mode & 077) != 0 && ::fchmod(fd, 0600) != 0)
      status = Status::IoError("cannot make the panel token " + path + " private (chmod 0600): " + std::strerror(errno));
    char buf[512];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      if (text.size() > 4096) break;
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (!Plausible(text))
    return Status::InvalidArgument("the panel token " + path +
                                   " does not hold a token (32 to 256 letters, digits, '.', '_', '~' or '-'); "
                                   "delete it and start `superagent serve` to make a new one");
  return text;
}

Status CreateTokenFile(const std::string& data_dir, const std::string& path) {
  auto token = NewToken();
  if (!token.ok()) return token.status();
  const std::string tmp = (std::filesystem::path(data_dir) / (".panel.token." + std::to_string(::getpid()) + ".tmp")).string();
  ::unlink(tmp.c_str());  // a leftover of a crashed start of this pid; never a link followed
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot create the panel token " + tmp + ": " + std::strerror(errno));
  const std::string line = *token + "\n";
  // fchmod: the mode given to open is filtered by the umask, which may take the owner's write bit.
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
            ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return Status::IoError("cannot write the panel token " + tmp + ": " + std::strerror(err));
  }
  // link() fails with EEXIST when another starter won: its token is the one, and ours goes.
  const int linked = ::link(tmp.c_str(), path.c_str());
  const int link_err = errno;
  ::unlink(tmp.c_str());
  if (linked != 0 && link_err != EEXIST)
    return Status::IoError("cannot create the panel token " + path + ": " + std::strerror(link_err));
  if (int dir = ::open(data_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);  // the new name survives a power cut
    ::close(dir);
  }
  return Status::Ok();
}

std::string PercentEncode(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '~' ||
        c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

}  // namespace

std::string PanelTokenPath(const std::string& data_dir) {
  return (std::filesystem::path(data_dir) / "panel.token").string();
}

Result<std::string> LoadOrCreatePanelToken(const std::string& data_dir) {
  const std::string path = PanelTokenPath(data_dir);
  auto existing = ReadTokenFile(path, /*narrow=*/true);
  if (existing.status().code() != Status::Code::kNotFound) return existing;
  if (Status s = CreateTokenFile(data_dir, path); !s.ok()) return s;
  return ReadTokenFile(path, /*narrow=*/true);
}

Result<std::string> ReadPanelToken(const std::string& data_dir) {
  return ReadTokenFile(PanelTokenPath(data_dir), /*narrow=*/false);
}

Result<std::string> PanelCredential(const Config& config, bool create) {
  if (!config.panel.token_env.empty()) {
    std::string password = ResolveSecret(config.panel.token_env);
    if (password.empty())
      return Status::InvalidArgument("panel.token_env names " + config.panel.token_env +
                                     ", which is unset or empty: export the panel password in that variable");
    return password;
  }
  return create ? LoadOrCreatePanelToken(config.data_dir) : ReadPanelToken(config.data_dir);
}

std::string PanelLoginUrl(const std::string& listen, const std::string& token) {
  std::string host = "127.0.0.1";
  int port = 8080;
  SplitHostPort(listen, &host, &port);
  // A wildcard listen answers on loopback too; the link is for a browser on this host.
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port) + "/login?token=" + PercentEncode(token);
}

}  // namespace superagent::app
