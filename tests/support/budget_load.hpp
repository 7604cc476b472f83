// The load of the connection-budget tests: many threads of one client lock names of their own
// (per-entity names) for a warm-up second and two more while a sampler reads the store's view of
// the client's connections (how many, and a mark of the newest one: a session id, a start time,
// the client's own count of connections opened); then what a budget promises is checked. And a
// try_lock_for() while every connection of a small budget is busy.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"

namespace sqlock::test {

/// What one sample saw: the client's connections open now, and a mark of the newest one that
/// changes whenever a connection is opened.
using budget_sample = std::pair<int, std::string>;

/// Runs `threads` threads of `c` locking names under `tag` for 3 s, sampling every 20 ms, and
/// expects: no error and no timeout, locks taken after the warm-up second, never more than
/// `budget` connections at once (at least 2: the threads did use connections side by side), no
/// connection opened after the warm-up, and a counted peak within the budget.
inline void expect_within_budget(client& c, int threads, const std::string& tag, int budget,
                                 const std::function<budget_sample()>& sample) {
  using namespace std::chrono_literals;
  using clock = std::chrono::steady_clock;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> pairs{0}, timeouts{0};
  std::atomic<int> errors{0};
  std::string first_error;
  std::mutex m;
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; !stop; ++i) {
        auto l = c.make_lock(tag + ":" + std::to_string(t) + ":" + std::to_string(i % 16));
        try {
          if (l.try_lock_for(2s)) {
            l.unlock();
            ++pairs;
          } else {
            ++timeouts;
          }
        } catch (const std::exception& e) {
          std::lock_guard g(m);
          if (errors++ == 0) first_error = e.what();
        }
      }
    });
  int most = 0;
  auto look = [&] {
    auto [n, newest] = sample();
    most = std::max(most, n);
    return newest;
  };
  for (auto until = clock::now() + 1s; clock::now() < until;) {  // warm-up
    look();
    std::this_thread::sleep_for(20ms);
  }
  const auto warm = look();  // the newest connection of the warm-up
  const auto pairs_warm = pairs.load();
  std::string newest = warm;
  for (auto until = clock::now() + 2s; clock::now() < until;) {
    newest = look();
    std::this_thread::sleep_for(20ms);
  }
  stop = true;
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors.load(), 0) << first_error;
  EXPECT_EQ(timeouts.load(), 0u);
  EXPECT_GT(pairs.load(), pairs_warm) << "no lock taken after the warm-up";
  EXPECT_LE(most, budget) << "connections of one client at once";
  EXPECT_GE(most, 2) << "the threads never used connections side by side";
  const auto counted = c.get_backend().connections();
  ASSERT_TRUE(counted.has_value()) << "the backend counts no connections";
  EXPECT_EQ(newest, warm) << "a connection was opened after the warm-up (opened " << counted->opened
                          << ", peak " << counted->peak << ")";
  EXPECT_LE(counted->peak, static_cast<std::size_t>(budget));
}

/// With the store kept busy by the caller (a table or write lock held), two threads of `c` lock
/// names of their own and so occupy both connections of its budget of 2; once `both_busy()`
/// says they wait in the store (or 10 s passed: a failure), a try_lock_for(200ms) of a third
/// name must return false in time and throw nothing, and `check()` may look at the store; then
/// `unblock()` frees it and both threads must get their lock.
inline void expect_busy_budget_times_out(client& c, const std::string& tag,
                                         const std::function<bool()>& both_busy,
                                         const std::function<void()>& check,
                                         const std::function<void()>& unblock) {
  using namespace std::chrono_literals;
  using clock = std::chrono::steady_clock;
  std::atomic<int> got{0};
  std::vector<std::thread> blocked;
  for (int i = 0; i < 2; ++i)
    blocked.emplace_back([&, i] {
      auto l = c.make_lock(tag + ":blocked" + std::to_string(i));
      if (l.try_lock_for(20s)) {
        ++got;
        l.unlock();
      }
    });
  bool both = false;
  for (auto until = clock::now() + 10s; !both && clock::now() < until;) {
    both = both_busy();
    if (!both) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(both) << "the client's two connections never both waited in the store";
  auto l = c.make_lock(tag + ":free");
  bool taken = true;
  const auto t0 = clock::now();
  EXPECT_NO_THROW(taken = l.try_lock_for(200ms));
  const auto took = clock::now() - t0;
  EXPECT_FALSE(taken);
  // The deadline, plus the 250 ms every attempt may take (wait_policy::min_attempt), plus a
  // margin for a loaded machine.
  EXPECT_LT(took, 200ms + 250ms + 250ms);
  check();
  unblock();
  for (auto& t : blocked) t.join();
  EXPECT_EQ(got.load(), 2) << "the waiting acquires did not complete once the store was free";
}

}  // namespace sqlock::test
