// Ending a GET_LOCK wait inside the server when its caller is stopped (std::stop_token).
// Nothing wakes GET_LOCK early but `KILL QUERY <id>` from another session, and the server
// forgets a KILL QUERY that reaches the session before its statement does. So from the stop on,
// a thread of its own sends, on a second session (a statement connection of the backend's
// pool, within the client's connection budget), a kill of the waiting one's query every 20 ms
// until the wait has ended (this object is gone); should it still run half a second later (a
// server that does not act on kills, or none reachable), the thread shuts the waiting session's
// socket down, which ends the call with connection_error. The caller closes a session whose
// wait was stopped whatever the wait returned, so a late kill never meets a later statement.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>

#include "sql/cancel_resender.hpp"
#include "sql/session_pool.hpp"

namespace sqlock::mysql::detail {

/// While it lives, a stop of its token ends the wait of server session `id` (socket `fd`).
class wait_stopper final : public sql::wait_breaker {
 public:
  /// Sends a statement on another session by `deadline` (throws when it cannot).
  using sender = std::function<void(const std::string& statement, steady_time deadline)>;
  /// `send` runs the kills; `fd` may be -1 (no socket to shut down as a last resort).
  wait_stopper(sender send, std::uint64_t id, int fd, const std::stop_token& stop);
  ~wait_stopper() override;
  wait_stopper(const wait_stopper&) = delete;
  wait_stopper& operator=(const wait_stopper&) = delete;

  /// True once the stop came: the session must be closed whatever the wait returned.
  bool fired() const override { return kills_->fired(); }

 private:
  std::optional<sql::cancel_resender> kills_;
};

}  // namespace sqlock::mysql::detail
