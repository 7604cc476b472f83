// Releasing holds an acquire may have left in the store without knowing it, and holds whose
// release got no answer. A request that was
// sent but whose answer never came (the connection broke, the deadline passed) may have taken
// the lock for an owner token that no caller holds: nobody would release it before its lease
// ran out, and every other contender would wait that long. The client hands such a request
// here, and a thread of its own asks the store to release it — by name and owner token, so a
// hold of anybody else is never touched — until the store answers, or until the lease the
// request asked for would have ended anyway, with capped backoff between tries. Internal to
// the core.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "sqlock/backend.hpp"

namespace sqlock::detail {

/// Best-effort releases of (name, owner) pairs whose acquire had an unknown outcome.
class orphan_releases {
 public:
  /// Each try is bounded by `attempt_bound` (and by the pair's end).
  orphan_releases(backend& b, milliseconds attempt_bound);
  /// Gives up what is pending (those leases end on their own); a try under way ends by its
  /// bound first.
  ~orphan_releases();
  orphan_releases(const orphan_releases&) = delete;
  orphan_releases& operator=(const orphan_releases&) = delete;

  /// Tries to release what `req` may hold, until `until`.
  void add(const lock_request& req, steady_time until) noexcept;
  /// Tries again to release `lease`, whose release failed with no answer, until `until`.
  void add(const lease_info& lease, steady_time until) noexcept;

 private:
  struct pending {
    lease_info lease;
    steady_time until, next;
    unsigned tries = 0;
  };
  void loop();

  backend& b_;
  milliseconds bound_;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<pending> pending_;
  bool stop_ = false;
  std::thread thread_;  // started by the first add(): most clients never need it
};

}  // namespace sqlock::detail
