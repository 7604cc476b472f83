// The PostgreSQL driver of the shared SQL engine: an sql::connection over one libpq link
// (link.hpp) with the engine's operations as prepared statements (one round trip per lock
// operation), lock names checked before they are sent, and every call bounded by its deadline.
// The same class serves the row-based backend's pool, the dedicated sessions of advisory mode
// (it can be watched while idle) and the LISTEN connection.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "link.hpp"
#include "session_pool.hpp"
#include "statement_stopper.hpp"

namespace sqlock::postgres {

/// One PostgreSQL connection for the engine.
class pg_connection final : public session_connection {
 public:
  /// A connection to `conninfo`, made by connect() or by the first call, within that call's
  /// deadline (the engine's pool opens connections without one). `io_timeout` bounds the calls
  /// that carry no deadline (query, execute_script). `stop_fd`: see link.
  /// `counter` (optional) counts the connection while its link is open.
  pg_connection(std::string conninfo, milliseconds io_timeout, int stop_fd = -1,
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
  int server_pid() const override { return link_ ? link_->server_pid() : 0; }
  bool alive() override { return link_ && link_->alive(); }
  std::unique_ptr<statement_stopper> stop_on(const std::stop_token& stop) override;

  /// Runs a statement without parameters by `deadline` (LISTEN, keep-alive checks).
  void exec(const std::string& text, steady_time deadline);
  /// Notification payloads received so far.
  std::vector<std::string> notifications();

 private:
  struct statement {
    std::string name;                // prepared statement name on this connection
    std::string text;                // with $1, $2, ... placeholders
    std::vector<std::string> names;  // parameter names for $1, $2, ...
    bool on_server = false;          // prepared on this connection already
  };
  // The statements of an operation, compiled on first use.
  std::vector<statement>& compiled(const sql::operation& op);
  // Runs one statement: prepared and run in one round trip on its first use, then by name.
  sql::rows exec(link& l, statement& s, const sql::params& p, steady_time deadline,
                 const std::string& what);

  // The link, connected by the first call's deadline.
  link& ready(steady_time deadline);

  std::string conninfo_;
  milliseconds io_timeout_;
  int stop_fd_;
  std::shared_ptr<sql::connection_counter> connections_;
  bool counted_ = false;  // connections_ counts this connection
  std::unique_ptr<link> link_;
  std::map<std::string, std::vector<statement>, std::less<>> cache_;
  unsigned counter_ = 0;
};

}  // namespace sqlock::postgres
