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

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "bundle.hpp"
#include "connection.hpp"
#include "connection_counter.hpp"
#include "engine_acquisition.hpp"
#include "hold_recorder.hpp"
#include "mark_clearer.hpp"
#include "migrations.hpp"
#include "params.hpp"
#include "rows.hpp"
#include "sql_dialect.hpp"
#include "sql_errors.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "statements.hpp"

namespace sqlock::sql {

/// Backend built from a dialect and a driver, with the store's admin and schema. Subclasses add
/// notification (watch_releases()), session-bound modes and anything else the database has
/// beyond the engine.
class engine_backend : public backend,
                       public store_admin,
                       public hold_breaker,
                       public audit_trail,
                       public expiry_sweeper,
                       public waiter_lister,
                       public schema_owner {
 public:
  /// `pool_size` bounds idle connections kept (more are opened under load) unless
  /// `bounded`: then it bounds every connection of the pool, all of them are kept, and a call
  /// that finds them all busy waits for one within its deadline. `url_text` is shown
  /// (redacted) in describe(); `counter` (optional) is what connections() reports, which the
  /// connector's connections count themselves into.
  engine_backend(bundle b, dialect d, connector open, std::string url_text,
                 std::size_t pool_size = 4, bool bounded = false,
                 std::shared_ptr<connection_counter> counter = nullptr);
  /// Writes what its waiting-request recorder still has (bounded), then stops it.
  ~engine_backend() override;

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
  /// How long clearing a writer mark (or a batch of them) may take, past the caller's deadline;
  /// bounded because a mark also expires by itself.
  static constexpr milliseconds mark_clear_bound{1000};
  /// Clears the writer mark of (`name`, `owner`) within a short bound; never throws.
  void clear_writer_mark(const std::string& name, const std::string& owner) noexcept;
  /// clear_writer_mark(), then `then`: with the dialect's clear_marks in one statement with
  /// the marks of the other requests ending meanwhile (mark_clearer; `then` may then run later
  /// on another thread), else at once. Never throws.
  void clear_writer_mark_then(std::string name, std::string owner,
                              std::function<void()> then) noexcept;
  bool renew(const lease_info& lease, milliseconds duration, steady_time deadline) override;
  bool release(const lease_info& lease, steady_time deadline) override;
  std::vector<lock_status> list(std::string_view prefix) override;
  bool force_release(std::string_view name, std::string_view actor) override;
  std::vector<lock_event> events(std::string_view prefix, std::size_t limit) override;
  std::size_t sweep() override;
  capabilities caps() const noexcept override;
  std::string describe() const override;
  std::string kind() const override { return dialect_.kind; }
  std::string mode() const override { return dialect_.mode; }
  std::optional<connection_stats> connections() const override;
  store_admin* admin() noexcept override { return this; }
  /// The admin calls the dialect has statements for.
  hold_breaker* breaker() noexcept override {
    return dialect_.force_release.statements.empty() ? nullptr : this;
  }
  audit_trail* audit() noexcept override {
    return dialect_.events.statements.empty() ? nullptr : this;
  }
  expiry_sweeper* sweeper() noexcept override {
    return dialect_.sweep.statements.empty() ? nullptr : this;
  }
  waiter_lister* waiters() noexcept override {
    return dialect_.waiting.statements.empty() || !dialect_.encode_waits ? nullptr : this;
  }
  /// The store's waiting requests (the dialect's `waiting`), this client's own written first.
  std::vector<waiting_request> waiting(std::string_view prefix) override;
  /// `req` waits (an attempt of it found the name busy): it is written to the store's waiting
  /// requests once it has waited the recorder's delay (from one background thread, started
  /// here the first time), and written again while it waits, until wait_ended(). Nothing
  /// without the dialect's `waiting`.
  void wait_began(const lock_request& req);
  /// `req` no longer waits (granted, given up): its row, if written, is deleted in the
  /// background. Never throws.
  void wait_ended(const lock_request& req) noexcept;
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
  /// Releases in a background thread of the client (URL `release=async`); off by default.
  void set_release_in_background(bool on) { release_in_background_ = on; }
  bool release_in_background() const noexcept override { return release_in_background_; }
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
  /// What run() does with a conflict with another transaction (conflict_error).
  enum class on_conflict {
    retry,  ///< retried with the other transient errors while the deadline allows
    raise,  ///< thrown at once: an acquire attempt counts it as busy, and the acquire loop
            ///< tries again with a whole attempt's time (a retry inside run() near the
            ///< deadline would have only what is left, and be cut off there)
  };
  rows run(const operation& op, const params& p, steady_time deadline, const std::stop_token& stop,
           on_conflict conflicts);
  /// What describe() adds after the mode: " release=async" when releases are sent in the
  /// background, else nothing.
  std::string release_note() const { return release_in_background_ ? " release=async" : ""; }
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
  bool release_in_background_ = false;
  milliseconds io_timeout_{5000};
  std::mutex waits_mutex_;
  std::unique_ptr<hold_recorder> waits_;  // this client's waiting requests; made by wait_began()
  std::unique_ptr<mark_clearer> marks_;   // with the dialect's clear_marks
};

}  // namespace sqlock::sql
