// Require-leader on a private 3-member cluster: the client asks every member it calls or watches
// through for etcd's require-leader behaviour (the `hasleader` metadata), so a member that has
// no leader refuses at once and ends the watches it serves, and the client moves to a member
// that has one, instead of sitting on a member that cannot serve. One member is cut off from its
// peers (clients still reach it) while the other two go on; or two members are stopped.
#include <gtest/gtest.h>

#include <future>

#include "etcd_cluster.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "test_env.hpp"

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace sqlock::test {
namespace {

using namespace etcd_env;

// Waits (up to 10 s) until member `i` reports no leader; false if it still has one.
bool leaderless(const private_cluster& c, int i) {
  for (int n = 0; n < 100; ++n) {
    // etcdctl's JSON leaves a zero leader out.
    auto out = c.etcdctl({i}, "endpoint status -w json 2>/dev/null");
    if (out.find("\"member_id\"") != std::string::npos &&
        out.find("\"leader\":") == std::string::npos)
      return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

class etcd_require_leader : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string shared;
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", shared);  // the servers are installed
  }
};

// A new client that tries the cut-off member first takes the lock through another member well
// within its wait (the wait is 5 s, a request's timeout 2 s: a call that sat on the cut-off
// member until its timeout and then moved on could not lock in time for both its put and read).
TEST_F(etcd_require_leader, a_member_without_a_leader_is_passed_over) {
  private_cluster c(22761);
  ASSERT_TRUE(c.healthy()) << "the private cluster did not start";
  c.isolate(3);
  ASSERT_TRUE(leaderless(c, 3));
  auto cl = sqlock::connect(c.url({3, 1, 2}, "?timeout=2s"));
  auto l = cl.make_lock("cut-off", {.lease = 30s});
  EXPECT_TRUE(l.try_lock_for(5s));
  // The hold is watched on a member with a leader: a forced release through member 1 reaches
  // the holder long before its renewal (a third of its 30 s lease).
  std::atomic<bool> told{false};
  l.on_lost([&](const std::string&) { told = true; });
  auto other = sqlock::connect(c.url({1, 2}, "?timeout=2s"));
  EXPECT_TRUE(other.force_release("cut-off"));
  for (int i = 0; i < 250 && !told; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(told) << "the holder's watch stayed on the member without a leader";
  if (l.owns_lock()) l.unlock();
}

// A waiter watching through a member that loses its leader (cut off from its peers) is told:
// the member ends its watch, the waiter watches again through a member with a leader and sees
// the release that the other two members carried out, within its 15 s wait (its own lease of
// 60 s is kept alive every 20 s, when it would read the queue again anyway).
TEST_F(etcd_require_leader, a_waiter_whose_member_loses_its_leader_moves_on) {
  private_cluster c(22771);
  ASSERT_TRUE(c.healthy()) << "the private cluster did not start";
  auto a = sqlock::connect(c.url({1, 2}, "?timeout=2s"));
  auto la = a.make_lock("moves-on", {.lease = 30s});
  la.lock();
  auto b = sqlock::connect(c.url({3, 1, 2}, "?timeout=2s"));
  auto lb = b.make_lock("moves-on", {.lease = 60s});
  auto got = std::async(std::launch::async, [&] { return lb.try_lock_for(15s); });
  std::this_thread::sleep_for(500ms);  // b queues and watches through member 3 (not a bound)
  c.isolate(3);
  la.unlock();  // through members 1 and 2, which elect a leader if member 3 led
  EXPECT_TRUE(got.get()) << "the waiter stayed on the member without a leader";
  if (lb.owns_lock()) lb.unlock();
}

// Two of three members stopped: the last one has no leader. A lock through it fails (or is not
// taken) by the caller's deadline instead of hanging on the member.
TEST_F(etcd_require_leader, a_lock_through_a_member_without_quorum_ends_by_its_deadline) {
  private_cluster c(22781);
  ASSERT_TRUE(c.healthy()) << "the private cluster did not start";
  c.stop(1);
  c.stop(2);
  ASSERT_TRUE(leaderless(c, 3));
  auto start = steady::now();
  try {
    auto cl = sqlock::connect(c.url({3}, "?timeout=1s"));
    auto l = cl.make_lock("no-quorum", {.lease = 5s});
    EXPECT_FALSE(l.try_lock_for(2s));
  } catch (const connection_error&) {
    // The cluster is out of reach: also an answer by the deadline.
  }
  EXPECT_LT(steady::now() - start,
            2s + 1s + deadline_slack);  // connect's check, the wait, deadline_slack
}

}  // namespace
}  // namespace sqlock::test
