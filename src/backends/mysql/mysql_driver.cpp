// The mysql-connector-c++ 1.1 driver of the MySQL backend: the only file that includes the
// connector's headers. Its `sql::` namespace is always written `::sql::`; sqlock's is
// `sqlock::sql::`. Every connector exception is mapped here, in rethrow(), and nowhere else.
// Over 500 lines for that reason: what touches the connector stays in this one file.
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/metadata.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/resultset_metadata.h>
#include <cppconn/statement.h>
#include <mysql_connection.h>
#include <mysql_driver.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <utility>

#include <utf8.h>
#include <mutex>

#include "core/process_instance.hpp"
#include "dialect.hpp"
#include "mysql_driver.hpp"
#include "session_settings.hpp"
#include "socket_deadline.hpp"
#include "sql/closing_sessions.hpp"
#include "sql/connection_budget.hpp"

namespace sqlock::mysql::detail {
std::string server_address(const options& o) {
  return o.socket.empty() ? o.host + ":" + std::to_string(o.port) : o.socket;
}

std::string read_only_message(const std::string& where, const std::string& what) {
  return "the server at " + where + " " + what +
         ": it is read-only (read_only / super_read_only: a replica?); point the URL at the "
         "primary (the writable server)";
}

namespace {

// True once the process exits (an exit handler registered with the driver): the connector's
// static objects, the driver among them, are destroyed after the exit handlers, so a thread that
// ends from then on (one of a client destroyed during exit, joined by its destructor) must not
// call into the driver.
std::atomic<bool> process_exiting{false};

::sql::mysql::MySQL_Driver* driver() {
  // get_mysql_driver_instance() is not safe to call concurrently the first time.
  static std::once_flag once;
  static ::sql::mysql::MySQL_Driver* d = nullptr;
  std::call_once(once, [] {
    d = ::sql::mysql::get_mysql_driver_instance();
    std::atexit([] { process_exiting = true; });
  });
  return d;
}

// The client library wants mysql_thread_init()/mysql_thread_end() around each thread's use of
// it (Connector/C++'s threadInit()/threadEnd()). This thread_local is only that per-thread init
// guard: it carries no state between calls, so it stays. (A thread that ends while the process
// exits leaves its per-thread state to the exit.)
struct thread_scope {
  thread_scope() { driver()->threadInit(); }
  ~thread_scope() {
    if (!process_exiting) driver()->threadEnd();
  }
  thread_scope(const thread_scope&) = delete;
  thread_scope& operator=(const thread_scope&) = delete;
};
void ensure_thread() {
  thread_local thread_scope scope;
}

const char* const migrate_hint =
    "; the sqlock schema is missing or out of date: run `sqlock migrate --url '<your url>'` (or "
    "apply `sqlock migrate --print` with the mysql client)";

// The one place native errors become sqlock errors. Call only inside a catch block.
// `lock_call`: the error came from a lock operation's CALL. A routine that does not exist there
// is retried (transient): `sqlock migrate` on a live server drops and re-creates each routine,
// and calls in that short window must wait it out; a schema that is really missing was already
// reported by connect()'s schema check, and still names `sqlock migrate` after the retries.
// `where` ("host:port" or the socket) names the server in a read-only refusal.
[[noreturn]] void rethrow(const std::string& what, bool lock_call = false,
                          const std::string& where = {}) {
  try {
    throw;
  } catch (const sqlock::error&) {
    throw;
  } catch (const ::sql::SQLException& e) {
    const int code = e.getErrorCode();
    std::string msg = what + ": " + e.what() + " (MySQL error " + std::to_string(code) +
                      ", SQLSTATE " + e.getSQLState() + ")";
    if (is_transient_error(code)) throw sql::conflict_error(msg, std::to_string(code));
    // A Galera node out of the Primary component, or still joining, refuses every statement
    // ("WSREP has not yet prepared node for application use"): retried until the deadline, for
    // the node rejoins (or the caller's deadline says it did not).
    if (code == 1047 && std::string_view(e.what()).find("WSREP") != std::string_view::npos)
      throw sql::transient_error(msg, std::to_string(code));
    // No slot for a new session: retried until the call's deadline (sql_engine.hpp).
    if (code == 1040)  // ER_CON_COUNT_ERROR: the server's max_connections
      throw sql::server_full(msg + " — the server had too many clients (max_connections)");
    if (code == 1203 ||  // ER_TOO_MANY_USER_CONNECTIONS: the global max_user_connections
        (code == 1226 && msg.find("max_user_connections") != std::string::npos))
      throw sql::server_full(msg +
                             " — the server had too many clients of this user "
                             "(max_user_connections)");
    if (is_connection_error(code)) throw connection_error(msg);
    // 1290 (ER_OPTION_PREVENTS_STATEMENT) names the option: only --read-only is the server's
    // state; 1836 (ER_READ_ONLY_MODE) is MySQL's.
    const std::string text = e.what();
    if (code == 1836 || (code == 1290 && (text.find("read-only") != std::string::npos ||
                                          text.find("read_only") != std::string::npos)))
      throw read_only_error(read_only_message(where.empty() ? "?" : where, "refused a write") +
                                " (" + text + ", MySQL error " + std::to_string(code) + ")",
                            std::to_string(code));
    switch (code) {
      case 1044:  // access denied to database
      case 1045:  // access denied (bad user/password)
      case 1698:  // access denied (auth plugin)
        throw auth_error(msg);
      case 1049:  // unknown database
        throw config_error(msg);
      case 1142:  // command denied
      case 1143:  // column denied
      case 1370:  // execute command denied on routine
        throw auth_error(
            msg + "; grant the user EXECUTE on the sqlock schema (see docs/backends/mysql.md)");
      case 1305:  // PROCEDURE/FUNCTION does not exist
        if (lock_call) throw sql::transient_error(msg + migrate_hint, std::to_string(code));
        throw schema_error(msg + migrate_hint);
      case 1146:  // table does not exist
        throw schema_error(msg + migrate_hint);
      default:
        throw backend_error(msg, std::to_string(code));
    }
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw backend_error(what + ": " + e.what());
  } catch (...) {
    throw backend_error(what + ": unknown error from mysql-connector-c++");
  }
}

sql::row read_row(::sql::ResultSet& rs, unsigned cols) {
  sql::row r;
  r.reserve(cols);
  for (unsigned c = 1; c <= cols; ++c) {
    if (rs.isNull(c))
      r.emplace_back(std::nullopt);
    else
      r.emplace_back(rs.getString(c).asStdString());
  }
  return r;
}

sql::rows read_all(::sql::ResultSet& rs) {
  sql::rows out;
  unsigned cols = rs.getMetaData()->getColumnCount();
  while (rs.next()) out.push_back(read_row(rs, cols));
  return out;
}

// How long a migration waits for another one of the same database (a migration may rebuild
// tables).
constexpr milliseconds migration_wait{5 * 60 * 1000};

int seconds_ceil(milliseconds ms) {
  return static_cast<int>(std::max<std::int64_t>(1, (ms.count() + 999) / 1000));
}

// A session just opened and the socket it uses (-1 when it could not be told apart).
struct native {
  std::unique_ptr<::sql::Connection> conn;
  int fd = -1;
};
// Connects with every timeout at most `limit` (whole seconds, rounded up).
native connect_native(const options& o, milliseconds limit);

// Connects on first use, when the call's deadline is known; a connection that was closed (a
// timeout, a reset) stays closed.
class connector_connection final : public connection {
 public:
  connector_connection(options o, std::shared_ptr<sql::connection_counter> counter)
      : opts_(std::move(o)), counter_(std::move(counter)) {}
  ~connector_connection() override { close(); }  // the server frees the session's GET_LOCK locks

