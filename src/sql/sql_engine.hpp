// The one SQL lock engine shared by every SQL backend (SQLite, PostgreSQL, MySQL, SOCI).
// The lock logic lives in SQL: stored functions/procedures on server databases (sql/<db>/),
// statement scripts on SQLite (sql/sqlite/). A backend contributes two things:
//   - a dialect: the text of each operation (usually one CALL/SELECT of a stored routine) and
//     how to read the schema version;
//   - a driver: how to open a connection and run an operation's statements with named
//     parameters (:name, :owner, :lease_ms, :holder, :fence, :prefix, :limit, :kind,
//     :permits, :mark_ms).
// Row modes also answer shared and permit requests (the dialect's `kinds` operations): their
// holds live in a table keyed (name, owner) beside the exclusive holds; a busy exclusive attempt
// made inside an acquire() call leaves a short-lived writer mark that keeps new shared holders
// out, cleared when that call ends.
// The engine pools connections, retries transient failures (deadlock, serialization, busy)
// with jittered backoff, decodes rows into lease/status values, and runs migrations.
// No vendor header is included here.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "engine_acquisition.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::sql {

/// A result row as text (NULL = nullopt); drivers convert numbers and times to text.
using row = std::vector<std::optional<std::string>>;
/// Rows of a result.
using rows = std::vector<row>;

/// The parameters an operation may use, bound by name (":name" in statement text).
struct params {
  std::string name;                ///< :name — lock name, verbatim
  std::string owner;               ///< :owner — owner token
  std::int64_t lease_ms = 0;       ///< :lease_ms — lease in milliseconds
  std::string holder;              ///< :holder — holder description
  std::int64_t fence = 0;          ///< :fence — fencing token (fence_check)
  std::string prefix;              ///< :prefix — name prefix (list)
  std::int64_t limit = 0;          ///< :limit — batch size (sweep)
  std::string mode;                ///< :mode — backend mode name
  std::string kind = "exclusive";  ///< :kind — "exclusive", "shared" or "permit"
  std::int64_t permits = 0;        ///< :permits — a permit request's number of permits (else 0)
  std::string holds;               ///< :holds — a JSON array of holds to record (advisory)
  std::int64_t mark_ms = 0;        ///< :mark_ms — lifetime of the writer mark a busy exclusive
                             ///< attempt leaves (0 = leave none: a try_lock() that will not wait)
  /// :key — the name's advisory-lock key, for a backend that computes it in the client
  /// (PostgreSQL advisory mode); a statement that uses :key with none set is refused
  std::optional<std::int64_t> key;
};

/// A bound value: integer or text.
struct value {
  bool is_int = false;  ///< true: use `i`; false: use `s`
  std::int64_t i = 0;   ///< integer value
  std::string_view s;   ///< text value (points into params)
};

/// Looks up a named parameter (without the colon); config_error for an unknown name.
value lookup(const params& p, std::string_view key);

/// Placeholder styles for compile().
enum class placeholder { dollar /* $1 */, question /* ? */, colon_name /* :p1 */ };

/// A statement rewritten for a driver: text with native placeholders + parameter names in order.
struct compiled {
  std::string text;                ///< statement text with native placeholders
  std::vector<std::string> names;  ///< parameter name for each placeholder, in order
};

/// Rewrites ":name" parameters to a native placeholder style. Skips string literals, quoted
/// identifiers, comments and "::" casts.
compiled compile(std::string_view statement, placeholder style);

/// The index just past the string literal or quoted identifier that opens at `s[open]` (a ', "
/// or ` character), or s.size() when it is not closed. A doubled quote character stands for
/// itself; a backslash escapes the next character inside the quote characters listed in
/// `backslash_quotes`. Shared by compile() ("'") and the MySQL script splitter ("'\"").
std::size_t quoted_end(std::string_view s, std::size_t open, std::string_view backslash_quotes);

/// One lock operation: one or more statements run atomically; the rows of the last one count.
struct operation {
  std::string key;                      ///< stable id ("acquire"), for statement caching
  std::vector<std::string> statements;  ///< statement texts with :name parameters
};

