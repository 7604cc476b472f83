// Migrations: applying a bundle's migrations and routines to a database, the install script
// `sqlock migrate --print` shows, and the schema version a database records.
#pragma once

#include <string>

#include "bundle.hpp"
#include "connection.hpp"
#include "sql_dialect.hpp"
#include "sqlock/types.hpp"

namespace sqlock::sql {

/// Applies the migrations newer than the database's version and then the dialect's routine
/// files, between c.begin_migration() and c.end_migration(). Returns the version afterwards.
int migrate(connection& c, const bundle& b, const dialect& d);
/// The whole install script (migrations + routines) as `sqlock migrate --print` shows it.
std::string migration_script(const bundle& b, const dialect& d);
/// The database's schema version (0 when the version table is missing), by `deadline`.
int schema_version(connection& c, const dialect& d, steady_time deadline = steady_time::max());

}  // namespace sqlock::sql
