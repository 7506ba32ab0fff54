#include "store/sqlite.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace superagent::store {

namespace {

bool IsBusy(int rc) { return (rc & 0xff) == SQLITE_BUSY; }

std::string BusyMessage(const std::string& what, int attempts) {
  return "sqlite: " + what + " (the database stayed busy through " + std::to_string(attempts) +
         " attempts: another process holds a lock on it)";
}

}  // namespace

struct Db::Cache {
  struct Entry {
    sqlite3_stmt* s = nullptr;
    bool in_use = false;
  };
  // Keyed by pointer: every call site passes a string literal, so the key is stable and cheap.
  // Node-based, so an Entry's address survives rehashing (handles point at `in_use`).
  std::unordered_map<const char*, Entry> by_text;
  ~Cache() {
    for (auto& [_, e] : by_text) sqlite3_finalize(e.s);
  }
};

Db::~Db() {
  delete cache_;  // finalizes every statement before closing
  if (db_) sqlite3_close(db_);
}

Status Db::Open(const std::string& path, DbOptions options) {
  options_ = std::move(options);
  int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    if (db_) { sqlite3_close(db_); db_ = nullptr; }
    return Status::IoError("cannot open database " + path + ": " + msg);
  }
  // Before any statement: the first read of a file another process is checkpointing (the WAL
  // pragma included) must wait, not fail.
  sqlite3_busy_timeout(db_, options_.busy_timeout_ms);
  sqlite3_extended_result_codes(db_, 1);
  cache_ = new Cache();
  return Status::Ok();
}

int Db::WithRetry(const std::function<int()>& attempt) {
  int rc = attempt();
  if (!IsBusy(rc)) return rc;
  // The first attempt had SQLite's busy handler (the full busy timeout). The retries are for
  // what it does not cover — a stale snapshot, a recovering WAL — so they do not wait in it
  // again: the total stays the busy timeout plus the backoff (~0.3 s by default).
  sqlite3_busy_timeout(db_, 0);
  std::chrono::milliseconds backoff = options_.first_backoff;
  for (int i = 0; i < options_.busy_retries && IsBusy(rc); ++i) {
    if (options_.sleep) options_.sleep(backoff);
    else std::this_thread::sleep_for(backoff);
    backoff *= 2;
    rc = attempt();
  }
  sqlite3_busy_timeout(db_, options_.busy_timeout_ms);
  return rc;
}

Status Db::Exec(std::string_view sql) {
  if (!db_) return Status::IoError("sqlite: database not open");
  std::string text(sql);
  // Inside a transaction a busy statement cannot be replayed alone; COMMIT is the exception
  // (SQLite keeps the transaction open when COMMIT is busy).
  const bool retryable = sqlite3_get_autocommit(db_) != 0 || text == "COMMIT";
  std::string msg;
  auto attempt = [&]() {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
    msg = err ? err : (rc == SQLITE_OK ? "" : sqlite3_errstr(rc));
    sqlite3_free(err);
    return rc;
  };
  int rc = retryable ? WithRetry(attempt) : attempt();
  if (rc == SQLITE_OK) return Status::Ok();
  if (IsBusy(rc)) return Status::Unavailable(BusyMessage(msg, retryable ? options_.busy_retries + 1 : 1));
  return Status::IoError("sqlite: " + msg);
}

Stmt Db::Prepare(const char* sql) {
  if (!db_) return Stmt(this, nullptr, nullptr, Status::IoError("sqlite: database not open"));
  auto it = cache_->by_text.find(sql);
  if (it != cache_->by_text.end() && !it->second.in_use) {
    it->second.in_use = true;
    return Stmt(this, it->second.s, &it->second.in_use, Status::Ok());
  }
  sqlite3_stmt* s = nullptr;
  const bool cache = it == cache_->by_text.end();
  int rc = WithRetry([&]() {
    return sqlite3_prepare_v3(db_, sql, -1, cache ? SQLITE_PREPARE_PERSISTENT : 0, &s, nullptr);
  });
  if (rc != SQLITE_OK) {
    // Not cached: the next call prepares again (the table may be back by then).
    std::string msg = std::string("sqlite: ") + sqlite3_errmsg(db_) + " (preparing: " + sql + ")";
    sqlite3_finalize(s);
    return Stmt(this, nullptr, nullptr, IsBusy(rc) ? Status::Unavailable(msg) : Status::IoError(msg));
  }
  if (!cache) return Stmt(this, s, nullptr, Status::Ok());  // a nested use of a statement in use
  auto [pos, _] = cache_->by_text.emplace(sql, Cache::Entry{s, true});
  return Stmt(this, s, &pos->second.in_use, Status::Ok());
}

int Db::BusyStatements() const {
  int n = 0;
  for (sqlite3_stmt* s = sqlite3_next_stmt(db_, nullptr); s; s = sqlite3_next_stmt(db_, s))
    if (sqlite3_stmt_busy(s)) ++n;
  return n;
}

Stmt::Stmt(Db* db, sqlite3_stmt* s, bool* in_use, Status status)
    : db_(db), s_(s), in_use_(in_use), status_(std::move(status)) {}

