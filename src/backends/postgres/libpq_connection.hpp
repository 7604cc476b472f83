// One libpq connection driven asynchronously, so that nothing waits past a deadline: the
// connection is made with PQconnectStart/PQconnectPoll and every exchange is sent without
// blocking and its answer awaited with poll() on the socket until the caller's deadline. A
// connection that runs out of time is closed at once (its state is unknown) and never used
// again. Errors become sqlock errors through errors.hpp, with every password scrubbed.
#pragma once

#include <libpq-fe.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "conninfo.hpp"
#include "sql/rows.hpp"
#include "sqlock/backend.hpp"

namespace sqlock::postgres {

/// A call on a named prepared statement failed because the server session that ran it does not
/// have the statement (26000) or has its name already (42P05): a pooler moved the connection
/// between server sessions. Nothing of the call ran (the server refused it at parse or bind).
class statement_lost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A libpq connection whose every call returns by its deadline.
class libpq_connection {
 public:
  /// Connects by `deadline` (connection_error when it cannot; auth_error or config_error when
  /// retrying will not help). While waiting, `stop_fd` (if >= 0) becoming readable ends the
  /// wait with connection_error: the owner is shutting down.
  libpq_connection(const std::string& conninfo, steady_time deadline, int stop_fd = -1);
  ~libpq_connection();
  libpq_connection(const libpq_connection&) = delete;
  libpq_connection& operator=(const libpq_connection&) = delete;

  /// "host:port" of the server this connection reached (the one libpq chose of a multi-host
  /// URL), "" when closed.
  std::string address() const;
  /// The socket, or -1 once closed.
  int socket() const;
  /// The server process serving this connection (0 when closed).
  int server_pid() const;
  /// The server's version number (PQserverVersion: 150004 for 15.4; 0 when closed), known
  /// from the connection's start without a round trip.
  int server_version() const { return c_ ? PQserverVersion(c_) : 0; }
  /// The `options` the connection started with (the conninfo's or PGOPTIONS: "-c name=value
  /// ..."), "" when none.
  std::string startup_options() const;
  /// True once the connection is closed (timed out, broken): it must not be used again.
  bool closed() const { return c_ == nullptr; }
  /// Closes the connection now. The server's session may outlive it (a statement it still
  /// runs): `ended` (see on_ended) is called once the server has ended it.
  void close();
  /// Called once, when the server has ended the session after close() (or the destructor):
  /// sql::closing_sessions waits for that, at most sql::closing_bound.
  void on_ended(std::function<void()> ended) { ended_ = std::move(ended); }

  /// Prepares `text` as statement `name` and runs it with text `values`, in one round trip
  /// (libpq's pipeline mode); `prepared` is set once the server has the statement, even when
  /// running it then fails. The rows of its result.
  sql::rows prepare_and_run(const std::string& name, const std::string& text,
                            const std::vector<std::string>& values, steady_time deadline,
                            const std::string& what, bool& prepared);
  /// Runs prepared statement `name` with text `values`; the rows of its result.
  /// prepare_and_run and run_prepared throw statement_lost when the server session lacks the
  /// statement or has its name already.
  sql::rows run_prepared(const std::string& name, const std::vector<std::string>& values,
                         steady_time deadline, const std::string& what);
  /// Runs `text` as an unnamed statement with text `values`: parse, bind and execute in one
  /// round trip, nothing left on the server session; the rows of its result.
  sql::rows run_unnamed(const std::string& text, const std::vector<std::string>& values,
                        steady_time deadline, const std::string& what);
  /// Runs `text` as one simple query (several statements allowed: one implicit transaction);
  /// the rows of the last statement.
  sql::rows run_simple(const std::string& text, steady_time deadline, const std::string& what);

  /// For an idle connection whose socket became readable: reads what the server sent and says
  /// whether the session is still usable (false once the server closed it or sent a FATAL).
  bool alive();
  /// Notification payloads received so far (after alive() or an exchange read them).
  std::vector<std::string> notifications();
  /// A handle that cancels the statement this connection runs, usable from another thread
  /// (PQgetCancel; free it with PQfreeCancel); null when closed.
  PGcancel* new_cancel() const { return c_ ? PQgetCancel(c_) : nullptr; }
  /// From now on, `fd` (if >= 0) becoming readable means the caller was stopped: the exchange
  /// under way may go on for `grace` (the server is being asked to cancel the statement), then
  /// the connection is closed and the call fails with connection_error. -1 ends the watch.
  void watch_stop(int fd, milliseconds grace);

 private:
  // Waits until the socket is ready for `events` or the deadline (then closes and throws).
  void wait_socket(short events, steady_time deadline, const std::string& what);
  // Sends the buffered request by the deadline.
  void flush(steady_time deadline, const std::string& what);
  // Waits for the next result by the deadline (null between the queries of a pipeline and
  // after the last result).
  PGresult* next_result(steady_time deadline, const std::string& what);
  // Sends the buffered request and collects every result; the rows of the last one. `named`:
  // the request ran a named prepared statement (see statement_lost).
  sql::rows finish(steady_time deadline, const std::string& what, bool named = false);
  [[noreturn]] void fail(const std::string& what);
  /// throw_mapped() for a failed statement; read_only_error naming the server for 25006.
  [[noreturn]] void refused(const std::string& what, const std::string& state,
                            const std::string& message);

  PGconn* c_ = nullptr;
  int stop_fd_;
  int call_stop_fd_ = -1;                 // see watch_stop()
  milliseconds stop_grace_{};             // how long a stopped statement may still run
  std::optional<steady_time> stop_seen_;  // when call_stop_fd_ became readable
  scrubber scrub_;
  bool fatal_ = false;           // the server sent a FATAL notice while idle: the session is ending
  std::function<void()> ended_;  // see on_ended()
};

}  // namespace sqlock::postgres
