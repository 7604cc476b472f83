// Stops requested at every moment of a wait: the first try, the pause after it, the request
// of a wait in the server (where a cancel or kill that arrives before the statement is
// forgotten), the wait itself. Each stopped wait must end long before its deadline.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <thread>

#include "sqlock/client.hpp"

namespace sqlock::test {

/// Runs `stops` waits of `waiter` (a lock another client holds), each with a 10 s deadline and
/// stopped i × 50 µs after it began (i = 0 … stops − 1); the number of waits that ran past
/// half their deadline — a bound with seconds of slack: a stop that was missed waits it all.
inline int waits_a_stop_missed(mutex& waiter, int stops = 100) {
  using namespace std::chrono_literals;
  int missed = 0;
  for (int i = 0; i < stops; ++i) {
    std::stop_source stop;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    std::thread stopper([&stop, i] {
      std::this_thread::sleep_for(std::chrono::microseconds(i * 50));
      stop.request_stop();
    });
    try {
      EXPECT_FALSE(waiter.try_lock_until_steady(deadline, stop.get_token()));
    } catch (const interrupted&) {
    }
    stopper.join();
    if (std::chrono::steady_clock::now() >= deadline - 5s) ++missed;
  }
  return missed;
}

}  // namespace sqlock::test
