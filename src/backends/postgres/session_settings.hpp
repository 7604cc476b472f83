// The session settings every connection the PostgreSQL backend opens sets once, right after
// connecting: the timeouts a DBA may default per server, database or role that would end a
// hold (a session idle while it carries an advisory lock) or a wait in the server (a
// statement_timeout shorter than pg_advisory_lock's wait). The client bounds every exchange by
// its own deadline, so the server's limits are turned off for its sessions.
#pragma once

#include "link.hpp"

namespace sqlock::postgres {

/// The settings apply_session_settings() turns off (those the server knows: the list holds
/// names of newer versions too).
inline constexpr const char* session_timeouts[] = {
    "idle_session_timeout",                 // PostgreSQL 14+: ends an idle session
    "idle_in_transaction_session_timeout",  // ends a session idle inside a transaction
    "transaction_timeout",                  // PostgreSQL 17+: ends a long transaction's session
    "statement_timeout",                    // cancels a wait in the server
    "lock_timeout",                         // cancels a statement waiting for a row lock
};

/// Sets each of session_timeouts to 0 for the session of `l`, in one statement, by `deadline`;
/// a setting the connection string chose itself (libpq `options=-c name=value` or PGOPTIONS:
/// source "client") is kept. Throws as link's calls do.
void apply_session_settings(link& l, steady_time deadline);

}  // namespace sqlock::postgres
