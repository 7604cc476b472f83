// The session-bound lock model of PostgreSQL (advisory): pg_try_advisory_lock on a 64-bit key
// the server computes from the name, held by one of a few dedicated sessions (session_pool)
// for as long as that session lives. The hold has no lease on the server: it dies with its
// session, which the pool's watcher notices at once and reports through report_lost(). A
// session whose state is unknown (a call that timed out or failed half-way) is closed, so no
// lock stays held by mistake; its other holds are reported lost.
// Waiting: an acquire() call's first attempt is a try on the sessions taken in turn; a later
// one waits inside the server (pg_advisory_lock under lock_timeout, bounded by the caller's
// deadline) on a waiter session carrying no hold, so the server hands the lock over at the
// moment of its release, in its own queue order. When every waiter session is busy or holds
// something, the call registers for NOTIFY on the name (releases notify only then) and waits
// for it between tries, as the row modes do.
#pragma once

#include "advisory_wait.hpp"
#include "pg_backend.hpp"
#include "session_pool.hpp"

namespace sqlock::postgres {

/// Advisory mode.
class advisory_backend final : public pg_backend {
 public:
  advisory_backend(const std::string& conninfo, const std::string& shown, const options& o,
                   sql::dialect d);

  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline,
                                        wait_state* ws) override;
  std::unique_ptr<wait_state> open_wait(const lock_request& req) override;
  bool renew(const lease_info& lease, milliseconds duration, steady_time deadline) override;
  bool release(const lease_info& lease, steady_time deadline) override;
  capabilities caps() const noexcept override;
  /// connect()'s check, then the first lock session is opened (bounded by the I/O timeout).
  void verify(steady_time deadline) override;

 private:
  // An attempt that waits inside the server on `c`, a waiter session free of holds.
  std::optional<lease_info> wait_in_server(session_pool::call& c, const lock_request& req,
                                           steady_time deadline);
  // Registers the call for NOTIFY on the name (once per minute of its wait).
  void register_waiter(advisory_wait& w, const lock_request& req, steady_time deadline);

  sql::operation wait_;      // acquire_advisory with a wait in the server
  sql::operation register_;  // advisory_wait_notify
  session_pool sessions_;    // destroyed first: its watcher calls report_lost()
};

}  // namespace sqlock::postgres
