// The one place where PostgreSQL failures become sqlock errors, for both drivers of this
// backend: the libpq one of the lock operations (SQLSTATE and message of a result, or libpq's
// message of a failed connection) and libpqxx for the transaction-scoped locks of
// sqlock/postgres/xact_lock.hpp. Also the checks a lock name passes before it is sent.
#pragma once

#include <string>
#include <string_view>

namespace sqlock::postgres {

/// Throws the sqlock error for a failed statement: deadlock, serialization and lock-timeout
/// SQLSTATEs become sql::conflict_error (transient); 53300 (too many clients) sql::server_full;
/// connection-class ones connection_error;
/// authentication and permission failures (28000, 28P01, 42501) auth_error; a missing schema
/// or function a schema_error naming `sqlock migrate`; bad text config_error; anything else
/// backend_error carrying the SQLSTATE. `what` prefixes the message.
[[noreturn]] void throw_mapped(const std::string& what, const std::string& sqlstate,
                               const std::string& message);

/// Throws read_only_error for the server at `address` ("host:port"): a hot standby when
/// `standby`, else a server that refused a write (SQLSTATE 25006: a standby, or
/// default_transaction_read_only). `detail` is the server's message ("" when none).
[[noreturn]] void throw_read_only(const std::string& address, bool standby,
                                  const std::string& detail);

/// Throws the sqlock error for a connection libpq could not make (it gives no SQLSTATE then):
/// auth_error for refused credentials, config_error for an unknown database or bad option,
/// sql::server_full when the server has no slot for it (too many clients, a role's or
/// database's connection limit), connection_error for anything else retrying may fix. `message`
/// must already be scrubbed.
[[noreturn]] void throw_connect_failure(const std::string& what, const std::string& message);

/// Rethrows the libpqxx exception being handled as a sqlock error (see throw_mapped); call
/// only inside a catch block. sqlock errors pass unchanged.
[[noreturn]] void rethrow_mapped(const std::string& what);

/// Longest lock name, in bytes: the name is the primary key of sqlock.locks and
/// sqlock.advisory_holds, and a btree entry holds at most 2704 bytes on 8 kB pages (key,
/// header and alignment included).
inline constexpr std::size_t max_name_bytes = 2600;

/// Throws config_error unless `name` is text PostgreSQL can store and index: valid UTF-8
/// without NUL bytes, at most max_name_bytes. `what` names the value in the message ("lock
/// name"); the value itself is not repeated.
void check_name(std::string_view name, const char* what = "lock name");

}  // namespace sqlock::postgres
