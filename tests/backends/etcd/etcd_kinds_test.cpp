// Shared locks and semaphores on the etcd backend, through the seam and against the shared etcd
// member: many shared holders at once, shared and exclusive excluding each other across
// clients, a queued writer keeping later readers out, the permit bound under threads of two
// processes, a revoked lease freeing only its own hold, fences, deadlines, a disagreeing permit
// count, `etcdctl lock` still excluding readers, and no key left behind by any test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "acquire_loop.hpp"
#include "etcd_env.hpp"
#include "seam_kinds.hpp"
#include "sqlock/client.hpp"
#include "sqlock/errors.hpp"
#include "test_env.hpp"

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace sqlock::test {
namespace {

using namespace etcd_env;

class etcd_kinds : public ::testing::Test {
 protected:
  void SetUp() override {
    SQLOCK_REQUIRE_URL("SQLOCK_TEST_ETCD_URL", url_);
    ::setenv("ETCDCTL_API", "3", 1);
  }
  void TearDown() override {
    for (const auto& n : names_) EXPECT_EQ(keys(url_, n), "") << "keys left under " << n;
  }
  std::shared_ptr<backend> open() { return make_backend(url_); }
  std::string name(const std::string& stem) {
    names_.push_back(unique_name(stem));
    return names_.back();
  }
  int queue_length(const std::string& n) const {
    auto k = keys(url_, n);
    return static_cast<int>(std::count(k.begin(), k.end(), '\n'));
  }
  // The queue of `n` reaches `k` keys (a waiter is queued).
  void queued(const std::string& n, int k) {
    for (int i = 0; i < 200 && queue_length(n) != k; ++i) std::this_thread::sleep_for(50ms);
    ASSERT_EQ(queue_length(n), k) << n;
  }
  static lock_request req(const std::string& n, lock_kind kind, std::uint32_t permits = 0) {
    return sqlock::test::kind_request(n, kind, permits);
  }
  static std::optional<lease_info> get(backend& b, const lock_request& r,
                                       std::chrono::milliseconds wait = 10s) {
    return sqlock::acquire(b, r, steady::now() + wait, {});
  }

  std::string url_;
  std::vector<std::string> names_;
};

TEST_F(etcd_kinds, many_shared_holders_at_once_and_list_shows_each) {
  auto n = name("many-shared");
  auto b1 = open(), b2 = open();
  EXPECT_TRUE(b1->caps().shared);
  EXPECT_TRUE(b1->caps().permits);
  expect_many_shared(*b1, *b2, n, [&](int k) { queued(n, k); });
}

TEST_F(etcd_kinds, shared_and_exclusive_exclude_each_other_and_a_queued_writer_goes_first) {
  auto n = name("rw");
  auto b1 = open(), b2 = open();
  auto ex = get(*b1, req(n, lock_kind::exclusive));
  ASSERT_TRUE(ex);
  EXPECT_FALSE(get(*b2, req(n, lock_kind::shared), 300ms));
  auto reader = later(*b2, req(n, lock_kind::shared));
  queued(n, 2);
  ASSERT_TRUE(b1->release(*ex, soon()));
  auto r1 = reader.get();
  ASSERT_TRUE(r1);
  EXPECT_GT(r1->fence, ex->fence);
  ASSERT_TRUE(b2->release(*r1, soon()));
  expect_writer_first(*b1, *b2, n, [&](int k) { queued(n, k); });
}

TEST_F(etcd_kinds, a_writer_is_not_starved_while_readers_keep_arriving) {
  auto n = name("no-starve");
  auto b1 = open(), b2 = open();
  sqlock::test::expect_writer_not_starved(*b1, *b2, n);
}

TEST_F(etcd_kinds, the_permit_bound_holds_under_threads_of_two_processes) {
  auto n = name("permits");
  sqlock::test::expect_permit_bound(url_, n, 3, 8, 5);
}

TEST_F(etcd_kinds, a_different_permit_count_is_a_config_error_until_the_name_is_idle) {
  auto n = name("permit-n");
  auto b1 = open(), b2 = open();
  expect_permit_count_agreed(*b1, *b2, n, [&](int k) { queued(n, k); });
}

TEST_F(etcd_kinds, each_permit_is_a_hold_of_its_own_listed_with_its_count) {
  auto n = name("permit-list");
  auto b = open();
  expect_permits_listed(*b, n);
}

TEST_F(etcd_kinds, a_revoked_lease_frees_only_its_own_hold) {
  auto n = name("lease-death");
  auto a = open(), b = open(), c = open();
  auto pa = get(*a, req(n, lock_kind::permit, 2));
  auto pb = get(*b, req(n, lock_kind::permit, 2));
  ASSERT_TRUE(pa && pb);
  auto pc = later(*c, req(n, lock_kind::permit, 2));
  queued(n, 3);
  auto first = keys(url_, n);
  revoke_lease_of(url_, first.substr(0, first.find('\n')));  // a's key: the first created
  auto got = pc.get();
  ASSERT_TRUE(got);
  EXPECT_FALSE(a->renew(*pa, 30s, soon()));
  EXPECT_TRUE(b->renew(*pb, 30s, soon()));
  EXPECT_TRUE(b->release(*pb, soon()));
  EXPECT_TRUE(c->release(*got, soon()));
  a->release(*pa, soon());
}

TEST_F(etcd_kinds, waits_end_at_their_deadline_and_leave_no_key) {
  auto n = name("deadline");
  auto b1 = open(), b2 = open();
  expect_waits_end_on_time(*b1, *b2, n, [&](int k) { queued(n, k); });
}

TEST_F(etcd_kinds, etcdctl_lock_keeps_readers_out) {
  auto n = name("interop-shared");
  auto lockname = etcd::lock_prefix(prefix_of(url_), n);
  lockname.pop_back();  // etcdctl lock NAME uses NAME + "/" as its prefix
  std::string flag = (std::filesystem::temp_directory_path() / ("etcd-" + random_token())).string();
  auto holder = std::async(std::launch::async, [&] {
    return sh(
        etcdctl(url_, "lock '" + lockname + "' -- sh -c 'touch " + flag + "; sleep 2; echo done'"));
  });
  for (int i = 0; i < 100 && !std::filesystem::exists(flag); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(std::filesystem::exists(flag));
  auto b = open();
  EXPECT_FALSE(b->try_acquire(req(n, lock_kind::shared), soon()));
  auto r = get(*b, req(n, lock_kind::shared), 15s);  // granted once etcdctl's command ended
  ASSERT_TRUE(r);
  EXPECT_NE(holder.get().find("done"), std::string::npos);
  // A reader holds: etcdctl lock (exclusive) waits until it is released.
  auto waiter = std::async(std::launch::async, [&] {
    return sh("timeout 10 " + etcdctl(url_, "lock '" + lockname + "' echo got"));
  });
  queued(n, 2);
  EXPECT_EQ(waiter.wait_for(0s), std::future_status::timeout);
  EXPECT_TRUE(b->release(*r, soon()));
  EXPECT_NE(waiter.get().find("got"), std::string::npos);
  std::filesystem::remove(flag);
}

}  // namespace
}  // namespace sqlock::test
