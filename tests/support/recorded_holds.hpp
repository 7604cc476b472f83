// Checks of the advisory backends that record holds in the background (PostgreSQL schema
// version 8, MariaDB schema version 4): a hold not recorded yet is not listed by other
// processes, and once the holding process has listed (which records its holds first), everyone
// sees it with its owner and fence; force_release() by another process ends a hold that is not
// recorded, and its holder hears of the loss.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "sqlock/client.hpp"

namespace sqlock::test {

inline void expect_listed_once_recorded(client& holder, client& other, const mutex& l) {
  EXPECT_TRUE(other.list(l.name()).empty()) << "not recorded yet";
  auto own = holder.list(l.name());
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].owner, l.owner());
  EXPECT_EQ(own[0].fence, l.fence());
  auto seen = other.list(l.name());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].owner, l.owner());
  EXPECT_EQ(seen[0].fence, l.fence());
}

inline void expect_force_release_ends_it(client& other, mutex& l) {
  using namespace std::chrono_literals;
  std::atomic<bool> lost{false};
  l.on_lost([&](const std::string&) { lost = true; });
  EXPECT_TRUE(other.force_release(l.name()));
  auto next = other.make_lock(l.name());
  EXPECT_TRUE(next.try_lock_for(10s));
  for (auto until = std::chrono::steady_clock::now() + 10s;
       !lost && std::chrono::steady_clock::now() < until;)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(lost) << "the holder hears of the loss";
  next.unlock();
}

}  // namespace sqlock::test
