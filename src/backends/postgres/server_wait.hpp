// One wait inside the server (pg_advisory_lock under lock_timeout) on a waiter session, for
// advisory mode and the peers' advisory layouts: how long it lasts (the server gives up a little
// before the caller's deadline, so that its answer arrives by then; a long deadline waits again
// in chunks) and how it ends (a stop cuts it short; a session whose state is unknown is closed).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>

#include "sql/session_pool.hpp"
#include "sqlock/types.hpp"

namespace sqlock::postgres {

/// One wait inside the server.
struct server_wait {
  milliseconds lock_timeout{0};  ///< the server's wait (lock_timeout), >= 1 ms
  steady_time answer_by{};       ///< the exchange's bound: the wait, then the I/O timeout
};

/// A wait inside the server that ends by `deadline`; nullopt when too little time is left to
/// be worth sending.
inline std::optional<server_wait> server_wait_within(steady_time deadline,
                                                     milliseconds io_timeout) {
  constexpr milliseconds chunk{60000};  // a longer caller deadline waits again
  constexpr milliseconds shortest{5};
  const auto now = std::chrono::steady_clock::now();
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
  if (left < 2 * shortest) return std::nullopt;
  const auto margin = std::clamp(left / 10, shortest, milliseconds(50));
  const auto wait = std::max(std::min(left - margin, chunk), milliseconds(1));
  return server_wait{wait, std::min(deadline, now + wait + io_timeout)};
}

/// Runs `op` with `p` on the waiter session `c` as the wait `sw`, which a stop of `stop` cuts
/// short: the rows when the server answered; nullopt when the wait ended without the lock (a
/// lock timeout or a deadlock with another waiter: `after_conflict` gives back what the failed
/// call may have left taken; a stop, or a failure at the caller's `deadline`: the session is
/// closed). Any other failure closes the session and is thrown; config_error is thrown as is.
std::optional<sql::rows> run_server_wait(sql::session_pool::call& c, const sql::operation& op,
                                         const sql::params& p, const server_wait& sw,
                                         steady_time deadline, const std::stop_token& stop,
                                         const std::function<void()>& after_conflict);

}  // namespace sqlock::postgres
