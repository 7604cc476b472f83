// What the PostgreSQL backends of every lock model share: the engine with this driver's
// connections, LISTEN/NOTIFY waits (release_watch() makes a notify_wait for each acquire() call),
// describe() without passwords in either connection-string form. The lock models derive from
// it: row_backend (pessimistic, optimistic) and advisory_backend (session-bound holds).
#pragma once

#include <memory>
#include <string>

#include "notifier.hpp"
#include "sqlock/postgres/postgres.hpp"
#include "sqlock/sql_engine.hpp"

namespace sqlock::postgres {

/// The shared base of the PostgreSQL backends.
class pg_backend : public sql::engine_backend {
 public:
  /// A backend on `conninfo` (libpq's form); describe() shows `shown` redacted.
  pg_backend(const std::string& conninfo, const std::string& shown, const options& o,
             sql::dialect d);

  capabilities caps() const noexcept override;
  std::string describe() const override;

 protected:
  /// A notify_wait for each acquire() call (the engine's open_wait() wraps it).
  std::unique_ptr<wait_state> release_watch(const lock_request& req) override;
  /// Marks the start of an attempt in the acquire() call's wait state (may be null).
  static void attempt_starts(wait_state* ws);

 private:
  pg_backend(const std::string& conninfo, const std::string& shown, const options& o,
             sql::dialect d, std::shared_ptr<sql::connection_counter> counter);

  const std::string shown_;
  std::unique_ptr<notifier> notifier_;
};

}  // namespace sqlock::postgres
