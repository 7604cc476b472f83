// Helpers the ZooKeeper test programs share: polling for a condition with a limit.
#pragma once

#include <chrono>
#include <thread>

namespace sqlock::test {

/// Polls `f` every 20 ms until it is true (true) or `limit` has passed (its last answer).
template <class F>
bool eventually(F&& f, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return f();
}

}  // namespace sqlock::test
