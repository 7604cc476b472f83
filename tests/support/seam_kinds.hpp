// Checks of shared locks and semaphores made directly on a backend (through the seam, without
// the core), for the backend test programs whose store queues every kind itself (ZooKeeper,
// etcd): an acquire on another thread, a writer among readers that keep arriving, and the
// permit bound under threads of two processes (counted in shared memory).
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sqlock/backend.hpp"
#include "sqlock/random.hpp"

namespace sqlock::test {

/// `b.acquire(r)` on another thread, waiting at most `wait`.
inline std::future<std::optional<lease_info>> later(
    backend& b, const lock_request& r, std::chrono::milliseconds wait = std::chrono::seconds(20)) {
  return std::async(std::launch::async, [&b, r, wait] {
    return b.acquire(r, std::chrono::steady_clock::now() + wait, {});
  });
}

/// True while the acquire of `f` has not returned.
inline bool pending(std::future<std::optional<lease_info>>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::timeout;
}

/// A request of `kind` for `n` with a new owner token.
inline lock_request kind_request(const std::string& n, lock_kind kind, std::uint32_t permits = 0) {
  return {n, random_token(), std::chrono::seconds(30), "kinds test", kind, permits};
}

/// Eight readers over `b1` and `b2` whose holds of `n` overlap keep arriving; a writer on `b2`
/// gets its turn once the readers ahead of it leave, and while it holds no reader does.
inline void expect_writer_not_starved(backend& b1, backend& b2, const std::string& n) {
  using namespace std::chrono_literals;
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, reading{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 8; ++i)
    readers.emplace_back([&, i] {
      backend& b = i % 2 ? b2 : b1;
      while (!stop) {
        auto l = b.acquire(kind_request(n, lock_kind::shared),
                           std::chrono::steady_clock::now() + 30s, {});
        if (!l) continue;
        reads++;
        reading++;
        std::this_thread::sleep_for(60ms);
        reading--;
        b.release(*l, std::chrono::steady_clock::now() + 10s);
      }
    });
  for (int i = 0; i < 500 && reads < 8; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_GE(reads.load(), 8);
  auto w =
      b2.acquire(kind_request(n, lock_kind::exclusive), std::chrono::steady_clock::now() + 15s, {});
  EXPECT_TRUE(w);
  if (w) {
    EXPECT_EQ(reading.load(), 0);  // no reader holds beside the writer
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(reading.load(), 0);  // and none comes in while it holds
    auto rows = b1.list(n);
    EXPECT_EQ(rows.size(), 1u);
    for (const auto& row : rows) EXPECT_EQ(row.kind, lock_kind::exclusive);
    EXPECT_TRUE(b2.release(*w, std::chrono::steady_clock::now() + 10s));
  }
  stop = true;
  for (auto& t : readers) t.join();
}

/// The holders of one semaphore across processes, counted in shared memory.
struct permit_tally {
  std::atomic<int> in{0}, most{0}, over{0}, errors{0}, holds{0};
};

/// `threads` threads of one backend made from `url` each take one of `permits` permits of `n`
/// `rounds` times, holding each a few milliseconds.
inline void take_permits(const std::string& url, const std::string& n, std::uint32_t permits,
                         permit_tally& t, int threads, int rounds) {
  using namespace std::chrono_literals;
  auto b = make_backend(url);
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&] {
      for (int k = 0; k < rounds; ++k) {
        try {
          auto l = b->acquire(kind_request(n, lock_kind::permit, permits),
                              std::chrono::steady_clock::now() + 60s, {});
          if (!l) {
            t.errors++;
            continue;
          }
          int now = ++t.in;
          if (now > static_cast<int>(permits)) t.over++;
          for (int m = t.most; now > m && !t.most.compare_exchange_weak(m, now);) {
          }
          t.holds++;
          std::this_thread::sleep_for(5ms);
          --t.in;
          if (!b->release(*l, std::chrono::steady_clock::now() + 10s)) t.errors++;
        } catch (const std::exception&) {
          t.errors++;
        }
      }
    });
  for (auto& th : ts) th.join();
}

/// take_permits() in this process and in a forked one at once: never more than `permits`
/// holders, at least two side by side, every round held. Call it before the test made any
/// backend (a fork copies no client threads then).
inline void expect_permit_bound(const std::string& url, const std::string& n, std::uint32_t permits,
                                int threads, int rounds) {
  void* mem = mmap(nullptr, sizeof(permit_tally), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* tally = new (mem) permit_tally();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    take_permits(url, n, permits, *tally, threads, rounds);
    _exit(0);
  }
  take_permits(url, n, permits, *tally, threads, rounds);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(tally->errors.load(), 0);
  EXPECT_EQ(tally->over.load(), 0);
  EXPECT_LE(tally->most.load(), static_cast<int>(permits));
  EXPECT_GE(tally->most.load(), 2);  // permits were held side by side
  EXPECT_EQ(tally->holds.load(), 2 * threads * rounds);
  munmap(mem, sizeof(permit_tally));
}

}  // namespace sqlock::test
