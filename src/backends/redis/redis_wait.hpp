// What one waiting Redis request keeps between its attempts: the interest in the lock's
// releases, taken before the first attempt, and what the last busy attempt saw (a Redlock split
// vote, the other hold's remaining lease). wait() sleeps until a release message, the other
// hold's expiry (which publishes nothing) or a short random delay after a split vote.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "redis_connection.hpp"
#include "redis_subscriber.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/random.hpp"

namespace sqlock::redis::detail {

/// What one waiting request keeps between its attempts (its acquisition owns it).
class redis_wait final {
 public:
  /// Keeps `w`, the interest registered before the first attempt.
  explicit redis_wait(std::unique_ptr<interest> w) : watching_(std::move(w)) {}
  /// Runs on_end (end()).
  ~redis_wait() { end(); }
  /// Runs on_end once (errors ignored: what it undoes also expires by itself).
  void end() noexcept {
    if (!on_end) return;
    auto f = std::exchange(on_end, nullptr);
    try {
      f();
    } catch (...) {
    }
  }
  redis_wait(const redis_wait&) = delete;
  redis_wait& operator=(const redis_wait&) = delete;
  bool split = false;            ///< Redlock: some servers granted, no majority
  long long expires_in = -1;     ///< ms until the other hold expires (-1 = unknown)
  steady_time seen{};            ///< when the attempt that saw expires_in was sent
  std::function<void()> on_end;  ///< run when the request ends (drops a writer mark)

  /// Until a release message, the other hold's expiry, a split vote's random delay or `until`.

  void wait(steady_time until, const std::stop_token& stop) {
    const auto now = std::chrono::steady_clock::now();
    if (until <= now) return;
    if (split) {
      // Redlock split vote: nobody got a majority; retry after a random delay so that the
      // contenders do not collide again.
      split = false;
      sleep_until(std::min<steady_time>(until, now + milliseconds(5 + jitter(30))), stop);
      return;
    }
    // A hold that simply expires publishes nothing: look again when its lease runs out.
    if (expires_in >= 0) until = std::min<steady_time>(until, seen + milliseconds(expires_in + 1));
    watching_->wait(until, stop);
  }

  /// Called at the start of every attempt (arm() looks for releases from then on).
  void attempt_starts() { watching_->attempt_starts(); }

  /// The non-blocking form of wait() (acquisition::arm): when to try again if no release
  /// message wakes `wake` first; empty while no subscription stands (the core backs off).
  std::optional<steady_time> arm(steady_time until, std::function<void()> wake) {
    const auto now = std::chrono::steady_clock::now();
    if (until <= now) return now;
    if (split) {
      split = false;
      return std::min<steady_time>(until, now + milliseconds(5 + jitter(30)));
    }
    if (expires_in >= 0) until = std::min<steady_time>(until, seen + milliseconds(expires_in + 1));
    switch (watching_->arm(std::move(wake))) {
      case interest::armed::heard:
        return now;
      case interest::armed::cannot:
        return std::nullopt;
      case interest::armed::wake_armed:
        break;
    }
    return until;
  }
  /// Drops the wake-up of arm().
  void disarm() noexcept { watching_->disarm(); }

 private:
  std::unique_ptr<interest> watching_;
};

}  // namespace sqlock::redis::detail
