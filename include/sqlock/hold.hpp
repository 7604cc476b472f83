// One backend hold of its own, not shared with other handles or threads: a semaphore's permit,
// a run_exclusive() job's hold, a shared_mutex thread's hold, an elected leader's term. It has
// its own owner token, lease, background renewal, fence and loss signal, and ends when
// released, moved over or destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sqlock/export.hpp"

namespace sqlock {

namespace detail {
class client_impl;
struct hold_slot;
struct hold_maker;
}  // namespace detail

/// A move-only hold (RAII): destroying or move-assigning over it releases it. Thread-safe.
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
  /// Releases on the backend (once; later calls do nothing). Never throws.
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
  /// each of them waits for a callback that is running (unless called from inside it).
  void on_lost(std::function<void(const std::string& name)> cb);
  /// Renews now; false when the hold is lost (and marks it lost). usage_error when released.
  bool renew();
  /// Lock name ("" when empty).
  const std::string& name() const;
  /// Message of the last error release() swallowed ("" when none).
  std::string last_error() const;

 private:
  friend struct detail::hold_maker;
  hold(std::shared_ptr<detail::client_impl> c, std::shared_ptr<detail::hold_slot> s);

  std::shared_ptr<detail::client_impl> client_;
  std::shared_ptr<detail::hold_slot> slot_;
};

}  // namespace sqlock