  sql::rows run(const sql::operation& op, const sql::params& p, steady_time deadline) override {
    ensure_thread();
    if (!p.name.empty()) check_name(p.name, "lock name");
    if (!p.prefix.empty()) check_name(p.prefix, "name prefix");
    const auto bound = exchange_bound(deadline, opts_.timeout);
    ensure_open(bound);
    watched_call watch(fd_, bound);
    try {
      auto out = run_statements(op, p);
      if (watch.finish()) close(true);  // answered just as the socket was shut down: it is dead
      return out;
    } catch (...) {
      if (watch.finish()) {
        close(true);
        throw connection_error("MySQL operation '" + op.key +
                               "' timed out: no answer by its deadline");
      }
      try {
        rethrow("MySQL operation '" + op.key + "' failed", true, server_address(opts_));
      } catch (const connection_error&) {
        // A reset or the connector's own timeout: the session's state is unknown; never reuse it.
        close();
        throw;
      }
    }
  }

  int socket() const noexcept override { return fd_; }

  std::uint64_t server_id(steady_time deadline) override {
    if (id_ == 0) {
      auto r = query("SELECT CONNECTION_ID()", deadline);
      id_ = sql::decode_u64(r.empty() || r[0].empty() ? std::nullopt : r[0][0], "CONNECTION_ID()");
    }
    return id_;
  }

