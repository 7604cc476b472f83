// What every MySQL/MariaDB connection of sqlock sets once after connecting, and the named lock
// that serializes concurrent migrations of one database. Vendor-free: any driver (the connector,
// SOCI) sends these texts.
#pragma once

#include <string>
#include <string_view>

#include "sqlock/backend.hpp"

namespace sqlock::mysql {

/// The server a connection reached, told from its version string (the handshake's, e.g.
/// "10.11.6-MariaDB-0+deb12u1", "5.5.5-10.5.2-MariaDB", "8.0.36").
struct server_flavor {
  bool mariadb = false;
  int major = 0, minor = 0, patch = 0;  ///< 0.0.0 when the string does not start with a version
};
server_flavor parse_server_version(std::string_view version);

/// One SET statement for a new session: wait_timeout and interactive_timeout a year (a session
/// idle while it carries GET_LOCK holds is not ended by a DBA's default); lock_wait_timeout
/// and innodb_lock_wait_timeout `io_timeout` rounded up to seconds (what the client waits for
/// any answer: a default cannot end a statement earlier, and the server gives a lock wait up
/// when the client would); the statement time limit off (MariaDB 10.1+ max_statement_time,
/// MySQL 5.7.8+ max_execution_time; neither on older servers).
std::string session_settings_statement(const server_flavor& server, milliseconds io_timeout);

/// The GET_LOCK name expression (SQL) of the lock that serializes migrations of the current
/// database: 'sqlock=migrate=' and 49 hex digits of the database name's SHA-256 (64
/// characters; no other GET_LOCK name of sqlock starts 'sqlock=', so it meets no lock).
inline constexpr const char* migration_lock_name =
    "CONCAT('sqlock=migrate=', LEFT(SHA2(DATABASE(), 256), 49))";

}  // namespace sqlock::mysql
