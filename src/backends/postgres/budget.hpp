// The connection budget of one PostgreSQL client (URL `max_connections=`): how many connections
// each part may open — the statement pool, the advisory mode's lock and waiter sessions, the
// LISTEN connection — so that together they never exceed the budget.
#pragma once

#include <cstddef>

#include "sqlock/postgres/postgres.hpp"

namespace sqlock::postgres {

/// The default budget when neither `max_connections=` nor `pool=` is given.
inline constexpr std::size_t default_max_connections = 8;

/// One client's connections, by part.
struct connection_budget {
  std::size_t total = 0;       ///< the most connections the client opens at once
  std::size_t statements = 0;  ///< the engine's statement pool (>= 1)
  std::size_t listener = 0;    ///< 1 with LISTEN, else 0
  std::size_t sessions = 0;    ///< advisory mode: lock sessions taken in turn
  std::size_t waiters = 0;     ///< advisory mode: sessions that wait inside the server
};

/// Splits the budget: the listener, then the advisory sessions and waiters, and the statement
/// pool gets the rest — or exactly `pool` when that is given. Without `max_connections` the
/// budget is 8, or `pool` plus the rest when `pool` is given. config_error when the parts do not
/// fit (naming the options to change).
connection_budget split_budget(const options& o);

}  // namespace sqlock::postgres
