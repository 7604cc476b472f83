// The wait state of one acquire() call in advisory mode: whether the call is past its first
// attempt (later attempts may wait inside the server), whether its last attempt already waited
// there (then there is nothing more to wait for before the next one), until when the call is
// registered as a notification-path waiter of its name, and the LISTEN/NOTIFY wait it uses
// when it waits outside the server (or jittered backoff when the backend does not listen).
#pragma once

#include <memory>
#include <thread>
#include <utility>

#include "notifier.hpp"
#include "sqlock/random.hpp"

namespace sqlock::postgres {

/// One advisory acquire() call's state between its attempts.
class advisory_wait final : public wait_state {
 public:
  /// `notify`: the LISTEN/NOTIFY wait of the call, or null when the backend does not listen.
  explicit advisory_wait(std::unique_ptr<notify_wait> notify) : notify_(std::move(notify)) {}

  void wait(steady_time until, const std::stop_token& stop) override {
    if (std::exchange(waited_in_server_, false)) return;  // that attempt was the wait
    if (notify_) {
      // Releases notify only registered waiters: until the call is, the next attempt comes at
      // once (it waits inside the server, or registers first).
      if (registered(std::chrono::steady_clock::now())) notify_->wait(until, stop);
      return;
    }
    auto pause =
        backoff_delay(pauses_++, std::chrono::milliseconds(2), std::chrono::milliseconds(100));
    sleep_until(std::min(std::chrono::steady_clock::now() + pause, until), stop);
  }

  /// Called at the start of every attempt; true for the first one of the call.
  bool first_attempt() {
    if (notify_) notify_->attempt_starts();
    return attempts_++ == 0;
  }
  /// True when releases can wake the call (LISTEN/NOTIFY).
  bool listens() const { return notify_ != nullptr; }
  /// The attempt that just ended waited inside the server.
  void waited_in_server() { waited_in_server_ = true; }
  /// True while the call's notification-path registration is current at `now`.
  bool registered(steady_time now) const { return now < registered_until_; }
  /// The call is registered as a notification-path waiter until `until`.
  void registered_until(steady_time until) { registered_until_ = until; }

 private:
  std::unique_ptr<notify_wait> notify_;
  unsigned attempts_ = 0;
  unsigned pauses_ = 0;
  bool waited_in_server_ = false;
  steady_time registered_until_{};
};

}  // namespace sqlock::postgres
