// The driver interface of the SQL engine: one database connection that runs a lock operation
// with bound parameters by a deadline, scripts, plain queries; and the connector that opens one.
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "params.hpp"
#include "rows.hpp"
#include "sqlock/types.hpp"
#include "statements.hpp"

namespace sqlock::sql {

/// One database connection. Not thread-safe: the engine hands it to one thread at a time.
class connection {
 public:
  virtual ~connection() = default;
  /// Runs `op` atomically (a transaction when it has several statements) and returns the rows
  /// of its last statement, by `deadline` (else connection_error, and the connection is not
  /// used again). Throws transient_error, connection_error or backend_error.
  virtual rows run(const operation& op, const params& p, steady_time deadline) = 0;
  /// Runs a script of several statements (a migration or routine file) as the DBA would.
  virtual void execute_script(std::string_view script) = 0;
  /// migrate() calls these around all it does (the version check, the scripts): a store that
  /// several processes may migrate at once serializes them here (a named lock of the database,
  /// a write transaction), so that each later one finds the version the earlier one left.
  /// end_migration() is called on every path: `completed` false after a failure (it must not
  /// throw then); true after success, when it may throw if the work did not take effect (a
  /// transaction that did not commit). Default: nothing.
  virtual void begin_migration() {}
  virtual void end_migration(bool completed) { (void)completed; }
  /// Plain query without parameters (schema checks); rows as text. Returns by `deadline` or
  /// the driver's I/O timeout, whichever comes first (else connection_error).
  virtual rows query(std::string_view sql, steady_time deadline) = 0;
  /// query() bounded by the driver's I/O timeout only.
  rows query(std::string_view sql) { return query(sql, steady_time::max()); }
};

/// Opens a new connection; throws connection_error when the server cannot be reached.
using connector = std::function<std::unique_ptr<connection>()>;

}  // namespace sqlock::sql
