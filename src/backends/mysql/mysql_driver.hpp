// Internal seam between the backend (vendor-free) and the one file that includes
// mysql-connector-c++ headers (mysql_driver.cpp). The connector's `sql::` namespace never meets
// sqlock::sql outside that file.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "sql/sql_engine.hpp"
#include "sqlock/mysql/mysql.hpp"

namespace sqlock::mysql::detail {

/// The longest lock name (bytes) the schema stores: `name` is a utf8mb4 TEXT column.
inline constexpr std::size_t max_name_bytes = 65535;

/// config_error unless `name` fits the schema: valid UTF-8, no NUL byte, at most
/// max_name_bytes. Checked before anything is sent, so the server never sees a bad name.
void check_name(std::string_view name, const char* what);

/// One connection of the driver. run() bounds its exchanges by the deadline and the I/O
/// timeout; a connection whose call timed out or broke is closed and answers connection_error.
class connection : public sql::connection {
 public:
  /// A cheap round trip (`DO 0`); false (and the connection closed) when the session is gone.
  virtual bool alive() noexcept = 0;
  /// The socket of the open session, to poll while it is idle; -1 when closed, not yet opened,
  /// or not told apart (socket_deadline.hpp).
  virtual int socket() const noexcept = 0;
  /// The server's id of this session (CONNECTION_ID(), asked once, by `deadline`): what
  /// `KILL QUERY` names.
  virtual std::uint64_t server_id(steady_time deadline) = 0;
};

/// "host:port" of the options' server, or its socket path.
std::string server_address(const options& o);

/// The message of a read_only_error for the server at `where` that did `what` ("is
/// read-only", "refused a write"): names it and says to point the URL at the primary.
std::string read_only_message(const std::string& where, const std::string& what);

/// The bound of connect()'s checks: `deadline`, or 30 s from now when it is unbounded (a
/// server with too many clients is asked again until then).
steady_time check_bound(steady_time deadline);

/// Throws read_only_error when the server of `b` (at `o`'s address) is read-only
/// (@@global.read_only, set on a replica or by super_read_only), by `deadline`.
void refuse_read_only(sql::engine_backend& b, const options& o, steady_time deadline);

/// Opens one connection (autocommit, utf8mb4, no auto-reconnect), on its first call; while its
/// session is open it counts in `counter` (optional). Throws connection_error when the server
/// cannot be reached, sql::server_full when it has no slot for it (error 1040, or the user's
/// max_user_connections), auth_error for bad credentials, config_error for an unknown database.
std::unique_ptr<connection> open_connection(
    const options& o, std::shared_ptr<sql::connection_counter> counter = nullptr);

}  // namespace sqlock::mysql::detail
