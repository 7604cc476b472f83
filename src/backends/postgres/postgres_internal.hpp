// Internals shared by the files of the libpqxx backend: the one place where libpqxx and libpq
// errors become sqlock errors, and the backend constructor behind open() and the URL factory.
#pragma once

#include <memory>
#include <string>

#include "sqlock/backend.hpp"
#include "sqlock/postgres/postgres.hpp"

namespace sqlock::postgres {

/// Rethrows the exception being handled as a sqlock error; call only inside a catch block.
/// sqlock errors pass unchanged; pqxx::broken_connection and connection-class SQLSTATEs become
/// connection_error (or config_error for authentication and unknown databases); deadlock,
/// serialization and lock-timeout SQLSTATEs become sql::transient_error; a missing schema or
/// function becomes a config_error naming `sqlock migrate`; bad names become config_error;
/// anything else backend_error carrying the SQLSTATE. `what` prefixes the message.
[[noreturn]] void rethrow_mapped(const std::string& what);

/// The backend for a libpq connection string; `shown` is what describe() prints (redacted).
std::shared_ptr<backend> open_backend(const std::string& conninfo, const std::string& shown,
                                      const options& o);

}  // namespace sqlock::postgres
