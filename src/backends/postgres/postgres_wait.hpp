// The wait state of one PostgreSQL acquire() call, in every mode: whether the call is past its
// first attempt, until when it is registered as a waiter of its name (a release notifies only
// the names somebody registered for: advisory_wait_notify, sqlock.advisory_waits), the
// LISTEN/NOTIFY wait it uses between attempts (or jittered backoff when the backend does not
// listen), and, in advisory mode, whether its last attempt already waited inside the server
// (then there is nothing more to wait for before the next one).
// A call registers before its second attempt: the first busy attempt is followed at once by the
// second, which registers first, so that a release after it is notified.
#pragma once

#include <memory>
#include <thread>
#include <utility>

#include "notifier.hpp"
#include "sqlock/random.hpp"

namespace sqlock::postgres {

/// One acquire() call's state between its attempts.
class registered_wait final : public wait_state {
 public:
  /// `notify`: the LISTEN/NOTIFY wait of the call, or null when the backend does not listen
  /// (a deaf one, see notifier::deaf, counts as not listening).
  explicit registered_wait(std::unique_ptr<notify_wait> notify) : notify_(std::move(notify)) {}

  void wait(steady_time until, const std::stop_token& stop) override {
    if (std::exchange(waited_in_server_, false)) return;  // that attempt was the wait
    if (listens()) {
      // Releases notify only registered waiters: until the call is, the next attempt comes at
      // once (it registers first, or waits inside the server).
      if (registered(std::chrono::steady_clock::now())) notify_->wait(until, stop);
      return;
    }
    auto pause =
        backoff_delay(pauses_++, std::chrono::milliseconds(2), std::chrono::milliseconds(100));
    sleep_until(std::min(std::chrono::steady_clock::now() + pause, until), stop);
  }

  /// Called at the start of every attempt (notifications before it are seen by the attempt);
  /// true for the first one of the call.
  bool first_attempt() {
    if (notify_) notify_->attempt_starts();
    return attempts_++ == 0;
  }
  /// True when releases can wake the call (LISTEN/NOTIFY) once it is registered.
  bool listens() const { return notify_ != nullptr && !notify_->deaf(); }
  /// The attempt that just ended waited inside the server (advisory mode).
  void waited_in_server() { waited_in_server_ = true; }
  /// True while the call's registration is current at `now`.
  bool registered(steady_time now) const { return now < registered_until_; }
  /// The call is registered as a waiter of its name until `until`.
  void registered_until(steady_time until) { registered_until_ = until; }

 private:
  std::unique_ptr<notify_wait> notify_;
  unsigned attempts_ = 0;
  unsigned pauses_ = 0;
  bool waited_in_server_ = false;
  steady_time registered_until_{};
};

}  // namespace sqlock::postgres
