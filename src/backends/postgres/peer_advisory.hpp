// compat=distributedlock and compat=raw on PostgreSQL: the peer's advisory lock itself. The
// name is turned into the key the peer takes (peer_key.hpp) and held with
// pg_try_advisory_lock[_shared] on one of a few dedicated sessions (sql::session_pool), for as long
// as that session lives, exactly as DistributedLock.Postgres or a hand-written
// pg_advisory_lock call holds it: no sqlock schema, no record, no fencing token, no lease on
// the server (the hold dies with its session, reported lost at once). Outside sqlock's
// one-name-one-lock identity: it is the peer's lock. A waiting call's later attempts wait
// inside the server (pg_advisory_lock[_shared] under lock_timeout) on a waiter session, as the
// peer's blocking acquire does, so sqlock's waiters and the peer's queue in the server's order
// and a waiting writer holds off new readers; with no waiter session free they try again after
// a backoff. list() shows every advisory lock of the database (pg_locks), named as this layout
// names keys. The budget is split as in advisory mode: lock sessions, waiter sessions, and the
// statement pool that list() uses.
#pragma once

#include <functional>

#include "peer_key.hpp"
#include "postgres_backend.hpp"
#include "server_wait.hpp"
#include "sql/session_pool.hpp"

namespace sqlock::postgres {

class peer_advisory_backend final : public pg_backend {
 public:
  /// `o.compat` is "distributedlock" or "raw".
  peer_advisory_backend(const std::string& conninfo, const std::string& shown, const options& o);

  std::optional<lease_info> one_attempt(const lock_request& req, steady_time deadline,
                                        pg_acquisition* a) override;
  bool renew(const lease_info& lease, milliseconds duration, steady_time deadline) override;
  bool release(const lease_info& lease, steady_time deadline) override;
  std::vector<lock_status> list(std::string_view prefix) override;
  /// No forced release (the holds are the peer's session locks: end the holding session with
  /// pg_terminate_backend to free one), no audit trail, nothing to sweep.
  hold_breaker* breaker() noexcept override { return nullptr; }
  audit_trail* audit() noexcept override { return nullptr; }
  expiry_sweeper* sweeper() noexcept override { return nullptr; }
  capabilities caps() const noexcept override;
  /// No schema to check: the first lock session is opened (bounded by the I/O timeout).
  void verify(steady_time deadline) override;
  /// The peer's layout has no schema of sqlock's.
  schema_owner* schema() noexcept override { return nullptr; }

 private:
  // The key of a lock name (config_error when the layout has none for it).
  advisory_key key_of(std::string_view name) const;
  // The lock or unlock operation for a key's form and a hold's kind.
  const sql::operation& op(bool lock, bool pair, bool shared) const;
  // An attempt that waits inside the server on `c`, a waiter session free of holds, for `sw`.
  std::optional<lease_info> wait_in_server(sql::session_pool::call& c, const lock_request& req,
                                           const advisory_key& key, const server_wait& sw,
                                           steady_time deadline);

  bool raw_;
  bool allow_hashing_;
  sql::operation ops_[2][2][2];  // [lock][pair][shared]
  sql::operation waits_[2][2];   // [pair][shared]: a wait inside the server
  sql::operation ping_, list_;
  sql::session_pool sessions_;  // destroyed first: its watcher calls report_lost()
};

}  // namespace sqlock::postgres
