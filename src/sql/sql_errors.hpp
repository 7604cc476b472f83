// The errors the SQL engine tells apart: transient ones it retries (deadlock, serialization,
// busy; conflicts with another transaction among them), a bounded pool with no free
// connection, a server with too many clients; and the retry of transient errors outside an
// operation (opening, migrating).
#pragma once

#include <functional>

#include "sqlock/errors.hpp"
#include "sqlock/types.hpp"

namespace sqlock::sql {

/// Marks an error the engine should retry (deadlock, serialization failure, busy database).
class transient_error : public backend_error {
 public:
  using backend_error::backend_error;
};

/// A transient error that is a conflict with another transaction: a deadlock, a serialization
/// failure, a lock wait that timed out in the server (MySQL 1213, 1205; PostgreSQL 40P01,
/// 40001, 55P03). The failed statement or transaction changed nothing (the lock routines roll
/// back on any error), so an acquire attempt still meeting one at its deadline counts it as
/// busy — contention, like any other at the deadline — instead of throwing it.
class conflict_error : public transient_error {
 public:
  using transient_error::transient_error;
};

/// Every connection of a bounded pool stayed busy until the caller's deadline (or stop): nothing
/// was sent. An acquire attempt counts it as busy; anywhere else it is a connection_error.
class pool_busy : public connection_error {
 public:
  using connection_error::connection_error;
};

/// The server refused a new connection because it has too many clients (PostgreSQL SQLSTATE
/// 53300: max_connections, or a role's or database's CONNECTION LIMIT). Transient: the engine
/// tries again with capped jittered backoff until the call's deadline, then throws it.
class server_full : public connection_error {
 public:
  using connection_error::connection_error;
};

/// Runs `fn`, retrying transient_error with capped jittered backoff until `budget` has passed
/// (then the last transient_error is thrown). For work outside run(): opening, migrating.
void retry_transient(const std::function<void()>& fn, milliseconds budget = milliseconds(10000));

}  // namespace sqlock::sql
