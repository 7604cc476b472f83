// MySQL's session-bound lock model: GET_LOCK on a dedicated server session per hold. The hold
// ends with its session (crash, KILL CONNECTION, network loss); a watcher thread polls the
// sockets of the holding sessions that no call is using (pinging those whose socket the driver
// could not tell apart, every 100 ms) and reports a dead session's hold through report_lost()
// at once. Waiting
// blocks in the server (GET_LOCK's timeout) in chunks shorter than the I/O timeout.
#pragma once

#include <memory>

#include "sqlock/backend.hpp"
#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql::detail {

/// The advisory (GET_LOCK) backend for `o` (mode "advisory"); `url_text` is shown redacted.
std::shared_ptr<backend> open_advisory(const options& o, std::string url_text);

}  // namespace sqlock::mysql::detail
