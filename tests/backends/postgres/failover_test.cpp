// A multi-host URL (standby listed first, target_session_attrs=read-write) across a failover,
// on a PRIVATE primary and hot standby (CTest fixture failover_pair.sh, never the shared
// servers): the URL finds the primary; the primary crashes (stopped immediately, once the
// standby replayed everything) and the standby is promoted; the advisory hold, whose session
// was on the old primary, is reported lost at once; the row-mode hold, replicated, is renewed
// on the new primary and still excludes; new acquires succeed there, and the row modes' fences
// keep rising (the promoted server raises the fence epoch).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "pg_env.hpp"
#include "sqlock/errors.hpp"

namespace sqlock::test {
namespace {

using namespace std::chrono_literals;

class pg_failover : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(std::string(SQLOCK_PG_FAILOVER_DIR) + "/url");
    if (!(in >> url_)) {
      if (require_all()) FAIL() << "the private primary and standby did not start";
      GTEST_SKIP() << "no private PostgreSQL pair (postgresql-15 not installed)";
    }
  }
  void ctl(const std::string& what) {
    const auto cmd =
        std::string(SQLOCK_PG_FAILOVER_CTL) + " " + what + " " + SQLOCK_PG_FAILOVER_DIR;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string url_;
};

TEST_F(pg_failover, a_multi_host_url_finds_the_primary_and_follows_it_after_a_failover) {
  sqlock::connect(pg::with(url_, "migrate=auto"));
  auto rows = sqlock::connect(pg::with(url_, "mode=pessimistic"));
  auto adv = sqlock::connect(pg::with(url_, "mode=advisory"));
  auto other = sqlock::connect(pg::with(url_, "mode=pessimistic"));

  const auto row_name = unique_name("failover-row"), adv_name = unique_name("failover-adv");
  auto r = rows.make_lock(row_name, {.lease = 8s});
  auto a = adv.make_lock(adv_name);
  ASSERT_TRUE(r.try_lock_for(10s));  // on the primary, though the standby is listed first
  ASSERT_TRUE(a.try_lock_for(10s));
  const auto fence_before = std::max(r.fence(), a.fence());

  ctl("caught_up");
  ctl("failover");

  EXPECT_TRUE(eventually([&] { return a.lost(); }, 10s)) << "advisory hold not reported lost";
  a.unlock();  // releases nothing: the session is gone
  // The row, replicated, is the new primary's: renewed there (every ~2.7 s) and still excluding.
  std::this_thread::sleep_for(4s);
  EXPECT_FALSE(r.lost());
  auto rival = other.make_lock(row_name);
  EXPECT_FALSE(rival.try_lock_for(1s));

  // New holds on the new primary, fences above every fence of the old one.
  auto n = rows.make_lock(unique_name("failover-new"));
  ASSERT_TRUE(n.try_lock_for(15s));
  EXPECT_GT(n.fence(), fence_before);
  auto a2 = adv.make_lock(adv_name);
  ASSERT_TRUE(a2.try_lock_for(15s));
  EXPECT_GT(a2.fence(), fence_before);
  r.unlock();
  ASSERT_TRUE(rival.try_lock_for(10s));
  EXPECT_GT(rival.fence(), fence_before);
  rival.unlock();
  n.unlock();
  a2.unlock();
}

}  // namespace
}  // namespace sqlock::test
