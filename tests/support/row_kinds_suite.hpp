// Shared and permit holds of the SQL row modes, tested at the backend seam on a real database:
// shared holders coexist and exclude exclusive ones across clients, a waiting writer is not
// starved (and its mark ends with its acquire() call), the permit bound holds under several
// processes x threads, one holder's expiry does not end the others, a different number of
// permits (or kind) is a config_error, exclusive fences exceed every earlier hold's, list()
// shows each holder with its kind, force_release and sweep cover the new holds.
// A backend's test program instantiates the suite with its URLs:
//   INSTANTIATE_TEST_SUITE_P(sqlite, row_kinds, ::testing::Values(kinds_target{...}, ...));
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "acquire_loop.hpp"
#include "kinds_checks.hpp"
#include "sql/sql_engine.hpp"
#include "sqlock/backend.hpp"
#include "sqlock/errors.hpp"
#include "sqlock/random.hpp"
#include "test_env.hpp"

namespace sqlock::test {

/// One backend and mode the suite runs on.
struct kinds_target {
  const char* label;                 ///< test-name suffix ("pessimistic")
  std::function<std::string()> url;  ///< its URL; "" = the server is not configured here
  int threads = 16;  ///< threads per process in the permit-bound test (a connection each)
};

inline std::ostream& operator<<(std::ostream& o, const kinds_target& t) {
  return o << t.label;
}

/// The test-name suffix of a target (INSTANTIATE_TEST_SUITE_P's name generator).
inline std::string kinds_label(const ::testing::TestParamInfo<kinds_target>& p) {
  return p.param.label;
}

class row_kinds : public ::testing::TestWithParam<kinds_target> {
 protected:
  void SetUp() override {
    url_ = GetParam().url();
    if (url_.empty()) {
      if (require_all()) FAIL() << "no server for " << GetParam().label;
      GTEST_SKIP() << "server not configured";
    }
    name_ = unique_name("kinds");
  }

  std::shared_ptr<backend> open() const { return make_backend(url_); }

  static lock_request request(const std::string& name, lock_kind k, std::uint32_t permits = 0,
                              milliseconds lease = std::chrono::seconds(60)) {
    return kinds_request(name, k, permits, lease);
  }
  /// One attempt without a wait state (as try_lock() makes it).
  static std::optional<lease_info> attempt(backend& b, const lock_request& r) {
    return b.try_acquire(r, soon());
  }
  /// A waiting acquire until `within` from now.
  static std::optional<lease_info> wait_for(backend& b, const lock_request& r,
                                            milliseconds within) {
    return sqlock::acquire(b, r, std::chrono::steady_clock::now() + within, wait_policy{});
  }
  static std::size_t holders(backend& b, const std::string& name) {
    std::size_t n = 0;
    for (auto& s : b.admin()->list(name))
      if (s.name == name) ++n;
    return n;
  }

