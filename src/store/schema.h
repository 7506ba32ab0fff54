#pragma once

#include <string>
#include <vector>

namespace superagent::store {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};

// All migrations in ascending version order.
const std::vector<Migration>& Migrations();

}  // namespace superagent::store
