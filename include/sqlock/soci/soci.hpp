// sqlock over SOCI: locks on the database an application already reaches through a
// soci::session, with the schema and lock SQL of the native backends (the SQLite statements,
// the PostgreSQL functions, the MySQL procedures): only how the SQL is executed differs.
//
//   URLs: soci+sqlite3:PATH, soci+postgresql://user:pw@host:port/db, soci+mysql://user:pw@host/db
//         with ?mode=pessimistic|optimistic, ?max_connections=8 (the most sessions a URL-opened
//         backend opens at once), ?pool=N (the same, when max_connections is not given),
//         ?migrate=auto (servers), ?busy_timeout=5s
//         (SQLite), ?timeout=5s (the longest one exchange with a server may take), ?schema=NAME
//         (PostgreSQL, when its dialect supports it).
//   Time: every call on a session sqlock opened returns by its deadline: SQLite waits for the
//         write lock at most until then (busy timeout); for PostgreSQL and MySQL a watchdog
//         shuts the session's socket down at the deadline (the session is then dropped), and
//         the clients' own connect/read/write timeouts follow ?timeout=. Calls on the
//         application's own sessions (attach()) are bounded only by the application's client
//         settings: sqlock never breaks a session it does not own.
//   Code: attach(session) / attach(connection_pool) builds a backend over the caller's own
//         session(s); wrap it in sqlock::client for lease-based locks.
//
// Transaction-scoped locks (try_lock_xact, lock_xact) are taken inside the caller's open
// transaction on the caller's session and end with its COMMIT or ROLLBACK, never explicitly:
// PostgreSQL uses pg_advisory_xact_lock on the name's key (sqlock.try_xact_lock), MySQL and
// SQLite write the name's lock row in the caller's transaction. fence_check() checks a
// lease-based hold's fencing token inside the caller's transaction.
//
// No SOCI header is included here: the soci types are only declared.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sqlock/backend.hpp"
#include "sqlock/export.hpp"

namespace soci {
class session;
class connection_pool;
}  // namespace soci

namespace sqlock::soci {

/// Options of a backend over SOCI (an aggregate: use designated initialisers).
struct options {
  std::string mode = "pessimistic";  ///< "pessimistic" or "optimistic"
  /// URL-opened backends: the most sessions opened at once (kept, and waited for within each
  /// call's deadline when all are busy); nullopt = `pool`, or 8. attach() uses the caller's
  /// session or pool instead.
  std::optional<std::size_t> max_connections{};
  std::optional<std::size_t> pool{};  ///< the statement pool's sessions (>= 1); nullopt = all
  milliseconds busy_timeout{5000};    ///< SQLite sessions opened by sqlock: write-lock wait; >0
  milliseconds io_timeout{5000};      ///< servers: longest one exchange may take (URL timeout=)
  bool auto_migrate = false;          ///< servers: migrate at connect (SQLite always migrates)
  std::string schema{};               ///< PostgreSQL schema of the sqlock objects; "" = default
  std::string compat{};  ///< "shedlock": ShedLock's table and rules instead of sqlock's schema
                         ///< (docs/interop.md; mode pessimistic only); "" = sqlock's schema
  std::string shedlock_table = "shedlock";  ///< compat=shedlock: the table's name
};

/// Opens a backend from a soci+sqlite3: / soci+postgresql:// / soci+mysql:// URL (what
/// sqlock::connect() does for these schemes). Throws config_error or connection_error.
SQLOCK_API std::shared_ptr<backend> open(const std::string& url_text);

/// A backend running every lock operation on the caller's `session`, which must outlive it.
/// SOCI sessions are not thread-safe: sqlock serializes its own uses (the renewal thread runs
/// on the same session), but the caller must not use the session concurrently with sqlock.
/// Operations refuse (usage_error) while a transaction is open on the session: inside a
/// transaction use try_lock_xact(). For several threads prefer attach(connection_pool&).
/// SQLite sessions get sqlock's SQL functions registered and the schema created.
SQLOCK_API std::shared_ptr<backend> attach(::soci::session& session, const options& opts = {});

/// A backend taking a session of `pool` for each lock operation; the pool must outlive it.
SQLOCK_API std::shared_ptr<backend> attach(::soci::connection_pool& pool, const options& opts = {});

/// One attempt at a transaction-scoped lock on `name` inside the open transaction of
/// `session`: true = held until the transaction commits or rolls back. false = held elsewhere
/// (SQLite/MySQL: end the transaction soon, as a failed attempt may keep a row lock until then).
/// usage_error when no transaction is open on the session.
SQLOCK_API bool try_lock_xact(::soci::session& session, std::string_view name,
                              const options& opts = {});

/// Waits up to `timeout` for a transaction-scoped lock (see try_lock_xact); false on timeout.
/// PostgreSQL waits in the server (lock_timeout); SQLite/MySQL retry with backoff.
SQLOCK_API bool lock_xact(::soci::session& session, std::string_view name, milliseconds timeout,
                          const options& opts = {});

/// True when `fence` is the token of the current, live lease-based hold of `name`. Run inside
/// the transaction doing the protected write; PostgreSQL also keeps the hold from being taken
/// over until that transaction ends (FOR SHARE).
SQLOCK_API bool fence_check(::soci::session& session, std::string_view name, std::uint64_t fence,
                            const options& opts = {});

/// The SOCI backend name ("sqlite3", "postgresql", "mysql") and connection string sqlock
/// derives from a soci+ URL, so an application can open its own sessions from the same setting.
struct connect_info {
  std::string backend{};            ///< SOCI backend name
  std::string connection_string{};  ///< SOCI connection string
};

/// Parses a soci+ URL into what soci::session needs; config_error for a bad URL.
SQLOCK_API connect_info connect_info_for(const std::string& url_text);

/// Creates or upgrades the sqlock schema through `session` (as `sqlock migrate` does) and
/// returns the schema version afterwards. Needs the privileges of the schema owner.
SQLOCK_API int migrate(::soci::session& session, const options& opts = {});

}  // namespace sqlock::soci
