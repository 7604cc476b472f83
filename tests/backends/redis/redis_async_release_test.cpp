// Releases that do not wait (release=async) on Redis: unlock() returns while a private server is
// frozen (SIGSTOP) and the release lands after the thaw; a release lost with its connection
// (CLIENT KILL while the server holds back writes) is sent again; the same client's next acquire of
// a name never finds its own release still ahead of it, from several threads sharing one client's
// pool.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "own_redis.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/redis/redis.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

using clock = std::chrono::steady_clock;

class redis_async_private : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string shared;
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDIS_URL", shared);  // servers are set up here
    std::string bin = env("SQLOCK_TEST_REDIS_SERVER");
    if (bin.empty()) bin = "redis-server";
    srv_ = std::make_unique<own_server>(bin, tmp_.path / "redis");
    srv_->start();
  }
  void TearDown() override {
    if (srv_) srv_->signal(SIGCONT);
  }
  std::string url(const std::string& query = "") const {
    return "redis://127.0.0.1:" + std::to_string(srv_->port()) + query;
  }
  temp_dir tmp_;
  std::unique_ptr<own_server> srv_;
};

// A hold that only its release ends within the test (no renewal, a lease past the test's waits).
const lock_options long_hold{.lease = 60s, .auto_renew = false};

// release=async: unlock() returns with the server frozen and nothing recorded as failed; the
// reply it never got is given up on (timeout=300ms) and the release sent again; once the server
// runs, the lock is free. release=wait (the default): the same release fails by its deadline.
TEST_F(redis_async_private, unlock_returns_while_the_server_is_frozen_and_the_release_lands_after) {
  auto a = connect(url("?release=async&timeout=300ms"));
  auto w = connect(url("?timeout=300ms"));
  auto b = connect(url());
  const auto n = unique_name("async-frozen"), m = unique_name("wait-frozen");
  auto la = a.make_lock(n, long_hold);
  auto lw = w.make_lock(m, long_hold);
  ASSERT_TRUE(la.try_lock());
  ASSERT_TRUE(lw.try_lock());
  const lease_info held_w{m, lw.owner(), lw.fence(), nullptr};
  ASSERT_TRUE(srv_->freeze());
  const auto t0 = clock::now();
  la.unlock();
  const auto unlock_ms = std::chrono::duration_cast<milliseconds>(clock::now() - t0).count();
  EXPECT_EQ(a.stats().release_errors, 0u);
  EXPECT_TRUE(la.last_error().empty()) << la.last_error();
  EXPECT_THROW((void)w.get_backend().release(held_w, clock::now() + 300ms), connection_error);
  std::this_thread::sleep_for(1s);  // the flush gives up on the reply and retries meanwhile
  srv_->signal(SIGCONT);
  std::cout << "frozen Redis: unlock() with release=async returned after " << unlock_ms << " ms\n";
  EXPECT_TRUE(b.make_lock(n).try_lock_for(20s));  // the async release landed
}

// A release whose reply never comes is sent again: the server holds back writes (CLIENT PAUSE
// WRITE), unlock() returns with the release queued there, and every client connection is cut
// (CLIENT KILL), which drops it unread; the lock is still held, and the flush sends the release
// again, so another client gets the lock long before its 60 s lease ends.
TEST_F(redis_async_private, a_release_lost_with_its_connection_is_sent_again) {
  auto a = connect(url("?release=async&timeout=5s"));
  auto b = connect(url());
  const auto n = unique_name("async-lost");
  auto la = a.make_lock(n, long_hold);
  ASSERT_TRUE(la.try_lock());
  raw_redis admin(srv_->port());
  ASSERT_EQ(admin.cmd({"CLIENT", "PAUSE", "1500", "WRITE"}), "OK");
  la.unlock();
  EXPECT_TRUE(la.last_error().empty()) << la.last_error();
  std::this_thread::sleep_for(100ms);
  EXPECT_NE(admin.cmd({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}), "0");
  EXPECT_EQ(admin.cmd({"EXISTS", redis::owner_key("sqlock", n)}), "1");  // not released yet
  EXPECT_TRUE(b.make_lock(n).try_lock_for(10s));
  EXPECT_EQ(a.stats().release_errors, 0u);
}

// The same client locks, unlocks and at once try_locks again 40 names in each of 4 threads that
// share its connection pool: a release still owed a reply is never overtaken by the next
// acquire of its name (same connection, or a wait for its reply), so no try_lock() fails.
TEST(redis_async_release, the_same_clients_next_acquire_never_overtakes_its_own_release) {
  std::string base;
  SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDIS_URL", base);
  for (const std::string& url : {base + "?release=async", base + "?release=async&compat=plain"}) {
    auto c = connect(url);
    std::atomic<int> failed{0}, failed_first{0}, done{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 40; ++i) {
          auto l = c.make_lock(unique_name("async-row-" + std::to_string(t)), long_hold);
          if (!l.try_lock()) ++failed_first;
          l.unlock();
          if (!l.try_lock()) ++failed;
          l.unlock();
          ++done;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failed_first.load(), 0) << url;
    EXPECT_EQ(failed.load(), 0) << url;
    EXPECT_EQ(done.load(), 160);
    EXPECT_EQ(c.stats().release_errors, 0u);
  }
}

}  // namespace
}  // namespace sqlock::test
