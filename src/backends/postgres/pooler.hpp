// Connection poolers between the PostgreSQL backend and its server: what a declared pool mode
// (the URL's pooler=) means for the driver, how a connection tells that a proxy sits in between
// when nothing is declared, where the LISTEN connection goes, and the refusal of advisory mode
// where a pooler hands the server session to other clients.
#pragma once

#include <string>

#include "libpq_connection.hpp"
#include "sqlock/postgres/postgres.hpp"

namespace sqlock::postgres {

/// True when `pooler` (options::pooler) names a pool mode that moves a client between server
/// sessions during its life (transaction, statement): no named statements, LISTEN or
/// session-level state survive there.
bool moves_sessions(const std::string& pooler);

/// True when the options declare a pooler (any pool mode but "none").
bool through_pooler(const std::string& pooler);

/// True when the options ask for unnamed statements (prepare=off, or a pooler that moves
/// sessions).
bool unnamed_statements(const options& o);

/// The conninfo of the LISTEN connection: `conninfo` (either libpq form) with the options'
/// listen_host, listen_port and listen_dbname put in place of its own.
std::string listen_conninfo(const std::string& conninfo, const options& o);

/// True when the options send the LISTEN connection somewhere else than the pooled ones.
bool listens_elsewhere(const options& o);

/// The server process serving `l` now (pg_backend_pid()); one round trip, by `deadline`. It
/// differs from the backend key the connection was given at its start
/// (libpq_connection::server_pid) when a proxy sits in between: pgbouncer (every pool mode) hands
/// each client a random key of its own, a direct connection gets the server's.
int server_process(libpq_connection& l, steady_time deadline);

/// The config_error that refuses advisory mode through pool mode `pooler` ("" for a proxy
/// whose pool mode is not declared), naming what to use instead.
[[noreturn]] void refuse_advisory(const std::string& pooler);

}  // namespace sqlock::postgres