  std::string url_;
  std::string name_;
};

TEST_P(row_kinds, CapabilitiesSayBothKinds) {
  auto b = open();
  EXPECT_TRUE(b->caps().shared);
  EXPECT_TRUE(b->caps().permits);
}

TEST_P(row_kinds, SharedHoldersCoexistAndExcludeExclusiveAcrossClients) {
  auto b1 = open(), b2 = open();
  auto s1 = attempt(*b1, request(name_, lock_kind::shared));
  auto s2 = attempt(*b2, request(name_, lock_kind::shared));
  ASSERT_TRUE(s1);
  ASSERT_TRUE(s2);
  EXPECT_NE(s1->fence, s2->fence);
  EXPECT_FALSE(attempt(*b2, request(name_, lock_kind::exclusive)));
  EXPECT_TRUE(b1->release(*s1, soon()));
  EXPECT_FALSE(attempt(*b1, request(name_, lock_kind::exclusive)));  // s2 still holds
  EXPECT_TRUE(b2->release(*s2, soon()));
  auto x = attempt(*b1, request(name_, lock_kind::exclusive));
  ASSERT_TRUE(x);
  EXPECT_GT(x->fence, s1->fence);
  EXPECT_GT(x->fence, s2->fence);
  EXPECT_FALSE(attempt(*b2, request(name_, lock_kind::shared)));
  EXPECT_FALSE(attempt(*b2, request(name_, lock_kind::permit, 3)));
  EXPECT_TRUE(b1->release(*x, soon()));
  EXPECT_FALSE(b1->release(*x, soon()));  // idempotent: nothing of this owner any more
  auto s3 = attempt(*b2, request(name_, lock_kind::shared));
  ASSERT_TRUE(s3);
  EXPECT_GT(s3->fence, x->fence);
  EXPECT_TRUE(b2->renew(*s3, std::chrono::seconds(30), soon()));
  EXPECT_TRUE(b2->release(*s3, soon()));
  EXPECT_FALSE(b2->renew(*s3, std::chrono::seconds(30), soon()));
}

TEST_P(row_kinds, RetriedAttemptFindsItsOwnHold) {
  auto b = open();
  for (auto k : {lock_kind::shared, lock_kind::permit}) {
    auto r = request(name_ + to_string(k), k, k == lock_kind::permit ? 1 : 0);
    auto a = attempt(*b, r);
    auto again = attempt(*b, r);
    ASSERT_TRUE(a);
    ASSERT_TRUE(again);
    EXPECT_EQ(a->fence, again->fence);
    EXPECT_EQ(holders(*b, r.name), 1u);
    EXPECT_TRUE(b->release(*a, soon()));
  }
}

TEST_P(row_kinds, WaitingWriterKeepsNewReadersOutAndGetsTheLock) {
  auto readers = open(), writer_b = open();
  auto first = attempt(*readers, request(name_, lock_kind::shared));
  ASSERT_TRUE(first);
  std::optional<lease_info> written;
  std::thread writer([&] {
    written = wait_for(*writer_b, request(name_, lock_kind::exclusive), milliseconds(30000));
  });
  // New readers get in until the writer's first busy attempt leaves its mark; then they queue.
  bool kept_out = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       !kept_out && std::chrono::steady_clock::now() < until;) {
    auto r = attempt(*readers, request(name_, lock_kind::shared));
    if (r)
      readers->release(*r, soon());
    else
      kept_out = true;
  }
  EXPECT_TRUE(kept_out);
  EXPECT_FALSE(wait_for(*readers, request(name_, lock_kind::shared), milliseconds(300)));
  EXPECT_TRUE(readers->release(*first, soon()));
  writer.join();
  ASSERT_TRUE(written);
  EXPECT_GT(written->fence, first->fence);
  EXPECT_TRUE(writer_b->release(*written, soon()));
  // The writer's acquire removed its mark: readers come in at once.
  auto after = attempt(*readers, request(name_, lock_kind::shared));
  ASSERT_TRUE(after);
  readers->release(*after, soon());
}

TEST_P(row_kinds, WriterMarkEndsWithItsAcquireCall) {
  auto b = open();
  auto reader = attempt(*b, request(name_, lock_kind::shared));
  ASSERT_TRUE(reader);
  // A waiting exclusive acquire that times out leaves no mark behind (removed when its call
  // ends, well before the mark's own expiry) ...
  EXPECT_FALSE(wait_for(*b, request(name_, lock_kind::exclusive), milliseconds(200)));
  auto second = attempt(*b, request(name_, lock_kind::shared));
  EXPECT_TRUE(second);
  // ... and a single try (no wait state) leaves none at all.
  EXPECT_FALSE(attempt(*b, request(name_, lock_kind::exclusive)));
  auto third = attempt(*b, request(name_, lock_kind::shared));
  EXPECT_TRUE(third);
  for (auto* l : {&reader, &second, &third})
    if (*l) b->release(**l, soon());
}

TEST_P(row_kinds, PermitsAdmitExactlyN) {
  auto b1 = open(), b2 = open();
  std::vector<lease_info> held;
  for (int i = 0; i < 3; ++i) {
    auto p = attempt(i % 2 ? *b1 : *b2, request(name_, lock_kind::permit, 3));
    ASSERT_TRUE(p) << i;
    held.push_back(*p);
  }
  EXPECT_FALSE(attempt(*b1, request(name_, lock_kind::permit, 3)));
  EXPECT_FALSE(attempt(*b2, request(name_, lock_kind::exclusive)));
  EXPECT_TRUE(b1->release(held[1], soon()));
  auto again = attempt(*b2, request(name_, lock_kind::permit, 3));
  ASSERT_TRUE(again);
  EXPECT_FALSE(attempt(*b1, request(name_, lock_kind::permit, 3)));
  for (auto& l : {held[0], held[2], *again}) EXPECT_TRUE(b1->release(l, soon()));
  auto x = attempt(*b1, request(name_, lock_kind::exclusive));
  ASSERT_TRUE(x);
  for (auto& l : held) EXPECT_GT(x->fence, l.fence);
  EXPECT_GT(x->fence, again->fence);
  b1->release(*x, soon());
}

