// Interruptible waits in the conformance suite (conformance.hpp): a waiting acquire of every kind
// stopped through its std::stop_token from another thread throws interrupted before its deadline,
// holds nothing, and leaves nothing in the store: right after the holder releases, another client's
// single attempt gets the lock (a waiter's node, key or server-side wait left behind would make
// that attempt find the lock busy).

#include <stop_token>

#include "conformance.hpp"

namespace sqlock::test {

/// Runs `wait(stop)` in a thread until it has had time to queue, stops it, and expects it to
/// have thrown interrupted before its deadline `until` (it waits far longer than the test).
template <class Wait>
void expect_stopped(steady_time until, Wait wait) {
  std::stop_source stop;
  std::atomic<int> outcome{0};  // 1 interrupted, 2 returned, 3 another error
  steady_time returned{};
  std::thread waiter([&] {
    try {
      wait(stop.get_token());
      outcome = 2;
    } catch (const interrupted&) {
      outcome = 1;
    } catch (...) {
      outcome = 3;
    }
    returned = std::chrono::steady_clock::now();
  });
  // Long enough for the wait to be queued in the store (not a time the test asserts): a
  // loopback store queues a waiter in milliseconds, so 250 ms leaves room for a machine many
  // times slower than ours (a wait stopped before it reached the store would still pass).
  std::this_thread::sleep_for(250ms);
  EXPECT_EQ(outcome.load(), 0) << "the wait ended before it was stopped";
  stop.request_stop();
  waiter.join();
  EXPECT_EQ(outcome.load(), 1);
  EXPECT_LT(returned, until) << "the stopped wait ran to its deadline";
}

/// A deadline the tests never reach.
inline steady_time far_deadline() {
  return std::chrono::steady_clock::now() + 120s;
}

TEST_P(conformance, stopped_wait_leaves_nothing_behind) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto c = this->connect_new();
  auto n = this->name("stop");
  auto la = a.make_lock(n);
  auto lb = b.make_lock(n);
  la.lock();
  const auto until = far_deadline();
  expect_stopped(until, [&](std::stop_token st) { lb.try_lock_until_steady(until, st); });
  EXPECT_FALSE(lb.owns_lock());
  expect_stopped(until, [&](std::stop_token st) { lb.lock(st); });  // no deadline at all
  EXPECT_FALSE(lb.owns_lock());
  // A thread of the holder's own client waits in the client's local queue: stopped there.
  auto la2 = a.make_lock(n);
  expect_stopped(until, [&](std::stop_token st) { la2.lock(st); });
  la.unlock();
  auto lc = c.make_lock(n);
  EXPECT_TRUE(this->taken_after_release(lc)) << "a stopped waiter still stands in the queue";
  // A stop requested before the call: interrupted at once, nothing asked of the store.
  std::stop_source early;
  early.request_stop();
  EXPECT_THROW(lb.lock(early.get_token()), interrupted);
  lc.unlock();
  EXPECT_THROW(lb.try_lock_for(5s, early.get_token()), interrupted);
  EXPECT_FALSE(lb.owns_lock());
  EXPECT_TRUE(lb.try_lock_for(5s, std::stop_source().get_token()));  // a stop never requested
  lb.unlock();
}

TEST_P(conformance, stopped_waits_of_every_kind_leave_nothing_behind) {
  auto a = this->connect_new();
  auto b = this->connect_new();
  auto c = this->connect_new();
  const auto until = far_deadline();
  if (a.caps().shared) {
    auto n = this->name("stop-rw");
    auto sa = a.make_shared_mutex(n);
    auto sb = b.make_shared_mutex(n);
    sa.lock();
    expect_stopped(until, [&](std::stop_token st) { sb.lock_shared(st); });
    expect_stopped(until, [&](std::stop_token st) { sb.try_lock_until_steady(until, st); });
    sa.unlock();
    auto sc = c.make_shared_mutex(n);
    EXPECT_TRUE(this->free_after_release([&] { return sc.try_lock(); }))
        << "a stopped waiter still stands in the queue";
    sc.unlock();
  }
  if (a.caps().permits) {
    auto n = this->name("stop-sem");
    auto pa = a.make_semaphore(n, 1).acquire();
    auto sb = b.make_semaphore(n, 1);
    expect_stopped(until, [&](std::stop_token st) { sb.acquire(st); });
    pa.release();
    auto sc = c.make_semaphore(n, 1);
    auto pc = this->permit_after_release(sc);
    EXPECT_TRUE(pc) << "a stopped waiter still stands in the queue";
  }
  {
    auto n = this->name("stop-elect");
    auto ea = a.make_election(n);
    auto eb = b.make_election(n);
    ea.campaign("host-a");
    expect_stopped(until, [&](std::stop_token st) { eb.campaign("host-b", st); });
    EXPECT_FALSE(eb.is_leader());
    ea.resign();
    auto ec = c.make_election(n);
    EXPECT_TRUE(this->free_after_release([&] { return ec.try_campaign("host-c"); }))
        << "a stopped campaign still stands in the queue";
  }
  {
    auto n = this->name("stop-job");
    auto la = a.make_lock(n);
    la.lock();
    bool ran = false;
    expect_stopped(until, [&](std::stop_token st) {
      run_exclusive(b, n, {.wait = 100s, .stop = st}, [&] { ran = true; });
    });
    EXPECT_FALSE(ran);
    la.unlock();
  }
}

}  // namespace sqlock::test
