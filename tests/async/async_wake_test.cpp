// What wakes an asynchronous waiter on SQLite, ZooKeeper, etcd and MySQL/MariaDB: on the first
// three the store's own signal (the WAL file's change, the predecessor's watch, the deletion
// watch), shown by waiters whose client backs off for longer than their deadline yet obtain
// the lock one after the other, in queue order where the store is fair; on MySQL the honest
// backoff. Either way the process's threads (/proc/self/task) do not grow with the number of
// waiters, and stopped waiters leave nothing on the store (list(), and a newcomer gets the
// name at once).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "async_stores.hpp"
#include "sqlock/async.hpp"
#include "sqlock/client.hpp"
#include "test_env.hpp"

namespace {

using namespace std::chrono_literals;
using sqlock::async_wait;
using sqlock::test::unique_name;

using sqlock::test::thread_count;

// A store of these tests: whether it wakes asynchronous waiters by its own signal, and whether
// it hands the lock over in queue order.
struct wake_store {
  std::string label;
  const char* url_var;  // null: SQLite in a temporary directory
  std::string params;   // added to the URL
  bool signals;
  bool fair;
};

class async_wake_test : public ::testing::TestWithParam<wake_store> {
 protected:
  void SetUp() override {
    const auto& s = GetParam();
    if (s.url_var == nullptr) {
      url_ = "sqlite:" + (dir_.path / "wake.db").string();
    } else {
      SQLOCK_REQUIRE_URL(s.url_var, url_);
    }
    if (!s.params.empty()) url_ += (url_.find('?') == std::string::npos ? "?" : "&") + s.params;
  }

  // A client of the store, warmed up (its first attempt opens no session under a deadline).
  sqlock::client connect(sqlock::client_options o = {}) const {
    auto c = sqlock::connect(url_, std::move(o));
    c.make_lock(unique_name("warm-up")).try_acquire_for(10s);
    return c;
  }

  // A client whose waits back off for longer than any deadline here: a waiter of it obtains a
  // lock held at its first attempt only when the store's signal wakes it.
  sqlock::client deaf_to_timers() const {
    sqlock::client_options o;
    o.waiting.initial = 60s;
    o.waiting.cap = 60s;
    o.waiting.notify_recheck = 60s;
    return connect(std::move(o));
  }

  sqlock::test::temp_dir dir_;
  std::string url_;
};

TEST_P(async_wake_test, waiters_obtain_the_lock_in_turn_without_a_thread_each) {
  const auto& s = GetParam();
  auto holders = connect();
  auto c = s.signals ? deaf_to_timers() : connect();
  const auto name = unique_name("turns");
  auto first = holders.make_lock(name).acquire();
  ASSERT_TRUE(first);
  // One wait first: the driver's threads and the client's watch threads run from here on.
  {
    auto other = holders.make_lock(unique_name("busy")).acquire();
    EXPECT_FALSE(
        sqlock::acquire_future(c.make_lock(other.name()), async_wait::within(300ms)).get());
  }
  const int base = thread_count();

  constexpr int waiters = 8;
  std::mutex m;
  std::vector<int> order;
  std::atomic<int> failed{0};
  std::vector<std::future<void>> done;
  // One deadline for all: a waiter woken only by its deadline's last attempt cannot pass on
  // the lock to the next in time.
  const async_wait within{std::chrono::steady_clock::now() + 20s};
  for (int k = 0; k < waiters; ++k) {
    auto p = std::make_shared<std::promise<void>>();
    done.push_back(p->get_future());
    sqlock::acquire_async(
        c.make_lock(name),
        [&, k, p](std::exception_ptr e, sqlock::hold h) {
          if (e || !h) {
            ++failed;
          } else {
            std::lock_guard g(m);
            order.push_back(k);
          }
          p->set_value();
        },  // the hold is released as the handler returns: the next waiter's signal
        within);
    // Queued before the next one starts (its first attempt makes its queue entry).
    if (s.fair) std::this_thread::sleep_for(150ms);
  }
  std::this_thread::sleep_for(200ms);
  const int waiting = thread_count();
  first.release();
  for (auto& f : done) f.wait();
  EXPECT_EQ(failed.load(), 0);
  ASSERT_EQ(order.size(), static_cast<std::size_t>(waiters));
  if (s.fair) {
    for (int k = 0; k < waiters; ++k) EXPECT_EQ(order[k], k) << "hand-over " << k;
  }
  EXPECT_LE(waiting, base) << "threads before the waits " << base << ", while " << waiters
                           << " waited " << waiting;
}

TEST_P(async_wake_test, stopped_waiters_leave_nothing_behind) {
  auto holders = connect();
  auto c = connect();
  const auto name = unique_name("stopped");
  auto first = holders.make_lock(name).acquire();
  ASSERT_TRUE(first);
  constexpr int waiters = 8;
  std::vector<std::stop_source> stops(waiters);
  std::vector<std::future<sqlock::hold>> done;
  for (int k = 0; k < waiters; ++k)
    done.push_back(
        sqlock::acquire_future(c.make_lock(name), async_wait::within(30s, stops[k].get_token())));
  std::this_thread::sleep_for(300ms);  // queued, and waiting
  for (auto& s : stops) s.request_stop();
  int interrupted = 0;
  for (auto& f : done) {
    try {
      EXPECT_FALSE(f.get());  // a held lock is never obtained
    } catch (const sqlock::interrupted&) {
      ++interrupted;
    }
  }
  EXPECT_EQ(interrupted, waiters);
  if (holders.caps().list) {
    auto seen = holders.list(name);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].owner, first.owner());
  }
  // No queue entry or writer mark of a stopped waiter is left ahead of a newcomer.
  first.release();
  EXPECT_TRUE(holders.make_lock(name).try_acquire());
}

INSTANTIATE_TEST_SUITE_P(
    stores, async_wake_test,
    ::testing::Values(wake_store{"sqlite", nullptr, "", true, false},
                      wake_store{"zookeeper", "SQLOCK_TEST_ZOOKEEPER_URL", "", true, true},
                      wake_store{"etcd", "SQLOCK_TEST_ETCD_URL", "", true, true},
                      // migrate=auto: on fresh servers these may run before any test that
                      // creates the schema.
                      wake_store{"mysql", "SQLOCK_TEST_MYSQL_URL", "migrate=auto", false, false},
                      wake_store{"mysql_advisory", "SQLOCK_TEST_MYSQL_URL",
                                 "mode=advisory&migrate=auto", false, false}),
    [](const ::testing::TestParamInfo<wake_store>& p) { return p.param.label; });

}  // namespace
