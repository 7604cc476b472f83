// The session-bound lock model of PostgreSQL (advisory): pg_try_advisory_lock on a 64-bit key
// the server computes from the name, held by one of a few dedicated sessions (session_pool)
// for as long as that session lives. The hold has no lease on the server: it dies with its
// session, which the pool's watcher notices at once and reports through report_lost(). A
// session whose state is unknown (a call that timed out or failed half-way) is closed, so no
// lock stays held by mistake; its other holds are reported lost.
#pragma once

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
  bool renew(const lease_info& lease, milliseconds duration, steady_time deadline) override;
  bool release(const lease_info& lease, steady_time deadline) override;
  capabilities caps() const noexcept override;
  /// connect()'s check, then the first lock session is opened (bounded by the I/O timeout).
  void verify(steady_time deadline) override;

 private:
  session_pool sessions_;  // destroyed first: its watcher calls report_lost()
};

}  // namespace sqlock::postgres
