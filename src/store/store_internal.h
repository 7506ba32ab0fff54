// What the Store's files share besides the row readers of rows.h: kept here so an insert hands
// back its row id the same way in store.cpp and store_tickets.cpp.
#pragma once

#include <cstdint>

#include "store/sqlite.h"

namespace superagent::store::store_internal {

inline Result<std::int64_t> InsertReturningId(Db& db, Stmt& s) {
  Status st = s.Run();
  if (!st.ok()) return st;
  return db.LastInsertId();
}

}  // namespace superagent::store::store_internal
