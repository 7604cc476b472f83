// The public face of sqlock: a client owns one backend plus the machinery every backend shares
// (one renewal thread, per-process queueing of same-name waiters, statistics); a lock is a
// named handle that satisfies the standard Lockable and TimedLockable requirements, so
// std::unique_lock, std::scoped_lock and try_lock_for/try_lock_until work as with a mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "sqlock/errors.hpp"
#include "sqlock/export.hpp"
#include "sqlock/hold.hpp"
#include "sqlock/observer.hpp"
#include "sqlock/types.hpp"

namespace sqlock {

class backend;  // sqlock/backend.hpp: the backend-author API

namespace detail {
class client_impl;
class lock_handle;
struct local_entry;
}  // namespace detail

/// Options of one lock handle (an aggregate: use designated initialisers).
struct lock_options {
  milliseconds lease{30000};    ///< server-side lease; must be > 0 (0 or negative: config_error)
  bool auto_renew = true;       ///< renew in the background while held (false: lease runs out)
  milliseconds renew_every{0};  ///< renewal period; 0 = lease / 3
};

/// Options of a client (an aggregate: use designated initialisers).
struct client_options {
  wait_policy waiting{};        ///< backoff between attempts while waiting
  std::string holder{};         ///< holder description stored with locks; "" = "host:pid:program"
  milliseconds sweep_every{0};  ///< run backend sweep() this often in the renewal thread; 0 = never
  milliseconds release_timeout{5000};  ///< longest an unlock() waits for the store (never
                                       ///< longer than the lease left); must be > 0

  std::shared_ptr<sqlock::observer> observer{};  ///< told every lock event; null = nobody (default)
};

/// Counters of one client since it was created.
struct statistics {
  std::uint64_t acquisitions = 0;      ///< holds obtained from the backend
  std::uint64_t reentries = 0;         ///< lock() calls satisfied by an existing hold
  std::uint64_t contended = 0;         ///< acquisitions that had to wait at least once
  std::uint64_t timeouts = 0;          ///< try_lock/try_lock_for calls that gave up
  std::uint64_t releases = 0;          ///< holds released
  std::uint64_t release_errors = 0;    ///< releases that failed (recorded, never thrown)
  std::uint64_t renewals = 0;          ///< successful lease renewals
  std::uint64_t renewal_failures = 0;  ///< renewals that failed with an error (retried)
  std::uint64_t losses = 0;            ///< holds found lost
};

class mutex;
class shared_mutex;
class semaphore;
class election;
struct election_options;

namespace detail {
struct hold_maker;
}  // namespace detail

/// A connection to a lock store. Cheap to copy (shared state); thread-safe.
class SQLOCK_API client {
 public:
  /// Wraps a backend. Most code calls sqlock::connect(url) instead.
  explicit client(std::shared_ptr<backend> b, client_options opts = {});

  /// A named lock handle. Throws config_error for an empty name or a lease <= 0.
  mutex make_lock(std::string name, lock_options opts = {}) const;
  /// A named reader-writer lock (sqlock/shared_mutex.hpp); config_error as make_lock(). Its
  /// calls throw unsupported when the backend has no shared locks (caps().shared).
  shared_mutex make_shared_mutex(std::string name, lock_options opts = {}) const;
  /// A named semaphore of `permits` permits (sqlock/semaphore.hpp); config_error as
  /// make_lock() and for 0 permits. Its calls throw unsupported when the backend has no
  /// permits (caps().permits).
  semaphore make_semaphore(std::string name, std::uint32_t permits, lock_options opts = {}) const;
  /// A leader election under `name` with default options (sqlock/election.hpp).
  election make_election(std::string name) const;
  /// A leader election under `name` (sqlock/election.hpp); config_error for an empty name or
  /// bad options.
  election make_election(std::string name, const election_options& opts) const;

