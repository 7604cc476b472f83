// connect()'s refusal of a read-only MySQL/MariaDB server (a replica, or read_only set by
// hand): every lock mode writes, so such a server is named with a clear error at once rather
// than failing each lock with error 1290.
#include "mysql_driver.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::mysql::detail {

namespace {
// How long connect() without a deadline waits for a server with too many clients (as the
// engine's schema check).
constexpr milliseconds server_full_wait{30000};
}  // namespace

steady_time check_bound(steady_time deadline) {
  return deadline == steady_time::max() ? std::chrono::steady_clock::now() + server_full_wait
                                        : deadline;
}

void refuse_read_only(sql::engine_backend& b, const options& o, steady_time deadline) {
  // Through run(): a server with too many clients is asked again, as the schema check does.
  static const sql::operation read_only{"mysql_read_only", {"SELECT @@global.read_only"}};
  if (sql::says_true(b.run(read_only, {}, check_bound(deadline))))
    throw read_only_error(read_only_message(server_address(o), "is read-only"), "1290");
}

}  // namespace sqlock::mysql::detail
