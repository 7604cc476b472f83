// The pauses between tries of a statement that met a deadlock, a serialization failure or a
// busy database (SQL's transient conflicts), or lost a compare-and-set race, within the
// caller's deadline.
#pragma once

#include "sqlock/types.hpp"

namespace sqlock::sql {

/// Retries of one call after transient conflicts: jittered backoff from 1 ms to `cap`, and no
/// try started inside the time kept for an exchange at the end of the call
/// (connection_wait_deadline). A try started in the last moment would only run out of time:
/// the caller would be told of a time-out (an unknown outcome, a closed session) instead of
/// the conflict that kept coming back.
class conflict_retry {
 public:
  explicit conflict_retry(steady_time deadline, milliseconds cap = milliseconds(50));

  /// After a transient conflict: sleeps the next backoff and returns true, or returns false
  /// at once when the next try would not start in time.
  bool pause();

 private:
  steady_time last_start_;
  milliseconds cap_;
  unsigned pauses_ = 0;
};

}  // namespace sqlock::sql
