#include "app/data_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace superagent::app {

namespace {

std::string LockPath(const std::string& data_dir) {
  return (std::filesystem::path(data_dir) / "superagent.lock").string();
}

}  // namespace

Status SecureDataDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create data_dir " + dir + ": " + ec.message());
  // chmod, not mkdir's mode: mkdir's is filtered by the umask, and an existing directory keeps its own.
  if (::chmod(dir.c_str(), 0700) != 0)
    return Status::IoError("cannot make data_dir " + dir + " private (chmod 0700): " + std::strerror(errno));
  return Status::Ok();
}

Result<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& data_dir) {
  const std::string path = LockPath(data_dir);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot open the lock file " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err != EWOULDBLOCK)
      return Status::IoError("cannot lock " + path + ": " + std::strerror(err));
    const long pid = HolderPid(data_dir);
    return Status::Conflict("another superagent daemon (pid " + (pid > 0 ? std::to_string(pid) : std::string("unknown")) +
                            ") is serving data_dir " + data_dir + "; stop it first, or give this one its own data_dir");
  }
  // Ours now: the pid replaces whatever a previous holder left behind.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    ::close(fd);
    return Status::IoError("cannot write the pid to " + path + ": " + std::strerror(err));
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd));
}

DataDirLock::~DataDirLock() {
  // Closing releases the flock; the file stays (removing it would race a starting daemon).
  ::close(fd_);
}

long DataDirLock::HolderPid(const std::string& data_dir) {
  std::ifstream in(LockPath(data_dir));
  long pid = 0;
  if (!(in >> pid)) return 0;
  return pid;
}

}  // namespace superagent::app
