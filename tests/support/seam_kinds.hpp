// Checks of shared locks and semaphores made directly on a backend (through the seam, without
// the core), for the backend test programs whose store queues every kind itself (ZooKeeper,
// etcd): an acquire on another thread, a queued writer keeping later readers out, a writer among
// readers that keep arriving, the permit bound under threads of two processes (counted in shared
// memory), the permit count all users must agree on, many readers, listed permits and waits
// that end on time.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "acquire_loop.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"

namespace sqlock::test {

/// `sqlock::acquire(b, r)` on another thread, waiting at most `wait`.
inline std::future<std::optional<lease_info>> later(
    backend& b, const lock_request& r, std::chrono::milliseconds wait = std::chrono::seconds(20)) {
  return std::async(std::launch::async, [&b, r, wait] {
    return sqlock::acquire(b, r, std::chrono::steady_clock::now() + wait, {});
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
        auto l = sqlock::acquire(b, kind_request(n, lock_kind::shared),
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
  auto w = sqlock::acquire(b2, kind_request(n, lock_kind::exclusive),
                           std::chrono::steady_clock::now() + 15s, {});
  EXPECT_TRUE(w);
  if (w) {
    EXPECT_EQ(reading.load(), 0);  // no reader holds beside the writer
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(reading.load(), 0);  // and none comes in while it holds
    auto rows = b1.admin()->list(n);
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
          auto l = sqlock::acquire(*b, kind_request(n, lock_kind::permit, permits),
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

/// Waits until the queue of the name holds `k` requests (held or waiting), asserting it does.
using queued_fn = std::function<void(int k)>;

/// A reader on `b1` holds `n`; a writer on `b2` queues behind it; a new reader is then busy
/// (although only a reader holds) and queues behind the writer; the writer holds alone once the
/// first reader leaves, and the second reader after it, with a higher fence.
inline void expect_writer_first(backend& b1, backend& b2, const std::string& n,
                                const queued_fn& queued) {
  using namespace std::chrono_literals;
  auto soon = [] { return std::chrono::steady_clock::now() + 10s; };
  auto r1 = sqlock::acquire(b1, kind_request(n, lock_kind::shared), soon(), {});
  ASSERT_TRUE(r1);
  auto writer = later(b2, kind_request(n, lock_kind::exclusive));
  queued(2);
  EXPECT_FALSE(b1.try_acquire(kind_request(n, lock_kind::shared), soon()));
  EXPECT_FALSE(sqlock::acquire(b1, kind_request(n, lock_kind::shared),
                               std::chrono::steady_clock::now() + 300ms, {}));
  auto reader = later(b1, kind_request(n, lock_kind::shared));
  queued(3);
  ASSERT_TRUE(b1.release(*r1, soon()));
  auto w = writer.get();
  ASSERT_TRUE(w);
  EXPECT_GT(w->fence, r1->fence);
  auto rows = b1.admin()->list(n);
  EXPECT_EQ(rows.size(), 1u);
  for (const auto& row : rows) EXPECT_EQ(row.kind, lock_kind::exclusive);
  EXPECT_TRUE(pending(reader));
  ASSERT_TRUE(b2.release(*w, soon()));
  auto r2 = reader.get();
  ASSERT_TRUE(r2);
  EXPECT_GT(r2->fence, w->fence);
  EXPECT_TRUE(b1.release(*r2, soon()));
}

/// One permit of 2 held on `b1`: a request for 3 is a config_error (waiting or not) and leaves
/// nothing queued; one for 2 holds; a waiter for 2 queues and another count is still refused;
/// once the name is idle the next request sets the count (3), and 2 is refused.
inline void expect_permit_count_agreed(backend& b1, backend& b2, const std::string& n,
                                       const queued_fn& queued) {
  using namespace std::chrono_literals;
  auto soon = [] { return std::chrono::steady_clock::now() + 10s; };
  auto get = [&](backend& b, std::uint32_t permits) {
    return sqlock::acquire(b, kind_request(n, lock_kind::permit, permits), soon(), {});
  };
  auto p = get(b1, 2);
  ASSERT_TRUE(p);
  EXPECT_THROW(get(b2, 3), config_error);
  EXPECT_THROW(b2.try_acquire(kind_request(n, lock_kind::permit, 3), soon()), config_error);
  queued(1);  // the refused requests left nothing
  auto same = get(b2, 2);
  ASSERT_TRUE(same);
  EXPECT_NE(same->fence, p->fence);
  auto waiter = later(b1, kind_request(n, lock_kind::permit, 2));
  queued(3);
  EXPECT_THROW(get(b2, 1), config_error);
  EXPECT_TRUE(b1.release(*p, soon()));
  auto w = waiter.get();
  ASSERT_TRUE(w);
  EXPECT_TRUE(b2.release(*same, soon()));
  EXPECT_TRUE(b1.release(*w, soon()));
  auto other = get(b2, 3);  // idle: the next request sets the count
  ASSERT_TRUE(other);
  EXPECT_GT(other->fence, w->fence);
  EXPECT_THROW(get(b1, 2), config_error);
  EXPECT_TRUE(b2.release(*other, soon()));
}

/// Eight shared holds of `n` at once over `b1` and `b2`, each listed with its owner and kind; an
/// exclusive try is busy and leaves nothing queued; all released, nothing is listed.
inline void expect_many_shared(backend& b1, backend& b2, const std::string& n,
                               const queued_fn& queued) {
  using namespace std::chrono_literals;
  auto soon = [] { return std::chrono::steady_clock::now() + 10s; };
  std::vector<std::pair<backend*, lease_info>> held;
  std::set<std::string> owners;
  for (int i = 0; i < 8; ++i) {
    backend& b = i % 2 ? b2 : b1;
    auto r = kind_request(n, lock_kind::shared);
    auto l = i < 4 ? b.try_acquire(r, soon()) : sqlock::acquire(b, r, soon(), {});
    ASSERT_TRUE(l) << i;
    EXPECT_FALSE(l->waited);
    held.emplace_back(&b, *l);
    owners.insert(r.owner);
  }
  auto rows = b1.admin()->list(n);
  EXPECT_EQ(rows.size(), 8u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.kind, lock_kind::shared);
    EXPECT_EQ(row.holder, "kinds test");
    EXPECT_EQ(owners.count(row.owner), 1u);
  }
  EXPECT_FALSE(b2.try_acquire(kind_request(n, lock_kind::exclusive), soon()));
  queued(8);  // the busy attempt left nothing
  for (auto& [b, l] : held) EXPECT_TRUE(b->release(l, soon()));
  EXPECT_TRUE(b1.admin()->list(n).empty());
}

/// Two permits of 2 on `b`, each its own hold with its own fence, listed with the count; a third
/// is busy; a shared or exclusive request of the name is busy too (kinds exclude each other); a
/// released permit goes to the next request with a higher fence; force_release ends every permit.
inline void expect_permits_listed(backend& b, const std::string& n) {
  using namespace std::chrono_literals;
  auto soon = [] { return std::chrono::steady_clock::now() + 10s; };
  auto briefly = [] { return std::chrono::steady_clock::now() + 300ms; };
  auto p1 = sqlock::acquire(b, kind_request(n, lock_kind::permit, 2), soon(), {});
  auto p2 = sqlock::acquire(b, kind_request(n, lock_kind::permit, 2), soon(), {});
  ASSERT_TRUE(p1 && p2);
  EXPECT_NE(p1->fence, p2->fence);
  EXPECT_FALSE(b.try_acquire(kind_request(n, lock_kind::permit, 2), soon()));
  EXPECT_FALSE(sqlock::acquire(b, kind_request(n, lock_kind::permit, 2), briefly(), {}));
  auto rows = b.admin()->list(n);
  EXPECT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.kind, lock_kind::permit);
    EXPECT_EQ(row.permits, 2u);
  }
  EXPECT_FALSE(sqlock::acquire(b, kind_request(n, lock_kind::shared), briefly(), {}));
  EXPECT_FALSE(sqlock::acquire(b, kind_request(n, lock_kind::exclusive), briefly(), {}));
  EXPECT_TRUE(b.release(*p1, soon()));
  auto p3 = sqlock::acquire(b, kind_request(n, lock_kind::permit, 2), soon(), {});
  ASSERT_TRUE(p3);
  EXPECT_GT(p3->fence, p2->fence);
  EXPECT_TRUE(b.admin()->force_release(n));  // ends every permit
  EXPECT_TRUE(b.admin()->list(n).empty());
  EXPECT_FALSE(b.renew(*p2, 30s, soon()));
  EXPECT_FALSE(b.renew(*p3, 30s, soon()));
}

/// Shared and permit waits on `b2` behind an exclusive hold on `b1`, and a permit wait behind
/// the one permit of 1, end at their deadline (not much later) and leave nothing queued.
inline void expect_waits_end_on_time(backend& b1, backend& b2, const std::string& n,
                                     const queued_fn& queued) {
  using namespace std::chrono_literals;
  using clock = std::chrono::steady_clock;
  auto soon = [] { return clock::now() + 10s; };
  auto times_out = [&](const lock_request& r) {
    auto start = clock::now();
    EXPECT_FALSE(sqlock::acquire(b2, r, start + 400ms, {}));
    auto took = clock::now() - start;
    EXPECT_GE(took, 400ms);
    EXPECT_LT(took, 5s);  // not an I/O, session or lease timeout
    queued(1);
  };
  auto ex = sqlock::acquire(b1, kind_request(n, lock_kind::exclusive), soon(), {});
  ASSERT_TRUE(ex);
  times_out(kind_request(n, lock_kind::shared));
  times_out(kind_request(n, lock_kind::permit, 2));
  EXPECT_TRUE(b1.release(*ex, soon()));
  auto p = sqlock::acquire(b1, kind_request(n, lock_kind::permit, 1), soon(), {});
  ASSERT_TRUE(p);
  times_out(kind_request(n, lock_kind::permit, 1));
  EXPECT_TRUE(b1.release(*p, soon()));
}

}  // namespace sqlock::test
