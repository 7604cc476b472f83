// Splitting one MySQL/MariaDB client's connection budget between its parts.
#include "budget.hpp"

#include <string>
#include <vector>

namespace sqlock::mysql {

sql::budget_split split_budget(const options& o) {
  std::vector<sql::budget_part> parts;
  if (o.mode == "advisory") {
    parts.push_back({o.sessions, std::to_string(o.sessions) + " sessions"});
    parts.push_back({o.waiters, std::to_string(o.waiters) + " waiters"});
  }
  return sql::split_budget("MySQL", o.max_connections, o.pool, parts);
}

}  // namespace sqlock::mysql
