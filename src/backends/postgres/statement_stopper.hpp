// Ending the statement a session runs when its caller is stopped (std::stop_token). PostgreSQL
// drops a cancel request that reaches the session before the statement does, so one PQcancel
// at the stop is not enough: from the stop on, a thread of its own asks again every few
// milliseconds until the statement has ended (this object is gone), and the libpq connection, which
// polls the stop too, closes the connection should the statement still run a grace period after the
// stop (a server that does not act on cancels). PQcancel blocks until the server answers, which
// is why it runs neither on the caller's thread nor on the one that requested the stop.
#pragma once

#include <optional>
#include <stop_token>

#include "libpq_connection.hpp"
#include "sql/cancel_resender.hpp"
#include "sql/session_pool.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::postgres {

/// While it lives, a stop of its token ends the statement `l` runs (see the file comment).
class statement_stopper final : public sql::wait_breaker {
 public:
  /// `l` may be null (no connection yet: nothing to stop).
  /// `cancel` false: no cancel requests, the connection is closed after the grace (through a
  /// pooler: pgbouncer 1.18 can crash on a cancel request that races its client's close).
  statement_stopper(libpq_connection* l, const std::stop_token& stop, bool cancel = true);
  ~statement_stopper() override;
  statement_stopper(const statement_stopper&) = delete;
  statement_stopper& operator=(const statement_stopper&) = delete;
  bool fired() const override { return stop_.stop_requested(); }

 private:
  libpq_connection* link_;
  std::stop_token stop_;
  stop_fd stopped_;  // readable once stopped: the libpq connection polls it
  std::optional<sql::cancel_resender> cancels_;
};

}  // namespace sqlock::postgres
