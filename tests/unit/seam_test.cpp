// The core's side of the backend seam against the in-process backend with injected faults:
// every wait ends by its deadline whatever the store does, an outage is retried within the
// deadline, a hold that dies outside any call is reported at once, and a release is bounded.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "acquire_loop.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/random.hpp"

using namespace sqlock;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {
struct store {
  std::string name = "seam-" + random_token();
  client connect(client_options o = {}) { return client(memory::open(name), o); }
  memory::faults& faults() { return memory::faults_of(name); }
};

// Generous bound for "returned by its deadline": the deadline plus one attempt's allowance
// plus scheduling slack on a loaded machine. Not a speed assertion: a call that hangs until
// the fault clears would take the whole test's 10 s.
constexpr auto slack = 2s;
}  // namespace

TEST(seam, a_wait_on_a_hung_store_ends_by_its_deadline) {
  store s;
  auto c = s.connect();
  s.faults().hang = true;  // every call blocks until its deadline
  auto l = c.make_lock("hung-wait");
  auto start = steady::now();
  EXPECT_THROW(l.try_lock_for(300ms), connection_error);
  EXPECT_LT(steady::now() - start, 300ms + slack);
  start = steady::now();
  EXPECT_THROW(l.try_lock(), connection_error);
  EXPECT_LT(steady::now() - start, slack);
  s.faults().hang = false;
}

TEST(seam, a_release_on_a_hung_store_is_bounded_by_the_release_timeout) {
  store s;
  auto c = s.connect({.release_timeout = 200ms});
  auto l = c.make_lock("hung-release", {.lease = 30s});
  l.lock();
  s.faults().hang = true;
  auto start = steady::now();
  l.unlock();  // never throws; gives up at the release timeout
  EXPECT_LT(steady::now() - start, 200ms + slack);
  EXPECT_EQ(c.stats().release_errors, 1u);
  EXPECT_NE(l.last_error().find("in time"), std::string::npos);
  s.faults().hang = false;
}

TEST(seam, a_waiter_survives_a_store_outage_within_its_deadline) {
  store s;
  auto c = s.connect();
  s.faults().down = true;
  auto l = c.make_lock("outage");
  auto got = std::async(std::launch::async, [&] {
    bool ok = l.try_lock_for(10s);
    if (ok) l.unlock();  // on the thread that locked it
    return ok;
  });
  std::this_thread::sleep_for(300ms);
  s.faults().down = false;  // the store is back: the waiter gets the lock
  EXPECT_TRUE(got.get());
}

TEST(seam, an_outage_longer_than_retry_for_is_a_connection_error) {
  store s;
  client_options o;
  o.waiting.retry_for = 200ms;
  auto c = s.connect(o);
  s.faults().down = true;
  auto l = c.make_lock("long-outage");
  EXPECT_THROW(l.lock(), connection_error);
  s.faults().down = false;
}

TEST(seam, a_hold_that_dies_outside_any_call_is_reported_at_once) {
  store s;
  auto c = s.connect();
  auto l = c.make_lock("session", {.lease = 60s});
  std::atomic<int> calls{0};
  l.on_lost([&](const std::string&) { ++calls; });
  l.lock();
  ASSERT_TRUE(memory::end_session(s.name, "session"));
  // Reported synchronously by the backend's watcher, not at the next renewal (20 s away).
  EXPECT_TRUE(l.lost());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(c.stats().losses, 1u);
  auto other = s.connect().make_lock("session");
  EXPECT_TRUE(other.try_lock());  // the lock is free for the next holder
  l.unlock();                     // owner-checked: does not free the next holder's lock
  EXPECT_FALSE(s.connect().make_lock("session").try_lock());
  other.unlock();
}

TEST(seam, a_loss_report_for_an_earlier_hold_does_not_touch_the_current_one) {
  store s;
  auto c = s.connect();
  auto l = c.make_lock("stale-report", {.lease = 60s});
  l.lock();
  l.unlock();
  l.lock();
  EXPECT_FALSE(memory::end_session(s.name, "other-name"));
  EXPECT_FALSE(l.lost());
  l.unlock();
}

