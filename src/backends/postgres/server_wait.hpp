// How long one wait inside the server (pg_advisory_lock under lock_timeout) lasts, for the
// advisory lock sessions of advisory mode and of the peers' layouts: the server gives up a
// little before the caller's deadline, so that its answer arrives by then, and a long deadline
// waits again in chunks.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

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

}  // namespace sqlock::postgres
