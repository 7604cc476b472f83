// sqlock::semaphore: N permits under one name, across threads, processes and machines, like
// std::counting_semaphore with timed variants. Each permit is a sqlock::hold of its own (its
// own lease, renewal, loss signal and fence), handed out as a move-only handle: the permit
// ends when its handle is released or destroyed, from whichever thread holds the handle. All
// users of a name must agree on N: a different N while the name has holders is a
// config_error, never a silent new limit.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "sqlock/client.hpp"
#include "sqlock/hold.hpp"

namespace sqlock {

/// One permit of a semaphore (a hold of its own; empty when not obtained).
using permit = hold;

/// A named distributed counting semaphore (made by client::make_semaphore()). Cheap to copy;
/// thread-safe.
class SQLOCK_API semaphore {
 public:
  /// Blocks until a permit is free (or `stop`: interrupted, as for sqlock::mutex). Throws
  /// unsupported when the backend has no permits, config_error when the name's holders use
  /// another number of permits.
  permit acquire(std::stop_token stop = {});
  /// One attempt; an empty permit when none is free.
  permit try_acquire();
  /// Waits at most `d`; an empty permit when none became free (interrupted on `stop`).
  template <class Rep, class Period>
  permit try_acquire_for(const std::chrono::duration<Rep, Period>& d, std::stop_token stop = {}) {
    return try_acquire_until_steady(std::chrono::steady_clock::now() +
                                        std::chrono::ceil<std::chrono::steady_clock::duration>(d),
                                    std::move(stop));
  }
  /// Waits until `t` (any clock) or `stop` (interrupted).
  template <class Clock, class Duration>
  permit try_acquire_until(const std::chrono::time_point<Clock, Duration>& t,
                           std::stop_token stop = {}) {
    return try_acquire_for(t - Clock::now(), std::move(stop));
  }
  /// Waits until a steady_clock time point or `stop` (interrupted).
  permit try_acquire_until_steady(steady_time deadline, std::stop_token stop = {});

  /// How many permits the name has.
  std::uint32_t permits() const noexcept { return permits_; }
  /// The semaphore's name.
  const std::string& name() const noexcept { return name_; }

 private:
  friend class client;
  friend struct detail::hold_maker;  // the asynchronous acquisitions (async.hpp)
  semaphore(std::shared_ptr<detail::client_impl> c, std::string name, std::uint32_t permits,
            lock_options opts);
  permit take(steady_time deadline, bool wait, const std::stop_token& stop);

  std::shared_ptr<detail::client_impl> client_;
  std::string name_;
  std::uint32_t permits_ = 0;
  lock_options opts_;
};

}  // namespace sqlock