  bool alive() noexcept override {
    ensure_thread();
    if (!conn_) return false;
    try {
      watched_call watch(fd_, std::chrono::steady_clock::now() + opts_.timeout);
      exec_text("DO 0");
      if (watch.finish()) {
        close(true);
        return false;
      }
      return true;
    } catch (...) {
      close();
      return false;
    }
  }

  void execute_script(std::string_view script) override {
    ensure_thread();
    ensure_open(std::chrono::steady_clock::now() + opts_.timeout);
    for (const auto& stmt : split_script(script)) {
      try {
        exec_text(stmt);
      } catch (...) {
        auto first_line = stmt.substr(0, stmt.find('\n'));
        rethrow("MySQL script statement failed [" + first_line.substr(0, 120) + "]", false,
                server_address(opts_));
      }
    }
  }

  void begin_migration() override {
    const auto until = std::chrono::steady_clock::now() + migration_wait;
    // Each GET_LOCK waits at most half the I/O timeout, so that its answer fits in the read
    // timeout; repeated until the other migration ends or `until`.
    const auto chunk = std::max(opts_.timeout / 2 - milliseconds(100), milliseconds(100));
    const std::string get = std::string("SELECT GET_LOCK(") + migration_lock_name + ", " +
                            std::to_string(chunk.count()) + " / 1000.0)";
    for (;;) {
      auto r = query(get, steady_time::max());
      if (!r.empty() && !r[0].empty() && r[0][0] == "1") return;
      if (!r.empty() && !r[0].empty() && !r[0][0])
        throw backend_error("MySQL migration lock: GET_LOCK answered NULL");
      if (std::chrono::steady_clock::now() + chunk > until)
        throw connection_error(
            "MySQL migration lock: another migration of this database still "
            "runs after " +
            std::to_string(migration_wait.count() / 1000) + " s");
    }
  }

  void end_migration(bool) noexcept override {
    if (!conn_) return;  // closed: the session's lock went with it
    try {
      query(std::string("DO RELEASE_LOCK(") + migration_lock_name + ")", steady_time::max());
    } catch (...) {
      close();  // not released: ending the session frees it
    }
  }

  sql::rows query(std::string_view text, steady_time deadline) override {
    ensure_thread();
    const auto bound = exchange_bound(deadline, opts_.timeout);
    ensure_open(bound);
    watched_call watch(fd_, bound);
    try {
      std::unique_ptr<::sql::Statement> st(conn_->createStatement());
      bool has_rs = st->execute(::sql::SQLString(text.data(), text.size()));
      auto out = drain(*st, has_rs);
      if (watch.finish()) close(true);  // answered just as the socket was shut down: it is dead
      return out;
    } catch (...) {
      if (watch.finish()) {
        close(true);
        throw connection_error("MySQL query timed out: no answer by its deadline");
      }
      rethrow("MySQL query failed", false, server_address(opts_));
    }
  }

 private:
  // Opens the session on first use, bounded by `bound` (whole seconds, rounded up).
  void ensure_open(steady_time bound) {
    if (conn_) return;
    if (opened_) throw connection_error("MySQL connection was closed after a failed call");
    auto left = std::chrono::ceil<milliseconds>(bound - std::chrono::steady_clock::now());
    if (left <= milliseconds(0)) throw connection_error("MySQL call not sent: its deadline passed");
    // A place in the budget first: a connection closed earlier counts until the server has
    // ended its session, so the server never sees more of this client's than the budget.
    if (counter_ && !counter_->reserve(sql::connection_wait_deadline(bound)))
      throw sql::pool_busy(
          "every connection of the MySQL client's budget stayed open until the call's deadline "
          "(a closed one's server session had not ended)");
    native n;
    try {
      left = std::chrono::ceil<milliseconds>(bound - std::chrono::steady_clock::now());
      if (left <= milliseconds(0))
        throw connection_error("MySQL call not sent: its deadline passed");
      n = connect_native(opts_, left);
    } catch (...) {
      if (counter_) counter_->closed();
      throw;
    }
    conn_ = std::move(n.conn);
    fd_ = n.fd;
    // The socket kept open beside the connector's: the connector closes its own on a failed
    // read, and the server's session is watched on this one after close().
    if (counter_ && fd_ >= 0) kept_fd_ = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
    opened_ = true;
    if (counter_) counter_->connected();
  }