  /// Locks as the backend sees them (unsupported when the backend cannot list).
  std::vector<lock_status> list(std::string_view prefix = {}) const;
  /// Administrative release regardless of owner, recorded as forced by default_actor()
  /// ("user@host" of this process, sqlock/random.hpp); false when nothing was held.
  bool force_release(std::string_view name) const;
  /// Administrative release regardless of owner, recorded in the store's audit trail as forced
  /// by `actor` (a person or tool: 1-200 bytes, no control characters, else config_error). A
  /// store without an audit trail (Redis, ZooKeeper, etcd, memory) does not keep it.
  bool force_release(std::string_view name, std::string_view actor) const;
  /// The newest `limit` events of the store's audit trail (unsupported when it keeps none).
  std::vector<lock_event> events(std::string_view prefix = {}, std::size_t limit = 100) const;
  /// Deletes expired holds now; returns how many.
  std::size_t sweep() const;
  /// Requests waiting for locks whose name starts with `prefix`, in queue order per name
  /// (unsupported when the store cannot tell: caps().waiting).
  std::vector<waiting_request> waiting(std::string_view prefix = {}) const;

  /// Counters since creation.
  statistics stats() const;
  /// The backend (for capability checks and backend-specific calls).
  backend& get_backend() const;
  /// Capabilities of the backend.
  capabilities caps() const;

 private:
  friend struct detail::hold_maker;
  std::shared_ptr<detail::client_impl> impl_;
};

/// A named distributed lock. Reentrant per thread (hold count), like std::recursive_mutex.
/// Lockable: lock(), try_lock(), unlock(). TimedLockable: try_lock_for(), try_lock_until().
/// (Named `mutex` because a C++ class cannot have a member function named like itself.)
/// A hold taken by lock() belongs to the thread that took it, as with std::mutex; a hold that
/// must change threads is a sqlock::hold from acquire(), which any thread may release.
///
/// Every waiting call takes an optional std::stop_token: a stop requested from another thread
/// ends the wait promptly as a timeout would (nothing held, the waiter's place in the store's
/// queue removed) and the call throws sqlock::interrupted (a timeout returns false). A stop
/// requested before the call throws at once; one requested after the lock was obtained has no
/// effect on that call.
class SQLOCK_API mutex {
 public:
  mutex(mutex&&) noexcept;             ///< Moves.
  mutex& operator=(mutex&&) noexcept;  ///< Moves.
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;
  /// Releases holds this handle's thread still has (never throws).
  ~mutex();