/// Marks an error the engine should retry (deadlock, serialization failure, busy database).
class transient_error : public backend_error {
 public:
  using backend_error::backend_error;
};

/// Every connection of a bounded pool stayed busy until the caller's deadline (or stop): nothing
/// was sent. An acquire attempt counts it as busy; anywhere else it is a connection_error.
class pool_busy : public connection_error {
 public:
  using connection_error::connection_error;
};

/// The server refused a new connection because it has too many clients (PostgreSQL SQLSTATE
/// 53300: max_connections, or a role's or database's CONNECTION LIMIT). Transient: the engine
/// tries again with capped jittered backoff until the call's deadline, then throws it.
class server_full : public connection_error {
 public:
  using connection_error::connection_error;
};

/// Counts the connections of one backend object, of every kind (statement pool, lock
/// sessions, listener): what backend::connections() reports. Thread-safe. With a limit (the
/// client's connection budget), a driver whose closed connections count until the server has
/// ended their sessions (closing_sessions.hpp) reserves a place before it connects, so the
/// server never sees more sessions of the client than the budget.
class connection_counter {
 public:
  /// `limit`: the most connections open at once that reserve() allows (0: no limit).
  explicit connection_counter(std::size_t limit = 0) : limit_(limit) {}
  /// A connection was made.
  void opened() noexcept;
  /// Counts one more connection open once fewer than the limit are, waiting for that until
  /// `deadline`; false then. Before a connect: connected() after it succeeded, closed() after
  /// it failed (or once the connection's session ended).
  bool reserve(steady_time deadline);
  /// The connection reserve() counted was made.
  void connected() noexcept;
  /// A connection counted by opened() or reserve() was closed.
  void closed() noexcept;
  /// The counts so far.
  connection_stats get() const noexcept;

 private:
  void count_open() noexcept;

  const std::size_t limit_;
  std::mutex m_;  // reserve() waits under it for closed()
  std::condition_variable cv_;
  std::atomic<std::uint64_t> opened_{0};
  std::atomic<std::size_t> open_{0};
  std::atomic<std::size_t> peak_{0};
};

/// Runs `fn`, retrying transient_error with capped jittered backoff until `budget` has passed
/// (then the last transient_error is thrown). For work outside run(): opening, migrating.
void retry_transient(const std::function<void()>& fn, milliseconds budget = milliseconds(10000));

/// One database connection. Not thread-safe: the engine hands it to one thread at a time.
class connection {
 public:
  virtual ~connection() = default;
  /// Runs `op` atomically (a transaction when it has several statements) and returns the rows
  /// of its last statement, by `deadline` (else connection_error, and the connection is not
  /// used again). Throws transient_error, connection_error or backend_error.
  virtual rows run(const operation& op, const params& p, steady_time deadline) = 0;
  /// Runs a script of several statements (a migration or routine file) as the DBA would.
  virtual void execute_script(std::string_view script) = 0;
  /// migrate() calls these around all it does (the version check, the scripts): a store that
  /// several processes may migrate at once serializes them here (a named lock of the database,
  /// a write transaction), so that each later one finds the version the earlier one left.
  /// end_migration() is called on every path: `completed` false after a failure (it must not
  /// throw then); true after success, when it may throw if the work did not take effect (a
  /// transaction that did not commit). Default: nothing.
  virtual void begin_migration() {}
  virtual void end_migration(bool completed) { (void)completed; }
  /// Plain query without parameters (schema checks); rows as text. Returns by `deadline` or
  /// the driver's I/O timeout, whichever comes first (else connection_error).
  virtual rows query(std::string_view sql, steady_time deadline) = 0;
  /// query() bounded by the driver's I/O timeout only.
  rows query(std::string_view sql) { return query(sql, steady_time::max()); }
};

/// An embedded SQL file.
struct sql_file {
  std::string_view name;  ///< file name ("V001__locks.sql")
  std::string_view text;  ///< file contents
};

