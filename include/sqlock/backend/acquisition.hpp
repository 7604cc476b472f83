// One acquisition: what a backend keeps for one lock request between its attempts (a
// subscription taken before the first attempt, a queue entry, a writer mark, what the last busy
// attempt saw). The core's acquire rules (src/core/acquire_steps.cpp) drive it: attempt, wait,
// attempt, ... until a hold, the deadline or a stop, and cancel() when it ends without a hold.
// Part of the backend-author API: a backend that can tell about releases, or that queues its
// waiters, returns its own subclass from backend::make_acquisition(); the others get
// polling_acquisition (attempts through try_acquire(), capped jittered backoff between them).
// The asynchronous API (src/core/async_driver.cpp) drives the same object without a thread per
// waiter: between attempts it arm()s a one-shot wake-up instead of calling wait().
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>

#include "sqlock/backend/request.hpp"
#include "sqlock/export.hpp"

namespace sqlock {

class backend;

/// The state of one lock request between its attempts, made by backend::make_acquisition() for
/// that request and destroyed when the request ends: no state passes between requests, and
/// none crosses the seam any other way. Used by one thread at a time.
class SQLOCK_API acquisition {
 public:
  acquisition() = default;
  acquisition(const acquisition&) = delete;
  acquisition& operator=(const acquisition&) = delete;
  virtual ~acquisition() = default;

  /// One attempt, bounded by `deadline` (which the core puts at least wait_policy::min_attempt
  /// ahead). Empty = busy, which is not an error. Throws connection_error when the outcome is
  /// unknown (a retry with the same owner token finds its own hold), config_error for a request
  /// the name's holders refuse (another kind, another number of permits).
  virtual std::optional<lease_info> attempt(steady_time deadline) = 0;

  /// Blocks until the lock may have been released since the last attempt, until `until`, or
  /// until `stop` is requested (then promptly). One that cannot tell about releases waits
  /// with backoff, never past `until`.
  virtual void wait(steady_time until, const std::stop_token& stop) = 0;

  /// A one-shot wake-up for arm(): cheap, never blocks, safe to call from any thread and at any
  /// time (also after the request ended: it is then ignored).
  using waker = std::function<void()>;

  /// The non-blocking form of wait(), for the asynchronous API: registers `wake` to be called
  /// (once, from any thread) when the lock may have been released since the last attempt, and
  /// returns when the core should make the next attempt if no wake-up comes (at most `until`;
  /// now or earlier = at once, and `wake` need not be kept). It must not block. Empty (the
  /// default): this acquisition cannot tell of releases without a thread, and the core waits
  /// with capped jittered backoff (wait_policy initial..cap) on its own timer instead.
  virtual std::optional<steady_time> arm(steady_time until, waker wake) {
    (void)until;
    (void)wake;
    return std::nullopt;
  }

  /// Drops the wake-up of the last arm() (the core's timer or a stop came first). A wake-up
  /// already on its way may still arrive; the core ignores it.
  virtual void disarm() noexcept {}

  /// The request ends without a hold (deadline, stop, error): leaves nothing behind on the
  /// server (a queue node or key, a writer mark keeping shared holders out). Bounded; never
  /// throws (what it could not remove expires by itself).
  virtual void cancel() noexcept {}

  /// cancel() for the asynchronous API, whose driver ends many requests at once (a server
  /// stopping thousands of waits): leaves the same nothing behind, then calls `then` exactly
  /// once, when the removal is done. A backend may send the removal without waiting for it, or
  /// combine the removals of many requests into one exchange, and call `then` later from any
  /// thread (its I/O thread included: `then` only queues the request's end and never blocks).
  /// The acquisition lives until then. The default: cancel(), then `then` on this thread.
  virtual void cancel_then(std::function<void()> then) noexcept {
    cancel();
    then();
  }
};

/// The default acquisition: attempts through backend::try_acquire(), waits with capped jittered
/// backoff (the waiting policy's initial and cap), leaves nothing to cancel.
class SQLOCK_API polling_acquisition : public acquisition {
 public:
  /// Attempts `req` on `b` (which outlives it), pausing per `policy` between attempts.
  polling_acquisition(backend& b, lock_request req, const wait_policy& policy);
  std::optional<lease_info> attempt(steady_time deadline) override;
  void wait(steady_time until, const std::stop_token& stop) override;

 private:
  backend& backend_;
  lock_request req_;
  milliseconds initial_, cap_;
  unsigned waits_ = 0;
};

}  // namespace sqlock
