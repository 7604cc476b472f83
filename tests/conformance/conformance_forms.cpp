// The conformance suite's acquire cases through each acquire form (conformance.hpp): the blocking
// API, the std::future form and the Asio form (acquire_forms.hpp) take exclusive holds (with
// deadlines, rising fences, a release from another thread and the loss signal of the hold
// obtained), shared holds, permits and election terms, and are stopped or cancelled leaving nothing
// of the wait in the store. Each case is written once; the form is its loop variable (a failure
// names it in its trace). Short deadlines keep each case fast.

#include <future>

#include "acquire_forms.hpp"
#include "conformance.hpp"

namespace sqlock::test {

/// A deadline `d` from now.
inline steady_time from_now(steady_time::duration d) {
  return std::chrono::steady_clock::now() + d;
}

/// Warms `c` up: three holds at once, released. A store that needs a session per hold
/// (PostgreSQL and MySQL advisory) then has them open, so that an attempt under a short deadline
/// does not also open one (slow on a loaded machine: a connection_error at the deadline).
inline client warmed(client c) {
  std::vector<hold> holds;
  for (int i = 0; i < 3; ++i)
    holds.push_back(c.make_lock(unique_name("warm")).try_acquire_for(10s));
  return c;
}

/// Expects `busy` (a take() under a short deadline, of something held elsewhere) to give an
/// empty hold, and not before its deadline.
template <class What>
void expect_not_obtained(acquire_form f, const What& busy) {
  const auto deadline = from_now(150ms);
  EXPECT_FALSE(take(f, busy, deadline));
  EXPECT_GE(std::chrono::steady_clock::now(), deadline) << "an empty hold before the deadline";
}

/// Starts `what` waiting (in the background), checks that it waits, runs `release` (on a thread
/// other than the one that obtained what it releases), and returns the hold the waiter got.
template <class What, class Release>
hold waiter_gets_it_on_release(acquire_form f, const What& what, Release release) {
  auto waiter = take_in_background(f, what, from_now(20s));
  EXPECT_EQ(waiter.wait_for(50ms), std::future_status::timeout) << "obtained while held";
  std::thread(release).join();
  return waiter.get();
}

TEST_P(conformance, acquire_forms_exclusive_deadline_fence_and_loss) {
  auto a = warmed(this->connect_new());
  auto b = warmed(this->connect_new());
  const auto caps = a.caps();
  // The loss of the hold obtained: a forced release where the backend has one, else its lease
  // running out (not renewed) and another client taking the name; a session-bound hold without
  // force_release cannot be lost by the client's own doing.
  const bool lose_by_expiry = !caps.force_release && !caps.session_bound;
  for (auto f : acquire_forms()) {
    SCOPED_TRACE(form_label(f));
    auto n = this->name(std::string("form-excl-") + form_label(f));
    auto la = a.make_lock(n);
    auto lb =
        lose_by_expiry ? b.make_lock(n, {.lease = 500ms, .auto_renew = false}) : b.make_lock(n);
    auto first = take(f, exclusive_of<mutex>{la});
    ASSERT_TRUE(first);
    const auto first_fence = caps.fencing ? first.fence() : 0;
    expect_not_obtained(f, exclusive_of<mutex>{lb});
    auto second = waiter_gets_it_on_release(f, exclusive_of<mutex>{lb}, [&] { first.release(); });
    ASSERT_TRUE(second);
    EXPECT_EQ(second.name(), n);
    if (caps.fencing) {
      EXPECT_GT(second.fence(), first_fence);
    }
    EXPECT_FALSE(la.try_acquire()) << "the waiter's hold is not in the store";

    std::atomic<int> told{0};
    second.on_lost([&](const std::string& which) {
      EXPECT_EQ(which, n);
      ++told;
    });
    hold taker;
    if (caps.force_release) {
      EXPECT_TRUE(a.force_release(n));
    } else if (lose_by_expiry) {
      taker = la.try_acquire_for(10s);  // once the unrenewed lease ran out
      EXPECT_TRUE(taker);
    } else {
      EXPECT_TRUE(second.renew());
      EXPECT_FALSE(second.lost());
      continue;
    }
    EXPECT_FALSE(second.renew());
    EXPECT_TRUE(second.lost());
    EXPECT_TRUE(eventually([&] { return told.load() == 1; }));
  }
}

TEST_P(conformance, acquire_forms_of_every_kind) {
  auto a = warmed(this->connect_new());
  auto b = warmed(this->connect_new());
  const auto caps = a.caps();
  for (auto f : acquire_forms()) {
    SCOPED_TRACE(form_label(f));
    const std::string form = form_label(f);
    if (caps.shared) {
      auto n = this->name("form-rw-" + form);
      auto sa = a.make_shared_mutex(n);
      auto sb = b.make_shared_mutex(n);
      auto r1 = take(f, shared_of{sa}, from_now(10s));
      auto r2 = take(f, shared_of{sb}, from_now(10s));
      EXPECT_TRUE(r1 && r2) << "shared holders hold at once";
      expect_not_obtained(f, exclusive_of<shared_mutex>{sa});
      auto w = waiter_gets_it_on_release(f, exclusive_of<shared_mutex>{sb}, [&] {
        r1.release();
        r2.release();
      });
      EXPECT_TRUE(w);
      EXPECT_FALSE(sa.try_acquire_shared());
    }
    if (caps.permits) {
      auto n = this->name("form-sem-" + form);
      auto sa = a.make_semaphore(n, 2);
      auto sb = b.make_semaphore(n, 2);
      auto p1 = take(f, permit_of{sa}, from_now(10s));
      auto p2 = take(f, permit_of{sb}, from_now(10s));
      EXPECT_TRUE(p1 && p2);
      expect_not_obtained(f, permit_of{sb});
      auto p3 = waiter_gets_it_on_release(f, permit_of{sb}, [&] { p1.release(); });
      EXPECT_TRUE(p3);
      EXPECT_FALSE(sa.try_acquire()) << "more permits than the semaphore has";
    }
    {
      auto n = this->name("form-elect-" + form);
      auto ea = a.make_election(n, {.lease = 2s, .poll = 20ms});
      auto eb = b.make_election(n, {.lease = 2s, .poll = 20ms});
      auto term_a = take(f, campaign_of{ea, "host-a"}, from_now(10s));
      ASSERT_TRUE(term_a);
      const auto first_term = caps.fencing ? term_a.fence() : 0;
      expect_not_obtained(f, campaign_of{eb, "host-b"});
      auto term_b =
          waiter_gets_it_on_release(f, campaign_of{eb, "host-b"}, [&] { term_a.release(); });
      ASSERT_TRUE(term_b);
      if (caps.fencing) {
        EXPECT_GT(term_b.fence(), first_term);
      }
      EXPECT_FALSE(ea.try_lead("host-a"));
    }
  }
}

/// Starts `what` waiting with `deadline` (one the test never reaches, or none), stops it after
/// it had time to queue, and expects it to end promptly with interrupted.
template <class What>
void expect_stopped_in(acquire_form f, const What& what, steady_time deadline) {
  std::stop_source stop;
  auto waiter = take_in_background(f, what, deadline, stop.get_token());
  // Long enough for the wait to be queued in the store (not a time the test asserts).
  EXPECT_EQ(waiter.wait_for(150ms), std::future_status::timeout) << "ended before the stop";
  const auto stopped = std::chrono::steady_clock::now();
  stop.request_stop();
  ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready) << "the stop did not end the wait";
  EXPECT_LT(std::chrono::steady_clock::now() - stopped, deadline_slack);
  EXPECT_THROW(waiter.get(), interrupted);
}