/// The SQL files of one database, embedded at build time from migrations/<db>/ and sql/<db>/.
struct bundle {
  std::string_view db;               ///< "sqlite", "postgresql", "mysql"
  std::vector<sql_file> migrations;  ///< migrations/<db>/V*.sql, in version order
  std::vector<sql_file> routines;    ///< sql/<db>/*.sql, in name order
  /// A file of `routines` by name; config_error when absent.
  std::string_view routine(std::string_view file_name) const;
};

/// Version number of a migration file name "V012__x.sql" (12); config_error when malformed.
int migration_version(std::string_view file_name);

/// What a backend tells the engine about its database.
struct dialect {
  std::string kind;   ///< "sqlite", "postgresql", "mysql"
  std::string mode;   ///< "pessimistic", "optimistic", "advisory"
  operation acquire;  ///< rows: [fence|NULL, status?]; NULL fence = busy; status "retry" = CAS
                      ///< lost; status "mismatch:<kind>:<permits>" = the name's live holders
                      ///< are of another kind or number of permits (config_error)
  operation renew;    ///< rows: [truthy] = renewed
  operation release;  ///< rows: [truthy] = released
  operation list;     ///< rows: name, owner, fence, acquired_at, expires_at, mode, holder
  operation force_release;    ///< rows: [truthy] = something released
  operation sweep;            ///< rows: [count]
  operation fence_check;      ///< rows: [truthy] = :fence is the current holder's token
  operation events;           ///< rows: at, event, name, owner, fence, mode, holder, actor, detail
                              ///< (:prefix, :limit), newest first; no statements = no audit trail
  std::string version_query;  ///< one row, one column: current schema version; no row/NULL = 0
  std::string version_table_query;  ///< one row when the version table exists, none otherwise
  std::string versions_query;  ///< every recorded version, one per row (migrate() runs it as the
                               ///< installer, who may read the version table itself)
  std::vector<std::string> install_routines;  ///< routine files migrate() installs, in order
  /// Rewrites a file before it is run or printed (schema name substitution); identity if empty.
  std::function<std::string(std::string_view)> render;
  std::int64_t sweep_batch = 1000;  ///< :limit for sweep()
  bool notify = false;              ///< set when the backend offers a release_watch

  /// Shared and permit holds (row modes); `kinds` false = the backend offers exclusive only.
  bool kinds = false;
  operation acquire_shared;  ///< a shared (:kind 'shared') or permit (:kind 'permit', :permits)
                             ///< hold; rows as `acquire`
  operation renew_shared;    ///< rows: [truthy] = renewed; empty = `renew` covers them
  operation release_shared;  ///< rows: [truthy] = released
  operation clear_mark;      ///< removes the writer mark of (:name, :owner); rows ignored
  /// Run after `force_release` / `sweep` when those do not cover the shared holds themselves
  /// (SQLite's statement scripts count one table per operation); empty = not needed.
  operation force_release_shared;
  operation sweep_shared;  ///< see force_release_shared

  /// A peer's table layout (URL `compat=`, e.g. ShedLock's table) instead of sqlock's schema:
  /// migrate() runs `layout_ddl` (creating the table when absent, no version table) and
  /// migration_script() prints it; verify() runs `layout_check` (a row when the table exists,
  /// config_error otherwise). Such a layout stores no fencing token and keeps its rows (caps():
  /// no fencing, no sweep). Empty = sqlock's own schema.
  std::string layout_ddl;
  std::string layout_check;  ///< see layout_ddl
  std::string layout_table;  ///< the layout's table, named in messages
  /// Names longer than this many characters are refused with config_error before anything is
  /// sent (a peer's column width); 0 = no limit.
  std::size_t max_name_chars = 0;
};

/// Throws config_error unless `table` is a plain table name, optionally schema-qualified:
/// [A-Za-z_][A-Za-z0-9_]* (at most 63 characters) or two of them joined by '.'. `option`
/// names the URL option it came from. (It is spliced into SQL: a peer's table, compat=.)
void check_table_name(const std::string& table, std::string_view option);

