// Helpers for a backend's bounded waits: sleeping until a time or a stop, a descriptor that
// becomes readable on a stop (for poll()), the bound of one exchange with a store, and jitter
// for backoff (sqlock/random.hpp). Part of the backend-author API.
#pragma once

#include <functional>
#include <memory>
#include <stop_token>

#include "sqlock/export.hpp"
#include "sqlock/random.hpp"  // IWYU pragma: export (jitter, backoff_delay)
#include "sqlock/types.hpp"

namespace sqlock {

/// Sleeps until `until` or until `stop` is requested, whichever comes first; false when stopped.
SQLOCK_API bool sleep_until(steady_time until, const std::stop_token& stop);

/// A file descriptor that becomes readable when a stop is requested, for waits that poll():
/// an eventfd written by a std::stop_callback. Holds no descriptor for a token that can never
/// stop (fd() is -1; poll() ignores a negative descriptor).
class SQLOCK_API stop_fd {
 public:
  explicit stop_fd(const std::stop_token& stop);  ///< Watches `stop`.
  ~stop_fd();
  stop_fd(const stop_fd&) = delete;
  stop_fd& operator=(const stop_fd&) = delete;
  /// The descriptor to poll for POLLIN (-1 when the token can never stop).
  int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
  std::unique_ptr<std::stop_callback<std::function<void()>>> on_stop_;
};

/// The earlier of `deadline` and now + `io_timeout`: how long one exchange with a store may take.
SQLOCK_API steady_time exchange_bound(steady_time deadline, milliseconds io_timeout);

}  // namespace sqlock