TEST_P(row_kinds, DifferentPermitsOrKindIsAConfigError) {
  auto b = open();
  auto p = attempt(*b, request(name_, lock_kind::permit, 2));
  ASSERT_TRUE(p);
  try {
    attempt(*b, request(name_, lock_kind::permit, 3));
    ADD_FAILURE() << "a different number of permits was accepted";
  } catch (const config_error& e) {
    EXPECT_NE(std::string(e.what()).find("2 permits"), std::string::npos) << e.what();
  }
  EXPECT_THROW(attempt(*b, request(name_, lock_kind::shared)), config_error);
  EXPECT_THROW(wait_for(*b, request(name_, lock_kind::permit, 1), milliseconds(2000)),
               config_error);
  EXPECT_FALSE(attempt(*b, request(name_, lock_kind::exclusive)));  // busy, not an error
  EXPECT_TRUE(b->release(*p, soon()));
  auto other = attempt(*b, request(name_, lock_kind::permit, 3));  // no live holder: any N
  ASSERT_TRUE(other);
  b->release(*other, soon());
  auto s = attempt(*b, request(name_, lock_kind::shared));
  ASSERT_TRUE(s);
  EXPECT_THROW(attempt(*b, request(name_, lock_kind::permit, 3)), config_error);
  b->release(*s, soon());
}

TEST_P(row_kinds, OneHoldersExpiryDoesNotEndTheOthers) {
  auto b = open();
  for (auto k : {lock_kind::shared, lock_kind::permit}) {
    std::string name = name_ + to_string(k);
    const std::uint32_t n = k == lock_kind::permit ? 2 : 0;
    auto brief = attempt(*b, request(name, k, n));
    auto lasting = attempt(*b, request(name, k, n));
    ASSERT_TRUE(brief);
    ASSERT_TRUE(lasting);
    if (k == lock_kind::permit) {
      EXPECT_FALSE(attempt(*b, request(name, k, n)));
    }
    // The brief hold's lease is cut short (as run_exclusive's at_least does) and ends on the
    // server while its holder sleeps.
    EXPECT_TRUE(b->renew(*brief, milliseconds(200), soon()));
    std::this_thread::sleep_for(milliseconds(800));
    EXPECT_FALSE(b->renew(*brief, std::chrono::seconds(30), soon()));
    EXPECT_TRUE(b->renew(*lasting, std::chrono::seconds(30), soon()));
    EXPECT_EQ(holders(*b, name), 1u);
    EXPECT_FALSE(attempt(*b, request(name, lock_kind::exclusive)));  // the other still holds
    auto taken = attempt(*b, request(name, k, n));  // the expired one's place is free
    ASSERT_TRUE(taken);
    EXPECT_TRUE(b->release(*lasting, soon()));
    EXPECT_TRUE(b->release(*taken, soon()));
    EXPECT_TRUE(attempt(*b, request(name, lock_kind::exclusive, 0, milliseconds(300))));
  }
}

TEST_P(row_kinds, ExpiredExclusiveDoesNotBlockReaders) {
  auto b = open();
  auto x = attempt(*b, request(name_, lock_kind::exclusive));
  ASSERT_TRUE(x);
  EXPECT_FALSE(attempt(*b, request(name_, lock_kind::shared)));
  EXPECT_TRUE(b->renew(*x, milliseconds(200), soon()));  // then the lease ends on the server
  std::this_thread::sleep_for(milliseconds(800));
  auto s = attempt(*b, request(name_, lock_kind::shared));
  ASSERT_TRUE(s);
  EXPECT_GT(s->fence, x->fence);
  EXPECT_FALSE(b->renew(*x, std::chrono::seconds(30), soon()));
  b->release(*s, soon());
}

