// A check shared by the stores with releases that do not wait (release=async): the same client's
// next acquire of a name never finds its own release still ahead of it.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sqlock/client.hpp"

namespace sqlock::test {

/// Locks, releases and locks again each of `names` in a row, `rounds` times, on `c`: every
/// try_lock() right after an unlock() gets the lock, no lock() waits behind a release of the
/// same client, and no release fails.
inline void expect_reacquire_never_behind_own_release(sqlock::client& c,
                                                      const std::vector<std::string>& names,
                                                      int rounds = 2) {
  for (int round = 0; round < rounds; ++round) {
    for (const auto& n : names) {
      auto l = c.make_lock(n);
      l.lock();
      l.unlock();
      ASSERT_TRUE(l.try_lock()) << n << ": the acquire found its own release ahead of it";
      l.unlock();
    }
  }
  EXPECT_EQ(c.stats().contended, 0u);  // no lock() waited behind its own release
  EXPECT_EQ(c.stats().release_errors, 0u);
}

}  // namespace sqlock::test
