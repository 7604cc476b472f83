// The backend-author API of background work (sqlock/backend/background.hpp). watch_descriptor: a
// watch fires once, on a driver thread, when its descriptor is ready; a removed watch never
// fires; many watches fire each on its own descriptor; a watch fires while the driver threads
// have tasks to run back to back. task_gate: runs nothing once closed; close() waits for a run
// on another thread, not for one on its own.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "sqlock/backend/background.hpp"

using namespace std::chrono_literals;

namespace {

// A pipe, closed at the end.
struct pipe_pair {
  int fds[2] = {-1, -1};
  pipe_pair() { EXPECT_EQ(::pipe(fds), 0); }
  ~pipe_pair() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  void put() const { ASSERT_EQ(::write(fds[1], "x", 1), 1); }
};

// Counts calls and lets a test wait for a number of them.
struct calls {
  std::mutex m;
  std::condition_variable cv;
  int n = 0;
  short revents = 0;
  std::thread::id on;
  void add(short r) {
    // Notified under the lock: the waiting test may destroy this as soon as it sees the count.
    std::lock_guard g(m);
    ++n;
    revents = r;
    on = std::this_thread::get_id();
    cv.notify_all();
  }
  bool wait_for(int count, std::chrono::milliseconds d) {
    std::unique_lock lk(m);
    return cv.wait_for(lk, d, [&] { return n >= count; });
  }
  int count() {
    std::lock_guard g(m);
    return n;
  }
};

TEST(descriptor_watch, fires_once_on_a_driver_thread_when_the_descriptor_is_ready) {
  pipe_pair p;
  calls c;
  auto w = sqlock::watch_descriptor(p.fds[0], POLLIN, [&](short r) { c.add(r); });
  EXPECT_TRUE(w);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(c.count(), 0);  // nothing to read yet
  p.put();
  ASSERT_TRUE(c.wait_for(1, 10s));
  EXPECT_TRUE(c.revents & POLLIN);
  EXPECT_NE(c.on, std::this_thread::get_id());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(c.count(), 1);  // one-shot: still readable, not called again
  auto again = sqlock::watch_descriptor(p.fds[0], POLLIN, [&](short r) { c.add(r); });
  EXPECT_TRUE(c.wait_for(2, 10s));
}

TEST(descriptor_watch, a_watch_removed_before_it_fired_never_fires) {
  pipe_pair p;
  calls c;
  {
    auto w = sqlock::watch_descriptor(p.fds[0], POLLIN, [&](short r) { c.add(r); });
    auto moved = std::move(w);
    EXPECT_FALSE(w);  // NOLINT(bugprone-use-after-move): a moved-from watch is empty
    moved.reset();
    EXPECT_FALSE(moved);
  }
  p.put();
  calls other;  // a later watch of the same descriptor fires: the driver polled past it
  auto w2 = sqlock::watch_descriptor(p.fds[0], POLLIN, [&](short r) { other.add(r); });
  ASSERT_TRUE(other.wait_for(1, 10s));
  EXPECT_EQ(c.count(), 0);
}

TEST(descriptor_watch, a_hang_up_fires_whatever_the_events_asked) {
  pipe_pair p;
  calls c;
  auto w = sqlock::watch_descriptor(p.fds[0], POLLRDHUP, [&](short r) { c.add(r); });
  ::close(p.fds[1]);
  p.fds[1] = -1;
  ASSERT_TRUE(c.wait_for(1, 10s));
  EXPECT_TRUE(c.revents & POLLHUP);
}

TEST(descriptor_watch, many_watches_fire_each_on_its_own_descriptor) {
  constexpr int n = 64;
  std::vector<pipe_pair> pipes(n);
  std::vector<calls> each(n);
  std::vector<sqlock::descriptor_watch> watches;
  for (int i = 0; i < n; ++i)
    watches.push_back(
        sqlock::watch_descriptor(pipes[i].fds[0], POLLIN, [&, i](short r) { each[i].add(r); }));
  for (int i = 0; i < n; i += 2) pipes[i].put();
  for (int i = 0; i < n; i += 2) ASSERT_TRUE(each[i].wait_for(1, 10s)) << i;
  std::this_thread::sleep_for(50ms);
  for (int i = 1; i < n; i += 2) EXPECT_EQ(each[i].count(), 0) << i;
}

TEST(descriptor_watch, fires_while_the_driver_threads_run_tasks_back_to_back) {
  // Tasks that each queue the next keep every driver thread busy; the watch is polled between
  // them all the same. The chains' state outlives the test: a chain may still run after it.
  struct state {
    std::atomic<bool> stop{false};
    std::atomic<int> tasks{0};
  };
  auto st = std::make_shared<state>();
  struct chain {
    std::shared_ptr<state> st;
    void operator()() const {
      ++st->tasks;
      auto until = std::chrono::steady_clock::now() + 1ms;
      while (std::chrono::steady_clock::now() < until) {
      }
      if (!st->stop) sqlock::run_in_background(std::chrono::steady_clock::now(), *this);
    }
  };
  for (int i = 0; i < 8; ++i)
    sqlock::run_in_background(std::chrono::steady_clock::now(), chain{st});
  pipe_pair p;
  calls c;
  auto w = sqlock::watch_descriptor(p.fds[0], POLLIN, [&](short r) { c.add(r); });
  p.put();
  const bool fired = c.wait_for(1, 10s);
  st->stop = true;
  EXPECT_TRUE(fired);
  EXPECT_GT(st->tasks.load(), 0);
}

TEST(task_gate, runs_until_closed_and_close_waits_for_a_run_on_another_thread) {
  sqlock::task_gate gate;
  int runs = 0;
  EXPECT_TRUE(gate.run([&] { ++runs; }));
  std::mutex m;
  std::condition_variable cv;
  bool inside = false, release = false, ended = false;
  std::thread t([&] {
    gate.run([&] {
      std::unique_lock lk(m);
      inside = true;
      cv.notify_all();
      cv.wait(lk, [&] { return release; });
      ended = true;
    });
  });
  {
    std::unique_lock lk(m);
    cv.wait(lk, [&] { return inside; });
  }
  std::thread closer([&] {
    std::this_thread::sleep_for(50ms);
    std::lock_guard g(m);
    release = true;
    cv.notify_all();
  });
  gate.close();  // returns only once the run on `t` ended
  {
    std::lock_guard g(m);
    EXPECT_TRUE(ended);
  }
  EXPECT_TRUE(gate.closed());
  EXPECT_FALSE(gate.run([&] { ++runs; }));
  EXPECT_EQ(runs, 1);
  t.join();
  closer.join();
}

TEST(task_gate, closed_from_its_own_run_it_returns_at_once) {
  auto gate = std::make_shared<sqlock::task_gate>();
  bool after = false;
  EXPECT_TRUE(gate->run([&] {
    gate->close();  // an object destroyed by its own task
    after = gate->closed();
  }));
  EXPECT_TRUE(after);
  EXPECT_FALSE(gate->run([] {}));
}

}  // namespace
