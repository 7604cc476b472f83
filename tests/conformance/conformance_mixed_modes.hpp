// The mixed-mode section of the conformance machinery: one name is one lock across the modes of
// one store. Each check runs its clients in processes of their own (forked before any client
// exists in the test process), one mode each, on one name: every ordered pair of modes excludes
// each other; shared holds of two modes share the name and keep an exclusive one out; permits
// of all modes count together (never more than N held); a semaphore of another size in another
// mode is a config_error; holders of all modes take one name in turn, one at a time, with fences
// rising in one order. A backend's test file calls them with its URL per mode.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "forked_child.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/semaphore.hpp"
#include "sqlock/shared_mutex.hpp"
#include "test_env.hpp"

namespace sqlock::test::mixed {

/// A store's URL for a mode.
using url_for = std::function<std::string(const std::string& mode)>;

/// What the processes of one check share (an anonymous shared mapping, zero-initialised).
struct board {
  std::atomic<int> step;
  std::atomic<int> inside;
  std::atomic<int> most_inside;
  std::atomic<int> out_of_order;
  std::atomic<std::uint64_t> last_fence;
};

class shared_board {
 public:
  shared_board() {
    void* m =
        ::mmap(nullptr, sizeof(board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
    b_ = new (m) board{};
  }
  ~shared_board() { ::munmap(b_, sizeof(board)); }
  shared_board(const shared_board&) = delete;
  shared_board& operator=(const shared_board&) = delete;
  board* operator->() const { return b_; }
  board* get() const { return b_; }

 private:
  board* b_;
};

/// Runs each of `works` in a child process of its own and expects each to end without a failed
/// check or an exception.
inline void in_children(const std::vector<std::function<void()>>& works) {
  std::vector<pid_t> pids;
  for (const auto& w : works) {
    pid_t pid = fork_child(w);
    ASSERT_GE(pid, 0);
    pids.push_back(pid);
  }
  for (pid_t pid : pids) expect_child_succeeded(pid);
}

/// Waits (20 s at most: a liveness bound) until the board's step is at least `s`.
inline void await_step(board* b, int s) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (b->step.load() < s) {
    if (std::chrono::steady_clock::now() >= until) {
      ADD_FAILURE() << "step " << s << " never came";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

/// Calls f(a, b) for every ordered pair of two different modes.
template <class F>
void each_pair(const std::vector<std::string>& modes, F f) {
  for (const auto& a : modes)
    for (const auto& b : modes)
      if (a != b) {
        SCOPED_TRACE(a + " first, then " + b);
        f(a, b);
      }
}

/// An exclusive hold in one mode: the other mode's exclusive (and, with `shared`, shared) tries
/// fail; its waiter gets the name after the release, with a higher fence.
inline void pairs_exclude(const url_for& url, const std::vector<std::string>& modes,
                          bool shared = true) {
  each_pair(modes, [&](const std::string& a, const std::string& b) {
    const auto name = unique_name("mixed-pair");
    shared_board s;
    in_children({[&] {
                   auto c = sqlock::connect(url(a), patient_tries());
                   auto l = c.make_lock(name);
                   ASSERT_TRUE(l.try_lock());
                   s->last_fence = l.fence();
                   s->step = 1;
                   await_step(s.get(), 2);
                   l.unlock();
                 },
                 [&] {
                   auto c = sqlock::connect(url(b), patient_tries());
                   await_step(s.get(), 1);
                   auto l = c.make_lock(name);
                   EXPECT_FALSE(l.try_lock());
                   if (shared) {
                     EXPECT_FALSE(c.make_shared_mutex(name).try_lock_shared());
                   }
                   s->step = 2;
                   ASSERT_TRUE(l.try_lock_for(std::chrono::seconds(10)));
                   EXPECT_GT(l.fence(), s->last_fence.load());
                   l.unlock();
                 }});
  });
}

/// A shared hold in one mode: the other mode shares the name but cannot hold it exclusively.
inline void shared_across(const url_for& url, const std::vector<std::string>& modes) {
  each_pair(modes, [&](const std::string& a, const std::string& b) {
    const auto name = unique_name("mixed-shared");
    shared_board s;
    in_children({[&] {
                   auto c = sqlock::connect(url(a), patient_tries());
                   auto rw = c.make_shared_mutex(name);
                   ASSERT_TRUE(rw.try_lock_shared());
                   s->step = 1;
                   await_step(s.get(), 2);
                   rw.unlock_shared();
                 },
                 [&] {
                   auto c = sqlock::connect(url(b), patient_tries());
                   await_step(s.get(), 1);
                   auto rw = c.make_shared_mutex(name);
                   EXPECT_FALSE(rw.try_lock());
                   EXPECT_FALSE(c.make_lock(name).try_lock());
                   EXPECT_TRUE(rw.try_lock_shared());
                   rw.unlock_shared();
                   s->step = 2;
                 }});
  });
}

/// One process per mode, each taking a permit of a semaphore of 2 again and again: never more
/// than 2 held at once.
inline void permits_count_together(const url_for& url, const std::vector<std::string>& modes) {
  const auto name = unique_name("mixed-permits");
  constexpr std::uint32_t n = 2;
  shared_board s;
  std::vector<std::function<void()>> works;
  for (const auto& m : modes) {
    works.push_back([&, m] {
      auto c = sqlock::connect(url(m), patient_tries());
      auto sem = c.make_semaphore(name, n);
      for (int i = 0; i < 12; ++i) {
        auto p = sem.try_acquire_for(std::chrono::seconds(20));
        ASSERT_TRUE(p) << m;
        int now = ++s->inside;
        int most = s->most_inside.load();
        while (now > most && !s->most_inside.compare_exchange_weak(most, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        --s->inside;
        p.release();
      }
    });
  }
  in_children(works);
  EXPECT_LE(s->most_inside.load(), static_cast<int>(n));
  EXPECT_GE(s->most_inside.load(), 1);
}

/// A semaphore of 3 held in one mode: one of 5 in another mode is a config_error.
inline void sizes_must_agree(const url_for& url, const std::vector<std::string>& modes) {
  each_pair(modes, [&](const std::string& a, const std::string& b) {
    const auto name = unique_name("mixed-sizes");
    shared_board s;
    in_children({[&] {
                   auto c = sqlock::connect(url(a), patient_tries());
                   auto sem = c.make_semaphore(name, 3);
                   auto p = sem.try_acquire();
                   ASSERT_TRUE(p);
                   s->step = 1;
                   await_step(s.get(), 2);
                 },
                 [&] {
                   auto c = sqlock::connect(url(b), patient_tries());
                   await_step(s.get(), 1);
                   auto sem = c.make_semaphore(name, 5);
                   EXPECT_THROW((void)sem.try_acquire(), config_error);
                   s->step = 2;
                 }});
  });
}

/// One process per mode, each taking the name `rounds` times: one holder at a time, and each
/// holder's fence above the previous holder's, whatever its mode.
inline void one_order(const url_for& url, const std::vector<std::string>& modes, int rounds = 15) {
  const auto name = unique_name("mixed-order");
  shared_board s;
  std::vector<std::function<void()>> works;
  for (const auto& m : modes) {
    works.push_back([&, m] {
      auto c = sqlock::connect(url(m), patient_tries());
      auto l = c.make_lock(name);
      for (int i = 0; i < rounds; ++i) {
        ASSERT_TRUE(l.try_lock_for(std::chrono::seconds(20))) << m;
        if (++s->inside != 1) ADD_FAILURE() << "two holders at once, one of them " << m;
        const auto f = l.fence();
        if (f <= s->last_fence.load()) ++s->out_of_order;
        s->last_fence = f;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        --s->inside;
        l.unlock();
      }
    });
  }
  in_children(works);
  EXPECT_EQ(s->out_of_order.load(), 0);
}

}  // namespace sqlock::test::mixed
