// Ending a GET_LOCK wait inside the server when its caller is stopped (std::stop_token).
// Nothing wakes GET_LOCK early but `KILL QUERY <id>` from another session, and the server
// forgets a KILL QUERY that reaches the session before its statement does. So from the stop on,
// a thread of its own opens a second session and kills the waiting one's query every 20 ms
// until the wait has ended (this object is gone); should it still run half a second later (a
// server that does not act on kills, or none reachable), the thread shuts the waiting session's
// socket down, which ends the call with connection_error. The caller closes a session whose
// wait was stopped whatever the wait returned, so a late kill never meets a later statement.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>

#include "sqlock/mysql/mysql.hpp"
#include "sqlock/stop_repeater.hpp"

namespace sqlock::mysql::detail {

/// While it lives, a stop of its token ends the wait of server session `id` (socket `fd`).
class wait_stopper {
 public:
  /// `o` opens the second session; `fd` may be -1 (no socket to shut down as a last resort).
  wait_stopper(const options& o, std::uint64_t id, int fd, const std::stop_token& stop);
  ~wait_stopper();
  wait_stopper(const wait_stopper&) = delete;
  wait_stopper& operator=(const wait_stopper&) = delete;

  /// True once the stop came: the session must be closed whatever the wait returned.
  bool fired() const { return kills_->fired(); }

 private:
  std::optional<sql::stop_repeater> kills_;
};

}  // namespace sqlock::mysql::detail
