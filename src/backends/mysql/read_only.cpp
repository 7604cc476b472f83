// connect()'s refusal of a read-only MySQL/MariaDB server (a replica, or read_only set by
// hand): every lock mode writes, so such a server is named with a clear error at once rather
// than failing each lock with error 1290.
#include "connector.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::mysql::detail {

void refuse_read_only(sql::engine_backend& b, const options& o, steady_time deadline) {
  const auto bound = exchange_bound(deadline, b.io_timeout());
  sql::rows r;
  b.with_connection([&](sql::connection& c) { r = c.query("SELECT @@global.read_only", bound); },
                    bound);
  if (sql::says_true(r))
    throw read_only_error(read_only_message(server_address(o), "is read-only"), "1290");
}

}  // namespace sqlock::mysql::detail
