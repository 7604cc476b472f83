// The PostgreSQL driver of the shared SQL engine: an sql::connection over one libpq connection
// (libpq_connection.hpp) with the engine's operations as prepared statements (one round trip per
// lock operation), lock names checked before they are sent, and every call bounded by its deadline.
// The same class serves the row-based backend's pool, the dedicated sessions of advisory mode
// (it can be watched while idle) and the LISTEN connection.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "libpq_connection.hpp"
#include "sql/connection_counter.hpp"
#include "sql/session_pool.hpp"
#include "statement_stopper.hpp"

namespace sqlock::postgres {

/// How a connection meets a pooler between it and the server (see pooler.hpp).
struct pooling {
  /// Every call as an unnamed statement from the start. Otherwise calls use named statements
  /// (names unique to the connection) until the server session lacks one: a pooler moved the
  /// connection, and it switches to unnamed statements and runs the call again (nothing of it
  /// ran).
  bool unnamed = false;
  /// False through a pooler declared to move the connection between server sessions: no
  /// session settings at connect (they would stay on a server session other clients then
  /// use) and migrations, which hold a session lock, are refused.
  bool keeps_session = true;
  /// The URL declares what sits in between (pooler=): no proxy check before a migration.
  bool declared = false;
  /// Fail the connect with refuse_advisory("") when the connection goes through a proxy.
  bool refuse_proxy = false;
  /// Ask the server for its process at connect (server_pid() is then the server's, not a
  /// proxy's key): sessions whose process others look up (advisory holds).
  bool learn_server_process = false;
  /// A stopped statement is cancelled (cancel requests) before its connection is closed; false
  /// through a declared pooler (see statement_stopper).
  bool cancel = true;
};

/// One PostgreSQL connection for the engine.
class pg_connection final : public sql::pooled_session {
 public:
  /// A connection to `conninfo`, made by connect() or by the first call, within that call's
  /// deadline (the engine's pool opens connections without one). `io_timeout` bounds the calls
  /// that carry no deadline (query, execute_script). `stop_fd`: see libpq_connection.
  /// `p`: what a pooler between client and server allows (pooler.hpp); `counter` (optional)
  /// counts the connection from before it connects until the server has ended its session,
  /// and a connect waits for a place in it (connection_counter::reserve).
  pg_connection(std::string conninfo, milliseconds io_timeout, int stop_fd = -1, pooling p = {},
                std::shared_ptr<sql::connection_counter> counter = nullptr);
  ~pg_connection() override;
  pg_connection(const pg_connection&) = delete;
  pg_connection& operator=(const pg_connection&) = delete;

  /// Connects now unless connected, by `deadline`.
  void connect(steady_time deadline);

  sql::rows run(const sql::operation& op, const sql::params& p, steady_time deadline) override;
  /// One file per call, sent as one simple query (PostgreSQL runs it as one implicit
  /// transaction).
  void execute_script(std::string_view script) override;
  /// Concurrent migrations of one database wait for each other: a session-level advisory
  /// lock of a fixed key, held by this connection from begin to end.
  void begin_migration() override;
  void end_migration(bool) noexcept override;
  sql::rows query(std::string_view sql, steady_time deadline) override;
  int socket() const override { return link_ ? link_->socket() : -1; }
  /// The server's process id of this session (0 when closed).
  int server_pid() const {
    return !link_ ? 0 : server_process_ != 0 ? server_process_ : link_->server_pid();
  }
  std::int64_t session_id(steady_time) override { return server_pid(); }
  bool alive() override { return link_ && link_->alive(); }
  /// A stop ends the statement this session runs (statement_stopper.hpp).
  std::unique_ptr<sql::wait_breaker> break_wait_on(const std::stop_token& stop) override;

  /// Runs a statement without parameters by `deadline` (LISTEN, keep-alive checks).
  void exec(const std::string& text, steady_time deadline);
  /// Notification payloads received so far.
  std::vector<std::string> notifications();
  /// True when calls go as unnamed statements (asked for, or a pooler was met).
  bool unnamed() const { return pooling_.unnamed; }
  /// True when this connection goes through a proxy (see server_process), by `deadline`.
  bool behind_proxy(steady_time deadline);

 private:
  struct statement {
    std::string name;                // prepared statement name on this connection
    std::string text;                // with $1, $2, ... placeholders
    std::vector<std::string> names;  // parameter names for $1, $2, ...
    bool on_server = false;          // prepared on this connection already
  };
  // The statements of an operation, compiled on first use.
  std::vector<statement>& compiled(const sql::operation& op);
  // Runs one statement: prepared and run in one round trip on its first use, then by name;
  // or unnamed.
  sql::rows exec(libpq_connection& l, statement& s, const sql::params& p, steady_time deadline,
                 const std::string& what);
  // Runs the statements of `op` (several in one transaction).
  sql::rows run_once(const sql::operation& op, const sql::params& p, steady_time deadline);

  // The libpq connection, connected by the first call's deadline.
  libpq_connection& ready(steady_time deadline);

  std::string conninfo_;
  milliseconds io_timeout_;
  int stop_fd_;
  pooling pooling_;
  std::shared_ptr<sql::connection_counter> connections_;
  std::unique_ptr<libpq_connection> link_;
  int server_process_ = 0;  // learnt at connect (pooling::learn_server_process)
  std::map<std::string, std::vector<statement>, std::less<>> cache_;
  std::string prefix_;  // of this connection's statement names: "sqlock_<random>_"
  unsigned counter_ = 0;
};

}  // namespace sqlock::postgres
