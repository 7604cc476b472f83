// The MySQL/MariaDB SQL of sqlock without any connector: the embedded bundle
// (migrations/mysql/ + sql/mysql/), the engine dialect whose operations are one-statement CALLs
// of the stored procedures with :name parameters, and the DELIMITER-aware script splitter that
// runs the files exactly as the `mysql` client does. Drivers (the mysql-connector-c++ backend,
// a SOCI backend) link this target (sqlock::mysql_sql) and add only how to execute.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sql/bundle.hpp"
#include "sql/sql_dialect.hpp"

namespace sqlock::mysql {

/// The embedded migrations/mysql/ and sql/mysql/ files.
const sql::bundle& sql_bundle();

/// The dialect of `mode` ("pessimistic", "optimistic" or "advisory"); config_error otherwise.
/// Operations are single `CALL sqlock_...(:name, ...)` statements returning one result set.
/// Advisory mode: the acquire CALL must run on a dedicated session (GET_LOCK is session
/// scoped), its `:lease_ms` parameter carries the server-side wait in ms (0 = one attempt),
/// and renew/release must run on the session that acquired.
sql::dialect make_dialect(const std::string& mode);

/// True for the modes make_dialect() accepts.
bool valid_mode(std::string_view mode);

/// Splits a script into statements the way the `mysql` client does: `DELIMITER x` lines change
/// the statement terminator (and are dropped), terminators inside quotes, backticks and
/// comments do not count, comments outside statements are dropped, empty statements skipped.
std::vector<std::string> split_script(std::string_view script);

/// MySQL error numbers of a conflict with another transaction, which the engine retries:
/// deadlock (1213) and lock wait timeout (1205) (sql::conflict_error).
bool is_transient_error(int code);

/// MySQL/MariaDB error numbers (and client errors 2000-2999) that mean the connection is gone.
bool is_connection_error(int code);

}  // namespace sqlock::mysql
