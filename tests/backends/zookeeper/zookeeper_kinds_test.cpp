// Shared locks and semaphores on the ZooKeeper backend, through the seam and against the real
// server: many shared holders at once, shared and exclusive excluding each other across
// sessions, a queued writer keeping later readers out, the permit bound under threads of two
// processes, a dead session freeing only its own hold, fences, deadlines, a disagreeing permit
// count, old clients' exclusive nodes, and no znode left behind by any test.
#include <gtest/gtest.h>

#include <future>
#include <set>
#include <thread>
#include <vector>

#include "acquire_loop.hpp"
#include "seam_kinds.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"
#include "test_env.hpp"
#include "zk_raw.hpp"
#include "zk_test_support.hpp"

using namespace sqlock;
using namespace std::chrono_literals;
using sqlock::test::eventually;
using sqlock::test::later;
using sqlock::test::pending;
using sqlock::test::raw_zk;
using sqlock::test::soon;
using clock_type = std::chrono::steady_clock;

namespace {

class zk_kinds : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ZOOKEEPER_URL", url_);
    register_builtin_backends();
  }
  // Every test leaves no znode under the names it used.
  void TearDown() override {
    if (url_.empty()) return;
    raw_zk& r = raw();
    for (const auto& n : names_)
      EXPECT_TRUE(eventually([&] { return r.queue_length(n) <= 0; }, 5s)) << n;
  }

  std::shared_ptr<backend> open() { return make_backend(url_); }
  raw_zk& raw() {
    if (!raw_) raw_ = std::make_unique<raw_zk>(url_);
    return *raw_;
  }
  std::string name(const std::string& stem) {
    names_.push_back(sqlock::test::unique_name(stem));
    return names_.back();
  }
  static lock_request req(const std::string& n, lock_kind kind, std::uint32_t permits = 0) {
    return sqlock::test::kind_request(n, kind, permits);
  }
  static std::optional<lease_info> get(backend& b, const lock_request& r,
                                       std::chrono::milliseconds wait = 10s) {
    return sqlock::acquire(b, r, clock_type::now() + wait, {});
  }
  // The queue length of `n` reaches `k` (a waiter is queued).
  void queued(const std::string& n, int k) {
    ASSERT_TRUE(eventually([&] { return raw().queue_length(n) == k; }, 10s)) << n;
  }

  std::string url_;
  std::vector<std::string> names_;
  std::unique_ptr<raw_zk> raw_;
};

}  // namespace

TEST_F(zk_kinds, the_backend_offers_shared_and_permits) {
  auto b = open();
  EXPECT_TRUE(b->caps().shared);
  EXPECT_TRUE(b->caps().permits);
  EXPECT_FALSE(b->caps().linger);
}

TEST_F(zk_kinds, many_shared_holders_at_once_across_clients_and_list_shows_each) {
  auto n = name("many-shared");
  auto b1 = open(), b2 = open();
  sqlock::test::expect_many_shared(*b1, *b2, n, [&](int k) { queued(n, k); });
}

TEST_F(zk_kinds, shared_and_exclusive_exclude_each_other_across_clients) {
  auto n = name("rw");
  auto b1 = open(), b2 = open();
  auto ex = get(*b1, req(n, lock_kind::exclusive));
  ASSERT_TRUE(ex);
  EXPECT_FALSE(get(*b2, req(n, lock_kind::shared), 300ms));
  auto reader = later(*b2, req(n, lock_kind::shared));
  queued(n, 2);
  EXPECT_TRUE(pending(reader));
  ASSERT_TRUE(b1->release(*ex, soon()));
  auto sh = reader.get();
  ASSERT_TRUE(sh);
  EXPECT_TRUE(sh->waited);
  EXPECT_GT(sh->fence, ex->fence);

  EXPECT_FALSE(get(*b1, req(n, lock_kind::exclusive), 300ms));
  auto writer = later(*b1, req(n, lock_kind::exclusive));
  queued(n, 2);
  EXPECT_TRUE(pending(writer));
  ASSERT_TRUE(b2->release(*sh, soon()));
  auto ex2 = writer.get();
  ASSERT_TRUE(ex2);
  EXPECT_GT(ex2->fence, sh->fence);
  auto rows = b2->admin()->list(n);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kind, lock_kind::exclusive);
  EXPECT_TRUE(b1->release(*ex2, soon()));
}

TEST_F(zk_kinds, a_queued_writer_keeps_later_readers_out) {
  auto n = name("writer-first");
  auto b1 = open(), b2 = open();
  sqlock::test::expect_writer_first(*b1, *b2, n, [&](int k) { queued(n, k); });
}

TEST_F(zk_kinds, a_writer_is_not_starved_while_readers_keep_arriving) {
  auto n = name("no-starve");
  auto b1 = open(), b2 = open();
  sqlock::test::expect_writer_not_starved(*b1, *b2, n);
}

TEST_F(zk_kinds, the_permit_bound_holds_under_threads_of_two_processes) {
  auto n = name("permits");
  sqlock::test::expect_permit_bound(url_, n, 3, 8, 6);
}

TEST_F(zk_kinds, each_permit_is_a_hold_of_its_own_listed_with_its_count) {
  auto n = name("permit-list");
  auto b = open();
  sqlock::test::expect_permits_listed(*b, n);
}

