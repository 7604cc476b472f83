// Shared locks and semaphore permits on Redis, through the seam (one script per operation, the
// keys of a name in one hash slot): shared holders together, exclusion both ways, a waiting
// writer keeps new readers out and drops its mark when it gives up, the permit bound under
// threads, N agreed by every user, one holder's expiry leaving the others, list() and forced
// release; Redlock declares both kinds unsupported.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "acquire_loop.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

class redis_kinds : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDIS_URL", url_);
    c_ = std::make_unique<client>(connect(url_));
  }
  backend& b() { return c_->get_backend(); }
  lock_request req(const std::string& name, lock_kind kind, std::uint32_t permits = 0,
                   milliseconds lease = 10s) {
    return {name, random_token(), lease, "test", kind, permits};
  }
  std::string url_;
  std::unique_ptr<client> c_;
};

TEST_F(redis_kinds, shared_holders_together_and_exclusive_excluded_both_ways) {
  ASSERT_TRUE(b().caps().shared);
  const auto n = unique_name("rw");
  auto r1 = b().try_acquire(req(n, lock_kind::shared), soon());
  auto r2 = b().try_acquire(req(n, lock_kind::shared), soon());
  ASSERT_TRUE(r1 && r2);
  EXPECT_GT(r2->fence, r1->fence);
  EXPECT_FALSE(b().try_acquire(req(n, lock_kind::exclusive), soon()));
  EXPECT_TRUE(b().release(*r1, soon()));
  EXPECT_FALSE(b().try_acquire(req(n, lock_kind::exclusive), soon()));
  EXPECT_TRUE(b().release(*r2, soon()));
  EXPECT_FALSE(b().release(*r2, soon()));  // idempotent
  auto w = b().try_acquire(req(n, lock_kind::exclusive), soon());
  ASSERT_TRUE(w);
  EXPECT_GT(w->fence, r2->fence);  // above every earlier hold of the name
  EXPECT_FALSE(b().try_acquire(req(n, lock_kind::shared), soon()));
  EXPECT_TRUE(b().release(*w, soon()));
  auto r3 = b().try_acquire(req(n, lock_kind::shared), soon());
  ASSERT_TRUE(r3);
  EXPECT_GT(r3->fence, w->fence);
  EXPECT_TRUE(b().release(*r3, soon()));
}

TEST_F(redis_kinds, a_retried_shared_acquire_keeps_its_hold_and_fence) {
  const auto n = unique_name("retry");
  auto q = req(n, lock_kind::shared);
  auto first = b().try_acquire(q, soon());
  auto again = b().try_acquire(q, soon());
  ASSERT_TRUE(first && again);
  EXPECT_EQ(first->fence, again->fence);
  EXPECT_EQ(b().admin()->list(n).size(), 1u);
  EXPECT_TRUE(b().release(*first, soon()));
}

TEST_F(redis_kinds, a_waiting_writer_keeps_new_readers_out_and_gets_the_lock) {
  const auto n = unique_name("writer");
  auto r1 = b().try_acquire(req(n, lock_kind::shared), soon());
  ASSERT_TRUE(r1);
  std::atomic<bool> got{false};
  std::thread writer([&] {
    auto other = connect(url_);
    auto l = sqlock::acquire(other.get_backend(), req(n, lock_kind::exclusive), clock::now() + 20s,
                             wait_policy{});
    got = l.has_value();
    if (l) {
      std::this_thread::sleep_for(100ms);
      other.get_backend().release(*l, soon());
    }
  });
  // Until the writer has its mark in place, a reader may still come in; after that none.
  auto deadline = clock::now() + 10s;
  bool kept_out = false;
  while (!kept_out && clock::now() < deadline) {
    auto r = b().try_acquire(req(n, lock_kind::shared), soon());
    if (r)
      b().release(*r, soon());
    else
      kept_out = true;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(kept_out);
  EXPECT_FALSE(got);
  EXPECT_TRUE(b().release(*r1, soon()));  // the last reader leaves: the writer goes in
  writer.join();
  EXPECT_TRUE(got);
  auto after = b().try_acquire(req(n, lock_kind::shared), soon());
  EXPECT_TRUE(after);  // the writer took its mark with it
  if (after) b().release(*after, soon());
}

TEST_F(redis_kinds, a_writer_that_gives_up_lets_readers_in_at_once) {
  const auto n = unique_name("giveup");
  auto r1 = b().try_acquire(req(n, lock_kind::shared), soon());
  ASSERT_TRUE(r1);
  auto w = sqlock::acquire(b(), req(n, lock_kind::exclusive), clock::now() + 300ms, wait_policy{});
  EXPECT_FALSE(w);
  // Its mark would keep readers out for seconds; the end of its acquire() dropped it.
  EXPECT_TRUE(b().try_acquire(req(n, lock_kind::shared), soon()));
  // A single exclusive attempt (try_lock) marks nothing.
  EXPECT_FALSE(b().try_acquire(req(n, lock_kind::exclusive), soon()));
  EXPECT_TRUE(b().try_acquire(req(n, lock_kind::shared), soon()));
  b().admin()->force_release(n);
}

TEST_F(redis_kinds, permits_are_bounded_and_every_user_must_agree_on_n) {
  ASSERT_TRUE(b().caps().permits);
  const auto n = unique_name("sem");
  std::vector<lease_info> held;
  for (int i = 0; i < 3; ++i) {
    auto p = b().try_acquire(req(n, lock_kind::permit, 3), soon());
    ASSERT_TRUE(p);
    held.push_back(*p);
  }
  EXPECT_FALSE(b().try_acquire(req(n, lock_kind::permit, 3), soon()));
  EXPECT_THROW(b().try_acquire(req(n, lock_kind::permit, 4), soon()), config_error);
  EXPECT_THROW(b().try_acquire(req(n, lock_kind::shared), soon()), config_error);
  EXPECT_FALSE(b().try_acquire(req(n, lock_kind::exclusive), soon()));
  auto rows = b().admin()->list(n);
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.kind, lock_kind::permit);
    EXPECT_EQ(r.permits, 3u);
    EXPECT_EQ(r.holder, "test");
    EXPECT_FALSE(r.expires_at.empty());
    EXPECT_FALSE(r.acquired_at.empty());
  }
  EXPECT_TRUE(b().release(held[0], soon()));
  EXPECT_TRUE(b().try_acquire(req(n, lock_kind::permit, 3), soon()));
  EXPECT_TRUE(b().admin()->force_release(n));
  EXPECT_TRUE(b().admin()->list(n).empty());
  // Idle again: another N is accepted.
  EXPECT_TRUE(b().try_acquire(req(n, lock_kind::permit, 5), soon()));
  b().admin()->force_release(n);
}

