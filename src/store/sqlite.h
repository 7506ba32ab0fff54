// A thin RAII layer over the SQLite C API, private to store/. Errors become Status values;
// nothing here knows the schema.
//
// Two rules keep a connection from wedging when other processes write the same file (`superagent
// receive`, `explain`, `sqlite3`, a backup):
// - a statement never outlives the function that used it: Prepare returns a handle whose
//   destructor resets the statement, so no read snapshot stays open behind the caller's back (a
//   stale snapshot makes every later write fail with SQLITE_BUSY_SNAPSHOT, which no busy timeout
//   covers);
// - "busy" is retried with bounded backoff, then surfaced as an Unavailable error.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "superagent/assign_or_return.h"
#include "superagent/status.h"

namespace superagent::store {

class Stmt;

// How a connection waits for other processes' locks.
struct DbOptions {
  // SQLite's own busy handler, per attempt; set before anything else touches the file.
  int busy_timeout_ms = 5000;
  // Further attempts after a busy result, without the busy handler (it does not cover a stale
  // snapshot nor a recovering WAL); the pause doubles from `first_backoff` each time.
  int busy_retries = 6;
  std::chrono::milliseconds first_backoff{5};
  // Injected so tests need not sleep; empty means std::this_thread::sleep_for.
  std::function<void(std::chrono::milliseconds)> sleep;
};

class Db {
 public:
  Db() = default;
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Opens (creating if needed) the database at `path`; the busy timeout is in force on return.
  Status Open(const std::string& path, DbOptions options = {});
  // Runs one or more statements with no results. Busy is retried when not inside a transaction
  // (and for COMMIT, which SQLite lets one retry).
  Status Exec(std::string_view sql);
  // A handle on the statement for `sql` (cached per text pointer: pass a string literal). The
  // handle resets the statement when it goes out of scope. A statement that does not prepare
  // (a table dropped by another process …) yields a handle whose status() is the error.
  Stmt Prepare(const char* sql);
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  std::string ErrorMessage() const { return db_ ? sqlite3_errmsg(db_) : "database not open"; }
  // Statements of this connection that are mid-way (holding a read snapshot); 0 between calls.
  int BusyStatements() const;
  // Write transactions (Tx) this connection began since it was opened: the cost of a domain
  // event, which the SPEC wants to be one.
  std::int64_t WriteTransactions() const { return write_transactions_; }
  sqlite3* raw() { return db_; }

 private:
  friend class Stmt;
  friend class Tx;
  // Runs `attempt` until it returns something other than a busy code or the retries are spent.
  int WithRetry(const std::function<int()>& attempt);

  sqlite3* db_ = nullptr;
  DbOptions options_;
  std::int64_t write_transactions_ = 0;
  struct Cache;
  Cache* cache_ = nullptr;
};

// A prepared statement, borrowed from its Db until the handle goes out of scope. Bind with
// 1-based indexes, Step() until it returns false, then look at status(): false means "no more
// rows" only when status() is ok.
class Stmt {
 public:
  ~Stmt();
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&&) = delete;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Clears bindings and resets (releasing any snapshot); returns *this to chain binds.
  Stmt& Reset();
  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Stmt& Bind(int i, bool v) { return Bind(i, static_cast<int64_t>(v ? 1 : 0)); }
  Stmt& Bind(int i, double v);
  Stmt& Bind(int i, std::string_view v);
  Stmt& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Stmt& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  Stmt& BindNull(int i);
  Stmt& Bind(int i, const std::optional<std::string>& v) { return v ? Bind(i, *v) : BindNull(i); }
  Stmt& Bind(int i, const std::optional<int64_t>& v) { return v ? Bind(i, *v) : BindNull(i); }

  // Advances; true when a row is available. False at the end or on an error (kept in status()).
  bool Step();
  // Runs a statement that returns no rows; returns its status.
  Status Run();
  // Status of the preparation and of the last Step/Run.
  const Status& status() const { return status_; }

  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  bool Bool(int col) const { return Int(col) != 0; }
  double Real(int col) const { return sqlite3_column_double(s_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::string Text(int col) const;
  std::optional<std::string> OptText(int col) const;
  std::optional<int64_t> OptInt(int col) const;

 private:
  friend class Db;
  // `in_use` is the cache's flag for a cached statement (cleared on release); null when this
  // handle owns `s` (a second use of a statement already in use) and finalizes it.
  Stmt(Db* db, sqlite3_stmt* s, bool* in_use, Status status);
  void Release();

  Db* db_;
  sqlite3_stmt* s_;
  bool* in_use_;
  bool done_ = false;
  bool rows_ = false;  // a row was returned since the last reset: a busy step cannot be retried
  Status status_;
};

// What a single-row read returns when Step() found no row: "not found" (an empty optional) when
// the statement ended cleanly, its error when it failed. `return Missing(s);`
struct Missing {
  explicit Missing(const Stmt& s);
  template <typename T>
  operator Result<std::optional<T>>() const {  // NOLINT: implicit by design
    if (status.ok()) return std::optional<T>{};
    return status;
  }
  Status status;
};

// RAII transaction: BEGIN IMMEDIATE on construction, ROLLBACK unless Commit() succeeded.
class Tx {
 public:
  explicit Tx(Db* db);
  ~Tx();
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;
  const Status& begin_status() const { return begin_; }
  Status Commit();

 private:
  Db* db_;
  Status begin_;
  bool done_ = false;
};

// SQLite's `PRAGMA quick_check` on `db`: true when the whole file reads as sound, false when
// `budget` (0: none) ran out first with nothing wrong found so far, an IoError quoting SQLite's
// first findings when the file is damaged.
Result<bool> QuickCheck(Db& db, std::chrono::milliseconds budget);

// Creates the database file at `path` if needed and makes it and its -wal/-shm files 0600,
// whatever the umask: it holds every message and transcript. (SQLite gives -wal and -shm the
// database file's mode.)
Status MakePrivate(const std::string& path);

}  // namespace superagent::store