TEST(seam, acquire_reports_when_the_winning_request_was_sent) {
  store s;
  auto b = memory::open(s.name);
  lock_request held{"sent", random_token(), 60s, "test"};
  auto h = b->try_acquire(held, steady::now() + 10s);
  ASSERT_TRUE(h);
  lock_request req{"sent", random_token(), 60s, "test"};
  auto started = steady::now();
  auto got = std::async(std::launch::async,
                        [&] { return sqlock::acquire(*b, req, steady::now() + 10s, {}); });
  std::this_thread::sleep_for(100ms);
  auto released = steady::now();
  ASSERT_TRUE(b->release(*h, steady::now() + 10s));
  auto l = got.get();
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->waited);
  // The winning attempt went out after the release, not when acquire() was called: the
  // lease is measured from there.
  EXPECT_GT(l->sent, started);
  EXPECT_GE(l->sent, released);
  EXPECT_TRUE(b->release(*l, steady::now() + 10s));
}

TEST(seam, a_release_wakes_only_the_waits_of_its_name) {
  // 10,000 asynchronous waits on 1,000 names: each release must cost one wake-up per waiter
  // of its own name, not one per waiter of the store.
  store s;
  auto b = memory::open(s.name);
  const auto deadline = steady::now() + 10s;
  lock_request held_a{"wake-a", random_token(), 60s, "test"};
  lock_request held_b{"wake-b", random_token(), 60s, "test"};
  auto a = b->try_acquire(held_a, deadline);
  auto h = b->try_acquire(held_b, deadline);
  ASSERT_TRUE(a && h);
  lock_request want_a{"wake-a", random_token(), 60s, "test"};
  lock_request want_b{"wake-b", random_token(), 60s, "test"};
  auto wait_a = b->make_acquisition(want_a, {});
  auto wait_b = b->make_acquisition(want_b, {});
  ASSERT_FALSE(wait_a->attempt(deadline));
  ASSERT_FALSE(wait_b->attempt(deadline));
  std::atomic<int> woke_a{0}, woke_b{0};
  EXPECT_EQ(wait_a->arm(deadline, [&] { ++woke_a; }), deadline);
  EXPECT_EQ(wait_b->arm(deadline, [&] { ++woke_b; }), deadline);

  ASSERT_TRUE(b->release(*h, deadline));
  EXPECT_EQ(woke_b.load(), 1);
  EXPECT_EQ(woke_a.load(), 0) << "a release of wake-b woke a wait for wake-a";
  auto got_b = wait_b->attempt(deadline);
  ASSERT_TRUE(got_b);

  ASSERT_TRUE(b->release(*a, deadline));
  EXPECT_EQ(woke_a.load(), 1);
  EXPECT_EQ(woke_b.load(), 1);  // armed once: one wake-up
  auto got_a = wait_a->attempt(deadline);
  ASSERT_TRUE(got_a);
  EXPECT_TRUE(b->release(*got_a, deadline));
  EXPECT_TRUE(b->release(*got_b, deadline));
}

TEST(seam, a_dropped_writer_mark_wakes_the_shared_waits_only) {
  // A waiting exclusive request's mark keeps new shared holders out; when it ends without the
  // lock, the shared waits it kept out may try again, the exclusive ones still find a holder.
  store s;
  auto b = memory::open(s.name);
  const auto deadline = steady::now() + 10s;
  auto shared_req = [](std::string owner) {
    lock_request r{"marked", std::move(owner), 60s, "test"};
    r.kind = lock_kind::shared;
    return r;
  };
  auto holder = b->try_acquire(shared_req(random_token()), deadline);
  ASSERT_TRUE(holder);
  lock_request writer{"marked", random_token(), 60s, "test"};
  lock_request other_writer{"marked", random_token(), 60s, "test"};
  auto marking = b->make_acquisition(writer, {});
  auto waiting_writer = b->make_acquisition(other_writer, {});
  const auto reader_req = shared_req(random_token());
  auto reader = b->make_acquisition(reader_req, {});
  ASSERT_FALSE(marking->attempt(deadline));  // busy: leaves its mark
  ASSERT_FALSE(waiting_writer->attempt(deadline));
  ASSERT_FALSE(reader->attempt(deadline)) << "the writers' marks keep a new reader out";
  std::atomic<int> woke_reader{0}, woke_writer{0};
  EXPECT_EQ(reader->arm(deadline, [&] { ++woke_reader; }), deadline);
  EXPECT_EQ(waiting_writer->arm(deadline, [&] { ++woke_writer; }), deadline);

  marking->cancel();
  EXPECT_EQ(woke_reader.load(), 0) << "the other writer's mark still keeps the reader out";
  waiting_writer->disarm();
  waiting_writer->cancel();
  EXPECT_EQ(woke_reader.load(), 1);
  EXPECT_EQ(woke_writer.load(), 0);
  auto got = reader->attempt(deadline);
  ASSERT_TRUE(got);
  EXPECT_TRUE(b->release(*got, deadline));
  EXPECT_TRUE(b->release(*holder, deadline));
}
