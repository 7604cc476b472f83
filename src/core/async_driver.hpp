// The asynchronous acquire driver: a small fixed set of process-wide threads that run the
// attempts of many acquisitions (sqlock/backend/acquisition.hpp) and, between them, arm their
// one-shot wake-ups (acquisition::arm) or a timer, so that a waiting request holds no thread.
// The asynchronous counterpart of run_acquisition() (acquire.hpp), following the same rules
// (acquire_steps.hpp); cancel() of a request that ends without a hold. Internal to the core.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include "sqlock/backend/acquisition.hpp"
#include "sqlock/backend/backend.hpp"

namespace sqlock::detail {

/// How an asynchronous acquisition ended: an error, or a lease (empty: not obtained by the
/// deadline, or stopped: req.stop tells which). Called once, on a driver thread.
using acquired_fn = std::function<void(std::exception_ptr, std::optional<lease_info>)>;

/// The process's driver threads (started on first use, at most max_threads; a child of fork()
/// starts its own).
class async_driver {
 public:
  /// The most threads the driver starts in a process.
  static constexpr unsigned max_threads = 4;
  /// How many it starts: the machine's cores, at least 2 and at most max_threads.
  static unsigned thread_count();

  /// Drives `a` (made for `req`, kept alive until `done` is called) until a hold, `deadline` or
  /// a stop of req.stop, then calls `done` on a driver thread. Never blocks the caller.
  static void start(std::unique_ptr<acquisition> a, lock_request req, steady_time deadline,
                    wait_policy policy, acquired_fn done);
  /// Runs `fn` on a driver thread soon (a completion that must not run on the caller's).
  static void post(std::function<void()> fn);
};

}  // namespace sqlock::detail
