// A private redis-server (password set) frozen with SIGSTOP, restarted during a wait, and given
// a wrong password: every call returns by its deadline, a waiter survives the restart and gets
// the lock, and no password appears in any error or description. The figures printed are the
// real overshoots past each deadline (the asserts only bound them by a generous deadline_slack).
#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include "own_redis.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "test_env.hpp"

namespace sqlock::test {
namespace {

const std::string password = "Fr0zen-S3cret-pw";

class redis_private : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string shared;
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_REDIS_URL", shared);  // servers are set up here
    std::string bin = env("SQLOCK_TEST_REDIS_SERVER");
    if (bin.empty()) bin = "redis-server";
    srv_ = std::make_unique<own_server>(bin, tmp_.path / "redis",
                                        std::vector<std::string>{"--requirepass", password});
    srv_->start();
  }
  void TearDown() override {
    if (srv_) srv_->signal(SIGCONT);
  }
  std::string url(const std::string& pw = password) const {
    return "redis://:" + pw + "@127.0.0.1:" + std::to_string(srv_->port()) + "?timeout=5s";
  }
  temp_dir tmp_;
  std::unique_ptr<own_server> srv_;
};

using clock = std::chrono::steady_clock;

// Milliseconds from `deadline` to now (negative: returned early).
long long overshoot_ms(clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - deadline).count();
}

TEST_F(redis_private, a_frozen_server_holds_no_call_past_its_deadline) {
  auto holder = connect(url());
  auto waiter = connect(url());
  // Its own client: its pool has not yet met the frozen server when it releases.
  auto releaser = connect(url(), client_options{.release_timeout = 1s});
  auto name = unique_name("frozen");
  auto held = holder.make_lock(name, {.lease = 3s, .auto_renew = false});
  auto other = releaser.make_lock(name + ":2", {.lease = 30s, .auto_renew = false});
  ASSERT_TRUE(held.try_lock());
  const auto lease_end = clock::now() + 3s;
  ASSERT_TRUE(other.try_lock());
  // A short lease: an attempt that timed out while frozen may still be granted when the server
  // thaws and reads it (its owner gave up on it), and then lasts until this lease ends.
  auto w = waiter.make_lock(name, {.lease = 3s});
  ASSERT_TRUE(srv_->freeze());

  // A wait: try_lock_for(1s) returns (false or connection_error) by its deadline.
  const auto wait_deadline = clock::now() + 1s;
  try {
    EXPECT_FALSE(w.try_lock_for(1s));
  } catch (const connection_error&) {
  }
  const auto wait_over = overshoot_ms(wait_deadline);
  EXPECT_LE(clock::now(), wait_deadline + deadline_slack);

  // A renewal: reports the hold lost (or fails) by the end of its lease.
  bool renewed = true;
  try {
    renewed = held.renew();
  } catch (const connection_error&) {
    renewed = false;
  }
  EXPECT_FALSE(renewed);
  const auto renew_over = overshoot_ms(lease_end);
  EXPECT_LE(clock::now(), lease_end + deadline_slack);

  // A release: bounded by the client's release timeout (1 s).
  const auto release_deadline = clock::now() + 1s;
  other.unlock();
  const auto release_over = overshoot_ms(release_deadline);
  EXPECT_LE(clock::now(), release_deadline + deadline_slack);
  EXPECT_FALSE(other.last_error().empty());
  std::cout << "frozen Redis: overshoot past the deadline: try_lock_for(1s) " << wait_over
            << " ms, renew " << renew_over << " ms, unlock " << release_over
            << " ms (deadline_slack " << std::chrono::milliseconds(deadline_slack).count()
            << " ms)\n";

  srv_->signal(SIGCONT);
  // After the thaw the same clients work again (timed-out connections were not reused).
  ASSERT_TRUE(w.try_lock_for(10s));
  w.unlock();
  EXPECT_TRUE(w.last_error().empty()) << w.last_error();
}

TEST_F(redis_private, a_waiter_gets_the_lock_across_a_server_restart) {
  auto holder = connect(url());
  auto waiter = connect(url());
  auto name = unique_name("restart");
  auto h = holder.make_lock(name, {.lease = 30s});
  ASSERT_TRUE(h.try_lock());
  std::atomic<bool> got{false};
  std::thread t([&] {
    auto w = waiter.make_lock(name);
    try {
      got = w.try_lock_for(20s);
    } catch (const error& e) {
      ADD_FAILURE() << "waiter failed: " << e.what();
    }
    if (got) w.unlock();
  });
  std::this_thread::sleep_for(300ms);
  srv_->stop();  // SIGKILL: the hold is gone with the server's memory (no persistence)
  std::this_thread::sleep_for(1s);  // the waiter meets refused connections meanwhile
  srv_->start();
  t.join();
  EXPECT_TRUE(got);
}

TEST_F(redis_private, passwords_are_absent_from_every_error_and_description) {
  const std::string wrong = "Wr0ng-pw-4711";
  try {
    auto c = connect(url(wrong));
    c.make_lock(unique_name("auth")).try_lock();
    ADD_FAILURE() << "a wrong password was accepted";
  } catch (const auth_error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find(wrong), std::string::npos) << what;
    EXPECT_EQ(what.find(password), std::string::npos) << what;
  }
  auto good = connect(url());
  EXPECT_EQ(good.get_backend().describe().find(password), std::string::npos);
  const std::string port = std::to_string(srv_->port());
  for (const std::string& bad : {"redis://:" + password + "%zz@127.0.0.1:" + port,
                                 "redis://:" + password + "@127.0.0.1:99999",
                                 "redis://:" + password + "@127.0.0.1:" + port + "?timeout=0",
                                 "redis://:" + password + "@127.0.0.1:" + port + "?pool=0",
                                 "redis://:" + password + "@127.0.0.1:" + port + "/x"}) {
    try {
      connect(bad);
      ADD_FAILURE() << "accepted a bad URL";
    } catch (const config_error& e) {
      EXPECT_EQ(std::string(e.what()).find(password), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sqlock::test