Stmt::Stmt(Stmt&& o) noexcept
    : db_(o.db_), s_(o.s_), in_use_(o.in_use_), done_(o.done_), rows_(o.rows_), status_(std::move(o.status_)) {
  o.s_ = nullptr;
  o.in_use_ = nullptr;
}

Stmt::~Stmt() { Release(); }

void Stmt::Release() {
  if (!s_) return;
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
  if (in_use_) *in_use_ = false;
  else sqlite3_finalize(s_);
  s_ = nullptr;
  in_use_ = nullptr;
}

Stmt& Stmt::Reset() {
  if (!s_) return *this;  // a statement that did not prepare keeps its error
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
  done_ = false;
  rows_ = false;
  status_ = Status::Ok();
  return *this;
}

Stmt& Stmt::Bind(int i, int64_t v) {
  if (s_) sqlite3_bind_int64(s_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, double v) {
  if (s_) sqlite3_bind_double(s_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, std::string_view v) {
  if (s_) sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::BindNull(int i) {
  if (s_) sqlite3_bind_null(s_, i);
  return *this;
}

bool Stmt::Step() {
  if (done_ || !s_ || !status_.ok()) return false;
  sqlite3* db = db_->raw();
  int attempts = 1;
  int rc = sqlite3_step(s_);
  // A busy first step in autocommit mode holds nothing yet: reset and step again. Once rows have
  // been read, or inside a transaction, a replay could repeat or lose work, so it is surfaced.
  if (IsBusy(rc) && !rows_ && sqlite3_get_autocommit(db)) {
    bool first = true;
    const int first_rc = rc;
    rc = db_->WithRetry([&]() {
      if (first) {
        first = false;
        return first_rc;
      }
      sqlite3_reset(s_);  // bindings survive a reset
      ++attempts;
      return sqlite3_step(s_);
    });
  }
  if (rc == SQLITE_ROW) {
    rows_ = true;
    return true;
  }
  done_ = true;
  if (rc != SQLITE_DONE) {
    std::string msg = sqlite3_errmsg(db);
    status_ = IsBusy(rc) ? Status::Unavailable(BusyMessage(msg, attempts)) : Status::IoError("sqlite: " + msg);
  }
  sqlite3_reset(s_);  // release read locks promptly
  return false;
}

Status Stmt::Run() {
  while (Step()) {
  }
  return status_;
}

std::string Stmt::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(s_, col);
  if (!p) return "";
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s_, col)));
}

std::optional<std::string> Stmt::OptText(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Text(col);
}

std::optional<int64_t> Stmt::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

Missing::Missing(const Stmt& s) : status(s.status()) {}

Tx::Tx(Db* db) : db_(db) {
  begin_ = db_->Exec("BEGIN IMMEDIATE");
  if (begin_.ok()) ++db_->write_transactions_;
}

Tx::~Tx() {
  if (!done_ && begin_.ok()) db_->Exec("ROLLBACK");
}

Status Tx::Commit() {
  if (!begin_.ok()) return begin_;
  done_ = true;
  Status s = db_->Exec("COMMIT");
  if (!s.ok()) db_->Exec("ROLLBACK");
  return s;
}

Result<bool> QuickCheck(Db& db, std::chrono::milliseconds budget) {
  // quick_check skips integrity_check's index-content cross-check: linear in the file. A budget
  // keeps a start-up on a large store bounded; ten findings are enough to say what is wrong.
  // The whole check is one VDBE opcode, which a progress handler never sees (SQLite 3.40 calls it
  // between opcodes): a watchdog interrupts it instead. Its mutex orders the interrupt before the
  // check's end, so it can never land on a later statement of this connection.
  struct Watchdog {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false, spent = false;
  } w;
  std::thread watchdog;
  if (budget.count() > 0) {
    watchdog = std::thread([&w, &db, budget] {
      std::unique_lock<std::mutex> lock(w.mu);
      if (w.cv.wait_for(lock, budget, [&w] { return w.done; })) return;
      w.spent = true;
      sqlite3_interrupt(db.raw());
    });
  }
  std::string findings;
  Status status;
  {
    Stmt s = db.Prepare("PRAGMA quick_check(10)");
    while (s.Step()) {
      std::string row = s.Text(0);
      if (row != "ok") findings += (findings.empty() ? "" : "; ") + row;
    }
    status = s.status();
  }
  bool spent = false;
  if (watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(w.mu);
      w.done = true;
      spent = w.spent;
    }
    w.cv.notify_all();
    watchdog.join();
  }
  if (!findings.empty()) return Status::IoError("the database is damaged: " + findings);
  if (spent) return false;
  if (status.code() == Status::Code::kUnavailable) return status;  // busy is not damage
  if (!status.ok()) return Status::IoError("the database is damaged: " + status.message());
  return true;
}

Status MakePrivate(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot open database " + path + ": " + std::strerror(errno));
  // fchmod, not open's mode: that one is filtered by the umask, and an existing file keeps its own.
  const bool ok = ::fchmod(fd, 0600) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return Status::IoError("cannot make database " + path + " private (chmod 0600): " + std::strerror(err));
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string side = path + suffix;
    if (::chmod(side.c_str(), 0600) != 0 && errno != ENOENT)
      return Status::IoError("cannot make " + side + " private (chmod 0600): " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace superagent::store
