// MySQL's session-bound lock model: GET_LOCK on a few shared server sessions (the SQL engine's
// sql::session_pool, with lock_session.hpp as its driver), each carrying any number of holds; a
// hold ends with its session (crash, KILL CONNECTION, network loss). The pool watches the
// sockets of the process's sessions for the server closing them (pinging, every 100 ms, holding
// sessions whose socket the driver could not tell apart) and reports every hold of a dead session
// through report_lost() at once. Up to `waiters` callers wait in the server (GET_LOCK's timeout, in
// chunks shorter than half the I/O timeout) on sessions carrying no hold; the others poll.
#pragma once

#include <memory>

#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql::detail {

/// The advisory (GET_LOCK) backend for `o` (mode "advisory"); `url_text` is shown redacted. Its
/// statement pool has `statements` connections (bounded, kept), besides `o.sessions` lock
/// sessions and `o.waiters` waiter sessions; every connection counts in `counter`.
std::shared_ptr<backend> open_advisory(const options& o, std::string url_text,
                                       std::size_t statements,
                                       std::shared_ptr<sql::connection_counter> counter);

}  // namespace sqlock::mysql::detail
