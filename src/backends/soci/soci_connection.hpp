// Internals of the SOCI backend: the per-database "flavor" (which dialect, how to run a script,
// how to read a native error, how to take a transaction-scoped lock) and the driver of the
// shared SQL engine over soci::session (sessions owned by sqlock, a caller's session, or a
// caller's connection_pool). Vendor headers stay in the flavor_*.cpp files.
#pragma once

#include <soci/soci.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sql/sql_engine.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/soci/soci.hpp"
#include "sqlock/url.hpp"

namespace sqlock::soci::detail {

/// How a native error is treated.
/// conflict: a deadlock or lock-wait timeout against another transaction (retried; in an acquire
/// it counts as busy, so one still met at the deadline is not obtained, as natively).
/// server_full: no slot for a new session (too many clients), retried within the deadline.
enum class error_kind { transient, conflict, connection, server_full, auth, config, backend };

/// An embedded SQL file of this backend (src/backends/soci/sql/<db>/).
std::string_view own_sql(std::string_view db, std::string_view file);

/// A value of a SOCI connection string (libpq's and SOCI mysql's syntax alike), single-quoted
/// with \ and ' escaped.
std::string quoted(const std::string& v);

/// Where the code of `s` starts, after blanks, SQL comments and (when `semicolons`) stray ';'
/// (s.size() if none).
std::size_t code_start(std::string_view s, bool semicolons);

/// Throws the config_error for advisory mode through SOCI: it holds `holds` on a dedicated
/// connection per hold, which only the native `scheme`:// backend manages.
[[noreturn]] void refuse_advisory(const std::string& holds, const std::string& scheme);

/// The native connection handle (`conn_`) of `s`, an open session of SOCI backend `name`
/// (whose session backend class is `Backend`); usage_error for any other session.
template <class Backend>
auto native_handle(::soci::session& s, const std::string& name) {
  // SOCI does not export the backend classes' type info: check the name, then cast.
  if (!s.get_backend() || s.get_backend_name() != name)
    throw usage_error("the SOCI session is not an open " + name + " session");
  auto* be = static_cast<Backend*>(s.get_backend());
  if (!be->conn_) throw usage_error("the SOCI session is not an open " + name + " session");
  return be->conn_;
}

/// What differs between the databases behind SOCI.
class flavor {
 public:
  virtual ~flavor() = default;
  /// SOCI backend name: "sqlite3", "postgresql", "mysql".
  virtual std::string soci_name() const = 0;
  /// The shared bundle of migrations and routines.
  virtual const sql::bundle& bundle() const = 0;
  /// The engine dialect for `o.mode` (config_error for modes this flavor cannot run).
  virtual sql::dialect dialect(const options& o) const = 0;
  /// The engine dialect of ShedLock's table `table` on this database (compat=shedlock).
  virtual sql::dialect shedlock_dialect(const std::string& table) const = 0;
  /// SOCI connection string for a soci+<db> URL (the URL's sqlock parameters already taken);
  /// the client's own connect/read timeouts follow `o.io_timeout` unless the URL sets them.
  virtual std::string connect_string(const url& u, const options& o) const = 0;
  /// URL parameters passed to the driver (beyond mode/pool/migrate).
  virtual std::vector<std::string> driver_params() const { return {}; }
  /// Applies the URL's driver parameters to `o` (busy_timeout, schema).
  virtual void apply_params(const url& u, options& o) const;
  /// Opens a session with SOCI's statically linked backend factory.
  virtual std::unique_ptr<::soci::session> open(const std::string& connect) const = 0;
  /// Sets up a session sqlock opened or was given (SQLite: SQL functions, busy timeout).
  virtual void prepare_session(::soci::session&, const options&, bool /*owned*/) const {}
  /// The session's socket, which the watchdog shuts down at a call's deadline; -1 when the
  /// database is not reached through a socket (SQLite).
  virtual int socket_of(::soci::session&) const { return -1; }
  /// Before a call on a session sqlock opened: bounds the client's own waits by `deadline`
  /// (SQLite: the busy timeout, at most `o.busy_timeout`).
  virtual void limit_wait(::soci::session&, steady_time /*deadline*/, const options&) const {}
  /// True when a transaction is open on the session.
  virtual bool in_transaction(::soci::session& s) const = 0;
  /// Runs a migration or routine file as the database's own client would.
  virtual void execute_script(::soci::session& s, std::string_view script) const = 0;
  /// Splits an operation's text into single statements.
  virtual std::vector<std::string> split(std::string_view text) const = 0;
  /// Statement that opens the transaction of a multi-statement operation.
  virtual std::string begin_statement() const { return "BEGIN"; }
  /// Called after each statement (MySQL: drains the extra result of a CALL).
  virtual void after_statement(::soci::session&) const {}
  /// True when rows are read by read_rows() instead of SOCI's dynamic row (MySQL: SOCI 4.0
  /// cannot describe a NULL-typed column such as `SELECT NULL AS fence`).
  virtual bool raw_rows() const { return false; }
  /// The rows of the statement SOCI just executed (only when raw_rows()).
  virtual sql::rows read_rows(::soci::statement&) const { return {}; }
  /// Classifies a SOCI exception; `code` receives the SQLSTATE or native code.
  virtual error_kind classify(const ::soci::soci_error& e, std::string& code) const = 0;
  /// Classifies a failure to open a session: refused credentials are auth, what is not
  /// configuration is a connection error (the server may come back).
  virtual error_kind classify_open(const ::soci::soci_error& e, std::string& code) const;
  /// True when sessions reach a server over the network: opening one may hang, so it runs
  /// on a helper thread the caller stops waiting for at its deadline.
  virtual bool remote() const { return false; }
  /// The longest name the schema stores, in bytes; 0 = names are bytes of any length
  /// (SQLite). Servers store names as UTF-8 text: they must be valid UTF-8 without NUL.
  virtual std::size_t max_name_bytes() const { return 0; }
  /// config_error for a name this database cannot store, before anything is sent.
  void check_name(std::string_view name) const;
  /// One attempt at a transaction-scoped lock in the session's open transaction.
  /// `wait_ok`: false when waiting would block a lease-based holder (stop retrying).
  virtual bool try_xact(::soci::session& s, std::string_view name, const options& o,
                        bool& wait_ok) const = 0;
  /// Whether this flavor's URL-opened backends create the schema on first use (SQLite).
  virtual bool migrates_on_open() const { return false; }
};

/// The dialect `o` asks for on flavor `f`: sqlock's for `o.mode`, or a peer's layout for
/// `o.compat` (config_error for a layout or mode the flavor cannot carry).
sql::dialect dialect_of(const flavor& f, const options& o);

/// The flavor of a SOCI backend name ("sqlite3", ...); config_error when not built in.
const flavor& flavor_named(const std::string& soci_name);
/// The flavor a soci+<db> URL names; config_error for another scheme (soci_url.cpp).
const flavor& flavor_of_url(const url& u);
/// The options a soci+<db> URL of flavor `f` gives (the flavor's own parameters included);
/// config_error for a parameter neither knows (soci_url.cpp).
options options_from_url(const url& u, const flavor& f);
/// The flavor of a session (by its backend name).
const flavor& flavor_of(::soci::session& s);

const flavor* sqlite3_flavor();     ///< always built
const flavor* postgresql_flavor();  ///< nullptr unless built with the PostgreSQL dialect
const flavor* mysql_flavor();       ///< nullptr unless built with the MySQL dialect

/// Runs `fn`, translating every exception into a sqlock error (the one place native errors
/// are mapped). `what` prefixes the message; `opening`: `fn` opens a session.
void guarded(const flavor& f, const std::string& what, const std::function<void()>& fn,
             bool opening = false);

/// Opens and prepares a session sqlock owns, by `deadline` (connection_error after it: a
/// remote open still under way is abandoned to its helper thread, which closes the session
/// when it completes).
std::unique_ptr<::soci::session> open_session(const flavor& f, const std::string& connect,
                                              const options& o, steady_time deadline);

/// Prepared statements of one session, by operation key.
class statement_cache;

/// Runs one statement text with parameters on a session and returns its rows as text (without
/// caching). Used for the transaction-scoped helpers; errors are SOCI exceptions.
sql::rows run_once(const flavor& f, ::soci::session& s, const std::string& text,
                   const sql::params& p);

/// Where a connection gets its session from.
class session_source {
 public:
  /// A session in use, returned to its source by the destructor.
  struct lease {
    ::soci::session* session = nullptr;
    statement_cache* cache = nullptr;
    std::function<void()> done;
    bool borrowed = false;  ///< the session is the caller's: check for an open transaction,
                            ///< never shut its socket down (it is not ours to break)
    lease() = default;
    lease(lease&&) = default;
    lease& operator=(lease&&) = delete;
    lease(const lease&) = delete;
    ~lease() {
      if (done) done();
    }
  };
  virtual ~session_source() = default;
  /// Takes a session (may block while every pooled session is in use); a source that opens
  /// its session on first use does so by `deadline`.
  virtual lease take(steady_time deadline) = 0;
  /// Forgets the cached statements of a session after an error.
  virtual void reset(lease& l);
};

/// A session sqlock opens itself on first use (one per engine connection): opening and calls
/// are bounded by their deadline (the watchdog shuts a late call's socket down); while open it
/// counts in `counter`.
std::unique_ptr<session_source> owned_source(const flavor& f, const std::string& connect,
                                             const options& o,
                                             std::shared_ptr<sql::connection_counter> counter);
/// The caller's session, shared by every engine connection under one mutex.
std::shared_ptr<session_source> borrowed_source(::soci::session& s);
/// The caller's pool; each pooled session is prepared (flavor::prepare_session) on first use.
std::shared_ptr<session_source> pool_source(::soci::connection_pool& p, const flavor& f,
                                            const options& o);

/// The engine's driver over a session source. Calls on sessions sqlock opened return by their
/// deadline (query() by now + `io_timeout`); the caller's own sessions are bounded only by
/// the caller's client settings.
class soci_connection final : public sql::connection {
 public:
  soci_connection(const flavor& f, std::shared_ptr<session_source> src, const options& o);
  sql::rows run(const sql::operation& op, const sql::params& p, steady_time deadline) override;
  void execute_script(std::string_view script) override;
  sql::rows query(std::string_view text, steady_time deadline) override;

 private:
  /// Runs `fn` on a session of the source, bounded by `deadline`.
  void on_session(const std::string& what, steady_time deadline,
                  const std::function<void(session_source::lease&)>& fn);

  const flavor& flavor_;
  std::shared_ptr<session_source> src_;
  options opts_;
};

/// `o.io_timeout` in whole seconds, rounded up, at least `min_s`: for the clients' own
/// connect/read timeouts.
std::string timeout_seconds(const options& o, int min_s);

}  // namespace sqlock::soci::detail
