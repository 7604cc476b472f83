// What only the etcd backend has, against the shared etcd member: `etcdctl lock` and sqlock
// exclude each other, a killed holder's lock passes on when its lease runs out, a lease revoked
// or a key deleted behind the holder's back is reported at once, a waiter whose own lease dies
// stops, the queue is FIFO, a release that does not wait is never overtaken by the same client,
// and nothing is left behind. Faults are in etcd_fault_test.cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "async_release_checks.hpp"
#include "etcd_env.hpp"
#include "sqlock/client.hpp"
#include "sqlock/etcd/etcd.hpp"
#include "sqlock/url.hpp"
#include "test_env.hpp"

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace sqlock::test {
namespace {

using namespace etcd_env;

class etcd_test : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", url_);
    ::setenv("ETCDCTL_API", "3", 1);
  }
  void TearDown() override {
    if (url_.empty() || names_.empty()) return;
    // Nothing of this test is left in the store: no key under any name it used.
    for (const auto& n : names_) EXPECT_EQ(keys(n), "") << "keys left under " << n;
  }
  std::string name(const std::string& stem) {
    names_.push_back(unique_name(stem));
    return names_.back();
  }
  std::string etcdctl(const std::string& args) const { return etcd_env::etcdctl(url_, args); }
  // The keys under lock `n`, one per line.
  std::string keys(const std::string& n) const { return etcd_env::keys(url_, n); }
  // Revokes, behind the backend's back, the lease of a key `<...>/<lease id hex>` (+ newline).
  void revoke_lease_of(const std::string& key_line) const {
    etcd_env::revoke_lease_of(url_, key_line);
  }
  std::string url_;
  std::vector<std::string> names_;
};

TEST_F(etcd_test, etcdctl_lock_and_sqlock_exclude_each_other) {
  auto n = name("interop");
  auto lockname = etcd::lock_prefix(prefix_of(url_), n);
  lockname.pop_back();  // etcdctl lock NAME uses NAME + "/" as its prefix
  // etcdctl holds: sqlock waits.
  std::string flag = (std::filesystem::temp_directory_path() / ("etcd-" + random_token())).string();
  auto holder = std::async(std::launch::async, [&] {
    return sh(etcdctl("lock '" + lockname + "' -- sh -c 'touch " + flag + "; sleep 2; echo done'"));
  });
  for (int i = 0; i < 100 && !std::filesystem::exists(flag); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(std::filesystem::exists(flag));
  auto c = sqlock::connect(url_);
  auto l = c.make_lock(n);
  EXPECT_FALSE(l.try_lock());
  auto listed = c.list(n);
  ASSERT_EQ(listed.size(), 1u);      // the etcdctl holder is listed
  EXPECT_TRUE(l.try_lock_for(10s));  // granted once etcdctl's command ended
  EXPECT_NE(holder.get().find("done"), std::string::npos);
  // sqlock holds: etcdctl lock waits (it would print "got" at once if it did not).
  auto waiter = std::async(std::launch::async, [&] {
    return sh("timeout 10 " + etcdctl("lock '" + lockname + "' echo got"));
  });
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(waiter.wait_for(0s), std::future_status::timeout);
  l.unlock();
  EXPECT_NE(waiter.get().find("got"), std::string::npos);
  std::filesystem::remove(flag);
}

TEST_F(etcd_test, a_killed_holder_frees_the_lock_when_its_lease_runs_out) {
  auto n = name("killed");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    try {
      auto c = sqlock::connect(url_);
      auto l = c.make_lock(n, {.lease = 2s});
      l.lock();
      char b = 1;
      [[maybe_unused]] auto w = ::write(ready[1], &b, 1);
      for (;;) ::pause();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "holder process: %s\n", e.what());
    }
    ::_exit(1);
  }
  ::close(ready[1]);
  char b = 0;
  ASSERT_EQ(::read(ready[0], &b, 1), 1) << "the holder process did not get the lock";
  ::close(ready[0]);
  auto c = sqlock::connect(url_);
  auto l = c.make_lock(n);
  EXPECT_FALSE(l.try_lock());
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  auto start = steady::now();
  EXPECT_TRUE(l.try_lock_for(15s));
  // The lease (2 s) plus etcd's lease checking; a generous bound, not a speed claim.
  EXPECT_LT(steady::now() - start, 2s + 4s);
  l.unlock();
}

