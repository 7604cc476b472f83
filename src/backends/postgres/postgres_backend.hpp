// What the PostgreSQL backends of every lock model share: the engine with this driver's
// connections, LISTEN/NOTIFY waits (make_acquisition() makes a pg_acquisition for each waiting
// request, registered as a waiter of its name before its second attempt: releases notify only
// registered names), describe() without passwords in either connection-string form. The lock models
// derive from it: row_backend (pessimistic, optimistic) and advisory_backend (session-bound holds).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "notifier.hpp"
#include "postgres_wait.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/doctor.hpp"
#include "sqlock/postgres/postgres.hpp"

namespace sqlock::postgres {

/// The shared base of the PostgreSQL backends.
class pg_backend : public sql::engine_backend {
 public:
  /// A backend on `conninfo` (libpq's form); describe() shows `shown` redacted.
  pg_backend(const std::string& conninfo, const std::string& shown, const options& o,
             sql::dialect d);

  /// one_attempt() of a single try.
  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) final;
  /// A pg_acquisition: the request's registration and LISTEN/NOTIFY wait.
  std::unique_ptr<acquisition> make_acquisition(const lock_request& req,
                                                const wait_policy& policy) final;
  capabilities caps() const noexcept override;
  std::string describe() const override;
  /// Refuses a hot standby or a read-only server (read_only_error naming it), then the
  /// engine's schema check or migration.
  void verify(steady_time deadline) override;
  /// The doctor's checks (diagnostics.hpp).
  store_diagnostics* diagnostics() noexcept override { return diagnostics_.get(); }

 protected:
  friend class pg_acquisition;
  /// One attempt of `req`; `a` is the waiting request it belongs to (null for a single try).
  /// The default is the engine's attempt (a peer's row layout, compat=shedlock).
  virtual std::optional<lease_info> one_attempt(const lock_request& req, steady_time deadline,
                                                pg_acquisition* a);
  /// Registers the request `a` (past its first attempt) as a waiter of req.name, for a minute
  /// of its wait at most, through `run` (the operation, its parameters and its deadline),
  /// unless it does not listen or is registered already: releases notify registered names only.
  /// False when the server did not answer before `deadline`: the request then ends as its last
  /// attempt found the lock, busy (the registration only makes releases wake it), not with a
  /// connection_error at its deadline.
  using runner = std::function<void(const sql::operation&, const sql::params&, steady_time)>;
  bool register_waiter(pg_acquisition& a, const lock_request& req, steady_time deadline,
                       const runner& run);

 private:
  pg_backend(const std::string& conninfo, const std::string& shown, const options& o,
             sql::dialect d, std::shared_ptr<sql::connection_counter> counter);

  const std::string shown_;
  std::unique_ptr<notifier> notifier_;
  std::unique_ptr<store_diagnostics> diagnostics_;
  sql::operation register_;  // advisory_wait_notify
  sql::operation writable_;  // verify(): in recovery, read-only by default, the address
};

}  // namespace sqlock::postgres