  // Closes the session; `shut_down`: the watchdog shut its socket down at a deadline. The
  // connection counts in the budget until the server has ended its session
  // (sql::closing_sessions), which may run the statement that timed out for a while yet.
  void close(bool shut_down = false) noexcept {
    fd_ = -1;
    const int kept = std::exchange(kept_fd_, -1);
    if (!conn_) return;
    try {
      cache_.clear();
      conn_.reset();
    } catch (...) {
      // Closing a broken connection may throw; it is gone either way (reset() let go first).
    }
    if (!counter_) return;
    if (kept >= 0)
      sql::closing_sessions::instance().add(
          kept, [c = counter_] { c->closed(); }, shut_down);
    else
      counter_->closed();
  }

  // The statements of `op`: one alone, several in one transaction (the rows of the last).
  sql::rows run_statements(const sql::operation& op, const sql::params& p) {
    if (op.statements.size() == 1) return run_one(op.key, 0, op.statements[0], p);
    exec_text("START TRANSACTION");
    try {
      sql::rows out;
      for (std::size_t i = 0; i < op.statements.size(); ++i)
        out = run_one(op.key, i, op.statements[i], p);
      exec_text("COMMIT");
      return out;
    } catch (...) {
      try {
        exec_text("ROLLBACK");
      } catch (...) {
        // The connection may be gone; the server rolls back on its own then.
      }
      throw;
    }
  }

  struct prepared {
    std::unique_ptr<::sql::PreparedStatement> st;
    std::vector<std::string> names;
  };

  // Reads every result of a statement (a CALL returns its result sets and a final status);
  // the rows of the last result set count. Leaving a result unread would put the connection
  // out of sync ("Commands out of sync") for the next statement.
  template <class Statement>
  static sql::rows drain(Statement& st, bool has_rs) {
    sql::rows out;
    for (;;) {
      if (has_rs) {
        std::unique_ptr<::sql::ResultSet> rs(st.getResultSet());
        if (rs) out = read_all(*rs);
      }
      has_rs = st.getMoreResults();
      if (!has_rs) break;
    }
    return out;
  }

  void exec_text(const std::string& text) {
    std::unique_ptr<::sql::Statement> st(conn_->createStatement());
    bool has_rs = st->execute(text);
    drain(*st, has_rs);
  }

  sql::rows run_one(const std::string& key, std::size_t index, const std::string& text,
                    const sql::params& p) {
    const std::string cache_key = key + "#" + std::to_string(index);
    for (int attempt = 0;; ++attempt) {
      auto it = cache_.find(cache_key);
      if (it == cache_.end()) {
        auto c = sql::compile(text, sql::placeholder::question);
        prepared pr;
        pr.st.reset(conn_->prepareStatement(c.text));
        pr.names = std::move(c.names);
        it = cache_.emplace(cache_key, std::move(pr)).first;
      }
      auto& pr = it->second;
      try {
        pr.st->clearParameters();
        for (std::size_t i = 0; i < pr.names.size(); ++i) {
          sql::value v = sql::lookup(p, pr.names[i]);
          auto idx = static_cast<unsigned>(i + 1);
          if (v.is_int)
            pr.st->setInt64(idx, v.i);
          else
            pr.st->setString(idx, ::sql::SQLString(v.s.data(), v.s.size()));
        }
        bool has_rs = pr.st->execute();
        return drain(*pr.st, has_rs);
      } catch (const ::sql::SQLException& e) {
        // 1615: the routine was re-created (migrate) since we prepared: prepare again once.
        if (e.getErrorCode() != 1615 || attempt > 0) throw;
        cache_.erase(it);
      }
    }
  }

