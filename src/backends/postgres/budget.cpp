// Splitting one PostgreSQL client's connection budget: its parts, given to the SQL engine's
// split.
#include "budget.hpp"

#include <string>
#include <vector>

namespace sqlock::postgres {

connection_budget split_budget(const options& o) {
  connection_budget b;
  b.listener = o.listen ? 1 : 0;
  std::vector<sql::budget_part> parts;
  if (b.listener) parts.push_back({1, "1 listener connection"});
  // Advisory mode and the peers' advisory layouts hold locks on sessions of their own.
  const bool peer_advisory = !o.compat.empty() && o.compat != "shedlock";
  if (o.mode == "advisory" || peer_advisory) {
    b.sessions = o.sessions;
    b.waiters = o.waiters;
    parts.push_back({b.sessions, std::to_string(b.sessions) + " sessions"});
    parts.push_back({b.waiters, std::to_string(b.waiters) + " waiters"});
  }
  const auto split = sql::split_budget("PostgreSQL", o.max_connections, o.pool, parts);
  b.total = split.total;
  b.statements = split.statements;
  return b;
}

}  // namespace sqlock::postgres
