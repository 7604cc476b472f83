// The queue rule of etcd and ZooKeeper (src/core/queue_rule.hpp) on small queues of every kind:
// who holds, whom a waiter waits for, and the refusal of a permit count that disagrees.
#include <gtest/gtest.h>

#include <vector>

#include "core/queue_rule.hpp"

using namespace sqlock;

namespace {

struct entry {
  lock_kind kind = lock_kind::exclusive;
  std::uint32_t permits = 0;
};

const entry ex{lock_kind::exclusive, 0};
const entry sh{lock_kind::shared, 0};
entry permit(std::uint32_t n) {
  return {lock_kind::permit, n};
}

}  // namespace

TEST(queue_rule, the_first_entry_of_any_kind_holds) {
  for (const auto& e : {ex, sh, permit(1)}) {
    std::vector<entry> q{e, ex};
    EXPECT_TRUE(queue_rule::holds(q, 0));
  }
}

TEST(queue_rule, an_exclusive_waiter_waits_for_the_entry_just_before_it) {
  std::vector<entry> q{sh, sh, permit(3), ex};
  auto s = queue_rule::standing_of(q, 3);
  EXPECT_FALSE(s.holds);
  EXPECT_FALSE(s.any_before);
  EXPECT_EQ(s.wait_for, 2u);
}

TEST(queue_rule, readers_share_until_a_queued_writer_keeps_later_readers_out) {
  std::vector<entry> q{sh, sh, ex, sh, sh};
  EXPECT_TRUE(queue_rule::holds(q, 1));
  EXPECT_FALSE(queue_rule::holds(q, 2));
  for (std::size_t i : {3u, 4u}) {
    auto s = queue_rule::standing_of(q, i);
    EXPECT_FALSE(s.holds);
    EXPECT_EQ(s.wait_for, 2u) << i;  // the nearest entry of another kind, the writer
  }
}

TEST(queue_rule, permits_hold_up_to_n_then_wait_for_any_of_them) {
  std::vector<entry> q{permit(2), permit(2), permit(2)};
  EXPECT_TRUE(queue_rule::holds(q, 0));
  EXPECT_TRUE(queue_rule::holds(q, 1));
  auto s = queue_rule::standing_of(q, 2);
  EXPECT_FALSE(s.holds);
  EXPECT_TRUE(s.any_before);
}

TEST(queue_rule, a_permit_behind_another_kind_waits_for_the_nearest_of_it) {
  std::vector<entry> q{ex, sh, permit(5), permit(5)};
  auto s = queue_rule::standing_of(q, 3);
  EXPECT_FALSE(s.holds);
  EXPECT_FALSE(s.any_before);
  EXPECT_EQ(s.wait_for, 1u);
}

TEST(queue_rule, a_permit_count_that_disagrees_with_one_queued_is_refused) {
  std::vector<entry> q{ex, permit(3), permit(4)};
  EXPECT_NO_THROW(queue_rule::check_permit_count(q, 1, lock_kind::permit, 3, "n", "etcd"));
  EXPECT_THROW(queue_rule::check_permit_count(q, 2, lock_kind::permit, 4, "n", "etcd"),
               config_error);
  EXPECT_THROW(queue_rule::check_permit_count(q, 3, lock_kind::permit, 3, "n", "etcd"),
               config_error);  // the request past the end: 4 queued disagrees
  EXPECT_NO_THROW(queue_rule::check_permit_count(q, 3, lock_kind::shared, 0, "n", "etcd"));
}
