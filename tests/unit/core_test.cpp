// Core logic against the in-process backend with injected faults.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>

#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/doctor.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/random.hpp"
#include "sqlock/shared_mutex.hpp"

using namespace sqlock;
using namespace std::chrono_literals;

namespace {
struct store {
  std::string name = "core-" + random_token();
  client connect() { return client(memory::open(name)); }
  memory::faults& faults() { return memory::faults_of(name); }
};
}  // namespace

TEST(core, refused_renewal_marks_loss_and_calls_back) {
  store s;
  auto c = s.connect();
  auto l = c.make_lock("x", {.lease = 300ms});
  std::atomic<int> calls{0};
  l.on_lost([&](const std::string&) { ++calls; });
  l.lock();
  s.faults().renew_refused = true;
  for (int i = 0; i < 100 && !l.lost(); ++i) std::this_thread::sleep_for(20ms);
  s.faults().renew_refused = false;
  EXPECT_TRUE(l.lost());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(c.stats().losses, 1u);
  EXPECT_THROW(l.lock(), lock_lost);  // reentry into a lost hold is refused
  l.unlock();
  EXPECT_TRUE(l.try_lock());
  EXPECT_FALSE(l.lost());
  l.unlock();
}

TEST(core, lost_answers_true_once_the_callback_has_returned) {
  store s;
  auto c = s.connect();
  auto l = c.make_lock("cb-done", {.lease = 300ms});
  std::atomic<bool> done{false};
  l.on_lost([&](const std::string&) {
    std::this_thread::sleep_for(200ms);  // a callback that takes a while
    done = true;
  });
  l.lock();
  s.faults().renew_refused = true;
  bool lost = false;
  for (int i = 0; i < 200 && !(lost = l.lost()); ++i) std::this_thread::sleep_for(5ms);
  s.faults().renew_refused = false;
  EXPECT_TRUE(lost);
  EXPECT_TRUE(done);  // lost() waited for the callback under way
  l.unlock();
}

TEST(core, a_dropped_callback_is_not_called_after_its_handle_is_gone) {
  store s;
  auto c = s.connect();
  std::atomic<bool> started{false}, late{false};
  std::atomic<bool> alive{true};  // what the callback's owner keeps only while the handle lives
  {
    auto l = c.make_lock("cb-gone", {.lease = 300ms});
    l.on_lost([&](const std::string&) {
      started = true;
      std::this_thread::sleep_for(200ms);
      if (!alive) late = true;  // called on after its handle was gone
    });
    l.lock();
    s.faults().renew_refused = true;
    for (int i = 0; i < 200 && !started; ++i) std::this_thread::sleep_for(5ms);
    ASSERT_TRUE(started);
  }  // ~mutex: waits for the callback that is running
  alive = false;
  s.faults().renew_refused = false;
  std::this_thread::sleep_for(300ms);  // a callback not waited for would finish by now
  EXPECT_FALSE(late);
}

