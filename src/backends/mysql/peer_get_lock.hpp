// compat=distributedlock and compat=raw on MySQL/MariaDB: the peer's GET_LOCK lock itself. The
// name is turned into the GET_LOCK name the peer takes (peer_lock_name.hpp) and held with
// GET_LOCK(name, 0) on one of a few sessions (sql::session_pool) for as long as that
// session lives, as DistributedLock.MySql or a hand-written GET_LOCK call holds it: no sqlock
// schema, no record, no fencing token, no lease on the server. The pool's watcher reports the
// holds of a killed session lost at once; a renewal asks the server whether the session still
// holds it (IS_USED_LOCK). Outside sqlock's one-name-one-lock identity: it is the peer's lock.
// list() shows every user-level lock of the server from performance_schema.metadata_locks
// (unsupported when performance_schema is off).
#pragma once

#include <memory>
#include <string>

#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql::detail {

/// The backend of `o.compat` ("distributedlock" or "raw"); `url_text` is shown redacted.
std::shared_ptr<backend> open_peer_get_lock(const options& o, std::string url_text);

}  // namespace sqlock::mysql::detail