TEST_P(row_kinds, ListShowsEveryHolderWithItsKind) {
  auto b = open();
  auto s1 = attempt(*b, request(name_ + "/s", lock_kind::shared));
  auto s2 = attempt(*b, request(name_ + "/s", lock_kind::shared));
  auto p1 = attempt(*b, request(name_ + "/p", lock_kind::permit, 4));
  auto x = attempt(*b, request(name_ + "/x", lock_kind::exclusive));
  ASSERT_TRUE(s1 && s2 && p1 && x);
  auto all = b->admin()->list(name_ + "/");
  ASSERT_EQ(all.size(), 4u);
  int shared = 0;
  for (auto& st : all) {
    EXPECT_FALSE(st.expires_at.empty());
    EXPECT_EQ(st.holder, "row_kinds_test");
    if (st.name == name_ + "/s") {
      ++shared;
      EXPECT_EQ(st.kind, lock_kind::shared);
      EXPECT_TRUE(st.owner == s1->owner || st.owner == s2->owner);
    } else if (st.name == name_ + "/p") {
      EXPECT_EQ(st.kind, lock_kind::permit);
      EXPECT_EQ(st.permits, 4u);
      EXPECT_EQ(st.fence, p1->fence);
    } else {
      EXPECT_EQ(st.kind, lock_kind::exclusive);
      EXPECT_EQ(st.owner, x->owner);
    }
  }
  EXPECT_EQ(shared, 2);
  for (auto& l : {*s1, *s2, *p1, *x}) b->release(l, soon());
}

TEST_P(row_kinds, ForceReleaseAndSweepCoverSharedHolds) {
  auto b = open();
  auto s1 = attempt(*b, request(name_, lock_kind::shared));
  auto s2 = attempt(*b, request(name_, lock_kind::shared));
  ASSERT_TRUE(s1 && s2);
  EXPECT_TRUE(b->admin()->force_release(name_));
  EXPECT_EQ(holders(*b, name_), 0u);
  EXPECT_FALSE(b->renew(*s1, std::chrono::seconds(30), soon()));
  EXPECT_FALSE(b->admin()->force_release(name_));
  auto x = attempt(*b, request(name_, lock_kind::exclusive));
  ASSERT_TRUE(x);
  b->release(*x, soon());
  auto brief = attempt(*b, request(name_ + "/sweep", lock_kind::permit, 2, milliseconds(200)));
  ASSERT_TRUE(brief);
  std::this_thread::sleep_for(milliseconds(600));
  b->admin()->sweep();  // (another process's sweep may have come first: the count is not checked)
  EXPECT_FALSE(b->release(*brief, soon()));  // swept: nothing of this owner left
}

TEST_P(row_kinds, FenceCheckKnowsSharedHolds) {
  auto b = open();
  auto* engine = dynamic_cast<sql::engine_backend*>(b.get());
  if (!engine) GTEST_SKIP() << "not an engine backend";
  auto s = attempt(*b, request(name_, lock_kind::shared));
  ASSERT_TRUE(s);
  EXPECT_TRUE(engine->fence_check(name_, s->fence));
  EXPECT_FALSE(engine->fence_check(name_, s->fence + 1000000));
  b->release(*s, soon());
  EXPECT_FALSE(engine->fence_check(name_, s->fence));
}

// 3 processes x 16 threads (fewer on a shared server) take and give back one of 3 permits; a
// counter in memory shared by the processes counts the holders at every moment and must never
// exceed 3.
TEST_P(row_kinds, PermitBoundHoldsAcrossProcessesAndThreads) {
  constexpr int processes = 3, rounds = 4;
  const int threads = GetParam().threads;
  constexpr std::uint32_t permits = 3;
  struct shared_counters {
    std::atomic<int> now;
    std::atomic<int> most;
    std::atomic<int> taken;
  };
  void* mem = ::mmap(nullptr, sizeof(shared_counters), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* c = new (mem) shared_counters{};
  std::vector<pid_t> kids;
  for (int p = 0; p < processes; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        auto b = open();
        std::vector<std::thread> ts;
        std::atomic<int> failures{0};
        for (int t = 0; t < threads; ++t)
          ts.emplace_back([&] {
            try {
              for (int r = 0; r < rounds; ++r) {
                auto l =
                    wait_for(*b, request(name_, lock_kind::permit, permits), milliseconds(120000));
                if (!l) {
                  ++failures;
                  return;
                }
                int n = ++c->now;
                int m = c->most.load();
                while (n > m && !c->most.compare_exchange_weak(m, n)) {
                }
                ++c->taken;
                std::this_thread::sleep_for(milliseconds(2));
                --c->now;
                b->release(*l, soon());
              }
            } catch (...) {
              ++failures;
            }
          });
        for (auto& t : ts) t.join();
        rc = failures.load() ? 2 : 0;
      } catch (...) {
        rc = 3;
      }
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  for (auto pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  EXPECT_LE(c->most.load(), static_cast<int>(permits));
  EXPECT_EQ(c->taken.load(), processes * threads * rounds);
  ::munmap(mem, sizeof(shared_counters));
}

}  // namespace sqlock::test