TEST_F(zk_kinds, a_different_permit_count_is_a_config_error_until_the_name_is_idle) {
  auto n = name("permit-n");
  auto b1 = open(), b2 = open();
  sqlock::test::expect_permit_count_agreed(*b1, *b2, n, [&](int k) { queued(n, k); });
}

TEST_F(zk_kinds, a_dead_session_frees_only_its_own_hold) {
  auto n = name("session-death");
  auto a = open(), b = open(), c = open();
  auto pa = get(*a, req(n, lock_kind::permit, 2));
  auto pb = get(*b, req(n, lock_kind::permit, 2));
  ASSERT_TRUE(pa && pb);
  auto pc = later(*c, req(n, lock_kind::permit, 2));
  queued(n, 3);
  zookeeper::close(*a);
  auto got = pc.get();
  ASSERT_TRUE(got);
  EXPECT_TRUE(b->renew(*pb, 30s, soon()));
  EXPECT_EQ(b->admin()->list(n).size(), 2u);
  EXPECT_TRUE(b->release(*pb, soon()));
  EXPECT_TRUE(c->release(*got, soon()));

  auto m = name("session-death-shared");
  auto d = open();
  auto sb = get(*b, req(m, lock_kind::shared));
  auto sd = get(*d, req(m, lock_kind::shared));
  ASSERT_TRUE(sb && sd);
  auto writer = later(*c, req(m, lock_kind::exclusive));
  queued(m, 3);
  zookeeper::close(*d);
  queued(m, 2);  // the writer still waits for the other reader
  EXPECT_TRUE(pending(writer));
  EXPECT_TRUE(b->renew(*sb, 30s, soon()));
  ASSERT_TRUE(b->release(*sb, soon()));
  auto w = writer.get();
  ASSERT_TRUE(w);
  EXPECT_GT(w->fence, std::max(sb->fence, sd->fence));
  EXPECT_TRUE(c->release(*w, soon()));
}

TEST_F(zk_kinds, an_exclusive_fence_exceeds_every_earlier_hold) {
  auto n = name("fences");
  auto b1 = open(), b2 = open();
  std::uint64_t highest = 0;
  for (int round = 0; round < 3; ++round) {
    auto s1 = get(*b1, req(n, lock_kind::shared));
    auto s2 = get(*b2, req(n, lock_kind::shared));
    ASSERT_TRUE(s1 && s2);
    EXPECT_NE(s1->fence, s2->fence);
    EXPECT_GT(std::min(s1->fence, s2->fence), highest);
    auto writer = later(*b1, req(n, lock_kind::exclusive));
    queued(n, 3);
    auto s3 = later(*b2, req(n, lock_kind::shared));  // after the writer: gets a later fence
    queued(n, 4);
    EXPECT_TRUE(b2->release(*s2, soon()));
    EXPECT_TRUE(b1->release(*s1, soon()));
    auto w = writer.get();
    ASSERT_TRUE(w);
    EXPECT_GT(w->fence, std::max(s1->fence, s2->fence));
    EXPECT_TRUE(b1->release(*w, soon()));
    auto r3 = s3.get();
    ASSERT_TRUE(r3);
    EXPECT_TRUE(b2->release(*r3, soon()));
    highest = r3->fence;
  }
}

TEST_F(zk_kinds, waits_end_at_their_deadline_and_leave_no_node) {
  auto n = name("deadline");
  auto b1 = open(), b2 = open();
  sqlock::test::expect_waits_end_on_time(*b1, *b2, n, [&](int k) { queued(n, k); });
}

TEST_F(zk_kinds, a_retried_attempt_of_one_owner_gets_the_same_hold) {
  auto n = name("retry");
  auto b = open();
  auto r = req(n, lock_kind::shared);
  auto first = b->try_acquire(r, soon());
  ASSERT_TRUE(first);
  auto again = b->try_acquire(r, soon());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->fence, first->fence);
  EXPECT_EQ(raw().queue_length(n), 1);
  EXPECT_TRUE(b->release(*first, soon()));
}

TEST_F(zk_kinds, an_old_clients_exclusive_node_keeps_readers_and_permits_out) {
  auto n = name("old-client");
  auto b = open();
  b->admin()->list("");  // the session made the base path
  raw_zk& r = raw();
  const std::string parent = r.parent(n);
  ASSERT_EQ(zoo_create(r.handle(), parent.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER,
                       nullptr, 0),
            ZOK);
  char made[1024];
  const std::string node = parent + "/n-" + random_token() + "-";
  ASSERT_EQ(zoo_create(r.handle(), node.c_str(), "old", 3, &ZOO_OPEN_ACL_UNSAFE,
                       ZOO_EPHEMERAL_SEQUENTIAL, made, sizeof made),
            ZOK);
  EXPECT_FALSE(get(*b, req(n, lock_kind::shared), 300ms));
  EXPECT_FALSE(get(*b, req(n, lock_kind::permit, 5), 300ms));
  auto rows = b->admin()->list(n);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kind, lock_kind::exclusive);
  auto reader = later(*b, req(n, lock_kind::shared));
  queued(n, 2);
  ASSERT_EQ(zoo_delete(r.handle(), made, -1), ZOK);
  auto got = reader.get();
  ASSERT_TRUE(got);
  EXPECT_TRUE(b->release(*got, soon()));
}