/// Throws the config_error for a request whose kind or permits differ from the name's live
/// holders' (`status` is "mismatch:<kind>:<permits>", as an acquire operation returned it).
[[noreturn]] void kind_mismatch(const lock_request& req, std::string_view status);

/// Opens a new connection; throws connection_error when the server cannot be reached.
using connector = std::function<std::unique_ptr<connection>()>;

/// Applies the migrations newer than the database's version and then the dialect's routine
/// files, between c.begin_migration() and c.end_migration(). Returns the version afterwards.
int migrate(connection& c, const bundle& b, const dialect& d);
/// The whole install script (migrations + routines) as `sqlock migrate --print` shows it.
std::string migration_script(const bundle& b, const dialect& d);
/// The database's schema version (0 when the version table is missing), by `deadline`.
int schema_version(connection& c, const dialect& d, steady_time deadline = steady_time::max());
/// The newest migration version of a bundle.
int latest_version(const bundle& b);

/// Backend built from a dialect and a driver, with the store's admin and schema. Subclasses add
/// notification (watch_releases()), session-bound modes and anything else the database has
/// beyond the engine.
class engine_backend : public backend, public store_admin, public schema_owner {
 public:
  /// `pool_size` bounds idle connections kept (more are opened under load) unless
  /// `bounded`: then it bounds every connection of the pool, all of them are kept, and a call
  /// that finds them all busy waits for one within its deadline. `url_text` is shown
  /// (redacted) in describe(); `counter` (optional) is what connections() reports, which the
  /// connector's connections count themselves into.
  engine_backend(bundle b, dialect d, connector open, std::string url_text,
                 std::size_t pool_size = 4, bool bounded = false,
                 std::shared_ptr<connection_counter> counter = nullptr);

  /// attempt() of a single try: no writer mark.
  std::optional<lease_info> try_acquire(const lock_request& req, steady_time deadline) override;
  /// An engine_acquisition with the subclass's watch_releases() for `req`.
  std::unique_ptr<acquisition> make_acquisition(const lock_request& req,
                                                const wait_policy& policy) override;
  /// One attempt of `req`; `a` is the waiting request it belongs to (null for a single try):
  /// a busy exclusive attempt of a dialect with kinds then leaves the request's writer mark.
  /// What a subclass with attempts of its own overrides (try_acquire() and the engine's
  /// acquisition both come here).
  virtual std::optional<lease_info> attempt(const lock_request& req, steady_time deadline,
                                            engine_acquisition* a);
  /// How long a writer mark lives on the server unless refreshed by the writer's next busy
  /// attempt: longer than the wait between attempts (wait_policy::notify_recheck, 1 s).
  static constexpr milliseconds writer_mark{5000};
  /// Clears the writer mark of (`name`, `owner`) within a short bound; never throws.
  void clear_writer_mark(const std::string& name, const std::string& owner) noexcept;
  bool renew(const lease_info& lease, milliseconds duration, steady_time deadline) override;
  bool release(const lease_info& lease, steady_time deadline) override;
  std::vector<lock_status> list(std::string_view prefix) override;
  bool force_release(std::string_view name) override;
  std::vector<lock_event> events(std::string_view prefix, std::size_t limit) override;
  std::size_t sweep() override;
  capabilities caps() const noexcept override;
  std::string describe() const override;
  std::string kind() const override { return dialect_.kind; }
  std::string mode() const override { return dialect_.mode; }
  std::optional<connection_stats> connections() const override;
  store_admin* admin() noexcept override { return this; }
  schema_owner* schema() noexcept override { return this; }

