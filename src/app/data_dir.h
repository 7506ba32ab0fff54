// The daemon's hold on its data_dir: one daemon per directory, and nobody else may read it.
#pragma once

#include <memory>
#include <string>

#include "superagent/status.h"

namespace superagent::app {

// Creates `dir` if needed and makes it 0700 whatever the umask (it holds the database, the
// transcripts in it and the worktrees); an existing directory with wider modes is narrowed.
Status SecureDataDir(const std::string& dir);

// An exclusive flock on `<data_dir>/superagent.lock`, held for the life of the object, with the
// holder's pid written in the file. A second daemon on the same directory would double every
// reply and race the first for the same Tickets; CLI commands (receive, explain, doctor) do not
// take it — they go through the store's transactions.
class DataDirLock {
 public:
  // Conflict naming the holder's pid when another process holds the lock.
  static Result<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

  // The pid written in the lock file of `data_dir`, or 0 when none can be read (for doctor).
  static long HolderPid(const std::string& data_dir);

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace superagent::app
