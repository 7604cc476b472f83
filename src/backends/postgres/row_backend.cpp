// Row-based holds: the engine's operations, with the wait state told when each attempt starts.
#include "row_backend.hpp"

namespace sqlock::postgres {

std::optional<lease_info> row_backend::try_acquire(const lock_request& req, steady_time deadline,
                                                   wait_state* ws) {
  attempt_starts(ws);
  return engine_backend::try_acquire(req, deadline, ws);
}

}  // namespace sqlock::postgres
