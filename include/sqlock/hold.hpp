// sqlock::hold: one hold of a lock, of any kind, as a movable handle not bound to a thread: a
// mutex's hold (mutex::acquire()), a shared_mutex's shared or exclusive hold, a semaphore's
// permit, a leader's term (election::lead()), a run_exclusive() job's hold. It has its own
// owner token, lease, background renewal, fence and loss signal, and ends when released (from
// any thread), moved over or destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sqlock/export.hpp"

namespace sqlock {

namespace detail {
class lock_handle;
struct hold_maker;
}  // namespace detail

/// A move-only hold (RAII): destroying or move-assigning over it releases it. Thread-safe: any
/// thread may release it, whichever thread obtained it; move it to hand it over.
class SQLOCK_API hold {
 public:
  /// Holds nothing.
  hold() = default;
  hold(hold&&) noexcept = default;  ///< Moves.
  /// Releases what this hold had, then takes `o`'s hold.
  hold& operator=(hold&& o) noexcept;
  hold(const hold&) = delete;
  hold& operator=(const hold&) = delete;
  /// Releases (never throws; failures are kept in last_error()).
  ~hold();

  /// Whether a hold was obtained and not yet released (it may have been lost meanwhile).
  explicit operator bool() const noexcept;
  /// Releases on the backend (once; later calls do nothing), from any thread. Never throws.
  /// The on_lost callback is not called after it returns (see on_lost()).
  void release() noexcept;

  /// Fencing token of the hold; usage_error when released, unsupported when the backend has none.
  std::uint64_t fence() const;
  /// Owner token of the hold; usage_error when released.
  std::string owner() const;
  /// True once the hold was found lost (lease ran out, renewal refused, session died).
  bool lost() const;
  /// Called once when the hold is found lost, from the library thread that found it; replaces
  /// the previous one. lost() answers true once the callback has returned, and a callback
  /// replaced, or dropped by release() or the destructor, is not called after they return:
  /// each of them waits for a call of it running on another thread. Called from inside the
  /// callback (on its thread) they do not wait for it: that call finishes, and it is not
  /// called again — a callback may release or destroy its own hold.
  void on_lost(std::function<void(const std::string& name)> cb);
  /// Renews now; false when the hold is lost (and marks it lost). usage_error when released.
  bool renew();
  /// Lock name ("" when empty).
  const std::string& name() const;
  /// Message of the last error release() swallowed ("" when none).
  std::string last_error() const;

 private:
  friend struct detail::hold_maker;
  explicit hold(std::shared_ptr<detail::lock_handle> core);

  std::shared_ptr<detail::lock_handle> core_;
};

}  // namespace sqlock
