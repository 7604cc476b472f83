// One wait inside the server on a waiter session (see server_wait.hpp).
#include "server_wait.hpp"

#include "postgres_driver.hpp"
#include "sql/sql_errors.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::postgres {

std::optional<sql::rows> run_server_wait(sql::session_pool::call& c, const sql::operation& op,
                                         const sql::params& p, const server_wait& sw,
                                         steady_time deadline, const std::stop_token& stop,
                                         const std::function<void()>& after_conflict) {
  if (stop.stop_requested()) return std::nullopt;
  try {
    // A stop ends the wait in the server (statement_stopper.hpp); the call then fails and its
    // session is closed below, which ends anything it registered.
    auto stopper = c.conn().break_wait_on(stop);
    return c.conn().run(op, p, sw.answer_by);
  } catch (const config_error&) {
    throw;
  } catch (const sql::conflict_error&) {
    // A deadlock with another waiter, a lock timeout: contention, busy whenever it comes, once
    // the session gave back what the failed call may have left taken.
    if (stop.stop_requested()) {
      c.kill();  // the stop may have cut the wait: its state is unknown
    } else {
      after_conflict();
    }
    return std::nullopt;
  } catch (const error&) {
    // The wait's outcome is unknown: closing the session ends whatever it may hold (nothing
    // but, perhaps, this lock). At the caller's deadline or stop that is a plain "not obtained".
    c.kill();
    if (std::chrono::steady_clock::now() >= deadline || stop.stop_requested()) return std::nullopt;
    throw;
  }
}

}  // namespace sqlock::postgres
