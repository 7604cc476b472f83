// The acquisition of one waiting PostgreSQL request, in every mode: whether it is past its
// first attempt, until when it is registered as a waiter of its name (a release notifies only
// the names somebody registered for: advisory_wait_notify, sqlock.advisory_waits), the
// LISTEN/NOTIFY wait it uses between attempts (or jittered backoff when the backend does not
// listen), and, in advisory mode, whether its last attempt already waited inside the server
// (then there is nothing more to wait for before the next one). Row modes' writer marks are the
// engine's part (sql/engine_acquisition.hpp).
// A request registers before its second attempt: the first busy attempt is followed at once by
// the second, which registers first, so that a release after it is notified.
#pragma once

#include <memory>
#include <utility>

#include "notifier.hpp"
#include "sql/engine_acquisition.hpp"

namespace sqlock::postgres {

class pg_backend;

/// One waiting request's state between its attempts.
class pg_acquisition final : public sql::engine_acquisition {
 public:
  /// For `req` on `b`; `notify`: the LISTEN/NOTIFY wait of the request, or null when the
  /// backend does not listen (a deaf one, see notifier::deaf, counts as not listening).
  pg_acquisition(pg_backend& b, lock_request req, const wait_policy& policy,
                 std::unique_ptr<notify_wait> notify);

  /// The backend's attempt with this request's state (pg_backend::one_attempt()).
  std::optional<lease_info> attempt(steady_time deadline) override;

  void wait(steady_time until, const std::stop_token& stop) override {
    if (std::exchange(waited_in_server_, false)) return;  // that attempt was the wait
    if (listens()) {
      // Releases notify only registered waiters: until the request is, the next attempt comes
      // at once (it registers first, or waits inside the server).
      if (registered(std::chrono::steady_clock::now())) notify_->wait(until, stop);
      return;
    }
    engine_acquisition::wait(until, stop);  // jittered backoff
  }

  /// The asynchronous wait: a LISTEN/NOTIFY wake-up once registered (the next attempt comes at
  /// once until then, or after a wait in the server); backoff when the backend does not
  /// listen. From the first call on, the request never waits inside the server: that would
  /// hold a driver thread (advisory mode).
  std::optional<steady_time> arm(steady_time until, waker wake) override {
    driven_ = true;
    const auto now = std::chrono::steady_clock::now();
    if (std::exchange(waited_in_server_, false)) return now;
    if (!listens()) return std::nullopt;  // the core backs off
    if (!registered(now) || notify_->arm(std::move(wake))) return now;
    return until;
  }
  void disarm() noexcept override {
    if (notify_) notify_->disarm();
  }
  /// False once the request is driven asynchronously (arm()): its attempts make no server wait.
  bool may_wait_in_server() const { return !driven_; }

  /// Called at the start of every attempt (notifications before it are seen by the attempt);
  /// true for the first one of the request.
  bool first_attempt() {
    if (notify_) notify_->attempt_starts();
    return attempts_++ == 0;
  }
  /// True when releases can wake the request (LISTEN/NOTIFY) once it is registered.
  bool listens() const { return notify_ != nullptr && !notify_->deaf(); }
  /// The attempt that just ended waited inside the server (advisory mode).
  void waited_in_server() { waited_in_server_ = true; }
  /// True while the request's registration is current at `now`.
  bool registered(steady_time now) const { return now < registered_until_; }
  /// The request is registered as a waiter of its name until `until`.
  void registered_until(steady_time until) { registered_until_ = until; }

 private:
  pg_backend& pg_;
  std::unique_ptr<notify_wait> notify_;
  unsigned attempts_ = 0;
  bool waited_in_server_ = false;
  bool driven_ = false;
  steady_time registered_until_{};
};

}  // namespace sqlock::postgres
