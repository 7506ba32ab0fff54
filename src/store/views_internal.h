// What the read face's two files share (views.cpp, views_domain.cpp): a read transaction held
// for a multi-query read, and the row loop that never mistakes a failed step for a short list.
#pragma once

#include "store/sqlite.h"
#include "superagent/status.h"

namespace superagent::store::views_internal {

// A read transaction for the lifetime of the object: several queries, one snapshot.
class ReadTx {
 public:
  explicit ReadTx(store::Db* db) : db_(db), begin_(db_->Exec("BEGIN")) {}
  ~ReadTx() {
    if (begin_.ok()) db_->Exec("COMMIT");
  }
  ReadTx(const ReadTx&) = delete;
  ReadTx& operator=(const ReadTx&) = delete;
  const Status& begin_status() const { return begin_; }

 private:
  store::Db* db_;
  Status begin_;
};

// Runs `read` for every row of `s`; then the statement's status, so a failed step is an error
// and never a short list.
template <typename F>
Status EachRow(Stmt& s, F&& read) {
  while (s.Step()) read(s);
  return s.status();
}

}  // namespace superagent::store::views_internal
