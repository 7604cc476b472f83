// MySQL's session-bound lock model: GET_LOCK on a few shared server sessions (session_pool in
// advisory_sessions.hpp), each carrying any number of holds; a hold ends with its session
// (crash, KILL CONNECTION, network loss). A watcher thread polls the sockets of the process's
// sessions for the server closing them (pinging, every 100 ms, holding sessions whose socket
// the driver could not tell apart) and reports every hold of a dead session through
// report_lost() at once. Up to `waiters` callers wait in the server (GET_LOCK's timeout, in
// chunks shorter than half the I/O timeout) on sessions carrying no hold; the others poll.
#pragma once

#include <memory>

#include "sqlock/backend.hpp"
#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql::detail {

/// The advisory (GET_LOCK) backend for `o` (mode "advisory"); `url_text` is shown redacted.
std::shared_ptr<backend> open_advisory(const options& o, std::string url_text);

}  // namespace sqlock::mysql::detail
