// MySQL 8 / MariaDB 10.4+ backend over mysql-connector-c++ 1.1 (the JDBC-style API Debian
// ships). URL: mysql://user:pass@host:port/db or mariadb://..., with
//   ?mode=pessimistic|optimistic|advisory  ?socket=/run/mysqld/mysqld.sock
//   ?max_connections=8 (the most connections the backend opens at once, of every kind)
//   ?pool= (the statement pool's share; default: what the others leave of max_connections)
//   ?sessions=4 (advisory: sessions that carry holds, taken in turn)
//   ?waiters=2 (advisory: sessions that may wait in the server at once)
//   ?record_after=10ms (advisory, MariaDB: a hold's age when it is recorded for other
//   processes' list() and force_release(); shorter holds write nothing)
//   ?timeout=5s (longest exchange with the server)  ?connect_timeout= (default: timeout)
//   ?migrate=auto|off
//   ?compat=shedlock|distributedlock|raw (a peer's layout instead of sqlock's schema,
//   docs/interop.md; no fencing tokens: ShedLock's table and rules; DistributedLock.MySql's
//   GET_LOCK names; the name as the exact GET_LOCK name)  ?shedlock_table=shedlock
//   ?ssl_mode=disabled|preferred|required|verify_ca|verify_identity  ?ssl_ca= ?ssl_capath=
//   ?ssl_cert= ?ssl_key= ?ssl_cipher= ?ssl_crl= ?tls_version=
// Lock logic lives in stored procedures (sql/mysql/, SQL SECURITY DEFINER) installed by
// `sqlock migrate`; the application user needs EXECUTE on the schema only.
// pessimistic/optimistic: lease rows on the server's clock. advisory: GET_LOCK on a few shared
// sessions (at most sessions + waiters); a hold ends with its session (crash, KILL), which the
// holder reports as loss; up to `waiters` callers wait in the server (GET_LOCK's timeout), the
// others poll. The statement pool, the sessions and the waiters share one connection budget
// (max_connections); calls wait for a connection within their own deadline.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "sqlock/backend.hpp"
#include "sqlock/export.hpp"

namespace sqlock::mysql {

/// How to reach the server (an aggregate: use designated initialisers).
struct options {
  std::string host = "127.0.0.1";    ///< host name or address ("" = 127.0.0.1)
  int port = 3306;                   ///< TCP port; 0 = 3306
  std::string socket{};              ///< Unix socket path; "" = TCP to host:port
  std::string user{};                ///< user name ("" = the connector's default)
  std::string password{};            ///< password ("" = none)
  std::string database{};            ///< schema holding the sqlock tables; required
  std::string mode = "pessimistic";  ///< "pessimistic", "optimistic" or "advisory"
  /// The most connections this backend opens at once, of every kind; nullopt = 8, or `pool`
  /// plus the advisory sessions and waiters when `pool` is given.
  std::optional<std::size_t> max_connections{};
  /// The statement pool's connections (>= 1); nullopt = what the others leave of the budget.
  std::optional<std::size_t> pool{};
  std::size_t sessions = 4;  ///< advisory: sessions carrying holds, taken in turn (>= 1)
  std::size_t waiters = 2;   ///< advisory: sessions that may wait in GET_LOCK at once (0 = none:
                             ///< every waiter polls); each is a server connection
  milliseconds record_after{10};       ///< advisory, MariaDB: a hold's age when it is recorded, in
                                       ///< the background (the lock call itself writes nothing)
  milliseconds connect_timeout{5000};  ///< connect timeout (> 0; whole seconds, rounded up)
  milliseconds timeout{5000};  ///< I/O timeout: the longest one exchange may take (> 0; whole
                               ///< seconds, rounded up); advisory waits block in the server in
                               ///< chunks shorter than half of it
  bool auto_migrate = false;   ///< run `migrate` at connect instead of only checking
  std::string ssl_mode{};      ///< "", disabled, preferred, required, verify_ca, verify_identity
  std::string ssl_ca{};        ///< CA file ("" = none)
  std::string ssl_capath{};    ///< CA directory ("" = none)
  std::string ssl_cert{};      ///< client certificate ("" = none)
  std::string ssl_key{};       ///< client key ("" = none)
  std::string ssl_cipher{};    ///< allowed ciphers ("" = default)
  std::string ssl_crl{};       ///< certificate revocation list ("" = none)
  std::string tls_version{};   ///< allowed TLS versions, e.g. "TLSv1.2,TLSv1.3" ("" = default)
  /// A peer's layout instead of sqlock's schema: "" (sqlock's own), "shedlock",
  /// "distributedlock" or "raw" (docs/interop.md). shedlock takes no `mode` but the default;
  /// the GET_LOCK layouts take the default or advisory.
  std::string compat{};
  std::string shedlock_table = "shedlock";  ///< compat=shedlock: ShedLock's table
  /// release=async: unlock() hands the release to a background thread of the client and
  /// returns (backend::release_in_background()); false (release=wait): unlock() waits for it.
  bool async_release = false;
};

/// Opens a backend. Throws config_error for a bad mode or missing database, connection_error
/// when the server cannot be reached. The schema is checked by verify() (connect() calls it).
SQLOCK_API std::shared_ptr<backend> open(const options& opts);

/// Parses a mysql:// or mariadb:// URL into options (config_error on unknown parameters).
SQLOCK_API options parse_url(const std::string& url_text);

}  // namespace sqlock::mysql
