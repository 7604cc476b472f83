// The rules of one lock request, written once: what follows each attempt of an acquisition (a
// hold; the end without one at the deadline or a stop; a failure to report; a pause before
// retrying an attempt whose outcome was unknown; a wait for a release) and the counts those
// decisions need. It never waits itself: the blocking form (acquire.cpp) waits on the calling
// thread, the asynchronous one (async_driver.cpp) on the driver's timers and the acquisition's
// wake-ups, so both follow the same path through attempts.
#pragma once

#include <exception>
#include <optional>
#include <utility>

#include "sqlock/backend/acquisition.hpp"
#include "sqlock/backend/backend.hpp"

namespace sqlock::detail {

/// What follows one attempt.
struct acquire_next {
  enum class kind {
    held,    ///< `hold` is the lease: the request is done
    ended,   ///< not obtained by the deadline, or stopped: done without a hold
    failed,  ///< done with `failure` (rethrow it)
    retry,   ///< the attempt's outcome was unknown: attempt again at `until`
    wait,    ///< busy: wait for a release until `until` at the longest, then attempt again
  };
  kind what = kind::ended;
  std::optional<lease_info> hold;
  std::exception_ptr failure;
  steady_time until{};

  static acquire_next held(lease_info l) { return {kind::held, std::move(l), nullptr, {}}; }
  static acquire_next ended() { return {kind::ended, std::nullopt, nullptr, {}}; }
  static acquire_next failed(std::exception_ptr e) { return {kind::failed, std::nullopt, e, {}}; }
  static acquire_next retry_at(steady_time t) { return {kind::retry, std::nullopt, nullptr, t}; }
  static acquire_next wait_until(steady_time t) { return {kind::wait, std::nullopt, nullptr, t}; }
};

/// The progress of one request `req` through attempts of `a` (both outlive it).
class acquire_steps {
 public:
  acquire_steps(acquisition& a, const lock_request& req, steady_time deadline,
                const wait_policy& policy);

  /// The next attempt, or the end when the request was stopped (`failed` with the last
  /// attempt's error while its outcome is unknown: the caller releases what it may hold).
  /// Each attempt may take policy.min_attempt past the deadline. Connection errors are retried
  /// with backoff (policy.retry_cap) for policy.retry_for within the deadline; any other
  /// exception of the attempt propagates. Sets a hold's `waited`, and `sent` unless the attempt
  /// set it.
  acquire_next attempt();

  /// The end of a backoff pause, at most `until`, for a wait the acquisition cannot be woken
  /// from (acquisition::arm() gave nothing): capped jittered backoff, wait_policy initial..cap.
  steady_time backoff_until(steady_time until);

 private:
  acquisition& a_;
  const lock_request& req_;
  const steady_time deadline_;
  const wait_policy& policy_;
  unsigned busy_ = 0;      // busy attempts so far
  unsigned failures_ = 0;  // consecutive attempts whose outcome was unknown
  unsigned pauses_ = 0;    // backoff pauses without a wake-up
  steady_time failing_since_{};
  std::exception_ptr last_failure_;  // of the last attempt, while failures_ > 0
};

}  // namespace sqlock::detail
