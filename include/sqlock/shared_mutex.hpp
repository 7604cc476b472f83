// sqlock::shared_mutex: a named reader-writer lock. It satisfies Lockable, TimedLockable,
// SharedLockable and SharedTimedLockable, so std::unique_lock, std::shared_lock and
// std::scoped_lock work as with std::shared_timed_mutex. Every hold, shared or exclusive, is a
// backend hold of the calling thread with its own owner token, lease, renewal and loss signal:
// shared holders in this and other processes hold at once, one shared holder's expiry does not
// end the others, an exclusive holder excludes all, and a waiting exclusive request keeps new
// shared holders out (no writer starvation). Not reentrant: a thread that holds the lock and
// asks again gets usage_error.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "sqlock/client.hpp"
#include "sqlock/hold.hpp"

namespace sqlock {

/// A named distributed reader-writer lock (made by client::make_shared_mutex()).
class SQLOCK_API shared_mutex {
 public:
  shared_mutex(shared_mutex&&) noexcept;             ///< Moves.
  shared_mutex& operator=(shared_mutex&&) noexcept;  ///< Moves.
  shared_mutex(const shared_mutex&) = delete;
  shared_mutex& operator=(const shared_mutex&) = delete;
  /// Releases every lock()/lock_shared() hold of this handle, in any thread (never throws);
  /// the on_lost callback is not called after it returns.
  ~shared_mutex();

  // Every waiting call takes an optional std::stop_token: a stop ends the wait as a timeout
  // would and throws interrupted (see sqlock::mutex).

  /// Blocks until held exclusively (or `stop`: interrupted). Throws unsupported when the
  /// backend has no shared locks.
  void lock(std::stop_token stop = {});
  /// One attempt at an exclusive hold.
  bool try_lock();
  /// Waits at most `d` for an exclusive hold.
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& d, std::stop_token stop = {}) {
    return try_lock_until_steady(after(d), std::move(stop));
  }
  /// Waits until `t` (any clock) for an exclusive hold.
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& t,
                      std::stop_token stop = {}) {
    return try_lock_for(t - Clock::now(), std::move(stop));
  }
  /// Waits until a steady_clock time point for an exclusive hold.
  bool try_lock_until_steady(steady_time deadline, std::stop_token stop = {});
  /// Releases this thread's exclusive hold. A failed release never throws (it is kept in
  /// last_error()), nor does an unlock() when this thread holds no exclusive hold (noted there).
  /// Called from a thread that holds nothing while another thread holds the lock, it throws
  /// usage_error and the holds stay, as mutex::unlock() does.
  void unlock();

  /// Blocks until held shared (or `stop`: interrupted).
  void lock_shared(std::stop_token stop = {});
  /// One attempt at a shared hold.
  bool try_lock_shared();
  /// Waits at most `d` for a shared hold.
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& d, std::stop_token stop = {}) {
    return try_lock_shared_until_steady(after(d), std::move(stop));
  }
  /// Waits until `t` (any clock) for a shared hold.
  template <class Clock, class Duration>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& t,
                             std::stop_token stop = {}) {
    return try_lock_shared_for(t - Clock::now(), std::move(stop));
  }
  /// Waits until a steady_clock time point for a shared hold.
  bool try_lock_shared_until_steady(steady_time deadline, std::stop_token stop = {});
  /// Releases this thread's shared hold; never throws but as unlock() does (usage_error from a
  /// thread that holds nothing while another thread holds the lock).
  void unlock_shared();

  // Holds not bound to a thread: each form returns a movable sqlock::hold (empty when not
  // obtained in time) with its own fence and loss signal, released from any thread. They are
  // independent of the thread's lock()/lock_shared() holds (a thread that holds one way and
  // asks for an exclusive hold waits for itself) and of this handle's on_lost().

  /// Blocks until held exclusively (or `stop`: interrupted).
  hold acquire(std::stop_token stop = {});
  /// One attempt at an exclusive hold.
  hold try_acquire();
  /// Waits at most `d` for an exclusive hold.
  template <class Rep, class Period>
  hold try_acquire_for(const std::chrono::duration<Rep, Period>& d, std::stop_token stop = {}) {
    return try_acquire_until_steady(after(d), std::move(stop));
  }
  /// Waits until `t` (any clock) for an exclusive hold.
  template <class Clock, class Duration>
  hold try_acquire_until(const std::chrono::time_point<Clock, Duration>& t,
                         std::stop_token stop = {}) {
    return try_acquire_for(t - Clock::now(), std::move(stop));
  }
  /// Waits until a steady_clock time point for an exclusive hold.
  hold try_acquire_until_steady(steady_time deadline, std::stop_token stop = {});
  /// Blocks until held shared (or `stop`: interrupted).
  hold acquire_shared(std::stop_token stop = {});
  /// One attempt at a shared hold.
  hold try_acquire_shared();
  /// Waits at most `d` for a shared hold.
  template <class Rep, class Period>
  hold try_acquire_shared_for(const std::chrono::duration<Rep, Period>& d,
                              std::stop_token stop = {}) {
    return try_acquire_shared_until_steady(after(d), std::move(stop));
  }
  /// Waits until `t` (any clock) for a shared hold.
  template <class Clock, class Duration>
  hold try_acquire_shared_until(const std::chrono::time_point<Clock, Duration>& t,
                                std::stop_token stop = {}) {
    return try_acquire_shared_for(t - Clock::now(), std::move(stop));
  }
  /// Waits until a steady_clock time point for a shared hold.
  hold try_acquire_shared_until_steady(steady_time deadline, std::stop_token stop = {});

  /// Whether this thread holds the lock exclusively.
  bool owns_lock() const;
  /// Whether this thread holds the lock shared.
  bool owns_shared() const;
  /// Fencing token of this thread's hold; usage_error when it holds nothing.
  std::uint64_t fence() const;
  /// Owner token of this thread's hold; usage_error when it holds nothing.
  std::string owner() const;
  /// True once this thread's current (or last) hold was found lost.
  bool lost() const;
  /// Called (from the library thread that found it) when any lock()/lock_shared() hold of this
  /// handle is found lost; replaces the previous one, with sqlock::hold::on_lost()'s
  /// guarantee: the callback replaced, or dropped by the destructor, is not called after they
  /// return.
  void on_lost(std::function<void(const std::string& name)> cb);
  /// Lock name.
  const std::string& name() const;
  /// Message of the last error unlock()/unlock_shared() swallowed ("" when none).
  std::string last_error() const;

  struct state;  ///< internal

 private:
  friend class client;
  friend struct detail::hold_maker;  // the asynchronous acquisitions (async.hpp)
  explicit shared_mutex(std::shared_ptr<state> s);
  template <class Rep, class Period>
  static steady_time after(const std::chrono::duration<Rep, Period>& d) {
    return std::chrono::steady_clock::now() +
           std::chrono::ceil<std::chrono::steady_clock::duration>(d);
  }
  bool acquire(lock_kind kind, steady_time deadline, bool wait, const std::stop_token& stop);
  hold take(lock_kind kind, steady_time deadline, bool wait, const std::stop_token& stop);
  void drop(lock_kind kind);

  std::shared_ptr<state> st_;
};

}  // namespace sqlock
