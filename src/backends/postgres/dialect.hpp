// The PostgreSQL SQL of sqlock without any driver: the embedded migrations and stored functions
// (migrations/postgresql/, sql/postgresql/) and the dialect that calls them, for every backend
// that talks to PostgreSQL through the shared SQL engine (the libpqxx backend here, and any
// other driver such as SOCI). Each lock operation is one statement: a call of a stored
// function with :name-style parameters. No vendor header is included.
//
// Advisory mode holds session-level locks: its acquire, renew and release operations must run
// on the same connection (session) for one hold, never on whatever pooled connection is free.
#pragma once

#include <string>
#include <string_view>

#include "sql/bundle.hpp"
#include "sql/sql_dialect.hpp"

namespace sqlock::postgres {

/// The modes make_dialect() knows.
inline constexpr std::string_view modes[] = {"pessimistic", "optimistic", "advisory"};

/// Default schema name.
inline constexpr std::string_view default_schema = "sqlock";

/// The embedded SQL files of PostgreSQL (migrations in version order, routines in name order).
const sql::bundle& bundle();

/// Throws config_error unless `schema` is a plain lower-case identifier: [a-z_][a-z0-9_]*, at
/// most 50 characters, not starting with "pg_". (It is spliced into SQL and role names.)
void check_schema_name(const std::string& schema);

/// The EXECUTE-only group role of `schema`: `execute_role` when given (checked like a schema
/// name), else `<schema>_execute`.
std::string execute_role_name(const std::string& schema, const std::string& execute_role = {});

/// Rewrites a SQL file for `schema`: the identifier `sqlock` becomes `schema` (in `--`
/// comments only when qualifying an object, as in `sqlock.locks`, so "sqlock migrate" stays)
/// and the role `sqlock_execute` becomes execute_role_name(schema, execute_role). Identity for
/// the defaults, so the files stay runnable by psql as they are.
std::string render(std::string_view text, const std::string& schema,
                   const std::string& execute_role = {});

/// NOTIFY channel on which release, sweep and force_release wake waiters (the schema name).
std::string notify_channel(const std::string& schema);

/// The engine dialect for `mode` ("pessimistic", "optimistic" or "advisory") in `schema`:
/// operations, schema-version queries, the routine files to install, and render. `notify` is
/// false: a backend that listens for the channel sets it. Throws config_error for a bad mode,
/// schema or role name. `execute_role` as in execute_role_name().
sql::dialect make_dialect(const std::string& mode,
                          const std::string& schema = std::string(default_schema),
                          const std::string& execute_role = {});

}  // namespace sqlock::postgres