  std::unique_ptr<::sql::Connection> conn_;
  std::map<std::string, prepared> cache_;
  options opts_;
  std::shared_ptr<sql::connection_counter> counter_;  // null: not counted
  int fd_ = -1;
  int kept_fd_ = -1;  // a duplicate of fd_ while open, for sql::closing_sessions
  bool opened_ = false;
  std::uint64_t id_ = 0;  // CONNECTION_ID() once asked (0: not yet)
};

}  // namespace

void check_name(std::string_view name, const char* what) {
  if (name.size() > max_name_bytes)
    throw config_error(std::string(what) + " is " + std::to_string(name.size()) +
                       " bytes long; MySQL stores at most " + std::to_string(max_name_bytes));
  if (name.find('\0') != std::string_view::npos || !utf8::is_valid(name.begin(), name.end()))
    throw config_error(std::string(what) +
                       " is not valid UTF-8 text (MySQL stores names as utf8mb4, without NUL "
                       "bytes)");
}

namespace {
// The process's one-connect-at-a-time gate (connect_native()).
struct connect_gate : std::timed_mutex {};

native connect_native(const options& o, milliseconds limit) {
  ::sql::ConnectOptionsMap m;
  if (!o.socket.empty()) {
    m["hostName"] = ::sql::SQLString("unix://" + o.socket);
  } else {
    m["hostName"] = ::sql::SQLString(o.host.empty() ? std::string("127.0.0.1") : o.host);
    m["port"] = o.port > 0 ? o.port : 3306;
  }
  if (!o.user.empty()) m["userName"] = ::sql::SQLString(o.user);
  m["password"] = ::sql::SQLString(o.password);
  m["schema"] = ::sql::SQLString(o.database);
  m["OPT_CHARSET_NAME"] = ::sql::SQLString("utf8mb4");
  m["OPT_RECONNECT"] = false;  // a silent reconnect would drop session-scoped locks unseen
  if (!o.ssl_mode.empty()) {
    static const std::map<std::string, int> modes = {
        {"disabled", ::sql::SSL_MODE_DISABLED},
        {"preferred", ::sql::SSL_MODE_PREFERRED},
        {"required", ::sql::SSL_MODE_REQUIRED},
        {"verify_ca", ::sql::SSL_MODE_VERIFY_CA},
        {"verify_identity", ::sql::SSL_MODE_VERIFY_IDENTITY}};
    auto it = modes.find(o.ssl_mode);
    if (it == modes.end())
      throw config_error(
          "MySQL ssl_mode must be disabled, preferred, required, verify_ca or "
          "verify_identity (got '" +
          o.ssl_mode + "')");
    m["OPT_SSL_MODE"] = it->second;
  }
  if (!o.ssl_ca.empty()) m["sslCA"] = ::sql::SQLString(o.ssl_ca);
  if (!o.ssl_capath.empty()) m["sslCAPath"] = ::sql::SQLString(o.ssl_capath);
  if (!o.ssl_cert.empty()) m["sslCert"] = ::sql::SQLString(o.ssl_cert);
  if (!o.ssl_key.empty()) m["sslKey"] = ::sql::SQLString(o.ssl_key);
  if (!o.ssl_cipher.empty()) m["sslCipher"] = ::sql::SQLString(o.ssl_cipher);
  if (!o.ssl_crl.empty()) m["sslCRL"] = ::sql::SQLString(o.ssl_crl);
  if (!o.tls_version.empty()) m["OPT_TLS_VERSION"] = ::sql::SQLString(o.tls_version);
  const std::string where = server_address(o);
  try {
    // One connect at a time in the process, so the socket that appeared is this connection's;
    // waiting for another connect counts against this call's time. A child forked while a
    // thread of its parent connected has a gate of its own (process_instance): that connect
    // does not go on in the child, and its copy of the parent's gate would stay locked.
    std::unique_lock g(process_instance<connect_gate>(), std::defer_lock);
    const auto start = std::chrono::steady_clock::now();
    if (!g.try_lock_for(limit))
      throw connection_error("MySQL connect to " + where +
                             " not started by its deadline: another connect of this process is "
                             "still waiting for its server");
    const auto left =
        limit - std::chrono::ceil<milliseconds>(std::chrono::steady_clock::now() - start);
    m["OPT_CONNECT_TIMEOUT"] = seconds_ceil(std::min(o.connect_timeout, left));
    m["OPT_READ_TIMEOUT"] = seconds_ceil(std::min(o.timeout, left));
    m["OPT_WRITE_TIMEOUT"] = seconds_ceil(std::min(o.timeout, left));
    const auto before = socket_inodes();
    std::unique_ptr<::sql::Connection> c(driver()->connect(m));
    const int fd = new_socket(before, o.port > 0 ? o.port : 3306, o.socket);
    g.unlock();
    c->setAutoCommit(true);
    // The handshake told the server's version: no round trip to tell MariaDB from MySQL.
    {
      const auto server =
          parse_server_version(c->getMetaData()->getDatabaseProductVersion().asStdString());
      std::unique_ptr<::sql::Statement> st(c->createStatement());
      st->execute(session_settings_statement(server, o.timeout));
    }
    return native{std::move(c), fd};
  } catch (...) {
    rethrow("cannot connect to MySQL at " + where + " as '" + o.user + "' (database '" +
            o.database + "')");
  }
}

}  // namespace

std::unique_ptr<connection> open_connection(const options& o,
                                            std::shared_ptr<sql::connection_counter> counter) {
  return std::make_unique<connector_connection>(o, std::move(counter));
}

}  // namespace sqlock::mysql::detail