  /// Blocks until acquired or `stop` (interrupted). Throws connection_error / backend_error
  /// when the backend fails.
  void lock(std::stop_token stop = {});
  /// One attempt; false when held elsewhere.
  bool try_lock();
  /// Waits at most `d` (or until `stop`: interrupted).
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d, std::stop_token stop = {}) {
    return try_lock_until_steady(std::chrono::steady_clock::now() +
                                     std::chrono::ceil<std::chrono::steady_clock::duration>(d),
                                 std::move(stop));
  }
  /// Waits until `t` (any clock; converted to steady_clock once) or `stop` (interrupted).
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t,
                      std::stop_token stop = {}) {
    return try_lock_for(t - Clock::now(), std::move(stop));
  }
  /// Waits until a steady_clock time point or `stop` (interrupted).
  bool try_lock_until_steady(steady_time deadline, std::stop_token stop = {});
  /// Drops one level of this thread's hold; the last one releases on the backend. A release
  /// that fails never throws: it is counted in statistics and reported by last_error(); so
  /// does an unlock() when the lock is not held (released already). Called from a thread other
  /// than the one that locked it (a std::unique_lock moved to another thread), it throws
  /// usage_error and the lock stays held, as std::unique_lock::unlock() throws for a mutex it
  /// does not own: a programming error, told at once rather than a silent no-op.
  void unlock();

  /// Blocks until acquired (or `stop`: interrupted) and returns the hold as a movable
  /// sqlock::hold that no thread owns: any thread may release it (or destroy it), and it has
  /// its own fence and loss signal. It takes the lock as lock() does (this client's threads
  /// queue for the name; this handle's on_lost() is told of its loss too), but owns_lock() is
  /// false for it and unlock() refuses it. usage_error when this thread holds the lock
  /// through lock() (it would wait for itself).
  hold acquire(std::stop_token stop = {});
  /// One attempt; an empty hold when held elsewhere.
  hold try_acquire();
  /// Waits at most `d`; an empty hold when not obtained by then.
  template <class Rep, class Period>
  hold try_acquire_for(const std::chrono::duration<Rep, Period>& d, std::stop_token stop = {}) {
    return try_acquire_until_steady(std::chrono::steady_clock::now() +
                                        std::chrono::ceil<std::chrono::steady_clock::duration>(d),
                                    std::move(stop));
  }
  /// Waits until `t` (any clock).
  template <class Clock, class Duration>
  hold try_acquire_until(const std::chrono::time_point<Clock, Duration>& t,
                         std::stop_token stop = {}) {
    return try_acquire_for(t - Clock::now(), std::move(stop));
  }
  /// Waits until a steady_clock time point or `stop` (interrupted).
  hold try_acquire_until_steady(steady_time deadline, std::stop_token stop = {});

  /// Whether this thread holds the lock through this client.
  bool owns_lock() const;
  /// Fencing token of the current hold; usage_error when not held.
  std::uint64_t fence() const;
  /// Owner token of the current hold; usage_error when not held.
  std::string owner() const;
  /// True once the current (or last) hold was found lost (and its on_lost callback returned).
  bool lost() const;
  /// Called once when a hold of this lock is found lost, from the library thread that found
  /// it (renewal, a store's watch or session watcher). lost() answers true once the callback
  /// has returned, and a callback replaced, or dropped by the destructor, is not called after
  /// they return: each of them waits for a call of it running on another thread (called from
  /// inside the callback they do not wait for it; that call finishes, and it is not called
  /// again).
  void on_lost(std::function<void(const std::string& name)> cb);
  /// Renews now; false when the hold is lost (and marks it lost). usage_error when not held.
  bool renew();
  /// Lock name.
  const std::string& name() const;
  /// Message of the last error unlock() swallowed ("" when none).
  std::string last_error() const;

 private:
  friend class client;
  friend struct detail::hold_maker;  // the asynchronous acquisitions (async.hpp)
  mutex(std::shared_ptr<detail::client_impl> c, std::string name, lock_options opts);
  bool lock_until(steady_time deadline, bool wait, const std::stop_token& stop);
  hold take_hold(steady_time deadline, bool wait, const std::stop_token& stop);
  bool take_turn(steady_time deadline, bool wait, const std::stop_token& stop, steady_time started);
  void release_all() noexcept;
  void unlock_level(bool check_thread, std::uint64_t expect_hold = 0) noexcept;

  std::shared_ptr<detail::client_impl> client_;
  std::shared_ptr<detail::local_entry> entry_;
  std::shared_ptr<detail::lock_handle> core_;  // fence, loss signal: the entry's current hold
  lock_options opts_;
  std::atomic<unsigned> levels_{0};  // hold levels taken through this handle
  std::uint64_t hold_id_ = 0;        // the hold those levels belong to
};

/// Connects to the store named by `url` (memory:, sqlite:PATH, postgresql://, mysql://,
/// redis://, redlock://, zookeeper://, soci+...://) through make_backend(): a backend linked
/// into the program, or the backend module of the URL's scheme, loaded on first use.
SQLOCK_API client connect(const std::string& url, client_options opts = {});

/// connect(), returning by `deadline` whatever the store does: connection_error when it has
/// not answered by then (a caller's own deadline, such as `sqlock run --wait`, covers the
/// connection too).
SQLOCK_API client connect(const std::string& url, client_options opts, steady_time deadline);

/// Registers every backend linked into this program (make_backend() does it on first use).
SQLOCK_API void register_builtin_backends();

}  // namespace sqlock

// The other lock classes of a client (each includes this header first).
#include "sqlock/election.hpp"       // IWYU pragma: export
#include "sqlock/run_exclusive.hpp"  // IWYU pragma: export
#include "sqlock/semaphore.hpp"      // IWYU pragma: export
#include "sqlock/shared_mutex.hpp"   // IWYU pragma: export
