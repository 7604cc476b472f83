// The SQLite dialect of the shared SQL engine, for every driver of a SQLite database (the
// SQLite backend, and the SOCI backend running the same statements through soci::session).
// No SQLite header and no libsqlite3: the statements call two functions sqlock registers on
// each connection, sqlock_now_ms() (the kernel's boot-time clock in milliseconds) and
// sqlock_boot_id(); install_functions() adds them to a raw handle, with the libsqlite3 the
// calling driver links.
#pragma once

#include <string>

#include "sql/bundle.hpp"
#include "sql/sql_dialect.hpp"

struct sqlite3;

namespace sqlock::sql {
/// migrations/sqlite/ and sql/sqlite/, embedded.
const bundle& bundle_sqlite();
}  // namespace sqlock::sql

namespace sqlock::sqlite {

/// The dialect for "pessimistic" or "optimistic"; config_error for any other mode.
sql::dialect make_dialect(const std::string& mode);

/// Registers sqlock_now_ms() and sqlock_boot_id() on `db`; throws backend_error on failure.
void install_functions(sqlite3* db);

}  // namespace sqlock::sqlite
