// What the PostgreSQL backends of every lock model share: the engine with this driver's
// connections, LISTEN/NOTIFY waits (release_watch() makes a registered_wait for each acquire()
// call, registered as a waiter of its name before its second attempt: releases notify only
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

  capabilities caps() const noexcept override;
  std::string describe() const override;
  /// Refuses a hot standby or a read-only server (read_only_error naming it), then the
  /// engine's schema check or migration.
  void verify(steady_time deadline) override;
  /// The doctor's checks (diagnostics.hpp).
  store_diagnostics* diagnostics() noexcept override { return diagnostics_.get(); }

 protected:
  /// A registered_wait for each acquire() call (the engine's open_wait() wraps it for exclusive
  /// row requests).
  std::unique_ptr<wait_state> release_watch(const lock_request& req) override;
  /// The registered_wait of an acquire() call's wait state `ws` (may be null: a single try).
  static registered_wait* waiting(wait_state* ws);
  /// Registers the call of `w` (past its first attempt) as a waiter of req.name, for a minute
  /// of its wait at most, through `run` (the operation, its parameters and its deadline),
  /// unless it does not listen or is registered already: releases notify registered names only.
  using runner = std::function<void(const sql::operation&, const sql::params&, steady_time)>;
  void register_waiter(registered_wait& w, const lock_request& req, steady_time deadline,
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
