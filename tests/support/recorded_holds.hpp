// Checks of the advisory backends that record holds in the background (PostgreSQL schema
// version 8, MariaDB schema version 4): a hold not recorded yet is not listed by other
// processes, and once the holding process has listed (which records its holds first), everyone
// sees it with its owner and fence.
#pragma once

#include <gtest/gtest.h>

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

}  // namespace sqlock::test
