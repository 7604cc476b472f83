// The rules of one lock request (acquire_steps.hpp): attempts, retries of attempts whose outcome
// was unknown, the deadline and the stop.
#include "acquire_steps.hpp"

#include <algorithm>
#include <chrono>

#include "sqlock/backend/waiting.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::detail {

acquire_steps::acquire_steps(acquisition& a, const lock_request& req, steady_time deadline,
                             const wait_policy& policy)
    : a_(a), req_(req), deadline_(deadline), policy_(policy) {}

acquire_next acquire_steps::attempt() {
  if (req_.stop.stop_requested()) {
    // Stopped in a pause after a failed attempt, its outcome is unknown: this ends as at the
    // deadline (the caller releases what that attempt may hold, then tells of the stop).
    if (failures_ > 0) return acquire_next::failed(last_failure_);
    return acquire_next::ended();
  }
  const auto sent = std::chrono::steady_clock::now();
  std::optional<lease_info> l;
  try {
    l = a_.attempt(std::max(deadline_, sent + policy_.min_attempt));
    failures_ = 0;
    last_failure_ = nullptr;
  } catch (const connection_error& ex) {
    // The store is restarting, a connection was reset, a call ran out of time: try again
    // within the deadline (the same owner token finds its own hold if the reply was lost).
    const auto now = std::chrono::steady_clock::now();
    if (failures_ == 0) failing_since_ = sent;
    if (now >= deadline_ || now - failing_since_ >= policy_.retry_for)
      return acquire_next::failed(std::current_exception());
    last_failure_ = std::current_exception();
    if (policy_.on_retry) policy_.on_retry(req_.name, ex.what());
    const auto delay = backoff_delay(failures_++, policy_.initial * 10, policy_.retry_cap);
    return acquire_next::retry_at(std::min<steady_time>(now + delay, deadline_));
  }
  if (l) {
    l->waited = l->waited || busy_ > 0;
    // The attempt knows better when it waited in the server for a session-bound hold.
    if (l->sent == steady_time{}) l->sent = sent;
    return acquire_next::held(std::move(*l));
  }
  const auto now = std::chrono::steady_clock::now();
  if (now >= deadline_ || req_.stop.stop_requested()) return acquire_next::ended();
  ++busy_;
  // The wait ends early on a release where the store tells of them; the bound is only a
  // re-check in case a notification was missed.
  return acquire_next::wait_until(std::min<steady_time>(now + policy_.notify_recheck, deadline_));
}

steady_time acquire_steps::backoff_until(steady_time until) {
  return std::min<steady_time>(
      std::chrono::steady_clock::now() + backoff_delay(pauses_++, policy_.initial, policy_.cap),
      until);
}

}  // namespace sqlock::detail
