// What every command that runs CMD under a hold shares (`run` of each kind, `elect`, `hold`):
// the parsed lease and wait, signals routed to one thread, the client, the loss path that
// stops CMD's process group, and running CMD itself with SQLOCK_NAME/FENCE/OWNER.
#pragma once

#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common.hpp"

namespace sqlock::cli {

class stopper;

/// One command that runs CMD under a hold; make one per process, before any other thread.
class held_command {
 public:
  /// Parses --lease/--wait/--kill-after (config_error when bad), blocks the signals in every
  /// thread (one thread handles them), applies -q/-v and connects.
  explicit held_command(const run_args& a);
  ~held_command();
  held_command(const held_command&) = delete;
  held_command& operator=(const held_command&) = delete;

  /// The store.
  client& store() { return client_; }
  /// The lease of the hold (at least 500 ms).
  milliseconds lease() const { return lease_; }
  /// What is left of --wait (it covers connecting too); nullopt = until obtained.
  std::optional<milliseconds> wait() const;
  /// The loss path: marks the lease lost and stops CMD's group if it runs (`run`), or ends
  /// `sqlock hold`.
  std::function<void(const std::string& name)> on_lost();
  /// The stop of the wait for the lock: a signal while waiting requests it.
  std::stop_token stop() const;
  /// Runs `body` (the wait for the lock and what follows); when the wait was stopped by a
  /// signal (interrupted), prints so and returns 128 + the signal.
  int waiting(const std::function<int()>& body) const;
  /// Prints that the lock was not obtained within --wait; returns the conflict exit code.
  int not_obtained() const;
  /// Runs CMD (the command or -c string of `a`) with SQLOCK_NAME/FENCE/OWNER; its exit code
  /// by the contract (70 when the lease was lost meanwhile; 128 + the signal, without running
  /// CMD, when a signal came as the lock was obtained).
  int run(const std::string& fence, const std::string& owner);
  /// `sqlock hold`: prints the fence, waits for a signal (0) or the loss (70).
  int hold_until_signal(const std::string& fence);

 private:
  // The wait is over with the lock held: 0, or 128 + the signal when one came meanwhile.
  int wait_over() const;
  const run_args& a_;
  milliseconds lease_{};
  std::optional<milliseconds> wait_;
  steady_time start_;  // when the command began: --wait counts from here
  std::unique_ptr<stopper> stop_;
  sigset_t old_{};
  client client_;
};

/// The fence of a hold as text ("" when the backend gives none).
template <class Held>
std::string fence_text(const Held& h) {
  try {
    return std::to_string(h.fence());
  } catch (const unsupported&) {
    return {};
  }
}

}  // namespace sqlock::cli