TEST_F(etcd_test, a_lease_revoked_behind_the_holders_back_is_reported_at_once) {
  auto n = name("revoked");
  auto c = sqlock::connect(url_);
  auto l = c.make_lock(n, {.lease = 30s});
  std::atomic<bool> told{false};
  l.on_lost([&](const std::string&) { told = true; });
  l.lock();
  auto k = keys(n);
  ASSERT_FALSE(k.empty());
  revoke_lease_of(k);
  // The prefix watch reports the deletion; the next renewal is 10 s away.
  for (int i = 0; i < 100 && !told; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(told);
  EXPECT_TRUE(l.lost());
  EXPECT_FALSE(l.renew());
  l.unlock();
}

TEST_F(etcd_test, a_waiter_whose_own_lease_dies_stops_and_says_so) {
  auto n = name("waiter-lease");
  auto a = sqlock::connect(url_);
  auto la = a.make_lock(n);
  la.lock();
  auto b = sqlock::connect(url_);
  auto lb = b.make_lock(n, {.lease = 30s});
  auto waiting = std::async(std::launch::async, [&] { return lb.try_lock_for(20s); });
  // Find the waiter's key (the second one) and revoke its lease.
  std::string second;
  for (int i = 0; i < 100 && second.empty(); ++i) {
    auto k = keys(n);
    auto nl = k.find('\n');
    if (nl != std::string::npos && nl + 1 < k.size()) second = k.substr(nl + 1);
    if (second.empty()) std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(second.empty());
  revoke_lease_of(second);
  la.unlock();  // the dead waiter must not be granted the lock now
  EXPECT_THROW(waiting.get(), lock_lost);
  EXPECT_TRUE(la.try_lock());
  la.unlock();
}

TEST_F(etcd_test, waiters_are_served_in_arrival_order_and_gave_up_waiters_leave_no_key) {
  auto n = name("fifo");
  auto holder = sqlock::connect(url_);
  auto lh = holder.make_lock(n);
  lh.lock();
  std::mutex m;
  std::vector<int> order;
  std::vector<std::future<void>> waiters;
  std::vector<client> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(sqlock::connect(url_));
  for (int i = 0; i < 3; ++i) {
    waiters.push_back(std::async(std::launch::async, [&, i] {
      auto l = clients[i].make_lock(n);
      ASSERT_TRUE(l.try_lock_for(30s));
      {
        std::lock_guard g(m);
        order.push_back(i);
      }
      std::this_thread::sleep_for(50ms);
      l.unlock();
    }));
    // The next waiter queues only after this one's key exists.
    for (int t = 0; t < 100; ++t) {
      auto k = keys(n);
      if (static_cast<int>(std::count(k.begin(), k.end(), '\n')) >= i + 2) break;
      std::this_thread::sleep_for(20ms);
    }
  }
  // A waiter that gives up leaves the queue at once.
  auto quitter = sqlock::connect(url_).make_lock(n);
  EXPECT_FALSE(quitter.try_lock_for(300ms));
  lh.unlock();
  for (auto& w : waiters) w.get();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST_F(etcd_test, force_release_is_reported_to_the_holder_at_once) {
  auto n = name("forced");
  auto c = sqlock::connect(url_);
  auto l = c.make_lock(n, {.lease = 30s});
  std::atomic<bool> told{false};
  l.on_lost([&](const std::string&) { told = true; });
  l.lock();
  EXPECT_TRUE(sqlock::connect(url_).force_release(n));
  for (int i = 0; i < 100 && !told; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(told);
  l.unlock();
}

// The client's deletion feed starts at the current revision and is confirmed before lock()
// returns, so a key deleted in a new client's first moments is reported too (a watch started
// at a past revision delivered such a deletion only from etcd's catch-up loop).
TEST_F(etcd_test, a_key_deleted_right_after_a_new_client_takes_it_is_reported) {
  auto other = sqlock::connect(url_);  // connected first: it deletes at once
  other.list("");
  enum class how { try_lock, lock, after_waiting };
  for (auto way : {how::try_lock, how::lock, how::after_waiting}) {
    auto n = name("fresh-loss");
    std::optional<sqlock::client> first;
    std::optional<sqlock::mutex> ahead;
    if (way == how::after_waiting) {
      first.emplace(sqlock::connect(url_));
      ahead.emplace(first->make_lock(n));
      ahead->lock();
    }
    auto c = sqlock::connect(url_);
    auto l = c.make_lock(n, {.lease = 30s});
    std::atomic<bool> told{false};
    l.on_lost([&](const std::string&) { told = true; });
    std::function<void()> waiter_unlocks;  // after_waiting: the waiter's thread unlocks
    if (way == how::try_lock) {
      ASSERT_TRUE(l.try_lock());
    } else if (way == how::lock) {
      l.lock();
    } else {
      // The waiter locks and (at the end) unlocks on a thread of its own: a mutex is unlocked
      // by the thread that locked it.
      auto unlock_now = std::make_shared<std::promise<void>>();
      auto got = std::make_shared<std::promise<bool>>();
      auto waiter = std::make_shared<std::future<void>>(
          std::async(std::launch::async, [&l, got, done = unlock_now->get_future()] {
            const bool g = l.try_lock_for(20s);
            got->set_value(g);
            done.wait();
            if (g) l.unlock();
          }));
      for (int i = 0; i < 1000 && keys(n).find('\n') == keys(n).rfind('\n'); ++i)
        std::this_thread::sleep_for(5ms);  // its key is queued behind the first
      ahead->unlock();
      EXPECT_TRUE(got->get_future().get());
      waiter_unlocks = [unlock_now, waiter] {
        unlock_now->set_value();
        waiter->get();
      };
    }
    if (way == how::lock)
      sh(etcdctl("del '" + keys(n).substr(0, keys(n).find('\n')) + "' >/dev/null"));
    else
      EXPECT_TRUE(other.force_release(n));
    // The next renewal is 10 s away: only the feed can tell in this loop's 10 s.
    for (int i = 0; i < 500 && !told; ++i) std::this_thread::sleep_for(20ms);
    EXPECT_TRUE(told) << "way " << static_cast<int>(way);
    EXPECT_TRUE(l.lost());
    if (waiter_unlocks)
      waiter_unlocks();
    else
      l.unlock();
  }
}

// release=async: unlock() hands the key's deletion over and returns, and the same client's next
// acquire of the name waits for that release instead of queuing behind its own key: try_lock()
// right after unlock() gets the lock, and lock() does not wait. Many names in a row, as a client
// that locks one name after another does; the client's close sends what is left, so no key
// remains (TearDown).
TEST_F(etcd_test, async_release_then_reacquire_by_the_same_client_is_never_behind_it) {
  std::vector<std::string> names;
  for (int i = 0; i < 30; ++i) names.push_back(name("in-a-row"));
  auto a = sqlock::connect(url_with(url_, "release=async"));
  expect_reacquire_never_behind_own_release(a, names);
}

TEST_F(etcd_test, bad_urls_are_config_errors_without_the_password) {
  for (const std::string u :
       {"etcd://user:s3cr3t-pw@/x", "etcd://user:s3cr3t-pw@h:99999/x",
        "etcd://user:s3cr3t-pw@h/x?timeout=0", "etcd://user:s3cr3t-pw@h/x?tls=maybe",
        "etcd://:s3cr3t-pw@h/x", "etcd://u:s3cr3t-pw%zz@h/x"}) {
    try {
      sqlock::connect(u);
      ADD_FAILURE() << "accepted: " << u;
    } catch (const config_error& e) {
      EXPECT_EQ(std::string(e.what()).find("s3cr3t"), std::string::npos) << e.what();
    }
  }
}

TEST_F(etcd_test, a_wrong_password_is_an_auth_error_without_the_password) {
  // The shared member has no authentication enabled: authenticate is refused as such.
  auto parsed = url::parse(url_);
  std::string u = "etcd://nobody:s3cr3t-pw@" + endpoints_of(url_) + parsed.path;
  try {
    auto c = sqlock::connect(u);
    c.make_lock(name("auth")).try_lock();
    ADD_FAILURE() << "authentication was not refused";
  } catch (const auth_error& e) {
    EXPECT_EQ(std::string(e.what()).find("s3cr3t"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sqlock::test
