// PostgreSQL fence_check beside renewals: an application transaction that checked its fence
// (fence_check locks the hold's row FOR KEY SHARE) must not block the holder's own renewals, so
// a fenced transaction longer than the lease does not lose the lock; and a new holder still
// cannot take an expired hold over until that transaction ends, in both row modes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <pqxx/pqxx>
#include <thread>

#include "sqlock/client.hpp"
#include "sqlock/postgres/xact_lock.hpp"
#include "test_env.hpp"

using namespace std::chrono_literals;
using sqlock::test::unique_name;

namespace {

std::string with(const std::string& base, const std::string& params) {
  return base + (base.find('?') == std::string::npos ? "?" : "&") + params;
}

class fence_check_beside_renewals : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_POSTGRES_URL", owner_);
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_POSTGRES_APP_URL", app_);
    sqlock::connect(with(owner_, "migrate=auto"));
  }
  std::string url() const { return with(app_, std::string("mode=") + GetParam()); }
  std::string owner_, app_;
};

TEST_P(fence_check_beside_renewals, a_fenced_transaction_longer_than_the_lease_keeps_the_hold) {
  auto c = sqlock::connect(url());
  auto n = unique_name("long-fenced");
  auto l = c.make_lock(n, {.lease = 2s});
  ASSERT_TRUE(l.try_lock());
  const auto fence = l.fence();
  const auto renewals_before = c.stats().renewals;
  pqxx::connection app(app_);
  {
    pqxx::work tx(app);
    ASSERT_TRUE(sqlock::postgres::fence_check(tx, n, fence));
    // Five seconds inside the fenced transaction: the 2 s lease is renewed several times.
    std::this_thread::sleep_for(5s);
    EXPECT_TRUE(sqlock::postgres::fence_check(tx, n, fence));
    tx.commit();
  }
  EXPECT_FALSE(l.lost()) << "the holder lost its lease beside its own fenced transaction";
  EXPECT_GT(c.stats().renewals, renewals_before);
  EXPECT_TRUE(l.renew());
  l.unlock();
}

TEST_P(fence_check_beside_renewals, an_expired_hold_is_taken_over_only_after_the_transaction) {
  auto a = sqlock::connect(url());
  auto b = sqlock::connect(url());
  auto n = unique_name("fenced-takeover");
  auto la = a.make_lock(n, {.lease = 300ms, .auto_renew = false});
  ASSERT_TRUE(la.try_lock());
  const auto fence = la.fence();
  pqxx::connection app(app_);
  std::atomic<std::int64_t> taken_at{0};
  std::int64_t committed_at = 0;
  std::thread taker;
  {
    pqxx::work tx(app);
    ASSERT_TRUE(sqlock::postgres::fence_check(tx, n, fence));
    std::this_thread::sleep_for(600ms);  // the lease has run out; the row lock has not
    taker = std::thread([&] {
      auto lb = b.make_lock(n);
      EXPECT_TRUE(lb.try_lock_for(30s));
      taken_at = std::chrono::steady_clock::now().time_since_epoch().count();
      EXPECT_GT(lb.fence(), fence);
      lb.unlock();
    });
    std::this_thread::sleep_for(500ms);
    committed_at = std::chrono::steady_clock::now().time_since_epoch().count();
    tx.commit();
  }
  taker.join();
  EXPECT_GT(taken_at.load(), committed_at)
      << "a new holder took over during the fenced transaction";
  la.unlock();
}

INSTANTIATE_TEST_SUITE_P(modes, fence_check_beside_renewals,
                         ::testing::Values("pessimistic", "optimistic"));

}  // namespace
