// The session settings every connection the PostgreSQL backend opens sets once, right after
// connecting: the timeouts a DBA may default per server, database or role that would end a
// hold (a session idle while it carries an advisory lock) or a wait in the server (a
// statement_timeout shorter than pg_advisory_lock's wait). The client bounds every exchange by
// its own deadline, so the server's limits are turned off for its sessions.
#pragma once

#include <string>
#include <string_view>

#include "libpq_connection.hpp"

namespace sqlock::postgres {

/// The statement that sets each timeout the server (`server_version`, PQserverVersion) has to
/// 0: idle_session_timeout (14+), idle_in_transaction_session_timeout, transaction_timeout
/// (17+), statement_timeout, lock_timeout; and client_connection_check_interval (14+) to
/// 100 ms, so that a statement waiting in the server ends once its client is gone; a setting
/// the connection's startup `options` name
/// ("-c statement_timeout=5s", "--lock-timeout=1s": the user's own choice) is left out.
std::string session_settings_statement(int server_version, std::string_view startup_options);

/// Sends session_settings_statement() for the session of `l`, in one round trip, by
/// `deadline`. Throws as libpq_connection's calls do.
void apply_session_settings(libpq_connection& l, steady_time deadline);

}  // namespace sqlock::postgres
