// A thin RAII layer over the SQLite C API, private to store/. Errors become Status values;
// nothing here knows the schema.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <sqlite3.h>

#include "superagent/status.h"

namespace superagent::store {

class Stmt;

class Db {
 public:
  Db() = default;
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Opens (creating if needed) the database at `path`.
  Status Open(const std::string& path);
  // Runs one or more statements with no results.
  Status Exec(std::string_view sql);
  // Prepares `sql`; the statement is cached per text, so hot paths pay for parsing once.
  Stmt& Prepare(const char* sql);
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  int Changes() const { return sqlite3_changes(db_); }
  std::string ErrorMessage() const { return db_ ? sqlite3_errmsg(db_) : "database not open"; }
  sqlite3* raw() { return db_; }

 private:
  sqlite3* db_ = nullptr;
  struct Cache;
  Cache* cache_ = nullptr;
};

// A prepared statement. Bind with 1-based indexes, Step() until it returns false.
// Reset happens automatically on the next Bind after completion.
class Stmt {
 public:
  Stmt(Db* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Clears bindings and resets; returns *this to chain binds.
  Stmt& Reset();
  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Stmt& Bind(int i, bool v) { return Bind(i, static_cast<int64_t>(v ? 1 : 0)); }
  Stmt& Bind(int i, std::string_view v);
  Stmt& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Stmt& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  Stmt& BindNull(int i);
  Stmt& Bind(int i, const std::optional<std::string>& v) { return v ? Bind(i, *v) : BindNull(i); }
  Stmt& Bind(int i, const std::optional<int64_t>& v) { return v ? Bind(i, *v) : BindNull(i); }

  // Advances; true when a row is available. Errors are kept in status().
  bool Step();
  // Runs a statement that returns no rows; returns its status.
  Status Run();
  // Status of the last Step/Run.
  const Status& status() const { return status_; }

  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  bool Bool(int col) const { return Int(col) != 0; }
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::string Text(int col) const;
  std::optional<std::string> OptText(int col) const;
  std::optional<int64_t> OptInt(int col) const;

 private:
  Db* db_;
  sqlite3_stmt* s_;
  bool done_ = false;
  Status status_;
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

}  // namespace superagent::store