TEST_F(redis_kinds, the_permit_bound_holds_under_threads) {
  const auto n = unique_name("bound");
  constexpr int permits = 3;
  std::atomic<int> inside{0}, most{0}, done{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&] {
      auto c = connect(url_);
      for (int i = 0; i < 15; ++i) {
        auto p = sqlock::acquire(c.get_backend(), req(n, lock_kind::permit, permits),
                                 clock::now() + 30s, wait_policy{});
        if (!p) continue;
        int now = ++inside;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(2ms);
        --inside;
        c.get_backend().release(*p, soon());
        ++done;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(done.load(), 8 * 15);
  EXPECT_LE(most.load(), permits);
  EXPECT_EQ(most.load(), permits);  // and they did run side by side
}

TEST_F(redis_kinds, one_shared_holders_expiry_leaves_the_others) {
  const auto n = unique_name("expiry");
  auto shortlived = b().try_acquire(req(n, lock_kind::shared, 0, 400ms), soon());
  auto lasting = b().try_acquire(req(n, lock_kind::shared, 0, 20s), soon());
  ASSERT_TRUE(shortlived && lasting);
  std::this_thread::sleep_for(800ms);
  EXPECT_FALSE(b().renew(*shortlived, 10s, soon()));
  EXPECT_FALSE(b().release(*shortlived, soon()));
  EXPECT_TRUE(b().renew(*lasting, 20s, soon()));
  EXPECT_FALSE(b().try_acquire(req(n, lock_kind::exclusive), soon()));
  auto rows = b().admin()->list(n);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].owner, lasting->owner);
  EXPECT_EQ(rows[0].kind, lock_kind::shared);
  EXPECT_TRUE(b().release(*lasting, soon()));
  EXPECT_TRUE(b().try_acquire(req(n, lock_kind::exclusive), soon()));
  b().admin()->force_release(n);
}

TEST_F(redis_kinds, renew_can_shorten_a_lease) {
  ASSERT_TRUE(b().caps().linger);
  const auto n = unique_name("shorten");
  auto x = b().try_acquire(req(n, lock_kind::exclusive, 0, 30s), soon());
  ASSERT_TRUE(x);
  ASSERT_TRUE(b().renew(*x, 300ms, soon()));
  std::this_thread::sleep_for(600ms);
  EXPECT_TRUE(b().try_acquire(req(n, lock_kind::exclusive), soon()));
  b().admin()->force_release(n);
}

TEST(redlock_kinds, are_declared_unsupported) {
  std::string url;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDLOCK_URL", url);
  auto c = connect(url);
  EXPECT_FALSE(c.caps().shared);
  EXPECT_FALSE(c.caps().permits);
  lock_request r{unique_name("rl"), random_token(), 5s, "test", lock_kind::permit, 2};
  EXPECT_THROW(require_kind(c.get_backend(), r), unsupported);
}

}  // namespace
}  // namespace sqlock::test
