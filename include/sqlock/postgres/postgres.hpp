// The PostgreSQL backend (libpqxx): locks kept by stored functions in a `sqlock` schema, in one
// of three modes, with waiters woken by LISTEN/NOTIFY.
//   pessimistic  a row per held lock; an expired row is taken over by the acquiring INSERT
//   optimistic   a row per name with a version; acquire is a compare-and-set of the version
//   advisory     pg_try_advisory_lock on a 64-bit key the server computes from the name
//                (sqlock.lock_key), held by a small pool of dedicated sessions; the hold dies
//                with its session, whose hang-up is noticed at once and reported lost
// URL: postgresql://user:pass@host:port/db?mode=...&schema=...  (or postgres://). Every libpq
// parameter (sslmode, connect_timeout, application_name, ...) is passed through to libpq;
// sqlock's own parameters are:
//   mode=pessimistic|optimistic|advisory   (default pessimistic)
//   schema=NAME      schema of the tables and functions (default sqlock)
//   execute_role=NAME  group role `sqlock migrate` lets call the functions (default
//                    <schema>_execute). Role names are cluster-wide: give each database of a
//                    cluster its own, or an app role of one database can call another's.
//   migrate=auto     apply `sqlock migrate` at connect (default: check the version and fail)
//   max_connections=N  the most connections one backend object opens at once, of every kind:
//                    the statement pool, advisory sessions and waiters, the listener (default 8,
//                    or pool + the others when pool is given). Calls wait for a busy pool's
//                    connection within their own deadline; connections are kept, not churned.
//   pool=N           the statement pool's share of max_connections (default: what the listener
//                    and the advisory sessions leave; at least 1)
//   sessions=N       advisory mode: dedicated sessions the locks are multiplexed over (default 2,
//                    at least 1)
//   waiters=N        advisory mode: extra sessions that wait for a busy lock inside the server
//                    (pg_advisory_lock under lock_timeout; default 2, 0 = none); more waiting
//                    threads than that wait for NOTIFY instead
//   listen=off       do not LISTEN; waiters poll (capped, jittered backoff)
//   pooler=transaction|statement|session|none   what sits between this client and the server
//                    (default: told from the connection; see docs/backends/postgres.md).
//                    transaction/statement: unnamed statements, no LISTEN on the pooled
//                    connections, advisory mode refused; session/none: everything as direct
//   prepare=off      send every statement unnamed (parse, bind and execute in one round trip)
//                    instead of preparing named statements per connection (default on; off
//                    under pooler=transaction|statement)
//   listen_host=H, listen_port=P, listen_dbname=D   the LISTEN connection goes to this server
//                    instead of the URL's (straight to PostgreSQL past a pooler)
//   timeout=D        the longest one exchange with the server may take, connecting included
//                    (default 5s): every call also returns by its caller's deadline
//   compat=shedlock|distributedlock|raw  lock in a peer's layout instead of sqlock's schema
//                    (docs/interop.md; no sqlock tables, no fencing tokens): ShedLock's table
//                    and rules; DistributedLock.Postgres's advisory keys; a raw advisory key
//                    given as the name ("42" or "1,2")
//   allow_hashing=true  compat=distributedlock: hash names of no key format (allowHashing)
//   shedlock_table=NAME  compat=shedlock: the table (default shedlock; schema.table allowed)
//   record_after=D   advisory mode: an exclusive hold is recorded for other processes'
//                    list(), force_release() and leader() once it has lasted D (default 10ms;
//                    0 = at once, still off the caller's path); a shorter hold writes nothing.
//                    fence_check() sees every hold at once.
// The schema is created by `sqlock migrate` (or the SQL files applied with psql), never
// silently: connect() fails with a config_error that names the command to run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sqlock/backend.hpp"
#include "sqlock/export.hpp"

namespace sqlock::postgres {

/// Options of a PostgreSQL store (an aggregate: use designated initialisers).
struct options {
  std::string mode = "pessimistic";  ///< "pessimistic", "optimistic" or "advisory"
  std::string schema = "sqlock";     ///< schema holding the sqlock tables and functions
  std::string execute_role{};        ///< role granted EXECUTE at migrate; "" = `<schema>_execute`
  bool auto_migrate = false;         ///< migrate at verify() instead of failing when outdated
  /// The most connections this backend opens at once, of every kind; nullopt = 8, or `pool`
  /// plus the listener and advisory sessions when `pool` is given.
  std::optional<std::size_t> max_connections{};
  /// The statement pool's connections (>= 1); nullopt = what the others leave of the budget.
  std::optional<std::size_t> pool{};
  std::size_t sessions = 2;       ///< advisory mode: dedicated lock sessions (>= 1)
  bool listen = true;             ///< wake waiters with LISTEN/NOTIFY (false: poll)
  milliseconds timeout{5000};     ///< I/O timeout: longest one exchange may take (> 0)
  std::size_t waiters = 2;        ///< advisory mode: sessions that wait inside the server
  milliseconds record_after{10};  ///< advisory mode: a hold's age when it is recorded
  /// What sits between this client and the server: "transaction", "statement", "session",
  /// "none", or "" to tell from the connection (a proxy that hands out its own backend keys).
  std::string pooler{};
  bool prepare = true;  ///< named prepared statements (false: unnamed; forced by tx/stmt pooler)
  /// The LISTEN connection's server when it differs from the conninfo's (libpq keywords
  /// host, port, dbname; "" = the conninfo's).
  std::string listen_host{};
  std::string listen_port{};    ///< as `listen_host`: the LISTEN connection's port
  std::string listen_dbname{};  ///< as `listen_host`: the LISTEN connection's database
  /// A peer's layout instead of sqlock's schema: "" (sqlock's own), "shedlock",
  /// "distributedlock" or "raw" (docs/interop.md). shedlock takes no `mode` but the default;
  /// the advisory layouts take the default or advisory.
  std::string compat{};
  std::string shedlock_table = "shedlock";  ///< compat=shedlock: ShedLock's table
  bool allow_hashing = false;               ///< compat=distributedlock: hash names of no key format
  /// release=async: unlock() hands the release to a background thread of the client and
  /// returns (backend::release_in_background()); false (release=wait): unlock() waits for it.
  bool async_release = false;
};

/// A backend on the database named by `conninfo` (a libpq URI or key=value string without
/// sqlock's own parameters). Connects lazily: the first connection is made by verify() or the
/// first operation. Throws config_error for a bad mode, schema, count, timeout or connection
/// string (never quoting a password).
SQLOCK_API std::shared_ptr<backend> open(const std::string& conninfo, const options& opts = {});

/// Splits a postgresql:// URL into libpq's part (sqlock's parameters removed, defaults for
/// client_encoding and fallback_application_name added) and the options. Throws config_error
/// naming an unknown or malformed parameter.
SQLOCK_API std::string parse_url(const std::string& url_text, options& opts);

}  // namespace sqlock::postgres