TEST(core, store_down_while_held_is_loss_once_the_lease_runs_out) {
  store s;
  auto c = s.connect();
  auto l = c.make_lock("y", {.lease = 300ms});
  l.lock();
  s.faults().down = true;
  for (int i = 0; i < 100 && !l.lost(); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(l.lost());
  EXPECT_GE(c.stats().renewal_failures, 1u);
  EXPECT_NO_THROW(l.unlock());  // release fails: recorded, not thrown
  EXPECT_NE(l.last_error().find("down"), std::string::npos);
  EXPECT_EQ(c.stats().release_errors, 1u);
  EXPECT_THROW(l.try_lock(), connection_error);  // one attempt: the outcome is unknown
  s.faults().down = false;
  EXPECT_TRUE(l.try_lock_for(2s));
  l.unlock();
}

TEST(core, short_outage_is_survived_by_renewal) {
  store s;
  auto c = s.connect();
  auto l = c.make_lock("z", {.lease = 900ms});
  l.lock();
  std::this_thread::sleep_for(350ms);
  s.faults().down = true;
  std::this_thread::sleep_for(150ms);
  s.faults().down = false;
  std::this_thread::sleep_for(1200ms);
  EXPECT_FALSE(l.lost());
  l.unlock();
}

TEST(core, local_waiters_queue_and_each_gets_a_turn) {
  store s;
  auto c = s.connect();
  std::atomic<int> inside{0}, max_inside{0};
  long counter = 0;
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&] {
      auto l = c.make_lock("q");
      for (int i = 0; i < 50; ++i) {
        std::lock_guard g(l);
        int now = ++inside;
        max_inside = std::max(max_inside.load(), now);
        ++counter;
        --inside;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(counter, 400);
  EXPECT_EQ(max_inside.load(), 1);
  EXPECT_EQ(c.stats().acquisitions, 400u);
  EXPECT_EQ(c.stats().releases, 400u);
}

TEST(core, destroying_a_handle_releases_its_holds) {
  store s;
  auto a = s.connect();
  auto b = s.connect();
  {
    auto l = a.make_lock("d");
    l.lock();
    l.lock();
  }
  auto lb = b.make_lock("d");
  EXPECT_TRUE(lb.try_lock());
  lb.unlock();
}

// docs/faq.md: a hold belongs to the thread that locked it; unlock() from another thread is a
// usage_error that leaves it held, and destroying the handle (from any thread) releases it.
TEST(core, unlock_from_another_thread_leaves_the_hold) {
  store s;
  auto a = s.connect();
  auto b = s.connect();
  auto lb = b.make_lock("t");
  std::optional<mutex> l = a.make_lock("t");
  l->lock();
  std::thread([&] { EXPECT_THROW(l->unlock(), usage_error); }).join();
  EXPECT_TRUE(l->owns_lock());
  EXPECT_FALSE(lb.try_lock());
  std::thread([&] { l.reset(); }).join();
  EXPECT_TRUE(lb.try_lock());
  lb.unlock();
}

// The same for shared_mutex: unlock() and unlock_shared() from a thread that holds nothing
// while another holds the lock are a usage_error that leaves the holds as they were.
TEST(core, shared_mutex_unlock_from_another_thread_leaves_the_hold) {
  store s;
  auto a = s.connect();
  auto b = s.connect();
  auto other = b.make_shared_mutex("rw");
  auto m = a.make_shared_mutex("rw");
  m.lock();
  std::thread([&] { EXPECT_THROW(m.unlock(), usage_error); }).join();
  EXPECT_TRUE(m.owns_lock());
  EXPECT_FALSE(other.try_lock_shared());
  m.unlock();
  m.lock_shared();
  std::thread([&] { EXPECT_THROW(m.unlock_shared(), usage_error); }).join();
  EXPECT_TRUE(m.owns_shared());
  EXPECT_FALSE(other.try_lock());
  m.unlock_shared();
  m.unlock_shared();  // held by nobody now: noted, not thrown
  EXPECT_FALSE(m.last_error().empty());
  EXPECT_TRUE(other.try_lock());
  other.unlock();
}

TEST(core, moved_handle_keeps_the_hold) {
  store s;
  auto a = s.connect();
  auto l = a.make_lock("m");
  l.lock();
  auto fence = l.fence();
  mutex moved = std::move(l);
  EXPECT_TRUE(moved.owns_lock());
  EXPECT_EQ(moved.fence(), fence);
  EXPECT_THROW(l.lock(), usage_error);
  moved.unlock();
  EXPECT_FALSE(moved.owns_lock());
}

TEST(core, fence_and_owner_need_a_hold) {
  store s;
  auto a = s.connect();
  auto l = a.make_lock("f");
  EXPECT_THROW(l.fence(), usage_error);
  EXPECT_THROW(l.owner(), usage_error);
  EXPECT_THROW(l.renew(), usage_error);
  l.lock();
  auto first_owner = l.owner();
  l.unlock();
  l.lock();
  EXPECT_NE(l.owner(), first_owner);  // a new token per acquisition
  l.unlock();
}

TEST(core, contention_is_counted) {
  store s;
  auto a = s.connect();
  auto b = s.connect();
  auto la = a.make_lock("c");
  la.lock();
  std::thread t([&] {
    auto lb = b.make_lock("c");
    EXPECT_TRUE(lb.try_lock_for(5s));
    lb.unlock();
  });
  std::this_thread::sleep_for(100ms);
  la.unlock();
  t.join();
  EXPECT_EQ(b.stats().contended, 1u);
}

TEST(core, sweep_runs_in_the_background) {
  store s;
  auto a = s.connect();
  auto l = a.make_lock("s", {.lease = 50ms, .auto_renew = false});
  l.lock();
  std::this_thread::sleep_for(100ms);  // expired, but its entry is still in the store
  auto probe = s.connect();
  {
    client sweeper(memory::open(s.name), {.sweep_every = 50ms});
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(probe.sweep(), 0u);  // the background sweep already removed it
  l.unlock();
  auto l2 = a.make_lock("s2", {.lease = 10ms, .auto_renew = false});
  l2.lock();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(probe.sweep(), 1u);  // without a sweeper the expired entry is still there
  l2.unlock();
}

TEST(core, a_destroyed_handle_never_releases_a_later_hold) {
  store s;
  auto a = s.connect();
  auto b = s.connect();
  auto h1 = std::make_unique<mutex>(a.make_lock("later"));
  auto h2 = a.make_lock("later");
  h1->lock();
  h2.unlock();  // same thread, same name: releases the hold h1 took
  std::thread t([&] {
    h2.lock();   // a new hold, on another thread
    h1.reset();  // h1 still counts one level of the old hold: it must not touch this one
    EXPECT_TRUE(h2.owns_lock());
    EXPECT_FALSE(b.make_lock("later").try_lock());
    h2.unlock();
  });
  t.join();
  EXPECT_TRUE(b.make_lock("later").try_lock());
}

TEST(core, a_hung_backend_call_does_not_delay_the_loss_signal) {
  store s;
  auto c = s.connect();
  auto l = c.make_lock("hung", {.lease = 300ms});
  std::atomic<int> calls{0};
  l.on_lost([&](const std::string&) { ++calls; });
  l.lock();
  s.faults().hang = true;  // the next renewal never returns while this is set
  for (int i = 0; i < 150 && !l.lost(); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(l.lost());
  EXPECT_EQ(calls.load(), 1);
  s.faults().hang = false;
  l.unlock();
  EXPECT_TRUE(l.try_lock_for(2s));
  l.unlock();
}

// sqlock::doctor() on a backend without checks of its own (memory: its diagnostics() is null):
// the store, then the connect check; the verdict and the durations of the messages.
TEST(doctor, a_backend_without_checks_reports_its_store_and_reachability) {
  auto found = sqlock::doctor("memory:", std::chrono::steady_clock::now() + 5s);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].check, "store");
  EXPECT_EQ(found[0].message.rfind("memory", 0), 0u) << found[0].message;
  EXPECT_EQ(found[1].check, "checks");
  EXPECT_TRUE(sqlock::healthy(found));
  found.push_back({"pooler", finding_status::warn, "worth knowing"});
  EXPECT_TRUE(sqlock::healthy(found));
  found.push_back({"role", finding_status::unsafe, "a hot standby"});
  EXPECT_FALSE(sqlock::healthy(found));
  EXPECT_STREQ(to_string(finding_status::unsafe), "unsafe");
  EXPECT_EQ(human_duration(-12ms), "-12 ms");
  EXPECT_EQ(human_duration(1500ms), "1.5 s");
  EXPECT_EQ(human_duration(-1500ms), "-1.5 s");
  EXPECT_THROW(sqlock::doctor("nosuch://x", std::chrono::steady_clock::now() + 5s), config_error);
}
