// The MySQL driver of the SQL engine's session pool (sql/session_pool.hpp): a server session
// that carries GET_LOCK holds is one driver connection (mysql_driver.hpp), pinged when its socket
// is not known, whose wait in the server a stop ends with KILL QUERY sent from a statement
// connection (wait_stopper.hpp).
#pragma once

#include <memory>

#include "mysql_driver.hpp"
#include "sql/session_pool.hpp"
#include "wait_stopper.hpp"

namespace sqlock::mysql::detail {

/// Opens the sessions of a pool with `o`, counted in `counter`; `kill` sends the KILL QUERY
/// that ends a stopped wait (empty: the backend never waits in the server). A session connects
/// on its first call, within that call's deadline.
sql::session_driver lock_sessions(const options& o,
                                  std::shared_ptr<sql::connection_counter> counter,
                                  wait_stopper::sender kill = {});

}  // namespace sqlock::mysql::detail
