// The lock-handle core's guarantees on every handle kind (mutex, shared_mutex shared and
// exclusive, a permit, an election's campaign, the holds of mutex::acquire(),
// shared_mutex::acquire_shared() and election::lead(), run_exclusive's hold): a callback
// replaced by on_lost() is not called after it returns, and replacing it or ending the handle
// waits for a call of it that is running; a callback may end its own handle. Then holds that
// change threads, and unlock() from a thread that does not hold the lock. Losses are forced
// with memory::end_session() (the holder's "session" ends; the loss is told on that thread).
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>

#include "sqlock/client.hpp"
#include "sqlock/memory.hpp"
#include "sqlock/random.hpp"

using namespace sqlock;
using namespace std::chrono_literals;

namespace {

using callback = std::function<void(const std::string&)>;

// One handle that holds a lock: how to set its callback and how to end it (destroy the handle,
// or release the hold).
struct held {
  std::function<void(callback)> on_lost;
  std::function<void()> end;
};

// How to make a handle of one kind hold `name` on `c`.
struct kind {
  const char* what;
  std::function<held(client& c, const std::string& name)> take;
};

void PrintTo(const kind& k, std::ostream* os) {
  *os << k.what;
}

// A handle kept in a shared optional so that `end` destroys it.
template <class T, class Take>
held keep(T handle, Take take) {
  auto p = std::make_shared<std::optional<T>>(std::move(handle));
  take(**p);
  return {[p](callback cb) { (*p)->on_lost(std::move(cb)); }, [p] { p->reset(); }};
}

// A hold, released by `end`.
held keep_hold(hold h) {
  auto p = std::make_shared<hold>(std::move(h));
  EXPECT_TRUE(*p);
  return {[p](callback cb) { p->on_lost(std::move(cb)); }, [p] { p->release(); }};
}

const kind kinds[] = {
    {"mutex",
     [](client& c, const std::string& n) {
       return keep(c.make_lock(n), [](mutex& m) { m.lock(); });
     }},
    {"mutex_hold",
     [](client& c, const std::string& n) { return keep_hold(c.make_lock(n).acquire()); }},
    {"shared_mutex_shared",
     [](client& c, const std::string& n) {
       return keep(c.make_shared_mutex(n), [](shared_mutex& m) { m.lock_shared(); });
     }},
    {"shared_mutex_exclusive",
     [](client& c, const std::string& n) {
       return keep(c.make_shared_mutex(n), [](shared_mutex& m) { m.lock(); });
     }},
    {"shared_hold",
     [](client& c, const std::string& n) {
       return keep_hold(c.make_shared_mutex(n).acquire_shared());
     }},
    {"permit",
     [](client& c, const std::string& n) { return keep_hold(c.make_semaphore(n, 2).acquire()); }},
    {"election",
     [](client& c, const std::string& n) {
       return keep(c.make_election(n), [](election& e) { e.campaign("me"); });
     }},
    {"leader_hold",
     [](client& c, const std::string& n) { return keep_hold(c.make_election(n).lead("me")); }},
};

// A callback that takes 200 ms, and tells when it started and when it returned.
struct slow {
  std::atomic<int> started{0};
  std::atomic<bool> done{false};
  callback fn() {
    return [this](const std::string&) {
      ++started;
      std::this_thread::sleep_for(200ms);
      done = true;
    };
  }
  void await_start() {
    for (int i = 0; i < 400 && started == 0; ++i) std::this_thread::sleep_for(5ms);
    ASSERT_EQ(started, 1);
  }
};

struct handles : testing::TestWithParam<kind> {
  std::string store = "handles-" + random_token();
  std::string name = "h";
  client c{memory::open(store)};
  // Ends the hold's session on a thread of its own, which then runs the loss callbacks.
  std::thread lose() {
    return std::thread([this] { EXPECT_TRUE(memory::end_session(store, name)); });
  }
};

TEST_P(handles, a_replaced_callback_is_not_called) {
  held h = GetParam().take(c, name);
  std::atomic<int> first{0}, second{0};
  h.on_lost([&](const std::string&) { ++first; });
  h.on_lost([&](const std::string&) { ++second; });
  lose().join();  // the callbacks ran on that thread
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
  h.end();
}

TEST_P(handles, replacing_a_callback_waits_for_a_running_call) {
  held h = GetParam().take(c, name);
  slow cb;
  h.on_lost(cb.fn());
  auto t = lose();
  cb.await_start();
  h.on_lost(nullptr);
  EXPECT_TRUE(cb.done);  // on_lost() returned only once the running call had
  t.join();
  h.end();
}

TEST_P(handles, ending_a_handle_waits_for_a_running_call) {
  held h = GetParam().take(c, name);
  slow cb;
  h.on_lost(cb.fn());
  auto t = lose();
  cb.await_start();
  h.end();
  EXPECT_TRUE(cb.done);
  t.join();
}

TEST_P(handles, a_callback_may_end_its_own_handle) {
  held h = GetParam().take(c, name);
  std::atomic<bool> ended{false};
  h.on_lost([&](const std::string&) {
    h.end();  // on the callback's own thread: does not wait for itself
    ended = true;
  });
  auto done = std::async(std::launch::async, [&] { lose().join(); });
  if (done.wait_for(10s) != std::future_status::ready) {
    ADD_FAILURE() << "ending a handle from its own callback deadlocked";
    std::_Exit(1);
  }
  EXPECT_TRUE(ended);
}

INSTANTIATE_TEST_SUITE_P(every_kind, handles, testing::ValuesIn(kinds),
                         [](const auto& p) { return std::string(p.param.what); });

// run_exclusive's hold: a callback replaced inside the job while it runs is waited for.
TEST(handles_run_exclusive, replacing_a_callback_waits_for_a_running_call) {
  const std::string store = "handles-" + random_token();
  client c(memory::open(store));
  slow first, second;
  bool ran = run_exclusive(c, "job", {}, [&](hold& h) {
    h.on_lost(first.fn());
    std::thread t([&] { memory::end_session(store, "job"); });
    first.await_start();
    h.on_lost(second.fn());
    EXPECT_TRUE(first.done);  // replaced: waited for
    t.join();
  });
  EXPECT_TRUE(ran);
  EXPECT_EQ(second.started, 0);  // set while the loss was being told: not called for it
}

// A hold handed to another thread and released there frees the lock for everyone.
TEST(handles_threads, a_hold_released_from_another_thread) {
  const std::string store = "handles-" + random_token();
  client a(memory::open(store)), b(memory::open(store));
  auto m = a.make_lock("x");
  hold h = m.try_acquire_for(1s);
  ASSERT_TRUE(h);
  EXPECT_FALSE(m.owns_lock());  // no thread owns a hold
  EXPECT_FALSE(b.make_lock("x").try_lock());
  EXPECT_FALSE(m.try_acquire());  // this client's threads queue behind the hold
  const auto fence = h.fence();
  std::thread([h = std::move(h), fence]() mutable {
    EXPECT_EQ(h.fence(), fence);
    h.release();
    EXPECT_FALSE(h);
  }).join();
  auto other = b.make_lock("x");
  ASSERT_TRUE(other.try_lock());
  EXPECT_GT(other.fence(), fence);
  other.unlock();
  EXPECT_TRUE(m.try_lock());  // this client's queue is free again
  m.unlock();
}

TEST(handles_threads, unlock_from_another_thread_fails_loudly) {
  const std::string store = "handles-" + random_token();
  client a(memory::open(store)), b(memory::open(store));
  auto m = a.make_lock("x");
  m.lock();
  std::thread([&] { EXPECT_THROW(m.unlock(), usage_error); }).join();
  EXPECT_TRUE(m.owns_lock());  // still held by the locking thread
  EXPECT_FALSE(b.make_lock("x").try_lock());
  EXPECT_THROW(m.acquire(), usage_error);  // it would wait for this thread's own hold
  m.unlock();
  EXPECT_NO_THROW(m.unlock());  // nothing held any more: a second release, recorded
  EXPECT_FALSE(m.last_error().empty());
}

TEST(handles_threads, a_unique_lock_moved_to_another_thread_does_not_move_the_hold) {
  const std::string store = "handles-" + random_token();
  client a(memory::open(store));
  auto m = a.make_lock("x");
  std::unique_lock g(m);
  std::thread([&, g = std::move(g)]() mutable {
    EXPECT_THROW(g.unlock(), usage_error);  // loudly: this thread does not hold it
    g.release();                            // leaves the lock to its thread
  }).join();
  EXPECT_TRUE(m.owns_lock());
  m.unlock();
  EXPECT_FALSE(m.owns_lock());
}

}  // namespace
