// The session-bound lock model of PostgreSQL (advisory): pg_try_advisory_lock on a 64-bit key
// the server computes from the name, held by one of a few dedicated sessions (sql::session_pool)
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
// An exclusive hold is taken and released with the lean functions of
// sql/postgresql/advisory_session.sql, which write nothing; hold_recorder writes the holds that
// last (~10 ms and more) to the table list() and force_release() read, from the engine's pool.
// Shared and permit holds (sql/postgresql/advisory_shared.sql) take pg_advisory_lock_shared on
// the name's key (a permit also one of the name's N permit keys); a session carries one hold of
// a name at a time, since the server would grant a session a lock it holds already (past a
// waiting writer, or onto a permit key in use): such a request takes another session, and is
// busy when every lock session carries a hold of the name. A shared request waits inside the
// server like an exclusive one (queued behind a waiting writer); a permit request waits on the
// notification path only (a wait inside the server could only wait for one of the N keys).
#pragma once

#include "postgres_backend.hpp"
#include "server_wait.hpp"
#include "sql/hold_recorder.hpp"
#include "sql/session_pool.hpp"

namespace sqlock::postgres {

/// Advisory mode.
class advisory_backend final : public pg_backend {
 public:
  advisory_backend(const std::string& conninfo, const std::string& shown, const options& o,
                   sql::dialect d);

  /// attempt(), with a busy session pool (sql::pool_busy) counted as busy.
  std::optional<lease_info> one_attempt(const lock_request& req, steady_time deadline,
                                        pg_acquisition* a) override;
  bool renew(const lease_info& lease, milliseconds duration, steady_time deadline) override;
  bool release(const lease_info& lease, steady_time deadline) override;
  capabilities caps() const noexcept override;
  /// connect()'s check, then the first lock session is opened (bounded by the I/O timeout).
  void verify(steady_time deadline) override;
  /// This process's holds are recorded first, so that it sees every one of them.
  std::vector<lock_status> list(std::string_view prefix) override;

 private:
  // The operations of a shared or permit hold.
  struct kind_operations {
    sql::operation acquire, wait, renew, release;
  };

  // One attempt; try_acquire() turns a busy session pool (sql::pool_busy) into "busy".
  std::optional<lease_info> attempt(const lock_request& req, steady_time deadline,
                                    pg_acquisition* w);
  // A lock session for `req`: one carrying no hold of the name, or the one carrying this
  // owner's hold (a retried call); nullopt (busy) when every session carries another owner's.
  std::optional<sql::session_pool::call> session_for(const lock_request& req, steady_time deadline);
  // An attempt that waits inside the server on `c`, a waiter session free of holds, for `sw`.
  std::optional<lease_info> wait_in_server(sql::session_pool::call& c, const lock_request& req,
                                           const server_wait& sw, steady_time deadline);
  // After an acquire on `c` that failed inside the server (a transient error): gives back
  // any level of the name's key the failed call left taken, or closes the session.
  void let_go_after_failure(sql::session_pool::call& c, const lock_request& req,
                            const sql::params& p, steady_time deadline);
  // The hold an acquire operation's rows `r` grant on `c`: recorded there; nullopt when busy;
  // config_error when the name's holders are of another kind or number of permits.
  std::optional<lease_info> granted(sql::session_pool::call& c, const lock_request& req,
                                    const sql::rows& r);
  // Writes a batch of hold_recorder's records.
  void record(const std::vector<sql::hold_recorder::record>& batch, steady_time deadline);

  sql::operation wait_;              // advisory_lock with a wait in the server
  sql::operation release_recorded_;  // advisory_unlock of a hold hold_recorder wrote
  sql::operation record_;            // advisory_record
  // Every level of the key (:key) the session holds given back, exclusive or shared: a
  // session-level advisory lock is reentrant, and each unlock gives back one level.
  const sql::operation let_go_{"pg_let_go",
                               {"WITH RECURSIVE u(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM u "
                                "WHERE n < 64 AND pg_catalog.pg_advisory_unlock(CAST(:key AS "
                                "bigint))) SELECT max(n) FROM u"}};
  const sql::operation let_go_shared_{
      "pg_let_go_shared",
      {"WITH RECURSIVE u(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM u WHERE n < 64 AND "
       "pg_catalog.pg_advisory_unlock_shared(CAST(:key AS bigint))) SELECT max(n) FROM u"}};
  kind_operations kinds_;        // acquire_advisory_shared and its renew and release
  std::size_t turns_;            // lock sessions taken in turn
  sql::hold_recorder recorder_;  // before sessions_: the watcher's losses reach it
  sql::session_pool sessions_;   // destroyed first: its watcher calls report_lost()
};

}  // namespace sqlock::postgres