TEST_P(conformance, acquire_forms_stopped_leave_nothing_behind) {
  auto a = warmed(this->connect_new());
  auto b = warmed(this->connect_new());
  auto c = warmed(this->connect_new());
  const auto caps = a.caps();
  for (auto f : acquire_forms()) {
    SCOPED_TRACE(form_label(f));
    const std::string form = form_label(f);
    auto n = this->name("form-stop-" + form);
    auto holder = a.make_lock(n).acquire();
    auto lb = b.make_lock(n);
    expect_stopped_in(f, exclusive_of<mutex>{lb}, steady_time::max());  // no deadline at all
    expect_stopped_in(f, exclusive_of<mutex>{lb}, from_now(120s));
    std::stop_source early;  // stopped before the call: interrupted, nothing obtained
    early.request_stop();
    EXPECT_THROW(take(f, exclusive_of<mutex>{lb}, from_now(120s), early.get_token()), interrupted);
    if (caps.list && caps.listed_as_taken) {
      // Only the holder (a session-bound hold is listed once its holder recorded it).
      EXPECT_TRUE(eventually([&] {
        auto rows = c.list(n);
        return rows.size() == 1 && rows[0].owner == holder.owner();
      }));
    }
    holder.release();
    auto probe = c.make_lock(n);
    if (this->taken_after_release(probe))
      probe.unlock();
    else
      ADD_FAILURE() << "a stopped waiter still stands in the queue";
    if (caps.shared) {
      // A stopped writer leaves no writer mark that would keep new readers out.
      auto rw = this->name("form-stop-rw-" + form);
      auto reader = a.make_shared_mutex(rw).acquire_shared();
      auto sb = b.make_shared_mutex(rw);
      expect_stopped_in(f, exclusive_of<shared_mutex>{sb}, from_now(120s));
      EXPECT_TRUE(c.make_shared_mutex(rw).try_acquire_shared()) << "a stopped writer's mark stays";
    }
  }
}

}  // namespace sqlock::test
