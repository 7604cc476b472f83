// Helpers of the tests of shared and permit holds, shared by the row_kinds suite and by every
// SQL backend's upgrade test: a request of a kind, and what an upgrade must leave intact.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/random.hpp"
#include "test_env.hpp"

namespace sqlock::test {

/// A request of kind `k` for `name` with a fresh owner token (`permits` for a permit).
inline lock_request kinds_request(const std::string& name, lock_kind k, std::uint32_t permits = 0,
                                  milliseconds lease = std::chrono::seconds(60)) {
  lock_request r;
  r.name = name;
  r.owner = random_token();
  r.lease = lease;
  r.holder = "row_kinds_test";
  r.kind = k;
  r.permits = permits;
  return r;
}

/// The checks of every upgrade test, after `sqlock migrate` ran while `owner` held `name`
/// exclusively (fence `fence`, taken through the previous schema): the hold is still there and
/// excludes every kind, its owner renews and releases it through this library, and then shared
/// holds come in with greater fences and keep exclusive requests out.
inline void expect_hold_survived_upgrade(backend& b, const std::string& name,
                                         const std::string& owner, std::uint64_t fence) {
  for (auto k : {lock_kind::exclusive, lock_kind::shared, lock_kind::permit})
    EXPECT_FALSE(b.try_acquire(kinds_request(name, k, k == lock_kind::permit ? 2 : 0), soon()))
        << to_string(k);
  auto all = b.admin()->list(name);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].owner, owner);
  EXPECT_EQ(all[0].fence, fence);
  EXPECT_EQ(all[0].kind, lock_kind::exclusive);
  EXPECT_EQ(all[0].holder, "wave1");
  if (auto* engine = dynamic_cast<sql::engine_backend*>(&b)) {
    EXPECT_TRUE(engine->fence_check(name, fence));
  }
  lease_info held{name, owner, fence, nullptr};
  EXPECT_TRUE(b.renew(held, std::chrono::seconds(60), soon()));
  EXPECT_TRUE(b.release(held, soon()));
  auto shared = b.try_acquire(kinds_request(name, lock_kind::shared), soon());
  ASSERT_TRUE(shared);
  EXPECT_GT(shared->fence, fence);
  EXPECT_FALSE(b.try_acquire(kinds_request(name, lock_kind::exclusive), soon()));
  EXPECT_TRUE(b.release(*shared, soon()));
}

}  // namespace sqlock::test
