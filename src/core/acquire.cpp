// The acquire loop (acquire.hpp): attempts, waits between busy ones, retries of attempts whose
// outcome was unknown, and the cancel of an acquisition that ends without a hold.
#include "acquire.hpp"

#include <algorithm>
#include <chrono>

#include "sqlock/backend/waiting.hpp"
#include "sqlock/errors.hpp"

namespace sqlock {
namespace {

// Cancels the acquisition unless disarmed (a hold was granted): whatever way the loop ends
// without one (deadline, stop, an error), nothing of it stays on the server.
struct canceller {
  acquisition& a;
  bool armed = true;
  ~canceller() {
    if (armed) a.cancel();
  }
};

}  // namespace

std::optional<lease_info> run_acquisition(acquisition& a, const lock_request& req,
                                          steady_time deadline, const wait_policy& policy) {
  canceller guard{a};
  unsigned busy = 0;      // busy attempts so far
  unsigned failures = 0;  // consecutive attempts whose outcome was unknown
  steady_time failing_since{};
  for (;;) {
    const auto sent = std::chrono::steady_clock::now();
    std::optional<lease_info> l;
    try {
      l = a.attempt(std::max(deadline, sent + policy.min_attempt));
      failures = 0;
    } catch (const connection_error& ex) {
      // The store is restarting, a connection was reset, a call ran out of time: try again
      // within the deadline (the same owner token finds its own hold if the reply was lost).
      auto now = std::chrono::steady_clock::now();
      if (failures == 0) failing_since = sent;
      if (now >= deadline || now - failing_since >= policy.retry_for) throw;
      if (policy.on_retry) policy.on_retry(req.name, ex.what());
      auto delay = backoff_delay(failures++, policy.initial * 10, policy.retry_cap);
      // Stopped in the pause: the last attempt's outcome is still unknown, so this ends as it
      // would at the deadline (the core releases what that attempt may hold, then tells the
      // caller of the stop).
      if (!sleep_until(std::min<steady_time>(now + delay, deadline), req.stop)) throw;
      continue;
    }
    if (l) {
      guard.armed = false;
      l->waited = l->waited || busy > 0;
      // The attempt knows better when it waited in the server for a session-bound hold.
      if (l->sent == steady_time{}) l->sent = sent;
      return l;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline || req.stop.stop_requested()) return std::nullopt;
    // The wait ends early on a release where the store tells of them; the bound is only a
    // re-check in case a notification was missed. It ends at once on a stop.
    a.wait(std::min<steady_time>(now + policy.notify_recheck, deadline), req.stop);
    if (req.stop.stop_requested()) return std::nullopt;
    ++busy;
  }
}

std::optional<lease_info> acquire(backend& b, const lock_request& req, steady_time deadline,
                                  const wait_policy& policy) {
  auto a = b.make_acquisition(req, policy);
  return run_acquisition(*a, req, deadline, policy);
}

}  // namespace sqlock
