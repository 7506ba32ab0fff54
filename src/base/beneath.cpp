// Opening beneath a root: openat2(RESOLVE_BENEATH) where the kernel has it, an O_NOFOLLOW walk
// otherwise. include/superagent/beneath.h has the contract.
#include "superagent/beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <utility>
#include <vector>

namespace superagent::beneath {

namespace {

constexpr int kMaxLinks = 40;  // as the kernel's own limit (MAXSYMLINKS), then ELOOP

// Closes on scope exit; release() hands the descriptor over.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

std::string Outside(std::string_view rel) {
  return std::string(rel) + " leads outside the directory (a '..', an absolute path or a symbolic link pointing out)";
}

// The error for errno `err` while opening `rel`.
Status FromErrno(int err, std::string_view rel) {
  switch (err) {
    case EXDEV: return Status::InvalidArgument(Outside(rel));
    case ELOOP: return Status::InvalidArgument(std::string(rel) + " is a symbolic link (or a chain of too many)");
    case ENOENT: return Status::NotFound(std::string(rel) + " does not exist");
    default: return Status::IoError("cannot open " + std::string(rel) + ": " + std::strerror(err));
  }
}

std::deque<std::string> Components(std::string_view path) {
  std::deque<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// openat2 with the kernel's RESOLVE_BENEATH; -errno on failure (-ENOSYS: no openat2).
int OpenAt2(int root, std::string_view rel, int flags, mode_t mode) {
  struct open_how how;
  std::memset(&how, 0, sizeof how);
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;  // openat2 refuses a mode without O_CREAT
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const std::string path(rel);
  for (int attempt = 0;; ++attempt) {
    long fd = ::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    // EAGAIN: a rename or mount raced a ".." check; the kernel asks to try again.
    if ((errno == EAGAIN || errno == EINTR) && attempt < 8) continue;
    return -errno;
  }
}

// The same rules without openat2: one component at a time, each opened with O_NOFOLLOW beneath
// the directory reached so far; a symbolic link is read and its target's components are walked
// in its place (an absolute target is refused, a ".." above the root is refused).
int Walk(int root, std::string_view rel, int flags, mode_t mode) {
  if (!rel.empty() && rel.front() == '/') return -EXDEV;
  std::deque<std::string> remaining = Components(rel);
  std::vector<Fd> stack;  // the directories below the root on the way; back() is the current one
  auto cur = [&] { return stack.empty() ? root : stack.back().get(); };
  int links = 0;
  while (!remaining.empty()) {
    const std::string c = std::move(remaining.front());
    remaining.pop_front();
    const bool last = remaining.empty();
    if (c == ".") {
      if (last) break;
      continue;
    }
    if (c == "..") {
      if (stack.empty()) return -EXDEV;
      stack.pop_back();
      if (last) break;
      continue;
    }
    int last_err = 0;
    if (last) {
      int fd = ::openat(cur(), c.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode);
      if (fd >= 0) return fd;
      // The last component may be a link: ELOOP, or ENOTDIR when the caller asked for
      // O_DIRECTORY. Followed below unless the caller asked not to; anything else is the answer.
      last_err = errno;
      if ((last_err != ELOOP && last_err != ENOTDIR) || (flags & O_NOFOLLOW)) return -last_err;
    }
    Fd step(::openat(cur(), c.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (step.get() < 0) return -errno;
    struct stat st;
    if (::fstat(step.get(), &st) != 0) return -errno;
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxLinks) return -ELOOP;
      char target[4096];
      // Read through the descriptor, not the name: the link read is the one just opened.
      ssize_t n = ::readlinkat(step.get(), "", target, sizeof target);
      if (n < 0) return -errno;
      if (n == 0) return -ENOENT;
      std::string_view t(target, static_cast<std::size_t>(n));
      if (t.front() == '/') return -EXDEV;
      std::deque<std::string> expanded = Components(t);
      if (expanded.empty()) expanded.emplace_back(".");
      remaining.insert(remaining.begin(), expanded.begin(), expanded.end());
      continue;
    }
    if (last) return -last_err;  // not a link after all: the open's own error
    if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
    stack.push_back(std::move(step));
  }
  // The path ended at a directory (".", "a/..", a link to a directory).
  int fd = ::openat(cur(), ".", (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

int OpenBeneath(int root, std::string_view rel, int flags, mode_t mode, Resolver resolver) {
  if (resolver == Resolver::kAuto) {
    int fd = OpenAt2(root, rel, flags, mode);
    if (fd != -ENOSYS) return fd;
  }
  return Walk(root, rel, flags, mode);
}

Result<Fd> OpenRoot(const std::string& root) {
  Fd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return Status::IoError("cannot open the directory " + root + ": " + std::strerror(errno));
  return Result<Fd>(std::move(fd));
}

Status Check(std::string_view rel) {
  if (rel.empty()) return Status::InvalidArgument("the path is empty");
  if (rel.front() == '/') return Status::InvalidArgument(Outside(rel));
  if (rel.find('\0') != std::string_view::npos) return Status::InvalidArgument("the path contains a NUL byte");
  return Status::Ok();
}

}  // namespace

Result<int> Open(const std::string& root, std::string_view rel, int flags, mode_t mode, Resolver resolver) {
  if (Status s = Check(rel); !s.ok()) return s;
  auto dir = OpenRoot(root);
  if (!dir.ok()) return dir.status();
  int fd = OpenBeneath(dir->get(), rel, flags, mode, resolver);
  if (fd < 0) return FromErrno(-fd, rel);
  return fd;
}

Result<std::string> ReadFile(const std::string& root, std::string_view rel, Resolver resolver) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
  auto opened = Open(root, rel, O_RDONLY | O_NONBLOCK, 0, resolver);
  if (!opened.ok()) return opened.status();
  Fd fd(*opened);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::IoError("cannot read " + std::string(rel) + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(std::string(rel) + " is not a regular file");
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError("cannot read " + std::string(rel) + ": " + std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

Status WriteFile(const std::string& root, std::string_view rel, std::string_view content, Resolver resolver) {
  if (Status s = Check(rel); !s.ok()) return s;
  auto dir = OpenRoot(root);
  if (!dir.ok()) return dir.status();
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW;
  int fd = OpenBeneath(dir->get(), rel, flags, 0666, resolver);
  if (fd == -ENOENT) {
    // A parent is missing: make each missing directory, one at a time, beneath the root (each
    // parent is itself opened beneath it, so a link cannot steer a mkdir outside).
    std::deque<std::string> parts = Components(rel);
    parts.pop_back();
    std::string prefix;
    for (const std::string& part : parts) {
      const std::string parent = prefix.empty() ? "." : prefix;
      prefix += (prefix.empty() ? "" : "/") + part;
      if (part == "." || part == "..") continue;
      int parent_fd = OpenBeneath(dir->get(), parent, O_PATH | O_DIRECTORY, 0, resolver);
      if (parent_fd < 0) return FromErrno(-parent_fd, parent);
      Fd p(parent_fd);
      if (::mkdirat(p.get(), part.c_str(), 0777) != 0 && errno != EEXIST)
        return Status::IoError("cannot create the directory " + prefix + ": " + std::strerror(errno));
    }
    fd = OpenBeneath(dir->get(), rel, flags, 0666, resolver);
  }
  if (fd == -ELOOP) {
    // Name the link's target so the caller can write there if it lies inside.
    std::string target;
    const std::size_t slash = rel.rfind('/');
    const std::string parent = slash == std::string_view::npos ? "." : std::string(rel.substr(0, slash));
    const std::string name(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
    if (int p = OpenBeneath(dir->get(), parent, O_PATH | O_DIRECTORY, 0, resolver); p >= 0) {
      Fd parent_fd(p);
      char buf[4096];
      ssize_t n = ::readlinkat(parent_fd.get(), name.c_str(), buf, sizeof buf);
      if (n > 0) target.assign(buf, static_cast<std::size_t>(n));
    }
    return Status::InvalidArgument(std::string(rel) + " is a symbolic link" +
                                   (target.empty() ? std::string() : " (to " + target + ")") +
                                   "; writes never go through a link: write to the file it names, if that is inside");
  }
  if (fd < 0) return FromErrno(-fd, rel);
  Fd out(fd);
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(out.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError("cannot write " + std::string(rel) + ": " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

}  // namespace superagent::beneath
