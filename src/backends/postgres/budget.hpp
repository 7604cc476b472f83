// The connection budget of one PostgreSQL client (URL `max_connections=`): how many connections
// each part may open — the statement pool, the advisory mode's lock and waiter sessions, the
// LISTEN connection — so that together they never exceed the budget. The split itself is the
// SQL engine's (src/sql/connection_budget.hpp), shared with the other SQL backends.
#pragma once

#include <cstddef>

#include "sql/connection_budget.hpp"
#include "sqlock/postgres/postgres.hpp"

namespace sqlock::postgres {

/// One client's connections, by part.
struct connection_budget {
  std::size_t total = 0;       ///< the most connections the client opens at once
  std::size_t statements = 0;  ///< the engine's statement pool (>= 1)
  std::size_t listener = 0;    ///< 1 with LISTEN, else 0
  std::size_t sessions = 0;    ///< advisory mode: lock sessions taken in turn
  std::size_t waiters = 0;     ///< advisory mode: sessions that wait inside the server
};

/// Splits the budget (sql::split_budget): the listener, then the advisory sessions and waiters,
/// and the statement pool gets the rest — or exactly `pool` when that is given. config_error
/// when the parts do not fit (naming the options to change).
connection_budget split_budget(const options& o);

}  // namespace sqlock::postgres
