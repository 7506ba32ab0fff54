#include "store/sqlite.h"

#include <memory>
#include <unordered_map>

namespace superagent::store {

struct Db::Cache {
  std::unordered_map<const char*, std::unique_ptr<Stmt>> by_text;
};

Db::~Db() {
  delete cache_;  // finalizes every statement before closing
  if (db_) sqlite3_close(db_);
}

Status Db::Open(const std::string& path) {
  int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    if (db_) { sqlite3_close(db_); db_ = nullptr; }
    return Status::IoError("cannot open database " + path + ": " + msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  cache_ = new Cache();
  return Status::Ok();
}

Status Db::Exec(std::string_view sql) {
  std::string text(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return Status::IoError("sqlite: " + msg);
  }
  return Status::Ok();
}

Stmt& Db::Prepare(const char* sql) {
  // Keyed by pointer: every call site passes a string literal, so the key is stable and cheap.
  auto it = cache_->by_text.find(sql);
  if (it != cache_->by_text.end()) return it->second->Reset();
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) {
    // A statement that does not prepare is a programming error in store/: fail loudly.
    throw std::logic_error(std::string("sqlite prepare failed: ") + sqlite3_errmsg(db_) + " in: " + sql);
  }
  auto [pos, _] = cache_->by_text.emplace(sql, std::make_unique<Stmt>(this, s));
  return *pos->second;
}

Stmt::~Stmt() { sqlite3_finalize(s_); }

Stmt& Stmt::Reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
  done_ = false;
  status_ = Status::Ok();
  return *this;
}

Stmt& Stmt::Bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, std::string_view v) {
  sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::BindNull(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}

bool Stmt::Step() {
  if (done_) return false;
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  done_ = true;
  if (rc != SQLITE_DONE) status_ = Status::IoError(std::string("sqlite: ") + sqlite3_errmsg(db_->raw()));
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

Tx::Tx(Db* db) : db_(db) { begin_ = db_->Exec("BEGIN IMMEDIATE"); }

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

}  // namespace superagent::store