  /// True when `fence` is the token of the current hold of `name` (fenced writes).
  bool fence_check(std::string_view name, std::uint64_t fence);
  /// Fails with config_error naming the migrate command unless the schema is current; returns
  /// by `deadline` (connection_error otherwise).
  void check_schema(steady_time deadline = steady_time::max()) override;
  /// connect()'s check: migrate() when auto-migration was opted into, else check_schema().
  void verify(steady_time deadline) override;
  /// Opt in to migrating at connect (URL flag `migrate=auto`); off by default for servers.
  void set_auto_migrate(bool on) { auto_migrate_ = on; }
  /// Applies migrations; returns the version afterwards.
  int migrate() override;
  /// The install script for --print.
  std::string migration_script() const override;

  /// Runs an operation on a pooled connection by `deadline`, retrying transient errors and
  /// replacing a broken pooled connection once while time is left. A bounded pool's
  /// connection is waited for until a little before `deadline` (or `stop`): pool_busy then. A
  /// server with too many clients (server_full) is tried again with capped jittered backoff
  /// until `deadline` or `stop`.
  rows run(const operation& op, const params& p, steady_time deadline,
           const std::stop_token& stop = {});
  /// The deadline of an administrative call (list, force_release, sweep, fence_check, schema
  /// checks): now + the I/O timeout.
  steady_time admin_deadline() const;
  /// Sets the I/O timeout: the longest one exchange with the server may take (URL `timeout=`).
  void set_io_timeout(milliseconds t) { io_timeout_ = t; }
  /// The I/O timeout.
  milliseconds io_timeout() const { return io_timeout_; }
  /// Runs `fn` with a pooled connection (dropped from the pool if `fn` throws connection_error),
  /// waiting for one of a bounded pool until `deadline` or `stop` (pool_busy).
  void with_connection(const std::function<void(connection&)>& fn,
                       steady_time deadline = steady_time::max(), const std::stop_token& stop = {});

  /// Parameters of an acquire: name, owner, lease, holder and this backend's mode.
  params params_for(const lock_request& req) const;
  /// Parameters of a renew/release of `l` (lease 0 unless given) in this backend's mode.
  params params_for(const lease_info& l, milliseconds lease = milliseconds(0)) const;

  const dialect& get_dialect() const { return dialect_; }
  const bundle& get_bundle() const { return bundle_; }

 protected:
  /// The wait of one waiting request that wakes on releases (null = back off): what a
  /// subclass with notifications overrides.
  virtual std::unique_ptr<release_watch> watch_releases(const lock_request& req);
  /// Hands out an idle connection or opens one; a bounded pool at its size waits for one to
  /// come back until `deadline` or `stop` (pool_busy), callers served in arrival order.
  std::unique_ptr<connection> checkout(steady_time deadline, const std::stop_token& stop);
  /// Returns a healthy connection to the pool.
  void checkin(std::unique_ptr<connection> c);
  /// A checked-out connection was dropped (broken): its place in the pool is free again.
  void discard(std::unique_ptr<connection> c);

  bundle bundle_;
  dialect dialect_;
  connector open_;
  std::string url_text_;
  std::size_t pool_size_;
  bool bounded_;
  std::shared_ptr<connection_counter> counter_;
  std::mutex pool_mutex_;
  // A caller waiting for a bounded pool's connection, served in arrival order: checkin() hands
  // it the connection, discard() the place of one it may open.
  struct pool_waiter {
    std::condition_variable_any cv;
    std::unique_ptr<connection> given;
    bool may_open = false;
  };
  std::size_t pool_open_ = 0;  // connections of the pool: idle, in use, opening
  std::vector<std::unique_ptr<connection>> idle_;
  std::deque<pool_waiter*> pool_waiters_;  // guarded by pool_mutex_
  bool auto_migrate_ = false;
  milliseconds io_timeout_{5000};
};

/// True for "1", "t", "true", "yes" (any case); false for NULL and anything else.
bool truthy(const std::optional<std::string>& v);
/// True when the first column of the first row is truthy: the answer of renew, release,
/// force_release and fence_check routines.
bool says_true(const rows& r);
/// A fencing token (or count) as the database printed it; backend_error naming `what` when it
/// is NULL or not a decimal number.
std::uint64_t decode_u64(const std::optional<std::string>& v, const char* what);

}  // namespace sqlock::sql
